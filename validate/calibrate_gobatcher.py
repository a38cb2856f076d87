"""Calibrate the batcher engine's client CPU against the real go-batcher, and judge it.

The harness ``validate/gobatcher`` drives go-batcher v1.1.0 and v2.0.6 with table R1's method
(a block of N transactions x 3 inputs, each transaction Puts its inputs and waits; a flush
that sleeps or spins for 500 us) over a grid of cells, and writes one row per block
(``blocks.csv``), the CPU-availability probes it ran between blocks (``probes.csv``) and,
with ``-costs``, the Go runtime's operation costs (a models/ file). This script:

1. builds the host the run saw: the sleep and timer distributions of a ``-host`` file
   (``models/host-loopback.toml``), with the run's own probes for the other processes'
   stalls of the client's threads and idle processors' wake-ups (``host_from_probes``), and
   for each cell at GOMAXPROCS 2 how long the kernel ran the client's two threads on one
   CPU, from its blocks' measured run-queue wait (``packed_host``; ``--packing off``
   leaves it out); how much the same CPU work varies from run to run (``[host]
   cpu_noise_ns``) is the host file's, or with ``--fit-noise`` fitted on the run's
   GOMAXPROCS 1 drain blocks of one flush per transaction, whose flush starts are one cycle
   apart (``fit_cpu_noise``); the spread of its spin flushes is printed beside the model's
   (predicted, not fitted);
2. takes the Go runtime's costs from a ``-costs`` file (micro-benchmarks) and, with
   ``--profile DIR...``, measures the rest from the harness's CPU profiles of some cells
   (``costs_from_profile``, ``PROFILED``): the worker's side of each flush and its
   ``select``, blocking or not (``dispatch_ns``, ``select_ns``, ``select_ready_ns``), the
   flush goroutine's per flush and per item (``flush_ns``, ``done_ns``), a transaction's
   (``put_ns``), the driver's spawn (``spawn_ns``) and the scheduler's CPU per context
   switch (``switch_ns``), each goroutine's CPU in the profile less what the model charges
   it apart. No block time tells these apart -- at GOMAXPROCS 1 one processor runs
   every goroutine -- and at GOMAXPROCS 2 the split decides whether the worker keeps up with
   two processors' transactions. Nothing is then left to fit, and every cell of every run
   is a prediction (the shipped ``models/gobatcher-loopback.toml``). ``--fit`` fits those of
   ``FIT_COSTS`` not measured on a stated subset of cells (``is_fit_cell``), Nelder-Mead on
   their block times: the way the costs were found before the profile (and the way for a
   machine without ``go tool pprof``). Why those cells: at
   GOMAXPROCS 1 with a sleep flush and drain off, the block time of a large block
   (N = 1000 and 2856 at cap = all or 256) is the CPU of spawning N goroutines, 3N Puts
   and receives and the flushes' dispatch and completions, plus one or two sleeps, with no
   second processor, no neighbours' stalls (the processor is mostly idle in the sleeps
   and its CPU bursts are short) and no drain-mode scheduling race in the way. Everything
   else -- every drain cell, every spin cell, GOMAXPROCS 2, the timer-bound cells, both
   versions' other fan-outs -- is predicted;
3. scales every cost by the host's CPU against the machine the costs were measured on
   (``--cpu-scale fit``, the default; ``fit_cpu_scale``): one factor, fitted on the judged
   run's GOMAXPROCS 1 drain cycle cells (``is_cycle_cell``: one transaction's cycle, all
   CPU, on one processor), which are then not judged. Why: the same harness on two VMs of
   the same kind but another CPU family read that cycle 1.4x apart, and the shipped costs
   were measured on a third;
4. simulates every cell (as many runs as the harness measured blocks, up to ``--reps``)
   and prints measured beside predicted per cell: block time median and p90, flush count
   min / median / max, and for drain mode at cap = all, N <= 64, how often a block was made
   of a few flushes or of about one per transaction;
5. judges the predictions by the issue's figures (``judge``): the median block time within
   15 % on >= 90 % of the cells not used for fitting and none beyond 1.5x; the composition
   shares within 20 points; the GOMAXPROCS 1 : 2 ratio of block times within 15 %;
6. with ``--repeat``, judges other measured runs of the same grid against the judged one by
   the same figures (``compare_runs``: the real go-batcher against itself, how close any
   model can come to one run), and the model's medians against the range of all the runs'
   medians (``beyond_range``).

The pieces, a module each: a run read back and its cells as the engine's cases
(validate/gobatcher_runs.py); the host the run saw and the costs' scale to its CPU
(validate/gobatcher_host.py); the costs measured from CPU profiles
(validate/gobatcher_profile.py). This module fits, predicts, compares, judges and reports,
and writes the ``[go]`` model.

Usage::

    python -m validate.calibrate_gobatcher --run validate/gobatcher/data/full3 \\
        --costs models/gobatcher-costs-loopback.toml --profile validate/gobatcher/data/dispatch \\
        validate/gobatcher/data/profile-timer --out models/gobatcher-loopback.toml
    python -m validate.calibrate_gobatcher --run DIR --go models/gobatcher-loopback.toml
    python -m validate.calibrate_gobatcher --run DIR --go MODEL --repeat DIR2 DIR3

``validate/test_gobatcher.py`` runs the harness's small grid in the test job itself and judges
the shipped model against it.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simbatch.batching.engine import simulate
from simbatch.batching.gocpu import COSTS, GoConfig
from simbatch.batching.hosttiming import HostConfig
from simbatch.core.streams import replication_seed
from validate.gobatcher_host import (
    CpuScale,
    fit_cpu_noise,
    fit_cpu_scale,
    host_from_probes,
    model_spreads,
    packed_host,
    scaled,
)
from validate.gobatcher_profile import costs_from_profile
from validate.gobatcher_runs import (
    HARNESS,
    ROOT,
    _shown,
    case_for,
    cells_of,
    fitted_cells_of,
    go_from_file,
    load_run,
)

FIT_COSTS = ("spawn_ns", "switch_ns", "cold_ns", "put_ns", "flush_ns")
"""The costs ``--fit`` fits on harness cells where ``--profile`` has not measured them; every
other cost is the micro-benchmark's."""
TOLERANCE, WORST, SHARE_POINTS, RATIO_TOLERANCE = 0.15, 1.5, 0.20, 0.15


@dataclasses.dataclass
class Prediction:
    block_times: list[float]
    flushes: list[int]
    first_flushes: list[float]
    longest_flushes: list[float]
    cpu_s: list[float]


def predict(cell: Any, host: HostConfig, go: GoConfig, reps: int, seed: int = 1
            ) -> Prediction:
    runs = [simulate(case_for(cell, packed_host(cell, host, r), go), replication_seed(seed, r))
            for r in range(reps)]
    return Prediction([r.block_time_s for r in runs], [len(r.recorder.batch_size) for r in runs],
                      [min(r.recorder.batch_start) for r in runs],
                      [float(np.nanmax(np.frombuffer(r.recorder.batch_done_at)
                              - np.frombuffer(r.recorder.batch_start))) for r in runs],
                      [r.go_cpu_s for r in runs])


# ------------------------------------------------------------------ fitting
def is_fit_cell(cell: Any) -> bool:
    """The cells the costs are fitted on (see the module docstring)."""
    return (cell.flush == "sleep" and not bool(cell.drain) and cell.version == "v2.0.6"
            and int(cell.gomaxprocs) == 1 and int(cell.n_tx) >= 1000
            and str(cell.cap) in ("all", "256"))


def _log_error(cells: pd.DataFrame, host: HostConfig, go: GoConfig, reps: int) -> float:
    """Mean squared log error of the median block time and, where the run kept its
    flushes, of the first flush's start (at GOMAXPROCS 1 with size 100, the first size
    flush comes once the driver has spawned every goroutine: the spawn cost's own
    measurement)."""
    err = 0.0
    for cell in cells.itertuples():
        pred = predict(cell, host, go, reps)
        err += math.log(np.median(pred.block_times) / np.median(cell.block_times)) ** 2
        if cell.first_flush_s > 0 and int(cell.size) < 3 * int(cell.n_tx):
            err += math.log(max(np.median(pred.first_flushes), 1e-7)
                            / cell.first_flush_s) ** 2
    return err / max(1, len(cells))


def fit(cells: pd.DataFrame, host: HostConfig, go: GoConfig, reps: int = 1,
        evaluations: int = 200, names: tuple[str, ...] = FIT_COSTS
        ) -> tuple[GoConfig, dict[str, float]]:
    """Fit ``names`` (``FIT_COSTS``) on ``cells``: Nelder-Mead on the logarithms of the
    costs, from ``go``'s values, minimising the mean squared log error of the median block
    time (each evaluation simulates every fit cell with the same seeds)."""
    from scipy.optimize import minimize

    start = np.log([max(getattr(go, name), 200.0) for name in names])

    def trial(x: np.ndarray) -> GoConfig:
        return dataclasses.replace(go, **{n: float(np.exp(v)) for n, v in zip(names, x)})

    result = minimize(lambda x: _log_error(cells, host, trial(x), reps), start,
                      method="Nelder-Mead",
                      options={"maxfev": evaluations, "xatol": 0.02, "fatol": 1e-4,
                               "initial_simplex": np.vstack([start, start + np.eye(len(start))
                                                             * np.log(3.0)])})
    best = trial(result.x)
    return best, {name: getattr(best, name) for name in names}


# ------------------------------------------------------------------ comparing
def focus(cell: Any) -> bool:
    """Drain on, cap = all, N <= 64: the cells whose batch composition varies run to run."""
    return bool(cell.drain) and str(cell.cap) == "all" and int(cell.n_tx) <= 64


def few_flushes(flushes: Any, n_tx: Any) -> Any:
    """Whether a block of ``n_tx`` transactions made a few flushes (<= max(2, N/8)); arrays
    or scalars."""
    return np.asarray(flushes) <= np.maximum(2, np.asarray(n_tx) / 8)


def one_per_transaction(flushes: Any, n_tx: Any) -> Any:
    """Whether a block made about one flush per transaction (>= 0.9 N); arrays or scalars."""
    return np.asarray(flushes) >= 0.9 * np.asarray(n_tx)


def composition(flushes: list[int], n_tx: int) -> tuple[float, float]:
    """Shares of blocks made of a few flushes and of about one per transaction
    (:func:`few_flushes`, :func:`one_per_transaction`), the harness README's classes."""
    return (float(few_flushes(flushes, n_tx).mean()),
            float(one_per_transaction(flushes, n_tx).mean()))


def _row(cell: Any, block_times: list[float], flushes: list[int], longest: list[float],
         cpu_s: list[float], fitted: set[str]) -> dict[str, Any]:
    """One row of the measured-beside-predicted table: ``cell``'s measured blocks beside
    ``block_times``, ``flushes``, ``longest`` (each block's longest flush) and ``cpu_s``
    (each block's CPU) of the model's runs or of another measured run's blocks."""
    meas_bt, pred_bt = np.asarray(cell.block_times), np.asarray(block_times)
    row = {"cell": cell.cell, "gomaxprocs": int(cell.gomaxprocs), "flush": cell.flush,
           "drain": bool(cell.drain), "n_tx": int(cell.n_tx), "fit": cell.cell in fitted,
           "loadavg": cell.loadavg,
           "runq_wait_s": float(np.median(cell.runq_waits)) if cell.runq_waits else math.nan,
           "meas_p50_s": float(np.median(meas_bt)), "pred_p50_s": float(np.median(pred_bt)),
           "meas_p90_s": float(np.quantile(meas_bt, 0.9)),
           "pred_p90_s": float(np.quantile(pred_bt, 0.9)),
           "meas_flushes": (min(cell.flushes), float(np.median(cell.flushes)),
                            max(cell.flushes)),
           "pred_flushes": (min(flushes), float(np.median(flushes)), max(flushes)),
           "meas_stranded": _stranded(cell.longest_flushes),
           "pred_stranded": _stranded(longest),
           "meas_cpu_s": float(np.median(cell.cpu_s)) if len(cell.cpu_s) else math.nan,
           "pred_cpu_s": float(np.median(cpu_s)) if len(cpu_s) else math.nan}
    if focus(cell):
        row["meas_few"], row["meas_one"] = composition(cell.flushes, int(cell.n_tx))
        row["pred_few"], row["pred_one"] = composition(flushes, int(cell.n_tx))
    return row


STRANDED_S = 10e-3
"""A flush longer than this was stranded: its goroutine waited off the processor for at least
``sysmon``'s time slice (500 us of work; the scheduler module's docstring)."""


def _stranded(longest: list[float]) -> tuple[int, int]:
    """(blocks with a flush longer than ``STRANDED_S``, blocks with flush rows)."""
    return sum(x > STRANDED_S for x in longest), len(longest)


def cpu_missing(table: pd.DataFrame) -> dict[str, float] | None:
    """What the model's CPU lacks against the process's, at GOMAXPROCS 1 with a sleeping
    flush (where one processor runs everything and the process is idle in the sleeps): the
    measured CPU per block less the predicted, fitted by least squares to a cost per
    transaction, per flush (measured median count), per second of block (the process's
    other wake-ups: its idle batchers' timers, sysmon) and per block (the harness's own
    reads inside the measured window). ``None`` without CPU on both sides."""
    rows = table[(table.gomaxprocs == 1) & (table.flush == "sleep")
                 & table.meas_cpu_s.notna() & table.pred_cpu_s.notna()]
    if len(rows) < 8:
        return None
    x = np.c_[rows.n_tx, rows.meas_flushes.map(lambda f: f[1]), rows.meas_p50_s,
              np.ones(len(rows))]
    y = (rows.meas_cpu_s - rows.pred_cpu_s).to_numpy()
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    r2 = 1 - float(((y - x @ coef) ** 2).sum() / ((y - y.mean()) ** 2).sum())
    ratio = rows.pred_cpu_s / rows.meas_cpu_s
    return {"cells": len(rows), "per_tx_us": float(coef[0]) * 1e6,
            "per_flush_us": float(coef[1]) * 1e6, "per_s": float(coef[2]),
            "fixed_us": float(coef[3]) * 1e6, "r2": r2,
            "ratio": float(ratio.median()), "ratio_fit": float(ratio[rows.fit].median())}


def stranded_shares(table: pd.DataFrame) -> dict[int, tuple[float, float, int]]:
    """Per GOMAXPROCS, over the drain-mode cells with a CPU-burning flush that have flush
    rows on both sides: the mean share of a cell's blocks with a stranded flush, measured
    and predicted, and how many cells."""
    out = {}
    spin = table[table.drain & (table.flush == "spin")]
    for procs, rows in spin.groupby("gomaxprocs"):
        pairs = [(m[0] / m[1], p[0] / p[1]) for m, p in zip(rows.meas_stranded,
                                                            rows.pred_stranded)
                 if m[1] and p[1]]
        if pairs:
            meas, pred = np.mean(pairs, axis=0)
            out[int(procs)] = (float(meas), float(pred), len(pairs))
    return out


def _table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    out = pd.DataFrame(rows)
    out["ratio"] = out.pred_p50_s / out.meas_p50_s
    return out


def compare(cells: pd.DataFrame, host: HostConfig, go: GoConfig, reps: int,
            fitted: set[str] | None = None) -> pd.DataFrame:
    """Measured beside predicted, one row per cell."""
    rows = []
    for cell in cells.itertuples():
        pred = predict(cell, host, go, min(len(cell.block_times), reps))
        rows.append(_row(cell, pred.block_times, pred.flushes, pred.longest_flushes,
                         pred.cpu_s, fitted or set()))
    return _table(rows)


# ------------------------------------------------------------------ the real system against itself
def compare_runs(cells: pd.DataFrame, other: pd.DataFrame,
                 fitted: set[str] | None = None) -> pd.DataFrame:
    """:func:`compare`'s table with a second measured run of the same grid (``other``, from
    :func:`cells_of`) in the place of the model's runs: the real go-batcher against itself,
    which :func:`judge` scores by the same figures. It says how far two runs of the harness
    on this machine differ, i.e. how close any model can come to one run (cells missing from
    ``other`` are left out)."""
    by_cell = other.set_index("cell")
    rows = [_row(cell, by_cell.at[cell.cell, "block_times"], by_cell.at[cell.cell, "flushes"],
                 by_cell.at[cell.cell, "longest_flushes"], by_cell.at[cell.cell, "cpu_s"],
                 fitted or set())
            for cell in cells.itertuples() if cell.cell in by_cell.index]
    return _table(rows)


def beyond_range(table: pd.DataFrame, runs: list[pd.DataFrame]) -> pd.Series:
    """Per cell of ``table`` (:func:`compare`), how far the predicted median block time lies
    outside the range of the measured medians of ``runs`` (each from :func:`cells_of`; the
    judged run among them): 1 inside the range, else the factor to its nearer end. A cell
    whose real median moves between runs (drain mode's collapse is bistable) is judged
    against every value the real system gave it, not against one draw."""
    medians = pd.concat([r.set_index("cell").block_times.map(np.median) for r in runs], axis=1)
    low, high = medians.min(axis=1), medians.max(axis=1)
    pred = table.set_index("cell").pred_p50_s
    factor = np.maximum.reduce([low.reindex(pred.index) / pred, pred / high.reindex(pred.index),
                                np.ones(len(pred))])
    return pd.Series(factor, index=pred.index).dropna()


@dataclasses.dataclass
class Verdict:
    within: float               # share of predicted cells within TOLERANCE
    worst: float                # worst ratio (>= 1), predicted cells
    n_cells: int
    shares_ok: bool
    share_rows: pd.DataFrame
    procs_ok: bool
    procs_rows: pd.DataFrame
    # shares of predicted cells whose runs' flush counts span the measured blocks' min..max
    # (cover) or meet it at all (overlap): flush_ranges
    flushes_cover: float = 1.0
    flushes_overlap: float = 1.0

    @property
    def holds(self) -> bool:
        return (self.within >= 0.90 and self.worst <= WORST and self.shares_ok
                and self.procs_ok and self.flushes_cover == 1.0)

    @property
    def procs_within(self) -> float:
        """Share of the predicted cell pairs whose GOMAXPROCS 1 : 2 ratio is within
        ``RATIO_TOLERANCE``."""
        procs = self.procs_rows[~self.procs_rows.fit]
        return float((procs.error.abs() <= RATIO_TOLERANCE).mean()) if len(procs) else 1.0

    def summary(self) -> str:
        """The issue's four figures on one line."""
        return (f"within {TOLERANCE:.0%} on {self.within:.1%} of {self.n_cells} cells, worst "
                f"{self.worst:.2f}x, composition {int(_shares_off(self.share_rows).sum())} of "
                f"{len(self.share_rows)} cells > {SHARE_POINTS * 100:.0f} points off, "
                f"1 : 2 ratio within {RATIO_TOLERANCE:.0%} on {self.procs_within:.0%}, "
                f"flush counts cover the measured range on {self.flushes_cover:.0%}")


def covers(rows: pd.DataFrame) -> pd.Series:
    """Per row: the model's runs' flush counts span the measured blocks' (min and max)."""
    return pd.Series([p[0] <= m[0] and p[2] >= m[2]
                      for m, p in zip(rows.meas_flushes, rows.pred_flushes)],
                     index=rows.index, dtype=bool)


def flush_ranges(table: pd.DataFrame) -> tuple[float, float]:
    """Over the predicted cells: the share whose runs' flush counts (min..max) cover the
    measured blocks' min..max (:func:`covers`), and the share whose two ranges meet at all
    (1.0 for a table without flush counts: nothing to judge)."""
    pred = table[~table.fit]
    if not len(pred) or "meas_flushes" not in pred.columns:
        return 1.0, 1.0
    meet = [p[0] <= m[2] and p[2] >= m[0] for m, p in zip(pred.meas_flushes,
                                                           pred.pred_flushes)]
    return float(covers(pred).mean()), float(np.mean(meet))


def _shares_off(shares: pd.DataFrame) -> pd.Series:
    """Composition rows whose predicted share of either kind is beyond ``SHARE_POINTS``."""
    return (((shares.pred_few - shares.meas_few).abs() > SHARE_POINTS)
            | ((shares.pred_one - shares.meas_one).abs() > SHARE_POINTS))


def _procs_ratios(table: pd.DataFrame) -> pd.DataFrame:
    keyed = table.assign(key=table.cell.str.replace(r"^p\d+/", "", regex=True))
    one = keyed[keyed.gomaxprocs == 1].set_index("key")
    two = keyed[keyed.gomaxprocs == 2].set_index("key")
    both = one.join(two.add_suffix("_2"), how="inner").rename(
        columns={c: f"{c}_1" for c in one.columns})
    out = pd.DataFrame({"meas_ratio": both.meas_p50_s_1 / both.meas_p50_s_2,
                        "pred_ratio": both.pred_p50_s_1 / both.pred_p50_s_2,
                        "fit": both.fit_1 | both.fit_2})
    out["error"] = out.pred_ratio / out.meas_ratio - 1
    return out


def judge(table: pd.DataFrame, sizes: tuple[int, ...] = (16, 64),
          size_of: dict[str, int] | None = None) -> Verdict:
    """The issue's figures on the cells not used for fitting."""
    pred = table[~table.fit]
    ratio = pred.ratio
    worst = float(np.maximum(ratio, 1 / ratio).max()) if len(pred) else 1.0
    share_cols = ["meas_few", "pred_few", "meas_one", "pred_one"]
    if set(share_cols) <= set(table.columns):
        shares = table[table.n_tx.isin(sizes) & table.meas_few.notna()]
    else:                       # no drain, cap = all cell among those compared (--only)
        shares = table.iloc[0:0].reindex(columns=[*table.columns, *share_cols])
    if size_of is not None:
        shares = shares[shares.cell.map(size_of) == 4096]
    share_ok = not _shares_off(shares).any()
    procs = _procs_ratios(table)
    procs_pred = procs[~procs.fit]
    procs_ok = bool((procs_pred.error.abs() <= RATIO_TOLERANCE).mean() >= 0.90) \
        if len(procs_pred) else True
    cover, overlap = flush_ranges(table)
    return Verdict(within=float((abs(ratio - 1) <= TOLERANCE).mean()) if len(pred) else 1.0,
                   worst=worst, n_cells=len(pred), shares_ok=share_ok, share_rows=shares,
                   procs_ok=procs_ok, procs_rows=procs, flushes_cover=cover,
                   flushes_overlap=overlap)


# ------------------------------------------------------------------ report
def _ms(x: float) -> str:
    return f"{x * 1e3:.3g}"


def report(table: pd.DataFrame, verdict: Verdict, out=sys.stdout) -> None:
    print("| cell | fit | load | runq wait ms | block p50 ms meas / pred | p90 ms meas / pred "
          "| ratio | flushes min/med/max meas | pred |", file=out)
    print("|---|---|---:|---:|---|---|---:|---|---|", file=out)
    for r in table.itertuples():
        mf, pf = r.meas_flushes, r.pred_flushes
        wait = "" if r.runq_wait_s != r.runq_wait_s else _ms(r.runq_wait_s)
        print(f"| {r.cell} | {'fit' if r.fit else ''} | {r.loadavg:.1f} | {wait} | "
              f"{_ms(r.meas_p50_s)} / {_ms(r.pred_p50_s)} | {_ms(r.meas_p90_s)} / "
              f"{_ms(r.pred_p90_s)} | {r.ratio:.2f} | {mf[0]}/{mf[1]:g}/{mf[2]} | "
              f"{pf[0]}/{pf[1]:g}/{pf[2]} |", file=out)
    if len(verdict.share_rows):
        print("\nDrain composition (cap = all): share of blocks of a few flushes / of about "
              "one flush per transaction, measured vs predicted", file=out)
        for r in verdict.share_rows.itertuples():
            print(f"  {r.cell}: few {r.meas_few:.0%} / {r.pred_few:.0%}, one per tx "
                  f"{r.meas_one:.0%} / {r.pred_one:.0%}", file=out)
        print(f"  {int(_shares_off(verdict.share_rows).sum())} of {len(verdict.share_rows)} "
              f"cells more than {SHARE_POINTS * 100:.0f} points off", file=out)
    missing = cpu_missing(table)
    if missing is not None:
        print(f"\nGOMAXPROCS 1, sleep flush, {missing['cells']} cells: the process's CPU per "
              f"block (user + system) less the model's = {missing['per_tx_us']:.2f} us per "
              f"transaction + {missing['per_flush_us']:.2f} us per flush + "
              f"{missing['per_s']:.1%} of the block's time + {missing['fixed_us']:.0f} us "
              f"(least squares, R^2 {missing['r2']:.3f}); the model's CPU over the process's: "
              f"median {missing['ratio']:.2f}, on the fit cells {missing['ratio_fit']:.2f}",
              file=out)
    for procs_n, (meas, pred, n) in stranded_shares(table).items():
        print(f"\nDrain mode, spin flush, GOMAXPROCS {procs_n}: share of blocks with a flush "
              f"stranded over {STRANDED_S * 1e3:g} ms, mean over {n} cells, measured "
              f"{meas:.0%}, predicted {pred:.0%}", file=out)
    procs = verdict.procs_rows[~verdict.procs_rows.fit]
    print(f"\nGOMAXPROCS 1 : 2 block-time ratio, {len(procs)} cell pairs: within "
          f"{RATIO_TOLERANCE:.0%} on {verdict.procs_within:.0%} "
          f"(median |error| {procs.error.abs().median():.1%})", file=out)
    print(f"Flush counts, {verdict.n_cells} cells not used for fitting: the model's runs "
          f"cover the measured blocks' range on {verdict.flushes_cover:.1%}, meet it on "
          f"{verdict.flushes_overlap:.1%}", file=out)
    print(f"Median block time, {verdict.n_cells} cells not used for fitting: within "
          f"{TOLERANCE:.0%} on {verdict.within:.1%}, worst {verdict.worst:.2f}x "
          f"(goal >= 90 %, <= {WORST}x)", file=out)


def write_model(path: Path, go: GoConfig, fitted: dict[str, float], costs_file: Path,
                run: Path, fit_cells: list[str], command: str,
                measured: dict[str, str] | None = None, scale: CpuScale | None = None) -> None:
    """The fitted ``[go]`` model: every cost, each fitted one marked, each one measured
    apart from the micro-benchmarks (``measured``: name -> where) marked with its source.
    With ``scale``, ``go`` is ``costs_file``'s model scaled to ``run``'s machine
    (:func:`fit_cpu_scale`), and the provenance is that machine's (``run.toml``)."""
    measured = measured or {}
    base = tomllib.loads(costs_file.read_text())
    made = [f"{', '.join(measured)} measured apart (each marked where)"] if measured else []
    made += [f"{', '.join(fitted)} fitted on harness cells"] if fitted else []
    if scale is not None:
        made += [f"every cost scaled x{scale.factor:.3f} to the machine of\n# {run}, fitted "
                 f"on its {len(scale.rows)} cycle cells"]
    source = "the micro-benchmarks of" if scale is None else "the costs of"
    lines = [f"# Go runtime costs for simbatch's [go] section: {source}",
             f"# {costs_file.name}, with {' and '.join(made) or 'nothing else'}, by",
             "# validate/calibrate_gobatcher.py. Do not edit by hand: re-run the command below.",
             "", "[provenance]"]
    prov = base.get("provenance", {})
    if scale is not None:
        measured_run = tomllib.loads((run / "run.toml").read_text())
        prov = measured_run | {"measured_on": measured_run.get("started", "")}
    for key in ("go", "cpus", "cpu", "measured_on"):
        if key in prov:
            lines.append(f"{key} = {prov[key]!r}".replace("'", '"'))
    lines += [f'costs_from = "{costs_file.name}"', f'run = "{run}"',
              f"fitted_cells = {len(fit_cells)}"]
    if scale is not None:
        lines += [f"cpu_scale = {scale.factor:.4f} # fit_cpu_scale on: "
                  + ", ".join(sorted(scale.cells))]
    lines += [f'made_at = "{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}"',
              f'command = "{command}"', "", "[go]"]
    for name in COSTS:
        note = (" # fitted" if name in fitted
                else f" # measured: {measured[name]}" if name in measured
                else f" # {costs_file.name} x cpu_scale" if scale is not None else "")
        lines.append(f"{name} = {getattr(go, name):.1f}{note}")
    lines.append(f"lock_sleep = {go.lock_sleep:.2f} # measured: lock2's contended acquisitions "
                 "of the item channel (validate/gobatcher/data/README.md, the channel's lock)")
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--run", type=Path, default=HARNESS / "data" / "full6")
    ap.add_argument("--host", type=Path, default=ROOT / "models" / "host-loopback.toml")
    ap.add_argument("--costs", type=Path, default=ROOT / "models" / "gobatcher-costs-loopback.toml",
                    help="the harness's -costs file (micro-benchmarks)")
    ap.add_argument("--lock", type=Path, default=None, metavar="COSTS",
                    help="take [go] lock_ns from this -costs file instead (a later run of the "
                         "micro-benchmarks, the first to measure it)")
    ap.add_argument("--go", type=Path, default=None,
                    help="a models/ file to judge instead of making one (--profile and --fit "
                         "ignored); with --out, that model scaled to the run's machine "
                         "(--cpu-scale) is written there")
    ap.add_argument("--profile", type=Path, nargs="+", default=None, metavar="DIR",
                    help="measure PROFILED costs from the harness's CPU profiles of the runs "
                         "in DIR... (each: cpu.prof, run.toml, blocks.csv)")
    ap.add_argument("--fit", action="store_true",
                    help="fit the FIT_COSTS not measured by --profile on the fit cells")
    ap.add_argument("--out", type=Path, default=None, help="write the [go] model here")
    ap.add_argument("--reps", type=int, default=100,
                    help="simulated runs per cell, at most (and no more than its measured blocks)")
    ap.add_argument("--only", default="", help="regexp: compare only the cells matching it")
    ap.add_argument("--repeat", type=Path, nargs="*", default=[], metavar="RUN",
                    help="other runs of the same grid: each judged against --run by the same "
                         "figures (the real system against itself), and the model's median "
                         "judged against the range of all the runs' medians")
    ap.add_argument("--packing", choices=("measured", "off"), default="measured",
                    help="measured: each GOMAXPROCS 2 cell's threads share one CPU for its "
                         "blocks' measured run-queue wait (packed_host); off: never, to "
                         "see what the packing explains")
    ap.add_argument("--cpu-scale", choices=("fit", "off"), default="fit",
                    help="fit: scale every cost by the host's CPU against the costs' "
                         "machine, fitted on the run's GOMAXPROCS 1 drain cycle cells "
                         "(fit_cpu_scale; those cells are then not judged); off: the costs "
                         "as they are")
    ap.add_argument("--fit-noise", action="store_true",
                    help="fit [host] cpu_noise_ns on the run's GOMAXPROCS 1 drain blocks of "
                         "one flush per transaction (is_cycle_cell) instead of taking the "
                         "host file's")
    args = ap.parse_args(argv)
    command = " ".join(["python -m validate.calibrate_gobatcher", *(argv or sys.argv[1:])])
    for option, run in (("--run", args.run), *(("--repeat", r) for r in args.repeat)):
        for table in ("blocks", "flushes"):
            if not any((run / name).exists() for name in (f"{table}.csv", f"{table}.csv.gz")):
                ap.error(f"{option} {run}: no {table}.csv or {table}.csv.gz there (a directory "
                         f"the harness wrote with -out)")
    for option, path, table in (("--host", args.host, "host"), ("--costs", args.costs, "go"),
                                ("--go", args.go, "go")):
        if path is not None:
            try:
                if not isinstance(tomllib.loads(path.read_text()).get(table), dict):
                    ap.error(f"{option} {path}: no [{table}] table in it")
            except OSError as e:
                ap.error(f"{option} {path}: cannot read it ({e.strerror})")
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
                ap.error(f"{option} {path}: not TOML ({e})")
    try:
        re.compile(args.only)
    except re.error as e:
        ap.error(f"--only {args.only!r}: not a regular expression ({e})")
    try:
        blocks, probes = load_run(args.run)
    except (OSError, ValueError, KeyError, EOFError) as e:    # gzip's and pandas' errors too
        ap.error(f"--run {args.run}: not a run the harness wrote ({type(e).__name__}: {e})")
    if args.packing == "off":
        blocks = blocks.drop(columns=["runq_wait_s"], errors="ignore")
    cells = cells_of(blocks)
    host, summary = host_from_probes(args.host, probes, blocks)
    print(f"run {args.run}: {len(cells)} cells, {len(blocks)} blocks, block load average "
          f"median {blocks.loadavg_1m.median():.2f}; host: {summary}")
    if args.fit_noise:
        try:
            noise, target, n = fit_cpu_noise(cells, blocks, host, go_from_file(
                args.go or ROOT / "models" / "gobatcher-loopback.toml"))
        except ValueError as e:
            ap.error(f"--fit-noise: {args.run}: {e}")
        print(f"CPU noise fitted on {n} blocks of one flush per transaction "
              f"(is_cycle_cell): cpu_noise_ns = {noise:.1f} (host file: "
              f"{host.cpu_noise_ns:g})")
        host = dataclasses.replace(host, cpu_noise_ns=round(noise, 1))
    fit_cells = cells[cells.apply(is_fit_cell, axis=1)]
    if args.go is not None:
        go = go_from_file(args.go)
        if not fitted_cells_of(args.go):
            fit_cells = fit_cells.iloc[0:0]         # nothing fitted: every cell a prediction
    else:
        go = go_from_file(args.costs)
        fitted: dict[str, float] = {}
        measured: dict[str, str] = {}
        if args.lock is not None:
            try:
                lock_ns = float(tomllib.loads(args.lock.read_text())["go"]["lock_ns"])
            except OSError as e:
                ap.error(f"--lock {args.lock}: cannot read it ({e.strerror})")
            except tomllib.TOMLDecodeError as e:
                ap.error(f"--lock {args.lock}: not TOML ({e})")
            except (KeyError, TypeError, ValueError):
                ap.error(f"--lock {args.lock}: no number [go] lock_ns in it (a file the "
                         f"harness's -costs wrote since 2026-11-28)")
            go = dataclasses.replace(go, lock_ns=lock_ns)
            measured["lock_ns"] = f"{_shown(args.lock)} (-costs)"
        if args.profile is not None:
            try:
                costs, about = costs_from_profile(args.profile, go, host)
            except ValueError as e:
                ap.error(f"--profile {e}")
            go = dataclasses.replace(go, **costs)
            measured.update(dict.fromkeys(costs, " ".join(f"{d}/cpu.prof"
                                                          for d in args.profile)))
            print("measured: " + ", ".join(f"{k} = {v:.0f}" for k, v in costs.items())
                  + f" ({about})")
        names = tuple(n for n in FIT_COSTS if n not in measured) if args.fit else ()
        if names:
            t0 = time.perf_counter()
            go, fitted = fit(fit_cells, host, go, names=names)
            print(f"fitted on {len(fit_cells)} cells in {time.perf_counter() - t0:.0f} s: "
                  + ", ".join(f"{k} = {v:.0f}" for k, v in fitted.items()))
        else:
            print("nothing fitted: every cell is a prediction")
            fit_cells = fit_cells.iloc[0:0]
        if args.out is not None:
            write_model(args.out, go, fitted, args.costs, args.run, list(fit_cells.cell),
                        command, measured)
    shown = cells[cells.cell.str.contains(args.only)] if args.only else cells
    if shown.empty:
        ap.error(f"--only {args.only!r}: no cell of {args.run} matches it")
    t0 = time.perf_counter()
    not_judged = set(fit_cells.cell)
    if args.cpu_scale == "fit":
        scale = fit_cpu_scale(cells, blocks, host, go)
        print(scale.summary())
        go, not_judged = scaled(go, scale.factor), not_judged | scale.cells
        if args.go is not None and args.out is not None:
            write_model(args.out, go, {}, args.go, args.run, [], command, scale=scale)
            print(f"wrote {args.out}: {args.go} scaled to the machine of {args.run}")
    elif args.go is not None and args.out is not None:
        ap.error("--out with --go writes that model scaled to the run's machine, which "
                 "--cpu-scale off leaves out: drop one of them")
    table = compare(shown, host, go, args.reps, not_judged)
    verdict = judge(table, size_of=dict(zip(cells.cell, cells["size"].astype(int))))
    report(table, verdict)
    print_spreads(shown, blocks, host, go)
    print(f"(simulated in {time.perf_counter() - t0:.0f} s)")
    if args.repeat:
        repeatability(args.run, shown, args.repeat, table, not_judged,
                      dict(zip(cells.cell, cells["size"].astype(int))))
    return 0


def print_spreads(cells: pd.DataFrame, blocks: pd.DataFrame, host: HostConfig, go: GoConfig,
                  reps: int = 3, out=sys.stdout) -> None:
    """The CPU noise's two figures, measured beside the model's (``cpu_noise_ns``): the
    cycle spread (what it is fitted on) and the spin flushes' spread (predicted); then the
    gap after a spin flush (:func:`after_flush_gaps`), which runs colder than the model's."""
    cycle, flush, after50, after90 = model_spreads(cells, host, go, reps)
    blocks = blocks[blocks.cell.isin(cells.cell)]          # the cells shown (--only)
    for name, column, pred in (("cycle", "cycle_spread", cycle), ("spin flush", "flush_spread",
                                                                    flush)):
        meas = blocks[column].dropna() if column in blocks else pd.Series()
        if len(meas) and pred == pred:
            print(f"GOMAXPROCS 1 {name} spread (IQR / median), {len(meas)} blocks: measured "
                  f"{meas.median():.3f}, predicted {pred:.3f} (cpu_noise_ns = "
                  f"{host.cpu_noise_ns:g})", file=out)
    meas = blocks[["after_flush_p50_us", "after_flush_p90_us"]].dropna() \
        if "after_flush_p50_us" in blocks else pd.DataFrame()
    if len(meas) and after50 == after50:
        print(f"GOMAXPROCS 1 drain spin, the gap from a flush's end to the next's start "
              f"(median / 90th percentile of a block), {len(meas)} blocks: measured "
              f"{meas.after_flush_p50_us.median():.1f} / {meas.after_flush_p90_us.median():.1f}"
              f" us, predicted {after50:.1f} / {after90:.1f} (the work after a CPU-bound flush "
              f"runs cold, which the model does not draw: data/README.md)", file=out)


def repeatability(run: Path, cells: pd.DataFrame, others: list[Path], table: pd.DataFrame,
                  fitted: set[str], size_of: dict[str, int], out=sys.stdout) -> None:
    """Print how the real system scores against itself (each of ``others`` judged against
    ``run`` as if it were a prediction) beside the model's score, and how far the model's
    medians fall outside the range of all the runs' medians."""
    print(f"\nThe model against {run.name}: {judge(table, size_of=size_of).summary()}",
          file=out)
    runs = [cells]
    for other in others:
        other_cells = cells_of(load_run(other)[0])
        runs.append(other_cells)
        verdict = judge(compare_runs(cells, other_cells, fitted), size_of=size_of)
        print(f"{other.name} (measured) against {run.name}: {verdict.summary()}", file=out)
    factor = beyond_range(table[~table.fit], runs)
    names = ", ".join(p.name for p in [run, *others])
    print(f"The model against the range of the {len(runs)} runs' medians ({names}): inside "
          f"or within {TOLERANCE:.0%} of it on {(factor <= 1 + TOLERANCE).mean():.1%} of "
          f"{len(factor)} cells, beyond {WORST}x on {int((factor > WORST).sum())}, worst "
          f"{factor.max():.2f}x", file=out)
    for cell, f in factor[factor > WORST].sort_values(ascending=False).items():
        print(f"  {cell}: {f:.2f}x beyond", file=out)


if __name__ == "__main__":
    raise SystemExit(main())
