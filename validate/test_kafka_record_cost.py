"""The broker's CPU per record and per request, measured directly (validate/kafka_record_cost.py):
the fit recovers known costs and refuses a design that cannot tell them apart; bad arguments
get a clear error; on the broker the test job started, a request's cost measured this way
agrees with the one the calibration's ladder fitted."""

from __future__ import annotations

import numpy as np
import pytest

from validate.kafka_models import model_broker
from validate.kafka_record_cost import (
    CSV_NAME,
    DESIGN,
    HERE,
    Round,
    by_point,
    fit,
    main,
    measure,
    read_rounds,
    write_rounds,
)

MODELS = HERE.parent / "models"


def _round(rate: float, linger: float, requests_per_s: float, cores: float) -> Round:
    span = 6.0
    return Round(rate, linger, int(rate * span), span, jvm_cpu_s=cores * span,
                 data_cpu_s=cores * span, jit_cpu_s=0.0, gc_cpu_s=0.0,
                 produce_requests=requests_per_s * span / 2,
                 fetch_requests=requests_per_s * span / 2)


def _design(record_us: float, seed: int) -> list[Round]:
    """Four rounds of each design point whose broker burnt 800 us x requests/s +
    ``record_us`` x records/s + 0.015 cores, and a little noise."""
    rng = np.random.default_rng(seed)
    rounds = []
    for _ in range(4):
        for rate, linger in DESIGN:
            req = 20.0 if linger == 100 else 94.0
            cores = 800e-6 * req + record_us * 1e-6 * rate + 0.015 + rng.normal(0, 0.002)
            rounds.append(_round(rate, linger, req, cores))
    return rounds


def test_the_fit_recovers_a_request_s_and_a_record_s_cost():
    # at the design's three points: the fit gives the costs back within its standard errors
    rounds = _design(0.4, seed=3)
    c = fit(rounds, lambda r: r.data_cpu_s / r.span_s)
    assert abs(c.request_us - 800) < 3 * c.request_se + 1
    assert abs(c.record_us - 0.4) < 3 * c.record_se + 0.01
    assert c.base_cores == pytest.approx(0.015, abs=0.01)
    assert set(by_point(rounds)) == set(DESIGN)


def test_the_calibration_takes_the_record_cost_from_the_sessions_rounds(tmp_path):
    # a ladder session's out-dir holding the design's rounds gives the ladder's fit their
    # serving CPU's record cost; without them, the models file's
    from validate.broker_costs import given_record_cpu_us, session_record_cost

    assert session_record_cost(tmp_path) is None
    assert given_record_cpu_us(None, {"record_cpu_us": 2.5}) == 2.5
    assert given_record_cpu_us(None, None) == 0.0
    write_rounds(tmp_path / CSV_NAME, _design(0.5, seed=5))
    got = session_record_cost(tmp_path)
    assert got is not None and abs(got.record_us - 0.5) < 3 * got.record_se + 0.01
    assert given_record_cpu_us(got, {"record_cpu_us": 2.5}) == got.record_us
    assert read_rounds(tmp_path / CSV_NAME) == _design(0.5, seed=5)


def test_a_design_of_one_request_size_is_refused_with_the_reason():
    rounds = [_round(20_000, 100, 20.0, 0.05) for _ in range(6)]
    with pytest.raises(ValueError, match="cannot tell a request's cost from a record's"):
        fit(rounds, lambda r: r.data_cpu_s / r.span_s)


def test_an_out_dir_it_cannot_write_is_named_before_anything_is_measured(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(SystemExit) as exc:
        main(["--out-dir", str(blocker / "sub")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "kafka_record_cost: error:" in err and str(blocker) in err


@pytest.mark.parametrize("argv", [["--reps", "1"], ["--seconds", "0"], ["--warm", "-1"]])
def test_bad_arguments_are_named(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "--reps at least 2" in capsys.readouterr().err


@pytest.mark.kafka
def test_a_request_costs_the_broker_what_the_ladder_fitted_for_one(kafka_broker):
    # At ~47 requests/s (linger 20 ms, one partition) the broker idles ~20 ms between
    # requests, so each starts cold: the models file, fitted on the calibration's ladder of
    # small requests, charges request_cpu_us + cold_us (313 + 393 us) for a produce request
    # that finds it idle. The design here tells a request's cost (produce or fetch) from a
    # record's on the request path's own threads: 840 +- 84 and 734 +- 30 us in sessions of
    # four repetitions, 1007 +- 128 in one of three (2026-11-27). The two methods share nothing
    # but the broker, and count a request differently (the ladder's fit is the whole JVM's
    # and charges a fetch after its append warm), so the same order is what is held: within
    # a factor of 2 of a request's cost between a warm one's (313 us) and a cold one's. Warm
    # is in the band: on the CI job's session broker, after ten minutes of calibration
    # traffic, this design read 334 +- 88 us (2026-11-28, a fresh-clone run), where a fresh
    # broker read 1203 +- 128 the same day: a JVM that has compiled its request path for
    # longer pays less than a cold start on these requests. The threads' CPU is read to the
    # nanosecond (broker_jvm._thread_cpu_s): in clock ticks (10 ms, 0.0033 cores over a
    # round) a CI job of 2026-12-06 read the request path at 0.020-0.026 cores at both request
    # sizes and failed here; read so, after the calibration suite on the session broker as in
    # CI, 0.054-0.058 against 0.022-0.023, and 456 +- 13 us per request, 0.45 +- 0.05 per
    # record (the same day, in ticks on a fresh broker: 926 +- 365 and -0.48 +- 1.36).
    if kafka_broker["pid"] is None:
        pytest.skip("the broker's CPU time is only read from a local broker's process")
    rounds = measure(kafka_broker["bootstrap"], kafka_broker["pid"], seconds=3.0, reps=3,
                     warm=2, report=print)
    points = by_point(rounds)
    large, small = points[(20_000, 100)], points[(20_000, 20)]
    assert small["requests_per_s"] > 3 * large["requests_per_s"]
    assert small["data"] > large["data"], points          # more requests, same records
    costs = fit(rounds, lambda r: r.data_cpu_s / r.span_s)
    shipped = model_broker(MODELS)
    warm = float(shipped["request_cpu_us"])
    cold = warm + float(shipped["cold_us"])
    print(costs, warm, cold)
    assert warm / 2.0 <= costs.request_us <= cold * 2.0, (costs, warm, cold)
