"""The Go client's costs that no micro-benchmark isolates, measured from the go-batcher
harness's CPU profiles (``go tool pprof`` on a run's ``cpu.prof``): the worker's side of each
flush and its ``select``, the flush goroutine's per flush and per item, a transaction's
``Put``, the driver's spawn and the scheduler's CPU per context switch (:data:`PROFILED`,
:func:`costs_from_profile`), each goroutine's CPU less what the model charges it apart.
``python -m validate.calibrate_gobatcher --profile DIR ...`` takes them (its docstring,
item 2).
"""

from __future__ import annotations

import dataclasses
import math
import re
import subprocess
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simbatch.batching.engine import simulate
from simbatch.batching.gocpu import GoConfig
from simbatch.batching.hosttiming import HostConfig
from simbatch.core.streams import replication_seed
from validate.gobatcher_runs import case_for, cells_of, read_csv

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
