"""Judge a fitted batch-call service model against the samples it was fitted on: per cell and
per region, what was measured, what the model predicts and what is allowed.

Every ``batch_read`` cell (batch size, concurrency) is simulated as the harness ran it
(:func:`simbatch.batching.closedloop.closed_loop`) with the engine's service model. Regions
and tolerances (issue 15; the same for every data set and for the live calibration):

* ``c1_median``, ``c1_p90``, ``c1_p99``: concurrency 1, every size up to ``MAX_SIZE``:
  within 15 %, 25 % and 50 %. A cell's **fast-level share is an input** of its prediction,
  measured on the cell (:func:`fast_share`: calls below the geometric midpoint of the fast
  and slow levels, for cells of at most 20 keys), not a fitted parameter: which regime a
  thread runs in was not a function of size and concurrency. The cell is predicted as that
  share of calls in the fast regime and the rest in the slow one, which is what a regime
  that persists gives a cell's quantiles;
* ``conc_median``: concurrency >= 2, 2 to 200 keys: medians within 30 % (slow regime: the
  fast level is rare from two keys on, <= 3 % of calls);
* ``conc_one_key``: concurrency >= 2, one key: the measured median between the fast- and the
  slow-regime predictions, 30 % either side. At concurrency >= 2 contention blurs the two
  levels, so the share cannot be measured on the cell; the loopback set's one-key cell ran
  91 % fast at concurrency 2, the live set's 11 %.

Cells above ``MAX_SIZE`` keys and concurrent cells above 200 keys are reported, not judged
(the client's GC pauses, not modelled). Simulated calls: ``calls`` at concurrency 1 (a p99
needs them), ``conc_calls`` at 2 or more, where only the median is judged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from ..batching import ServiceConfig
from ..batching.closedloop import closed_loop
from ..batching.servicecost import RegimeConfig
from .fit import CONC_FIT_SIZES, LEVEL_MAX_SIZE, MAX_SIZE, ServiceFit, fit_service

TOLERANCE = {"c1_median": 0.15, "c1_p90": 0.25, "c1_p99": 0.50, "conc_median": 0.30,
             "conc_one_key": 0.30}
QUANTILES = {"median": 0.5, "p90": 0.9, "p99": 0.99}


def fast_share(config: ServiceConfig, n: int, latency_s: np.ndarray) -> float:
    """Share of a cell's calls at the fast level: below the geometric midpoint of the fast
    and slow levels' concurrency-1 medians (0 above 20 keys or without a fast level).

    >>> from simbatch.batching.servicecost import RegimeConfig
    >>> cfg = ServiceConfig(fixed_us=90, per_record_us=4.6,
    ...                     regime=RegimeConfig(fast_fixed_us=12))
    >>> fast_share(cfg, 1, np.array([17e-6, 18e-6, 95e-6, 97e-6]))
    0.5
    """
    fast_us = config.regime.fast_fixed_us
    if fast_us is None or n > LEVEL_MAX_SIZE:
        return 0.0
    cut = np.sqrt((config.fixed_us + config.per_record_us * n)
                  * (fast_us + config.per_record_us * n))
    return float((np.asarray(latency_s) * 1e6 < cut).mean())


def _in_regime(config: ServiceConfig, fast: bool) -> ServiceConfig:
    share = 1.0 if fast else 0.0
    return replace(config, regime=RegimeConfig(fast_fixed_us=config.regime.fast_fixed_us,
                                               fast_share=share))


def _judged(n: int, c: int, max_size: int) -> str:
    if c == 1:
        return "c1" if n <= max_size else ""
    if n == 1:
        return "conc_one_key"
    lo, hi = CONC_FIT_SIZES
    return "conc_median" if lo <= n <= hi else ""


def predict(config: ServiceConfig, df: pd.DataFrame, *, calls: int = 2000,
            conc_calls: int = 1000, seed: int = 1, max_size: int = MAX_SIZE
            ) -> pd.DataFrame:
    """Measured beside predicted median / p90 / p99 for every ``batch_read`` cell, with the
    fast-level share each concurrency-1 cell was predicted with, the region it is judged in
    (``""``: reported, not judged) and, for one-key concurrent cells, the fast-regime
    median."""
    slow_cfg = _in_regime(config, False)
    fast_cfg = _in_regime(config, True) if config.regime.fast_fixed_us is not None else None
    rows = []
    reads = df[df.op == "batch_read"]
    for (n, c), g in reads.groupby(["batch_size", "concurrency"]):
        n, c = int(n), int(c)
        lat = g.latency_s.to_numpy()
        k = calls if c == 1 else conc_calls
        pred = closed_loop(slow_cfg, n, c, calls=k, seed=seed)
        share = fast_share(config, n, lat) if c == 1 else 0.0
        if share > 0 and fast_cfg is not None:
            fast = closed_loop(fast_cfg, n, c, calls=k, seed=seed + 1)
            m = int(round(share * len(pred)))
            pred = np.r_[fast[:m], pred[m:]]
        row: dict[str, object] = {"batch_size": n, "concurrency": c,
                                  "region": _judged(n, c, max_size), "fast_share": share}
        for name, q in QUANTILES.items():
            row[f"measured_{name}_s"] = float(np.quantile(lat, q))
            row[f"predicted_{name}_s"] = float(np.quantile(pred, q))
        if n == 1 and c > 1 and fast_cfg is not None:
            row["fast_median_s"] = float(np.median(
                closed_loop(fast_cfg, n, c, calls=k, seed=seed + 2)))
        rows.append(row)
    table = pd.DataFrame(rows)
    if "fast_median_s" not in table:
        table["fast_median_s"] = np.nan
    for name in QUANTILES:
        table[f"error_{name}"] = table[f"predicted_{name}_s"] / table[f"measured_{name}_s"] - 1
    return _allowed(table)


def _allowed(table: pd.DataFrame) -> pd.DataFrame:
    """Per cell: what is allowed for each statistic, and whether it holds."""
    t = table.copy()
    for name in QUANTILES:
        t[f"allowed_{name}"] = np.where(t.region == "c1", TOLERANCE[f"c1_{name}"], np.nan)
    conc = t.region == "conc_median"
    t.loc[conc, "allowed_median"] = TOLERANCE["conc_median"]
    one = t.region == "conc_one_key"
    tol = TOLERANCE["conc_one_key"]
    low = t.fast_median_s.fillna(t.predicted_median_s) * (1 - tol)
    high = t.predicted_median_s * (1 + tol)
    t["ok"] = True
    for name in QUANTILES:
        judged = t[f"allowed_{name}"].notna()
        t.loc[judged, "ok"] &= t.loc[judged, f"error_{name}"].abs() <= t.loc[
            judged, f"allowed_{name}"]
    t.loc[one, "allowed_median"] = tol
    t.loc[one, "ok"] = (t.measured_median_s >= low) & (t.measured_median_s <= high)
    return t


def judge(table: pd.DataFrame) -> pd.DataFrame:
    """One row per region: cells judged, the worst cell (measured, predicted, error),
    what is allowed, and whether every cell holds."""
    rows = []
    for name, tol in TOLERANCE.items():
        if name == "conc_one_key":
            cells = table[table.region == name]
            if cells.empty:
                continue
            low = cells.fast_median_s.fillna(cells.predicted_median_s) * (1 - tol)
            high = cells.predicted_median_s * (1 + tol)
            # how far outside the band, relative to the band's edge (0 inside it)
            out = np.maximum(low / cells.measured_median_s - 1,
                             cells.measured_median_s / high - 1).clip(lower=0)
            worst = cells.loc[out.idxmax()]
            row = _row(name, cells, worst, "median", float(out.max()), tol,
                       f"{low[worst.name] * 1e6:.0f}-{high[worst.name] * 1e6:.0f} us",
                       bool((out == 0).all()))
            row["predicted_fast_us"] = round(float(worst.fast_median_s) * 1e6, 1)
            rows.append(row)
            continue
        stat = name.split("_")[1]
        cells = table[table.region == ("c1" if name.startswith("c1") else name)]
        if cells.empty:
            continue
        err = cells[f"error_{stat}"]
        worst = cells.loc[err.abs().idxmax()]
        rows.append(_row(name, cells, worst, stat, float(worst[f"error_{stat}"]), tol,
                         f"within {tol:.0%}", bool((err.abs() <= tol).all())))
    return pd.DataFrame(rows)


def _row(name: str, cells: pd.DataFrame, worst: pd.Series, stat: str, error: float,
         tol: float, allowed: str, ok: bool) -> dict[str, object]:
    return {"region": name, "cells": int(len(cells)),
            "worst_cell": f"{int(worst.batch_size)} keys, c={int(worst.concurrency)}",
            "measured_us": round(float(worst[f"measured_{stat}_s"]) * 1e6, 1),
            "predicted_us": round(float(worst[f"predicted_{stat}_s"]) * 1e6, 1),
            "error": round(error, 4), "allowed": allowed, "tolerance": tol, "ok": ok}


def within_tolerance(verdict: pd.DataFrame) -> bool:
    """Every judged region holds (and there is at least one)."""
    return bool(len(verdict)) and bool(verdict.ok.all())


def cells_md(table: pd.DataFrame) -> str:
    """Per cell, a Markdown table: measured and predicted median / p90 / p99 (us), the
    errors, what is allowed, the verdict."""
    lines = ["| keys | c | fast share | measured med / p90 / p99 us | predicted | error | "
             "allowed | ok |", "|---:|---:|---:|---|---|---|---|---|"]
    for r in table.sort_values(["concurrency", "batch_size"]).itertuples():
        def trio(side: str, r=r) -> str:
            return " / ".join(f"{getattr(r, f'{side}_{q}_s') * 1e6:.0f}" for q in QUANTILES)
        err = " / ".join(f"{getattr(r, f'error_{q}'):+.0%}" for q in QUANTILES)
        if r.region == "c1":
            allowed = " / ".join(f"{getattr(r, f'allowed_{q}'):.0%}" for q in QUANTILES)
        elif r.region == "conc_median":
            allowed = f"median {r.allowed_median:.0%}"
        elif r.region == "conc_one_key":
            fast = r.predicted_median_s if np.isnan(r.fast_median_s) else r.fast_median_s
            allowed = (f"median in {fast * 0.7e6:.0f}-"
                       f"{r.predicted_median_s * 1.3e6:.0f}")
        else:
            allowed = "not judged"
        verdict = ("yes" if r.ok else "NO") if r.region else ""
        lines.append(f"| {r.batch_size} | {r.concurrency} | {r.fast_share:.2f} | "
                     f"{trio('measured')} | {trio('predicted')} | {err} | {allowed} | "
                     f"{verdict} |")
    return "\n".join(lines)


def regions_md(verdict: pd.DataFrame) -> str:
    """Per region: the worst cell's measured, predicted and error beside what is allowed
    (for one-key concurrent cells: the fast- and slow-regime predictions, and how far
    outside the band allowed around them the measurement is)."""
    lines = []
    for r in verdict.to_dict("records"):
        if r["region"] == "conc_one_key":
            predicted = (f"fast {r['predicted_fast_us']:g} / slow {r['predicted_us']:g} us, "
                         f"outside the band by {r['error']:.0%}")
        else:
            predicted = f"{r['predicted_us']:g} us, error {r['error']:+.0%}"
        lines.append(f"{r['region']}: worst {r['worst_cell']}: measured {r['measured_us']:g} "
                     f"us, predicted {predicted}, allowed {r['allowed']}: "
                     f"{'yes' if r['ok'] else 'NO'} ({r['cells']} cells)")
    return "\n".join(lines)


def quality(verdict: pd.DataFrame) -> dict[str, dict[str, object]]:
    """The verdict as the models/ file's ``[fit_quality.<region>]`` tables."""
    out: dict[str, dict[str, object]] = {}
    for r in verdict.to_dict("records"):
        row = {"worst_cell": r["worst_cell"], "measured_us": r["measured_us"],
               "predicted_us": r["predicted_us"], "error": r["error"],
               "allowed": r["tolerance"], "cells": r["cells"], "within": r["ok"]}
        if r["region"] == "conc_one_key":
            row["predicted_fast_us"] = r["predicted_fast_us"]
        out[r["region"]] = row
    return out


# ---------------------------------------------------------------------- fit, judge, write
@dataclass(frozen=True)
class Calibration:
    """A fit, its per-cell table and per-region verdict."""

    fit: ServiceFit
    table: pd.DataFrame
    verdict: pd.DataFrame

    @property
    def ok(self) -> bool:
        return within_tolerance(self.verdict)


def calibrate(df: pd.DataFrame, *, cores: int = 2, fit_calls: int = 300, calls: int = 2000,
              conc_calls: int = 1000, seed: int = 1) -> Calibration:
    """Fit the service model to ``df`` (:func:`~simbatch.planning.fit.fit_service`), then
    predict and judge every cell (:func:`predict`, :func:`judge`)."""
    fit = fit_service(df, cores=cores, calls=fit_calls)
    table = predict(fit.config, df, calls=calls, conc_calls=conc_calls, seed=seed,
                    max_size=fit.max_size)
    return Calibration(fit=fit, table=table, verdict=judge(table))


def write_model(out: Path, text: str, *, ok: bool, force: bool) -> Path | None:
    """Write a models/ file by the one rule: an existing file is never replaced without
    ``force``; a model out of tolerance is written only with ``force``, and never over an
    existing file: beside it, as ``<name>-out-of-tolerance.toml``. Returns where it was
    written (``None``: not written). Raises :class:`FileExistsError` when ``out`` exists
    and ``force`` is not given (check before fitting: :func:`refuse_existing`)."""
    refuse_existing(out, force)
    if not ok and not force:
        return None
    target = out if ok or not out.exists() else out.with_name(
        f"{out.stem}-out-of-tolerance{out.suffix}")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(target)
    return target


def refuse_existing(out: Path, force: bool) -> None:
    """Raise :class:`FileExistsError` if ``out`` exists and ``force`` is not given."""
    if out.exists() and not force:
        raise FileExistsError(f"{out} exists; pass --force to replace it, or --out to write "
                              "elsewhere")
