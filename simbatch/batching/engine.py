"""The batcher pipeline's engine: producers -> go-batcher -> batch call -> client CPU.

A case is a workload, a batcher, a service model, the host's timers and the Go client's
processors (the scenario's ``[workload]``, ``[batcher]``, ``[service]`` with
``[service.client]`` and ``[service.stats]``, ``[host]`` and ``[go]``). A run is a pure
function of (case, seed): the seed is split into one named random stream per source
(``inputs``, ``keys``, ``arrivals``, ``service``, ``host``, ``scheduler``;
:func:`simbatch.core.streams.streams`), so two cases run with one seed see the same workload
(common random numbers).

Two ways to run a case:

* ``[go]`` unset (the default): no CPU is charged on the client; work at one simulated
  instant is ordered as SimPy schedules it (a producer's Puts land before the worker wakes),
  so every run of a case makes the same batches when its service is constant;
* ``[go] gomaxprocs = n``: every goroutine runs on ``n`` processors under Go's scheduler,
  each runtime operation a CPU cost from ``[go]`` (:mod:`.goclient`, :mod:`.scheduler`,
  :mod:`.gocpu`): spawning a goroutine per transaction, each Put, the worker's loop, the
  hand-off, completing each item. Which goroutine runs next when several are ready is Go's
  rule with random wake-up latencies (the ``scheduler`` stream), so drain mode's batches
  vary run to run as the real library's do.

``[host] model = "../models/host-loopback.toml"`` draws every timer and sleep from the host's
measured distributions (:mod:`.hosttiming`) instead of adding ``timer_overshoot_us``.

Metrics (stable names, units in the name):

``block_time_s``
    first Put to last completion; for a block workload, the time per block.
``throughput_items_per_s``
    items / ``block_time_s``.
``item_latency_{mean,p50,p90,p99,max}_s`` and ``txn_latency_{...}_s``
    Put to done per item; first Put to last input done per transaction (pooled over
    replications).
``item_{put_block,batch_wait,dispatch_wait,service}_mean_s``
    where an item's time went: blocked in Put, waiting for its batch to close, waiting for a
    dispatch slot or permit, in service. They add up to ``item_latency_mean_s``.
``batch_size_{mean,p50,p99,max}``, ``n_batches``, ``n_items``
``flush_share_{size,timer,drain,tick,close}``
    share of flushes by trigger, 0 to 1.
``stats_cpu_share``, ``stats_set_cpu_share``
    share of the modelled process CPU (the service's own work per record, the client's
    parse and its per-record statistics) spent in the statistics, and in the statistics'
    map Set, 0 to 1 (0 without a client stage): what a CPU profile of the service shows.
``item_stats_lock_wait_mean_s``
    the part of ``item_service_mean_s`` the item's batch spent waiting for the client
    statistics' lock (0 without a client stage or when the lock never binds).
``throughput_ops_per_s``, ``cores_busy``
    records per second (the same figure as ``throughput_items_per_s``, under the name the
    contention scenarios use) and the mean number of client cores busy with that CPU.

Frames: ``items``, ``txns``, ``batches`` (columns in :mod:`simbatch.batching.records`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Union

import numpy as np
import pandas as pd
import simpy

from ..core.config import Field, Rule, Tag, config, kind_tag
from ..core.engine import CaseBase, PlotSpec, Run, register
from ..core.errors import ConfigError, check_int, fail
from ..core.streams import streams
from ..core.work import Bounds, EventGuard, Work
from .batcher import TRIGGERS, Batcher, BatcherConfig
from .goclient import GoBlock
from .gocpu import GoConfig
from .hosttiming import HostConfig, HostTiming
from .producers import BlockWorkload, OpenLoopWorkload, Producers
from .records import Recorder
from .scheduler import Scheduler
from .service import BatchService, ServiceConfig
from .sleepcall import SleepCall

STREAMS = ("inputs", "keys", "arrivals", "service", "host", "scheduler")
QUANTILES = {"p50": 0.50, "p90": 0.90, "p99": 0.99}


Workload = Annotated[Union[Annotated[BlockWorkload, Tag("block")],
                           Annotated[OpenLoopWorkload, Tag("open_loop")]], kind_tag("block")]


@config
class Case(CaseBase):
    """One configuration to simulate: a workload, a batcher, a service model, a host.

    Examples
    --------
    >>> run = simulate(Case(workload=BlockWorkload(n_transactions=3)), seed=1)
    >>> round(run.block_time_s, 4)   # 3 x (10 ms timer + 0.5 ms service)
    0.0315
    """

    host: HostConfig = Field(default_factory=HostConfig)
    workload: Workload = Field(default_factory=BlockWorkload)
    batcher: BatcherConfig = Field(default_factory=BatcherConfig)
    service: ServiceConfig = Field(default_factory=ServiceConfig)
    go: GoConfig = Field(default_factory=GoConfig)
    RULES = (
        Rule("go", "a [go] section without gomaxprocs for an open_loop workload (the "
             "client's CPU is modelled for a block)",
             lambda c: not c.go.enabled or isinstance(c.workload, BlockWorkload)),
        Rule("go", "a [go] section without gomaxprocs when batcher.tick_ms is set (tick "
             "mode is not modelled with the client's CPU)",
             lambda c: not c.go.enabled or c.batcher.tick_ms is None),
    )


@dataclass
class BatchRun(Run):
    """The records of one replication."""

    recorder: Recorder = None  # type: ignore[assignment]
    end_s: float = 0.0
    go_cpu_s: float = 0.0
    go_counts: dict[str, int] = field(default_factory=dict)
    """Operations of the client's goroutines that the harness cannot count (``[go]`` on;
    empty otherwise): ``switches`` (context switches), ``worker_wakes`` (switches to
    go-batcher's worker: each a wake from its blocking ``select`` or from a hand-off it
    waited on), ``ready_selects`` (the worker's ``select`` done without blocking)."""

    @property
    def block_time_s(self) -> float:
        """Time from the first Put to the last transaction's completion (seconds)."""
        return self.end_s

    def _frames(self) -> dict[str, pd.DataFrame]:
        return self.recorder.frames()


def simulate(case: Case, seed: int = 0, *, bounds: Bounds | None = None) -> BatchRun:
    """Run ``case`` once with ``seed`` (the run's own seed: the same seed, the same run).

    Parameters
    ----------
    case : Case
    seed : int
        The run's seed; :func:`simbatch.core.streams.replication_seed` derives one per
        replication of an experiment.
    bounds : Bounds
        Work bounds; a periodic timer that fires more than ``bounds.max_events`` times
        stops the run with an error naming it.
    """
    if not isinstance(case, Case):
        raise fail("simulate", "case", "a simbatch.batching.Case", type(case).__name__)
    check_int("simulate", "seed", seed)
    rngs = streams(seed, STREAMS)
    env = simpy.Environment()
    recorder = Recorder()
    timing = HostTiming(case.host, rngs["host"])
    guard = EventGuard((bounds or Bounds()).max_events)
    if case.go.enabled:
        return _simulate_go(case, seed, env, recorder, rngs, timing, guard)
    late_us = case.host.timer_overshoot_us
    producers = Producers(env, case.workload, recorder, rngs)
    service = _service(env, case, rngs, recorder, producers.items_done, timing)
    batcher = Batcher(env, case.batcher, service, on_enqueue=recorder.enqueued,
                      overshoot_s=late_us / 1e6, guard=guard, timing=timing)
    batcher.start()
    all_done = producers.start(batcher)
    try:
        env.run(until=all_done)
        end = env.now
        batcher.close()
        env.run(until=batcher.process)
    except ConfigError as exc:          # a timer that would not let the run end
        # SimPy re-raises a process's exception as a copy made from its message; the
        # original, with its parts, is the copy's cause
        original = exc.__cause__ if isinstance(exc.__cause__, ConfigError) else exc
        raise original.under("batcher") from None
    return BatchRun(case=case, seed=seed, recorder=recorder, end_s=end)


def _service(env: simpy.Environment, case: Case, rngs: dict[str, np.random.Generator],
             recorder: Recorder, on_done: Any, timing: HostTiming) -> Any:
    """The flush's call: a sleep on a measured host, else the service model."""
    svc = case.service
    if (timing.measured and svc.is_sleep and svc.max_in_flight is None
            and not svc.has_client_stage):
        return SleepCall(env, svc, rngs["service"], recorder, timing, on_done)
    return BatchService(env, svc, rngs["service"], recorder, on_done=on_done,
                        late_us=case.host.timer_overshoot_us)


def _simulate_go(case: Case, seed: int, env: simpy.Environment, recorder: Recorder,
                 rngs: dict[str, np.random.Generator], timing: HostTiming,
                 guard: EventGuard) -> BatchRun:
    """A run with the client's CPU modelled (``[go] gomaxprocs`` set)."""
    sched = Scheduler(env, case.go, rngs["scheduler"], timing)
    service = BatchService(env, case.service, rngs["service"], recorder,
                           late_us=case.host.timer_overshoot_us)
    block = GoBlock(env, sched, case, recorder, rngs, service, guard)
    try:
        env.run(until=block.start())
    except ConfigError as exc:          # a cycle timer that would not let the run end
        raise exc.under("batcher") from None
    return BatchRun(case=case, seed=seed, recorder=recorder, end_s=block.end_s,
                    go_cpu_s=sched.busy_s,
                    go_counts={"switches": sched.switches, "worker_wakes": block.worker_wakes,
                               "ready_selects": block.ready_selects})


# ---------------------------------------------------------------------------- metrics
def _latency(values: np.ndarray, prefix: str) -> dict[str, float]:
    if not values.size:
        return {f"{prefix}_{name}_s": float("nan") for name in ("mean", *QUANTILES, "max")}
    out = {f"{prefix}_mean_s": float(values.mean())}
    for name, q in QUANTILES.items():
        out[f"{prefix}_{name}_s"] = float(np.quantile(values, q))
    out[f"{prefix}_max_s"] = float(values.max())
    return out


def _arrays(run: BatchRun) -> dict[str, np.ndarray]:
    rec = run.recorder
    batch_of = np.asarray(rec.item_batch, np.int64)
    return {"put": np.asarray(rec.item_put, np.float64),
            "enq": np.asarray(rec.item_enq, np.float64),
            "flush": np.frombuffer(rec.batch_flush)[batch_of],
            "start": np.frombuffer(rec.batch_start)[batch_of],
            "done": np.frombuffer(rec.batch_done_at)[batch_of],
            "txn_latency": (np.asarray(rec.txn_end, np.float64)
                            - np.asarray(rec.txn_start, np.float64))}


def run_metrics(run: BatchRun) -> dict[str, float]:
    """All metrics of one run (see the module docstring)."""
    a = _arrays(run)
    rec = run.recorder
    sizes = np.frombuffer(rec.batch_size, np.int64)
    triggers = np.frombuffer(rec.batch_trigger, np.int8)
    n_items = int(a["put"].size)
    m: dict[str, float] = {"block_time_s": run.end_s,
                           "throughput_items_per_s": n_items / run.end_s if run.end_s else 0.0,
                           "n_items": float(n_items), "n_batches": float(sizes.size)}
    m.update(_latency(a["done"] - a["put"], "item_latency"))
    m.update(_latency(a["txn_latency"], "txn_latency"))
    for name, lo, hi in (("put_block", "put", "enq"), ("batch_wait", "enq", "flush"),
                         ("dispatch_wait", "flush", "start"), ("service", "start", "done")):
        m[f"item_{name}_mean_s"] = float((a[hi] - a[lo]).mean()) if n_items else 0.0
    m["batch_size_mean"] = float(sizes.mean()) if sizes.size else 0.0
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        m[f"batch_size_{name}"] = float(np.quantile(sizes, q)) if sizes.size else 0.0
    m["batch_size_max"] = float(sizes.max()) if sizes.size else 0.0
    cpu = {name: float(np.sum(np.frombuffer(getattr(rec, f"batch_{name}_ns"))))
           for name in ("parse", "stats", "set", "app")}
    process = cpu["app"] + cpu["parse"] + cpu["stats"]
    m["stats_cpu_share"] = cpu["stats"] / process if process else 0.0
    m["stats_set_cpu_share"] = cpu["set"] / process if process else 0.0
    wait = np.frombuffer(rec.batch_lock_wait_ns) * 1e-9
    m["item_stats_lock_wait_mean_s"] = (float(np.dot(sizes, wait)) / n_items
                                        if n_items else 0.0)
    m["throughput_ops_per_s"] = m["throughput_items_per_s"]
    m["cores_busy"] = ((process * 1e-9 + run.go_cpu_s) / run.end_s) if run.end_s else 0.0
    for code, trig in enumerate(TRIGGERS):
        m[f"flush_share_{trig}"] = float((triggers == code).mean()) if sizes.size else 0.0
    return m


_STATS = ("mean", *QUANTILES, "max")
METRICS = (
    "block_time_s", "throughput_items_per_s", "n_items", "n_batches",
    *(f"item_latency_{s}_s" for s in _STATS), *(f"txn_latency_{s}_s" for s in _STATS),
    *(f"item_{p}_mean_s" for p in ("put_block", "batch_wait", "dispatch_wait", "service")),
    "batch_size_mean", "batch_size_p50", "batch_size_p99", "batch_size_max",
    "stats_cpu_share", "stats_set_cpu_share", "item_stats_lock_wait_mean_s",
    "throughput_ops_per_s", "cores_busy", *(f"flush_share_{t}" for t in TRIGGERS))
"""Every metric of a batcher case (meanings in the module docstring)."""


class BatchingEngine:
    """The engine of ``[scenario] kind = "batcher"`` (the default)."""

    kind = "batcher"
    case_type = Case
    metrics = METRICS
    report_metrics = ("block_time_s", "item_latency_p50_s", "item_latency_p99_s",
                      "throughput_items_per_s")
    headline = ("block_time_s", "item_latency_p50_s", "item_latency_p99_s",
                "batch_size_mean", "flush_share_size", "flush_share_timer", "flush_share_drain")
    plots = (PlotSpec("cdf"),
             PlotSpec("percentiles", "workload.cap", ("item_latency_p50_s",
                                                      "item_latency_p99_s")))

    def simulate(self, case: Case, seed: int, *, bounds: Bounds | None = None) -> BatchRun:
        return simulate(case, seed, bounds=bounds)

    def run_metrics(self, run: BatchRun) -> dict[str, float]:
        return run_metrics(run)

    def pool(self, run: BatchRun) -> dict[str, np.ndarray]:
        a = _arrays(run)
        return {"latency": a["done"] - a["put"], "txn_latency": a["txn_latency"]}

    def pooled_metrics(self, pools: list[dict[str, np.ndarray]]) -> dict[str, float]:
        items = np.concatenate([p["latency"] for p in pools])
        txns = np.concatenate([p["txn_latency"] for p in pools])
        return {**_latency(items, "item_latency"), **_latency(txns, "txn_latency")}

    def headline_for(self, summaries: list[Any]) -> tuple[str, ...]:
        """With a client CPU stage, where the CPU goes (table R3) instead of the batches."""
        if any(s.metrics.get("stats_cpu_share") for s in summaries):
            return ("block_time_s", "throughput_items_per_s", "stats_cpu_share",
                    "stats_set_cpu_share", "item_stats_lock_wait_mean_s", "item_latency_p99_s")
        return self.headline

    def scaled_load(self, case: Case, factor: float) -> dict[str, Any]:
        """A block of ``factor`` times the transactions, or arrivals ``factor`` times as
        fast."""
        wl = case.workload
        if isinstance(wl, BlockWorkload):
            return {"workload.n_transactions": max(1, round(wl.n_transactions * factor))}
        return {"workload.rate_per_s": wl.rate_per_s * factor}

    def work(self, case: Case) -> Work:
        wl = case.workload
        items = wl.n_transactions * wl.distribution.mean
        # with the client's CPU, every goroutine's run can be an event
        per = 8.0 if case.go.enabled else 4.0
        events = per * items + per * wl.n_transactions
        memory = 160.0 * items + 80.0 * wl.n_transactions
        driver = "workload.n_transactions"
        value: object = wl.n_transactions
        if items > 10 * wl.n_transactions:
            driver, value = "workload.inputs_per_tx", wl.inputs_per_tx
        return Work(events=events, memory_bytes=memory, driver=driver, value=value)


ENGINE = register(BatchingEngine())


def replicate(case: Case, replications: int = 1, seed: int = 0) -> list[BatchRun]:
    """``replications`` independent runs of ``case`` (replication ``r`` runs with
    ``replication_seed(seed, r)``, recorded in ``run.seed``)."""
    from ..core.streams import replication_seed

    check_int("replicate", "replications", replications, minimum=1)
    runs = []
    for r in range(replications):
        run = simulate(case, replication_seed(seed, r))
        run.replication = r
        runs.append(run)
    return runs
