"""Table R2: p50 and p99 of every row within 15 % (5 ms under 50 ms),
from the scenario files scenarios/r2-*.toml (R2's production paragraph, r2-production.toml,
is a comparison of another kind: tests/test_r2_production.py)."""

from __future__ import annotations

import pytest
from simhelp import ROOT

from simbatch.planning.scenario import load_scenario
from simbatch.planning.sweep import compare, run_scenario

FILES = sorted(p for p in (ROOT / "scenarios").glob("r2-*.toml") if p.stem != "r2-production")


def test_all_five_rows_have_a_file():
    assert len(FILES) == 5


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_r2_row(path):
    scenario = load_scenario(path)
    tol = scenario.tolerance
    assert (tol.rel, tol.abs, tol.abs_below) == (0.15, 0.005, 0.050)
    rows = compare(scenario, run_scenario(scenario))
    assert {r.metric for r in rows} == {"latency_p50_s", "latency_p99_s"}
    for row in rows:
        assert row.ok, row
