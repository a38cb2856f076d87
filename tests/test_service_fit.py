"""The service model fitted to real Aerospike 8.1 batch-read samples, and how well it fits.

Data: shared/data/aerospike-loopback (raw per-call latencies, 1 to 4096 keys, 1 to 8 client
threads; how they were taken is written beside them). Model: models/aerospike-loopback-8.1.toml.
"""

from __future__ import annotations

import tomllib

import pytest
from simhelp import ROOT

from simbatch.batching import ServiceConfig
from simbatch.planning.fit import _linear_median, check_fit, load_samples
from simbatch.planning.scenario import load_scenario

DATA = ROOT.parent / "shared/data/aerospike-loopback/batch_read_latency.csv"
MODEL = ROOT / "models/aerospike-loopback-8.1.toml"

pytestmark = pytest.mark.skipif(not DATA.is_file(),
                                reason=f"recorded measurements not found at {DATA}")


@pytest.fixture(scope="module")
def samples():
    return load_samples(DATA)


@pytest.fixture(scope="module")
def shipped() -> ServiceConfig:
    data = tomllib.loads(MODEL.read_text())["service"]
    data["ratios"] = tuple(data["ratios"])
    return ServiceConfig(**data)


@pytest.fixture(scope="module")
def table(samples, shipped):
    small = samples[samples.batch_size <= 2000]
    return check_fit(small, shipped, calls=300)


def test_shipped_model_is_the_fit_of_the_data(samples, shipped):
    c1 = samples[(samples.op == "batch_read") & (samples.concurrency == 1)
                 & (samples.batch_size <= 2000)]
    fixed, per = _linear_median(c1)
    assert fixed == pytest.approx(shipped.fixed_us, rel=0.01)
    assert per == pytest.approx(shipped.per_record_us, rel=0.01)
    get = samples[(samples.op == "get") & (samples.concurrency == 1)]
    assert get.latency_s.median() * 1e6 == pytest.approx(shipped.single_record_us, rel=0.01)


def test_single_client_fit_medians_within_15_percent_p90_20_p99_45(table):
    c1 = table[table.concurrency == 1]
    assert len(c1) == 11
    assert (c1.error_median.abs() <= 0.15).all(), c1
    assert (c1.error_p90.abs() <= 0.20).all(), c1
    assert (c1.error_p99.abs() <= 0.45).all(), c1


def test_concurrent_small_batches_medians_within_35_percent(table):
    # 2 to 200 keys at 2, 4 and 8 client threads. One-key cells are left out: their fixed
    # cost switches between two levels with thread placement (the data's caveat 4).
    cells = table[(table.concurrency > 1) & table.batch_size.between(2, 200)]
    assert len(cells) == 21
    assert (cells.error_median.abs() <= 0.35).all(), cells


def test_concurrent_large_batches_are_underpredicted_as_documented(table):
    # Known limit, stated in the model file: from 500 keys a call already occupies both vCPUs
    # (measured c=2 throughput no higher than c=1), which a permit pool of 2 does not see.
    large = table[(table.concurrency > 1) & (table.batch_size >= 1000)]
    assert (large.error_median < 0).all() and (large.error_median > -0.60).all(), large


def test_a_scenario_loads_the_model_file(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(f'[service]\nmodel = "{MODEL}"\nmax_in_flight = 4\n')
    case = load_scenario(path).cases[0]
    assert case.service.per_record_us == pytest.approx(2.916, rel=0.01)
    assert case.service.max_in_flight == 4     # the scenario's own value wins
