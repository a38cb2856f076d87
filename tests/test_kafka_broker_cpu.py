"""The broker's CPU (simbatch/kafka/broker.py): at an idle broker a one-record request takes
what the fitted round trip says; records beyond the first add their cost; one connection's
requests queue at the broker as an M/D/1 queue does; the CPU metric is the work done; other
load slows the broker's requests; a request after an idle spell pays a cold start, and a fetch
pays for every partition it names."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from simbatch.kafka import (
    BrokerConfig,
    ConsumerConfig,
    KafkaCase,
    KafkaProducerConfig,
    KafkaWorkload,
    OuterBatcherConfig,
)
from simbatch.kafka import simulate as simulate_kafka
from simbatch.kafka.engine import ENGINE

CPU = BrokerConfig(cores=2, request_cpu_us=300, record_cpu_us=10, byte_cpu_ns=1)


def _case(broker: BrokerConfig, **workload) -> KafkaCase:
    return KafkaCase(workload=KafkaWorkload(**{"n_messages": 100, **workload}),
                     outer=OuterBatcherConfig(linger_ms=None),
                     producer=KafkaProducerConfig(semantics="librdkafka", linger_ms=0,
                                                  append_ms=0.8, append_ratios=(0.9, 1.0, 1.3)),
                     consumer=ConsumerConfig(fetch_ms=0.3), broker=broker)


COLD = BrokerConfig(cores=2, request_cpu_us=300, record_cpu_us=10, byte_cpu_ns=1,
                    cold_us=400, cold_after_us=1000, partition_fetch_us=5)


@pytest.mark.parametrize("cpu", [CPU, COLD], ids=["warm", "cold"])
def test_an_idle_broker_answers_a_one_record_request_as_fitted(cpu):
    # the fitted round trip holds one record's service at an idle broker, its cold start too
    off = simulate_kafka(_case(BrokerConfig()), 4)
    on = simulate_kafka(_case(cpu), 4)
    assert on.broker_cpu_s > 0 and off.broker_cpu_s != off.broker_cpu_s     # on, and off
    np.testing.assert_array_equal(off.latency_s, on.latency_s)      # 25 ms apart: idle


@pytest.mark.parametrize("interval_ms,cold", [(25.0, 100), (0.1, 1)])
def test_a_request_after_an_idle_spell_pays_a_cold_start(interval_ms, cold):
    # 25 ms apart, the broker idles past cold_after_us before every request: each produce
    # request starts cold (its fetch follows at once, warm); 0.1 ms apart it never idles that
    # long after the first. Every fetch names the consumer's 4 partitions.
    case = _case(COLD, interval_ms=interval_ms)
    case = dataclasses.replace(case, producer=dataclasses.replace(case.producer,
                                                                  n_partitions=4))
    run = simulate_kafka(case, 2)
    warm = simulate_kafka(dataclasses.replace(
        case, broker=dataclasses.replace(COLD, cold_us=0, partition_fetch_us=0)), 2)
    assert run.broker_cold_starts == cold
    extra = (cold * COLD.cold_us + run.broker_fetches * 4 * COLD.partition_fetch_us) * 1e-6
    if interval_ms > 1:          # one fetch per request either way
        assert run.broker_fetches == warm.broker_fetches == 100
        assert run.broker_cpu_s == pytest.approx(warm.broker_cpu_s + extra)
    else:                         # the costs' own stages change how fetches coalesce
        share = COLD.fetch_share * COLD.request_cpu_us * 1e-6
        assert run.broker_cpu_s == pytest.approx(
            warm.broker_cpu_s + extra + (run.broker_fetches - warm.broker_fetches) * share)


def _burst(semantics: str, broker: BrokerConfig):
    case = KafkaCase(workload=KafkaWorkload(feed="bursts", burst_size=5, n_messages=5),
                     outer=OuterBatcherConfig(linger_ms=None),
                     producer=KafkaProducerConfig(semantics=semantics, linger_ms=0,
                                                  append_ms=1.0),
                     consumer=ConsumerConfig(fetch_ms=0), broker=broker)
    return simulate_kafka(case, 1).frames()["requests"]


def test_records_beyond_the_first_add_their_cost():
    # a burst of 5 records, franz-go at linger 0: one request of 5 records; 4 records beyond
    # the fitted one-record request at 100 us each
    cpu = BrokerConfig(cores=1, request_cpu_us=300, record_cpu_us=100, fetch_share=0)
    assert _burst("franz-go", BrokerConfig()).append_s.tolist() == pytest.approx([0.001])
    assert _burst("franz-go", cpu).append_s.tolist() == pytest.approx([0.0014])


def test_a_muted_connection_serves_its_requests_one_after_another():
    # librdkafka sends the burst as 5 one-record requests at once; the broker reads the next
    # only when done with the one before (400 us each): answered 1.0, 1.4, ... 2.6 ms
    cpu = BrokerConfig(cores=2, request_cpu_us=300, record_cpu_us=100, fetch_share=0)
    off = _burst("librdkafka", BrokerConfig())
    on = _burst("librdkafka", cpu)
    assert off.n_records.tolist() == on.n_records.tolist() == [1] * 5
    assert off.append_s.tolist() == pytest.approx([0.001] * 5)
    assert on.append_s.tolist() == pytest.approx([0.001, 0.0014, 0.0018, 0.0022, 0.0026])


def test_one_connection_queues_as_an_m_d_1_queue():
    # librdkafka, linger 0, one partition: a request per message, served one at a time
    # (the connection is muted while the broker serves it): Poisson arrivals at 500/s,
    # 1 ms of service -> M/D/1 at rho = 0.5, mean wait rho s / (2 (1 - rho)) = 0.5 ms
    s, rate = 1e-3, 500.0
    case = KafkaCase(workload=KafkaWorkload(n_messages=40_000, feed="poisson",
                                            rate_per_s=rate),
                     outer=OuterBatcherConfig(linger_ms=None),
                     producer=KafkaProducerConfig(semantics="librdkafka", linger_ms=0,
                                                  append_ms=s * 1e3),
                     consumer=ConsumerConfig(fetch_ms=0),
                     broker=BrokerConfig(cores=2, request_cpu_us=s * 1e6, fetch_share=0))
    run = simulate_kafka(case, 7)
    rho = rate * s
    expected = s + rho * s / (2 * (1 - rho))
    assert run.latency_s.mean() == pytest.approx(expected, rel=0.04)
    m = ENGINE.run_metrics(run)
    assert m["broker_cpu_cores"] == pytest.approx(rho, rel=0.02)


def test_other_load_on_the_cores_slows_the_requests():
    def p99(broker: BrokerConfig) -> float:
        case = KafkaCase(workload=KafkaWorkload(n_messages=5000, feed="poisson",
                                                rate_per_s=1000),
                         outer=OuterBatcherConfig(linger_ms=None),
                         producer=KafkaProducerConfig(semantics="librdkafka", linger_ms=0,
                                                      n_partitions=4, append_ms=0.5),
                         consumer=ConsumerConfig(fetch_ms=0), broker=broker)
        return ENGINE.run_metrics(simulate_kafka(case, 3))["request_latency_p99_s"]

    base = BrokerConfig(cores=2, request_cpu_us=400)
    idle = p99(base)
    busy = p99(BrokerConfig(cores=2, request_cpu_us=400, background_cores=1.5,
                            background_job_ms=2))
    traffic = p99(BrokerConfig(cores=2, request_cpu_us=400, record_cpu_us=2,
                               background_records_per_s=200_000,
                               background_records_per_request=500))
    assert busy > 1.5 * idle and traffic > 1.2 * idle


def test_background_traffic_shows_in_the_broker_cpu():
    case = KafkaCase(workload=KafkaWorkload(n_messages=2000, rate_per_s=1000),
                     outer=OuterBatcherConfig(linger_ms=None),
                     broker=BrokerConfig(cores=4, request_cpu_us=100, record_cpu_us=1,
                                         background_records_per_s=100_000,
                                         background_records_per_request=100,
                                         idle_cores=0.05))
    m = ENGINE.run_metrics(simulate_kafka(case, 1))
    # ours: ~1 request per 10 ms linger... small; the background: 1000 req/s x 100 us +
    # 100,000 records/s x 1 us = 0.2 cores; + idle 0.05
    assert m["broker_cpu_cores"] == pytest.approx(0.25, abs=0.03)


def test_background_load_needs_cores_left_for_the_broker():
    with pytest.raises(Exception, match="background_cores"):
        BrokerConfig(cores=2, background_cores=2.0)


@pytest.mark.parametrize("interval_ms,fetches", [(25.0, 100), (0.1, None)])
def test_the_consumer_reads_the_appends_made_while_its_fetch_was_away_in_one_fetch(
        interval_ms, fetches):
    # the consumer keeps one fetch outstanding and sends the next fetch_ms (0.3 ms) after
    # the reply: messages 25 ms apart are fetched one by one; 0.1 ms apart (librdkafka at
    # linger 0: a request each), several appends wait for each fetch, which pays the
    # per-request share once
    case = _case(CPU, interval_ms=interval_ms)
    run = simulate_kafka(case, 2)
    assert run.requests == 100
    if fetches is not None:
        assert run.broker_fetches == fetches
        return
    assert 10 <= run.broker_fetches < 60
    share = CPU.fetch_share
    per_request = CPU.request_cpu_us * 1e-6
    # every record's own cost and bytes, a produce share per request, a fetch share per fetch
    records = 100 * (CPU.record_cpu_us * 1e-6 + CPU.byte_cpu_ns * 1e-9 * (
        case.workload.message_bytes + case.producer.record_overhead_bytes))
    expected = records + per_request * ((1 - share) * run.requests
                                        + share * run.broker_fetches)
    assert run.broker_cpu_s == pytest.approx(expected)


def test_a_cold_start_grows_with_the_idle_time_over_its_ramp():
    # measured (validate/kafka_cold_start.py): a request's extra CPU grows over milliseconds
    # of idle time. 5 ms apart the broker idles 5 ms less the request's and its fetch's
    # stages, w, and the cold share itself: s = (5000 - w - 1000) / (8000 + cold_us), paid
    # by every request but the first (a whole one); 25 ms apart, every request pays it all
    ramp = dataclasses.replace(COLD, cold_ramp_us=8000)
    assert [ramp.cold_share(t) for t in (999.0, 5000.0, 9000.0, 1e9)] == [0.0, 0.5, 1.0, 1.0]
    assert simulate_kafka(_case(ramp, interval_ms=25.0), 2).broker_cold_starts == 100
    run = simulate_kafka(_case(ramp, interval_ms=5.0), 2)
    warm = simulate_kafka(_case(dataclasses.replace(ramp, cold_us=0), interval_ms=5.0), 2)
    w = warm.broker_cpu_s / 100 * 1e6
    share = (5000 - w - ramp.cold_after_us) / (ramp.cold_ramp_us + ramp.cold_us)
    assert run.broker_cold_starts == pytest.approx(1 + 99 * share, rel=0.01)
    assert run.broker_cpu_s == pytest.approx(
        warm.broker_cpu_s + run.broker_cold_starts * ramp.cold_us * 1e-6, rel=1e-3)
