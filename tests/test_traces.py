"""Exact micro-traces for 2-5 items: who flushed when, with which batch."""

from __future__ import annotations

from dataclasses import replace

import pytest
from simhelp import block_case, open_case

from simbatch.batching import simulate


def batches(case, seed=0):
    return simulate(case, seed).frames()["batches"]


def test_first_item_timer_is_not_extended_by_later_items():
    # Items at 0, 4, 8 ms; timer 10 ms from the first item: one batch of 3 closes at 10 ms.
    b = batches(open_case(n=3, rate=250.0, timeout_ms=10, service_us=0))
    # the first arrival is one period after start: 4 ms; items at 4, 8, 12 -> flush at 14
    assert b.trigger.tolist() == ["timer"]
    assert b["size"].tolist() == [3]
    assert b.t_flush_s.tolist() == pytest.approx([0.014])


def test_size_flush_happens_at_once_and_stops_the_timer():
    b = batches(open_case(n=5, rate=1000.0, size=2, timeout_ms=10, service_us=0))
    # arrivals at 1..5 ms: (1,2) size at 2 ms, (3,4) size at 4 ms, (5) timer at 15 ms
    assert b.trigger.tolist() == ["size", "size", "timer"]
    assert b.t_flush_s.tolist() == pytest.approx([0.002, 0.004, 0.015])


def test_cycle_timer_is_anchored_at_the_previous_flush_not_the_first_item():
    # cycle timer: cycles end at 10, 20 ms whatever the items do; items at 4, 8, 12 ms.
    b = batches(open_case(n=3, rate=250.0, timeout_ms=10, service_us=0, timer="cycle"))
    assert b.trigger.tolist() == ["timer", "timer"]
    assert b["size"].tolist() == [2, 1]
    assert b.t_flush_s.tolist() == pytest.approx([0.010, 0.020])


def test_cycle_timer_restarts_after_an_inline_flush():
    # inline flush of 2 ms: cycle 1 ends at 10 ms, busy to 12, next cycle ends at 22 ms.
    b = batches(open_case(n=2, rate=1000 / 9, timeout_ms=10, service_us=2000, timer="cycle"))
    assert b.t_flush_s.tolist() == pytest.approx([0.010, 0.022])


def test_drain_mode_flushes_a_single_item_at_once():
    b = batches(open_case(n=2, rate=100.0, drain=True, service_us=0))
    assert b.trigger.tolist() == ["drain", "drain"]
    assert b["size"].tolist() == [1, 1]
    assert b.t_flush_s.tolist() == pytest.approx([0.01, 0.02])


def test_drain_mode_takes_what_queued_while_the_worker_was_busy():
    # inline 5 ms service; items every 1 ms: 1 item, then the 5 that queued, ...
    b = batches(open_case(n=5, rate=1000.0, drain=True, service_us=5000, dispatch="inline"))
    assert b["size"].tolist() == [1, 4]
    assert b.t_flush_s.tolist() == pytest.approx([0.001, 0.006])


def test_drain_respects_the_size_cap():
    # 4 inputs at once, size 3: one full batch then a 1-item drain batch
    b = batches(block_case(n=1, k=4, size=3, drain=True, service_us=100, dispatch="background"))
    assert b["size"].tolist() == [3, 1]
    assert b.trigger.tolist() == ["size", "drain"]


def test_tick_mode_flushes_on_the_fixed_cadence():
    # ticker of 5 ms created at 0; items at 3, 6, 9 ms -> ticks at 5 (1 item), 10 (2 items)
    b = batches(open_case(n=3, rate=1000 / 3, tick_ms=5, service_us=0))
    assert b.trigger.tolist() == ["tick", "tick"]
    assert b["size"].tolist() == [1, 2]
    assert b.t_flush_s.tolist() == pytest.approx([0.005, 0.010])


def test_pool_blocks_the_worker_until_a_slot_frees():
    # pool of 1, size 1, 4 ms service, 3 items at once. Batch 2 closes at 0 and the worker
    # blocks on the hand-off until 4 ms; only then does it receive item 3 (closes at 4 ms).
    b = batches(block_case(n=1, k=3, size=1, service_us=4000, dispatch="pool",
                           max_concurrent=1))
    assert b.t_flush_s.tolist() == pytest.approx([0.0, 0.0, 0.004])
    assert b.t_start_s.tolist() == pytest.approx([0.0, 0.004, 0.008])


def test_background_dispatch_runs_batches_in_parallel():
    b = batches(block_case(n=1, k=3, size=1, service_us=4000, dispatch="background"))
    assert b.t_done_s.tolist() == pytest.approx([0.004, 0.004, 0.004])


def test_put_blocks_when_the_channel_is_full():
    # size 1, queue factor 1 -> 1 buffered slot; inline 1 ms service; 3 inputs at once.
    run = simulate(block_case(n=1, k=3, size=1, queue_factor=1, service_us=1000,
                              dispatch="inline"), 0)
    items = run.frames()["items"]
    # item 0 taken at 0 (in service to 1 ms), item 1 buffered, item 2's Put blocks until
    # the worker takes item 1 at 1 ms; the producer is blocked meanwhile.
    assert items.t_put_s.tolist() == pytest.approx([0.0, 0.0, 0.0])
    assert items.put_block_s.tolist() == pytest.approx([0.0, 0.0, 0.001])
    assert items.t_done_s.tolist() == pytest.approx([0.001, 0.002, 0.003])


def test_close_flushes_the_remainder_at_once():
    case = open_case(n=3, rate=1000.0, size=10, timeout_ms=1000, service_us=0)
    case = replace(case, workload=replace(case.workload, close_after_last=True))
    b = batches(case)
    assert b.trigger.tolist() == ["close"]
    assert b.t_flush_s.tolist() == pytest.approx([0.003])
