"""R5: drain mode removes the timer wait for a sequential producer
(published: more than 90 % faster); on the fan-out path it is reported per run."""

from __future__ import annotations

from simhelp import ROOT

from simbatch.planning.scenario import load_scenario
from simbatch.planning.sweep import run_scenario


def test_drain_is_more_than_90_percent_faster_for_a_sequential_producer():
    scenario = load_scenario(ROOT / "scenarios/r5-drain-mode.toml")
    by = {s.name: s for s in run_scenario(scenario, replications=2)}
    timer = by["sequential timer"].metrics["block_time_s"]
    drain = by["sequential drain"].metrics["block_time_s"]
    assert drain < 0.10 * timer
    assert by["sequential drain"].metrics["flush_share_timer"] == 0.0
    # the per-run spread is part of the result: one row per replication
    assert len(by["fan-out 64 drain"].runs) == 2
    assert by["fan-out 64 drain"].metrics["batch_size_mean"] > 1.0
