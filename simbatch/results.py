"""Metrics of runs: per run, pooled over replications, and confidence intervals.

Metric names carry their unit and are stable across releases (they are the keys of the CLI's
``--json`` output):

``block_time_s``
    first Put to last completion; for a block workload, the time per block.
``throughput_items_per_s``
    items / ``block_time_s``.
``item_latency_{mean,p50,p90,p99,max}_s`` and ``txn_latency_{...}_s``
    Put to done per item; first Put to last input done per transaction.
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

Across replications: latency percentiles and maxima are taken on the **pooled** items of all
runs (the distribution users compare with a measured one); every other metric is the mean of
the per-run values. ``ci95`` gives the half-width of a 95 % Student-t interval of the per-run
values (0 with one run), so the spread between runs is reported, not hidden.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from .batcher import TRIGGERS

QUANTILES = {"p50": 0.50, "p90": 0.90, "p99": 0.99}


def _latency(values: np.ndarray, prefix: str) -> dict[str, float]:
    out = {f"{prefix}_mean_s": float(values.mean()) if values.size else float("nan")}
    for name, q in QUANTILES.items():
        out[f"{prefix}_{name}_s"] = float(np.quantile(values, q)) if values.size else float("nan")
    out[f"{prefix}_max_s"] = float(values.max()) if values.size else float("nan")
    return out


def _arrays(run) -> dict[str, np.ndarray]:
    rec = run.recorder
    batch_of = np.frombuffer(rec.item_batch, np.int64)
    flush = np.frombuffer(rec.batch_flush)[batch_of]
    start = np.frombuffer(rec.batch_start)[batch_of]
    done = np.frombuffer(rec.batch_done_at)[batch_of]
    put = np.frombuffer(rec.item_put)
    enq = np.frombuffer(rec.item_enq)
    return {"put": put, "enq": enq, "flush": flush, "start": start, "done": done,
            "txn_latency": np.frombuffer(rec.txn_end) - np.frombuffer(rec.txn_start)}


def run_metrics(run) -> dict[str, float]:
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
    m["cores_busy"] = process * 1e-9 / run.end_s if run.end_s else 0.0
    for code, trig in enumerate(TRIGGERS):
        m[f"flush_share_{trig}"] = float((triggers == code).mean()) if sizes.size else 0.0
    return m


def _pooled_latency(runs) -> dict[str, float]:
    items = np.concatenate([_arrays(r)["done"] - _arrays(r)["put"] for r in runs])
    txns = np.concatenate([_arrays(r)["txn_latency"] for r in runs])
    return {**_latency(items, "item_latency"), **_latency(txns, "txn_latency")}


def ci95_half_width(values: np.ndarray) -> float:
    """Half-width of the 95 % Student-t interval of the mean of ``values``."""
    n = len(values)
    if n < 2:
        return 0.0
    return float(stats.t.ppf(0.975, n - 1) * np.std(values, ddof=1) / np.sqrt(n))


@dataclass
class Summary:
    """Metrics of one case over its replications.

    ``metrics``: pooled latency percentiles, mean of the per-run values otherwise.
    ``ci95``: half-width of the 95 % interval of the per-run values, per metric.
    ``runs``: one row per replication (a DataFrame with ``replication`` and ``seed``).
    """

    name: str
    metrics: dict[str, float]
    ci95: dict[str, float]
    runs: pd.DataFrame
    published: dict[str, dict[str, float]] = field(default_factory=dict)
    samples: np.ndarray | None = None  # pooled latency samples (s), for CDF plots


def summary_from_runs(name: str, rows: list[dict], pooled: dict[str, float] | None = None,
                      samples: np.ndarray | None = None) -> Summary:
    """One row of metrics per replication (with ``replication`` and ``seed``) -> a Summary:
    the mean of each metric, its 95 % half-width, and ``pooled`` metrics overriding means."""
    per_run = pd.DataFrame(rows)
    names = [c for c in per_run.columns if c not in ("replication", "seed")]
    metrics = {c: float(per_run[c].mean()) for c in names}
    metrics.update(pooled or {})
    ci = {c: ci95_half_width(per_run[c].to_numpy()) for c in names}
    return Summary(name=name, metrics=metrics, ci95=ci, runs=per_run, samples=samples)


def summarize(name: str, runs: list) -> Summary:
    rows = [{"replication": r.replication, "seed": r.seed, **run_metrics(r)} for r in runs]
    samples = np.concatenate([_arrays(r)["done"] - _arrays(r)["put"] for r in runs])
    return summary_from_runs(name, rows, _pooled_latency(runs), samples)
