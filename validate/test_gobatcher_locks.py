"""validate/gobatcher_locks.py: the runtime-lock sleeps of a futex trace, on a trace written
by hand in perf script's format and on the recorded runs (validate/gobatcher/data/locks)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from validate.gobatcher_locks import chains, load, main, per_block, read_sleeps, summary
from validate.gobatcher_runs import ROOT

LOCKS = ROOT / "validate" / "gobatcher" / "data" / "locks"


def _wait(t: float, tid: int, frames: list[str]) -> list[str]:
    head = (f"             gbh {tid} [001] {t:.9f}: syscalls:sys_enter_futex: uaddr: 0x00c, "
            f"op: 0x00000080, val: 0xffffffff, utime: 0x00000000, uaddr2: 0x00000000, "
            f"val3: 0x00000000\n")
    return [head] + [f"\t          {i:6x} {f}\n" for i, f in enumerate(frames)] + ["\n"]


def _ret(t: float, tid: int) -> list[str]:
    return [f"             gbh {tid} [001] {t:.9f}:  syscalls:sys_exit_futex: 0x0   "
            f"495de3 runtime.futex.abi0\n"]


def _wake(t: float, tid: int) -> list[str]:
    return [f"gbh {tid} [000] {t:.9f}: syscalls:sys_enter_futex: uaddr: 0x00c, "
            f"op: 0x00000081, val: 0x00000001, utime: 0x0, uaddr2: 0x0, val3: 0x0\n",
            "\t           95de3 runtime.futex.abi0\n",
            "\t           24265 runtime.unlock2Wake\n", "\n"]


LOCK = ["runtime.futex.abi0", "runtime.semasleep", "runtime.lock2"]
TRACE = (_wait(100.000010, 7, LOCK + ["runtime.chanrecv", "runtime.selectnbrecv",
                                      "github.com/bsv-blockchain/go-batcher/v2.(*Batcher[x])"])
         + _wake(100.000030, 8) + _ret(100.000040, 7)
         + _wait(100.000050, 8, LOCK + ["runtime.chansend", "runtime.selectnbsend"])
         + _ret(100.000060, 8)
         # a thread parking (no lock) and a lock of the runtime's own: not the channel's
         + _wait(100.000070, 9, ["runtime.futex.abi0", "runtime.notesleep", "runtime.stopm"])
         + _wait(100.000080, 7, LOCK + ["runtime.stackcacherefill", "runtime.stackalloc"])
         # outside the block
         + _wait(100.010000, 7, LOCK + ["runtime.sellock", "runtime.selectgo"]))


def test_each_lock_sleep_is_named_by_what_took_the_lock_and_timed():
    sleeps = read_sleeps(TRACE)
    assert list(sleeps.site) == ["recv", "put", "other", "select"]
    assert sleeps.wait_us.iloc[0] == pytest.approx(30.0)     # entry 10 us to return 40 us
    assert sleeps.wait_us.iloc[1] == pytest.approx(10.0)
    assert math.isnan(sleeps.wait_us.iloc[3])                # the trace ends asleep


def test_a_block_counts_the_sleeps_inside_it_on_the_traces_clock():
    blocks = pd.DataFrame({"block_start_mono_s": [100.0], "block_time_s": [0.001],
                           "n_flushes": [1], "n_tx": [16], "gomaxprocs": [2], "flush": ["sleep"]})
    row = per_block(blocks, read_sleeps(TRACE)).iloc[0]
    assert (row.sleeps_recv, row.sleeps_put, row.sleeps_select, row.sleeps_other) == (1, 1, 0, 1)
    assert row.worker_sleep_us == pytest.approx(30.0)
    assert row.first_sleep_us == pytest.approx(10.0)
    assert row.kind == "few"


def test_the_worker_s_sleeps_chain_and_the_puts_between_them_are_counted():
    recv = LOCK + ["runtime.chanrecv", "runtime.selectnbrecv"]
    trace = (_wait(100.000010, 7, recv) + _ret(100.000040, 7)         # asleep 10-40 us
             + _wait(100.000050, 7, LOCK + ["runtime.sellock", "runtime.selectgo"])
             + _ret(100.000080, 7)                                    # 10 us awake: a chain
             + _wait(100.000200, 7, recv) + _ret(100.000210, 7))      # 120 us later: another
    blocks = pd.DataFrame({"cell_no": [1], "rep": [0], "block_start_mono_s": [100.0],
                           "block_time_s": [0.001], "n_flushes": [1], "n_tx": [16],
                           "gomaxprocs": [2], "flush": ["sleep"]})
    items = pd.DataFrame({"cell_no": 1, "rep": 0, "put_us": [20.0, 30.0, 42.0, 45.0, 48.0, 60.0]})
    table = per_block(blocks, read_sleeps(trace))
    ch = chains(table, read_sleeps(trace), items)
    assert list(ch.sleeps) == [2, 1]
    first = ch.iloc[0]
    assert first.awake_us == pytest.approx(10.0) and first.puts_awake == 3     # 42, 45, 48
    assert first.asleep_us == pytest.approx(30.0) and first.puts_asleep == 2   # 20, 30
    assert "awake_us" not in chains(table, read_sleeps(trace)).columns         # no items


def test_a_run_without_the_monotonic_start_is_refused_with_the_reason():
    blocks = pd.DataFrame({"block_start_unix_s": [1.0], "block_time_s": [0.001],
                           "n_flushes": [1], "n_tx": [16]})
    with pytest.raises(ValueError, match="block_start_mono_s"):
        per_block(blocks, read_sleeps(TRACE))


def test_a_run_without_a_trace_says_so(tmp_path):
    with pytest.raises(SystemExit, match="no futex.txt.gz"):
        main([str(tmp_path)])


def test_the_recorded_runs_show_the_worker_asleep_on_the_lock_in_few_flush_blocks():
    # what the data README says of locks/composition (GOMAXPROCS 2, N = 16 and 64): nearly
    # every block of a few flushes slept on the item channel's lock, few of one flush per
    # transaction did
    table, sleeps = load(LOCKS / "composition")
    s = summary(table)
    few = s.xs("few", level="kind")
    one = s.xs("one", level="kind")
    assert (few.blocks * few.any_sleep).sum() / few.blocks.sum() > 0.9
    assert (one.blocks * one.any_sleep).sum() / one.blocks.sum() < 0.15
    chan = sleeps[sleeps.site != "other"]
    assert 15 < chan.wait_us.median() < 60                   # a wake-up's length
