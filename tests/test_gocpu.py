"""The client's CPU and Go's scheduler (``[go]``), and the host's measured timers
(``[host]``): the scheduler's rules on micro-programs, exact traces of the pipeline with one
processor, what must not move with the CPU off, and bad input."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import simpy
from cpu_off_cases import build, case_kwargs, digest
from hypothesis import given, settings
from hypothesis import strategies as st
from simhelp import ROOT

from simbatch.batching import BatcherConfig, BlockWorkload, Case, ServiceConfig, simulate
from simbatch.batching.gocpu import GoConfig
from simbatch.batching.hosttiming import HostConfig, HostTiming
from simbatch.batching.scheduler import PARK, SYNC, Scheduler
from simbatch.batching.slicepool import SlicePool
from simbatch.core.errors import ConfigError
from simbatch.planning.scenario import load_scenario

HOST = HostConfig(**tomllib.loads((ROOT / "models/host-loopback.toml").read_text())["host"])
FREE = {name: 0.0 for name in ("spawn_ns", "exit_ns", "switch_ns", "ready_ns", "wakep_ns",
                               "chan_ns", "put_ns", "item_ns", "flush_ns", "timer_ns",
                               "done_ns")}


# ------------------------------------------------------------------ the CPU off
def test_with_the_cpu_off_output_is_identical_to_the_engine_before_it():
    expected = json.loads((ROOT / "tests/data/cpu_off_digests.json").read_text())
    got = [digest(build(k), seed) for k in case_kwargs() for seed in (1, 2)]
    assert len(got) == len(expected) == 90
    assert got == expected


def test_a_default_go_section_is_the_cpu_off():
    case = build(case_kwargs()[0])
    assert case.go == GoConfig() and not case.go.enabled
    a = simulate(case, 3).frames()
    b = simulate(replace(case, go=GoConfig(spawn_ns=1e6)), 3).frames()
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name])


# ------------------------------------------------------------------ scheduler rules
def _go_each(env, sched, n, child):
    """A main goroutine makes ``n`` goroutines ``child(g, i)`` with go statements, then
    runs 1 us of CPU; the simulation runs to its end."""
    def main(g):
        for i in range(n):
            sched.go(child, i)
        yield 1000.0

    sched.start(main)
    env.run()


def _sched(procs=1, wake_us=10.0, backoff_us=3.0, **costs):
    env = simpy.Environment()
    go = GoConfig(gomaxprocs=procs, **{**FREE, **costs})
    host = HostConfig(wake_us=(wake_us,), backoff_us=(backoff_us,))
    return env, Scheduler(env, go, np.random.default_rng(0), HostTiming(host))


def test_runnext_runs_the_last_readied_goroutine_first_then_the_queue_in_order():
    # newproc puts each new goroutine in runnext, kicking the previous one to the run queue
    env, sched = _sched()
    order = []

    def child(g, name):
        order.append(name)
        yield 100.0

    def main(g):
        for name in "abcd":
            sched.go(child, name)
            yield 100.0

    sched.start(main)
    env.run()
    assert order == ["d", "a", "b", "c"]


def test_an_idle_processor_wakes_and_steals_half_of_the_run_queue():
    env, sched = _sched(procs=2, wake_us=5.0)
    ran_on = {}

    def child(g, i):
        ran_on[i] = (round(sched.now * 1e6, 3), g.p.id)
        yield 20_000.0                 # 20 us each

    def main(g):
        for i in range(9):
            sched.go(child, i)
        yield 1000.0                   # 1 us of spawning, then main ends

    sched.start(main)
    env.run()
    # P1 wakes 5 us after the first go statement and steals half of P0's queue (0..7 are
    # queued, 8 is in runnext): 0..3 (runs the last of them first), P0 keeps 4..7
    assert ran_on[8] == (1.0, 0)
    assert {i for i, (_, p) in ran_on.items() if p == 1} == {0, 1, 2, 3}
    assert ran_on[3] == (5.0, 1)


def test_a_running_processor_s_runnext_is_stolen_only_after_the_back_off():
    env, sched = _sched(procs=2, wake_us=5.0, backoff_us=50.0)
    started = {}

    def worker(g):
        started["worker"] = (round(sched.now * 1e6, 3), g.p.id)
        yield 100.0

    def busy(g):
        sched.go(worker)               # into P0's runnext; P0 then runs 500 us of CPU
        yield 500_000.0

    sched.start(busy)
    env.run()
    # the idle P1 wakes after 5 us, finds only P0's runnext, backs off 50 us, steals it
    assert started["worker"] == (55.0, 1)


def _run_lengths(noise, cost_ns, n):
    """How long each of ``n`` runs of ``cost_ns`` of CPU takes (ns) with ``[host]
    cpu_noise_ns = noise``: one goroutine on one processor, each run ended by a SYNC."""
    env = simpy.Environment()
    sched = Scheduler(env, GoConfig(gomaxprocs=1, **FREE), np.random.default_rng(0),
                      HostTiming(HostConfig(cpu_noise_ns=noise), np.random.default_rng(1)))
    marks = []

    def body(g):
        for _ in range(n + 1):
            marks.append(sched.now)    # this run's start: the last one's end
            yield cost_ns
            yield SYNC

    sched.start(body)
    env.run()
    return np.diff(marks) * 1e9


def test_the_cpu_noise_has_mean_one_and_a_variance_that_adds_up_over_a_run_s_pieces():
    # [host] cpu_noise_ns: a run of c ns takes c x a lognormal of mean 1, variance noise / c;
    # without it every run takes exactly its cost
    assert _run_lengths(0.0, 3600.0, 50) == pytest.approx(np.full(50, 3600.0))
    assert np.isfinite(_run_lengths(84.0, 1e-300, 50)).all()   # no overflow to NaN
    noise = 84.0
    for c in (400.0, 3600.0, 500_000.0):
        runs = _run_lengths(noise, c, 20_000)
        assert runs.min() > 0
        assert runs.mean() == pytest.approx(c, rel=0.01)
        assert runs.var() / c == pytest.approx(noise, rel=0.1)
    # so nine runs of 400 ns in a row vary as much as one of 3.6 us (a sum of pieces)
    nine = _run_lengths(noise, 400.0, 18_000).reshape(-1, 9).sum(axis=1)
    one = _run_lengths(noise, 3600.0, 2_000)
    assert nine.std() == pytest.approx(one.std(), rel=0.1)


def test_a_slower_processor_takes_longer_for_the_same_cpu_and_the_first_keeps_its_speed():
    # [host] speed_ratio: one ratio drawn per processor after the first, slower or faster
    grid = tuple(np.linspace(0, 1, 11))
    host = HostConfig(quantiles=grid, speed_ratio=(1.1,) * 11)
    timing = HostTiming(host, np.random.default_rng(3))
    speeds = [timing.processor_speeds(2) for _ in range(40)]
    assert all(s[0] == 1.0 and s[1] == pytest.approx(1.1 ** (1 if s[1] > 1 else -1))
               for s in speeds)
    assert {s[1] > 1 for s in speeds} == {True, False}
    assert HostTiming(HostConfig(), np.random.default_rng(3)).processor_speeds(4) == [1.0] * 4
    env = simpy.Environment()
    sched = Scheduler(env, GoConfig(gomaxprocs=2, **FREE), np.random.default_rng(0),
                      HostTiming(HostConfig(wake_us=(5.0,), backoff_us=(3.0,))))
    sched.ps[1].slowness = 1.5
    ends = {}

    def spin(g, i):
        yield 100_000.0                # 100 us of CPU
        ends[i] = (round(sched.now * 1e6, 3), g.p.id)

    _go_each(env, sched, 2, spin)
    # P0 runs its runnext (1) after main's 1 us; P1 wakes at 5 us and steals 0
    assert ends == {1: (101.0, 0), 0: (155.0, 1)}


def test_two_running_processors_interleave_a_shared_channel_below_a_microsecond():
    # while P1 runs, P0's long run of small operations ends every SHARED_QUANTUM_NS, so a
    # value P1 puts in the buffer meanwhile is seen by P0's next poll, not a whole run later
    from simbatch.batching.gosync import Chan
    from simbatch.batching.scheduler import SHARED_QUANTUM_NS

    env, sched = _sched(procs=2, wake_us=1.0)
    ch = Chan(sched, 100)
    seen = []

    def poller(g):
        for _ in range(200):
            ok, value, _ = ch.poll()
            if ok:
                seen.append((sched.now, value))
            yield 100.0                # 100 ns per poll: 20 us in all

    def putter(g):
        yield 1500.0                   # 1.5 us after it starts, on the other processor
        put.append(sched.now)
        ch.try_send("x")
        yield 100.0

    put: list[float] = []

    def main(g):
        sched.go(putter)
        yield from poller(g)

    sched.start(main)
    env.run()
    (t, value), = seen
    assert value == "x" and put[0] < 20e-6
    assert 0 <= t - put[0] <= (SHARED_QUANTUM_NS + 100.0) * 1e-9


def _contend(lock_sleep, lock_ns=200.0, wake_us=2.0, tail=False):
    """P1 sends 40 values, one each 250 ns; from 1 us on, P0 takes the item channel's lock
    every 100 ns, 100 times. For each of the two: when it took the lock, how long it spun
    there, and how many times it slept; and the channel. ``tail``: a thread woken from
    the lock tries again at the waiters' tail (goclient's ``_lock_sleep``); the most
    sleeps of one acquisition are in ``slept["most"]``."""
    from simbatch.batching.gosync import Chan

    env, sched = _sched(procs=2, wake_us=wake_us, lock_ns=lock_ns, lock_sleep=lock_sleep)
    ch = Chan(sched, 1000)
    took: dict[str, list[tuple[float, float]]] = {"putter": [], "poller": []}
    slept = dict.fromkeys(took, 0)
    most = 0

    def take(who):
        nonlocal most
        if not took[who]:
            took[who].append((sched.now + sched.run_ns * 1e-9, -1.0))     # its first try
        spin, sleeps = ch.lock(0.0), 0
        while spin < 0:
            slept[who] += 1
            sleeps += 1
            sched.lock_sleep()
            yield 0.0
            spin = ch.lock(0.0, tail)
        most = max(most, sleeps)
        took[who].append((sched.now + sched.run_ns * 1e-9, spin))
        return spin

    def putter(g):
        for i in range(40):
            spin = yield from take("putter")
            ch.try_send(i)
            yield 250.0 + spin

    def poller(g):
        yield 1000.0
        for _ in range(100):
            spin = yield from take("poller")
            yield 100.0 + spin

    def main(g):
        sched.go(putter)
        yield from poller(g)

    sched.start(main)
    env.run()
    return took, {**slept, "most": most}, ch


def test_an_operation_that_finds_the_channel_locked_spins_or_sleeps_a_wake_up():
    # lock_sleep 0: an operation within lock_ns of the other processor's waits for it to let
    # go, as CPU, never longer than lock_ns
    # (an operation of the other that the model ran ahead, later in time, counts too, so a
    # spin lasts at most twice lock_ns)
    took, slept, ch = _contend(0.0)
    spins = [spin for who in took for _, spin in took[who][1:] if spin > 0]
    assert len(spins) == ch.lock_held > 5
    assert slept["putter"] + slept["poller"] == ch.lock_sleeps == 0
    assert max(spins) <= 2 * 200.0
    # lock_sleep 1: each operation that finds it held sleeps a wake-up (2 us), holding its
    # processor, then tries again: its goroutine ends that much later
    took, slept, ch = _contend(1.0)
    assert slept["putter"] + slept["poller"] == ch.lock_sleeps == ch.lock_held > 0
    for who, n, step in (("putter", 40, 250e-9), ("poller", 100, 100e-9)):
        first, last = took[who][0][0], took[who][-1][0]
        assert len(took[who]) == n + 1
        assert last - first == pytest.approx((n - 1) * step + slept[who] * 2e-6, abs=1e-9)
    # without the lock (lock_ns 0) nothing waits
    took, slept, ch = _contend(1.0, lock_ns=0.0)
    assert not ch.locking and ch.lock_held == 0 == slept["putter"] + slept["poller"]
    assert np.diff([t for t, _ in took["poller"][1:]]) == pytest.approx(100e-9)


def test_a_thread_woken_from_the_lock_at_the_waiters_tail_spins_instead_of_sleeping_again():
    # lock2 (src/runtime/lock_spinbit.go): an M woken at the bottom of the waiters' stack
    # (atTail: no other M slept on the lock) spins, as the spin bit's holder does, and gets
    # the lock within microseconds; it does not sleep again. Here every operation that finds
    # the lock held would sleep (lock_sleep 1), and the other processor holds it most of
    # the time: a thread trying again as it first tried sleeps several times running for one
    # acquisition; at the tail, once.
    _, again, _ = _contend(1.0)
    _, tail, ch = _contend(1.0, tail=True)
    assert again["most"] > 1
    assert tail["most"] == 1 and ch.lock_sleeps == tail["putter"] + tail["poller"] > 0


def test_the_lock_convoy_makes_two_processor_drain_blocks_collapse_as_go_s_do():
    # drain, cap = all, 64 transactions at GOMAXPROCS 2 with a sleeping flush: the worker
    # that sleeps on the item channel's lock while the other processor keeps putting comes
    # back to a backlog, and the block becomes a few large flushes in some runs
    # (validate/gobatcher/data/README.md: 50-60 % of such blocks in a run of these cells
    # alone, 7-33 % in the full grid); without the lock the model's never do
    model = tomllib.loads((ROOT / "models/gobatcher-loopback.toml").read_text())["go"]
    model.pop("model", None)
    go = GoConfig(**{**model, "gomaxprocs": 2})
    case = Case(workload=BlockWorkload(n_transactions=64, inputs_per_tx=3, fanout="errgroup",
                                       cap=64),
                batcher=BatcherConfig(size=4096, timeout_ms=5, drain=True, dispatch="pool",
                                      max_concurrent=64),
                service=ServiceConfig(fixed_us=500, is_sleep=True), host=HOST, go=go)
    assert go.lock_ns > 0

    def few(c):
        return sum(len(simulate(c, seed).recorder.batch_size) <= 8 for seed in range(30))

    assert 3 <= few(case) <= 24
    assert few(replace(case, go=replace(go, lock_ns=0.0))) == 0


def test_goroutines_passing_the_processor_through_runnext_share_a_slice_that_sysmon_cuts():
    # a and b ready each other into runnext, so c, in the run queue, never runs -- until
    # sysmon sees the processor's schedtick unchanged for 10 ms and preempts the one
    # running: it goes to the global queue, and the run queue's head starts a new slice
    env, sched = _sched()
    started = {}

    def ping(g, peer, serve):
        if not serve:
            yield PARK                     # b waits for the ball
        while sched.now < 0.1:
            yield 100_000.0                # 100 us of CPU
            sched.ready(peer[0])
            yield PARK

    def starved(g):
        started["c"] = sched.now
        yield 1000.0

    def main(g):
        sched.go(starved)
        to_a: list = []
        b = sched.parked(ping, to_a, False)
        to_a.append(sched.go(ping, [b], True))   # a in runnext, c in the run queue
        yield 1000.0

    sched.start(main)
    env.run()
    # sysmon samples every 10 ms from a random phase: the slice is cut 10-20 ms in
    assert 10e-3 <= started["c"] <= 20.2e-3


def test_a_full_local_run_queue_overflows_half_to_the_global_queue_which_every_61st_slice_serves():
    env, sched = _sched()
    order = []

    def child(g, i):
        order.append(i)
        yield 1000.0

    def main(g):
        for i in range(300):
            sched.go(child, i)
        # runqputslow: when 256 is kicked to a full queue, 0..127 and 256 go to the global
        # queue; the local queue keeps 128..255 and 257..298, 299 is in runnext
        assert len(sched._global) == 129 and len(sched.ps[0].runq) == 170
        yield 1000.0

    sched.start(main)
    env.run()
    assert sorted(order) == list(range(300))
    # while the local queue lasts, the global queue's goroutines (in their order) run one
    # per 61 slices: 60 of the local queue's between two of them
    glob = [0, *range(1, 128), 256]
    at = [order.index(i) for i in glob[:3]]
    assert at[1] - at[0] == at[2] - at[1] == 61
    local = [i for i in order[at[0] + 1:at[1]]]
    assert len(local) == 60 and all(128 <= i < 300 and i != 256 for i in local)
    assert local == sorted(local)


def test_a_timer_fires_at_the_next_scheduling_point_of_a_busy_processor():
    env, sched = _sched()
    woke = []

    def busy(g):
        yield 150_000.0                # 150 us of CPU, then it ends

    def main(g):
        sched.go(busy)
        sched.timer(100e-6, lambda _p: sched.ready(g))
        yield PARK                     # sleep 100 us
        woke.append(round(sched.now * 1e6, 3))

    sched.start(main)
    env.run()
    # the timer expires at 100 us while busy runs; Go runs timers in schedule(), so it fires
    # when busy ends at 150 us
    assert woke == [150.0]


def test_with_every_processor_idle_a_sleep_takes_what_the_host_measured():
    env = simpy.Environment()
    go = GoConfig(gomaxprocs=1, **FREE)
    sched = Scheduler(env, go, np.random.default_rng(0),
                      HostTiming(HOST, np.random.default_rng(1)))
    woke = []

    def sleeper(g):
        for _ in range(200):
            start = sched.now
            sched.timer(500e-6, lambda _p: sched.ready(g))
            yield PARK
            woke.append(sched.now - start)

    sched.start(sleeper)
    env.run()
    # an idle Go process sleeps in epoll_wait with a whole-millisecond timeout: ~1.1 ms
    assert 1.05e-3 < np.median(woke) < 1.15e-3


def test_a_block_starts_on_a_running_processor_so_its_first_sleeps_wait_from_idle():
    # The harness's main goroutine runs the block, so no thread waits in netpoll for the
    # process's other timers when it starts. The first round of 500 us flush sleeps then
    # ends whole milliseconds after the processor goes idle (the last flush's start), as
    # the harness's flushes do (full6: round 1 starts 0.11-0.33 ms, all end 1.43-1.54 ms),
    # not at a netpoll wait armed for another timer before the block began.
    case = Case(workload=BlockWorkload(n_transactions=240, inputs_per_tx=3,
                                       fanout="errgroup", cap=120),
                batcher=BatcherConfig(size=100, timeout_ms=10, dispatch="background"),
                service=ServiceConfig(fixed_us=500, is_sleep=True), host=HOST,
                go=GoConfig(gomaxprocs=1, other_timers_ms=(5.0, 10.0)))
    for seed in range(1, 6):
        b = simulate(case, seed).frames()["batches"].sort_values("t_start_s")
        first = b[b.t_start_s < b.t_start_s.min() + 0.4e-3]   # the first round's flushes
        assert len(first) == 3
        assert first.t_done_s.min() >= first.t_start_s.max() + 1e-3


# ------------------------------------------------------------------ the pipeline, 1 processor
def _drain_case(n, procs=1, fanout="errgroup", cap=None, flush_cpu=False, **go):
    cap = (cap or n) if fanout == "errgroup" else None
    return Case(workload=BlockWorkload(n_transactions=n, inputs_per_tx=3, fanout=fanout,
                                       cap=cap),
                batcher=BatcherConfig(size=4096, timeout_ms=5, drain=True, dispatch="pool",
                                      max_concurrent=64),
                service=ServiceConfig(fixed_us=500, is_sleep=not flush_cpu),
                go=GoConfig(gomaxprocs=procs, flush_cpu=flush_cpu, **go))


@pytest.mark.parametrize("n", [2, 5, 16])
def test_drain_with_one_processor_flushes_once_per_transaction(n):
    # the worker, readied by a transaction's first Put, waits in runnext until the
    # transaction blocks in Wait: it then takes exactly that transaction's 3 inputs
    b = simulate(_drain_case(n), 1).frames()["batches"]
    assert b["size"].tolist() == [3] * n
    assert (b.trigger == "drain").all()


def test_idle_batchers_waking_start_new_slices_so_sysmon_does_not_strand_a_flush():
    # drain mode hands the processor round through runnext (worker, flush goroutine,
    # transaction, driver); the harness's two idle v1 batchers, woken by their 5 and 10 ms
    # cycles through runnext, leave it empty when they block again, so the next goroutine
    # comes from the run queue and starts a new slice. Without them sysmon cuts the slice
    # after 10-20 ms and, more often than not, strands a flush goroutine of the pool of 4 in
    # the global queue: the worker then blocks on the hand-off and the rest of the block
    # collapses into large flushes (the harness at GOMAXPROCS 2 sees the same, data/README.md)
    # the host's CPU noise left out: with it some of these short blocks gather many
    # transactions per flush with no flush stranded (the harness's blocks of 1000 at
    # GOMAXPROCS 1 do not, nor do the model's: calibrate_gobatcher's table)
    go = dict(tomllib.loads((ROOT / "models/gobatcher-loopback.toml").read_text())["go"])
    host = replace(HOST, cpu_noise_ns=0.0)
    flushes = {}
    for others in ((5.0, 10.0), ()):
        case = Case(workload=BlockWorkload(n_transactions=300, inputs_per_tx=3,
                                           fanout="errgroup", cap=256),
                    batcher=BatcherConfig(size=100, timeout_ms=10, drain=True,
                                          dispatch="pool", max_concurrent=4),
                    service=ServiceConfig(fixed_us=500), host=host,
                    go=GoConfig(gomaxprocs=1, flush_cpu=True, other_timers_ms=others, **go))
        runs = [simulate(case, seed).frames()["batches"] for seed in (1, 2, 3)]
        flushes[others] = [(len(b), (b.t_done_s - b.t_start_s).max()) for b in runs]
    assert all(n >= 295 and longest < 0.6e-3 for n, longest in flushes[(5.0, 10.0)])
    assert all(n < 150 and longest > 10e-3 for n, longest in flushes[()])


def test_one_processor_serialises_cpu_bound_flushes():
    one = simulate(_drain_case(8, flush_cpu=True), 1)
    two = simulate(_drain_case(8, procs=2, flush_cpu=True), 1)
    assert one.block_time_s >= 8 * 500e-6
    assert two.block_time_s < 0.7 * one.block_time_s


def test_packed_threads_run_on_one_cpu_for_the_drawn_time():
    # [host] packed_us: from the run's first wakep one processor runs the goroutines
    case = _drain_case(8, procs=2, flush_cpu=True)
    one = simulate(_drain_case(8, flush_cpu=True), 1)
    two = simulate(case, 1)
    grid = (0.0, 0.5, 1.0)
    never = simulate(replace(case, host=HostConfig(quantiles=grid, packed_us=(0.0,) * 3)), 1)
    always = simulate(replace(case, host=HostConfig(quantiles=grid, packed_us=(1e6,) * 3)), 1)
    assert never.block_time_s == two.block_time_s
    assert always.block_time_s == pytest.approx(one.block_time_s, rel=0.05)
    assert always.go_cpu_s == pytest.approx(two.go_cpu_s, rel=0.05)   # one CPU, not more
    # a window shorter than the block: in between
    half = HostConfig(quantiles=grid, packed_us=(2000.0,) * 3)
    part = simulate(replace(case, host=half), 1).block_time_s
    assert two.block_time_s < part < always.block_time_s


def _packed(packed_us):
    """Two free processors (wake-ups of 5 us) packed for ``packed_us``, and a goroutine
    body ``child(g, i)`` that records when and where it starts into ``out`` and runs 20 us
    of CPU."""
    env = simpy.Environment()
    host = HostConfig(quantiles=(0.0, 1.0), wake_us=(5.0, 5.0), backoff_us=(3.0, 3.0),
                      packed_us=(packed_us, packed_us))
    sched = Scheduler(env, GoConfig(gomaxprocs=2, **FREE), np.random.default_rng(0),
                      HostTiming(host, np.random.default_rng(0)))
    out = {}

    def child(g, i):
        out[i] = (round(sched.now * 1e6, 3), g.p.id)
        yield 20_000.0                 # 20 us of CPU each

    return env, sched, out, child


def test_a_thread_woken_while_the_threads_are_packed_waits_for_the_window_to_end():
    # [host] packed_us: the kernel holds the woken thread off the running one's CPU, so the
    # goroutines it would steal run on the busy processor, at full speed, or wait
    def starts(packed_us):
        env, sched, out, child = _packed(packed_us)
        _go_each(env, sched, 4, child)
        return out
    free = starts(0.0)
    assert {p for _, p in free.values()} == {0, 1}          # the woken P1 steals some
    packed = starts(100.0)
    # the window (100 us from the first go statement) outlasts P0's 81 us of work: P0 runs
    # all four back to back at full speed, P1 never gets a goroutine
    assert sorted(packed.values()) == [(1.0, 0), (21.0, 0), (41.0, 0), (61.0, 0)]


def test_a_thread_waiting_for_the_packed_cpu_gets_it_once_the_running_thread_sleeps():
    # [host] packed_us: the woken thread waits for the running thread's CPU, not for the
    # window's end; once every running thread sleeps the CPU is free and it looks for work
    # then. So a sleep that falls due inside the window ends at the idle process's netpoll
    # wake (whole milliseconds), as the harness's do, not when the window ends.
    def sleep_ends(packed_us):
        env = simpy.Environment()
        host = replace(HOST, packed_us=(packed_us,) * len(HOST.quantiles))
        sched = Scheduler(env, GoConfig(gomaxprocs=2, **FREE), np.random.default_rng(0),
                          HostTiming(host, np.random.default_rng(1)))
        out = {}

        def sleeper(g):
            sched.timer(500e-6, lambda _p: sched.ready(g))
            yield PARK
            out["woke"] = sched.now

        def main(g):
            sched.go(sleeper)          # P1 idle: wakep, and the window starts
            yield 20_000.0             # 20 us, then main ends and the sleeper runs on P0

        sched.start(main)
        env.run()
        return out["woke"]
    free, packed = sleep_ends(0.0), sleep_ends(800.0)
    # both: the process idles at ~20 us and netpoll waits a whole millisecond
    assert 1.0e-3 < free < 1.2e-3
    assert packed == pytest.approx(free, abs=1e-9)          # not at the window's end, 0.8 ms


def test_the_packed_time_left_when_the_threads_sleep_packs_the_next_wake_up():
    # [host] packed_us is the run's packed time (the kernel's count of its threads' wait
    # over a block): a window closed early, when every running thread sleeps, leaves the
    # rest for the next wake-up of an idle processor. As in the harness's long blocks of
    # sleeping flushes, where each round after an idle spell runs on one processor.
    def second_round(packed_us):
        env, sched, out, child = _packed(packed_us)

        def sleeper(g):
            sched.timer(2e-3, lambda _p: sched.ready(g))
            yield PARK                     # the process idles: the first window closes
            for i in range(4):             # round 2: a wakep opens a window again
                sched.go(child, i)
            yield 1000.0

        def main(g):
            sched.go(sleeper)              # P1 idle: wakep, and the first window opens
            yield 1000.0

        sched.start(main)
        env.run()
        return out
    free = second_round(0.0)
    assert {p for _, p in free.values()} == {0, 1}          # the woken processor steals some
    # 500 us packed: the first window is spent for ~1 us, the second round gets the rest and
    # one processor runs its four goroutines back to back
    packed = second_round(500.0)
    assert len({p for _, p in packed.values()}) == 1
    starts = sorted(t for t, _ in packed.values())
    assert np.diff(starts) == pytest.approx([20.0, 20.0, 20.0])
    # 50 us packed: what is left after the first window ends before the round's 81 us of
    # work, and the woken processor then steals
    assert {p for _, p in second_round(50.0).values()} == {0, 1}


@pytest.mark.parametrize("n", [2, 5, 16])
def test_each_context_switch_is_counted_and_charged_switch_ns_once(n):
    # one processor, drain, a pool: per transaction its start, the worker woken by its first
    # Put, the pool goroutine woken by the hand-off and by its sleep's end, the transaction
    # woken by its last Done; and the driver's start and its wake from Wait. The calibrator
    # divides the profiled scheduler's CPU by this count (costs_from_profile)
    run = simulate(_drain_case(n, **dict(FREE, switch_ns=1000.0)), 1)
    assert run.go_counts["switches"] == 5 * n + 2
    assert run.go_cpu_s == pytest.approx(run.go_counts["switches"] * 1e-6)
    assert run.go_counts["worker_wakes"] == n          # once per transaction's first Put
    assert simulate(replace(_drain_case(n), go=GoConfig()), 1).go_counts == {}


def test_sequential_drain_pays_each_round_trip_s_cpu():
    costs = dict(FREE, put_ns=1000.0, item_ns=1000.0, switch_ns=1000.0, flush_ns=2000.0)
    free = simulate(_drain_case(4, fanout="sequential", **FREE), 1).block_time_s
    paid = simulate(_drain_case(4, fanout="sequential", **costs), 1).block_time_s
    assert free == pytest.approx(4 * 500e-6)
    # per transaction, on the critical path: 3 Puts, 3 receives and 2 switches (a run's
    # effects land at its start, so the flush's own CPU overlaps its sleep)
    assert paid >= free + 4 * (3e-6 + 3e-6 + 2e-6)


def test_a_v2_worker_pays_its_side_of_each_handed_off_flush():
    # flushBatch's work (dispatch_ns) is on the worker, once per flush it hands to a pool
    # slot or a goroutine of its own; v1.1.0's worker (cycle timer) does none of it
    for dispatch in ("pool", "background"):
        case = _slices_case(dispatch)
        free = simulate(case, 1)
        paid = simulate(replace(case, go=replace(case.go, dispatch_ns=1000.0)), 1)
        flushes = len(free.recorder.batch_size)
        assert flushes == 16 and len(paid.recorder.batch_size) == 16
        assert paid.go_cpu_s - free.go_cpu_s == pytest.approx(flushes * 1e-6)
    v1 = replace(_slices_case("background"), batcher=BatcherConfig(
        size=4096, timeout_ms=5, timer="cycle", dispatch="background"))
    free = simulate(v1, 1)
    paid = simulate(replace(v1, go=replace(v1.go, dispatch_ns=1000.0, select_ns=1000.0)), 1)
    assert paid.go_cpu_s == free.go_cpu_s


def test_a_v2_worker_pays_its_select_each_time_it_wakes_from_it():
    # drain at GOMAXPROCS 1: the worker blocks in its select once per transaction (the
    # channel is empty after each flush) and is woken by the next transaction's first Put
    case = _slices_case("pool")
    free = simulate(case, 1)
    paid = simulate(replace(case, go=replace(case.go, select_ns=1000.0)), 1)
    assert len(paid.recorder.batch_size) == len(free.recorder.batch_size) == 16
    assert paid.go_cpu_s - free.go_cpu_s == pytest.approx(16 * 1e-6)


@pytest.mark.parametrize("timer,charged", [("first_item", True), ("cycle", False)])
def test_a_v2_worker_pays_each_select_that_finds_an_item_waiting(timer, charged):
    # drain off at GOMAXPROCS 1: a transaction's first Put wakes the worker (its blocking
    # select, select_ns); the other two items wait in the channel, and each passes the
    # worker's four-case select without blocking (select_ready_ns). v1.1.0's is not measured
    case = _drain_case(16, **FREE)
    case = replace(case, batcher=BatcherConfig(size=4096, timeout_ms=5, timer=timer,
                                               dispatch="pool", max_concurrent=64))
    free = simulate(case, 1)
    paid = simulate(replace(case, go=replace(case.go, select_ready_ns=1000.0)), 1)
    ready = free.go_counts["ready_selects"]
    assert ready == paid.go_counts["ready_selects"] >= 2 * 16
    extra = paid.go_cpu_s - free.go_cpu_s
    assert extra == (pytest.approx(ready * 1e-6) if charged else 0.0)


def test_the_cpu_is_accounted():
    run = simulate(_drain_case(50, spawn_ns=1000.0), 1)
    m = simbatch_metrics(run)
    assert run.go_cpu_s >= 50 * 1e-6
    assert m["cores_busy"] == pytest.approx(run.go_cpu_s / run.block_time_s)


def simbatch_metrics(run):
    from simbatch.batching.engine import run_metrics
    return run_metrics(run)


# ------------------------------------------------------------------ batch slices
def _slices_case(dispatch, **go):
    case = _drain_case(16, **dict(FREE, **go))
    return replace(case, batcher=replace(case.batcher, dispatch=dispatch,
                                         max_concurrent=64 if dispatch == "pool" else None))


def test_an_inline_flush_gives_its_slice_back_before_the_worker_takes_the_next():
    # dispatchAndRecord, then pool.Put, then pool.Get on the same processor: never a New
    free = simulate(_slices_case("inline"), 1).block_time_s
    costly = simulate(_slices_case("inline", alloc_ns=10_000.0), 1).block_time_s
    assert costly == free


def test_batches_in_flight_at_once_each_need_a_new_slice_of_their_size():
    # drain, cap = all, one processor: all 16 batches are handed off before the first
    # 500 us sleep ends, so each Get after a hand-off finds the pool empty; the worker's
    # New delays the next transaction's flush. 4096 slots x 8 bytes = 32 KiB a slice.
    base = simulate(_slices_case("pool"), 1).frames()["batches"]
    fixed = simulate(_slices_case("pool", alloc_ns=10_000.0), 1).frames()["batches"]
    per_kib = simulate(_slices_case("pool", alloc_kib_ns=10_000.0 / 32), 1).frames()["batches"]
    spread = fixed.t_start_s.max() - fixed.t_start_s.min()
    assert spread == pytest.approx(base.t_start_s.max() - base.t_start_s.min() + 15 * 10e-6)
    assert per_kib.t_start_s.tolist() == pytest.approx(fixed.t_start_s.tolist())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 2)), max_size=200))
def test_the_slice_pool_keeps_what_is_given_back_and_never_takes_another_s_private(ops):
    pool, held, kept = SlicePool(3, new_ns=1.0), 0, 0
    for is_put, p in ops:
        if is_put:
            if held:                       # only a slice taken earlier is given back
                pool.put(p)
                held, kept = held - 1, kept + 1
        else:
            in_reach = kept - (sum(pool.private) - pool.private[p])
            cost = pool.get(p)
            held += 1
            if in_reach:
                assert cost == 0.0
                kept -= 1
            else:
                assert cost == 1.0
        assert sum(pool.private) + sum(pool.shared) == kept
    assert pool.news == held + kept       # every slice in existence was made once, by a New


# ------------------------------------------------------------------ randomness
def test_two_processors_vary_drain_composition_from_seed_to_seed_and_repeat_per_seed():
    # idle processors wake after 2 to 200 us (log-uniform), drawn per wake-up
    host = HostConfig(**{**HOST.__dict__, "wake_us": tuple(np.geomspace(2, 200, 101))})
    case = replace(_drain_case(16, procs=2, spawn_ns=800.0, put_ns=150.0), host=host)
    flushes = [len(simulate(case, seed).recorder.batch_size) for seed in range(12)]
    again = [len(simulate(case, seed).recorder.batch_size) for seed in range(12)]
    assert flushes == again
    assert len(set(flushes)) > 1


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("section,key,value", [
    ("go", "gomaxprocs", 0), ("go", "spawn_ns", -1), ("go", "flush_cpu", 1),
    ("go", "lock_ns", -40.0), ("go", "lock_sleep", 1.5),
    ("host", "wake_us", [-1.0]), ("host", "stall_per_s", [-5.0]),
    ("host", "speed_ratio", [0.5]), ("host", "packed_us", [-1.0]),
    ("host", "cpu_noise_ns", -84.0)])
def test_bad_values_are_refused_in_the_one_format(tmp_path, section, key, value):
    file = tmp_path / "s.toml"
    file.write_text(f"[{section}]\n{key} = {json.dumps(value)}\n")
    with pytest.raises(ConfigError, match=rf"^{file}: \[{section}\] {key}: The '{key}' "
                                          r"parameter of \w+ must .+; got .+\.$"):
        load_scenario(file)


def test_an_unknown_host_file_is_refused_in_the_one_format(tmp_path):
    file = tmp_path / "s.toml"
    file.write_text('[host]\nmodel = "no-such-host.toml"\n')
    with pytest.raises(ConfigError, match=r"\[host\] model: The 'model' parameter of the "
                                          r"scenario must be a readable models/ TOML file"):
        load_scenario(file)


@pytest.mark.parametrize("kwargs,field", [
    ({"workload": {"kind": "open_loop"}}, "go"),
    ({"batcher": BatcherConfig(tick_ms=5.0)}, "go")])
def test_what_the_cpu_model_does_not_cover_is_refused(kwargs, field):
    with pytest.raises(ConfigError, match=rf"The '{field}' parameter of Case must be"):
        Case(go=GoConfig(gomaxprocs=2), **kwargs)


def test_measured_timers_replace_the_overshoot_constant_not_both():
    with pytest.raises(ConfigError, match="timer_overshoot_us"):
        HostConfig(**{**HOST.__dict__, "timer_overshoot_us": 90.0})
