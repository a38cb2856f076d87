"""Table R2's production paragraph (scenarios/r2-production.toml): teranode's txmeta producers
before and after PR #894, the model's predictions beside the published figures.

What issue 14 asks: the direction and the order of magnitude of each before/after change
match. Held here, with the published figures read from the scenario file:

* each figure, before and after, within a factor of sqrt(10) of the published one (the same
  order of magnitude: less than half a decade away either side; the scenario's inputs are
  stated assumptions, so a level is not asked for closer than that). The model's figures are
  read as the published ones were: the latencies through teranode's histograms and a
  dashboard's windows, the buffered count through its gauge's samples
  (``simbatch/kafka/metrics.py``);
* each change goes the published way (down, for all three);
* each change's size (before / after) within a factor of sqrt(10) of the published one.

A figure the model misses under the scenario's assumptions is marked ``xfail(strict=True)``
with the predicted value and the mechanism that accounts for the gap, so that a change of the
model that closes it shows up.
"""

from __future__ import annotations

import math

import pytest
from simhelp import ROOT

from simbatch.planning.scenario import load_scenario
from simbatch.planning.sweep import run_scenario

PATH = ROOT / "scenarios" / "r2-production.toml"
FACTOR = math.sqrt(10.0)
# the published figure of each change, before -> after (at most 2 buffered is a peak); the
# producer's p99 is a mean over the dashboard's windows, the broker's a single figure
CHANGES = {"producer p99": ("request_latency_p99_dash_mean_s", "request_latency_p99_dash_mean_s"),
           "buffered messages": ("outer_gauge_max", "outer_gauge_max"),
           "broker write p99": ("request_latency_p99_dash_s", "request_latency_p99_dash_s")}

# Measured with the scenario as committed (seed 14, one replication), and why each misses.
ROUND_TRIP = ("the broker's CPU per record is the local broker's, measured (0.57 +- 0.22 us: "
              "validate/kafka_record_cost.py), and the figure swings with it: 246 or 508 ms "
              "one standard error either way; nor is a long-lived broker's collector's share "
              "of ~13 MB requests in the model; production's requests also cross a network, "
              "which the scenario does not pose (its round trip is loopback's; see the "
              "scenario's comment)")
MISSES = {
    ("before", "outer_gauge_max"): "predicted 49,983 vs 186k: one gauge series never shows "
    "more than flush_messages (50,000; the drain loop flushes at maxBatch and the series is "
    "per topic and process), so the published peak adds up at least 4 processes' series, "
    "which the scenario does not pose (see its comment)",
    ("before", "request_latency_p99_dash_max_s"): "predicted 502 ms vs 1.6 s (the band starts "
    "at 506 ms): the longest request takes 331 ms, read in the 256-512 ms bucket; " + ROUND_TRIP,
}
CHANGE_MISSES = {
    "buffered messages": "predicted x16,700 (49,983 -> 3) vs x93,000 (186k -> 2): the "
    "before peak's gap above",
}
HISTOGRAM_FLOOR_S = 0.064
"""The upper bound of the lowest bucket of teranode's producer latency histograms."""


@pytest.fixture(scope="module")
def results():
    scenario = load_scenario(PATH)
    summaries = {s.name: s for s in run_scenario(scenario)}
    return scenario, summaries


def _figures():
    scenario = load_scenario(PATH)
    out = []
    for case in ("before", "after"):
        for metric in scenario.published[case]:
            reason = MISSES.get((case, metric))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(case, metric, marks=marks, id=f"{case}-{metric}"))
    return out


def test_the_scenario_publishes_every_figure_of_the_paragraph():
    scenario = load_scenario(PATH)
    assert [c.name for c in scenario.cases] == ["before", "after"]
    latency = {"request_latency_p99_dash_mean_s", "request_latency_p99_dash_max_s",
               "request_latency_p99_dash_s"}
    assert set(scenario.published["before"]) == latency | {"outer_gauge_mean",
                                                           "outer_gauge_max"}
    assert set(scenario.published["after"]) == latency | {"outer_gauge_max"}
    before, after = scenario.cases
    assert before.aggregated and after.aggregated    # per batch: 6.4M messages in seconds


@pytest.mark.parametrize(("case", "metric"), _figures())
def test_each_figure_is_of_the_published_order_of_magnitude(results, case, metric):
    _, summaries = results
    s = summaries[case]
    predicted, published = s.metrics[metric], s.published[metric]
    assert published / FACTOR <= predicted <= published * FACTOR, (case, metric, predicted)


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_change_goes_the_published_way(results, change):
    _, summaries = results
    b, a = (summaries[c] for c in ("before", "after"))
    m_before, m_after = CHANGES[change]
    predicted = b.metrics[m_before] - a.metrics[m_after]
    published = b.published[m_before] - a.published[m_after]
    assert predicted * published > 0, (change, b.metrics[m_before], a.metrics[m_after])


@pytest.mark.parametrize("change", [
    pytest.param(c, marks=[pytest.mark.xfail(strict=True, reason=CHANGE_MISSES[c])]
                 if c in CHANGE_MISSES else []) for c in CHANGES])
def test_each_change_is_of_the_published_size(results, change):
    _, summaries = results
    b, a = (summaries[c] for c in ("before", "after"))
    m_before, m_after = CHANGES[change]
    predicted = b.metrics[m_before] / a.metrics[m_after]
    published = b.published[m_before] / a.published[m_after]
    assert published / FACTOR <= predicted <= published * FACTOR, (change, predicted)


def test_the_flat_63_ms_after_the_fix_is_the_histograms_floor(results):
    # "a flat 63 ms" on both figures is what histogram_quantile(0.99) reads when every
    # observation falls in the lowest bucket (0, 64 ms]: 0.99 x 64 ms. The model reads it
    # because each of its requests is answered in well under 64 ms, in every minute; the
    # published figure says no more than that.
    _, summaries = results
    a = summaries["after"].metrics
    assert a["request_latency_max_s"] < HISTOGRAM_FLOOR_S
    for metric in ("request_latency_p99_dash_s", "request_latency_p99_dash_mean_s",
                   "request_latency_p99_dash_max_s"):
        assert a[metric] == pytest.approx(0.99 * HISTOGRAM_FLOOR_S)
    # before the fix the model's requests are not all under the floor, so it reads more
    b = summaries["before"].metrics
    assert b["request_latency_p99_dash_s"] > HISTOGRAM_FLOOR_S


def test_the_producers_hold_nothing_back_after_the_fix(results):
    # the mechanism of the fix: before, each producer's outer buffer fills to a 50,000-message
    # size flush (tens of thousands of records per request); after, the 10 ms debounce
    # flushes a message or two at a time, sent at once in a request to each leader it
    # touches (a two-message flush may touch two of the three brokers)
    _, summaries = results
    b, a = summaries["before"].metrics, summaries["after"].metrics
    assert b["records_per_request"] > 10_000 and a["records_per_request"] < 2
    assert a["outer_flushes"] <= a["requests"] < 1.5 * a["outer_flushes"]
    assert a["outer_buffered_mean"] < 1 < b["outer_buffered_mean"] / 10_000
