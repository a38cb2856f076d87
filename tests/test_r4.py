"""Table R4 (reference-results.md): the four 16-core ratios within 15 %, from the scenario."""

from __future__ import annotations

import pytest
from simhelp import ROOT

from simbatch.scenario import load_scenario
from simbatch.sweep import run_scenario


@pytest.fixture(scope="module")
def r4():
    scenario = load_scenario(ROOT / "scenarios/r4-bucket-map-16-cores.toml")
    return {s.name: s.metrics for s in run_scenario(scenario)}


@pytest.mark.parametrize("old,new,metric,published,kind", [
    ("insert 16M old", "insert 16M new", "insert_ops_per_s", 1.8, "throughput"),
    ("insert 40M old", "insert 40M new", "insert_ops_per_s", 1.3, "throughput"),
    ("exists 16M rlock", "exists 16M frozen", "probe_ns_per_op", 2.6, "time"),
    ("create map e2e old", "create map e2e new", "insert_s", 2.4, "time"),
])
def test_r4_ratio_within_15_percent(r4, old, new, metric, published, kind):
    ratio = (r4[new][metric] / r4[old][metric] if kind == "throughput"
             else r4[old][metric] / r4[new][metric])
    assert abs(ratio - published) <= 0.15 * published, (ratio, published)


def test_every_insert_and_probe_done_exactly_once(r4):
    assert r4["insert 16M old"]["inserted"] == 16_000_000
    assert r4["insert 40M new"]["inserted"] == 40_000_000
    assert r4["exists 16M rlock"]["probed"] == 16_000_000
