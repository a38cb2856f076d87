"""The old map fill (teranode's ``CreateTransactionMap`` before PR #1078): one goroutine per
bucket slice, all contending on the 1024 bucket mutexes.

An errgroup of up to ``concurrent_reads`` (375) subtree goroutines; each (after deserialising
its file, ``deserialize_ns`` per hash) ranges over its non-empty buckets in random order (a Go
map) and spawns one goroutine per bucket slice (``spawn_ns`` each, in chunks of 64), gives its
core back and waits for them. A slice goroutine, once a core runs it, goes through the global
run queue's lock if ``runqputslow`` put it there (:mod:`.runqueue`), pays ``goroutine_ns``
(stack, first schedule, exit, the WaitGroup) and a line transfer, then takes the bucket's
``sync.Mutex`` (:mod:`.mutex`: normal and starvation modes; a goroutine that finds it held
parks and gives its core back), pulls the lock's line, puts its hashes
(:mod:`.memory`) and unlocks, readying the next waiter at the front of the run queue; a woken
waiter pays ``park_wake_ns`` before it tries again (or, handed the lock, before it runs).

The simulation is an event loop of its own rather than SimPy processes: about two events per
goroutine that finds its lock free, four per one that parks, so a 420M-transaction block
(409,600 goroutines) simulates in seconds.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

import numpy as np

from ..core.cpu import CPUConfig
from .memory import MemoryConfig

if TYPE_CHECKING:                       # bucketmap imports this module
    from .bucketmap import MapCosts, MapWorkload
from .mutex import GoMutex, MutexStats
from .runqueue import RunQueue, global_share

CHUNK = 64
# event kinds
_SPAWNED, _LOCK, _UNLOCK, _RETRY, _OWN = range(5)
# run-queue items: (kind, id)
_SUBTREE, _SLICE, _WOKEN, _HANDED = range(4)


class SpawnFill:
    """One block's old-design fill; :meth:`run` returns (ns, hashes, core-ns busy)."""

    def __init__(self, cpu: CPUConfig, costs: MapCosts, memory: MemoryConfig, wl: MapWorkload,
                 counts: np.ndarray, rng: np.random.Generator) -> None:
        self.cpu, self.costs, self.wl, self.counts, self.rng = cpu, costs, wl, counts, rng
        self.put = costs.put_at(wl.entries)
        self.memory = memory
        self.rq = RunQueue(cpu)
        self.stats = MutexStats()
        self.locks = [GoMutex(self.stats) for _ in range(wl.n_buckets)]
        self.events: list[tuple[float, int, int, int]] = []
        self.seq = 0
        # per goroutine (appended at spawn): bucket, work of its critical section, spawner,
        # whether it came through the global run queue
        self.g_bucket: list[int] = []
        self.g_work: list[float] = []
        self.g_sub: list[int] = []
        self.g_global: list[bool] = []
        self.g_hashes: list[int] = []
        self.pending = [0] * wl.n_subtrees
        self.sub_end = [0] * wl.n_subtrees        # one past a subtree's last goroutine
        self.next_subtree = 0
        self.inserted = 0
        self.now = 0.0

    def _push(self, t: float, kind: int, arg: int) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, kind, arg))

    def run(self) -> tuple[float, int, float]:
        for _ in range(min(self.wl.concurrent_reads, self.wl.n_subtrees)):
            self._admit_subtree()
        self._dispatch()
        events, pop = self.events, heapq.heappop
        handlers = (self._spawned, self._lock, self._unlock, self._retry, self._own)
        while events:
            t, _, kind, arg = pop(events)
            self.now = t
            handlers[kind](arg)
        return self.now, self.inserted, self.rq.busy_time(self.now)

    # ------------------------------------------------------------ scheduling
    def _admit_subtree(self) -> None:
        if self.next_subtree < self.wl.n_subtrees:
            self.rq.put((_SUBTREE, self.next_subtree))
            self.next_subtree += 1

    def _dispatch(self) -> None:
        rq, now, cpu = self.rq, self.now, self.cpu
        while True:
            item = rq.take(now)
            if item is None:
                return
            kind, i = item
            if kind == _SLICE:
                start = rq.sched_lock(now) if self.g_global[i] else now
                self._push(start + cpu.goroutine_ns + rq.xfer, _LOCK, i)
            elif kind == _WOKEN:
                self._push(now + cpu.park_wake_ns, _RETRY, i)
            elif kind == _HANDED:
                self._push(now + cpu.park_wake_ns, _OWN, i)
            else:
                self._start_subtree(i)

    def _start_subtree(self, s: int) -> None:
        row = self.counts[s]
        buckets = self.rng.permutation(np.flatnonzero(row))
        hashes = row[buckets]
        work = (self.rq.xfer + self.costs.lock_ns
                + self.memory.slice_put_ns(hashes, self.put))
        via = global_share(len(buckets))
        first = len(self.g_bucket)
        self.g_bucket.extend(buckets.tolist())
        self.g_work.extend(work.tolist())
        self.g_hashes.extend(hashes.tolist())
        self.g_sub.extend([s] * len(buckets))
        self.g_global.extend(via.tolist())
        self.pending[s] = len(buckets)
        self.sub_end[s] = first + len(buckets)
        t = self.now + self.costs.deserialize_ns * int(row.sum())
        for start in range(0, len(buckets), CHUNK):
            t += self.cpu.spawn_ns * min(CHUNK, len(buckets) - start)
            self._push(t, _SPAWNED, first + start)
        if not len(buckets):
            self._push(t, _SPAWNED, -1 - s)

    # ------------------------------------------------------------ events
    def _spawned(self, first: int) -> None:
        """A chunk of up to 64 children is runnable; after the last, the spawner gives its
        core back and waits for them (off-core)."""
        if first < 0:                              # a subtree with no hashes
            self.rq.release(self.now)
            self._subtree_done(-1 - first)
        else:
            end = min(first + CHUNK, self.sub_end[self.g_sub[first]])
            for i in range(first, end):
                self.rq.put((_SLICE, i))
            if end == self.sub_end[self.g_sub[first]]:
                self.rq.release(self.now)
        self._dispatch()

    def _lock(self, i: int) -> None:
        if self.locks[self.g_bucket[i]].lock(i, self.now):
            self._push(self.now + self.g_work[i], _UNLOCK, i)
        else:                                       # park: the core runs something else
            self.rq.release(self.now)
            self._dispatch()

    def _retry(self, i: int) -> None:
        if self.locks[self.g_bucket[i]].retry(i, self.now):
            self._push(self.now + self.g_work[i], _UNLOCK, i)
        else:
            self.rq.release(self.now)
            self._dispatch()

    def _own(self, i: int) -> None:
        self.locks[self.g_bucket[i]].owns(i, self.now)
        self._push(self.now + self.g_work[i], _UNLOCK, i)

    def _unlock(self, i: int) -> None:
        woken = self.locks[self.g_bucket[i]].unlock(self.now)
        if woken is not None:
            w, handed = woken
            self.rq.ready((_HANDED if handed else _WOKEN, w))
        self.inserted += self.g_hashes[i]
        self.rq.release(self.now)
        s = self.g_sub[i]
        self.pending[s] -= 1
        if self.pending[s] == 0:
            self._subtree_done(s)
        self._dispatch()

    def _subtree_done(self, s: int) -> None:
        self._admit_subtree()                       # the errgroup slot passes on
