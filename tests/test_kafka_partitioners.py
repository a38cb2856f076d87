"""The clients' partitioners against the real clients' choices, and the sticky keyless
rules (simbatch/kafka/partitioners.py).

``validate/partitioners/*.csv``: the partition librdkafka 2.16.0, franz-go v1.20.6 and
kafka-clients 3.9.1 put each of 2,000 keys in, at 1, 8, 32, 128 and 256 partitions, read
back from real produce requests on a real broker (validate/partitioners/README.md).
"""

from __future__ import annotations

import csv

import numpy as np
import pytest
from simhelp import ROOT

from simbatch.kafka import KafkaCase, KafkaProducerConfig, KafkaWorkload, OuterBatcherConfig
from simbatch.kafka import simulate as simulate_kafka
from simbatch.kafka.partitioners import (
    FranzGoSticky,
    crc32_partition,
    key_partition,
    murmur2,
    murmur2_partition,
)

VECTORS = {"librdkafka": "librdkafka.csv", "franz-go": "franzgo.csv", "java": "java.csv"}


def _rows(client: str) -> list[dict[str, str]]:
    with open(ROOT / "validate/partitioners" / VECTORS[client]) as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("client", sorted(VECTORS))
def test_every_key_lands_where_the_real_client_put_it(client):
    rows = _rows(client)
    assert len({r["key"] for r in rows}) >= 1000
    assert {int(r["n_partitions"]) for r in rows} >= {1, 8, 32, 128}
    wrong = [r for r in rows
             if key_partition(client, r["key"].encode(), int(r["n_partitions"]))
             != int(r["partition"])]
    assert wrong == [], wrong[:5]


def test_murmur2_is_kafkas_utils_murmur2():
    # the vectors of kafka's own UtilsTest.testMurmur2
    cases = {b"21": -973932308, b"foobar": -790332482,
             b"a-little-bit-long-string": -985981536,
             b"a-little-bit-longer-string": -1486304829,
             b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
             b"abc": 479470107}
    assert {k: murmur2(k) for k in cases} == cases


def test_the_two_hashes_disagree_on_most_keys():
    keys = [f"k-p-{i}".encode() for i in range(2000)]
    same = np.mean([murmur2_partition(k, 32) == crc32_partition(k, 32) for k in keys])
    assert same < 0.1


def _keyless(semantics: str, **producer) -> np.ndarray:
    case = KafkaCase(workload=KafkaWorkload(n_messages=400, interval_ms=5, keyed=False),
                     outer=OuterBatcherConfig(linger_ms=None),
                     producer=KafkaProducerConfig(semantics=semantics, n_partitions=16,
                                                  **producer))
    return simulate_kafka(case, seed=4).partition


def _runs(parts: np.ndarray) -> list[int]:
    """Lengths of the runs of consecutive records in one partition."""
    cut = np.flatnonzero(np.diff(parts) != 0) + 1
    return np.diff(np.concatenate([[0], cut, [parts.size]])).tolist()


def test_librdkafka_keyless_sticks_for_twice_the_linger():
    # sticky.partitioning.linger.ms unset = 2 x linger.ms: 100 ms of a 5 ms feed = 20 records
    runs = _runs(_keyless("librdkafka", linger_ms=50))
    assert set(runs[:-1]) <= {20, 40, 60}          # a redraw may pick the same partition
    assert _runs(_keyless("librdkafka", linger_ms=50, sticky_linger_ms=25))[0] == 5


def test_librdkafka_sticky_zero_is_a_random_partition_per_record():
    parts = _keyless("librdkafka", linger_ms=50, sticky_linger_ms=0)
    assert np.mean(np.diff(parts) != 0) > 0.8


def test_franz_go_keyless_sticks_for_64_kib():
    per_record = FranzGoSticky.record_bytes(0, 256)
    assert per_record == 263                       # 3 + varint(0) + varint(256) + 256 + 1
    runs = _runs(_keyless("franz-go", linger_ms=1000))
    assert runs[0] == (64 << 10) // per_record     # the record that reaches 64 KiB moves on


def test_java_keyless_sticks_for_a_batch_once_it_is_sent_else_for_two():
    # batch.size 16384, 256 + 70 bytes a record: 16384 bytes are reached by record 51; the
    # switch needs the partition's last batch full or gone (allBatchesFull), else 2 x 16384
    assert _runs(_keyless("java", linger_ms=0))[0] == 51        # sent at once: next record
    assert _runs(_keyless("java", linger_ms=1000))[0] == 101    # still lingering: 2 x
    assert len(set(_keyless("java", linger_ms=0).tolist())) > 3  # then at random


def test_keyed_records_follow_the_client_hash_in_the_simulation():
    for semantics in ("franz-go", "librdkafka", "java"):
        case = KafkaCase(name="p", workload=KafkaWorkload(n_messages=50),
                         producer=KafkaProducerConfig(semantics=semantics, n_partitions=8))
        run = simulate_kafka(case, seed=1)
        expected = [key_partition(semantics, f"k-p-{i}".encode(), 8) for i in range(50)]
        assert run.partition.tolist() == expected
