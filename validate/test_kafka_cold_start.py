"""The cold-start measurement's reading and report (``validate/kafka_cold_start.py``); the
measurement itself runs from its command (~5 min on a fresh broker), not here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from validate.kafka_cold_start import (
    FOLLOWERS_CSV,
    HERE,
    fit_shape,
    follower_cold_us,
    follower_report,
    gap_config,
    interleaved,
    model_per_request,
    read_followers,
    read_runs,
    report,
    run_path,
    shape_report,
    write_follower_cold,
)
from validate.kafka_harness import COLUMNS, HarnessError, write_csv
from validate.kafka_models import model_broker

BROKER = model_broker(HERE.parent / "models")


def _run(path, requests: float, data_cpu_s: float) -> None:
    rec = np.full(3, np.nan, dtype=[(c, "f8") for c in COLUMNS])
    rec["msg"] = np.arange(3)
    rec["produce_requests"], rec["broker_data_cpu_s"] = requests, data_cpu_s
    write_csv(rec, path)


def test_each_run_gives_the_request_path_s_cpu_per_request(tmp_path):
    _run(run_path(tmp_path, 0.5, 0), 4000, 1.2)
    _run(run_path(tmp_path, 25.0, 1), 400, 0.32)
    _run(run_path(tmp_path, 5.0, 0, "poisson"), 600, 0.3)
    (tmp_path / "notes.csv").write_text("not a run\n")
    runs = read_runs(tmp_path).sort_values("gap_ms")
    assert runs.gap_ms.tolist() == [0.5, 5.0, 25.0] and runs["round"].tolist() == [0, 0, 1]
    assert runs.feed.tolist() == ["periodic", "poisson", "periodic"]
    assert runs.us_per_request.tolist() == pytest.approx([300.0, 500.0, 800.0])


def test_a_directory_without_runs_is_refused_with_its_path(tmp_path):
    with pytest.raises(HarnessError, match=str(tmp_path)):
        read_runs(tmp_path)


def test_a_run_is_one_request_per_message_at_its_gap_for_about_three_seconds():
    short, long = gap_config(0.5), gap_config(25.0)
    assert (short.linger_ms, short.n_partitions, short.feed) == (0, 1, "periodic")
    assert short.n_messages == 4000 and gap_config(1.0).n_messages == 3000
    assert long.n_messages == 400 and long.interval_ms == 25.0
    assert gap_config(5.0, "poisson").feed == "poisson"


def test_the_model_s_broker_pays_a_cold_start_by_its_growth():
    # what the measurement is set against: the shipped step pays a whole cold start per
    # request once the gap leaves the broker idle past cold_after_us; the measured ramp
    # (from 1 ms, in full at 7) a share of one between, none at 0.5 ms and all at 25 ms
    assert BROKER is not None
    ramp = {**BROKER, "cold_after_us": 1000.0, "cold_ramp_us": 6000.0}
    warm, warm_cold = model_per_request(0.5, ramp)
    cold, cold_cold = model_per_request(25.0, ramp)
    assert warm_cold == pytest.approx(0.0, abs=0.01)      # the run's first request
    assert 0.2 < model_per_request(4.0, ramp)[1] < 0.8
    assert cold_cold == pytest.approx(1.0, abs=0.01)
    assert cold - warm == pytest.approx(BROKER["cold_us"], rel=0.1)
    assert BROKER.get("cold_ramp_us", 0.0) == 0.0
    assert model_per_request(3.0, BROKER)[1] == pytest.approx(1.0, abs=0.01)


def test_the_report_puts_each_gap_s_rounds_beside_the_model(tmp_path):
    for r, cpu in enumerate((1.0, 1.2)):
        _run(run_path(tmp_path, 0.5, r), 4000, cpu)
    text = report(read_runs(tmp_path), BROKER)
    row = next(line for line in text.splitlines() if line.startswith("| periodic | 0.5 |"))
    assert row.startswith("| periodic | 0.5 | 2 | 275 (250-300) | ")


def test_the_cold_start_s_growth_is_fitted_on_the_runs(tmp_path):
    # runs whose request path spent 280 us warm plus 360 us per cold start of the model's
    # broker at a ramp from 500 us over 4,000: the grid's best shape is that one, with those
    # costs, and the best step is worse
    truth = {**BROKER, "cold_after_us": 500.0, "cold_ramp_us": 4000.0}
    for gap in (1.0, 2.0, 5.0, 10.0):
        cold = model_per_request(gap, truth)[1]
        _run(run_path(tmp_path, gap, 0), 1000, (280 + 360 * cold) * 1000 * 1e-6)
    shapes = fit_shape(read_runs(tmp_path), BROKER, (500.0, 1000.0), (0.0, 4000.0))
    best = shapes[0]
    assert (best.cold_after_us, best.cold_ramp_us) == (500.0, 4000.0)
    assert (best.warm_us, best.cold_us) == pytest.approx((280.0, 360.0), rel=1e-4)
    assert best.rms < 1e-6 and min(f.rms for f in shapes[1:]) > 0.01
    text = shape_report(shapes)
    assert text.startswith("cold start's growth, best: from 500 us idle, in full 4500 us")
    assert "best step (ramp 0)" in text


def _followers(tmp_path, cpu_by_gap):
    rows = [{"feed": "periodic", "gap_ms": gap, "round": r, "messages": 400,
             "fetcher_cpu_s_0": cpu[0], "fetcher_cpu_s_1": cpu[1], "fetcher_cpu_s_2": cpu[2]}
            for gap, rounds in cpu_by_gap.items() for r, cpu in enumerate(rounds)]
    pd.DataFrame(rows).to_csv(tmp_path / FOLLOWERS_CSV, index=False)
    return read_followers(tmp_path)


def test_the_followers_fetcher_cpu_is_read_per_append_and_its_cold_start_reported(tmp_path):
    # the two brokers whose fetchers worked are the partition's followers (the leader's
    # moved 0.004 s for other partitions): 0.04 and 0.036 s over 400 appends, 95 us each
    runs = _followers(tmp_path, {0.5: [(0.04, 0.004, 0.036), (0.036, 0.04, 0.0)],
                                 25.0: [(0.0, 0.124, 0.124), (0.128, 0.0, 0.12)]})
    assert runs.sort_values(["gap_ms", "round"]).us_per_append.tolist() == pytest.approx(
        [95.0, 95.0, 310.0, 310.0])
    assert follower_cold_us(runs) == pytest.approx(215.0)
    text = follower_report(runs, {**BROKER, "follower_cold_us": 215.0})
    assert "| 25 | 2 | 310 (310-310) |" in text
    assert "a follower's cold start: 215 us measured" in text
    assert text.endswith("215 us more cold")


def test_the_followers_cold_start_is_taken_at_the_broker_file_s_host_speed(tmp_path):
    # the same runs, the short gaps' at 30 us of the probe's lateness beyond the floor and
    # the long gaps' at 60, where the file's costs hold at 60: the short gaps' 95 us is 190
    # there, so the cold start at the file's speed is 310 - 190
    from validate.kafka_models import HostSpeed

    runs = _followers(tmp_path, {0.5: [(0.04, 0.004, 0.036), (0.036, 0.04, 0.0)],
                                 25.0: [(0.0, 0.124, 0.124), (0.128, 0.0, 0.12)]})
    speed = HostSpeed(80e-6, 60e-6)
    runs["host_wake_s"] = np.where(runs.gap_ms == 0.5, 110e-6, 140e-6)
    assert follower_cold_us(runs, speed) == pytest.approx(120.0)
    # a run without the probe's figure: every run as measured
    runs.loc[0, "host_wake_s"] = np.nan
    assert follower_cold_us(runs, speed) == pytest.approx(215.0)
    assert follower_cold_us(runs) == pytest.approx(215.0)


def test_a_directory_without_follower_runs_is_refused_with_its_path(tmp_path):
    with pytest.raises(HarnessError, match=str(tmp_path)):
        read_followers(tmp_path)


def test_a_follower_table_without_its_columns_is_refused_with_its_path(tmp_path):
    from validate.kafka_cold_start import FOLLOWERS_CSV

    (tmp_path / FOLLOWERS_CSV).write_text("messages\n1\n")
    with pytest.raises(HarnessError, match=f"{FOLLOWERS_CSV}: not the follower runs' table"):
        read_followers(tmp_path)


@pytest.mark.parametrize("messages", ["0", "-3", "many"])
def test_a_follower_run_without_messages_is_refused_by_row(tmp_path, messages):
    # CPU per append over no appends used to read inf
    from validate.kafka_cold_start import FOLLOWERS_CSV

    (tmp_path / FOLLOWERS_CSV).write_text("gap_ms,messages,fetcher_cpu_s_0,fetcher_cpu_s_1\n"
                                          f"1,400,0.1,0.1\n1,{messages},0.1,0.1\n")
    with pytest.raises(HarnessError, match=f"{FOLLOWERS_CSV}: row 3: messages must be a "
                                           "count above 0; got"):
        read_followers(tmp_path)


def test_the_followers_cold_start_is_written_into_the_broker_s_models_file(tmp_path):
    # into a copy of the shipped file: the value and its note, once however often written
    from validate.kafka_models import broker_model_path, model_broker

    path = broker_model_path(tmp_path)
    path.write_text(broker_model_path(HERE.parent / "models").read_text())
    write_follower_cold(path, 214.6, "measured here")
    write_follower_cold(path, 215.4, "measured again")
    text = path.read_text()
    assert text.count("follower_cold_us =") == 1 and "# follower_cold_us: measured again" in text
    assert model_broker(tmp_path)["follower_cold_us"] == 215.0
    assert {k: v for k, v in model_broker(tmp_path).items() if k != "follower_cold_us"} == {
        k: v for k, v in BROKER.items() if k != "follower_cold_us"}


def test_a_models_file_without_the_broker_s_costs_is_refused_with_its_path(tmp_path):
    path = tmp_path / "kafka-broker-loopback.toml"
    with pytest.raises(HarnessError, match=str(path)):
        write_follower_cold(path, 165.0, "measured")
    path.write_text("[provenance]\n")
    with pytest.raises(HarnessError, match="no \\[broker\\]"):
        write_follower_cold(path, 165.0, "measured")


def test_each_round_walks_the_gaps_the_other_way():
    assert list(interleaved(3, (1.0, 2.0))) == [(0, 1.0), (0, 2.0), (1, 2.0), (1, 1.0),
                                               (2, 1.0), (2, 2.0)]
