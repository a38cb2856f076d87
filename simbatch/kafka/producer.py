"""A Kafka producer client's batching, partitioning and requests, in two semantics.

``semantics = "franz-go"`` (twmb/franz-go v1.20.6, pkg/kgo config.go / sink.go /
producer.go):

* records are partitioned by key hash (keyless: round-robin, standing in for the sticky
  UniformBytesPartitioner);
* a partition's buffer closes a batch when the next record would exceed ``batch_max_bytes``;
* ``ProducerLinger`` is per partition with **max-age** semantics: a timer starts at the first
  record of a partition's unsent batch and is not extended by later records;
* no linger (drain at once) when linger = 0, when a partition has >= 2 unsent batches, or
  while any Produce is blocked on ``max_buffered_records`` (which also cancels every linger);
* a drain on a broker's sink builds one produce request that takes a batch from **every**
  partition of that broker with buffered data, lingering or not, and resets their lingers;
* ``max_inflight_per_broker`` produce requests in flight per broker (default 1, as with
  idempotency disabled); a drain asked for while the limit is reached runs when a response
  arrives;
* ``max_buffered_records`` counts records from Produce until their ack; Produce blocks at it.

``semantics = "librdkafka"`` (confluent-kafka; librdkafka INTRODUCTION.md: linger.ms is "how
long to wait for batch.num.messages or batch.size to fill up in the local per-partition
queue"; CONFIGURATION.md defaults batch.num.messages 10000, batch.size 1000000,
max.in.flight 1000000): each partition's batch is sent on its own when its first message is
``linger_ms`` old or when it reaches ``batch_num_messages`` or ``batch_max_bytes``; no
sink-wide drain; requests in flight per broker up to ``max_inflight_per_broker``.
Keyed messages use a CRC32 hash of the key (librdkafka's ``consistent_random``; franz-go uses
murmur2, for which CRC32 stands in: both spread keys uniformly).

A request is acknowledged ``append_ms`` after it is sent (a latency: client threads, loopback,
the broker's network and I/O threads; requests in flight overlap). The broker answers a
connection's requests in order, so a request never completes before an earlier one to the
same broker. An acknowledged record is visible to the consumer.
"""

from __future__ import annotations

import zlib
from array import array
from collections import deque
from typing import Annotated, Literal

import simpy

from ..core.config import Float, Int, NonNeg, PosInt, at, config

SEMANTICS = ("franz-go", "librdkafka")


@config
class KafkaProducerConfig:
    """The client and the topic (``[producer]``).

    Parameters
    ----------
    semantics : {"franz-go", "librdkafka"}
    linger_ms : float
        franz-go ``ProducerLinger`` / librdkafka ``linger.ms``.
    n_partitions, n_brokers : int
        Partition p lives on broker ``p % n_brokers``.
    batch_max_bytes : int
        Per-partition batch byte cap (franz-go ProducerBatchMaxBytes, librdkafka batch.size).
    batch_num_messages : int
        librdkafka ``batch.num.messages`` (franz-go has no count cap).
    max_buffered_records : int
        franz-go ``MaxBufferedRecords``: Produce blocks at this many unacked records.
    max_inflight_per_broker : int
        Produce requests in flight per broker.
    append_ms : float
        Broker time to append one produce request (loopback round trip included), median.
    append_ratios : tuple of float
        Measured append time / median, resampled per request (empty = constant).
    record_overhead_bytes : int
        Bytes a record adds to a batch beyond its value (key, headers, framing).
    """

    semantics: Literal["franz-go", "librdkafka"] = "franz-go"
    linger_ms: NonNeg = 10.0
    n_partitions: Annotated[PosInt, at.Le(1_000_000)] = 1
    n_brokers: Annotated[PosInt, at.Le(100_000)] = 1
    batch_max_bytes: PosInt = 1_048_576
    batch_num_messages: PosInt = 10_000
    max_buffered_records: PosInt = 10_000
    max_inflight_per_broker: PosInt = 1
    append_ms: NonNeg = 1.0
    append_ratios: tuple[Annotated[Float, at.Gt(0)], ...] = ()
    record_overhead_bytes: Annotated[Int, at.Ge(0)] = 70


def partition_of(key: str | None, index: int, n_partitions: int) -> int:
    """Key hash over the partitions; keyless records go round-robin."""
    if key is None:
        return index % n_partitions
    return zlib.crc32(key.encode()) % n_partitions


class KafkaProducer:
    """The client. ``produce(msg)`` returns ``None``, or an event while Produce blocks.

    ``on_append(records, time, request)`` is called when the broker has appended a request.
    """

    def __init__(self, env: simpy.Environment, config: KafkaProducerConfig,
                 partition_of_msg, size_of_msg, on_append, rng=None) -> None:
        self.env = env
        self.config = config
        self._partition_of = partition_of_msg
        self._size_of = size_of_msg
        self._on_append = on_append
        n = config.n_partitions
        self._batches: list[deque[list[int]]] = [deque() for _ in range(n)]
        self._batch_bytes = [0] * n
        self._linger_gen = [0] * n
        self._lingering = [False] * n
        self._inflight = [0] * config.n_brokers
        self._drain_pending = [False] * config.n_brokers
        self._broker_free_at = [0.0] * config.n_brokers
        self._due: list[set[int]] = [set() for _ in range(config.n_brokers)]
        self._buffered = 0
        self._blocked: deque[tuple[int, simpy.Event]] = deque()
        self._linger_s = config.linger_ms / 1e3
        self._append_s = config.append_ms / 1e3
        self.requests = 0
        # one entry per produce request: its broker, records, and when it was sent and acked
        self.request_broker = array("q")
        self.request_records = array("q")
        self.request_sent = array("d")
        self.request_acked = array("d")
        self._rng = rng
        self._ratios = list(config.append_ratios)

    # ------------------------------------------------------------------ Produce
    def produce(self, msg: int) -> simpy.Event | None:
        if self._buffered >= self.config.max_buffered_records:
            event = self.env.event()
            self._blocked.append((msg, event))
            if self.config.semantics == "franz-go":
                for b in range(self.config.n_brokers):  # a blocked Produce cancels lingers
                    self._drain(b)
            return event
        self._add(msg)
        return None

    def _add(self, msg: int) -> None:
        cfg = self.config
        p = self._partition_of(msg)
        size = self._size_of(msg) + cfg.record_overhead_bytes
        batches = self._batches[p]
        full = (not batches or self._batch_bytes[p] + size > cfg.batch_max_bytes
                or len(batches[-1]) >= cfg.batch_num_messages)
        if full:
            batches.append([])
            self._batch_bytes[p] = 0
        batches[-1].append(msg)
        self._batch_bytes[p] += size
        self._buffered += 1
        broker = p % cfg.n_brokers
        if cfg.semantics == "franz-go":
            if self._linger_s == 0 or len(batches) >= 2 or self._blocked:
                self._drain(broker)
            elif not self._lingering[p]:
                self._start_linger(p)
        else:
            if self._linger_s == 0 or len(batches) >= 2 or \
                    len(batches[0]) >= cfg.batch_num_messages:
                self._partition_due(p)
            elif not self._lingering[p]:
                self._start_linger(p)

    # ------------------------------------------------------------------ lingers
    def _start_linger(self, p: int) -> None:
        self._lingering[p] = True
        self._linger_gen[p] += 1
        gen = self._linger_gen[p]
        self.env.timeout(self._linger_s).callbacks.append(lambda _e: self._linger_fired(p, gen))

    def _linger_fired(self, p: int, gen: int) -> None:
        if gen != self._linger_gen[p]:
            return
        self._lingering[p] = False
        if self.config.semantics == "franz-go":
            self._drain(p % self.config.n_brokers)
        else:
            self._partition_due(p)

    def _stop_linger(self, p: int) -> None:
        self._lingering[p] = False
        self._linger_gen[p] += 1

    # ------------------------------------------------------------------ requests
    def _drain(self, broker: int) -> None:
        """franz-go: one request with a batch from every partition of ``broker`` with data."""
        if self._inflight[broker] >= self.config.max_inflight_per_broker:
            self._drain_pending[broker] = True
            return
        self._drain_pending[broker] = False
        records: list[int] = []
        for p in range(broker, self.config.n_partitions, self.config.n_brokers):
            batches = self._batches[p]
            if batches:
                records.extend(batches.popleft())
                self._stop_linger(p)
                if batches:
                    self._drain_pending[broker] = True
                    if len(batches) == 1:
                        self._batch_bytes[p] = sum(self._size_of(m) for m in batches[0]) \
                            + self.config.record_overhead_bytes * len(batches[0])
        if records:
            self._send(broker, records)

    def _partition_due(self, p: int) -> None:
        """librdkafka: partition ``p``'s first batch is ready to go on its own request."""
        broker = p % self.config.n_brokers
        self._stop_linger(p)
        self._due[broker].add(p)
        self._send_due(broker)

    def _send_due(self, broker: int) -> None:
        due = self._due[broker]
        while due and self._inflight[broker] < self.config.max_inflight_per_broker:
            p = min(due)
            due.discard(p)
            batches = self._batches[p]
            if not batches:
                continue
            records = batches.popleft()
            if batches:
                due.add(p)
            self._send(broker, records)

    def _send(self, broker: int, records: list[int]) -> None:
        request = self.requests
        self.requests += 1
        self.request_broker.append(broker)
        self.request_records.append(len(records))
        self.request_sent.append(self.env.now)
        self.request_acked.append(float("nan"))
        self._inflight[broker] += 1
        append = self._append_s
        if self._ratios:
            append *= self._ratios[int(self._rng.integers(len(self._ratios)))]
        done_at = max(self.env.now + append, self._broker_free_at[broker])  # in order
        self._broker_free_at[broker] = done_at
        self.env.timeout(done_at - self.env.now).callbacks.append(
            lambda _e: self._acked(broker, records, request))

    def _acked(self, broker: int, records: list[int], request: int) -> None:
        self._inflight[broker] -= 1
        self._buffered -= len(records)
        self.request_acked[request] = self.env.now
        self._on_append(records, self.env.now, request)
        while self._blocked and self._buffered < self.config.max_buffered_records:
            msg, event = self._blocked.popleft()
            self._add(msg)
            event.succeed()
        if self.config.semantics == "franz-go":
            if self._drain_pending[broker]:
                self._drain(broker)
        else:
            self._send_due(broker)

    def flush_all(self) -> None:
        """Send everything now (a client Flush at shutdown)."""
        for p in range(self.config.n_partitions):
            if self._batches[p]:
                if self.config.semantics == "franz-go":
                    self._drain(p % self.config.n_brokers)
                else:
                    self._partition_due(p)
