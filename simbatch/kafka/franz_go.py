"""franz-go's producer (``semantics = "franz-go"``): per-partition max-age lingers and a
broker-wide drain.

Read in twmb/franz-go v1.20.6 (teranode's pin), ``pkg/kgo``:

* **F1 linger, max age.** ``sink.go`` ``recBuf.bufferRecord`` -> ``maybeTriggerDrain`` ->
  ``checkIfShouldDrainOrStartLinger``: drain at once when the linger is 0 and a batch exists,
  or when more than one unsent batch exists (one is full); otherwise ``lockedMaybeLinger``
  starts ``time.AfterFunc(linger, unlingerAndManuallyDrain)`` only if no timer runs, so the
  timer counts from the batch's first record and later records do not extend it. Default
  linger 10 ms (``config.go`` ``defaultCfg``, since v1.20.0).
* **F2 no lingering while Produce is blocked.** ``lockedMaybeLinger`` refuses while
  ``producer.blocked`` (or ``flushing``) is non-zero; ``producer.go`` ``produce`` calls
  ``unlingerDueToMaxRecsBuffered`` (stop every linger, drain) when a record would pass
  ``MaxBufferedRecords`` and then blocks.
* **F3 broker-wide drain.** ``sink.createReq`` walks every ``recBuf`` of the broker's sink and
  takes each one's next unsent batch, lingering or not, stopping its linger; a partition left
  with one unsent batch starts a new linger from now, with more than one it asks for another
  request (``moreToDrain``). One batch per partition per request.
* **F4 chained requests.** ``sink.drain`` loops: it takes an in-flight slot
  (``inflightSem``, blocking while the limit is reached), calls ``produce`` -> ``createReq``,
  and goes round again while there is more to drain or while another drain was asked for
  meanwhile (``workLoop.maybeFinish``, ``atomic_maybe_work.go``). So a drain asked for while
  the slot is taken (a linger firing, a full batch) runs when the response frees it, and that
  request takes everything then buffered, lingering or not.
* **Drains are asynchronous.** ``sink.maybeDrain`` starts ``go s.drain()``: the request is
  built on a new goroutine, one hop after whatever asked for it, while ``Produce`` buffers
  records synchronously on the caller's goroutine; a linger asks from its own ``AfterFunc``
  goroutine (``unlingerAndManuallyDrain``), two hops after its timer. So records produced at
  the instant a linger fires join that drain: measured where it shows, a deadline outer
  batcher of 1 s over linger 1 s (its flush falls on the instant the previous batch's
  lingers fire) has p50 1.18 s with franz-go against 1.52-1.55 s with librdkafka and Java,
  whose broker thread / Sender drains on the thread its timer wakes. The hops take no time
  here (events at one instant run in the order scheduled, ``clock.py``).
* **F5 in flight.** ``MaxProduceRequestsInflightPerBroker``, default 1 with idempotency
  disabled (teranode's setting; with idempotency franz-go allows 1, then 4 after the first
  response).
* **F6/F7** batches cut at ``ProducerBatchMaxBytes`` (default 1,000,012 bytes); keys hashed
  with murmur2, keyless records by the ``UniformBytesPartitioner`` (see ``partitioners``).

Chunks (an outer batcher's flush handed over at one instant): ``_chunk_added`` replays, in
record order, only the records that change a partition's state (its first record of the
chunk, which starts a linger or asks for a drain, and the record that opens its second
unsent batch, which asks for a drain): the same timers and drain hops, scheduled in the same
order, as record after record.

Simplifications: the request size limit (``maxBrokerWriteBytes``, 100 MiB) and the
rotation of the first partition per request are not modelled; no retries.
"""

from __future__ import annotations

import numpy as np

from .client import Client
from .partitioners import FranzGoSticky, Sticky


class FranzGo(Client):
    """The sink of each broker as franz-go drains it (module docstring)."""

    def _setup(self) -> None:
        self._linger_gen = [0] * self.config.n_partitions
        self._lingering = [False] * self.config.n_partitions
        self._pending = [False] * self.config.n_brokers
        self._starting = [False] * self.config.n_brokers

    def _make_sticky(self, rng: np.random.Generator) -> Sticky:
        return FranzGoSticky(self.config.n_partitions, rng, self)

    def _sticky_bytes(self, msg: int) -> int:
        return FranzGoSticky.record_bytes(0, self.value_bytes(msg))   # keyless: no key

    def _record_added(self, p: int, new_batch: bool) -> None:
        unsent = len(self.batches[p])
        if self.linger == 0 or unsent >= 2 or self.blocked:          # F1, F2
            self._stop_linger(p)
            self._maybe_drain(self.broker_of(p), hops=1)
        elif not self._lingering[p]:
            self._start_linger(p)

    chunk_exact = True

    def _chunk_added(self, touched: list[tuple[int, int, int, list[int]]]) -> None:
        events: list[tuple[int, int, int]] = []         # (position, 0 start / 1 drain, p)
        for first, p, before, opened in touched:
            unsent = before + (1 if opened and opened[0] == first else 0)
            if self.linger == 0 or unsent >= 2 or self.blocked:
                events.append((first, 1, p))
                continue
            if not self._lingering[p]:
                events.append((first, 0, p))
            j = max(0, 1 - before)        # the opening after which two batches are unsent
            if j < len(opened):
                events.append((opened[j], 1, p))
        events.sort()
        for _, kind, p in events:
            if kind == 0:
                self._start_linger(p)
            else:
                self._stop_linger(p)
                self._maybe_drain(self.broker_of(p), hops=1)

    def _blocked_now(self) -> None:
        for broker in range(self.config.n_brokers):                     # F2
            for p in self.partitions_with_data(broker):
                self._stop_linger(p)
            if self.nonempty[broker]:
                self._maybe_drain(broker, hops=1)

    def _responded(self, broker: int) -> None:
        if self._pending[broker]:                                        # F4
            self._drain(broker)

    def _start_linger(self, p: int) -> None:
        self._lingering[p] = True
        self._linger_gen[p] += 1
        gen = self._linger_gen[p]
        self.linger_timer(self.linger, lambda: self._linger_fired(p, gen))

    def _stop_linger(self, p: int) -> None:
        self._lingering[p] = False
        self._linger_gen[p] += 1

    def _linger_fired(self, p: int, gen: int) -> None:
        if gen == self._linger_gen[p]:
            self._lingering[p] = False
            self._maybe_drain(self.broker_of(p), hops=2)

    def _maybe_drain(self, broker: int, hops: int) -> None:
        """``sink.maybeDrain``: start the drain goroutine, ``hops`` goroutine hops from now
        (zero-delay events: what else happens at this instant goes first)."""
        if self._starting[broker]:
            return                                   # a drain is on its way: it takes all

        def hop(left: int) -> None:
            if left:
                self.linger_timer(0.0, lambda: hop(left - 1))
                return
            self._starting[broker] = False
            self._drain(broker)

        self._starting[broker] = True
        hop(hops)

    def _drain(self, broker: int) -> None:
        """``sink.drain``: requests while there is more and a slot is free (F3, F4)."""
        while True:
            if not self.can_send(broker):
                self._pending[broker] = True
                return
            self._pending[broker] = False
            taken, more = [], False
            for p in self.partitions_with_data(broker):
                taken.append(self.take(p))
                self._stop_linger(p)
                left = len(self.batches[p])
                if left > 1 or (left == 1 and (self.linger == 0 or self.blocked)):
                    more = True
                elif left == 1:
                    self._start_linger(p)
            if taken:
                self.send(broker, taken)
            if not more:
                return
