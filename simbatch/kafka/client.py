"""What every Kafka client model shares: per-partition batches, the buffered-record gate on
Produce, and one connection per broker that answers its requests in order.

The client semantics (``franz_go``, ``librdkafka``, ``java_producer``) subclass
:class:`Client` and decide only *when* batches leave and *which* go together
(``_record_added``, ``_blocked_now``, ``_responded``).

* **Batches.** A partition's records collect in batches; a record that would take the last
  batch past the byte cap (or, for librdkafka, its count cap) opens a new one (franz-go
  ``recBatch.tryBuffer``; Java ``RecordAccumulator.tryAppend``; librdkafka
  ``rd_kafka_msgset_writer_write_msgq`` cuts a message set at ``batch.size`` /
  ``batch.num.messages``). A batch remembers when its first record arrived: every client's
  linger is a max age counted from there.
* **Produce blocks** while ``max_buffered_records`` records are between Produce and their
  acknowledgement (franz-go ``MaxBufferedRecords``; the Java producer's ``buffer.memory``
  and librdkafka's ``queue.buffering.max.messages`` play the same part, counted here in
  records); blocked records enter in order as acknowledgements free room.
* **Connections keep order.** The broker reads one request of a connection, mutes the
  connection until the response is sent, then reads the next (Kafka ``SocketServer.scala``
  ``Processor.processCompletedReceives`` mutes, ``processNewResponses`` unmutes): a
  connection's requests are answered one after another, in send order, however many the
  client keeps in flight. A request is answered ``append_ms`` x a resampled ratio after it is
  sent (the broker's append with the loopback round trip and the clients' threads, measured),
  and never before the request sent before it on the same connection; responses are
  delivered strictly in that order (a FIFO of requests, not one timer each, so equal times
  cannot swap them). Times are the engine's clock's whole microseconds (``clock.py``).
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Sequence

import numpy as np
import simpy

from .clock import S_PER_TICK, ticks
from .partitioners import Sticky
from .producer import KafkaProducerConfig


class Batch:
    """The records of one partition batch, their bytes, and when the first arrived."""

    __slots__ = ("bytes", "records", "t_first")

    def __init__(self, t_first: float) -> None:
        self.records: list[int] = []
        self.bytes = 0
        self.t_first = t_first


class Connection:
    """One client-broker connection: requests answered in send order (module docstring)."""

    def __init__(self, env: simpy.Environment, on_response: Callable[[int], None]) -> None:
        self.env = env
        self.on_response = on_response
        self.queue: deque[tuple[int, float]] = deque()     # (request, answer time)
        self.last_answer = 0.0

    @property
    def in_flight(self) -> int:
        return len(self.queue)

    def send(self, request: int, latency: float) -> None:
        answer = max(self.env.now + latency, self.last_answer)
        self.last_answer = answer
        self.queue.append((request, answer))
        if len(self.queue) == 1:
            self._arm()

    def _arm(self) -> None:
        answer = self.queue[0][1]
        self.env.timeout(max(0.0, answer - self.env.now)).callbacks.append(self._answer)

    def _answer(self, _event: simpy.Event) -> None:
        request, _ = self.queue.popleft()
        if self.queue:
            self._arm()
        self.on_response(request)


class Client:
    """A Kafka producer client; ``produce(msg)`` returns ``None``, or an event to wait on
    while Produce blocks. ``on_append(records, time_s, request)`` is called when a request's
    response arrives (its records are appended and visible)."""

    def __init__(self, env: simpy.Environment, config: KafkaProducerConfig, *,
                 keyed_partition: Sequence[int], value_bytes: Callable[[int], int],
                 on_append, append_rng: np.random.Generator,
                 partition_rng: np.random.Generator, partition_out: array) -> None:
        self.env = env
        self.config = config
        self.keyed_partition = keyed_partition
        self.value_bytes = value_bytes
        self.on_append = on_append
        self.partition_out = partition_out
        n, brokers = config.n_partitions, config.n_brokers
        self.batches: list[deque[Batch]] = [deque() for _ in range(n)]
        self.buffered = 0
        self.buffered_p = [0] * n
        self.ever_batched_p: set[int] = set()
        self.nonempty: list[set[int]] = [set() for _ in range(brokers)]
        self.blocked: deque[tuple[int, simpy.Event]] = deque()
        self.linger = ticks(config.linger_s)      # clock units (us), as every time here
        self.byte_cap = config.batch_bytes
        self.count_cap = config.batch_count_cap
        self.inflight_cap = config.inflight_cap
        self.conns = [Connection(env, self._response) for _ in range(brokers)]
        self._request_records: list[list[int]] = []
        self._append_s = config.append_ms / 1e3
        self._ratios = list(config.append_ratios)
        self._append_rng = append_rng
        self._setup()
        self.sticky = self._make_sticky(partition_rng)
        self.requests = 0
        # one entry per produce request: its broker, records, and when sent and answered
        self.request_broker = array("q")
        self.request_records = array("q")
        self.request_sent = array("d")
        self.request_acked = array("d")

    # ------------------------------------------------------------------ hooks
    def _setup(self) -> None:
        """The semantics' own state."""

    def _make_sticky(self, rng: np.random.Generator) -> Sticky:
        raise NotImplementedError

    def _record_added(self, p: int, new_batch: bool) -> None:
        raise NotImplementedError

    def _blocked_now(self) -> None:
        """A Produce call just blocked."""

    def _responded(self, broker: int) -> None:
        """A response of ``broker`` arrived (its slot is free)."""

    # ------------------------------------------------------------------ Produce
    def produce(self, msg: int) -> simpy.Event | None:
        if self.buffered >= self.config.max_buffered_records:
            event = self.env.event()
            self.blocked.append((msg, event))
            self._blocked_now()
            return event
        self._add(msg)
        return None

    def _add(self, msg: int) -> None:
        size = self.value_bytes(msg) + self.config.record_overhead_bytes
        p = self.keyed_partition[msg]
        keyless = p < 0
        if keyless:
            p = self.sticky.choose(self.env.now, self._sticky_bytes(msg))
        self.partition_out[msg] = p
        batches = self.batches[p]
        new_batch = (not batches or batches[-1].bytes + size > self.byte_cap
                     or len(batches[-1].records) >= self.count_cap)
        if new_batch:
            batches.append(Batch(self.env.now))
            self.ever_batched_p.add(p)
            self.nonempty[self.broker_of(p)].add(p)
        batch = batches[-1]
        batch.records.append(msg)
        batch.bytes += size
        self.buffered += 1
        self.buffered_p[p] += 1
        if keyless:
            self.sticky.appended(p, size)
        self._record_added(p, new_batch)

    def _sticky_bytes(self, msg: int) -> int:
        return self.value_bytes(msg) + self.config.record_overhead_bytes

    # ------------------------------------------------------------------ state, for hooks
    def broker_of(self, p: int) -> int:
        return p % self.config.n_brokers

    def partitions_with_data(self, broker: int) -> list[int]:
        return sorted(self.nonempty[broker])

    def can_send(self, broker: int) -> bool:
        return self.conns[broker].in_flight < self.inflight_cap

    def expired(self, batch: Batch) -> bool:
        return self.env.now >= batch.t_first + self.linger

    def take(self, p: int) -> Batch:
        """Remove partition ``p``'s first batch (it goes into a request)."""
        batches = self.batches[p]
        batch = batches.popleft()
        if not batches:
            self.nonempty[self.broker_of(p)].discard(p)
        return batch

    # Backlog protocol (what the sticky partitioners read)
    def buffered_records(self, p: int) -> int:
        return self.buffered_p[p]

    def queued_batches(self, p: int) -> int:
        return len(self.batches[p])

    def last_batch_open(self, p: int) -> bool:
        batches = self.batches[p]
        return bool(batches) and batches[-1].bytes < self.byte_cap

    def ever_batched(self) -> bool:
        return len(self.ever_batched_p) == self.config.n_partitions

    # ------------------------------------------------------------------ requests
    def send(self, broker: int, batches: list[Batch]) -> None:
        records = [m for b in batches for m in b.records]
        request = self.requests
        self.requests += 1
        self._request_records.append(records)
        self.request_broker.append(broker)
        self.request_records.append(len(records))
        self.request_sent.append(self.env.now * S_PER_TICK)
        self.request_acked.append(float("nan"))
        latency = self._append_s
        if self._ratios:
            latency *= self._ratios[int(self._append_rng.integers(len(self._ratios)))]
        self.conns[broker].send(request, ticks(latency))

    def _response(self, request: int) -> None:
        records = self._request_records[request]
        self._request_records[request] = []
        self.request_acked[request] = self.env.now * S_PER_TICK
        self.buffered -= len(records)
        for msg in records:
            self.buffered_p[self.partition_out[msg]] -= 1
        self.on_append(records, self.env.now, request)
        while self.blocked and self.buffered < self.config.max_buffered_records:
            msg, event = self.blocked.popleft()
            self._add(msg)
            event.succeed()
        self._responded(self.request_broker[request])

    def linger_timer(self, delay: float, callback: Callable[[], None]) -> None:
        self.env.timeout(max(0.0, delay)).callbacks.append(lambda _e: callback())
