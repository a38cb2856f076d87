"""Feeds given as rates (simbatch/kafka/feeds.py): overall or per partition, several
producers, steps and bursts; the one configuration path refuses contradictions in the one
format; the buffered-messages metrics on a trace whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simbatch.core.errors import ConfigError
from simbatch.kafka import (
    ConsumerConfig,
    KafkaCase,
    KafkaProducerConfig,
    KafkaWorkload,
    OuterBatcherConfig,
    RateStep,
)
from simbatch.kafka import metrics as km
from simbatch.kafka import simulate as simulate_kafka
from simbatch.kafka.engine import ENGINE
from simbatch.kafka.feeds import arrivals
from simbatch.planning.scenario import load_scenario


def schedule(wl: KafkaWorkload, n_partitions: int = 1, seed: int = 1):
    return arrivals(wl, n_partitions, np.random.default_rng(seed))


def test_a_rate_is_the_inverse_of_the_gap():
    by_gap = schedule(KafkaWorkload(n_messages=50, interval_ms=2.5))
    by_rate = schedule(KafkaWorkload(n_messages=50, rate_per_s=400))
    np.testing.assert_array_equal(by_gap.ticks, by_rate.ticks)
    per_partition = schedule(KafkaWorkload(n_messages=50, rate_per_partition_per_s=5), 80)
    np.testing.assert_array_equal(by_rate.ticks, per_partition.ticks)


def test_duration_gives_rate_times_duration_messages():
    arr = schedule(KafkaWorkload(rate_per_s=1000, duration_s=2.0))
    assert arr.n == 2000 and arr.ticks[-1] == 1_999_000
    poisson = schedule(KafkaWorkload(rate_per_s=1000, duration_s=20.0, feed="poisson"))
    assert abs(poisson.n - 20_000) < 5 * np.sqrt(20_000)
    assert poisson.ticks.max() < 20e6 and (np.diff(poisson.ticks) >= 0).all()


def test_steps_vary_the_rate_in_time():
    wl = KafkaWorkload(rate_per_s=100, steps=(RateStep(duration_s=1.0),
                                              RateStep(duration_s=0.5, factor=10),
                                              RateStep(duration_s=1.0, rate_per_s=20)))
    t = schedule(wl).ticks / 1e6
    counts = [((t >= a) & (t < b)).sum() for a, b in ((0, 1), (1, 1.5), (1.5, 2.5))]
    assert counts == [100, 500, 20]
    assert wl.messages_estimate(1) == 620


def test_producers_share_the_rate_and_each_has_its_own_client():
    one = schedule(KafkaWorkload(rate_per_s=1000, duration_s=1.0))
    four = schedule(KafkaWorkload(rate_per_s=1000, duration_s=1.0, producers=4))
    assert four.n == one.n
    np.testing.assert_allclose(four.ticks, one.ticks, atol=1)    # taking turns
    assert np.bincount(four.producer).tolist() == [250] * 4
    case = KafkaCase(workload=KafkaWorkload(rate_per_s=1000, n_messages=400, producers=4,
                                            feed="poisson"),
                     producer=KafkaProducerConfig(n_partitions=8))
    run = simulate_kafka(case, 2)
    assert np.bincount(run.producer).tolist() == [100] * 4
    assert np.isfinite(run.consume_s).all()
    frame = run.frames()["messages"]
    # a request carries one producer's records only (each producer has its own client)
    assert (frame.groupby("request").producer.nunique() == 1).all()


def test_bursts_spread_over_burst_ms():
    arr = schedule(KafkaWorkload(feed="bursts", burst_size=4, burst_ms=2.0, interval_ms=10,
                                 n_messages=8))
    assert (arr.ticks / 1e3).tolist() == [0, 0.5, 1, 1.5, 10, 10.5, 11, 11.5]
    at_once = schedule(KafkaWorkload(feed="bursts", burst_size=4, interval_ms=10,
                                     n_messages=8))
    assert (at_once.ticks / 1e3).tolist() == [0] * 4 + [10] * 4
    assert at_once.fresh.tolist() == [True, False, False, False] * 2


def test_closed_loop_splits_its_senders_over_the_producers():
    case = KafkaCase(workload=KafkaWorkload(feed="closed_loop", senders=4, producers=2,
                                            n_messages=40),
                     outer=OuterBatcherConfig(linger_ms=None))
    run = simulate_kafka(case, 1)
    assert np.isfinite(run.consume_s).all()
    assert sorted(set(run.producer.tolist())) == [0, 1]


@pytest.mark.parametrize("workload,field", [
    ('rate_per_s = 100\ninterval_ms = 5', "interval_ms"),
    ('rate_per_s = 100\nrate_per_partition_per_s = 5', "rate_per_partition_per_s"),
    ('n_messages = 100\nduration_s = 2', "duration_s"),
    ('rate_per_s = 100\nn_messages = 100\n[[workload.steps]]\nduration_s = 1', "steps"),
    ('feed = "closed_loop"\nrate_per_s = 100', "feed"),
    ('feed = "trace"\ngaps_ms = [1, 2]\nduration_s = 2', "feed"),
    ('[[workload.steps]]\nduration_s = 1\nfactor = 2', "steps"),
    ('rate_per_s = 10\n[[workload.steps]]\nduration_s = 1\nfactor = 2\nrate_per_s = 5',
     "factor"),
    ('burst_ms = 5', "burst_ms"),
    ('producers = 0', "producers"),
    ('rate_per_s = -3', "rate_per_s"),
])
def test_contradictory_feeds_are_refused_in_the_one_format(tmp_path, workload, field):
    path = tmp_path / "bad.toml"
    path.write_text(f'[scenario]\nkind = "kafka"\n[workload]\n{workload}\n')
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    message = str(info.value)
    assert message.startswith(f"{path}: [workload"), message
    assert f"The '{field}' parameter of " in message and message.endswith("."), message


def test_a_rate_scenario_file_loads_and_scales():
    case = KafkaCase(workload=KafkaWorkload(rate_per_partition_per_s=5, duration_s=2,
                                            feed="poisson"),
                     producer=KafkaProducerConfig(n_partitions=256))
    assert ENGINE.scaled_load(case, 2.0) == {"workload.rate_per_partition_per_s": 10.0}
    assert abs(case.workload.messages_estimate(256) - 2560) == 0


def test_buffered_messages_count_what_the_outer_batcher_and_the_client_hold():
    # 4 messages 10 ms apart, a deadline outer batcher of 25 ms (flushes at 25 ms: 3
    # messages, then at 55 ms: 1), a client that sends at once and an append of 5 ms
    case = KafkaCase(workload=KafkaWorkload(feed="trace", gaps_ms=(10, 10, 10),
                                            n_messages=4),
                     outer=OuterBatcherConfig(linger_ms=25, timer="deadline"),
                     producer=KafkaProducerConfig(linger_ms=0, append_ms=5),
                     consumer=ConsumerConfig(fetch_ms=0))
    run = simulate_kafka(case, 1)
    m = ENGINE.run_metrics(run)
    assert run.produce_s.tolist() == pytest.approx([0.025, 0.025, 0.025, 0.055])
    assert m["outer_buffered_max"] == 3
    # held: 25 + 15 + 5 + 25 ms over the run's 60 ms
    assert m["outer_buffered_mean"] == pytest.approx(0.070 / 0.060)
    assert m["client_buffered_max"] == 3
    assert m["client_buffered_mean"] == pytest.approx(4 * 0.005 / 0.060)
    assert m["client_latency_p99_s"] == pytest.approx(0.005)
    assert m["request_latency_p99_s"] == pytest.approx(0.005)


def test_the_buffered_gauge_is_read_every_64_messages_as_teranode_reads_it():
    # 128 messages 1 ms apart through a 10 ms deadline: flushes at 10, 20, ... ms; message 63
    # (at 63 ms) finds 60-62 held, message 127 finds 120-126: samples 3 and 7
    case = KafkaCase(workload=KafkaWorkload(n_messages=128, interval_ms=1),
                     outer=OuterBatcherConfig(linger_ms=10, timer="deadline"),
                     producer=KafkaProducerConfig(linger_ms=0))
    m = ENGINE.run_metrics(simulate_kafka(case, 1))
    assert (m["outer_gauge_mean"], m["outer_gauge_max"]) == (5.0, 7.0)
    assert m["outer_buffered_max"] == 10          # every peak, between the samples too


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=1e-4, max_value=300.0), min_size=1, max_size=300),
       st.sampled_from([0.5, 0.9, 0.99]))
def test_the_histogram_reading_lies_in_the_bucket_of_the_exact_quantile(values, q):
    # Prometheus's estimate interpolates inside the bucket where the rank falls, so it lies
    # between that bucket's bounds, as the exact order statistic of that rank does
    # (above the largest finite bound both read that bound)
    v = np.array(values)
    est = km.histogram_quantile(q, v)
    edges = np.array(km.TERANODE_LATENCY_BUCKETS_S)
    rank = int(np.ceil(q * v.size))                      # the rank-th smallest observation
    exact = np.sort(v)[max(rank, 1) - 1]
    b = int(np.searchsorted(edges, exact, side="left"))
    if b == edges.size:
        assert est == edges[-1]
    else:
        lo = 0.0 if b == 0 else edges[b - 1]
        assert lo <= est <= edges[b] + 1e-12


def test_a_dashboard_reads_each_minute_on_its_own():
    # minute 0: two requests under 64 ms -> 63.36 ms; minute 2: one at 300 ms, in (256, 512]
    # -> 256 + 0.99 x 256 ms; no request in minute 1, so no reading there
    at = np.array([5.0, 30.0, 150.0])
    latency = np.array([0.002, 0.010, 0.300])
    mean, peak = km.dashboard_quantile(0.99, at, latency)
    assert peak == pytest.approx(0.256 + 0.99 * 0.256)
    assert mean == pytest.approx((0.99 * 0.064 + peak) / 2)
    # over the whole run: the rank 2.97 of 3 falls in the (256, 512] bucket as well
    assert km.histogram_quantile(0.99, latency) == pytest.approx(0.256 + 0.97 * 0.256)
