"""The Java producer (``semantics = "java"``, org.apache.kafka:kafka-clients): a node is
ready when any of its partitions is, and then every partition's first batch goes.

Read in kafka-clients 3.9.1 (the sources jar from Maven Central, the broker's version) and
4.0.0 for the changed defaults, ``clients/producer/``:

* **J1 defaults** (``ProducerConfig``): ``linger.ms`` 0 up to 3.9, 5 from 4.0 (KIP-1030);
  ``batch.size`` 16384; ``max.in.flight.requests.per.connection`` 5; ``acks`` all with
  ``enable.idempotence`` true (their cost shows in the measured ``append_ms``, not here).
* **J2 readiness per node.** ``internals/RecordAccumulator.ready`` -> ``partitionReady`` ->
  ``batchReady``: a partition's first batch makes its leader ready when it is full (or a
  second batch exists), when ``waitedTimeMs`` (from the batch's creation: a max age) reached
  ``linger.ms``, when buffer memory is exhausted (a ``send`` is blocked), on flush or close.
* **J3 drain every partition of a ready node.** ``RecordAccumulator.drainBatchesForOneNode``
  takes the first batch of every partition led by that node, whether its linger has passed
  or not; ``Sender.sendProduceRequests`` sends them as one ProduceRequest. Nothing chains
  (unlike franz-go's F4): after a response the Sender drains again only if a partition is
  ready (``Sender.sendProducerData`` runs on every loop).
* **J4 in flight.** ``NetworkClient.ready`` / ``InFlightRequests.canSendMore``: up to
  ``max.in.flight.requests.per.connection`` requests per node; a ready node whose
  connection is full waits for a response.
* **J5/J6 partitioner**: murmur2 for keys, the built-in uniform sticky partitioner for
  keyless records (KIP-794), see ``partitioners``.

Simplifications: ``max.request.size`` (1 MiB per request), the per-node drain rotation and
partition muting (which only matters with one request in flight and several brokers) are
not modelled; no retries.
"""

from __future__ import annotations

import numpy as np

from .client import Client
from .partitioners import JavaSticky, Sticky


class JavaProducer(Client):
    """The Sender thread over the RecordAccumulator (module docstring)."""

    def _make_sticky(self, rng: np.random.Generator) -> Sticky:
        return JavaSticky(self.config.n_partitions, rng, self, self.byte_cap)

    def _record_added(self, p: int, new_batch: bool) -> None:
        broker = self.broker_of(p)
        if new_batch and self.linger > 0:
            self.linger_timer(self.linger, lambda: self._sender(broker))
        self._sender(broker)

    def _blocked_now(self) -> None:
        for broker in range(self.config.n_brokers):
            self._sender(broker)

    def _responded(self, broker: int) -> None:
        self._sender(broker)

    def _ready(self, broker: int) -> bool:
        """``RecordAccumulator.ready`` for one node (J2)."""
        if not self.nonempty[broker]:
            return False
        if self.blocked:                      # exhausted: a send waits for memory
            return True
        for p in self.nonempty[broker]:
            batches = self.batches[p]
            if len(batches) >= 2 or batches[0].bytes >= self.byte_cap or \
                    self.expired(batches[0]):
                return True
        return False

    def _sender(self, broker: int) -> None:
        """``Sender.sendProducerData``: drain a ready node while it can take a request."""
        while self.can_send(broker) and self._ready(broker):
            self.send(broker, [self.take(p) for p in self.partitions_with_data(broker)])
