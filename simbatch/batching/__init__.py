"""The batcher pipeline: producers, go-batcher, the batch call and the client's CPU.

One mechanism per module: ``channel`` (the Go channel in front of the worker), ``batcher``
(go-batcher's worker: timers, drain, tick, dispatch), ``producers`` (a block's fan-out, open
arrivals), ``service`` (the batch call's cost and the client's CPU after it),
``clientstats`` (the Aerospike client's per-record statistics), ``records`` (what a run
records), ``engine`` (the case, the builder and the metrics).
"""

from .batcher import BatcherConfig
from .clientstats import StatsConfig
from .engine import ENGINE, BatchRun, Case, HostConfig, replicate, simulate
from .producers import BlockWorkload, OpenLoopWorkload
from .service import ClientConfig, ServiceConfig

__all__ = ["ENGINE", "BatchRun", "BatcherConfig", "BlockWorkload", "Case", "ClientConfig",
           "HostConfig", "OpenLoopWorkload", "ServiceConfig", "StatsConfig", "replicate",
           "simulate"]
