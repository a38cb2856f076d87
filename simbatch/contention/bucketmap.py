"""Bucket-lock contention on teranode's 1024-bucket transaction map (the subtree processor's
``map.go`` and ``CreateTransactionMap``, before and after PR #1078).

Phase A (insert; ``CreateTransactionMap``), simulated at the granularity of a **bucket
slice** (one subtree's hashes for one bucket) and a **worker message**, never a hash:

* ``design = "old"`` (before PR #1078): an errgroup of up to ``concurrent_reads`` (375)
  subtree goroutines; each (after deserialising its file, ``deserialize_ns`` per hash) spawns
  one goroutine per non-empty bucket. Each of those runs through the scheduler (a core, the
  global run-queue lock), takes the bucket's mutex (a FIFO lock; a goroutine that finds it
  held parks and gives its core back), pulls the lock's cache line from the last holder,
  inserts its hashes (``put_ns`` each) and releases; the WaitGroup ``Done`` is one more
  shared line.
* ``design = "new"`` (PR #1078 ``bucketInserter``): W = cores workers, worker w owns the
  buckets b with b mod W == w and has a channel of ``worker_queue`` (8) messages; each subtree
  goroutine groups its slices by owner (``group_ns`` per slice) and sends one message per
  worker, blocking while that worker's channel is full (backpressure). A worker inserts with an
  uncontended lock on a line it owns. Join, then Freeze.

Phase B (``Exists`` probes; ``processRemainderTxHashes``) is aggregated, not simulated per
probe: with all cores probing uniformly random buckets, a probe costs ``probe_ns`` plus, with
``exists = "rlock"``, an atomic add and an atomic sub on the bucket lock's shared reader count
(two line transfers, each waiting in an M/D/1 queue at the line whose load follows from the
throughput: a fixed point); ``"frozen"`` takes no lock; ``"mutex"`` (Nov-2025 go-tx-map)
serialises the whole probe on the bucket's line.

Per-hash costs grow with the map's size: ``put_ns`` and ``probe_ns`` are given for
``reference_entries`` and rise by ``*_per_doubling`` for every doubling beyond it (deeper
cache and TLB misses). Hash counts per slice are drawn multinomially (uniform buckets, as
``Bytes2Uint16Buckets`` gives for SHA-256d hashes).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Annotated, Literal

import numpy as np
import simpy

from ..core.config import Int, NonNeg, PosInt, at, config
from ..core.cpu import CPUConfig
from ..core.pool import FifoPool
from ..core.streams import streams

DESIGNS = ("old", "new")
EXISTS = ("rlock", "frozen", "mutex")
PHASES = ("insert", "probe", "both")
NonNegInt = Annotated[Int, at.Ge(0)]


@config
class MapCosts:
    """Per-operation costs of the map (nanoseconds), ``[costs]``."""

    put_ns: NonNeg = 70.0
    put_ns_per_doubling: NonNeg = 9.0
    probe_ns: NonNeg = 96.0
    probe_ns_per_doubling: NonNeg = 0.0
    lock_ns: NonNeg = 20.0
    deserialize_ns: NonNeg = 0.0
    group_ns: NonNeg = 30.0
    reference_entries: PosInt = 16_000_000

    def _scaled(self, base: float, per_doubling: float, entries: int) -> float:
        return base + per_doubling * max(0.0, math.log2(max(entries, 1) / self.reference_entries))

    def put_at(self, entries: int) -> float:
        return self._scaled(self.put_ns, self.put_ns_per_doubling, entries)

    def probe_at(self, entries: int) -> float:
        return self._scaled(self.probe_ns, self.probe_ns_per_doubling, entries)


@config
class MapWorkload:
    """One block's map fill (Phase A) and probes (Phase B), ``[map]``."""

    n_tx: PosInt = 16_000_000
    n_subtrees: PosInt = 256
    n_buckets: PosInt = 1024
    design: Literal["old", "new"] = "old"
    concurrent_reads: PosInt = 375
    worker_queue: PosInt = 8
    n_probes: NonNegInt = 0
    exists: Literal["rlock", "frozen", "mutex"] = "rlock"
    phases: Literal["insert", "probe", "both"] = "both"


@dataclass
class MapResult:
    """Times (s), throughputs (operations / s) and cores busy, per phase."""

    insert_s: float
    inserted: int
    insert_cores_busy: float
    probe_s: float
    probed: int
    probe_ns_per_op: float
    extra: dict = field(default_factory=dict)

    @property
    def insert_ops_per_s(self) -> float:
        return self.inserted / self.insert_s if self.insert_s else 0.0

    @property
    def probe_ops_per_s(self) -> float:
        return self.probed / self.probe_s if self.probe_s else 0.0


def slice_counts(workload: MapWorkload, rng: np.random.Generator) -> np.ndarray:
    """Hashes per (subtree, bucket): each subtree's share spread uniformly over the buckets."""
    base, extra = divmod(workload.n_tx, workload.n_subtrees)
    per = np.full(workload.n_subtrees, base, dtype=np.int64)
    per[:extra] += 1
    p = np.full(workload.n_buckets, 1.0 / workload.n_buckets)
    return np.stack([rng.multinomial(n, p) for n in per])


class _Insert:
    """Phase A as a SimPy model; ``run()`` returns (seconds, hashes inserted, core-ns busy)."""

    def __init__(self, cpu: CPUConfig, costs: MapCosts, wl: MapWorkload, counts: np.ndarray,
                 rng: np.random.Generator):
        self.cpu, self.costs, self.wl, self.counts, self.rng = cpu, costs, wl, counts, rng
        self.env = simpy.Environment()
        self.cores = FifoPool(self.env, cpu.cores)
        self.put = costs.put_at(wl.n_tx)
        self.inserted = 0
        c = cpu.cores
        self.xfer = cpu.line_transfer_ns(c)
        self.runq_hold = cpu.runq_lock_lines * self.xfer
        self.runq_free_at = 0.0
        self.runq_ends: deque[float] = deque()     # ends of the holds taken or queued
        self.asleep_ns = 0.0                        # threads asleep at the run-queue lock
        self.reads = FifoPool(self.env, wl.concurrent_reads)

    def run(self) -> tuple[float, int, float]:
        env = self.env
        if self.wl.design == "old":
            self.locks = [FifoPool(env, 1) for _ in range(self.wl.n_buckets)]
            done = [env.process(self._old_subtree(s)) for s in range(self.wl.n_subtrees)]
            env.run(until=env.all_of(done))
        else:
            w = min(self.cpu.cores, self.wl.n_buckets)
            self.inboxes = [simpy.Store(env, capacity=self.wl.worker_queue) for _ in range(w)]
            workers = [env.process(self._worker(i)) for i in range(w)]
            done = [env.process(self._new_subtree(s)) for s in range(self.wl.n_subtrees)]
            env.run(until=env.all_of(done))
            for box in self.inboxes:
                box.put(None)
            env.run(until=env.all_of(workers))
        return env.now * 1e-9, self.inserted, max(0.0, self.cores.busy_time - self.asleep_ns)

    # --------------------------------------------------------------- old design
    def _old_subtree(self, s: int):
        env, costs = self.env, self.costs
        yield self.reads.request()
        yield self.cores.request()
        row = self.counts[s]
        if costs.deserialize_ns:
            yield env.timeout(costs.deserialize_ns * int(row.sum()))
        # ``for bucket, hashes := range buckets`` ranges over a Go map: random order per subtree
        buckets = self.rng.permutation(np.flatnonzero(row))
        children = []
        for start in range(0, buckets.size, 64):
            chunk = buckets[start:start + 64]
            yield env.timeout(self.cpu.spawn_ns * chunk.size)
            children += [env.process(self._slice(int(b), int(row[b]))) for b in chunk]
        self.cores.release()            # wait for the children parked, off-core
        yield env.all_of(children)
        self.reads.release()

    def _slice(self, bucket: int, n: int):
        env = self.env
        yield self.cores.request()
        # The global run-queue lock is a FIFO serial section waited for with the core held, so
        # it is reserved by time arithmetic (exact) rather than with events; its hold is slowed
        # by the threads at it (this one and those queued: CPUConfig.runtime_lock_factor).
        # Then schedule, run, exit, and the WaitGroup Done on the subtree's shared line.
        ends = self.runq_ends
        while ends and ends[0] <= env.now:
            ends.popleft()
        hold = self.runq_hold * self.cpu.runtime_lock_factor(len(ends) + 1)
        start = max(env.now, self.runq_free_at)
        self.runq_free_at = start + hold
        ends.append(self.runq_free_at)
        # A thread waiting for a runtime mutex spins briefly and then sleeps in the kernel; its
        # P stays blocked but its core is idle. Counted busy: one spinner while a queue stands.
        self.asleep_ns += max(0.0, start - env.now - hold)
        yield env.timeout(start - env.now + hold + self.cpu.goroutine_ns + self.xfer)
        lock = self.locks[bucket]
        if lock.free:
            lock.request()
        else:
            self.cores.release()        # park on the mutex; the unlock hands it over
            yield lock.request()
            yield self.cores.request()
            yield env.timeout(self.cpu.park_wake_ns)
        yield env.timeout(self.xfer + self.costs.lock_ns + n * self.put)
        lock.release()
        self.inserted += n
        self.cores.release()

    # --------------------------------------------------------------- new design
    def _new_subtree(self, s: int):
        env, costs, cpu = self.env, self.costs, self.cpu
        yield self.reads.request()
        yield self.cores.request()
        row = self.counts[s]
        w = len(self.inboxes)
        nonempty = int(np.count_nonzero(row))
        yield env.timeout(costs.deserialize_ns * int(row.sum()) + costs.group_ns * nonempty)
        owner = np.arange(row.size) % w                 # worker w owns buckets b % W == w
        hashes = np.bincount(owner, weights=row, minlength=w).astype(np.int64)
        slices = np.bincount(owner, weights=row > 0, minlength=w).astype(np.int64)
        for i, box in enumerate(self.inboxes):
            if slices[i] == 0:
                continue
            msg = (int(hashes[i]), int(slices[i]))
            if len(box.items) >= box.capacity:          # blocks: park, give the core back
                self.cores.release()
                yield box.put(msg)
                yield self.cores.request()
                yield env.timeout(cpu.park_wake_ns)
            else:
                yield box.put(msg)
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
            hashes, slices = msg
            work = cpu.chan_op_ns + slices * self.costs.lock_ns + hashes * self.put
            if not has_core:
                yield self.cores.request()
                has_core = True
                work += cpu.park_wake_ns
            yield env.timeout(work)
            self.inserted += hashes
        if has_core:
            self.cores.release()


def probe_phase(cpu: CPUConfig, costs: MapCosts, wl: MapWorkload) -> tuple[float, float]:
    """Phase B, aggregated: (seconds for ``n_probes``, wall ns per probe over all cores)."""
    c = cpu.cores
    base = costs.probe_at(wl.n_tx)
    if wl.exists == "frozen" or c == 1:
        per_probe = base + (0.0 if wl.exists == "frozen" else 2 * costs.lock_ns)
    else:
        t_x = cpu.line_transfer_ns(c)
        per_probe = base + 2 * t_x
        for _ in range(200):                            # fixed point: throughput <-> queueing
            x = c / per_probe                           # probes per ns, all cores
            service = t_x if wl.exists == "rlock" else t_x + base
            visits = 2 if wl.exists == "rlock" else 1
            rho = min(0.999, x * visits * service / wl.n_buckets)
            wait = rho * service / (2 * (1 - rho))      # M/D/1 at the bucket's line
            new = base + visits * (t_x + wait) if wl.exists == "rlock" else base + t_x + wait
            if abs(new - per_probe) < 1e-9:
                break
            per_probe = 0.5 * (per_probe + new)
    wall_ns = per_probe / c
    return wl.n_probes * wall_ns * 1e-9, wall_ns


def simulate_map(cpu: CPUConfig, costs: MapCosts, wl: MapWorkload, seed: int = 0
                 ) -> MapResult:
    """Phase A simulated, Phase B aggregated; see the module docstring.

    Examples
    --------
    >>> r = simulate_map(CPUConfig(cores=2), MapCosts(), MapWorkload(n_tx=10_000, n_subtrees=4,
    ...                  design="new", n_probes=1000, exists="frozen"))
    >>> r.inserted, r.probed
    (10000, 1000)
    """
    rngs = streams(seed, ("counts", "order"))
    counts_rng, order_rng = rngs["counts"], rngs["order"]
    seconds, inserted, busy_ns = 0.0, 0, 0.0
    if wl.phases != "probe":
        counts = slice_counts(wl, counts_rng)
        seconds, inserted, busy_ns = _Insert(cpu, costs, wl, counts, order_rng).run()
    probe_s, probe_ns = probe_phase(cpu, costs, wl) if wl.phases != "insert" else (0.0, 0.0)
    return MapResult(insert_s=seconds, inserted=inserted,
                     insert_cores_busy=busy_ns * 1e-9 / seconds if seconds else 0.0,
                     probe_s=probe_s, probed=wl.n_probes if wl.phases != "insert" else 0,
                     probe_ns_per_op=probe_ns)
