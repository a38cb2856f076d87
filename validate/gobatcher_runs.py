"""A run of the go-batcher harness (``validate/gobatcher``) read back, and each of its cells
as the batcher engine's case.

A run directory holds one row per block (``blocks.csv``), one per flush (``flushes.csv``)
and the CPU-availability probes run between blocks (``probes.csv``). :func:`load_run` reads
them with what each block's flushes show: when its first flush started, its longest flush,
how much faster one processor ran the same work than the other (:func:`speed_ratio_from`)
and how much repeated work varied (:func:`spreads_from`); :func:`cells_of` groups the
blocks by cell, and :func:`case_for` makes a cell the simbatch case the model simulates.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simbatch.batching import BatcherConfig, BlockWorkload, Case, ServiceConfig
from simbatch.batching.gocpu import GoConfig
from simbatch.batching.hosttiming import HostConfig

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "validate" / "gobatcher"
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


# ------------------------------------------------------------------ what a block's flushes show
SPREAD_MIN_TX = 16
"""A block's flush gaps or durations count for a spread from this many flushes on."""


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
