"""Per-record client statistics: increments per variant, contention, and the coupling of the
client's CPU work into the engine's batch service time."""

from __future__ import annotations

import dataclasses

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from simbatch.batching import (
    ENGINE,
    BatcherConfig,
    BlockWorkload,
    Case,
    ClientConfig,
    ServiceConfig,
    replicate,
    simulate,
)
from simbatch.batching.clientstats import VARIANTS, StatsConfig, StatsLocks
from simbatch.core.cpu import CPUConfig
from simbatch.core.results import summarize


@pytest.mark.parametrize("variant,expected", [
    ("broken", 1024 * 1024), ("per_record_once", 1024), ("sampled", 10 * 1024), ("sharded", 1024),
    ("per_batch", 1), ("disabled", 0)])
def test_increments_per_batch_of_1024(variant, expected):
    assert StatsConfig(variant=variant).increments(1024) == expected


def test_contention_makes_each_increment_dearer_and_sharding_relieves_it():
    cpu = CPUConfig(cores=32, line_near_ns=80, domain_cores=32)
    once = StatsConfig(variant="per_record_once")
    sharded = StatsConfig(variant="sharded", shards=16)

    def total(stats, concurrent):
        return stats.cost_ns(100, concurrent, cpu)[0]

    assert total(once, 1) == pytest.approx(100 * 45.0)      # uncontended: one write-locked update
    assert total(once, 30) > total(once, 2) > total(once, 1)
    # two transfers per lock round trip at 30 sharers
    assert total(once, 30) == pytest.approx(100 * (45.0 + 2 * 80 * (1 - 1 / 30)))
    assert total(sharded, 30) < total(once, 30)


def test_the_broken_get_then_set_splits_about_evenly_between_get_and_set():
    cpu = CPUConfig(cores=32, line_near_ns=78, domain_cores=32)
    stats, sets = StatsConfig(variant="broken").cost_ns(1024, 32, cpu)
    assert stats == pytest.approx(1024 ** 2 * (25 + 45 + 4 * 78 * 31 / 32))
    assert 0.5 < sets / stats < 0.56


CPU8 = CPUConfig(cores=8, line_near_ns=80, domain_cores=8)


def _drive(stats: StatsConfig, arrivals, command_types: int = 1):
    """Run ``arrivals`` [(time_s, batch_id, records)] through the counter locks; returns the
    locks and {batch_id: [(start_s, end_s, cpu_ns, set_ns), ...]}."""
    env = simpy.Environment()
    locks = StatsLocks(env, dataclasses.replace(stats, command_types=command_types), CPU8)
    done: dict[int, list] = {}

    def parse(at, batch_id, n):
        yield env.timeout(at)
        start = env.now
        locks.update(batch_id, n, lambda c, s: done.setdefault(batch_id, []).append(
            (start, env.now, c, s)))

    for at, batch_id, n in arrivals:
        env.process(parse(at, batch_id, n))
    env.run()
    return env, locks, done


def test_a_parse_alone_runs_at_its_own_cpu_speed():
    _env, _locks, done = _drive(StatsConfig(variant="broken"), [(0.0, 0, 100)])
    (start, end, cpu_ns, set_ns), = done[0]
    assert cpu_ns == pytest.approx(100 ** 2 * (25 + 45))
    assert set_ns == pytest.approx(100 ** 2 * 45)
    assert (end - start) * 1e9 == pytest.approx(cpu_ns)


def test_parses_sharing_a_lock_are_bound_by_its_capacity():
    # two parses: each increment costs its parse 25 + 45 + 4 x 40 ns of CPU, and keeps the
    # lock busy 45 + 4 x 40 ns; the lock serves both, so each waits for the other's share
    env, locks, done = _drive(StatsConfig(variant="broken"), [(0.0, 0, 100), (0.0, 1, 100)])
    for batch_id in (0, 1):
        (start, end, cpu_ns, _set), = done[batch_id]
        assert cpu_ns == pytest.approx(100 ** 2 * 230)
        assert (end - start) * 1e9 == pytest.approx(2 * 100 ** 2 * 205)
    assert locks.busy_ns[0] == pytest.approx(env.now * 1e9)     # busy all the time


def test_separate_counter_maps_and_shards_do_not_share_a_lock():
    arrivals = [(0.0, 0, 100), (0.0, 1, 100)]
    _env, _locks, two_maps = _drive(StatsConfig(variant="broken"), arrivals, command_types=2)
    for batch_id in (0, 1):
        (start, end, cpu_ns, _set), = two_maps[batch_id]
        assert (end - start) * 1e9 == pytest.approx(100 ** 2 * 70)
    _env, _locks, sharded = _drive(StatsConfig(variant="sharded", shards=2), arrivals)
    for batch_id in (0, 1):
        (start, end, cpu_ns, _set), = sharded[batch_id]
        assert (end - start) * 1e9 == pytest.approx(100 * 45)


@settings(max_examples=60, deadline=None)
@given(variant=st.sampled_from(VARIANTS), command_types=st.integers(1, 3),
       shards=st.integers(1, 4),
       arrivals=st.lists(st.tuples(st.integers(0, 50).map(lambda us: us * 1e-6),
                                   st.integers(0, 300)), min_size=1, max_size=12))
def test_every_update_completes_once_and_no_lock_is_busy_beyond_the_time_passed(
        variant, command_types, shards, arrivals):
    stats = StatsConfig(variant=variant, shards=shards)
    env, locks, done = _drive(stats, [(at, i, n) for i, (at, n) in enumerate(arrivals)],
                              command_types)
    assert sorted(done) == list(range(len(arrivals)))
    alone = stats.per_increment_ns(1, CPU8)[0]
    for i, (_at, n) in enumerate(arrivals):
        (start, end, cpu_ns, set_ns), = done[i]
        k = stats.increments(n)
        assert cpu_ns >= k * alone * (1 - 1e-9) and 0 <= set_ns <= cpu_ns * (1 + 1e-9)
        assert (end - start) * 1e9 >= k * alone * (1 - 1e-9)
    locks_per_map = shards if variant == "sharded" else 1
    for busy in locks.busy_ns:
        assert busy <= env.now * 1e9 * locks_per_map * (1 + 1e-9) + 1e-6


def _run(variant: str, client_cores: int | None = 8):
    case = Case(workload=BlockWorkload(n_transactions=3000, inputs_per_tx=3, fanout="errgroup",
                                       cap=1024),
                batcher=BatcherConfig(size=1024, timeout_ms=5, dispatch="background"),
                service=ServiceConfig(fixed_us=60, per_record_us=2.9,
                                      client=ClientConfig(parse_ns_per_record=2000,
                                                          cores=client_cores),
                                      stats=StatsConfig(variant=variant)))
    return summarize(ENGINE, variant, replicate(case, 1, seed=2)).metrics


@pytest.fixture(scope="module")
def by_variant():
    return {v: _run(v) for v in VARIANTS}


def test_broken_statistics_dominate_the_client_cpu_and_the_block_time(by_variant):
    broken, disabled = by_variant["broken"], by_variant["disabled"]
    assert broken["stats_cpu_share"] > 0.9
    assert disabled["stats_cpu_share"] == 0.0
    assert broken["block_time_s"] > 10 * disabled["block_time_s"]


def test_every_fix_costs_less_than_the_broken_variant(by_variant):
    share = {v: m["stats_cpu_share"] for v, m in by_variant.items()}
    # sampling 1 in 100 records of the N^2 loop still costs 10 locked Get+Set per record
    assert share["broken"] > share["sampled"] > share["per_record_once"] >= share["sharded"]
    assert share["sharded"] > share["per_batch"] > share["disabled"] == 0.0
    for v in VARIANTS:
        if v != "broken":
            assert by_variant[v]["block_time_s"] < by_variant["broken"]["block_time_s"]


def test_the_batch_frame_records_the_wait_for_the_statistics_lock():
    case = Case(workload=BlockWorkload(n_transactions=2048, inputs_per_tx=1, fanout="errgroup",
                                       cap=2048),
                batcher=BatcherConfig(size=1024, timeout_ms=5, dispatch="background"),
                service=ServiceConfig(fixed_us=60, stats=StatsConfig(variant="broken"),
                                      client=ClientConfig(cores=2)))
    batches = simulate(case, seed=1).frames()["batches"]
    # two parses at once share one lock: each waits while the other holds it
    assert (batches.stats_lock_wait_s > 0).all()
    assert (batches.stats_lock_wait_s + batches.client_stats_s <= batches.service_s + 1e-12).all()


def test_client_cores_show_up_in_block_time():
    assert _run("disabled", client_cores=1)["block_time_s"] > \
        _run("disabled", client_cores=8)["block_time_s"]
