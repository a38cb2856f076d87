"""The bucket map's engine: cores, costs and a block's map fill and probes.

A case is a machine (``[cpu]``, :class:`simbatch.core.cpu.CPUConfig`), the map's
per-operation costs (``[costs]``), how they fall with the hashes per table visit
(``[memory]``, :mod:`simbatch.contention.memory`) and a block (``[map]``); the mechanisms are
in :mod:`simbatch.contention.bucketmap` and the modules it names. Random streams: ``counts``
(hashes per bucket slice) and ``order`` (the order a subtree ranges over its buckets).

Metrics: ``throughput_ops_per_s`` (map operations per second over both phases),
``cores_busy`` (mean cores busy), ``total_s``, ``insert_s``, ``insert_ops_per_s``,
``insert_cores_busy``, ``probe_s``, ``probe_ops_per_s``, ``probe_ns_per_op`` (wall time per
probe over all cores), ``probe_cores_busy``, ``rlock_cpu_share`` (share of the block's CPU,
both phases, in the reader count's atomic add and sub), ``lock_wait_mean_us`` (mean wait for
a bucket mutex per acquisition, old design), ``lock_waits_over_1ms_share`` and
``lock_starving_share`` (share of acquisitions that waited past ``sync.Mutex``'s 1 ms
starvation threshold, and that took the mutex by a starvation-mode hand-off), ``inserted``,
``probed``. Frame: ``phases``
(``phase``; ``seconds``; ``operations``; ``ops_per_s``; ``cores_busy``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..core.config import Field, config
from ..core.cpu import CPUConfig
from ..core.engine import CaseBase, PlotSpec, Run, register
from ..core.errors import check_int, fail
from ..core.work import Bounds, Work
from .bucketmap import MapCosts, MapResult, MapWorkload, simulate_map
from .memory import MemoryConfig


@config
class ContentionCase(CaseBase):
    """A machine, the map's costs and one block."""

    cpu: CPUConfig = Field(default_factory=CPUConfig)
    costs: MapCosts = Field(default_factory=MapCosts)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    map: MapWorkload = Field(default_factory=MapWorkload)


@dataclass
class ContentionRun(Run):
    result: MapResult = None  # type: ignore[assignment]

    def _frames(self) -> dict[str, pd.DataFrame]:
        r = self.result
        return {"phases": pd.DataFrame({
            "phase": ["insert", "probe"], "seconds": [r.insert_s, r.probe_s],
            "operations": [r.inserted, r.probed],
            "ops_per_s": [r.insert_ops_per_s, r.probe_ops_per_s],
            "cores_busy": [r.insert_cores_busy,
                           float(self.case.cpu.cores) if r.probe_s else 0.0]})}


def simulate(case: ContentionCase, seed: int = 0, *, bounds: Bounds | None = None
             ) -> ContentionRun:
    """One block with ``seed`` (the run's own seed). Every event is a goroutine or a worker
    message, bounded by the work estimate."""
    if not isinstance(case, ContentionCase):
        raise fail("simulate", "case", "a simbatch.contention.ContentionCase",
                   type(case).__name__)
    check_int("simulate", "seed", seed)
    return ContentionRun(case=case, seed=seed,
                         result=simulate_map(case.cpu, case.costs, case.map, seed,
                                             case.memory))


METRICS = ("throughput_ops_per_s", "cores_busy", "total_s", "insert_s", "insert_ops_per_s",
           "insert_cores_busy", "probe_s", "probe_ops_per_s", "probe_ns_per_op",
           "probe_cores_busy", "rlock_cpu_share", "lock_wait_mean_us",
           "lock_waits_over_1ms_share", "lock_starving_share", "inserted", "probed")


def map_metrics(result: MapResult, cpu: CPUConfig) -> dict[str, float]:
    """The metrics of one block (see the module docstring)."""
    total_s = result.insert_s + result.probe_s
    ops = result.inserted + result.probed
    busy = (result.insert_cores_busy * result.insert_s + cpu.cores * result.probe_s)
    locks = result.locks
    per_lock = 1.0 / locks.acquisitions if locks.acquisitions else 0.0
    return {"throughput_ops_per_s": ops / total_s if total_s else 0.0,
            "cores_busy": busy / total_s if total_s else 0.0,
            "total_s": total_s, "insert_s": result.insert_s,
            "insert_ops_per_s": result.insert_ops_per_s,
            "insert_cores_busy": result.insert_cores_busy, "probe_s": result.probe_s,
            "probe_ops_per_s": result.probe_ops_per_s,
            "probe_ns_per_op": result.probe_ns_per_op,
            "probe_cores_busy": float(cpu.cores) if result.probe_s else 0.0,
            "rlock_cpu_share": result.rlock_cpu_share,
            "lock_wait_mean_us": locks.wait_ns * 1e-3 * per_lock,
            "lock_waits_over_1ms_share": locks.waits_over_1ms * per_lock,
            "lock_starving_share": locks.starving_acquisitions * per_lock,
            "inserted": float(result.inserted), "probed": float(result.probed)}


class ContentionEngine:
    """The engine of ``[scenario] kind = "contention"``."""

    kind = "contention"
    case_type = ContentionCase
    metrics = METRICS
    report_metrics = ("throughput_ops_per_s", "cores_busy", "insert_s", "probe_s")
    headline = ("throughput_ops_per_s", "cores_busy", "total_s", "insert_ops_per_s",
                "probe_ns_per_op")
    plots = (PlotSpec("scaling", "cpu.cores", ("throughput_ops_per_s",)),)

    def simulate(self, case: ContentionCase, seed: int, *, bounds: Bounds | None = None
                 ) -> ContentionRun:
        return simulate(case, seed, bounds=bounds)

    def run_metrics(self, run: ContentionRun) -> dict[str, float]:
        return map_metrics(run.result, run.case.cpu)

    def pool(self, run: ContentionRun) -> dict[str, np.ndarray]:
        return {}

    def pooled_metrics(self, pools: list[dict[str, np.ndarray]]) -> dict[str, float]:
        return {}

    def headline_for(self, summaries: list[Any]) -> tuple[str, ...]:
        return self.headline

    def scaled_load(self, case: ContentionCase, factor: float) -> dict[str, Any]:
        """A block of ``factor`` times the transactions (and probes)."""
        wl = case.map
        return {"map.n_tx": max(1, round(wl.n_tx * factor)),
                "map.n_probes": round(wl.n_probes * factor)}

    def work(self, case: ContentionCase) -> Work:
        wl = case.map
        slices = float(wl.n_subtrees) * min(wl.n_buckets, max(1, wl.n_tx // wl.n_subtrees))
        if wl.phases == "probe":
            slices = 0.0
        memory = 8.0 * wl.n_subtrees * wl.n_buckets + 400.0 * slices
        driver, value = "map.n_subtrees", wl.n_subtrees
        if wl.n_buckets > wl.n_subtrees:
            driver, value = "map.n_buckets", wl.n_buckets
        return Work(events=10.0 * slices + 10.0 * wl.n_subtrees, memory_bytes=memory,
                    driver=driver, value=value)


ENGINE = register(ContentionEngine())
