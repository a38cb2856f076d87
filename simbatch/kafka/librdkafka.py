"""librdkafka's producer (``semantics = "librdkafka"``, the client confluent-kafka wraps):
each partition lingers and is sent on its own.

Read in confluentinc/librdkafka v2.15.0 (confluent-kafka 2.16.1 bundles 2.16.0; the
multi-partition ProduceRequest is still the open enhancement confluentinc/librdkafka#1700),
``src/``:

* **L1 one partition per ProduceRequest.** ``rdkafka_broker.c``
  ``rd_kafka_broker_produce_toppars`` walks the broker's partitions round-robin and calls
  ``rd_kafka_toppar_producer_serve`` for each, which asks ``rd_kafka_msgq_allow_wakeup_at``
  whether *this* partition's batch is ready and, if so, calls ``rd_kafka_ProduceRequest``
  (``rdkafka_request.c``), built from that partition's queue alone. Other partitions of the
  same broker stay queued until their own batch is ready.
* **L2 linger is a max age.** ``rdkafka_msg.c`` ``rd_kafka_msgq_allow_wakeup_at``: the
  partition wakes at the enqueue time of the first queued message + ``linger.ms``; the
  batch is ready then, or as soon as the queue holds ``batch.num.messages`` messages or
  ``batch.size`` bytes. Later messages do not extend it; after a batch is sent, the next
  one is ready at *its* first message's enqueue time + ``linger.ms``.
* **L4/L5 settings.** ``linger.ms`` (alias ``queue.buffering.max.ms``) default 5 ms;
  ``batch.num.messages`` 10000 and ``batch.size`` 1000000 cap a message set
  (``rdkafka_msgset_writer.c`` ``rd_kafka_msgset_writer_init``, ``_write_msgq``).
* **L6 in flight.** Requests per connection up to ``max.in.flight`` (default 1000000;
  ``rdkafka_conf.c`` ``rd_kafka_conf_finalize`` caps it at 5 with idempotence); a partition
  with more than one ready batch gets one request per batch.
* **L7/L8 partitioner** ``consistent_random``: CRC-32 of the key; keyless records sticky for
  ``sticky.partitioning.linger.ms`` (default 2 x ``linger.ms``), see ``partitioners``.

* **L9 the broker thread wakes on whole milliseconds.** One thread per broker serves its
  partitions (``rdkafka_broker.c`` ``rd_kafka_broker_producer_serve``): each pass sends the
  partitions whose batch is ready and takes the earliest wake-up of the others as its next,
  then sleeps in ``poll()`` (``rd_kafka_broker_ops_io_serve`` ->
  ``rd_kafka_transport_io_serve``) for ``rd_timeout_remains``, which ``rd_timeout_ms``
  rounds *up* to a whole millisecond ("to avoid busy-looping during the last millisecond",
  ``rdtime.h``). It wakes earlier on a socket event (a response) or an op: a produce call
  wakes it when the message is the first in an empty partition queue
  (``rd_kafka_msgq_may_wakeup``'s ``on_first``, ``rdkafka_partition.c``
  ``rd_kafka_toppar_enq_msg``), when it completes a batch, or when its partition's linger
  has already passed. So a linger ends at the thread's first pass at or after it: exactly on
  time when the thread's last pass was a whole number of milliseconds before (a first
  message's own wake-up, then linger.ms of sleep), else up to a millisecond late, less when
  a response comes in between. Measured (librdkafka's own statistics, ``int_latency``: a
  message's time from ``produce()`` to its message set, 2026-11-29, linger 10 ms, 1000
  msg/s over 32 partitions, four runs): median 10.24 ms in every 100 ms window, the
  windows' p99 11.1 ms (median over windows); the model reads 10.23 and 10.95 (10.00 and
  10.00 with every linger ending on time). The calibration prints both for every librdkafka
  configuration and CI judges the rung's (``validate/calibrate_kafka.py``,
  ``CLIENT_FIGURES``).

Simplifications: the thread's own wake-up is not modelled (a pass runs when what wakes it
happens): measured, ``int_latency`` is 0.05-0.06 ms at linger 0 and 10.18 ms at linger
10 ms on a sparse feed (a wake-up on the produce call, then one after the sleep with Linux's
50 us timer slack), where the model reads 0 and 10.00; the round trip fitted on linger-0
runs (``append_ms``) holds one such wake-up, and would have to give it back.
``queue.buffering.backpressure.threshold`` is not modelled; no retries; ``rd_kafka_flush``
is not called.
"""

from __future__ import annotations

import math
from collections import deque
from heapq import heappop, heappush

import numpy as np

from .client import Client
from .clock import ticks
from .partitioners import LibrdkafkaSticky, Sticky

_MS = ticks(1e-3)
"""One millisecond on the engine's clock: ``poll()``'s unit."""


class Librdkafka(Client):
    """Partitions served one request each, when their own batch is ready, by one thread per
    broker that sleeps whole milliseconds (L9)."""

    def _setup(self) -> None:
        n, brokers = self.config.n_partitions, self.config.n_brokers
        self._wake_at = [math.nan] * n       # a partition's linger end, if it waits for one
        self._is_due = [False] * n
        self._due: list[deque[int]] = [deque() for _ in range(brokers)]
        self._lingers: list[list[tuple[float, int]]] = [[] for _ in range(brokers)]
        self._sleep_gen = [0] * brokers

    def _make_sticky(self, rng: np.random.Generator) -> Sticky:
        return LibrdkafkaSticky(self.config.n_partitions, rng, self,
                                ticks(self.config.sticky_interval_s))

    def _record_added(self, p: int, new_batch: bool) -> None:
        # the produce call wakes the thread: the first message of an empty queue, or a batch
        # now ready (complete, or its linger already over)
        first = new_batch and len(self.batches[p]) == 1
        if self._check(p) or first:
            self._pass(self.broker_of(p))

    def _responded(self, broker: int) -> None:
        self._pass(broker)

    def _check(self, p: int) -> bool:
        """``rd_kafka_msgq_allow_wakeup_at``: whether ``p``'s batch is ready now (it joins
        its broker's due partitions); else its linger's end goes on the broker's list."""
        batches = self.batches[p]
        if not batches or self._is_due[p]:
            return False
        first = batches[0]
        if len(batches) >= 2 or first.n >= self.count_cap or \
                first.bytes >= self.byte_cap or self.expired(first):
            self._is_due[p] = True
            self._wake_at[p] = math.nan
            self._due[self.broker_of(p)].append(p)
            return True
        due = first.t_first + self.linger
        if self._wake_at[p] != due:          # nan (none set) or another due time
            self._wake_at[p] = due
            heappush(self._lingers[self.broker_of(p)], (due, p))
        return False

    def _pass(self, broker: int) -> None:
        """One pass of the broker thread: the lingers that are over join the due partitions,
        one request each goes while slots last, then the thread sleeps until the earliest
        linger left, rounded up to a whole millisecond (L9)."""
        now = self.env.now
        lingers = self._lingers[broker]
        while lingers and lingers[0][0] <= now:
            due, p = heappop(lingers)
            if self._wake_at[p] == due:
                self._wake_at[p] = math.nan
                self._check(p)
        due_ps = self._due[broker]
        while due_ps and self.can_send(broker):
            p = due_ps.popleft()
            self._is_due[p] = False
            if self.batches[p]:
                self.send(broker, [self.take(p)])
                self._check(p)
        while lingers and self._wake_at[lingers[0][1]] != lingers[0][0]:
            heappop(lingers)                 # superseded
        if lingers:
            self._sleep_gen[broker] += 1
            gen = self._sleep_gen[broker]
            wait = math.ceil((lingers[0][0] - now) / _MS) * _MS
            self.linger_timer(wait, lambda: self._woken(broker, gen))

    def _woken(self, broker: int, gen: int) -> None:
        if gen == self._sleep_gen[broker]:   # not since woken by a response or a produce
            self._pass(broker)
