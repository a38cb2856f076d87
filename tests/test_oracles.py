"""Closed-form oracles (first-item timer, constant service time S)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from simhelp import block_case

from simbatch.batching import (
    BatcherConfig,
    Case,
    OpenLoopWorkload,
    ServiceConfig,
    replicate,
    simulate,
)
from simbatch.core.results import ci95_half_width

T, S = 0.010, 0.0005


@pytest.mark.parametrize("n,k", [(1, 1), (50, 2), (200, 3), (37, 99)])
def test_sequential_block_time_is_n_times_timer_plus_service(n, k):
    run = simulate(block_case(n=n, k=k, size=100, timeout_ms=T * 1e3, service_us=S * 1e6), 3)
    assert run.block_time_s == pytest.approx(n * (T + S), rel=1e-9)


@pytest.mark.parametrize("dispatch,mc", [("inline", None), ("background", None), ("pool", 4)])
@pytest.mark.parametrize("n,c,k", [(1000, 4, 3), (1000, 16, 3), (333, 7, 2), (100, 33, 3)])
def test_fanout_block_time_is_ceil_n_over_c_times_timer_plus_service(n, c, k, dispatch, mc):
    assert c * k < 100
    case = block_case(n=n, k=k, fanout="errgroup", cap=c, size=100, timeout_ms=T * 1e3,
                      service_us=S * 1e6, dispatch=dispatch, max_concurrent=mc)
    assert simulate(case, 5).block_time_s == pytest.approx(math.ceil(n / c) * (T + S), rel=1e-9)


@pytest.mark.parametrize("size,rate", [(10, 1000.0), (50, 20_000.0)])
def test_size_only_batcher_mean_wait_is_size_minus_one_over_two_lambda(size, rate):
    # Timer far beyond any fill time; n a multiple of size so every batch is a size flush.
    n = size * 100
    case = Case(workload=OpenLoopWorkload(n_transactions=n, rate_per_s=rate, arrival="poisson"),
                batcher=BatcherConfig(size=size, timeout_ms=1e9, dispatch="background"),
                service=ServiceConfig(fixed_us=0))
    runs = replicate(case, 20, seed=11)
    waits = np.array([r.frames()["items"].batch_wait_s.mean() for r in runs])
    assert all((r.frames()["batches"].trigger == "size").all() for r in runs)
    theory = (size - 1) / (2 * rate)
    half = ci95_half_width(waits)
    assert abs(waits.mean() - theory) <= half, (waits.mean(), theory, half)
    assert half < 0.1 * theory  # the interval is tight enough to mean something
