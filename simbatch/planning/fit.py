"""Fit the batch-call service model to measured latencies (scipy), and write a models/ file.

Input: raw per-call samples in the long format of the recorded Aerospike 8.1 loopback data
(columns ``op, batch_size, concurrency, latency_s``): ``batch_read`` calls of 1 to 4096 keys
and single-record ``get`` calls, by client concurrency.

What is fitted, and on which cells (:func:`fit_service`):

* ``fixed_us``, ``per_record_us``: ``median(n) = fixed + per_record * n`` over the
  concurrency-1 ``batch_read`` cells with ``n <= max_size`` (default 2000), by
  ``scipy.optimize.least_squares`` on relative residuals (every size counts alike). Above
  2000 keys the Python client's garbage collector adds pauses that grow faster than linearly
  (the data's README, caveat 3); they are reported, not fitted.
* ``single_record_us``: the median of concurrency-1 ``get`` (the single-record path).
* ``noise``: empirical, the 100 half-percentile points of latency / cell median pooled over
  the fitted concurrency-1 cells: the measured shape of the tail, size-independent as the
  data shows (p90 / median 1.05 to 1.13 at every size).
* ``max_in_flight``: calls served at once when clients run concurrently. Chosen among 1..4 by
  simulating each measured (size, concurrency >= 2) cell as a closed loop in the engine and
  minimising the mean absolute log error of the medians.

:func:`check_fit` returns predicted beside measured median, p90 and p99 for every cell.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from ..batching import BatcherConfig, BlockWorkload, Case, ServiceConfig, simulate
from ..core.errors import ConfigError

N_RATIO_POINTS = 100


@dataclass(frozen=True)
class ServiceFit:
    config: ServiceConfig
    max_size: int
    n_samples: int


COLUMNS = ("op", "batch_size", "concurrency", "latency_s")


def load_samples(path: str | Path) -> pd.DataFrame:
    """Raw samples from a CSV with the columns ``op, batch_size, concurrency, latency_s``."""
    try:
        df = pd.read_csv(path)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ConfigError.parameter("fit-service", "samples", "a readable CSV file",
                                    f"{path} ({exc})") from None
    missing = sorted(set(COLUMNS) - set(df.columns))
    if missing:
        raise ConfigError.parameter("fit-service", "samples", "a CSV with the columns "
                                    + ", ".join(COLUMNS), f"{path} without {missing}")
    return df


def _linear_median(c1: pd.DataFrame) -> tuple[float, float]:
    med = c1.groupby("batch_size").latency_s.median()
    n, y = med.index.to_numpy(float), med.to_numpy() * 1e6
    res = least_squares(lambda p: (p[0] + p[1] * n) / y - 1.0, x0=[50.0, 3.0],
                        bounds=([0.0, 0.0], [np.inf, np.inf]))
    return float(res.x[0]), float(res.x[1])


def _ratios(c1: pd.DataFrame) -> tuple[float, ...]:
    med = c1.groupby("batch_size").latency_s.transform("median")
    ratio = (c1.latency_s / med).to_numpy()
    q = (np.arange(N_RATIO_POINTS) + 0.5) / N_RATIO_POINTS
    return tuple(round(float(x), 5) for x in np.quantile(ratio, q))


def closed_loop_latencies(config: ServiceConfig, size: int, concurrency: int,
                          calls: int = 2000, seed: int = 0) -> np.ndarray:
    """Per-call latency of ``concurrency`` clients calling back to back with ``size`` keys:
    each call is one transaction of ``size`` inputs through a size-``size`` batcher."""
    case = Case(workload=BlockWorkload(n_transactions=calls, inputs_per_tx=size,
                                       fanout="errgroup", cap=concurrency),
                batcher=BatcherConfig(size=size, timeout_ms=1e6, dispatch="background"),
                service=config)
    txns = simulate(case, seed).frames()["txns"]
    return txns.latency_s.to_numpy()


def fit_service(df: pd.DataFrame, *, max_size: int = 2000, calls: int = 400) -> ServiceFit:
    """Fit :class:`ServiceConfig` to measured samples (see the module docstring)."""
    c1 = df[(df.op == "batch_read") & (df.concurrency == 1) & (df.batch_size <= max_size)]
    fixed, per = _linear_median(c1)
    get1 = df[(df.op == "get") & (df.concurrency == 1)]
    single = float(get1.latency_s.median() * 1e6) if len(get1) else None
    base = ServiceConfig(fixed_us=round(fixed, 3), per_record_us=round(per, 4),
                         noise="empirical", ratios=_ratios(c1),
                         single_record_us=None if single is None else round(single, 3))
    conc = df[(df.op == "batch_read") & (df.concurrency > 1) & (df.batch_size <= max_size)]
    measured = conc.groupby(["batch_size", "concurrency"]).latency_s.median()
    best, best_err = base, math.inf
    for k in (1, 2, 3, 4):
        cfg = replace(base, max_in_flight=k)
        errs = [abs(math.log(np.median(closed_loop_latencies(cfg, int(n), int(c), calls=calls))
                             / med)) for (n, c), med in measured.items()]
        err = float(np.mean(errs)) if errs else 0.0
        if err < best_err:
            best, best_err = cfg, err
    return ServiceFit(config=best, max_size=max_size, n_samples=len(c1))


def check_fit(df: pd.DataFrame, config: ServiceConfig, calls: int = 2000) -> pd.DataFrame:
    """Predicted beside measured median / p90 / p99 for every batch_read cell."""
    rows = []
    cells = df[df.op == "batch_read"].groupby(["batch_size", "concurrency"]).latency_s
    for (n, c), lat in cells:
        pred = closed_loop_latencies(config, int(n), int(c), calls=calls)
        row: dict[str, float] = {"batch_size": int(n), "concurrency": int(c)}
        for name, q in (("median", 0.5), ("p90", 0.9), ("p99", 0.99)):
            row[f"measured_{name}_s"] = float(lat.quantile(q))
            row[f"predicted_{name}_s"] = float(np.quantile(pred, q))
            row[f"error_{name}"] = row[f"predicted_{name}_s"] / row[f"measured_{name}_s"] - 1
        rows.append(row)
    return pd.DataFrame(rows)


def fit_quality(table: pd.DataFrame, max_size: int) -> dict[str, float]:
    """Worst relative errors by region of the (size, concurrency) grid, from check_fit."""
    fitted = table[table.batch_size <= max_size]
    c1, conc = fitted[fitted.concurrency == 1], fitted[fitted.concurrency > 1]
    small = conc[(conc.batch_size >= 2) & (conc.batch_size <= 200)]
    return {
        "c1_median_max_abs_error": float(c1.error_median.abs().max()),
        "c1_p90_max_abs_error": float(c1.error_p90.abs().max()),
        "c1_p99_max_abs_error": float(c1.error_p99.abs().max()),
        "conc_small_median_max_abs_error": float(small.error_median.abs().max()),
        "conc_all_median_max_abs_error": float(conc.error_median.abs().max()),
        "conc_all_p99_max_abs_error": float(conc.error_p99.abs().max()),
    }


def model_toml(fit: ServiceFit, provenance: dict[str, str],
               quality: dict[str, float] | None = None) -> str:
    """The models/ file text: provenance, fit quality, then the ``[service]`` table."""
    cfg = fit.config
    lines = ["# Calibrated service model; written by simbatch.fit. Do not edit by hand:",
             "# re-run the command in [provenance].command.", "", "[provenance]"]
    lines += [f'{k} = "{v}"' for k, v in provenance.items()]
    lines += [f'fitted_on = "{_dt.date.today().isoformat()}"',
              f"samples_in_c1_fit = {fit.n_samples}", f"max_size_fitted = {fit.max_size}", ""]
    if quality:
        lines += ["# Worst |predicted / measured - 1| by region (c = client concurrency;",
                  "# 'small' = 2 to 200 keys). The model's FIFO permit queue is more orderly",
                  "# than 2 shared vCPUs, so tails at c >= 2 come out too narrow.",
                  "[fit_quality]"]
        lines += [f"{k} = {v:.3f}" for k, v in quality.items()] + [""]
    lines += ["[service]", f"fixed_us = {cfg.fixed_us}", f"per_record_us = {cfg.per_record_us}",
              f"single_record_us = {cfg.single_record_us}", f"max_in_flight = {cfg.max_in_flight}",
              'noise = "empirical"',
              "ratios = [" + ", ".join(f"{r:g}" for r in cfg.ratios) + "]", ""]
    return "\n".join(lines)
