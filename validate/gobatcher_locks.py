"""The item channel's lock in go-batcher's drain blocks: a harness run read beside a kernel
trace of its threads' futex calls (issue 11; validate/gobatcher/data/README.md, "The
channel's lock").

The trace is taken beside the run, on the block's clock (``block_start_mono_s``)::

    cd validate/gobatcher && go build -o /tmp/gbh .
    perf record -a -k CLOCK_MONOTONIC -e syscalls:sys_enter_futex/call-graph=fp/ \\
        -e syscalls:sys_exit_futex -o RUN/perf.data -- /tmp/gbh -grid full -items ... -out RUN
    perf script --ns -i RUN/perf.data --comms gbh -F comm,tid,cpu,time,event,trace,ip,sym \\
        | gzip > RUN/futex.txt.gz

(As root: system-wide tracepoints. Go keeps frame pointers, so the user stacks unwind.)
Every ``FUTEX_WAIT`` whose stack holds ``runtime.lock2`` is a thread that found a runtime
mutex held, spun if it held the lock word's spin bit (most do not), and went to sleep on
it holding its processor until an unlock woke it
(Go 1.26 ``src/runtime/lock_spinbit.go``: ``lock2`` -> ``semasleep``; ``unlock2`` ->
``unlock2Wake``). Each is named by what took the lock:

* ``put``: ``selectnbsend`` -- go-batcher's ``Put`` (a ``select`` with a ``default``);
* ``recv``: ``selectnbrecv`` -- the worker's drain loop, a receive that does not block;
* ``select``: ``selectgo`` -- the worker's blocking ``select``, which locks each of its
  channels; of them only the item channel is touched by other goroutines during a block
  (``done`` and the trigger are not, and drain mode never arms the timer: go-batcher
  v2.0.6 ``worker``), so its contention is the item channel's;
* ``other``: any other runtime lock (stack growth's ``stackcacherefill``, ``sysmon``...).

Per block: how many of each (``sleeps_put`` ...), how long the worker's (``recv`` and
``select``) took in all (``worker_sleep_us``, futex entry to return), when the first
channel-lock sleep began (``first_sleep_us``), and the block's composition class
(``kind``: :func:`validate.gobatcher_processors.kind_of`).

The worker's convoy (:func:`chains`): a chain is the worker's sleeps each of which starts
within ``CHAIN_GAP_US`` of the previous one's return (one thread); between two sleeps of a
chain the worker is awake, and with ``items.csv`` (``-items``) the ``Put``s made meanwhile
(all by another processor: the worker holds its own) say whether the lock's holder ran.

Usage: ``python -m validate.gobatcher_locks RUN_DIR`` (a run with ``futex.txt.gz`` or
``futex.txt`` beside its ``blocks.csv``) prints, by GOMAXPROCS, N, flush and class, the
share of blocks with a channel-lock sleep, with one of the worker's, the sleeps per block by
site and the median sleep; then the chains by class, and the ``Put`` rate while the worker is
awake in a chain and while it sleeps.
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from validate.gobatcher_processors import kind_of
from validate.gobatcher_runs import read_csv

SITES = (("put", "selectnbsend"), ("recv", "selectnbrecv"), ("select", "selectgo"))
"""Each channel-lock site and the runtime function in its stack that names it."""
WORKER_SITES = ("recv", "select")
"""The sites where go-batcher's worker sleeps."""
_EVENT = re.compile(r"\s*(\S+)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+syscalls:sys_(enter|exit)_futex:"
                    r"\s*(.*)")
_OP = re.compile(r"op: (0x[0-9a-f]+)")
FUTEX_CMD_MASK = 0x7F
"""``op`` without FUTEX_PRIVATE_FLAG (128) and FUTEX_CLOCK_REALTIME (256): 0 is FUTEX_WAIT
(linux/futex.h)."""


def _site(stack: list[str]) -> str | None:
    """The channel-lock site of a FUTEX_WAIT's stack, ``other`` for another runtime lock,
    ``None`` when no runtime lock was slept on (a thread parking, ``notesleep``)."""
    if "runtime.lock2" not in stack:
        return None
    for name, fn in SITES:
        if f"runtime.{fn}" in stack:
            return name
    return "other"


def read_sleeps(lines: Iterable[str]) -> pd.DataFrame:
    """The runtime-lock sleeps of a ``perf script`` text (see the module docstring): one row
    per sleep, ``t_s`` (its futex entry, CLOCK_MONOTONIC seconds), ``wait_us`` (entry to
    return; NaN if the trace ends first), ``tid``, ``cpu`` and ``site``."""
    rows: list[dict] = []
    open_: dict[int, dict] = {}
    stack: list[str] | None = None
    pending: dict | None = None

    def close_stack() -> None:
        nonlocal pending, stack
        if pending is not None and stack is not None:
            site = _site(stack)
            if site is not None:
                pending["site"] = site
                open_[pending["tid"]] = pending
                rows.append(pending)
        pending, stack = None, None

    for line in lines:
        if line.startswith("\t"):
            if stack is not None and line.strip():
                parts = line.split()
                if len(parts) >= 2:
                    stack.append(parts[1])
            continue
        close_stack()
        m = _EVENT.match(line)
        if m is None:
            continue
        tid, cpu, t, kind, rest = int(m[2]), int(m[3]), float(m[4]), m[5], m[6]
        if kind == "enter":
            op = _OP.search(rest)
            if op is not None and int(op[1], 16) & FUTEX_CMD_MASK == 0:
                pending = {"t_s": t, "wait_us": np.nan, "tid": tid, "cpu": cpu}
                stack = []
        else:
            sleep = open_.pop(tid, None)
            if sleep is not None:
                sleep["wait_us"] = (t - sleep["t_s"]) * 1e6
    close_stack()
    return pd.DataFrame(rows, columns=["t_s", "wait_us", "tid", "cpu", "site"])


def per_block(blocks: pd.DataFrame, sleeps: pd.DataFrame) -> pd.DataFrame:
    """``blocks`` with each block's lock sleeps (see the module docstring); a block needs
    ``block_start_mono_s`` (the harness since 2026-11-28)."""
    if "block_start_mono_s" not in blocks or blocks.block_start_mono_s.isna().all():
        raise ValueError("blocks.csv has no block_start_mono_s: the run predates it, so its "
                         "blocks cannot be put on the trace's clock")
    sleeps = sleeps.sort_values("t_s")
    t = sleeps.t_s.to_numpy()
    out = blocks.assign(kind=kind_of(blocks.n_flushes, blocks.n_tx)).reset_index(drop=True)
    counts = {f"sleeps_{name}": np.zeros(len(out), dtype=int) for name, _ in SITES}
    counts["sleeps_other"] = np.zeros(len(out), dtype=int)
    worker_us = np.zeros(len(out))
    first_us = np.full(len(out), np.nan)
    for i, (start, length) in enumerate(zip(out.block_start_mono_s.astype(float),
                                            out.block_time_s.astype(float))):
        lo, hi = np.searchsorted(t, start), np.searchsorted(t, start + length)
        inside = sleeps.iloc[lo:hi]
        for site, n in inside.site.value_counts().items():
            counts[f"sleeps_{site}"][i] = n
        worker = inside[inside.site.isin(WORKER_SITES)]
        worker_us[i] = float(worker.wait_us.sum())
        chan = inside[inside.site != "other"]
        if len(chan):
            first_us[i] = (float(chan.t_s.iloc[0]) - start) * 1e6
    return out.assign(**counts, worker_sleep_us=worker_us, first_sleep_us=first_us)


CHAIN_GAP_US = 20.0
"""The longest time awake between two of the worker's sleeps of one chain (us)."""


def _total(x: pd.Series) -> float:
    """A sum that is NaN where nothing was measured (blocks without items)."""
    return float(x.sum(min_count=1))


def _puts_in(puts: np.ndarray, spans: list[tuple[float, float]]) -> int:
    """How many of the sorted times ``puts`` fall in the ``spans`` (start, end)."""
    return int(sum(np.searchsorted(puts, z) - np.searchsorted(puts, a) for a, z in spans))


def chains(table: pd.DataFrame, sleeps: pd.DataFrame,
           items: pd.DataFrame | None = None) -> pd.DataFrame:
    """The worker's chains of sleeps in each block of ``table`` (:func:`per_block`): one row
    per chain, with the block's ``gomaxprocs``, ``n_tx``, ``flush`` and ``kind``, its
    ``sleeps``, and with ``items``, over its gaps: ``awake_us`` and ``puts_awake`` (the time
    the worker was awake between its sleeps and the ``Put``s made meanwhile) and
    ``asleep_us`` and ``puts_asleep`` (the same over its sleeps but the last)."""
    worker = sleeps[sleeps.site.isin(WORKER_SITES)].dropna(subset=["wait_us"])
    worker = worker.sort_values("t_s")
    t = worker.t_s.to_numpy()
    item_groups = dict(iter(items.groupby(["cell_no", "rep"]))) if items is not None else {}
    rows = []
    for b in table.itertuples():
        start = float(b.block_start_mono_s)
        lo, hi = np.searchsorted(t, start), np.searchsorted(t, start + float(b.block_time_s))
        its = item_groups.get((b.cell_no, b.rep))
        puts = np.sort(start + its.put_us.to_numpy() * 1e-6) if its is not None else None
        for _, g in worker.iloc[lo:hi].groupby("tid"):
            enter = g.t_s.to_numpy()
            ret = enter + g.wait_us.to_numpy() * 1e-6
            cut = np.flatnonzero(enter[1:] - ret[:-1] >= CHAIN_GAP_US * 1e-6) + 1
            for idx in np.split(np.arange(len(enter)), cut):
                row = {"gomaxprocs": b.gomaxprocs, "n_tx": b.n_tx, "flush": b.flush,
                       "kind": b.kind, "sleeps": len(idx)}
                if puts is not None:
                    awake = list(zip(ret[idx[:-1]], enter[idx[1:]]))
                    asleep = list(zip(enter[idx[:-1]], ret[idx[:-1]]))
                    row.update(awake_us=sum(z - a for a, z in awake) * 1e6,
                               puts_awake=_puts_in(puts, awake),
                               asleep_us=sum(z - a for a, z in asleep) * 1e6,
                               puts_asleep=_puts_in(puts, asleep))
                rows.append(row)
    return pd.DataFrame(rows)


def load(run: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(:func:`per_block`, :func:`read_sleeps`) of a run directory with a futex trace."""
    for name in ("futex.txt.gz", "futex.txt"):
        path = run / name
        if path.exists():
            opener = gzip.open if name.endswith(".gz") else open
            with opener(path, "rt") as f:
                sleeps = read_sleeps(f)
            return per_block(read_csv(run / "blocks.csv"), sleeps), sleeps
    raise FileNotFoundError(f"{run}: no futex.txt.gz or futex.txt there (a perf script text "
                            f"of the run's futex calls: see python -m validate.gobatcher_locks "
                            f"--help)")


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """By GOMAXPROCS, N, flush and class: blocks, the share with a channel-lock sleep and
    with one of the worker's, mean sleeps per block by site, the worker's sleep per block
    (us) and the median first sleep (us after the block's start)."""
    worker = sum(table[f"sleeps_{site}"] for site in WORKER_SITES)
    chan = table.sleeps_put + worker
    t = table.assign(chan=chan > 0, worker=worker > 0)
    return t.groupby(["gomaxprocs", "n_tx", "flush", "kind"]).agg(
        blocks=("chan", "size"), any_sleep=("chan", "mean"), worker_sleep=("worker", "mean"),
        put=("sleeps_put", "mean"), recv=("sleeps_recv", "mean"),
        select=("sleeps_select", "mean"), worker_us=("worker_sleep_us", "mean"),
        first_us=("first_sleep_us", "median"))


def _show(frame: pd.DataFrame) -> None:
    with pd.option_context("display.width", 200, "display.max_columns", None,
                           "display.float_format", "{:.3g}".format):
        print(frame)


def main(argv: list[str] | None = None) -> None:
    paragraphs = __doc__.split("\n\n")
    ap = argparse.ArgumentParser(description=" ".join(paragraphs[0].split()),
                                 epilog="\n\n".join(paragraphs[1:3]), allow_abbrev=False,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path,
                    help="a validate/gobatcher run directory with futex.txt.gz beside blocks.csv")
    args = ap.parse_args(argv)
    try:
        table, sleeps = load(args.run)
    except (FileNotFoundError, ValueError) as e:
        sys.exit(f"gobatcher_locks: {e}")
    chan = sleeps[sleeps.site != "other"]
    items = None
    if any((args.run / n).exists() for n in ("items.csv", "items.csv.gz")):
        items = read_csv(args.run / "items.csv")
    ch = chains(table, sleeps, items)
    _show(summary(table))
    print(f"\nchannel-lock sleeps: {len(chan)}, median {chan.wait_us.median():.0f} us, "
          f"p90 {chan.wait_us.quantile(0.9):.0f} us (futex entry to return); by site: "
          + ", ".join(f"{s} {n}" for s, n in chan.site.value_counts().items()))
    if ch.empty:
        return
    agg: dict[str, tuple[str, Any]] = {"chains": ("sleeps", "size"), "mean": ("sleeps", "mean"),
                                       "max": ("sleeps", "max")}
    if items is not None:
        agg.update({c: (c, _total) for c in ("awake_us", "puts_awake", "asleep_us",
                                              "puts_asleep")})
    by = ch.groupby(["gomaxprocs", "n_tx", "flush", "kind"]).agg(**agg)
    if items is not None:
        by = by.assign(puts_per_us_awake=by.puts_awake / by.awake_us,
                       puts_per_us_asleep=by.puts_asleep / by.asleep_us)
    print(f"\nthe worker's chains of sleeps (each within {CHAIN_GAP_US:g} us of the last's "
          f"return), and the Puts made while it was awake between them and while it slept:")
    _show(by)


if __name__ == "__main__":
    main()
