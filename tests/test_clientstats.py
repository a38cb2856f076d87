"""Per-record client statistics: increments per variant, contention, and the coupling of the
client's CPU work into the engine's batch service time."""

from __future__ import annotations

import pytest

from simbatch.batcher import BatcherConfig
from simbatch.clientstats import VARIANTS, StatsConfig
from simbatch.cpu import CPUConfig
from simbatch.producers import BlockWorkload
from simbatch.results import summarize
from simbatch.service import ServiceConfig
from simbatch.simulation import Case, replicate


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


def _run(variant: str, client_cores: int | None = 8):
    case = Case(workload=BlockWorkload(n_transactions=3000, inputs_per_tx=3, fanout="errgroup",
                                       cap=1024),
                batcher=BatcherConfig(size=1024, timeout_ms=5, dispatch="background"),
                service=ServiceConfig(fixed_us=60, per_record_us=2.9,
                                      client_parse_ns_per_record=2000, client_cores=client_cores,
                                      stats_variant=variant))
    return summarize(variant, replicate(case, 1, seed=2)).metrics


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


def test_client_cores_show_up_in_block_time():
    assert _run("disabled", client_cores=1)["block_time_s"] > \
        _run("disabled", client_cores=8)["block_time_s"]
