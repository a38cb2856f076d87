"""Table R3: per-record client statistics, from the scenario file.

What is calibrated and what is predicted (scenarios/r3-client-stats.toml says where every
parameter comes from): the service's own CPU per record is the one parameter fitted on R3
(on eu-2's 43 % for the broken variant), so the band test below holds by that calibration
and guards it. The predictions: the map Set's part of the statistics (published: 21 of 43 %
and 30 of 59 %), the sync rate the statistics lock allows, and every fix's share and
throughput from the same parameters.
"""

from __future__ import annotations

import json

import pytest
from simhelp import ROOT

from simbatch.cli import main
from simbatch.planning.scenario import load_scenario
from simbatch.planning.sweep import compare, run_scenario

SCENARIO = ROOT / "scenarios/r3-client-stats.toml"
FIXES_UNDER_10 = ("per-record-once", "sharded x32", "per-batch aggregate", "disabled")


@pytest.fixture(scope="module")
def r3():
    scenario = load_scenario(SCENARIO)
    summaries = run_scenario(scenario)
    return scenario, summaries, {s.name: s.metrics for s in summaries}


def test_broken_statistics_share_in_the_published_band(r3):
    scenario, summaries, m = r3
    assert 0.40 <= m["broken (N^2)"]["stats_cpu_share"] <= 0.60
    assert all(row.ok for row in compare(scenario, summaries))


def test_the_map_set_is_about_half_of_the_statistics_as_published(r3):
    # published ratios 21 / 43 = 0.488 and 30 / 59 = 0.508; within 10 % of that range
    m = r3[2]["broken (N^2)"]
    ratio = m["stats_set_cpu_share"] / m["stats_cpu_share"]
    assert 0.488 * 0.9 <= ratio <= 0.508 * 1.1, ratio


@pytest.mark.parametrize("fix", FIXES_UNDER_10)
def test_every_fix_but_sampling_brings_the_share_under_10_percent(r3, fix):
    assert r3[2][fix]["stats_cpu_share"] < 0.10


def test_the_lock_bound_record_rate_puts_eu2s_sync_rate_at_tens_of_thousands_of_records(r3):
    # published: eu-2 syncs at ~6.6 s a block of "tens of thousands of records"; the block's
    # record count is not published, so the tolerance is the decade the text gives. The
    # counter-map locks bind the broken variant; without their capacity the model gave
    # 39k records/s, i.e. 257k records in 6.6 s.
    rate = r3[2]["broken (N^2)"]["throughput_items_per_s"]
    assert 10_000 <= 6.6 * rate < 100_000, rate


def test_sampling_one_in_ten_stays_bound_by_the_lock(r3):
    # a tenth of the N^2 loop still asks more of each counter map's lock than the rest of the
    # parse takes, so its block stays well above counting each record once (2.1x here;
    # without the lock's capacity the two were within 8 %)
    m = r3[2]
    assert m["sampled 1-in-10"]["block_time_s"] > 1.5 * m["per-record-once"]["block_time_s"]


def test_where_the_time_goes_the_broken_items_wait_for_the_lock(r3):
    m = r3[2]
    broken = m["broken (N^2)"]
    # most of the block is the wait for the counter maps' locks, inside the service time
    assert 0.5 * broken["block_time_s"] < broken["item_stats_lock_wait_mean_s"] \
        <= broken["item_service_mean_s"]
    assert m["sampled 1-in-10"]["item_stats_lock_wait_mean_s"] > 0.1
    for fix in FIXES_UNDER_10:
        assert m[fix]["item_stats_lock_wait_mean_s"] < 0.01 * broken["item_stats_lock_wait_mean_s"]


def test_every_fix_raises_throughput_and_sampling_is_reported(r3):
    m = r3[2]
    broken = m["broken (N^2)"]["throughput_items_per_s"]
    for name, metrics in m.items():
        if name != "broken (N^2)":
            assert metrics["throughput_items_per_s"] > broken, name
    # sampling keeps the N^2 loop on one record in ten: dearer than counting once per record
    assert (m["sampled 1-in-10"]["stats_cpu_share"]
            > m["per-record-once"]["stats_cpu_share"] > 0)
    assert m["disabled"]["stats_cpu_share"] == 0.0


def test_json_reports_the_share_and_throughput(capsys):
    assert main(["run", str(SCENARIO), "--replications", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    for case in doc["cases"]:
        assert 0.0 <= case["metrics"]["stats_cpu_share"] <= 1.0
        assert case["metrics"]["throughput_ops_per_s"] > 0
        assert 0 < case["metrics"]["cores_busy"] <= 32
