"""The contention model against what gobench's scale suite measured on this machine
(``models/go-scale-loopback.toml``), at every GOMAXPROCS it measured, within 25 %.

The model is given this machine: one or two cores, the laws gobench fitted (``[costs]``: the
random put and probe against the map's entries, flat to a knee then linear in log2 of the
entries, every GOMAXPROCS pooled; ``[memory]``: the hashes-per-visit law), and the per-slice
costs read off the one-hash slices (``[slice_size]`` at ``per_slice = 1``: the owner workers'
per-slice cost, the spawned goroutine's cost). The model then has to give the random costs at
seven map sizes (two parameters and a knee for seven sizes), both designs at 10 to 10,000
hashes per slice (simulated; CPU time = cores busy x time), and both designs on the
production-like block of distinct hashes, which no fit used.
"""

from __future__ import annotations

import dataclasses
import tomllib

import pytest
from simhelp import ROOT

from simbatch.contention import MapCosts, MapWorkload, MemoryConfig, simulate_map
from simbatch.core.cpu import CPUConfig

MODEL = tomllib.loads((ROOT / "models/go-scale-loopback.toml").read_text())
PRIMITIVES = tomllib.loads((ROOT / "models/go-primitives-loopback.toml").read_text())
PROCS = MODEL["provenance"]["gomaxprocs"]
TOLERANCE = 0.25


RANDOM = MapCosts(**MODEL["costs"])
MEMORY = MemoryConfig(**MODEL["memory"])
LOCK_NS = PRIMITIVES["measured"]["mutex_lock_ns"][0]          # uncontended Lock + Unlock


def machine(p: int) -> tuple[CPUConfig, MapCosts]:
    """This machine at GOMAXPROCS ``p``: per-slice costs from the one-hash slices."""
    sl = MODEL["slice_size"]
    t = sl[f"gomaxprocs_{p}"]
    put1 = RANDOM.put_at(sl["n_tx"]) * MEMORY.reuse_factor(1)
    costs = dataclasses.replace(RANDOM, lock_ns=LOCK_NS,
                                group_ns=max(0.0, t["new_cpu_ns_per_hash"][0] - put1 - LOCK_NS))
    cpu = CPUConfig(cores=p, domain_cores=p, line_near_ns=PRIMITIVES["cpu"]["line_near_ns"],
                    spawn_ns=0.0, park_wake_ns=0.0, chan_op_ns=0.0,
                    goroutine_ns=max(0.0, t["old_cpu_ns_per_hash"][0] - put1 - LOCK_NS))
    return cpu, costs


def cpu_ns_per_hash(p: int, design: str, per_slice: int, entries: int, subtrees: int) -> float:
    cpu, costs = machine(p)
    wl = MapWorkload(n_tx=subtrees * 1024 * per_slice, n_subtrees=subtrees, design=design,
                     map_entries=entries, hash_spread="even", phases="insert")
    r = simulate_map(cpu, costs, wl, seed=1, memory=MEMORY)
    return r.insert_cores_busy * r.insert_s * 1e9 / r.inserted


@pytest.mark.parametrize("p", PROCS)
@pytest.mark.parametrize("op,key", [("put", "dolthub_hint_insert_cpu_ns"),
                                    ("probe", "dolthub_hint_probe_cpu_ns")])
def test_random_put_and_probe_cost_against_map_size(p, op, key):
    _, costs = machine(p)
    measured = MODEL["map_size"][f"gomaxprocs_{p}"][key]
    for entries, m in zip(MODEL["map_size"]["entries"], measured):
        model = costs.put_at(entries) if op == "put" else costs.probe_at(entries)
        assert abs(model / m - 1) <= TOLERANCE, (entries, model, m)


@pytest.mark.parametrize("p", PROCS)
@pytest.mark.parametrize("design", ["old", "new"])
def test_cost_per_hash_against_slice_size(p, design):
    sl = MODEL["slice_size"]
    measured = sl[f"gomaxprocs_{p}"][f"{design}_cpu_ns_per_hash"]
    for per_slice, m in zip(sl["per_slice"], measured):
        # a smaller block of the same shape and map size: at most 24 of its subtrees
        subtrees = min(24, sl["n_tx"] // (1024 * per_slice))
        model = cpu_ns_per_hash(p, design, per_slice, sl["n_tx"], subtrees)
        assert abs(model / m - 1) <= TOLERANCE, (per_slice, model, m)


@pytest.mark.parametrize("p", PROCS)
@pytest.mark.parametrize("design", ["old", "new"])
@pytest.mark.parametrize("block", ["production_distinct", "production_wide"])
def test_production_like_blocks_no_fit_used(p, design, block):
    # ~1,000 hashes per slice, 375 subtrees at once; "wide": 400 subtrees re-putting 16 key
    # sets into a 16M-entry map
    blk = MODEL[block]
    m = blk[f"gomaxprocs_{p}"][f"{design}_insert_cpu_ns_per_tx"]
    model = cpu_ns_per_hash(p, design, blk["per_slice"], blk["distinct_entries"], 24)
    assert abs(model / m - 1) <= TOLERANCE, (model, m)
