"""The shipped service model, fitted to real Aerospike 8.1 batch-read samples, and the
``simbatch fit-service`` command that writes it.

Data: shared/data/aerospike-loopback (raw per-call latencies, 1 to 4096 keys, 1 to 8 client
threads; how they were taken is written beside them). Model: models/aerospike-loopback-8.1.toml.
The fit of both recorded sets from scratch, through ``--from-csv``, is in
validate/test_aerospike_calibration.py; here the shipped file is judged as it stands (the
judge simulates 2,000 calls a cell at concurrency 1, 500 at 2 or more: only medians are
judged there), and the command line's rules are checked.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shlex
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from simhelp import ROOT

import simbatch.planning.judge as judge_mod
from simbatch.batching import ServiceConfig
from simbatch.cli import main
from simbatch.planning.fit import fit_line, fit_tails, load_samples
from simbatch.planning.judge import TOLERANCE, judge, predict
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
    return ServiceConfig(**tomllib.loads(MODEL.read_text())["service"])


def test_the_shipped_concurrency_1_costs_and_tails_are_the_fit_of_the_data(samples, shipped):
    fixed, per, fast_cells = fit_line(samples)
    assert fixed == pytest.approx(shipped.fixed_us, abs=1e-3)
    assert per == pytest.approx(shipped.per_record_us, abs=1e-4)
    assert fast_cells == {}                      # every loopback c = 1 cell ran slow
    tails = fit_tails(samples, fast_cells=fast_cells, line=(fixed, per))
    assert tails == shipped.tail and len(tails.ratios) == 3


def test_the_shipped_model_meets_the_targets_on_its_data(samples, shipped):
    verdict = judge(predict(shipped, samples, conc_calls=500)).set_index("region")
    assert verdict.ok.all(), verdict
    assert dict(verdict.tolerance) == TOLERANCE
    assert list(verdict.cells) == [11, 11, 11, 21, 3]


def test_the_provenance_is_the_command_that_regenerates_the_file():
    prov = tomllib.loads(MODEL.read_text())["provenance"]
    argv = shlex.split(prov["command"])
    assert argv[:6] == ["simbatch", "fit-service",
                        "../shared/data/aerospike-loopback/batch_read_latency.csv",
                        "--out", "models/aerospike-loopback-8.1.toml", "--force"]
    assert prov["samples"] == argv[2]


def test_a_scenario_loads_the_model_file_and_can_switch_the_shared_cores_off(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(f'[service]\nmodel = "{MODEL}"\nmax_in_flight = 4\n'
                    '[service.machine]\ncores = "none"\n')
    case = load_scenario(path).cases[0]
    assert case.service.per_record_us == pytest.approx(2.916, rel=0.01)
    assert case.service.noise == "by_size" and case.service.regime.fast_fixed_us is not None
    assert case.service.max_in_flight == 4     # the scenario's own value wins
    assert case.service.machine.cores is None and case.service.machine.wake_us > 0


# ---------------------------------------------------------------- simbatch fit-service


def _snapshot(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def quick_csv(tmp_path_factory, samples):
    """Four sizes at concurrency 1 and 2, 300 real calls a cell (fits in ~2 s)."""
    cells = samples[samples.batch_size.isin([1, 10, 100, 1000]) & samples.concurrency.isin([1, 2])
                    & (samples.seq < 300 // samples.concurrency)]
    path = tmp_path_factory.mktemp("quick") / "quick.csv"
    cells.to_csv(path, index=False)
    return path


def test_fit_service_options_cannot_be_abbreviated(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["fit-service", str(DATA), "--out", "x.toml", "--for"])
    assert exit_.value.code == 2 and "unrecognized arguments: --for" in capsys.readouterr().err


def test_fit_service_never_replaces_a_file_without_force(quick_csv, capsys):
    before = _snapshot(ROOT / "models")
    assert main(["fit-service", str(quick_csv), "--out", str(MODEL)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "or --force to replace it" in err, err
    assert _snapshot(ROOT / "models") == before


def test_fit_service_writes_a_model_within_tolerance_and_exits_0(quick_csv, tmp_path, capsys):
    out = tmp_path / "m.toml"
    assert main(["fit-service", str(quick_csv), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "conc_median: worst " in printed and "allowed within 30%: yes" in printed
    written = tomllib.loads(out.read_text())
    assert all(row["within"] for row in written["fit_quality"].values())
    ServiceConfig(**written["service"])


def test_fit_service_fed_a_fit_out_of_tolerance_exits_1_and_writes_nothing(
        quick_csv, tmp_path, monkeypatch, capsys):
    real_fit = judge_mod.fit_service

    def wrong(df, **kwargs):                     # a real fit, then 60 % more per key
        fit = real_fit(df, **kwargs)
        return dataclasses.replace(fit, config=dataclasses.replace(
            fit.config, per_record_us=fit.config.per_record_us * 1.6))

    monkeypatch.setattr(judge_mod, "fit_service", wrong)
    before = _snapshot(ROOT / "models")
    out = ROOT / "models" / "aerospike-test-out-of-tolerance.toml"
    assert main(["fit-service", str(quick_csv), "--out", str(out)]) == 1
    printed, err = capsys.readouterr()
    assert "allowed within 15%: NO" in printed and "nothing written" in err
    assert _snapshot(ROOT / "models") == before
    # asked for with --force: written, and beside an existing file, never over it
    beside = tmp_path / "m.toml"
    beside.write_text("a model within tolerance")
    assert main(["fit-service", str(quick_csv), "--out", str(beside), "--force"]) == 1
    assert beside.read_text() == "a model within tolerance"
    assert (tmp_path / "m-out-of-tolerance.toml").is_file()


def test_fit_service_bad_samples_are_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"op": ["get"], "batch_size": [1], "concurrency": [1],
                  "latency_s": [np.float64(1e-4)]}).to_csv(bad, index=False)
    assert main(["fit-service", str(bad), "--out", str(tmp_path / "m.toml")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "batch_read calls at concurrency 1" in err, err
    assert main(["fit-service", str(bad), "--out", str(tmp_path / "m.toml"),
                 "--cores", "0"]) == 2
    assert "The 'cores' parameter of simbatch fit-service" in capsys.readouterr().err
