"""Invariants of the contention model: work conserved; throughput never above cores x the
per-operation rate; one core without contention reduces to the serial time."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simbatch.contention import MapCosts, MapWorkload, probe_phase, simulate_map, slice_counts
from simbatch.core.cpu import CPUConfig


@settings(max_examples=40, deadline=None)
@given(cores=st.integers(1, 64), n_tx=st.integers(1, 30_000), subtrees=st.integers(1, 12),
       buckets=st.sampled_from([1, 7, 64, 1024]), design=st.sampled_from(["old", "new"]),
       queue=st.integers(1, 8), seed=st.integers(0, 100))
def test_work_conserved_and_rate_bounded(cores, n_tx, subtrees, buckets, design, queue, seed):
    cpu = CPUConfig(cores=cores)
    costs = MapCosts(put_ns=70.0)
    wl = MapWorkload(n_tx=n_tx, n_subtrees=subtrees, n_buckets=buckets, design=design,
                     worker_queue=queue, n_probes=1000, phases="both")
    r = simulate_map(cpu, costs, wl, seed)
    assert r.inserted == n_tx and r.probed == 1000
    assert r.insert_ops_per_s <= cores * 1e9 / costs.put_at(n_tx) * (1 + 1e-9)
    assert 0 < r.insert_cores_busy <= cores + 1e-9
    assert 1e9 / r.probe_ns_per_op <= cores * 1e9 / costs.probe_at(n_tx) * (1 + 1e-9)


@pytest.mark.parametrize("design", ["old", "new"])
def test_one_core_without_contention_is_the_serial_time(design):
    cpu = CPUConfig(cores=1, park_wake_ns=0.0, chan_op_ns=0.0)
    costs = MapCosts(put_ns=70.0, deserialize_ns=100.0)
    wl = MapWorkload(n_tx=50_000, n_subtrees=5, design=design, phases="insert")
    r = simulate_map(cpu, costs, wl, seed=3)
    counts = slice_counts(wl, np.random.default_rng(
        np.random.SeedSequence(3).spawn(1)[0].spawn(2)[0]))
    slices = int(np.count_nonzero(counts))
    per_slice = (cpu.spawn_ns + cpu.goroutine_ns if design == "old" else costs.group_ns)
    serial = wl.n_tx * (costs.put_ns + costs.deserialize_ns) + slices * (per_slice + costs.lock_ns)
    assert r.insert_s == pytest.approx(serial * 1e-9, rel=1e-9)
    assert r.insert_cores_busy == pytest.approx(1.0)


def test_one_core_probes_cost_the_probe_and_an_uncontended_read_lock():
    costs = MapCosts(probe_ns=96.0, lock_ns=20.0)
    _, ns = probe_phase(CPUConfig(cores=1), costs, MapWorkload(n_probes=10, exists="rlock"))
    assert ns == pytest.approx(96.0 + 40.0)


def test_contended_reader_count_costs_more_with_more_cores():
    costs = MapCosts(probe_ns=96.0)
    per_probe = [probe_phase(CPUConfig(cores=c), costs, MapWorkload(n_probes=1, exists="rlock"))
                 [1] * c for c in (2, 16, 64, 192)]
    assert all(b > a for a, b in zip(per_probe, per_probe[1:]))
