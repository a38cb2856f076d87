"""Which partition a Kafka client sends a record to: the real clients' key hashes and their
sticky choices for records without a key.

Keyed records (a pure function of the key bytes and the partition count):

* **Java producer and franz-go: murmur2.** kafka-clients 3.9.1
  ``clients/producer/internals/BuiltInPartitioner.partitionForKey`` =
  ``Utils.toPositive(Utils.murmur2(key)) % n`` (``common/utils/Utils.java`` ``murmur2``, seed
  ``0x9747b28c``; ``toPositive`` masks with ``0x7fffffff``). franz-go v1.20.6's default
  ``UniformBytesPartitioner`` hashes keys with ``KafkaHasher(murmur2)``
  (``pkg/kgo/partitioner.go`` ``PartitionByBackup``, ``KafkaHasher``, ``murmur2``: a port of
  the Java function), so the two clients agree on every key. :func:`murmur2` is the Java
  function bit for bit (32-bit wrap-around, arithmetic as Java's ``int``).
* **librdkafka: consistent_random.** ``src/rdkafka_msg.c``
  ``rd_kafka_msg_partitioner_consistent_random`` -> ``rd_kafka_msg_partitioner_consistent``:
  ``rd_crc32(key) % partition_cnt`` (unsigned CRC-32, zlib's polynomial), for a non-empty
  key; an empty key is treated as no key.

Keyless records (sticky, and random: each a small state machine, :class:`Sticky`):

* **librdkafka**: ``rd_kafka_msg_partitioner`` sends a keyless record to
  ``rd_kafka_msg_sticky_partition``: one partition drawn uniformly at random, redrawn on the
  first record after ``sticky.partitioning.linger.ms`` has passed since the last draw
  (``rd_interval``). ``rd_kafka_conf_finalize`` (``src/rdkafka_conf.c``) sets that interval
  to 2 x ``linger.ms`` (capped at 900 s) when the user leaves it unset; 0 makes the topic's
  ``random_partitioner`` flag true: a random partition per record.
* **franz-go**: ``UniformBytesPartitioner(64 KiB, adaptive, keys)``
  (``pkg/kgo/partitioner.go`` ``uniformBytesTopicPartitioner.PartitionByBackup``): stick to a
  partition until 64 KiB of estimated record bytes (value, key, varint framing) went to it,
  then pick the next one at random with weight ``1 / (buffered records + 1)`` per partition
  (adaptive: the least backed-up partitions are likelier).
* **Java producer** (3.3+, KIP-794): ``BuiltInPartitioner`` ``updatePartitionInfo`` and
  ``nextPartition``: stick to a partition until ``batch.size`` bytes were appended to it and
  its last batch is full or sent (``RecordAccumulator.allBatchesFull``), or unconditionally at
  2 x ``batch.size``; the next partition is random, uniform while every partition's queue
  holds as many batches as the others, otherwise weighted by ``longest queue + 1 - own queue``
  (``updatePartitionLoadStats``, adaptive partitioning on by default; the weighting is used
  once every partition has had a batch).

Checked against the real clients' choices for 2,000 keys at 1, 8, 32, 128 and 256
partitions (``validate/partitioners/*.csv``, ``tests/test_kafka_partitioners.py``).
Simplification: partitions are always available (no unavailable-leader skips).
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

_MASK = 0xFFFFFFFF
_M = 0x5BD1E995
_SEED = 0x9747B28C


@functools.lru_cache(maxsize=1 << 16)
def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: the 32-bit MurmurHash2 of ``data``, as a signed Java int.

    >>> murmur2(b"21")          # kafka's UtilsTest vector
    -973932308
    """
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length & ~3
    for i in range(0, n4, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length & 3
    if tail == 3:
        h ^= data[n4 + 2] << 16
    if tail >= 2:
        h ^= data[n4 + 1] << 8
    if tail >= 1:
        h ^= data[n4]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Kafka's ``Utils.toPositive``: the low 31 bits (not the absolute value)."""
    return number & 0x7FFFFFFF


def murmur2_partition(key: bytes, n_partitions: int) -> int:
    """The Java producer's and franz-go's partition of a keyed record.

    >>> murmur2_partition(b"k-p-0", 32)
    2
    """
    return to_positive(murmur2(key)) % n_partitions


def crc32_partition(key: bytes, n_partitions: int) -> int:
    """librdkafka's ``consistent`` (and ``consistent_random``, non-empty key) partition.

    >>> crc32_partition(b"k-p-0", 32)
    17
    """
    return zlib.crc32(key) % n_partitions


KEY_HASH: dict[str, Callable[[bytes, int], int]] = {
    "franz-go": murmur2_partition, "java": murmur2_partition, "librdkafka": crc32_partition}
"""The default keyed partitioner of each client semantics."""


def key_partition(semantics: str, key: bytes, n_partitions: int) -> int | None:
    """The partition of a keyed record, or ``None`` where the client treats it as keyless
    (librdkafka: an empty key)."""
    if semantics == "librdkafka" and not key:
        return None
    return KEY_HASH[semantics](key, n_partitions)


class Backlog(Protocol):
    """What a sticky partitioner may read of the client's buffers."""

    def buffered_records(self, p: int) -> int: ...
    def queued_batches(self, p: int) -> int: ...
    def last_batch_open(self, p: int) -> bool: ...
    def ever_batched(self) -> bool: ...


class Sticky:
    """A client's choice for keyless records: ``choose(now, record_bytes)`` before the
    record is buffered, ``appended(p, record_bytes)`` after (see the module docstring)."""

    def __init__(self, n_partitions: int, rng: np.random.Generator, backlog: Backlog) -> None:
        self.n = n_partitions
        self.rng = rng
        self.backlog = backlog
        self.current = -1

    def choose(self, now: float, record_bytes: int) -> int:
        raise NotImplementedError

    def appended(self, p: int, record_bytes: int) -> None:
        """Called after a keyless record was added to partition ``p``."""

    def _uniform(self) -> int:
        return int(self.rng.integers(self.n))

    def _weighted(self, weights: Sequence[float]) -> int:
        cumulative = np.cumsum(weights)
        pick = self.rng.random() * cumulative[-1]
        return int(min(np.searchsorted(cumulative, pick, side="right"), self.n - 1))


class LibrdkafkaSticky(Sticky):
    """``rd_kafka_msg_sticky_partition``: a uniform draw every ``interval`` (in the
    caller's time unit)."""

    def __init__(self, n_partitions: int, rng: np.random.Generator, backlog: Backlog,
                 interval: float) -> None:
        super().__init__(n_partitions, rng, backlog)
        self.interval = interval
        self.drawn_at = -np.inf

    def choose(self, now: float, record_bytes: int) -> int:
        if self.interval == 0:                    # random_partitioner: a draw per record
            return self._uniform()
        if now - self.drawn_at >= self.interval:  # rd_interval elapsed: redraw
            self.drawn_at = now
            self.current = self._uniform()
        return self.current


class FranzGoSticky(Sticky):
    """``uniformBytesTopicPartitioner``: 64 KiB per partition, then weight 1/(backlog+1)."""

    STICKY_BYTES = 64 << 10

    def __init__(self, n_partitions: int, rng: np.random.Generator, backlog: Backlog) -> None:
        super().__init__(n_partitions, rng, backlog)
        self.bytes = 0

    def choose(self, now: float, record_bytes: int) -> int:
        self.bytes += record_bytes
        if self.bytes >= self.STICKY_BYTES:
            self.bytes = record_bytes
            self.current = -1
        if self.current < 0:
            self.current = self._weighted([1.0 / (self.backlog.buffered_records(p) + 1)
                                           for p in range(self.n)])
        return self.current

    @staticmethod
    def record_bytes(key_bytes: int, value_bytes: int) -> int:
        """``PartitionByBackup``'s estimate: attributes, timestamp and offset deltas, the
        key and value with their varint lengths, an empty header count."""
        return 3 + _varint_len(key_bytes) + key_bytes + _varint_len(value_bytes) \
            + value_bytes + 1


class JavaSticky(Sticky):
    """``BuiltInPartitioner``: ``batch.size`` bytes per partition, then a weighted draw."""

    def __init__(self, n_partitions: int, rng: np.random.Generator, backlog: Backlog,
                 batch_bytes: int) -> None:
        super().__init__(n_partitions, rng, backlog)
        self.batch_bytes = batch_bytes
        self.produced = 0

    def choose(self, now: float, record_bytes: int) -> int:
        if self.current >= 0 and not self.backlog.last_batch_open(self.current):
            self._maybe_switch(0, enable=True)    # RecordAccumulator.append, allBatchesFull
        if self.current < 0:
            self.current = self._next()
        return self.current

    def appended(self, p: int, record_bytes: int) -> None:
        self._maybe_switch(record_bytes, enable=not self.backlog.last_batch_open(p))

    def _maybe_switch(self, appended: int, enable: bool) -> None:
        self.produced += appended
        if (self.produced >= self.batch_bytes and enable) or \
                self.produced >= 2 * self.batch_bytes:
            self.current = self._next()
            self.produced = 0

    def _next(self) -> int:
        if not self.backlog.ever_batched():
            return self._uniform()
        queues = [self.backlog.queued_batches(p) for p in range(self.n)]
        top = max(queues)
        if self.n < 2 or min(queues) == top:
            return self._uniform()
        return self._weighted([top + 1 - q for q in queues])


def _varint_len(value: int) -> int:
    """Bytes of Kafka's zig-zag varint of ``value`` (>= 0)."""
    zigzag, n = value << 1, 1
    while zigzag >= 0x80:
        zigzag >>= 7
        n += 1
    return n
