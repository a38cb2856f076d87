"""The batcher pipeline: producers, go-batcher, the batch call and the client's CPU.

One mechanism per module: ``channel`` (the Go channel in front of the worker), ``batcher``
(go-batcher's worker: timers, drain, tick, dispatch), ``producers`` (a block's fan-out, open
arrivals), ``service`` (the batch call's cost and the client's CPU after it),
``clientstats`` (the Aerospike client's per-record statistics), ``hosttiming`` (the host's
sleeps, timers, wake-ups and stalls), ``sleepcall`` (a flush that is a sleep on a measured
host), ``gocpu`` (the Go client's processors and runtime costs, ``[go]``), ``scheduler``
(Go's scheduler: runnext, run queues, work stealing, timers), ``gosync`` (channels and wait
groups between goroutines), ``goclient`` (the pipeline's goroutines on the modelled
processors), ``records`` (what a run records), ``engine`` (the case, the builder and the
metrics).
"""

from .batcher import BatcherConfig
from .clientstats import StatsConfig
from .engine import ENGINE, BatchRun, Case, replicate, simulate
from .gocpu import GoConfig
from .hosttiming import HostConfig
from .producers import BlockWorkload, OpenLoopWorkload
from .service import ClientConfig, ServiceConfig

__all__ = ["ENGINE", "BatchRun", "BatcherConfig", "BlockWorkload", "Case", "ClientConfig",
           "GoConfig", "HostConfig", "OpenLoopWorkload", "ServiceConfig", "StatsConfig",
           "replicate", "simulate"]
