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
  With the broker's young collections on (``gc.py``), the broker reads a request when it
  arrives (using eden) and the round trip takes its time in unpaused time: the head of the
  queue is held back by any pause since it was sent.
  With the broker's CPU on (``broker.py``), the broker reads a connection's next request
  only when it is done with the one before (muted), so requests wait for one another there.
* **Chunks.** :meth:`Client.produce_chunk` hands many records to the client at one instant
  (an outer batcher's flush): they are buffered as per-partition slices and the semantics'
  hooks see, in record order, every record that changes their state (``_chunk_added``; the
  default replays :meth:`Client._add` record by record, which is exact and slow). A chunk
  stops at the record that would block Produce; that record goes the one-record way.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Sequence

import numpy as np
import simpy

from .broker import Broker
from .clock import S_PER_TICK, ticks
from .gc import PAUSE_SLACK, Collector
from .partitioners import Sticky
from .producer import KafkaProducerConfig

_EMPTY = np.zeros(0, np.int64)


class Batch:
    """The records of one partition batch (``parts``: lists of message ids, or arrays of
    them from a chunk), how many, their bytes, and when the first arrived."""

    __slots__ = ("bytes", "n", "parts", "t_first")

    def __init__(self, t_first: float) -> None:
        self.parts: list = []
        self.n = 0
        self.bytes = 0
        self.t_first = t_first

    def add(self, msg: int, size: int) -> None:
        if self.parts and type(self.parts[-1]) is list:
            self.parts[-1].append(msg)
        else:
            self.parts.append([msg])
        self.n += 1
        self.bytes += size

    def add_many(self, msgs: np.ndarray, size: int) -> None:
        self.parts.append(msgs)
        self.n += msgs.size
        self.bytes += size * msgs.size

    @property
    def records(self) -> list[int]:
        """The message ids, in order."""
        return [int(m) for part in self.parts for m in part]


def _ids(batches: list[Batch]) -> np.ndarray:
    parts = [part for b in batches for part in b.parts]
    if len(parts) == 1:
        return np.asarray(parts[0], dtype=np.int64)
    return np.concatenate([np.asarray(part, dtype=np.int64) for part in parts])


class Connection:
    """One client-broker connection: requests answered in send order (module docstring);
    with a broker CPU model, the broker serves them one at a time."""

    def __init__(self, env: simpy.Environment, on_response: Callable[[int], None],
                 broker: Broker | None = None, reference: float = 0.0,
                 gc: Collector | None = None) -> None:
        self.env = env
        self.on_response = on_response
        # (request, answer time, the unpaused clock at which it is due: see _answer_at)
        self.queue: deque[tuple[int, float, float]] = deque()
        self.last_answer = 0.0
        self.broker = broker
        self.reference = reference     # clock units: the fitted round trip's own service
        self.waiting: deque[tuple[int, float, int, float]] = deque()
        self.serving = False
        self.gc = gc

    @property
    def in_flight(self) -> int:
        return len(self.queue) + len(self.waiting) + self.serving

    def send(self, request: int, latency: float, records: int = 1,
             n_bytes: float = 0.0) -> None:
        if self.gc is not None:
            self.gc.request_read()
        if self.broker is None:
            self._answer_at(request, self.env.now + latency)
            return
        self.waiting.append((request, latency, records, n_bytes))
        if not self.serving:
            self._serve_next()

    def _serve_next(self) -> None:
        request, latency, records, n_bytes = self.waiting.popleft()
        self.serving = True
        assert self.broker is not None

        def done() -> None:
            self.serving = False
            self._answer_at(request, self.env.now + max(0.0, latency - self.reference))
            if self.waiting:
                self._serve_next()

        self.broker.submit(records, n_bytes, done)

    def _answer_at(self, request: int, answer: float) -> None:
        # with pauses: the unpaused clock at which it is due (the time from now counts only
        # while the broker runs); the connection's order holds it behind the one before
        due_u = answer - self.gc.paused_by(self.env.now) if self.gc is not None else 0.0
        answer = max(answer, self.last_answer)
        self.last_answer = answer
        self.queue.append((request, answer, due_u))
        if len(self.queue) == 1:
            self._arm()

    def _arm(self) -> None:
        answer = self.queue[0][1]
        self.env.timeout(max(0.0, answer - self.env.now)).callbacks.append(self._answer)

    def _answer(self, _event: simpy.Event) -> None:
        if self.gc is not None:       # held back by the pauses since it was sent
            request, answer, due_u = self.queue[0]
            due = self.gc.due(due_u)
            if due > answer + PAUSE_SLACK:
                # one step to the time the pauses so far put it at, whatever they are (a
                # step of the pause's overlap at a time, as until 2026-11-27, crawled
                # through a pause still under way; an overlap of a rounding error's size,
                # by 1e-10 us per event: a hypothesis example hung there)
                self.queue[0] = (request, due, due_u)
                self.last_answer = max(self.last_answer, due)
                self._arm()
                return
        request, _, _ = self.queue.popleft()
        if self.queue:
            self._arm()
        self.on_response(request)


class Client:
    """A Kafka producer client; ``produce(msg)`` returns ``None``, or an event to wait on
    while Produce blocks. ``on_append(records, time_s, request)`` is called when a request's
    response arrives (its records are appended and visible)."""

    def __init__(self, env: simpy.Environment, config: KafkaProducerConfig, *,
                 keyed_partition: Sequence[int] | np.ndarray, value_bytes: Callable[[int], int],
                 on_append, append_rng: np.random.Generator,
                 partition_rng: np.random.Generator, partition_out: array | np.ndarray,
                 produce_out: array | np.ndarray | None = None,
                 brokers: Sequence[Broker] | None = None, record_bytes: int = 0,
                 gcs: Sequence[Collector] | None = None) -> None:
        self.env = env
        self.config = config
        self.keyed_partition = keyed_partition
        self.value_bytes = value_bytes
        self.on_append = on_append
        self.partition_out = partition_out
        self.produce_out = produce_out
        n, n_brokers = config.n_partitions, config.n_brokers
        self.batches: list[deque[Batch]] = [deque() for _ in range(n)]
        self.buffered = 0
        self.buffered_p = [0] * n
        self.ever_batched_p: set[int] = set()
        self.nonempty: list[set[int]] = [set() for _ in range(n_brokers)]
        self.blocked: deque[tuple[int, simpy.Event]] = deque()
        self.linger = ticks(config.linger_s)      # clock units (us), as every time here
        self.byte_cap = config.batch_bytes
        self.count_cap = config.batch_count_cap
        self.inflight_cap = config.inflight_cap
        reference = 0.0
        if brokers:      # the fitted round trip's own service: one record at an idle, cold broker
            reference = ticks(brokers[0].config.idle_produce_s(1, record_bytes))
        self.conns = [Connection(env, self._response, brokers[b] if brokers else None,
                                 reference, gcs[b] if gcs else None)
                      for b in range(n_brokers)]
        self._request_records: list[np.ndarray] = []
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
        if self.produce_out is not None:
            self.produce_out[msg] = self.env.now
        batches = self.batches[p]
        new_batch = (not batches or batches[-1].bytes + size > self.byte_cap
                     or batches[-1].n >= self.count_cap)
        if new_batch:
            batches.append(Batch(self.env.now))
            self.ever_batched_p.add(p)
            self.nonempty[self.broker_of(p)].add(p)
        batches[-1].add(msg, size)
        self.buffered += 1
        self.buffered_p[p] += 1
        if keyless:
            self.sticky.appended(p, size)
        self._record_added(p, new_batch)

    # ------------------------------------------------------------------ chunks
    def produce_chunk(self, msgs: np.ndarray) -> tuple[int, simpy.Event | None]:
        """Produce ``msgs`` (message ids, in order) at this instant: returns how many went
        in before one blocked, and the event the blocked one waits on (``None``: all in)."""
        room = self.config.max_buffered_records - self.buffered
        if self.blocked:
            room = 0
        take = max(0, min(room, msgs.size))
        if take:
            self._chunk(msgs[:take])
        if take == msgs.size:
            return take, None
        event = self.produce(int(msgs[take]))
        if event is None:              # room freed meanwhile (cannot happen at one instant)
            return take + 1, None
        return take, event

    def _chunk(self, msgs: np.ndarray) -> None:
        """Buffer ``msgs`` (all fit): keyless or non-uniform records one by one, keyed
        records as per-partition slices (``_chunk_added`` replays the hooks)."""
        parts = np.asarray(self.keyed_partition)[msgs]     # a no-op view for an array
        if (parts < 0).any() or not self.chunk_exact:
            for msg in msgs:
                self._add(int(msg))
            return
        now = self.env.now
        self.partition_out[msgs] = parts
        if self.produce_out is not None:
            self.produce_out[msgs] = now
        size = self.value_bytes(int(msgs[0])) + self.config.record_overhead_bytes
        order = np.argsort(parts, kind="stable")
        sorted_parts = parts[order]
        starts = np.flatnonzero(np.r_[True, sorted_parts[1:] != sorted_parts[:-1]])
        ends = np.r_[starts[1:], sorted_parts.size]
        per_batch = max(1, min(self.count_cap, self.byte_cap // size if size else 2**62))
        touched = []
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            p = int(sorted_parts[a])
            ids = msgs[order[a:b]]
            positions = order[a:b]            # chunk positions of p's records, in order
            batches = self.batches[p]
            before = len(batches)
            first = 0
            if batches:
                last = batches[-1]
                first = max(0, min(self.count_cap - last.n, (self.byte_cap - last.bytes)
                                   // size if size else b - a))
                first = min(first, b - a)
                if first:
                    last.add_many(ids[:first], size)
            opened = []
            for k in range(first, b - a, per_batch):
                batch = Batch(now)
                batch.add_many(ids[k:k + per_batch], size)
                batches.append(batch)
                opened.append(int(positions[k]))
            if opened:
                self.ever_batched_p.add(p)
                self.nonempty[self.broker_of(p)].add(p)
            self.buffered_p[p] += b - a
            touched.append((int(positions[0]), p, before, opened))
        self.buffered += msgs.size
        self._chunk_added(touched)

    chunk_exact = False
    """Whether ``_chunk_added`` is this semantics' own (exact) chunk rule; otherwise
    records are added one by one."""

    def _chunk_added(self, touched: list[tuple[int, int, int, list[int]]]) -> None:
        """The hooks of a chunk: per partition (its first record's position in the chunk,
        the partition, its unsent batches before the chunk, the positions of the records
        that opened new batches)."""
        raise NotImplementedError

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
        records = _ids(batches)
        request = self.requests
        self.requests += 1
        self._request_records.append(records)
        self.request_broker.append(broker)
        self.request_records.append(records.size)
        self.request_sent.append(self.env.now * S_PER_TICK)
        self.request_acked.append(float("nan"))
        latency = self._append_s
        if self._ratios:
            latency *= self._ratios[int(self._append_rng.integers(len(self._ratios)))]
        self.conns[broker].send(request, ticks(latency), records.size,
                                sum(b.bytes for b in batches))

    def _response(self, request: int) -> None:
        records = self._request_records[request]
        self._request_records[request] = _EMPTY
        self.request_acked[request] = self.env.now * S_PER_TICK
        self.buffered -= records.size
        if records.size < 64:
            for msg in records.tolist():
                self.buffered_p[self.partition_out[msg]] -= 1
        else:
            parts = np.asarray(self.partition_out)[records] if not isinstance(
                self.partition_out, np.ndarray) else self.partition_out[records]
            counts = np.bincount(parts, minlength=len(self.buffered_p))
            for p in np.flatnonzero(counts).tolist():
                self.buffered_p[p] -= int(counts[p])
        self.on_append(records, self.env.now, request)
        while self.blocked and self.buffered < self.config.max_buffered_records:
            msg, event = self.blocked.popleft()
            self._add(msg)
            event.succeed()
        self._responded(self.request_broker[request])

    def linger_timer(self, delay: float, callback: Callable[[], None]) -> None:
        self.env.timeout(max(0.0, delay)).callbacks.append(lambda _e: callback())
