"""Bucket-lock contention on a hashed bucket map, on any number of cores.

One mechanism per module: ``bucketmap`` (the block, the map's costs, the probe phase),
``spawnfill`` (the old fill: a goroutine per bucket slice), ``ownerfill`` (the new fill:
single-owner workers), ``mutex`` (Go's ``sync.Mutex``, normal and starvation modes),
``runqueue`` (cores, ``runnext`` and the global run queue's lock), ``memory`` (the cost of a
put against the hashes per table visit), ``engine`` (the case, the builder and the metrics);
the cores and the Go runtime's costs are the shared kernel's (:mod:`simbatch.core.cpu`).
"""

from ..core.cpu import CPUConfig
from .bucketmap import MapCosts, MapWorkload, probe_cost, probe_phase, simulate_map, slice_counts
from .engine import ENGINE, ContentionCase, ContentionRun, simulate
from .memory import MemoryConfig

__all__ = ["CPUConfig", "ENGINE", "ContentionCase", "ContentionRun", "MapCosts", "MapWorkload",
           "MemoryConfig", "probe_cost", "probe_phase", "simulate", "simulate_map",
           "slice_counts"]
