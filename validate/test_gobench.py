"""The Go micro-benchmark (validate/gobench) runs here at CI size, writes a models/ file, and
that file drives a contention scenario. A user on a 192-core machine runs it there at
``-size medium`` or ``large`` to calibrate the contention model for that machine."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from simbatch.planning.scenario import load_scenario
from simbatch.planning.sweep import run_scenario

GOBENCH = Path(__file__).resolve().parent / "gobench"


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    if shutil.which("go") is None:
        pytest.skip("go not on PATH: the micro-benchmark needs the Go toolchain")
    out = tmp_path_factory.mktemp("gobench") / "go-primitives.toml"
    subprocess.run(["go", "run", ".", "-size", "small", "-out", str(out)], cwd=GOBENCH,
                   check=True, capture_output=True, timeout=600)
    return out, tomllib.loads(out.read_text())


def test_measures_every_primitive_at_every_contention_level(measured):
    _, data = measured
    m = data["measured"]
    procs = data["provenance"]["gomaxprocs"]
    assert m["contenders"][0] == 1 and m["contenders"][-1] == procs
    for name in ("atomic_add_ns", "rwmutex_rlock_ns", "mutex_lock_ns", "stats_increment_ns"):
        assert len(m[name]) == len(m["contenders"]) and min(m[name]) > 0
    assert m["fill_old_tx_per_s"] > 0 and m["fill_new_tx_per_s"] > 0
    assert m["exists_rlock_ns_per_probe"] > 0 and m["exists_frozen_ns_per_probe"] > 0
    assert data["cpu"]["cores"] == procs == os.cpu_count()
    # the client statistics' Get and Set (scenarios/r3-client-stats.toml cites them)
    stats = data["service"]["stats"]
    assert 0 < stats["read_ns"] < stats["write_ns"] * 10


def test_the_file_drives_a_contention_scenario(measured, tmp_path):
    path, data = measured
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'[scenario]\nkind = "contention"\nreplications = 1\n'
                        f'[cpu]\nmodel = "{path}"\n[costs]\nmodel = "{path}"\n'
                        f'[map]\nn_tx = 20000\nn_subtrees = 4\nn_probes = 1000\n')
    sc = load_scenario(scenario)
    assert sc.cases[0].cpu.cores == data["cpu"]["cores"]
    assert sc.cases[0].costs.put_ns == pytest.approx(data["costs"]["put_ns"])
    metrics = run_scenario(sc)[0].metrics
    assert metrics["inserted"] == 20000 and metrics["throughput_ops_per_s"] > 0


@pytest.fixture(scope="module")
def scale(tmp_path_factory):
    if shutil.which("go") is None:
        pytest.skip("go not on PATH: the micro-benchmark needs the Go toolchain")
    out = tmp_path_factory.mktemp("gobench") / "go-scale.toml"
    subprocess.run(["go", "run", ".", "-suite", "scale", "-size", "small", "-scale-out", str(out)],
                   cwd=GOBENCH, check=True, capture_output=True, timeout=900)
    return out, tomllib.loads(out.read_text())


def test_scale_suite_measures_each_candidate_at_every_gomaxprocs(scale):
    _, data = scale
    procs = data["provenance"]["gomaxprocs"]
    assert procs == [1, 2]
    sizes = len(data["map_size"]["entries"])
    slices = len(data["slice_size"]["per_slice"])
    for p in procs:
        ms = data["map_size"][f"gomaxprocs_{p}"]
        assert len(ms["dolthub_hint_insert_cpu_ns"]) == sizes
        assert min(ms["dolthub_hint_probe_cpu_ns"]) > 0
        sl = data["slice_size"][f"gomaxprocs_{p}"]
        assert len(sl["old_cpu_ns_per_hash"]) == len(sl["new_cpu_ns_per_hash"]) == slices
        for block in ("production_distinct", "production_wide"):
            t = data[block][f"gomaxprocs_{p}"]
            for key in ("old_insert_cpu_ns_per_tx", "new_insert_cpu_ns_per_tx",
                        "old_insert_lock_wait_s", "old_insert_sched_p99_us", "old_probe_cpu_ns"):
                assert key in t
            assert 0 <= t["old_insert_lock_starving_share"] <= 1
            assert 0 <= t["old_insert_lock_handoff_share"] <= 1


def test_scale_file_gives_the_memory_law_a_scenario_loads(scale, tmp_path):
    path, data = scale
    assert data["memory"]["slice_reuse_hashes"] > 0 and data["memory"]["slice_reuse_exponent"] >= 0
    assert data["memory_fit"]["slice_reuse_max_error"] >= 0
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'[scenario]\nkind = "contention"\nreplications = 1\n'
                        f'[memory]\nmodel = "{path}"\n'
                        f'[map]\nn_tx = 20000\nn_subtrees = 4\nn_probes = 1000\n')
    sc = load_scenario(scenario)
    assert sc.cases[0].memory.slice_reuse_hashes == pytest.approx(
        data["memory"]["slice_reuse_hashes"])
    assert run_scenario(sc)[0].metrics["inserted"] == 20000
