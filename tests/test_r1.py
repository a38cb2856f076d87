"""Table R1: every row within 10 %, from the scenario file."""

from __future__ import annotations

import pytest

from simbatch.planning.scenario import load_scenario
from simbatch.planning.sweep import compare, run_scenario


@pytest.fixture(scope="module")
def r1(root):
    scenario = load_scenario(root / "scenarios/r1-decorate-fanout.toml")
    return scenario, compare(scenario, run_scenario(scenario))


@pytest.fixture(scope="module")
def root():
    from simhelp import ROOT
    return ROOT


def test_r1_has_every_published_row(r1):
    _, rows = r1
    assert [r.case for r in rows] == ["sequential", "cap=1", "cap=4", "cap=16", "cap=64"]


@pytest.mark.parametrize("case", ["sequential", "cap=1", "cap=4", "cap=16", "cap=64"])
def test_r1_row_within_ten_percent(r1, case):
    scenario, rows = r1
    assert scenario.tolerance.rel == 0.10
    row = next(r for r in rows if r.case == case)
    assert abs(row.predicted - row.published) <= 0.10 * row.published, row


def test_r1_cap64_flushes_by_size_below_by_timer(root):
    from simbatch.planning.sweep import run_scenario as run
    scenario = load_scenario(root / "scenarios/r1-decorate-fanout.toml")
    shares = {s.name: s.metrics for s in run(scenario, replications=1)}
    assert shares["cap=16"]["flush_share_timer"] == 1.0
    assert shares["cap=64"]["flush_share_size"] > 0.9
