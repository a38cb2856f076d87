"""The aggregated Kafka engine (simbatch/kafka/aggregate.py) against the message-level one:
the same per-message latencies wherever both run, on every shipped Kafka scenario and on
hypothesis-drawn cases; the keys hashed in bulk give the partitions the clients' own hashes
give; a production-sized run is estimated as the aggregated engine costs, not refused."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from simhelp import ROOT
from test_kafka_properties import kafka_cases

from simbatch.core.errors import ConfigError
from simbatch.core.streams import replication_seed
from simbatch.core.work import Bounds, check_work
from simbatch.kafka import (
    BrokerConfig,
    ConsumerConfig,
    KafkaCase,
    KafkaProducerConfig,
    KafkaWorkload,
    OuterBatcherConfig,
    SimulationConfig,
)
from simbatch.kafka import simulate as simulate_kafka
from simbatch.kafka.engine import ENGINE
from simbatch.kafka.keys import key_partitions
from simbatch.kafka.partitioners import key_partition
from simbatch.kafka.producer import SEMANTICS
from simbatch.planning.scenario import load_scenario

EXAMPLES = int(os.environ.get("SIMBATCH_KAFKA_EXAMPLES", "2000")) // 4


def message_level(case: KafkaCase) -> KafkaCase:
    return dataclasses.replace(case, simulation=SimulationConfig(aggregate="off"))


def assert_same(case: KafkaCase, seed: int) -> None:
    if not case.aggregated:          # an outer linger of 0: message by message anyway
        return
    agg, msg = simulate_kafka(case, seed), simulate_kafka(message_level(case), seed)
    np.testing.assert_array_equal(agg.latency_s, msg.latency_s)
    np.testing.assert_array_equal(agg.consume_s, msg.consume_s)
    np.testing.assert_array_equal(agg.produce_s, msg.produce_s)
    np.testing.assert_array_equal(agg.request, msg.request)
    np.testing.assert_array_equal(agg.request_acked_s, msg.request_acked_s)
    assert agg.outer_flushes == msg.outer_flushes


KAFKA_SCENARIOS = sorted(p for p in (ROOT / "scenarios").glob("*.toml")
                         if 'kind = "kafka"' in p.read_text())


@pytest.mark.parametrize("path", KAFKA_SCENARIOS, ids=[p.stem for p in KAFKA_SCENARIOS])
def test_every_shipped_kafka_scenario_is_the_same_aggregated(path):
    scenario = load_scenario(path)
    for case in scenario.cases:
        if not case.aggregated:
            continue
        if case.workload.messages_estimate(case.producer.n_partitions) > 200_000:
            continue                    # the production scenario: too long message by message
        assert_same(case, replication_seed(scenario.seed, 0))


@st.composite
def aggregatable_cases(draw, semantics: str):
    """The invariants' cases (``test_kafka_properties``), open loop, with up to three
    producers and the broker's CPU on or off (cold starts and fetched partitions too)."""
    case = draw(kafka_cases(semantics))
    assume(case.workload.feed != "closed_loop")     # a closed loop runs message by message
    cores = draw(st.one_of(st.none(), st.integers(1, 3)))
    producers = draw(st.integers(1, 3))
    return dataclasses.replace(
        case, workload=dataclasses.replace(case.workload, producers=producers),
        broker=BrokerConfig(cores=cores, request_cpu_us=draw(st.integers(0, 2000)),
                            record_cpu_us=draw(st.integers(0, 50)),
                            cold_us=draw(st.integers(0, 1000)),
                            cold_after_us=draw(st.sampled_from([100.0, 1000.0, 5000.0])),
                            cold_ramp_us=draw(st.sampled_from([0.0, 6000.0])),
                            partition_fetch_us=draw(st.integers(0, 20))))


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_aggregated_and_message_level_give_the_same_latencies(semantics):
    # derandomized: the same examples in every run, so a CI verdict is reproducible; ties
    # that a random run found and that are not fixed yet are the xfail below
    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(case=aggregatable_cases(semantics), seed=st.integers(0, 2**31))
    def run(case, seed):
        assert_same(case, seed)

    run()


def test_two_producers_appended_at_one_instant_are_consumed_in_the_same_order():
    # a burst of 9 at 0 and at 0.1 ms over 2 producers, max_batch 5, a 0.1 ms debounce;
    # one partition, so the consumer reads the two requests appended at 0.1 ms in the order
    # they were appended, and each request's fetch time is drawn from its producer's stream.
    # At 0.1 ms producer 0's debounce fires (armed at 0, when its goroutine flushed) and
    # producer 1's burst arrives: the feed's step comes first (clock.Arrival), so producer
    # 1's goroutine, woken by it, flushes first, in both engines. (Found by a random run of
    # the property above.)
    case = KafkaCase(workload=KafkaWorkload(feed="bursts", n_messages=17, interval_ms=0.1,
                                            producers=2, burst_size=9, message_bytes=0,
                                            keyed=False),
                     outer=OuterBatcherConfig(linger_ms=0.1, max_batch=5),
                     producer=KafkaProducerConfig(semantics="java", n_partitions=1,
                                                  batch_max_bytes=300, batch_num_messages=1,
                                                  max_buffered_records=5, append_ms=0),
                     consumer=ConsumerConfig(fetch_ms=0.1, fetch_ratios=(0.2, 1.0, 9.0)))
    assert_same(case, 0)


def test_a_message_at_the_debounce_instant_wakes_the_flush_before_a_client_linger():
    # a message every 0.3 ms, a 0.3 ms debounce: each flush falls on the next message's
    # arrival, which wakes the drain goroutine (the timer keeps the message for the next
    # batch). At 1.5 ms partition 0's linger also fires (two hops to its drain) and the
    # flush's second Produce blocks (one hop to every broker's drain): the flush runs on the
    # feed's wake-up, before the linger, so broker 1's request (message 3) goes first
    case = KafkaCase(workload=KafkaWorkload(n_messages=6, feed="periodic", interval_ms=0.3,
                                            message_bytes=0),
                     outer=OuterBatcherConfig(linger_ms=0.3, max_batch=3),
                     producer=KafkaProducerConfig(semantics="franz-go", linger_ms=0.3,
                                                  n_partitions=2, n_brokers=2,
                                                  batch_max_bytes=300, batch_num_messages=1,
                                                  max_buffered_records=2, append_ms=0.6),
                     consumer=ConsumerConfig(fetch_ms=0.0))
    assert_same(case, 0)
    run = simulate_kafka(case, 0)
    assert run.request[2:4].tolist() == [3, 2]


@pytest.mark.parametrize("timer", ["debounce", "deadline"])
def test_producers_due_at_one_instant_reach_a_shared_broker_in_publish_order(timer):
    # messages 2i and 2i + 1 come at one instant, to producers 0 and 1 (a trace goes round
    # the producers); their outer timers fire together and the one broker core serves the
    # first flushed first: message by message, that is publish order
    gaps = (0.0, 7.0) * 20
    case = KafkaCase(workload=KafkaWorkload(feed="trace", n_messages=40, gaps_ms=gaps[:39],
                                            producers=2),
                     outer=OuterBatcherConfig(linger_ms=2, timer=timer),
                     producer=KafkaProducerConfig(linger_ms=0, n_partitions=4),
                     consumer=ConsumerConfig(fetch_ms=0),
                     broker=BrokerConfig(cores=1, request_cpu_us=500, fetch_share=0))
    assert_same(case, 1)
    run = simulate_kafka(case, 1)
    assert (run.ack_s[0::2] < run.ack_s[1::2]).all()


def test_debounce_timers_due_at_one_instant_fire_in_the_order_they_were_last_reset():
    # message 1 (producer 1) at 13.0 ms, messages 2 (producer 0) and 3 (producer 1) at
    # 13.3: both debounce timers come due at 13.7, producer 0's reset by message 2 and
    # producer 1's by message 3, a step later; the one broker core serves producer 0 first
    case = KafkaCase(workload=KafkaWorkload(feed="trace", n_messages=4, gaps_ms=(13.0, 0.3, 0.0),
                                            producers=2),
                     outer=OuterBatcherConfig(linger_ms=0.4, max_batch=3),
                     producer=KafkaProducerConfig(semantics="librdkafka", n_partitions=1,
                                                  batch_num_messages=1,
                                                  max_buffered_records=1),
                     consumer=ConsumerConfig(fetch_ms=0),
                     broker=BrokerConfig(cores=1, request_cpu_us=0, record_cpu_us=2))
    assert_same(case, 0)
    run = simulate_kafka(case, 0)
    assert run.ack_s[2] < run.ack_s[1]


def test_a_dense_feed_through_the_outer_batcher_is_simulated_per_batch():
    # 20,000 messages through a debounce that never goes idle: 4 flushes of max_batch,
    # handed to franz-go as chunks; identical to the message-level run
    case = KafkaCase(workload=KafkaWorkload(rate_per_s=20_000, n_messages=20_000,
                                            feed="poisson"),
                     outer=OuterBatcherConfig(linger_ms=10, max_batch=5_000),
                     producer=KafkaProducerConfig(n_partitions=64, max_buffered_records=7_000,
                                                  linger_ms=5))
    assert_same(case, 3)
    run = simulate_kafka(case, 3)
    assert run.outer_flushes == 4


@pytest.mark.parametrize("semantics", SEMANTICS)
@pytest.mark.parametrize("n_partitions", [1, 7, 32, 256])
def test_keys_hashed_in_bulk_are_the_clients_partitions(semantics, n_partitions):
    name = "r2-both-fixes"
    got = key_partitions(semantics, name, 1500, n_partitions).tolist()
    assert got == [key_partition(semantics, f"k-{name}-{i}".encode(), n_partitions)
                   for i in range(1500)]
    for i in (9_999, 10_000, 999_999, 1_000_000, 12_345_678):   # digit counts
        assert key_partitions(semantics, "b", i + 1, n_partitions)[i] == key_partition(
            semantics, f"k-b-{i}".encode(), n_partitions)


def test_a_production_sized_run_is_estimated_per_batch_and_not_refused():
    # 10 s of 1.3M messages/s over 256 partitions (benchmarks/bench_kafka.py's case)
    case = KafkaCase(workload=KafkaWorkload(rate_per_s=1.3e6, duration_s=10, feed="poisson"),
                     outer=OuterBatcherConfig(linger_ms=10, max_batch=50_000),
                     producer=KafkaProducerConfig(n_partitions=256, linger_ms=10,
                                                  max_buffered_records=50_000))
    work = ENGINE.work(case)
    assert work.events < 2e7 and work.memory_bytes < 2 * 2**30
    check_work("bench", work, 1, Bounds())
    # message by message the same run is some fifty times the events (minutes, not seconds)
    assert ENGINE.work(message_level(case)).events > 50 * work.events
    # and ten times that is refused, naming the field that drives it
    longer = dataclasses.replace(case, workload=dataclasses.replace(case.workload,
                                                                    duration_s=100))
    with pytest.raises(ConfigError, match="duration_s"):
        check_work("bench", ENGINE.work(message_level(longer)), 1, Bounds())
