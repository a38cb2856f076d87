"""validate/gobatcher_processors.py: a harness run's items read processor by processor, on a
block built by hand and on the recorded run (validate/gobatcher/data/processors)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from validate.gobatcher_processors import by_history, kind_of, load, main, per_block, summary
from validate.gobatcher_runs import ROOT

PROCESSORS = ROOT / "validate" / "gobatcher" / "data" / "processors"


def _blocks(rows):
    cols = ["cell_no", "rep", "block_start_unix_s", "gomaxprocs", "n_tx", "n_flushes", "flush",
            "lock_wait_s"]
    return pd.DataFrame(rows, columns=cols)


def test_a_few_flush_block_shows_the_worker_s_processor_silent_while_the_other_puts():
    # 4 transactions of 3 inputs; processor 1 puts the first one (and readies the worker),
    # then nothing until it runs the big flush at 200 us; processor 0 puts the other three
    items = pd.DataFrame(
        [(1, 0, i, 10.0 + i, 1, 300.0) for i in range(3)]
        + [(1, 0, i, 40.0 + i, 0, 300.0) for i in range(3, 12)],
        columns=["cell_no", "rep", "item", "put_us", "processor", "done_us"])
    flushes = pd.DataFrame([(1, 0, 0, 200.0, 250.0, 12, "drain", 1)],
                           columns=["cell_no", "rep", "flush_index", "start_us", "end_us",
                                    "batch_size", "reason_inferred", "processor"])
    blocks = _blocks([(1, 0, 2.0, 2, 4, 1, "sleep", 3e-5), (0, 0, 1.0, 1, 4, 4, "sleep", 0.0)])
    table = per_block(blocks, items, flushes)
    row = table.iloc[0]
    assert row.kind == "few"
    assert row.first_share == pytest.approx(0.25)             # 3 of the 12 Puts
    assert row.silence_us == pytest.approx(200.0 - 12.0)      # its last Put to the big flush
    assert row.first_flush_us == 200.0
    assert row.prev_gomaxprocs == 1                           # the block before it


def test_a_processor_that_put_until_its_flush_was_not_silent():
    items = pd.DataFrame([(1, 0, i, 10.0 + i, 0, 50.0) for i in range(3)],
                         columns=["cell_no", "rep", "item", "put_us", "processor", "done_us"])
    flushes = pd.DataFrame([(1, 0, 0, 14.0, 40.0, 3, "drain", 0)],
                           columns=["cell_no", "rep", "flush_index", "start_us", "end_us",
                                    "batch_size", "reason_inferred", "processor"])
    table = per_block(_blocks([(1, 0, 1.0, 2, 1, 1, "sleep", 0.0)]), items, flushes)
    assert math.isnan(table.iloc[0].silence_us)


def test_blocks_are_classed_as_the_judge_classes_them():
    kinds = kind_of(pd.Series([2, 8, 9, 58, 57]), pd.Series([16, 64, 64, 64, 64]))
    assert list(kinds) == ["few", "few", "mid", "one", "mid"]


def test_the_recorded_run_shows_the_stop_in_its_few_flush_blocks():
    # what the data README says of processors/ (GOMAXPROCS 2, N = 64)
    table = load(PROCESSORS)
    medians = summary(table).loc[(2, 64)]
    assert medians.loc["few", "first_share"] < 0.05 < 0.4 < medians.loc["one", "first_share"]
    assert medians.loc["few", "silence_us"] > 100 > 20 > medians.loc["one", "silence_us"]
    assert medians.loc["few", "lock_slept"] > 0.2 > 0.05 > medians.loc["one", "lock_slept"]
    history = by_history(table).loc[(64, "sleep")]
    assert history.loc[1.0, "few"] > history.loc[2.0, "few"]


def test_a_run_without_items_is_refused_by_name(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([str(tmp_path)])
    assert "items.csv" in str(exit_.value) and str(tmp_path) in str(exit_.value)
