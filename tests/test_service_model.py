"""The batch call's service model in the engine: closed-form oracles for its parts (the two
cost levels, the tail by batch size, the machine's shared cores and the client's lock), the
regime's persistence, and bad input."""

from __future__ import annotations

import tomllib
from dataclasses import replace

import numpy as np
import pytest
from simhelp import ROOT

from simbatch.batching import BatcherConfig, BlockWorkload, Case, ServiceConfig, simulate
from simbatch.batching.closedloop import closed_loop
from simbatch.batching.hostcores import MachineConfig
from simbatch.batching.servicecost import RegimeConfig, TailConfig
from simbatch.core.errors import ConfigError

SHARED = MachineConfig(cores=2, busy_capacity_cores=1.5, wake_us=10.0, client_lock=True)
BASE = ServiceConfig(fixed_us=60.0, per_record_us=3.0, machine=SHARED,
                     regime=RegimeConfig(fast_fixed_us=20.0))


def us(latencies: np.ndarray) -> np.ndarray:
    return np.asarray(latencies) * 1e6


def test_a_call_alone_takes_its_median_at_each_level():
    # slow: CPU 40 us + 30 us of keys and two wake-ups of 10 us; fast: 20 + 30, no wake-up
    assert us(closed_loop(BASE, 10, 1, calls=50)) == pytest.approx([90.0] * 50)
    fast = replace(BASE, regime=RegimeConfig(fast_fixed_us=20.0, fast_share=1.0))
    assert us(closed_loop(fast, 10, 1, calls=50)) == pytest.approx([50.0] * 50)
    off = replace(BASE, machine=MachineConfig())            # the server elsewhere
    assert us(closed_loop(off, 10, 1, calls=5)) == pytest.approx([90.0] * 5)


@pytest.mark.parametrize("capacity,expected_us", [(2.0, 90.0), (1.5, 120.0), (1.0, 180.0)])
def test_two_callers_share_the_cores_as_processor_sharing(capacity, expected_us):
    # no wake-ups, no lock: two calls always run side by side, each at capacity / 2
    machine = MachineConfig(cores=2, busy_capacity_cores=capacity)
    cfg = ServiceConfig(fixed_us=60.0, per_record_us=3.0, machine=machine)
    assert us(closed_loop(cfg, 10, 2, calls=40)) == pytest.approx([expected_us] * 40)


def test_the_client_lock_serialises_the_client_s_work():
    # all of a call is client work under the lock: four callers get one call's work at a
    # time, so (Little's law) a call takes 4 x 90 us on average
    machine = MachineConfig(cores=2, client_fixed_share=1.0, client_key_share=1.0,
                            client_lock=True)
    cfg = ServiceConfig(fixed_us=60.0, per_record_us=3.0, machine=machine)
    assert us(closed_loop(cfg, 10, 4, calls=2000)).mean() == pytest.approx(360.0, rel=0.01)
    unlocked = replace(cfg, machine=replace(machine, client_lock=False))
    assert us(closed_loop(unlocked, 10, 4, calls=2000)).mean() == pytest.approx(180.0, rel=0.01)


def test_the_tail_factor_comes_from_the_call_s_region_of_batch_size():
    tail = TailConfig(edges_keys=(32, 317), ratios=((1.0,), (2.0,), (3.0,)))
    cfg = ServiceConfig(fixed_us=0.0, per_record_us=1.0, noise="by_size", tail=tail)
    for n, factor in ((10, 1.0), (100, 2.0), (1000, 3.0)):
        assert us(closed_loop(cfg, n, 1, calls=3)) == pytest.approx([n * factor] * 3)


def _fast_share_runs(seed: int) -> tuple[float, float, int]:
    cfg = replace(BASE, regime=RegimeConfig(fast_fixed_us=20.0, fast_share=0.5,
                                            fast_sojourn_ms=2.0))
    latency = us(closed_loop(cfg, 1, 1, calls=4000, seed=seed))
    fast = latency < 40.0                        # one key: 23 us fast, 63 us slow
    return (float(latency[fast].sum() / latency.sum()), float(fast.mean()),
            int(1 + np.count_nonzero(np.diff(fast.astype(int)))))


def test_the_regime_persists_for_runs_of_calls_and_is_not_a_mixture():
    time_shares, call_shares, runs = zip(*(_fast_share_runs(s) for s in range(8)), strict=True)
    p = float(np.mean(call_shares))
    mixture_runs = 1 + 2 * 4000 * p * (1 - p)     # independent calls with the same share
    assert max(runs) < 0.1 * mixture_runs, runs
    # fast_share is a share of time; fast calls are shorter, so more of the calls are fast
    assert np.mean(time_shares) == pytest.approx(0.5, abs=0.12)
    assert p == pytest.approx(0.5 / 23 / (0.5 / 23 + 0.5 / 63), abs=0.12)
    # persistence spreads the share between runs far beyond what a mixture gives
    assert np.std(call_shares) > 5 * np.sqrt(p * (1 - p) / 4000), call_shares


def test_same_seed_same_latencies_and_the_random_pick_draws():
    a, b, c = (closed_loop(BASE, 20, 4, calls=400, seed=s) for s in (5, 5, 6))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_the_shipped_model_in_a_batcher_case_shares_the_cores():
    service = ServiceConfig(**tomllib.loads(
        (ROOT / "models/aerospike-loopback-8.1.toml").read_text())["service"])
    workload = BlockWorkload(n_transactions=400, inputs_per_tx=2, fanout="errgroup", cap=64)
    batcher = BatcherConfig(size=16, timeout_ms=1, dispatch="pool", max_concurrent=16)
    shared = Case(workload=workload, batcher=batcher, service=service)
    apart = replace(shared, service=replace(service, machine=MachineConfig()))
    runs = [simulate(case, 3) for case in (shared, shared, apart)]
    assert runs[0].frames()["batches"].equals(runs[1].frames()["batches"])
    assert runs[0].block_time_s > runs[2].block_time_s


@pytest.mark.parametrize("kwargs,field", [
    ({"regime": {"fast_share": 0.5}}, "fast_share"),
    ({"noise": "by_size"}, "noise"),
    ({"fixed_us": 15.0, "machine": SHARED}, "fixed_us"),
    ({"is_sleep": True, "machine": SHARED}, "is_sleep"),
])
def test_service_rules_name_the_field(kwargs, field):
    with pytest.raises(ConfigError, match=rf"The '{field}' parameter of \w+ must"):
        ServiceConfig(**{"fixed_us": 60.0, **kwargs})


@pytest.mark.parametrize("build,field", [
    (lambda: TailConfig(ratios=((1.0,), (1.0,))), "ratios"),
    (lambda: TailConfig(edges_keys=(317, 32)), "edges_keys"),
    (lambda: MachineConfig(cores=2, busy_capacity_cores=3.0), "busy_capacity_cores"),
    (lambda: closed_loop(BASE, 0, 1), "size"),
    (lambda: closed_loop("fast", 1, 1), "config"),
])
def test_parts_refuse_bad_values_by_name(build, field):
    with pytest.raises(ConfigError, match=rf"The '{field}' parameter of \w+ must"):
        build()
