"""R4 at production scale (``scenarios/r4-production-192-cores.toml``): where its costs come
from, what it predicts on 192 cores, and how that compares with the figures the production
profile reported (teranode PR #1078: ~15M map operations/s with ~27 of 192 cores busy)."""

from __future__ import annotations

import dataclasses
import tomllib

import pytest
from simhelp import ROOT

from simbatch.contention import ENGINE, MemoryConfig, simulate
from simbatch.planning.scenario import load_scenario

SCENARIO = ROOT / "scenarios/r4-production-192-cores.toml"
R4 = ROOT / "scenarios/r4-bucket-map-16-cores.toml"
GOBENCH = ROOT / "models/go-scale-loopback.toml"
HEADER_OPS_PER_S, HEADER_CORES_BUSY = 15e6, 27.0


def _raw(path):
    return tomllib.loads(path.read_text())


def test_costs_come_only_from_the_r4_scenario_and_the_gobench_file():
    raw = _raw(SCENARIO)
    assert (SCENARIO.parent / raw["cpu"]["model"]).resolve() == R4.resolve()
    assert (SCENARIO.parent / raw["costs"]["model"]).resolve() == R4.resolve()
    assert (SCENARIO.parent / raw["memory"]["model"]).resolve() == GOBENCH.resolve()
    # besides the models, only the machine's shape, the block's shape and, from R4's
    # end-to-end rows, the deserialisation cost
    assert set(raw["cpu"]) == {"model", "cores", "domain_cores"}
    assert set(raw["costs"]) == {"model", "deserialize_ns"}
    assert set(raw["memory"]) == {"model"}
    assert set(raw["map"]) <= {"n_tx", "n_subtrees", "concurrent_reads", "n_probes", "phases"}
    r4 = _raw(R4)
    e2e = {c["costs"]["deserialize_ns"] for c in r4["cases"] if "costs" in c}
    assert e2e == {raw["costs"]["deserialize_ns"]}
    for case in raw["cases"]:
        assert set(case) == {"name", "map"} and set(case["map"]) == {"design", "exists"}
    # and the loaded cases carry exactly those values
    r4_case = load_scenario(R4).cases[0]
    for case in load_scenario(SCENARIO).cases:
        assert case.costs == dataclasses.replace(r4_case.costs,
                                                 deserialize_ns=raw["costs"]["deserialize_ns"])
        assert case.cpu == dataclasses.replace(r4_case.cpu, cores=case.cpu.cores,
                                               domain_cores=raw["cpu"]["domain_cores"])
        assert case.memory == MemoryConfig(**_raw(GOBENCH)["memory"])


@pytest.fixture(scope="module")
def at_192():
    """Both designs on 192 cores: metrics by design."""
    out = {}
    for case in load_scenario(SCENARIO).cases:
        if case.cpu.cores == 192:
            out[case.params["map.design"]] = ENGINE.run_metrics(simulate(case, seed=1))
    return out


def test_every_phase_is_reported(at_192):
    for m in at_192.values():
        assert m["inserted"] == 420_000_000 and m["probed"] == 440_000_000
        assert m["insert_s"] > 0 and m["probe_s"] > 0
        assert 0 < m["cores_busy"] <= 192 and 0 < m["insert_cores_busy"] <= 192
    assert 0 < at_192["old"]["rlock_cpu_share"] < 1 and at_192["new"]["rlock_cpu_share"] == 0


def test_new_design_is_faster_in_both_phases(at_192):
    old, new = at_192["old"], at_192["new"]
    assert new["throughput_ops_per_s"] > old["throughput_ops_per_s"]
    assert new["probe_s"] < old["probe_s"]


def test_the_model_leaves_no_core_idle_at_a_thousand_hashes_per_slice(at_192):
    # What the model says (and the header contradicts): with ~1,000 hashes per bucket slice
    # every per-goroutine and per-lock cost is amortised and no measured or sourced mechanism
    # leaves the old fill's cores idle; its bucket mutexes hand over through runnext without
    # a convoy and never reach starvation mode.
    old = at_192["old"]
    assert old["cores_busy"] > 0.75 * 192
    assert old["lock_starving_share"] < 0.01


@pytest.mark.xfail(strict=True, reason="the model does not reproduce the production plateau: "
                   "no mechanism measured by gobench or read from the Go runtime's source leaves "
                   "165 of 192 cores idle at ~1,000 hashes per slice (see the README)")
def test_old_design_within_2x_of_the_production_profile_and_new_5x_faster(at_192):
    old, new = at_192["old"], at_192["new"]
    assert HEADER_OPS_PER_S / 2 <= old["throughput_ops_per_s"] <= HEADER_OPS_PER_S * 2
    assert HEADER_CORES_BUSY / 2 <= old["cores_busy"] <= HEADER_CORES_BUSY * 2
    assert new["throughput_ops_per_s"] >= 5 * old["throughput_ops_per_s"]
