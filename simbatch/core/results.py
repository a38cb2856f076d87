"""Results of every engine: a summary per case, and the tidy tables built from them.

Across replications, an engine's pooled metrics (latency percentiles and maxima, taken on
the pooled records of all runs: the distribution users compare with a measured one) stand
for the case; every other metric is the mean of the per-run values. ``ci95`` gives the
half-width of a 95 % Student-t interval of the per-run values (0 with one run), so the spread
between runs is reported, not hidden.

The two tidy tables (:func:`cases_table`, :func:`runs_table`) have one row per case and one
per replication, with the scenario, the case's label, every parameter the scenario set as a
column (named by :func:`param_columns`), every metric, its interval (``<metric>_ci95``) and,
where the scenario publishes a figure, ``<metric>_published``, ``<metric>_error`` (relative)
and ``<metric>_within`` (inside the scenario's tolerance).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .engine import Engine, Run


def ci95_half_width(values: np.ndarray) -> float:
    """Half-width of the 95 % Student-t interval of the mean of ``values``.

    >>> ci95_half_width(np.array([1.0, 1.0, 1.0]))
    0.0
    """
    values = np.asarray(values, dtype=float)
    n = len(values)
    if n < 2 or not np.isfinite(values).all():
        return 0.0
    spread = float(np.std(values, ddof=1))
    if spread <= 1e-12 * max(1.0, float(np.abs(values).max())):
        return 0.0                     # the same value every run, up to rounding
    return float(stats.t.ppf(0.975, n - 1) * spread / np.sqrt(n))


@dataclass
class Summary:
    """Metrics of one case over its replications.

    ``metrics``: pooled latency percentiles, the mean of the per-run values otherwise.
    ``ci95``: half-width of the 95 % interval of the per-run values, per metric.
    ``runs``: one row per replication (``replication``, its own ``seed``, each metric).
    ``params``: the case's parameters as the scenario set them.
    """

    name: str
    metrics: dict[str, float]
    ci95: dict[str, float]
    runs: pd.DataFrame
    params: dict[str, Any] = field(default_factory=dict)
    published: dict[str, float] = field(default_factory=dict)
    samples: np.ndarray | None = None     # pooled latency samples (s), for CDF plots


@dataclass
class RunRecord:
    """What a summary needs of one run: its metrics and its pool (see
    :meth:`simbatch.core.engine.Engine.pool`); small enough to ship from a worker."""

    replication: int
    seed: int
    metrics: dict[str, float]
    pool: dict[str, np.ndarray]


def record(engine: Engine, run: Run) -> RunRecord:
    return RunRecord(run.replication, run.seed, engine.run_metrics(run), engine.pool(run))


def summarize(engine: Engine, name: str, runs: Sequence[Run | RunRecord],
              params: Mapping[str, Any] | None = None) -> Summary:
    """The :class:`Summary` of the runs (or run records) of one case."""
    records = [r if isinstance(r, RunRecord) else record(engine, r) for r in runs]
    rows = [{"replication": r.replication, "seed": r.seed, **r.metrics} for r in records]
    per_run = pd.DataFrame(rows)
    names = [c for c in per_run.columns if c not in ("replication", "seed")]
    metrics = {c: float(per_run[c].mean()) for c in names}
    pools = [r.pool for r in records]
    metrics.update(engine.pooled_metrics(pools))
    ci = {c: ci95_half_width(per_run[c].to_numpy()) for c in names}
    latency = [p["latency"] for p in pools if "latency" in p]
    return Summary(name=name, metrics=metrics, ci95=ci, runs=per_run,
                   params=dict(params or {}),
                   samples=np.concatenate(latency) if latency else None)


def param_columns(keys: Sequence[str]) -> dict[str, str]:
    """Column name of each dotted parameter key: its last name, or the whole key where two
    keys share a last name.

    >>> param_columns(["outer.linger_ms", "producer.linger_ms", "producer.n_partitions"])
    {'outer.linger_ms': 'outer.linger_ms', 'producer.linger_ms': 'producer.linger_ms', \
'producer.n_partitions': 'n_partitions'}
    """
    last = [k.rsplit(".", 1)[-1] for k in keys]
    return {k: (short if last.count(short) == 1 else k) for k, short in zip(keys, last)}


def _param_keys(summaries: Sequence[Summary]) -> list[str]:
    keys: dict[str, None] = {}
    for s in summaries:
        keys.update(dict.fromkeys(s.params))
    return list(keys)


def _cell(value: Any) -> Any:
    if isinstance(value, (list, tuple, dict)):
        return str(value)
    return value


def cases_table(summaries: Sequence[Summary], *, scenario: str = "",
                allowed: Any = None) -> pd.DataFrame:
    """One row per case (see the module docstring). ``allowed(published)`` gives the
    tolerance of a published figure, for the ``_within`` column."""
    columns = param_columns(_param_keys(summaries))
    rows = []
    for s in summaries:
        row: dict[str, Any] = {"scenario": scenario, "case": s.name,
                               "replications": len(s.runs)}
        row.update({col: _cell(s.params.get(key)) for key, col in columns.items()})
        for metric, value in s.metrics.items():
            row[metric] = value
            row[f"{metric}_ci95"] = s.ci95.get(metric, 0.0)
        for metric, figure in s.published.items():
            predicted = s.metrics[metric]
            row[f"{metric}_published"] = figure
            row[f"{metric}_error"] = (predicted - figure) / figure if figure else math.nan
            if allowed is not None:
                row[f"{metric}_within"] = bool(abs(predicted - figure) <= allowed(figure))
        rows.append(row)
    return pd.DataFrame(rows)


def runs_table(summaries: Sequence[Summary], *, scenario: str = "") -> pd.DataFrame:
    """One row per replication of every case, with the case's parameters as columns."""
    columns = param_columns(_param_keys(summaries))
    frames = []
    for s in summaries:
        frame = s.runs.copy()
        for key, col in reversed(list(columns.items())):
            frame.insert(0, col, _cell(s.params.get(key)))
        frame.insert(0, "case", s.name)
        frame.insert(0, "scenario", scenario)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
