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

Simplifications: the broker thread's wake-up latency and
``queue.buffering.backpressure.threshold`` are not modelled (measured: each linger ends
within ~1 ms of its due time); no retries; ``rd_kafka_flush`` is not called.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from .client import Client
from .clock import ticks
from .partitioners import LibrdkafkaSticky, Sticky


class Librdkafka(Client):
    """Partitions served one request each, when their own batch is ready."""

    def _setup(self) -> None:
        n = self.config.n_partitions
        self._wake_gen = [0] * n
        self._wake_at = [float("nan")] * n
        self._is_due = [False] * n
        self._due: list[deque[int]] = [deque() for _ in range(self.config.n_brokers)]

    def _make_sticky(self, rng: np.random.Generator) -> Sticky:
        return LibrdkafkaSticky(self.config.n_partitions, rng, self,
                                ticks(self.config.sticky_interval_s))

    def _record_added(self, p: int, new_batch: bool) -> None:
        self._check(p)

    def _responded(self, broker: int) -> None:
        self._serve(broker)

    def _check(self, p: int, serve: bool = True) -> None:
        """``rd_kafka_msgq_allow_wakeup_at``: due now, or a wake-up at the batch's age."""
        batches = self.batches[p]
        if not batches or self._is_due[p]:
            return
        first = batches[0]
        if len(batches) >= 2 or first.n >= self.count_cap or \
                first.bytes >= self.byte_cap or self.expired(first):
            self._is_due[p] = True
            self._wake_gen[p] += 1
            self._wake_at[p] = float("nan")
            broker = self.broker_of(p)
            self._due[broker].append(p)
            if serve:
                self._serve(broker)
            return
        due = first.t_first + self.linger
        if self._wake_at[p] != due:          # nan (none set) or another due time
            self._wake_at[p] = due
            self._wake_gen[p] += 1
            gen = self._wake_gen[p]
            self.linger_timer(due - self.env.now, lambda: self._woken(p, gen))

    def _woken(self, p: int, gen: int) -> None:
        if gen == self._wake_gen[p]:
            self._wake_at[p] = float("nan")
            self._check(p)

    def _serve(self, broker: int) -> None:
        """The broker thread: one request per ready partition batch, while slots last."""
        due = self._due[broker]
        while due and self.can_send(broker):
            p = due.popleft()
            self._is_due[p] = False
            if self.batches[p]:
                self.send(broker, [self.take(p)])
                self._check(p, serve=False)
