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
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simbatch.batching import BatcherConfig, BlockWorkload, Case, ServiceConfig
from simbatch.batching.engine import simulate
from simbatch.batching.gocpu import COSTS, GoConfig
from simbatch.batching.hosttiming import HostConfig
from simbatch.core.streams import replication_seed

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "validate" / "gobatcher"
FIT_COSTS = ("spawn_ns", "switch_ns", "cold_ns", "put_ns", "flush_ns")
"""The costs ``--fit`` fits on harness cells where ``--profile`` has not measured them; every
other cost is the micro-benchmark's."""
TOLERANCE, WORST, SHARE_POINTS, RATIO_TOLERANCE = 0.15, 1.5, 0.20, 0.15
HARNESS_CYCLES_MS = (5.0, 10.0)
"""The cycle timers of the harness's two go-batcher v1.1.0 batchers (``cells.go``,
``shippedAndR1``), which tick through every block of the run."""

CELL_KEYS = ["gomaxprocs", "version", "timer", "size", "timeout_ms", "drain", "max_concurrent",
             "fanout", "cap", "n_tx", "inputs_per_tx", "flush", "flush_us"]


# ------------------------------------------------------------------ reading a run
def read_csv(path: Path) -> pd.DataFrame:
    """``path`` or ``path.gz``."""
    if path.exists():
        return pd.read_csv(path)
    return pd.read_csv(path.with_name(path.name + ".gz"))


def load_run(run: Path) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """(blocks, probes) of a harness run directory (probes ``None`` if it has none); each
    block with ``first_flush_s``, when its first flush started, ``longest_flush_s``, its
    longest flush (both NaN where the run kept no flush rows for it), and ``speed_ratio``
    (:func:`speed_ratio_from`; NaN where it cannot be told), and the figures of
    :func:`spreads_from`."""
    blocks = read_csv(run / "blocks.csv")
    flushes = read_csv(run / "flushes.csv")
    first = flushes.groupby(["cell_no", "rep"]).start_us.min().rename("first_flush_s") / 1e6
    longest = ((flushes.end_us - flushes.start_us) / 1e6).groupby(
        [flushes.cell_no, flushes.rep]).max().rename("longest_flush_s")
    blocks = blocks.join(first, on=["cell_no", "rep"]).join(longest, on=["cell_no", "rep"])
    blocks = blocks.join(speed_ratio_from(blocks, flushes), on=["cell_no", "rep"])
    blocks = blocks.join(spreads_from(blocks, flushes), on=["cell_no", "rep"])
    probes = None
    for name in ("probes.csv", "probes.csv.gz"):
        if (run / name).exists():
            probes = pd.read_csv(run / name, keep_default_na=False)
    return blocks, probes


SPEED_MIN_FLUSHES = 10
"""Flushes each processor's chain needs for its median to count (:func:`speed_ratio_from`)."""


def _chain_ratio(starts: np.ndarray, ends: np.ndarray) -> float:
    """The ratio of the two processors' median flush durations in one block (NaN if either
    ran too few): each flush goes to the processor that came free last before it started
    (a processor runs its next flush right after the last, through the worker's hand-off),
    and a flush that starts while both are busy is left out."""
    last = [-math.inf, -math.inf]
    chains: list[list[float]] = [[], []]
    for s, e in zip(starts, ends):
        free = [i for i in (0, 1) if last[i] <= s + 2]     # 2 us: the clock's reading gap
        if not free:
            continue
        i = max(free, key=lambda k: last[k])
        chains[i].append(e - s)
        last[i] = e
    if min(len(c) for c in chains) < SPEED_MIN_FLUSHES:
        return math.nan
    a, b = (float(np.median(c)) for c in chains)
    return max(a, b) / min(a, b)


def speed_ratio_from(blocks: pd.DataFrame, flushes: pd.DataFrame) -> pd.Series:
    """How much faster one of the two processors ran the same CPU work than the other, per
    block of a CPU-burning flush at GOMAXPROCS 2 (``speed_ratio``, indexed by cell_no and
    rep). Every spin flush is the same work, so the two processors' median flush durations
    differ only by their speeds (a stall lengthens a few flushes, not the median)."""
    spin = blocks[(blocks.flush == "spin") & (blocks.gomaxprocs == 2)][["cell_no", "rep"]]
    rows = flushes.merge(spin, on=["cell_no", "rep"]).sort_values(["cell_no", "rep", "start_us"])
    out = {key: _chain_ratio(g.start_us.to_numpy(float), g.end_us.to_numpy(float))
           for key, g in rows.groupby(["cell_no", "rep"], sort=False)}
    index = pd.MultiIndex.from_tuples(list(out), names=["cell_no", "rep"]) if out else \
        pd.MultiIndex.from_arrays([[], []], names=["cell_no", "rep"])
    return pd.Series(list(out.values()), index=index, name="speed_ratio", dtype=float)


# ------------------------------------------------------------------ the CPU's run-to-run noise
SPREAD_MIN_TX = 16
"""A block's flush gaps or durations count for a spread from this many flushes on."""
NOISE_GRID_NS = (0.0, 25.0, 50.0, 75.0, 100.0, 150.0, 200.0, 300.0, 400.0)
"""``cpu_noise_ns`` values :func:`fit_cpu_noise` simulates the cycle cells at."""


def spread(values: Iterable[float]) -> float:
    """Interquartile range over median: how much a repeated piece of work's time varies,
    robust to the host's rare long stalls (which the model draws apart: ``stall_per_s``)."""
    q1, q2, q3 = np.percentile(np.asarray(list(values), float), [25, 50, 75])
    return float((q3 - q1) / q2) if q2 > 0 else math.nan


def is_cycle_cell(cell: Any) -> bool:
    """The cells whose blocks' flush starts are one CPU cycle apart: GOMAXPROCS 1, drain
    mode, every transaction at once, a sleep flush (so the flushes do not hold the
    processor) and a pool that never makes the worker wait (not 4). In a block of one flush
    per transaction each gap between flush starts is the same work -- a transaction's
    Puts, the worker's drain, the flush's hand-off -- on one processor. ``cpu_noise_ns`` is
    fitted on them (:func:`fit_cpu_noise`)."""
    return (int(cell.gomaxprocs) == 1 and bool(cell.drain) and str(cell.cap) == "all"
            and cell.flush == "sleep" and int(cell.max_concurrent) != 4
            and int(cell.n_tx) >= SPREAD_MIN_TX)


def is_spin_cell(cell: Any) -> bool:
    """GOMAXPROCS 1 with a CPU-burning flush: every flush is the same 500 us of work, on one
    processor. The spread of their durations is predicted, not fitted."""
    return int(cell.gomaxprocs) == 1 and cell.flush == "spin"


def spreads_from(blocks: pd.DataFrame, flushes: pd.DataFrame) -> pd.DataFrame:
    """Per block (indexed by cell_no and rep): ``cycle_spread``, the spread of the gaps
    between flush starts in a block of :func:`is_cycle_cell` that made one flush per
    transaction, ``cycle_gap_us``, their median (one transaction's cycle), and
    ``flush_spread``, the spread of the flush durations in a block of
    :func:`is_spin_cell` with at least ``SPREAD_MIN_TX`` flushes, and ``after_flush_p50_us``
    / ``after_flush_p90_us``, the median and 90th percentile of the gaps from one flush's end
    to the next one's start in such a block in drain mode that made one flush per transaction
    (:func:`after_flush_gaps`; NaN elsewhere)."""
    cycle = blocks[blocks.apply(is_cycle_cell, axis=1) & (blocks.n_flushes == blocks.n_tx)]
    spin = blocks[blocks.apply(is_spin_cell, axis=1) & (blocks.n_flushes >= SPREAD_MIN_TX)]
    out: dict[tuple[int, int], dict[str, float]] = {}
    keys = ["cell_no", "rep"]
    for key, g in flushes.merge(cycle[keys], on=keys).groupby(keys):
        gaps = np.diff(np.sort(g.start_us.to_numpy(float)))
        out.setdefault(key, {})["cycle_spread"] = spread(gaps)
        out[key]["cycle_gap_us"] = float(np.median(gaps))
    serial = spin[spin.drain.astype(bool) & (spin.n_flushes == spin.n_tx)][keys]
    serial_keys = set(map(tuple, serial.to_numpy().tolist()))
    for key, g in flushes.merge(spin[keys], on=keys).groupby(keys):
        out.setdefault(key, {})["flush_spread"] = spread(g.end_us - g.start_us)
        if key in serial_keys:
            after = after_flush_quantiles(g.start_us.to_numpy(float), g.end_us.to_numpy(float))
            if after is not None:
                out[key]["after_flush_p50_us"], out[key]["after_flush_p90_us"] = after
    frame = pd.DataFrame.from_dict(out, orient="index", columns=[
        "cycle_spread", "cycle_gap_us", "flush_spread", "after_flush_p50_us",
        "after_flush_p90_us"])
    frame.index = pd.MultiIndex.from_tuples(list(out), names=keys) if out else \
        pd.MultiIndex.from_arrays([[], []], names=keys)
    return frame


def after_flush_gaps(start_us: np.ndarray, end_us: np.ndarray) -> np.ndarray:
    """The gaps (us) from each flush's end to the next flush's start, flushes taken in order
    of start, where the next starts after the end (one processor: a flush stranded by
    ``sysmon`` overlaps the next and gives none). In a block of one flush per transaction
    with a CPU-burning flush at GOMAXPROCS 1 a gap is one transaction's exit, the next one's
    Puts, the worker's drain and hand-off, right after 500 us of other work: it runs colder
    than the cycle cells' (data/README.md, "The pool-4 spin cells at GOMAXPROCS 2")."""
    order = np.argsort(start_us, kind="stable")
    gaps = start_us[order][1:] - end_us[order][:-1]
    return gaps[gaps >= 0]


def after_flush_quantiles(start_us: np.ndarray, end_us: np.ndarray
                          ) -> tuple[float, float] | None:
    """The median and 90th percentile of a block's :func:`after_flush_gaps` (None if none),
    the same on the measured and the simulated side."""
    gaps = after_flush_gaps(start_us, end_us)
    if not len(gaps):
        return None
    return float(np.percentile(gaps, 50)), float(np.percentile(gaps, 90))


def model_spreads(cells: pd.DataFrame, host: HostConfig, go: GoConfig, reps: int,
                  seed: int = 1) -> tuple[float, float, float, float]:
    """The model's medians of the same figures as :func:`spreads_from` measures, over
    ``reps`` simulated blocks of each cycle cell and spin cell (NaN where none): the cycle
    spread, the flush spread, and the median and 90th percentile of the gaps after a flush."""
    cycle, flush, after50, after90 = [], [], [], []
    for cell in cells.itertuples():
        if is_cycle_cell(cell):
            cycle += [spread(gaps) for gaps in model_cycle_gaps(cell, host, go, reps, seed)]
        elif is_spin_cell(cell):
            for r in range(reps):
                run = simulate(case_for(cell, host, go), replication_seed(seed, r))
                start = np.frombuffer(run.recorder.batch_start) * 1e6
                end = np.frombuffer(run.recorder.batch_done_at) * 1e6
                if len(start) >= SPREAD_MIN_TX:
                    flush.append(spread(end - start))
                if bool(cell.drain) and len(start) == int(cell.n_tx) >= SPREAD_MIN_TX:
                    after = after_flush_quantiles(start, end)
                    if after is not None:
                        after50.append(after[0])
                        after90.append(after[1])

    def median(v: list[float]) -> float:
        return float(np.median(v)) if v else math.nan

    return median(cycle), median(flush), median(after50), median(after90)


def model_cycle_gaps(cell: Any, host: HostConfig, go: GoConfig, reps: int,
                     seed: int = 1) -> list[np.ndarray]:
    """The gaps (us) between flush starts in each of ``reps`` simulated blocks of the cycle
    cell ``cell`` that made one flush per transaction (:func:`is_cycle_cell`)."""
    out = []
    for r in range(reps):
        run = simulate(case_for(cell, host, go), replication_seed(seed, r))
        start = np.frombuffer(run.recorder.batch_start) * 1e6
        if len(start) == int(cell.n_tx):
            out.append(np.diff(np.sort(start)))
    return out


def scaled(go: GoConfig, factor: float) -> GoConfig:
    """``go`` with every CPU cost (:data:`~simbatch.batching.gocpu.COSTS`) times ``factor``."""
    return dataclasses.replace(go, **{k: getattr(go, k) * factor for k in COSTS})


@dataclasses.dataclass
class CpuScale:
    """The host's CPU against the machine the costs were measured on (:func:`fit_cpu_scale`)."""
    factor: float               # 1.0 where nothing could be fitted
    rows: pd.DataFrame          # per cycle cell: measured and model gap (us), their ratio

    @property
    def cells(self) -> set[str]:
        """The cells it was fitted on (not judged)."""
        return set(self.rows.cell)

    def summary(self) -> str:
        if self.rows.empty:
            return ("host CPU scale: no GOMAXPROCS 1 drain block of one flush per transaction "
                    "(is_cycle_cell) to fit it on; the costs as measured (x1)")
        rows = self.rows
        return (f"host CPU scale: x{self.factor:.2f}, fitted on {len(rows)} cycle cells "
                f"(one transaction's cycle at GOMAXPROCS 1: measured "
                f"{rows.meas_us.median():.2f} us, the costs' model {rows.model_us.median():.2f}; "
                f"per cell "
                f"x{rows.ratio.min():.2f}-{rows.ratio.max():.2f}); those cells are "
                f"not judged")


def fit_cpu_scale(cells: pd.DataFrame, blocks: pd.DataFrame, host: HostConfig, go: GoConfig,
                  reps: int = 3, seed: int = 1) -> CpuScale:
    """How much slower (> 1) or faster this run's host runs the client's CPU work than the
    machine ``go``'s costs were measured on: the median over the run's :func:`is_cycle_cell`
    cells of the measured cycle (the median gap between flush starts in its blocks of one
    flush per transaction: a transaction's Puts, the worker's drain and the flush's
    hand-off, all CPU, on one processor) over the model's (``reps`` simulated blocks).

    Why: the same harness on two VMs of the same kind (2 vCPUs, AMD EPYC) but another CPU
    family read that cycle at 3.1-4.8 us per cell (family 26, 2026-12-06) and 4.5-6.9 us
    (family 25, 2026-12-07); the costs' model reads 3.5-3.8
    (``validate/gobatcher/data/README.md``, "The host's CPU against the costs' machine").
    One factor on every cost, fitted on a stated subset of the judged run, is the host's
    speed; nothing else moves."""
    measured = blocks.dropna(subset=["cycle_gap_us"]) if "cycle_gap_us" in blocks else \
        blocks.iloc[0:0]
    meas = measured.groupby("cell").cycle_gap_us.median()
    rows = []
    for cell in cells[cells.cell.isin(meas.index)].itertuples():
        gaps = [float(np.median(g)) for g in model_cycle_gaps(cell, host, go, reps, seed)]
        if gaps:
            model = float(np.median(gaps))
            rows.append({"cell": cell.cell, "meas_us": float(meas[cell.cell]),
                         "model_us": model, "ratio": float(meas[cell.cell]) / model})
    table = pd.DataFrame(rows, columns=["cell", "meas_us", "model_us", "ratio"])
    return CpuScale(float(table.ratio.median()) if len(table) else 1.0, table)


def fit_cpu_noise(cells: pd.DataFrame, blocks: pd.DataFrame, host: HostConfig, go: GoConfig,
                  reps: int = 10) -> tuple[float, float, int]:
    """``[host] cpu_noise_ns`` from a run: the value at which the model's cycle spread on
    the run's :func:`is_cycle_cell` cells equals the measured one (the median over its
    blocks of one flush per transaction), interpolated on ``NOISE_GRID_NS``. Returns the
    value, the measured spread and the number of blocks; raises ValueError if the run has
    no such block."""
    measured = blocks.cycle_spread.dropna() if "cycle_spread" in blocks else pd.Series()
    if measured.empty:
        raise ValueError("no GOMAXPROCS 1 drain-mode block of one flush per transaction "
                         "(is_cycle_cell) to fit the CPU noise on")
    target = float(measured.median())
    chosen = cells[cells.apply(is_cycle_cell, axis=1)]
    model = [model_spreads(chosen, dataclasses.replace(host, cpu_noise_ns=ns), go, reps)[0]
             for ns in NOISE_GRID_NS]
    rising = np.maximum.accumulate(np.nan_to_num(model))
    return float(np.interp(target, rising, NOISE_GRID_NS)), target, len(measured)


def cells_of(blocks: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: its parameters and its measured blocks (lists); ``runq_waits``,
    the time the process's working threads spent runnable but off CPU in each block (empty
    lists for runs recorded before the harness measured it)."""
    for column in ("runq_wait_s", "longest_flush_s", "process_cpu_s"):
        if column not in blocks:
            blocks = blocks.assign(**{column: math.nan})
    agg = blocks.groupby("cell", sort=False).agg(
        **{k: (k, "first") for k in CELL_KEYS},
        block_times=("block_time_s", list), flushes=("n_flushes", list),
        runq_waits=("runq_wait_s", lambda x: [v for v in x if v == v]),
        longest_flushes=("longest_flush_s", lambda x: [v for v in x if v == v]),
        cpu_s=("process_cpu_s", lambda x: [v for v in x if v == v]),
        first_flush_s=("first_flush_s", "median"), loadavg=("loadavg_1m", "median"))
    return agg.reset_index()


# ------------------------------------------------------------------ the host
def _quantiles(samples: Iterable[float], grid: np.ndarray, digits: int = 1) -> list[float]:
    s = np.sort(np.asarray(list(samples), float))
    idx = np.floor((len(s) - 1) * grid).astype(int)
    return [round(float(v), digits) for v in s[idx]]


def _floats(text: str) -> list[float]:
    return [float(x) for x in str(text).split()] if str(text).strip() else []


def host_from_probes(host_file: Path, probes: pd.DataFrame | None,
                     blocks: pd.DataFrame | None = None) -> tuple[HostConfig, dict]:
    """The host a run saw: the timers of ``host_file`` (its ``[host]`` table) and, from the
    run's probes, the stalls of the client's threads and idle processors' wake-ups (a run
    probed before 2026-11-27 keeps the host file's wake-ups: see below); from
    its blocks (``speed_ratio``, :func:`load_run`), how much the two processors' speeds
    differ. Returns the config and a summary for the report."""
    table = dict(tomllib.loads(host_file.read_text())["host"])
    summary: dict[str, Any] = {"host_file": str(host_file)}
    ratios = (blocks.speed_ratio.dropna() if blocks is not None and "speed_ratio" in blocks
              else pd.Series(dtype=float))
    if len(ratios) >= 10:
        table["speed_ratio"] = tuple(_quantiles(ratios, np.asarray(table["quantiles"], float),
                                                digits=4))
        summary["speed_ratio_p50"] = round(float(ratios.median()), 4)
        summary["speed_ratio_blocks"] = len(ratios)
    if probes is None or probes.empty:
        return HostConfig(**table), summary
    grid = np.asarray(table["quantiles"], float)
    # stall_per_s is by running threads (its i-th entry: i + 1 threads); a thread count the
    # run did not probe (a run of GOMAXPROCS 2 cells only) keeps the host file's
    rates = list(table.get("stall_per_s", ()))
    stall_us = dict(table.get("stall_us", {}))
    for procs in sorted(int(p) for p in probes.gomaxprocs.unique()):
        rows = probes[probes.gomaxprocs == procs]
        stalls = [x for text in rows.stall_us for x in _floats(text)]
        busy = float(rows.busy_s.sum())
        running = busy - sum(stalls) / 1e6     # the probe's time with its thread running
        rates += [0.0] * (procs - len(rates))
        rates[procs - 1] = round(len(stalls) / running, 2) if running > 0 else 0.0
        if stalls:
            stall_us[str(procs)] = _quantiles(stalls, grid)
        summary[f"stalls_{procs}"] = (f"{rates[procs - 1]:.0f} per s of running, "
                                      f"{sum(stalls) / 1e6 / busy:.1%} of the time lost")
    table["stall_per_s"] = tuple(rates)
    table["stall_us"] = stall_us
    # wake-ups: a steal from the busy processor's run queue (the harness's probes since
    # 2026-11-27). Earlier runs' probes timed a goroutine left alone in runnext, so the
    # back-off was inside each sample and cannot be taken out of it (costs.go,
    # wakeLatency): those runs keep the host file's wake_us, measured the new way.
    wake = [x for text in probes.get("wake_steal_us", []) for x in _floats(text)]
    backoff = [x for text in probes.get("backoff_us", []) for x in _floats(text)]
    if wake:
        table["wake_us"] = tuple(_quantiles(wake, grid))
    summary["wake_us_p50"] = (float(np.median(wake)) if wake
                              else f"{float(np.median(table['wake_us'])):.1f} (host file)")
    if backoff:
        table["backoff_us"] = tuple(_quantiles(backoff, grid))
        summary["backoff_us_p50"] = float(np.median(backoff))
    summary["probe_loadavg"] = float(probes.loadavg_1m.median())
    return HostConfig(**table), summary


def packed_host(cell: Any, host: HostConfig, rep: int) -> HostConfig:
    """``host`` for the ``rep``-th simulated run of ``cell``: at GOMAXPROCS 2 and more, with
    the client's threads sharing one CPU (``[host] packed_us``) for as long as the cell's
    ``rep``-th measured block (cycling) had them waiting runnable but off CPU
    (``runq_wait_s``, the kernel's schedstat). Two threads taking turns on one CPU for a time
    W wait W between them, so a block's wait is its packed time; the host's other
    processes' stalls, which the probes measure and the model also charges
    (``stall_per_s``), are in it too, a few per cent of a block. Why per block: whether the
    kernel packs the threads depends on how idle the process was over the last few hundred
    milliseconds -- after a timer-bound cell it mostly does, right after a CPU-bound block it
    does not (``data/README.md``) -- so a cell's blocks are a mix of packed and unpacked
    ones, and each simulated run is paired with one of them. The wait is measured beside
    the block time, not fitted to it. Runs recorded before the harness measured it (no
    ``runq_wait_s``) leave ``host`` as it is."""
    waits = list(getattr(cell, "runq_waits", []) or [])
    if int(cell.gomaxprocs) < 2 or not waits or not host.quantiles:
        return host
    wait_us = round(waits[rep % len(waits)] * 1e6, 1)
    return dataclasses.replace(host, packed_us=(wait_us,) * len(host.quantiles))


# ------------------------------------------------------------------ cells as cases
def as_cell(cell: Any) -> Any:
    """A cell as its fields by name: a row of :func:`cells_of`'s frame taken with
    ``itertuples`` is one already; one taken with ``iloc`` or ``iterrows`` (a ``Series``)
    is made one, since there ``cell.size`` is the number of the row's fields, not the
    batcher's size (a 4,096-item batcher simulated as a 21-item one, silently)."""
    if isinstance(cell, pd.Series):
        return next(cell.to_frame().T.itertuples(index=False))
    return cell


def case_for(cell: Any, host: HostConfig, go: GoConfig) -> Case:
    """The simbatch case of a harness cell (a row of :func:`cells_of`, see :func:`as_cell`)."""
    cell = as_cell(cell)
    n = int(cell.n_tx)
    if cell.fanout == "seq":
        workload = BlockWorkload(n_transactions=n, inputs_per_tx=int(cell.inputs_per_tx))
    else:
        cap = n if str(cell.cap) == "all" else min(int(cell.cap), n)
        workload = BlockWorkload(n_transactions=n, inputs_per_tx=int(cell.inputs_per_tx),
                                 fanout="errgroup", cap=cap)
    mc = int(cell.max_concurrent)
    batcher = BatcherConfig(size=int(cell.size), timeout_ms=float(cell.timeout_ms),
                            timer=str(cell.timer), drain=bool(cell.drain),
                            dispatch="pool" if mc else "background",
                            max_concurrent=mc or None)
    service = ServiceConfig(fixed_us=float(cell.flush_us), is_sleep=cell.flush == "sleep")
    # the harness's process keeps its two v1.1.0 batchers (5 and 10 ms cycles) alive through
    # every block: their timers wake the idle process; a v1 cell's own batcher is the worker
    others = tuple(ms for ms in HARNESS_CYCLES_MS
                   if not (cell.version == "v1.1.0" and ms == float(cell.timeout_ms)))
    return Case(workload=workload, batcher=batcher, service=service, host=host,
                go=dataclasses.replace(go, gomaxprocs=int(cell.gomaxprocs),
                                       flush_cpu=cell.flush == "spin",
                                       other_timers_ms=others))


def fitted_cells_of(path: Path) -> int:
    """How many harness cells the ``[go]`` model at ``path`` was fitted on (its provenance's
    ``fitted_cells``; a file without one, the micro-benchmarks', was fitted on none)."""
    return int(tomllib.loads(path.read_text()).get("provenance", {}).get("fitted_cells", 0))


def _shown(path: Path) -> str:
    """``path`` relative to the repository when it is inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def go_from_file(path: Path, **overrides: float) -> GoConfig:
    table = dict(tomllib.loads(path.read_text())["go"])
    table.pop("model", None)
    table.update(overrides)
    table["gomaxprocs"] = 1
    return GoConfig(**table)


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


_V2 = r"go-batcher/v2\.\(\*Batcher\[.*\]\)\."
DISPATCH_FN = re.compile(_V2 + r"flushBatch$")
"""go-batcher v2's ``flushBatch``, as ``go tool pprof`` names it."""
WORKER_FN = re.compile(_V2 + r"worker$")
"""go-batcher v2's ``worker``, as ``go tool pprof`` names it."""


_PPROF_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "mins": 60.0,
                "hrs": 3600.0}


def _pprof_seconds(text: str) -> float:
    """A ``go tool pprof`` time (``0.57s``, ``880ms``) in seconds."""
    match = re.fullmatch(r"([\d.]+)([a-zµ]+)", text)
    if match is None or match.group(2) not in _PPROF_UNITS:
        raise ValueError(f"go tool pprof printed a time {text!r} this reader does not know")
    return float(match.group(1)) * _PPROF_UNITS[match.group(2)]


def _pprof(prof: Path, *args: str) -> str:
    try:
        return subprocess.run(["go", "tool", "pprof", *args, str(prof)], capture_output=True,
                              text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise ValueError(f"{prof}: go tool pprof failed ({e})") from e


POOL_FN = re.compile(_V2 + r"SetMaxConcurrent\.func1$")
"""A go-batcher v2 pool goroutine (``SetMaxConcurrent``'s closure), as pprof names it."""
TX_FN = re.compile(r"^golang\.org/x/sync/errgroup\.\(\*Group\)\.Go\.func1$")
"""A transaction's goroutine (errgroup's closure around the harness's decorate)."""
DRIVER_FN = re.compile(r"^main\.\(\*block\)\.run$")
"""The harness's block driver: errgroup's ``Go`` per transaction, then ``Wait``."""
SCHED_FN = re.compile(r"^runtime\.mcall$")
"""The scheduler on the goroutine's thread: ``park_m`` / ``goexit0`` -> ``schedule``."""
PROFILED = ("dispatch_ns", "select_ns", "select_ready_ns", "flush_ns", "done_ns", "put_ns",
            "spawn_ns", "switch_ns", "cold_ns")
"""The costs :func:`costs_from_profile` measures."""


def _cum_s(top: str, pattern: re.Pattern[str], prof: Path,
           missing: float | None = None) -> float:
    """The cumulative seconds of the first function of ``go tool pprof -top -cum`` whose
    name matches ``pattern``; ``missing`` if none does (``None``: refused)."""
    for line in top.splitlines():
        fields = line.split()
        if len(fields) >= 6 and pattern.search(" ".join(fields[5:])):
            return _pprof_seconds(fields[3])
    if missing is not None:
        return missing
    raise ValueError(f"{prof}: no samples in {pattern.pattern!r}")


@dataclasses.dataclass
class ProfiledRun:
    """A harness run with a CPU profile (:func:`profiled_run`): each pipeline goroutine's CPU
    over the run (``cpu``, ns, scaled to the process's CPU), its cells, and how many times each
    cell's block ran (``runs_of``: measured blocks and warm-up blocks)."""

    cpu: dict[str, float]
    cells: pd.DataFrame
    runs_of: pd.Series
    flushes: float
    txns: float
    items: float
    about: dict[str, Any]


def profiled_run(run: Path) -> ProfiledRun:
    """Read ``run/cpu.prof`` with ``go tool pprof -top -cum``: the CPU of the pipeline's
    goroutines (the worker, its ``flushBatch`` and its own ``select``, the pool goroutines,
    the transactions, the driver, the scheduler), scaled to the process's measured CPU
    (``run.toml`` ``process_cpu_s``: the kernel delivers fewer profiling signals than the
    runtime asks for); and the run's operations from ``blocks.csv``, each cell's warm-up
    blocks (``-warmup``, 1 unless the command says otherwise) counted as its mean block.
    The cells must all be GOMAXPROCS 1, go-batcher v2 with a pool, a sleep flush, errgroup
    fan-out and one ``inputs_per_tx``. A directory without a profile, a profile without these
    functions, or a cell of another kind is refused with the path."""
    prof, info = run / "cpu.prof", run / "run.toml"
    if not prof.exists() or not info.exists():
        raise ValueError(f"{run}: no cpu.prof and run.toml there (the harness's -cpuprofile "
                         f"and -out)")
    about_run = tomllib.loads(info.read_text())
    process_s = about_run.get("process_cpu_s")
    if not process_s:
        raise ValueError(f"{info}: no process_cpu_s (a run before 2026-11-27)")
    warmup = re.search(r"-warmup[ =](\d+)", about_run.get("command", ""))
    warm = int(warmup.group(1)) if warmup else 1
    blocks = read_csv(run / "blocks.csv").assign(first_flush_s=math.nan)
    cells = cells_of(blocks)
    wrong = [c.cell for c in cells.itertuples()
             if int(c.gomaxprocs) != 1 or c.version != "v2.0.6" or int(c.max_concurrent) == 0
             or c.flush != "sleep" or c.fanout == "seq"
             or int(c.inputs_per_tx) != int(cells.inputs_per_tx.iloc[0])]
    if wrong:
        raise ValueError(f"{run / 'blocks.csv'}: cells {wrong[:3]}; the profile must be of "
                         f"GOMAXPROCS 1, v2.0.6 cells with a pool, a sleep flush, errgroup "
                         f"fan-out and one inputs_per_tx")
    top = _pprof(prof, "-top", "-cum", "-nodecount=100000")
    total = re.search(r"Total samples = (\S+)", top)
    # -peek: the callers of selectgo are listed above its own line, each with its share
    peek = _pprof(prof, "-peek", r"^runtime\.selectgo$")
    select = [line.split() for line in peek.split("| runtime.selectgo")[0].splitlines()
              if WORKER_FN.search(line.strip())]
    if total is None or not select:
        raise ValueError(f"{prof}: no samples in go-batcher v2's worker")
    try:
        profiled_s = _pprof_seconds(total.group(1))
        cpu = {name: _cum_s(top, fn, prof) for name, fn in (
            ("pool", POOL_FN), ("txn", TX_FN), ("driver", DRIVER_FN),
            ("scheduler", SCHED_FN), ("worker", WORKER_FN))}
        # flushBatch: drain off, its flushes every 33 transactions leave it unsampled (0 of
        # 5,500 samples of data/profile-timer); such a profile does not measure it
        cpu["flushbatch"] = _cum_s(top, DISPATCH_FN, prof, missing=0.0)
        cpu["worker_select"] = _pprof_seconds(select[0][0])
    except ValueError as e:
        msg = str(e)
        raise ValueError(msg if str(prof) in msg else f"{prof}: {msg}") from e
    cpu = {name: v * process_s / profiled_s * 1e9 for name, v in cpu.items()}   # ns
    # each cell's blocks, and its warm-up blocks, which ran the same code unrecorded
    per_cell = blocks.groupby("cell").agg(measured=("n_tx", "size"), n_tx=("n_tx", "first"),
                                         flushes=("n_flushes", "mean"),
                                         items=("n_items", "mean"))
    runs_of = per_cell["measured"] + warm
    flushes = float((per_cell["flushes"] * runs_of).sum())
    txns = float((per_cell["n_tx"] * runs_of).sum())
    items = float((per_cell["items"] * runs_of).sum())
    return ProfiledRun(cpu, cells, runs_of, flushes, txns, items,
                       {"profile": str(prof), "cells": len(cells), "flushes": round(flushes),
                        "transactions": round(txns), "profiled_s": profiled_s,
                        "process_cpu_s": process_s})


def _solve(rows: list[list[float]], rhs: list[float]) -> list[float]:
    """Non-negative least squares of ``rows . x = rhs`` (one row per profile)."""
    from scipy.optimize import nnls

    return nnls(np.asarray(rows, float), np.asarray(rhs, float))[0].tolist()


def costs_from_profile(runs: Sequence[Path], go: GoConfig, host: HostConfig
                       ) -> tuple[dict[str, float], dict[str, Any]]:
    """The Go client's costs that no micro-benchmark isolates, measured from the harness's
    CPU profiles of one or more runs (:func:`profiled_run`): each pipeline goroutine's CPU
    less what the model charges it apart (``chan_ns``, ``ready_ns``, ``timer_ns``,
    ``exit_ns`` from ``go``: the micro-benchmarks), over the runs' operations -- flushes,
    transactions, items from ``blocks.csv``, or, for what the harness does not count, the
    model's own count on the same blocks (``BatchRun.go_counts``, simulated with the costs
    measured so far, on ``host``):

    * ``dispatch_ns``: the worker's ``flushBatch`` per flush, less the hand-off
      ``chan_ns + ready_ns``;
    * ``flush_ns`` and ``done_ns``: the pool goroutines (``SetMaxConcurrent``'s closure),
      less each flush's sleep ``timer_ns`` and next receive ``chan_ns`` and ``ready_ns`` per
      transaction woken, per flush and per item completed -- with two profiles or more whose
      flushes carry different numbers of items (non-negative least squares); with one,
      ``done_ns`` stays ``go``'s and is not returned;
    * ``select_ns`` and ``select_ready_ns``: the worker's own ``selectgo`` (``-peek``) per
      wake from a blocking ``select`` and per ``select`` that found a case ready, the same
      way (with one profile, ``select_ready_ns`` stays ``go``'s and is not returned);
    * ``put_ns``: the transactions' goroutines (errgroup's closure) per ``Put``, less
      ``chan_ns`` per ``Put`` and for the semaphore's release, and ``ready_ns`` per wake of
      the worker;
    * ``spawn_ns``: the driver (the harness's ``block.run``) per transaction, less the
      semaphore's ``chan_ns``;
    * ``switch_ns``: the scheduler (``runtime.mcall``: ``park_m``, ``goexit0``) less
      ``exit_ns`` per transaction, per context switch;
    * ``cold_ns`` = 0: the costs above are those the runs' goroutines paid, cold or warm as
      their blocks left their caches; a long park adds nothing.

    Bad input is refused as :func:`profiled_run` refuses it."""
    prs = [profiled_run(run) for run in runs]
    k = int(prs[0].cells.inputs_per_tx.iloc[0])
    if any(int(p.cells.inputs_per_tx.iloc[0]) != k for p in prs):
        raise ValueError(f"{', '.join(map(str, runs))}: the profiles' cells differ in "
                         f"inputs_per_tx")

    def total(name: str) -> float:
        return sum(p.cpu[name] for p in prs)

    txns = sum(p.txns for p in prs)
    pool = [p.cpu["pool"] - p.flushes * (go.timer_ns + go.chan_ns) - p.txns * go.ready_ns
            for p in prs]
    if len(prs) > 1:
        flush_ns, done_ns = _solve([[p.flushes, p.items] for p in prs], pool)
    else:                           # one mix of items per flush: done_ns stays go's
        done_ns = go.done_ns
        flush_ns = max(0.0, (pool[0] - prs[0].items * done_ns) / prs[0].flushes)
    sampled = [p for p in prs if p.cpu["flushbatch"] > 0] or prs   # see profiled_run
    costs = {"dispatch_ns": max(0.0, sum(p.cpu["flushbatch"] for p in sampled)
                                / sum(p.flushes for p in sampled) - go.chan_ns - go.ready_ns),
             "flush_ns": flush_ns,
             "spawn_ns": max(0.0, total("driver") / txns - go.chan_ns), "cold_ns": 0.0}
    if len(prs) > 1:
        costs["done_ns"] = done_ns
    # what the harness does not count, the model counts on the same blocks: context
    # switches, the worker's wakes and its selects that did not block
    counted = dataclasses.replace(go, **costs)
    counts = []
    for p in prs:
        n = {"switches": 0.0, "worker_wakes": 0.0, "ready_selects": 0.0}
        for cell in p.cells.itertuples():
            sims = [simulate(case_for(cell, host, counted), replication_seed(1, r))
                    for r in range(2)]
            for key in n:
                n[key] += p.runs_of[cell.cell] * float(np.mean([s.go_counts[key]
                                                                 for s in sims]))
        counts.append(n)
    wakes = sum(n["worker_wakes"] for n in counts)
    if len(prs) > 1:
        costs["select_ns"], costs["select_ready_ns"] = _solve(
            [[n["worker_wakes"], n["ready_selects"]] for n in counts],
            [p.cpu["worker_select"] for p in prs])
    else:                           # one mix of wakes and ready selects: the latter stays go's
        ready = sum(n["ready_selects"] for n in counts)
        costs["select_ns"] = max(0.0, (total("worker_select") - ready * go.select_ready_ns)
                                 / wakes)
    costs["put_ns"] = max(0.0, (total("txn") - txns * (k + 1) * go.chan_ns
                                - wakes * go.ready_ns) / (k * txns))
    costs["switch_ns"] = max(0.0, (total("scheduler") - txns * go.exit_ns)
                             / sum(n["switches"] for n in counts))
    about: dict[str, Any] = {"profiles": [p.about for p in prs]}
    for p, n in zip(prs, counts, strict=True):
        name = Path(p.about["profile"]).parent.name
        about[name] = {"switches_per_transaction": round(float(n["switches"] / p.txns), 3),
                       "worker_wakes_per_flush": round(float(n["worker_wakes"] / p.flushes), 3),
                       "ready_selects_per_item": round(float(n["ready_selects"] / p.items), 3),
                       **{f"{c}_ns_per_transaction": round(v / p.txns, 1)
                          for c, v in p.cpu.items()}}
    return costs, about


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
