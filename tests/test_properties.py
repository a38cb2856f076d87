"""Hypothesis invariants over random configurations: both timer versions, drain on and off,
tick mode, every dispatch mode, blocking channels, permit pools, closed and open loops."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simbatch.batching import (
    BatcherConfig,
    BlockWorkload,
    Case,
    ClientConfig,
    HostConfig,
    OpenLoopWorkload,
    ServiceConfig,
    StatsConfig,
    simulate,
)

EPS = 1e-9


@st.composite
def batchers(draw):
    dispatch = draw(st.sampled_from(["inline", "background", "pool"]))
    drain = draw(st.booleans())
    tick = None if drain else draw(st.one_of(st.none(), st.floats(0.2, 20)))
    timer = draw(st.sampled_from(["first_item", "cycle"]))
    return BatcherConfig(
        size=draw(st.integers(1, 12)),
        timeout_ms=draw(st.floats(0.0 if timer == "first_item" else 0.05, 20.0)),
        timer=timer, tick_ms=tick, drain=drain,
        dispatch=dispatch,
        max_concurrent=draw(st.integers(1, 4)) if dispatch == "pool" else None,
        queue_factor=draw(st.integers(1, 3)))


@st.composite
def workloads(draw):
    inputs = draw(st.one_of(st.integers(0, 5),
                            st.just({"kind": "discrete", "values": [1, 2, 7],
                                     "probs": [0.5, 0.3, 0.2]})))
    if draw(st.booleans()):
        fanout = draw(st.sampled_from(["sequential", "errgroup"]))
        return BlockWorkload(n_transactions=draw(st.integers(1, 40)), inputs_per_tx=inputs,
                             fanout=fanout,
                             cap=draw(st.integers(1, 12)) if fanout == "errgroup" else None,
                             key_space=draw(st.one_of(st.none(), st.integers(1, 20))))
    return OpenLoopWorkload(n_transactions=draw(st.integers(1, 60)),
                            rate_per_s=draw(st.floats(10, 5000)),
                            arrival=draw(st.sampled_from(["poisson", "periodic"])),
                            inputs_per_tx=inputs, close_after_last=draw(st.booleans()))


@st.composite
def services(draw):
    noise = draw(st.sampled_from(["constant", "lognormal", "empirical"]))
    return ServiceConfig(fixed_us=draw(st.floats(0, 3000)), per_record_us=draw(st.floats(0, 50)),
                         cost_basis=draw(st.sampled_from(["records", "unique_keys"])),
                         noise=noise, sigma=0.5, ratios=(0.8, 1.0, 1.7),
                         single_record_us=draw(st.one_of(st.none(), st.floats(1, 100))),
                         max_in_flight=draw(st.one_of(st.none(), st.integers(1, 3))),
                         client=ClientConfig(
                             parse_ns_per_record=draw(st.sampled_from([0.0, 500.0])),
                             cores=draw(st.one_of(st.none(), st.integers(1, 3)))),
                         stats=StatsConfig(
                             variant=draw(st.sampled_from(["disabled", "broken", "sharded"]))))


@st.composite
def cases(draw):
    return Case(workload=draw(workloads()), batcher=draw(batchers()), service=draw(services()),
                host=HostConfig(timer_overshoot_us=draw(st.sampled_from([0, 90]))))


def max_in_flight(batches: pd.DataFrame, end: str = "t_done_s") -> int:
    if batches.empty:
        return 0
    events = pd.concat([pd.DataFrame({"t": batches.t_start_s, "d": 1}),
                        pd.DataFrame({"t": batches[end], "d": -1})])
    return int(events.sort_values(["t", "d"]).d.cumsum().max())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), seed=st.integers(0, 2**32 - 1))
def test_invariants(case, seed):
    run = simulate(case, seed)
    f = run.frames()
    items, batches, txns = f["items"], f["batches"], f["txns"]
    # every item completes exactly once: it sits in one batch, and batch sizes add up
    assert (items.batch >= 0).all()
    assert batches["size"].sum() == len(items)
    assert (items.groupby("batch").size().reindex(batches.batch).to_numpy()
            == batches["size"].to_numpy()).all()
    assert items.t_done_s.notna().all() and txns.t_end_s.notna().all()
    assert len(txns) == case.workload.n_transactions
    # no batch exceeds the cap, no empty batch
    assert batches["size"].between(1, case.batcher.size).all()
    # no timer flush later than the timer allows
    timer = batches[batches.trigger == "timer"]
    limit = (case.batcher.timeout_ms + case.host.timer_overshoot_us / 1e3) / 1e3
    assert (timer.age_s <= limit + EPS).all()
    # no negative wait
    for col in ("put_block_s", "batch_wait_s", "dispatch_wait_s", "service_s"):
        assert (items[col] >= -EPS).all(), col
    # FIFO dispatch: items enter batches in the order they entered the channel
    order = items.sort_values(["t_enqueued_s", "item"], kind="stable").batch.to_numpy()
    if case.batcher.queue_factor * case.batcher.size > 0 and (items.put_block_s <= EPS).all():
        assert (np.diff(order) >= 0).all()
    # in-flight limits hold: the permit pool always; the dispatch pool except for Close's
    # remainder, which go-batcher v2.0.4 runs synchronously on the worker, outside the pool
    assert max_in_flight(batches, "t_server_done_s") <= (case.service.max_in_flight
                                                         or len(batches))
    if case.batcher.dispatch == "pool":
        not_close = batches[batches.trigger != "close"]
        assert max_in_flight(not_close) <= case.batcher.max_concurrent


@settings(max_examples=30, deadline=None)
@given(case=cases(), seed=st.integers(0, 2**32 - 1))
def test_same_seed_gives_identical_frames(case, seed):
    a, b = simulate(case, seed).frames(), simulate(case, seed).frames()
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), seed=st.integers(0, 2**32 - 1))
def test_a_transaction_s_puts_in_one_step_give_the_run_of_one_put_at_a_time(case, seed):
    # the producers hand a transaction's items over in one step when none of them blocks
    # (Channel.fits); refusing that path always must change nothing: small queues (size x
    # queue_factor) make both paths occur
    from simbatch.batching.channel import Channel

    bulk = simulate(case, seed)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Channel, "fits", lambda self, k: False)
        one_by_one = simulate(case, seed)
    assert bulk.end_s == one_by_one.end_s
    a, b = bulk.frames(), one_by_one.frames()
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name], check_exact=True)


# ------------------------------------------------------------------ with the client's CPU on
@st.composite
def go_cases(draw):
    """Block workloads on 1 to 3 modelled processors, random costs, a quiet host or one
    with stalls and slow wake-ups, sleeping, CPU-bound or service-call flushes."""
    from simbatch.batching import GoConfig

    batcher = draw(batchers())
    batcher = BatcherConfig(**{**batcher.__dict__, "tick_ms": None})
    fanout = draw(st.sampled_from(["sequential", "errgroup"]))
    workload = BlockWorkload(n_transactions=draw(st.integers(1, 40)),
                             inputs_per_tx=draw(st.integers(0, 5)), fanout=fanout,
                             cap=draw(st.integers(1, 50)) if fanout == "errgroup" else None,
                             key_space=draw(st.one_of(st.none(), st.integers(1, 20))))
    cost = st.floats(0, 5000)
    go = GoConfig(gomaxprocs=draw(st.integers(1, 3)), flush_cpu=draw(st.booleans()),
                  spawn_ns=draw(cost), switch_ns=draw(cost), ready_ns=draw(cost),
                  wakep_ns=draw(cost), put_ns=draw(cost), flush_ns=draw(cost),
                  alloc_ns=draw(cost), alloc_kib_ns=draw(st.floats(0, 50)),
                  lock_ns=draw(st.sampled_from([0.0, 47.0, 2000.0])),
                  lock_sleep=draw(st.floats(0, 1)))
    grid = tuple(np.linspace(0, 1, 11))
    host = draw(st.sampled_from([
        HostConfig(timer_overshoot_us=90),
        HostConfig(quantiles=grid, wake_us=tuple(np.geomspace(1, 2000, 11)),
                   backoff_us=tuple(np.linspace(3, 80, 11)), stall_per_s=(300.0, 600.0),
                   stall_us={"1": tuple(np.geomspace(30, 5000, 11)),
                             "2": tuple(np.geomspace(30, 9000, 11))},
                   speed_ratio=tuple(np.linspace(1.0, 1.2, 11)),
                   cpu_noise_ns=draw(st.sampled_from([0.0, 84.0, 5000.0])))]))
    return Case(workload=workload, batcher=batcher, service=draw(services()), host=host,
                go=go)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=go_cases(), seed=st.integers(0, 2**32 - 1))
def test_invariants_with_the_cpu_on(case, seed):
    run = simulate(case, seed)
    f = run.frames()
    items, batches, txns = f["items"], f["batches"], f["txns"]
    # every item completes exactly once, in one batch; nothing is lost or duplicated
    assert (items.batch >= 0).all()
    assert batches["size"].sum() == len(items) == items.item.nunique()
    assert (items.groupby("batch").size().reindex(batches.batch).to_numpy()
            == batches["size"].to_numpy()).all()
    assert items.t_done_s.notna().all() and txns.t_end_s.notna().all()
    assert len(txns) == case.workload.n_transactions
    assert batches["size"].between(1, case.batcher.size).all()
    for col in ("put_block_s", "batch_wait_s", "dispatch_wait_s", "service_s"):
        assert (items[col] >= -EPS).all(), col
    order = items.sort_values(["t_enqueued_s", "item"], kind="stable").batch.to_numpy()
    if (items.put_block_s <= EPS).all():
        assert (np.diff(order) >= 0).all()
    if case.batcher.dispatch == "pool":
        assert max_in_flight(batches) <= case.batcher.max_concurrent
    # the processors cannot have done more than gomaxprocs x the block's time of work (a
    # run's effects land at its start: the driver's last run may end a quantum later).
    # With [host] cpu_noise_ns a run's CPU is a lognormal draw with no upper bound, and the
    # runs still going at the block's end (the driver's last, at least) add theirs after
    # it (a 449 ns run drew 10 us in a CI run), so the bound is held on the same case with
    # the noise off.
    quiet = run if not case.host.cpu_noise_ns else simulate(
        dataclasses.replace(case, host=dataclasses.replace(case.host, cpu_noise_ns=0.0)), seed)
    assert quiet.block_time_s >= quiet.go_cpu_s / case.go.gomaxprocs - 1e-5


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=go_cases(), seed=st.integers(0, 2**32 - 1))
def test_same_seed_gives_identical_frames_with_the_cpu_on(case, seed):
    a, b = simulate(case, seed).frames(), simulate(case, seed).frames()
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name])


def _with_one_timeout_per_event():
    """The scheduler as it was before its event heap: each of its events a SimPy timeout."""
    from simbatch.batching.scheduler import Scheduler

    class TimeoutScheduler(Scheduler):
        def _at(self, when, callback, *args):
            event = self.env.timeout(max(0.0, when - self.env.now))
            event.callbacks.append(lambda _ev: self._fired(callback, args))

        def _fired(self, callback, args):
            self.now = self.env.now
            callback(*args)

        def _sim_time(self):
            return self.env.peek()

    return TimeoutScheduler


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=go_cases(), seed=st.integers(0, 2**32 - 1))
def test_the_scheduler_s_event_heap_runs_events_in_simpy_s_order(case, seed):
    # the heap must give exactly the run that one SimPy timeout per event gives, service
    # calls' SimPy events interleaved with the scheduler's included
    from simbatch import native
    from simbatch.batching import engine

    if "scheduler" in native.compiled():
        pytest.skip("the compiled Scheduler (simbatch compile) cannot be subclassed in Python; "
                    "the next test runs this one on the package's sources")

    heap = simulate(case, seed)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine, "Scheduler", _with_one_timeout_per_event())
        timeouts = simulate(case, seed)
    assert (heap.end_s, heap.go_cpu_s, heap.go_counts) == (
        timeouts.end_s, timeouts.go_cpu_s, timeouts.go_counts)
    a, b = heap.frames(), timeouts.frames()
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name], check_exact=True)


def test_the_event_heap_property_runs_on_the_sources_when_the_package_is_compiled(tmp_path):
    # the property above subclasses the Scheduler, which its compiled module does not allow:
    # where the package is compiled (the README's setup), run it in a child process on a
    # copy of the package's sources (first on the path: the child runs in the copy, and
    # pytest appends the test's folders rather than putting them first)
    import subprocess
    import sys
    from pathlib import Path

    from simbatch import native

    if "scheduler" not in native.compiled():
        pytest.skip("the package runs as Python: the test above runs the property itself")
    native.copy_package(tmp_path)
    here = Path(__file__).resolve()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--import-mode=append",
         f"{here}::test_the_scheduler_s_event_heap_runs_events_in_simpy_s_order"],
        cwd=tmp_path, capture_output=True, text=True,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:]
