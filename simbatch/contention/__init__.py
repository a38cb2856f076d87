"""Bucket-lock contention on a hashed bucket map, on any number of cores.

One mechanism per module: ``bucketmap`` (the map's fill and probes, both designs),
``engine`` (the case, the builder and the metrics); the cores and the Go runtime's costs
are the shared kernel's (:mod:`simbatch.core.cpu`).
"""

from ..core.cpu import CPUConfig
from .bucketmap import MapCosts, MapWorkload, probe_phase, simulate_map, slice_counts
from .engine import ENGINE, ContentionCase, ContentionRun, simulate

__all__ = ["CPUConfig", "ENGINE", "ContentionCase", "ContentionRun", "MapCosts", "MapWorkload",
           "probe_phase", "simulate", "simulate_map", "slice_counts"]
