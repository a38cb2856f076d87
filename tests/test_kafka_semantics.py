"""Micro-traces of the three client semantics and the outer batcher's two timers: who sent
what, when (simbatch/kafka/franz_go.py, librdkafka.py, java_producer.py, outer_batcher.py).
Times in ms; append and fetch are constant so every time is exact."""

from __future__ import annotations

import numpy as np
import pytest

from simbatch.core.errors import ConfigError
from simbatch.kafka import (
    ConsumerConfig,
    KafkaCase,
    KafkaProducerConfig,
    KafkaWorkload,
    OuterBatcherConfig,
)
from simbatch.kafka import simulate as simulate_kafka
from simbatch.kafka.partitioners import key_partition


def _keys_for(semantics: str, n_partitions: int, wanted: list[int], name: str = "t"):
    """A case name whose keys k-<name>-<i> put message i in partition wanted[i]."""
    for tag in range(10_000):
        label = f"{name}{tag}"
        got = [key_partition(semantics, f"k-{label}-{i}".encode(), n_partitions)
               for i in range(len(wanted))]
        if got == wanted:
            return label
    raise AssertionError("no such keys")


def _run(semantics: str, parts: list[int], gaps_ms: list[float], n_partitions: int,
         linger_ms: float, append_ms: float = 2.0, inflight: int | None = 1, **outer):
    name = _keys_for(semantics, n_partitions, parts)
    case = KafkaCase(
        name=name,
        workload=KafkaWorkload(n_messages=len(parts), feed="trace", gaps_ms=tuple(gaps_ms)),
        outer=OuterBatcherConfig(linger_ms=outer.pop("outer_ms", None), **outer),
        producer=KafkaProducerConfig(semantics=semantics, linger_ms=linger_ms,
                                     n_partitions=n_partitions, append_ms=append_ms,
                                     max_inflight_per_broker=inflight),
        consumer=ConsumerConfig(fetch_ms=0.0))
    run = simulate_kafka(case, seed=1)
    return run, run.frames()["requests"]


def ms(values) -> list[float]:
    return [round(float(v) * 1e3, 6) for v in values]


def test_librdkafka_sends_each_partition_on_its_own_at_its_own_linger():
    # two partitions, messages at 0 and 30 ms, linger 100: requests at 100 and 130 (three
    # partitions: CRC-32 is linear, so keys k-x-0 and k-x-1 share a parity for every x)
    run, req = _run("librdkafka", [0, 1], [30], 3, linger_ms=100)
    assert ms(req.t_sent_s) == [100.0, 130.0] and req.n_records.tolist() == [1, 1]
    assert ms(run.consume_s) == [102.0, 132.0]


def test_librdkafka_s_broker_thread_sleeps_whole_milliseconds_from_its_last_pass():
    # L9: messages at 0 and 0.3 ms open two partitions' queues, each waking the thread; its
    # pass at 0.3 ms sleeps ceil(9.7 ms) = 10 ms, so partition 0's linger, over at 10 ms,
    # is served at 10.3, together with partition 1's
    _, req = _run("librdkafka", [0, 1], [0.3], 3, linger_ms=10, inflight=None)
    assert ms(req.t_sent_s) == [10.3, 10.3]
    # a whole millisecond apart, the sleep ends on the linger: on time
    _, req = _run("librdkafka", [0, 1], [1.0], 3, linger_ms=10, inflight=None)
    assert ms(req.t_sent_s) == [10.0, 11.0]


def test_a_produce_or_a_response_wakes_librdkafka_s_broker_thread_early():
    # L9, append 0.5 ms: messages at 0, 0.3 and 5 ms to three partitions. The first message
    # of partition 2 wakes the thread at 5 ms: it sleeps 5 ms, to partition 0's linger at
    # 10, on time. That pass sleeps ceil(0.3 ms) = 1 ms for partition 1's, over at 10.3, but
    # the response at 10.5 wakes it first; the next response, at 11, re-anchors its sleep
    # on partition 2's linger at 15
    _, req = _run("librdkafka", [0, 1, 2], [0.3, 4.7], 3, linger_ms=10, append_ms=0.5)
    assert ms(req.t_sent_s) == [10.0, 10.5, 15.0]


@pytest.mark.parametrize("semantics", ["franz-go", "java"])
def test_franz_go_and_java_drain_every_partition_when_one_is_ready(semantics):
    # the first partition's linger takes the second partition's record with it
    run, req = _run(semantics, [0, 1], [30], 2, linger_ms=100)
    assert ms(req.t_sent_s) == [100.0] and req.n_records.tolist() == [2]
    assert ms(run.consume_s) == [102.0, 102.0]


@pytest.mark.parametrize("semantics", ["franz-go", "librdkafka", "java"])
def test_the_linger_is_a_max_age_from_the_first_record(semantics):
    # records at 0, 60, 120 ms to one partition, linger 100: the batch goes at 100
    _, req = _run(semantics, [0, 0, 0], [60, 60], 1, linger_ms=100)
    assert ms(req.t_sent_s) == [100.0, 220.0]


@pytest.mark.parametrize("semantics", ["franz-go", "java"])
def test_a_drain_asked_for_while_the_slot_is_taken_goes_when_the_response_frees_it(semantics):
    # F4 (and Java's Sender with one request in flight): linger 30, append 50. Request 1
    # goes at 30 and is answered at 80; partition 1's record (40 ms) is due at 70 while the
    # slot is taken, so at 80 the drain takes it and the record of 75 ms still lingering
    _, req = _run(semantics, [0, 1, 0], [40, 35], 2, linger_ms=30, append_ms=50)
    assert ms(req.t_sent_s) == [30.0, 80.0]
    assert req.n_records.tolist() == [1, 2]


def test_a_record_that_arrives_while_a_request_is_in_flight_lingers():
    # nothing asked for a drain while request 1 (100 -> 150) was in flight: the record of
    # 110 ms waits out its own linger (210), in every client
    for semantics in ("franz-go", "librdkafka", "java"):
        _, req = _run(semantics, [0, 0], [110], 1, linger_ms=100, append_ms=50)
        assert ms(req.t_sent_s) == [100.0, 210.0], semantics


def test_requests_in_flight_are_answered_in_send_order():
    # librdkafka with two in flight: a slow request is never overtaken by the next one
    case = KafkaCase(workload=KafkaWorkload(n_messages=60, feed="poisson", interval_ms=1),
                     outer=OuterBatcherConfig(linger_ms=None),
                     producer=KafkaProducerConfig(semantics="librdkafka", linger_ms=0,
                                                  n_partitions=4, append_ms=3,
                                                  append_ratios=(0.2, 5.0),
                                                  max_inflight_per_broker=2))
    req = simulate_kafka(case, seed=2).frames()["requests"]
    assert (np.diff(req.t_acked_s) >= 0).all()
    assert (req.groupby("t_acked_s").size() > 1).any()       # some answered together


def test_outer_deadline_flushes_its_linger_after_the_first_message():
    # messages every 25 ms, deadline 100: flushes at 100, 200, ... of 4 messages each (the
    # message at exactly 100 ms goes into the next batch); the debounce never fires
    gaps = [25.0] * 11
    run, req = _run("franz-go", [0] * 12, gaps, 1, linger_ms=0, append_ms=0,
                    outer_ms=100, timer="deadline")
    flushed = req.groupby(req.t_sent_s.round(6)).n_records.sum()
    assert ms(flushed.index) == [100.0, 200.0, 300.0] and flushed.tolist() == [4, 4, 4]
    assert run.outer_flushes == 3
    run, req = _run("franz-go", [0] * 12, gaps, 1, linger_ms=0, append_ms=0,
                    outer_ms=100, timer="debounce")
    assert set(ms(req.t_sent_s)) == {375.0} and run.outer_flushes == 1


def test_client_defaults_by_version():
    assert KafkaProducerConfig(semantics="java", java_version="3").linger_s == 0.0
    assert KafkaProducerConfig(semantics="java").linger_s == 0.005
    assert KafkaProducerConfig(semantics="java").batch_bytes == 16_384
    assert KafkaProducerConfig(semantics="java").inflight_cap == 5
    assert KafkaProducerConfig(semantics="librdkafka").linger_s == 0.005
    assert KafkaProducerConfig(semantics="librdkafka").inflight_cap == 1_000_000
    assert KafkaProducerConfig().linger_s == 0.010 and KafkaProducerConfig().inflight_cap == 1


def _p50(semantics: str, n_partitions: int) -> float:
    case = KafkaCase(workload=KafkaWorkload(n_messages=200, interval_ms=25),
                     outer=OuterBatcherConfig(linger_ms=None),
                     producer=KafkaProducerConfig(semantics=semantics, linger_ms=1000,
                                                  n_partitions=n_partitions))
    return float(np.quantile(simulate_kafka(case, seed=1).latency_s, 0.5, method="lower"))


def test_p50_against_partitions_rises_for_librdkafka_and_stays_flat_for_the_others():
    # the measured shape (validate/franzgo/data/README.md): at linger 1 s on the sparse feed
    # librdkafka goes from ~linger/2 at P = 1 to ~linger at P = 32; the others stay ~linger/2
    rd = [_p50("librdkafka", p) for p in (1, 8, 32, 128)]
    assert rd[0] < 0.55 and rd[-1] > 0.95 and rd == sorted(rd)
    for semantics in ("franz-go", "java"):
        assert all(0.45 < _p50(semantics, p) < 0.55 for p in (1, 8, 32, 128))


@pytest.mark.parametrize("section,field,value,message", [
    ("producer", "semantics", "kafka-python",
     "The 'semantics' parameter of KafkaProducerConfig must be one of 'franz-go', "
     "'librdkafka', 'java'; got 'kafka-python'."),
    ("outer", "timer", "cron",
     "The 'timer' parameter of OuterBatcherConfig must be one of 'debounce', 'deadline'; "
     "got 'cron'."),
    ("producer", "linger_ms", -1,
     "The 'linger_ms' parameter of KafkaProducerConfig must be a number >= 0, or not set; "
     "got -1."),
    ("outer", "linger_ms", -5,
     "The 'linger_ms' parameter of OuterBatcherConfig must be a number >= 0, or not set; "
     "got -5."),
    ("producer", "sticky_linger_ms", 10.5,
     "The 'sticky_linger_ms' parameter of KafkaProducerConfig must be not set unless "
     "semantics = 'librdkafka'; got 10.5."),
])
def test_bad_input_gets_the_one_format(tmp_path, section, field, value, message):
    from simbatch.planning.scenario import load_scenario

    path = tmp_path / "bad.toml"
    value_text = f'"{value}"' if isinstance(value, str) else str(value)
    path.write_text(f'[scenario]\nkind = "kafka"\n[{section}]\n{field} = {value_text}\n')
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    assert str(info.value) == f"{path}: [{section}] {field}: {message}"


def test_p50_against_partitions_moves_as_the_recorded_measurements_do():
    # validate/franzgo/data/runs.csv: the three real clients at linger 1 s, no outer batcher,
    # P = 1 and 128 (3 runs each); the model's direction must be the measured one
    import pandas as pd
    from simhelp import ROOT

    runs = pd.read_csv(ROOT / "validate/franzgo/data/runs.csv")
    plain = runs[(runs.client_linger_ms == 1000) & runs.outer_linger_ms.isna()]
    for client, semantics in (("librdkafka", "librdkafka"), ("franz-go", "franz-go"),
                              ("java", "java")):
        measured = plain[plain.client == client].groupby("partitions").p50_s.median()
        rises = measured[128] > 1.15 * measured[1]
        assert (_p50(semantics, 128) > 1.15 * _p50(semantics, 1)) == rises, client
        assert rises == (client == "librdkafka")
