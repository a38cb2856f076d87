"""Who put what in go-batcher's drain blocks: a harness run's ``items.csv`` (``-items``) read
processor by processor (issue 11; validate/gobatcher/data/README.md, "Who put what").

For each block of at most 256 transactions, from its items (when each was Put, on which
processor) and flushes (when each started, on which processor):

* ``kind``: ``few`` (a few flushes), ``one`` (about one per transaction) or ``mid``, the
  classes of :func:`validate.calibrate_gobatcher.composition`;
* ``first_share``: the share of the block's Puts made by the processor that made its first
  Put (call it A);
* ``silence_us``: how long the processor that ran the block's largest flush (the worker's
  processor then) had made no Put and started no flush before it, counted only when the
  other processor made a Put meanwhile (NaN otherwise): in a few-flush block, the stop of the
  processor that held the worker while the other put the block;
* ``first_flush_us``: when the block's first flush started;

beside the block's own columns (``lock_wait_s``, ``driver_processor``, ``gomaxprocs``...) and
``prev_gomaxprocs``, the GOMAXPROCS of the block measured just before it.

Usage: ``python -m validate.gobatcher_processors RUN_DIR`` prints the medians by GOMAXPROCS,
N and kind, and the few-flush share by the previous block's GOMAXPROCS.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from validate.calibrate_gobatcher import few_flushes, one_per_transaction
from validate.gobatcher_runs import read_csv


def kind_of(n_flushes: pd.Series, n_tx: pd.Series) -> pd.Series:
    """Each block's composition class (see the module docstring)."""
    few, one = few_flushes(n_flushes, n_tx), one_per_transaction(n_flushes, n_tx)
    return pd.Series(np.where(few, "few", np.where(one, "one", "mid")), index=n_flushes.index)


def per_block(blocks: pd.DataFrame, items: pd.DataFrame, flushes: pd.DataFrame) -> pd.DataFrame:
    """One row per block that has items (see the module docstring)."""
    blocks = blocks.sort_values("block_start_unix_s").reset_index(drop=True)
    blocks = blocks.assign(prev_gomaxprocs=blocks.gomaxprocs.shift(1),
                           kind=kind_of(blocks.n_flushes, blocks.n_tx))
    flush_groups = dict(iter(flushes.groupby(["cell_no", "rep"])))
    rows = []
    for key, its in items.groupby(["cell_no", "rep"]):
        its = its.sort_values("put_us")
        a = its.iloc[0].processor
        fl = flush_groups.get(key, flushes.iloc[0:0])
        silence = np.nan
        if len(fl):
            big = fl.loc[fl.batch_size.idxmax()]
            b, at = big.processor, big.start_us
            before = pd.concat([its[(its.processor == b) & (its.put_us < at)].put_us,
                                fl[(fl.processor == b) & (fl.start_us < at)].start_us])
            since = before.max() if len(before) else 0.0
            if ((its.processor != b) & (its.put_us > since) & (its.put_us < at)).any():
                silence = float(at - since)
        rows.append({"cell_no": key[0], "rep": key[1],
                     "first_share": float((its.processor == a).mean()),
                     "silence_us": silence,
                     "first_flush_us": float(fl.start_us.min()) if len(fl) else np.nan})
    return pd.DataFrame(rows).merge(blocks, on=["cell_no", "rep"])


def load(run: Path) -> pd.DataFrame:
    """:func:`per_block` of a harness run directory written with ``-items``."""
    if not any((run / n).exists() for n in ("items.csv", "items.csv.gz")):
        raise FileNotFoundError(f"{run}: no items.csv or items.csv.gz there (run the harness "
                                f"with -items)")
    return per_block(read_csv(run / "blocks.csv"), read_csv(run / "items.csv"),
                     read_csv(run / "flushes.csv"))


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Medians of :func:`per_block`'s figures by GOMAXPROCS, N and kind, with the share of
    blocks that slept on a lock (``lock_wait_s`` > 0)."""
    return table.groupby(["gomaxprocs", "n_tx", "kind"]).agg(
        blocks=("first_share", "size"), first_share=("first_share", "median"),
        silence_us=("silence_us", "median"), first_flush_us=("first_flush_us", "median"),
        lock_slept=("lock_wait_s", lambda x: float((x > 0).mean())))


def by_history(table: pd.DataFrame) -> pd.DataFrame:
    """The share of few-flush blocks at GOMAXPROCS 2 by N, flush and the previous block's
    GOMAXPROCS."""
    two = table[table.gomaxprocs == 2]
    return two.groupby(["n_tx", "flush", "prev_gomaxprocs"]).agg(
        blocks=("kind", "size"), few=("kind", lambda x: float((x == "few").mean())))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("run", type=Path, help="a validate/gobatcher run directory with items.csv")
    args = ap.parse_args(argv)
    try:
        table = load(args.run)
    except FileNotFoundError as e:
        sys.exit(f"gobatcher_processors: {e}")
    with pd.option_context("display.width", 200, "display.max_columns", None,
                           "display.float_format", "{:.3g}".format):
        print(summary(table))
        print()
        print(by_history(table))


if __name__ == "__main__":
    main()
