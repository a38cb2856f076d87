"""Invariants of the contention model, with every mechanism on (the Go mutex's two modes, the
run queue's ``runnext`` and global queue, the hashes-per-visit law): work conserved;
throughput never above cores x the per-operation rate; one core without contention reduces to
the serial time."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simbatch.contention import (
    MapCosts,
    MapWorkload,
    MemoryConfig,
    probe_phase,
    simulate_map,
    slice_counts,
)
from simbatch.contention.mutex import GoMutex, MutexStats
from simbatch.core.cpu import CPUConfig
from simbatch.core.streams import streams

MEMORY = MemoryConfig(slice_reuse_hashes=50.0, slice_reuse_exponent=0.35)


def _counts(wl, seed):
    """The hashes per slice the run drew (its ``counts`` stream)."""
    return slice_counts(wl, streams(seed, ("counts",))["counts"])


@settings(max_examples=40, deadline=None)
@given(cores=st.integers(1, 64), n_tx=st.integers(1, 30_000), subtrees=st.integers(1, 12),
       buckets=st.sampled_from([1, 7, 64, 1024]), design=st.sampled_from(["old", "new"]),
       queue=st.integers(1, 8), seed=st.integers(0, 100),
       spread=st.sampled_from(["random", "even"]), memory=st.booleans(),
       entries=st.sampled_from([None, 1_000_000, 400_000_000]))
def test_work_conserved_and_rate_bounded(cores, n_tx, subtrees, buckets, design, queue, seed,
                                         spread, memory, entries):
    cpu = CPUConfig(cores=cores)
    costs = MapCosts(put_ns=70.0, put_ns_per_doubling=9.0, reference_entries=1_000_000)
    mem = MEMORY if memory else MemoryConfig()
    wl = MapWorkload(n_tx=n_tx, n_subtrees=subtrees, n_buckets=buckets, design=design,
                     worker_queue=queue, n_probes=1000, phases="both", hash_spread=spread,
                     map_entries=entries)
    r = simulate_map(cpu, costs, wl, seed, mem)
    assert r.inserted == n_tx and r.probed == 1000
    counts = _counts(wl, seed)
    cheapest = costs.put_at(wl.entries) * mem.reuse_factor(int(counts.max()))
    assert r.insert_ops_per_s <= cores * 1e9 / cheapest * (1 + 1e-9)
    assert 0 < r.insert_cores_busy <= cores + 1e-9
    assert 1e9 / r.probe_ns_per_op <= cores * 1e9 / costs.probe_at(wl.entries) * (1 + 1e-9)
    locks = r.locks
    if design == "old":      # every slice took its bucket mutex exactly once
        assert locks.acquisitions == int(np.count_nonzero(counts))
        assert locks.starving_acquisitions <= locks.acquisitions
        assert locks.waits_over_1ms <= locks.acquisitions and locks.wait_ns >= 0
    else:
        assert locks.acquisitions == 0


@pytest.mark.parametrize("design", ["old", "new"])
@pytest.mark.parametrize("memory", [MemoryConfig(), MEMORY])
def test_one_core_without_contention_is_the_serial_time(design, memory):
    cpu = CPUConfig(cores=1, park_wake_ns=0.0, chan_op_ns=0.0)
    costs = MapCosts(put_ns=70.0, deserialize_ns=100.0)
    wl = MapWorkload(n_tx=50_000, n_subtrees=5, design=design, phases="insert")
    r = simulate_map(cpu, costs, wl, seed=3, memory=memory)
    counts = _counts(wl, 3)
    slices = int(np.count_nonzero(counts))
    per_slice = (cpu.spawn_ns + cpu.goroutine_ns if design == "old" else costs.group_ns)
    puts = memory.slice_put_ns(counts, costs.put_at(wl.n_tx)).sum()
    serial = puts + wl.n_tx * costs.deserialize_ns + slices * (per_slice + costs.lock_ns)
    assert r.insert_s == pytest.approx(serial * 1e-9, rel=1e-9)
    assert r.insert_cores_busy == pytest.approx(1.0)
    assert r.locks.wait_ns == 0 and r.locks.barged == 0


def test_one_core_probes_cost_the_probe_and_an_uncontended_read_lock():
    costs = MapCosts(probe_ns=96.0, lock_ns=20.0)
    _, ns = probe_phase(CPUConfig(cores=1), costs, MapWorkload(n_probes=10, exists="rlock"))
    assert ns == pytest.approx(96.0 + 40.0)


def test_contended_reader_count_costs_more_with_more_cores():
    costs = MapCosts(probe_ns=96.0)
    per_probe = [probe_phase(CPUConfig(cores=c), costs, MapWorkload(n_probes=1, exists="rlock"))
                 [1] * c for c in (2, 16, 64, 192)]
    assert all(b > a for a, b in zip(per_probe, per_probe[1:]))


def test_one_bucket_many_cores_queues_at_the_mutex_and_conserves_work():
    # 64 cores, one bucket: every slice after the first parks; unlocks wake the head waiter
    # into runnext, so the lock passes without a convoy and nothing is lost
    cpu = CPUConfig(cores=64)
    wl = MapWorkload(n_tx=200_000, n_subtrees=40, n_buckets=1, design="old", phases="insert")
    r = simulate_map(cpu, MapCosts(), wl, seed=1, memory=MEMORY)
    assert r.inserted == 200_000 and r.locks.acquisitions == 40
    assert r.locks.wait_ns > 0


def test_mutex_micro_trace_normal_barging_then_starvation_hand_off():
    stats = MutexStats()
    m = GoMutex(stats)
    assert m.lock(1, 0.0) and not m.lock(2, 10.0) and not m.lock(3, 20.0)
    assert m.unlock(100.0) == (2, False) and not m.locked     # normal: wake, no ownership
    assert m.unlock is not None and m.lock(4, 150.0)         # 4 barges in
    assert not m.retry(2, 2e6) and m.starving                # 2 lost after > 1 ms
    assert list(m.waiters) == [2, 3]                         # ... and queued at the front
    assert not m.lock(5, 2e6)                                # arrivals queue, never barge
    assert m.unlock(2.1e6) == (2, True)                      # hand-off to the head
    m.owns(2, 2.2e6)                                         # waited > 1 ms, 3 and 5 wait
    assert m.starving and stats.starving_acquisitions == 1
    assert m.unlock(2.3e6) == (3, True)
    m.owns(3, 2.4e6)
    assert m.starving                                        # 3 waited 2.38 ms
    assert m.unlock(2.5e6) == (5, True)
    m.owns(5, 2.6e6)                                         # 5 waited 0.6 ms: back to normal
    assert not m.starving and m.unlock(2.7e6) is None and not m.locked
    assert stats.acquisitions == 5 and stats.barged == 1 and stats.starvation_entries == 1
