"""Bucket-lock contention on teranode's 1024-bucket transaction map (the subtree processor's
``map.go``, ``CreateTransactionMap`` and ``processRemainderTxHashes``, before and after PR
#1078): the block, the map's costs, and the two phases.

Phase A (insert; ``CreateTransactionMap``) is simulated at the granularity of a **bucket
slice** (one subtree's hashes for one bucket) and a **worker message**, never a hash:
``design = "old"`` in :mod:`.spawnfill` (a goroutine per slice, the bucket ``sync.Mutex``),
``design = "new"`` in :mod:`.ownerfill` (single-owner workers). Join, then Freeze.

Phase B (``Exists`` probes; ``processRemainderTxHashes``) is aggregated, not simulated per
probe: with all cores probing uniformly random buckets, a probe costs ``probe_at(entries)``
plus, with ``exists = "rlock"``, an atomic add and an atomic sub on the bucket lock's shared
reader count (two line transfers, each waiting in an M/D/1 queue at the line whose load
follows from the throughput: a fixed point); ``"frozen"`` takes no lock; ``"mutex"``
(Nov-2025 go-tx-map) serialises the whole probe on the bucket's line.

Per-operation costs grow with the map's entries (``put_at``, ``probe_at``) and, for puts,
fall with the hashes put into one table per visit (:mod:`.memory`). Hash counts per slice are
drawn multinomially (uniform buckets, as ``Bytes2Uint16Buckets`` gives for SHA-256d hashes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Literal

import numpy as np

from ..core.config import NONE_WORD, Int, NonNeg, PosInt, at, config
from ..core.cpu import CPUConfig
from ..core.streams import streams
from .memory import MemoryConfig
from .mutex import MutexStats
from .ownerfill import OwnerFill
from .spawnfill import SpawnFill

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
    """One block's map fill (Phase A) and probes (Phase B), ``[map]``. ``map_entries`` is the
    entries the map holds at the end, which set the per-operation costs (``None``: ``n_tx``,
    every hash distinct; fewer when later subtrees re-put hashes already in it, as gobench's
    production blocks do; more to simulate a sample of a larger block's subtrees).
    ``hash_spread``: a subtree's hashes fall in the buckets at random (SHA-256d hashes), or
    ``"even"``ly, the same count in every bucket, as gobench's pre-bucketed blocks."""

    n_tx: PosInt = 16_000_000
    n_subtrees: PosInt = 256
    n_buckets: PosInt = 1024
    design: Literal["old", "new"] = "old"
    concurrent_reads: PosInt = 375
    worker_queue: PosInt = 8
    n_probes: NonNegInt = 0
    exists: Literal["rlock", "frozen", "mutex"] = "rlock"
    phases: Literal["insert", "probe", "both"] = "both"
    map_entries: Annotated[PosInt | None, NONE_WORD] = None
    hash_spread: Literal["random", "even"] = "random"

    @property
    def entries(self) -> int:
        return self.n_tx if self.map_entries is None else self.map_entries


@dataclass
class MapResult:
    """Times (s), throughputs (operations / s) and cores busy, per phase."""

    insert_s: float
    inserted: int
    insert_cores_busy: float
    probe_s: float
    probed: int
    probe_ns_per_op: float
    rlock_cpu_share: float = 0.0
    locks: MutexStats = field(default_factory=MutexStats)

    @property
    def insert_ops_per_s(self) -> float:
        return self.inserted / self.insert_s if self.insert_s else 0.0

    @property
    def probe_ops_per_s(self) -> float:
        return self.probed / self.probe_s if self.probe_s else 0.0


def slice_counts(workload: MapWorkload, rng: np.random.Generator) -> np.ndarray:
    """Hashes per (subtree, bucket): each subtree's share spread over the buckets at random
    (``hash_spread = "random"``) or as evenly as the counts allow (``"even"``)."""
    base, extra = divmod(workload.n_tx, workload.n_subtrees)
    per = np.full(workload.n_subtrees, base, dtype=np.int64)
    per[:extra] += 1
    b = workload.n_buckets
    if workload.hash_spread == "even":
        counts = np.repeat((per // b)[:, None], b, axis=1)
        counts[np.arange(b)[None, :] < (per % b)[:, None]] += 1
        return counts
    p = np.full(b, 1.0 / b)
    return np.stack([rng.multinomial(n, p) for n in per])


def probe_cost(cpu: CPUConfig, costs: MapCosts, wl: MapWorkload) -> tuple[float, float]:
    """Phase B, aggregated: (core ns per probe, of which ns in the reader count's atomics)."""
    c = cpu.cores
    base = costs.probe_at(wl.entries)
    if wl.exists == "frozen":
        return base, 0.0
    if c == 1:
        return base + 2 * costs.lock_ns, (2 * costs.lock_ns if wl.exists == "rlock" else 0.0)
    t_x = cpu.line_transfer_ns(c)
    rlock = wl.exists == "rlock"
    service = t_x if rlock else t_x + base
    visits = 2 if rlock else 1
    per_probe, at_line = base + visits * t_x, visits * t_x
    for _ in range(200):                                # fixed point: throughput <-> queueing
        x = c / per_probe                               # probes per ns, all cores
        rho = min(0.999, x * visits * service / wl.n_buckets)
        wait = rho * service / (2 * (1 - rho))          # M/D/1 at the bucket's line
        at_line = visits * (t_x + wait)
        new = base + at_line if rlock else base + t_x + wait
        if abs(new - per_probe) < 1e-9:
            break
        per_probe = 0.5 * (per_probe + new)
    return per_probe, (at_line if rlock else 0.0)


def probe_phase(cpu: CPUConfig, costs: MapCosts, wl: MapWorkload) -> tuple[float, float]:
    """Phase B, aggregated: (seconds for ``n_probes``, wall ns per probe over all cores)."""
    per_probe, _ = probe_cost(cpu, costs, wl)
    wall_ns = per_probe / cpu.cores
    return wl.n_probes * wall_ns * 1e-9, wall_ns


def simulate_map(cpu: CPUConfig, costs: MapCosts, wl: MapWorkload, seed: int = 0,
                 memory: MemoryConfig | None = None) -> MapResult:
    """Phase A simulated, Phase B aggregated; see the module docstring.

    Examples
    --------
    >>> r = simulate_map(CPUConfig(cores=2), MapCosts(), MapWorkload(n_tx=10_000, n_subtrees=4,
    ...                  design="new", n_probes=1000, exists="frozen"))
    >>> r.inserted, r.probed
    (10000, 1000)
    """
    memory = memory if memory is not None else MemoryConfig()
    rngs = streams(seed, ("counts", "order"))
    counts_rng, order_rng = rngs["counts"], rngs["order"]
    ns, inserted, busy_ns, locks = 0.0, 0, 0.0, MutexStats()
    if wl.phases != "probe":
        counts = slice_counts(wl, counts_rng)
        if wl.design == "old":
            fill = SpawnFill(cpu, costs, memory, wl, counts, order_rng)
            ns, inserted, busy_ns = fill.run()
            locks = fill.stats
        else:
            ns, inserted, busy_ns = OwnerFill(cpu, costs, memory, wl, counts).run()
    probe_s, probe_ns, share = 0.0, 0.0, 0.0
    if wl.phases != "insert":
        per_probe, at_line = probe_cost(cpu, costs, wl)
        probe_ns = per_probe / cpu.cores
        probe_s = wl.n_probes * probe_ns * 1e-9
        total_ns = busy_ns + wl.n_probes * per_probe
        share = wl.n_probes * at_line / total_ns if total_ns else 0.0   # nothing to do
    return MapResult(insert_s=ns * 1e-9, inserted=inserted,
                     insert_cores_busy=busy_ns / ns if ns else 0.0,
                     probe_s=probe_s, probed=wl.n_probes if wl.phases != "insert" else 0,
                     probe_ns_per_op=probe_ns, rlock_cpu_share=share, locks=locks)
