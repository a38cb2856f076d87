"""The new map fill (PR #1078 ``bucketInserter``): one owner worker per core, no contention.

W = cores workers (at most one per bucket); worker w owns the buckets b with b mod W == w and
has a channel of ``worker_queue`` (8) messages. Each subtree goroutine (an errgroup of
``concurrent_reads``) deserialises its file, groups its non-empty bucket slices by owner
(``group_ns`` per slice) and sends one message per worker, in worker order, blocking while
that worker's channel is full (it parks and gives its core back). A worker takes one message
at a time and puts its slices under an uncontended lock (``lock_ns`` per slice) on lines it
owns; it keeps its core while messages wait and parks when its channel is empty. The cost of
the puts follows :mod:`.memory` (each slice one visit to its bucket's table).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import simpy

from ..core.cpu import CPUConfig
from ..core.pool import FifoPool
from .memory import MemoryConfig

if TYPE_CHECKING:                       # bucketmap imports this module
    from .bucketmap import MapCosts, MapWorkload


class OwnerFill:
    """One block's new-design fill (SimPy); :meth:`run` returns (ns, hashes, core-ns busy)."""

    def __init__(self, cpu: CPUConfig, costs: MapCosts, memory: MemoryConfig, wl: MapWorkload,
                 counts: np.ndarray) -> None:
        self.cpu, self.costs, self.wl, self.counts = cpu, costs, wl, counts
        self.put = costs.put_at(wl.entries)
        self.memory = memory
        self.env = simpy.Environment()
        self.cores = FifoPool(self.env, cpu.cores)
        self.reads = FifoPool(self.env, wl.concurrent_reads)
        self.xfer = cpu.line_transfer_ns(cpu.cores)
        self.inserted = 0
        w = min(cpu.cores, wl.n_buckets)
        self.owner = np.arange(wl.n_buckets) % w           # worker w owns buckets b % W == w
        self.inboxes = [simpy.Store(self.env, capacity=wl.worker_queue) for _ in range(w)]

    def run(self) -> tuple[float, int, float]:
        env = self.env
        workers = [env.process(self._worker(i)) for i in range(len(self.inboxes))]
        done = [env.process(self._subtree(s)) for s in range(self.wl.n_subtrees)]
        env.run(until=env.all_of(done))
        for box in self.inboxes:
            box.put(None)
        env.run(until=env.all_of(workers))
        return env.now, self.inserted, self.cores.busy_time

    def _messages(self, row: np.ndarray) -> list[tuple[int, int, int, float]]:
        """(worker, hashes, slices, ns of puts) for each worker that gets any slice."""
        w = len(self.inboxes)
        puts = self.memory.slice_put_ns(row, self.put)
        hashes = np.bincount(self.owner, weights=row, minlength=w).astype(np.int64)
        slices = np.bincount(self.owner, weights=row > 0, minlength=w).astype(np.int64)
        work = np.bincount(self.owner, weights=puts, minlength=w)
        return [(int(i), int(hashes[i]), int(slices[i]), float(work[i]))
                for i in np.flatnonzero(slices)]

    def _subtree(self, s: int):
        env, costs, cpu = self.env, self.costs, self.cpu
        yield self.reads.request()
        yield self.cores.request()
        row = self.counts[s]
        nonempty = int(np.count_nonzero(row))
        yield env.timeout(costs.deserialize_ns * int(row.sum()) + costs.group_ns * nonempty)
        for i, hashes, slices, work in self._messages(row):
            box = self.inboxes[i]
            if len(box.items) >= box.capacity:          # blocks: park, give the core back
                self.cores.release()
                yield box.put((hashes, slices, work))
                yield self.cores.request()
                yield env.timeout(cpu.park_wake_ns)
            else:
                yield box.put((hashes, slices, work))
            yield env.timeout(cpu.chan_op_ns + self.xfer)
        self.cores.release()
        self.reads.release()

    def _worker(self, i: int):
        # ``for msg := range ch``: one message at a time; the core is kept while messages are
        # queued and given back (parked) when the channel is empty.
        env, box, cpu = self.env, self.inboxes[i], self.cpu
        has_core = False
        while True:
            if has_core and not box.items:
                self.cores.release()
                has_core = False
            msg = yield box.get()
            if msg is None:
                break
            hashes, slices, puts = msg
            work = cpu.chan_op_ns + slices * self.costs.lock_ns + puts
            if not has_core:
                yield self.cores.request()
                has_core = True
                work += cpu.park_wake_ns
            yield env.timeout(work)
            self.inserted += hashes
        if has_core:
            self.cores.release()
