"""The cold-start measurement's reading and report (``validate/kafka_cold_start.py``); the
measurement itself runs from its command (~5 min on a fresh broker), not here."""

from __future__ import annotations

import numpy as np
import pytest

from validate.calibrate_kafka import model_broker
from validate.kafka_cold_start import (
    HERE,
    gap_config,
    model_per_request,
    read_runs,
    report,
    run_path,
)
from validate.kafka_harness import COLUMNS, HarnessError, write_csv

BROKER = model_broker(HERE.parent / "models")


def _run(path, requests: float, data_cpu_s: float) -> None:
    rec = np.full(3, np.nan, dtype=[(c, "f8") for c in COLUMNS])
    rec["msg"] = np.arange(3)
    rec["produce_requests"], rec["broker_data_cpu_s"] = requests, data_cpu_s
    write_csv(rec, path)


def test_each_run_gives_the_request_path_s_cpu_per_request(tmp_path):
    _run(run_path(tmp_path, 0.5, 0), 4000, 1.2)
    _run(run_path(tmp_path, 25.0, 1), 400, 0.32)
    (tmp_path / "notes.csv").write_text("not a run\n")
    runs = read_runs(tmp_path).sort_values("gap_ms")
    assert runs.gap_ms.tolist() == [0.5, 25.0] and runs["round"].tolist() == [0, 1]
    assert runs.us_per_request.tolist() == pytest.approx([300.0, 800.0])


def test_a_directory_without_runs_is_refused_with_its_path(tmp_path):
    with pytest.raises(HarnessError, match=str(tmp_path)):
        read_runs(tmp_path)


def test_a_run_is_one_request_per_message_at_its_gap_for_about_three_seconds():
    short, long = gap_config(0.5), gap_config(25.0)
    assert (short.linger_ms, short.n_partitions, short.feed) == (0, 1, "periodic")
    assert short.n_messages == 4000 and gap_config(1.0).n_messages == 3000
    assert long.n_messages == 400 and long.interval_ms == 25.0


def test_the_model_s_broker_starts_cold_once_it_idled_past_cold_after():
    # what the measurement is set against: one cold start per request once the gap leaves
    # the broker idle longer than cold_after_us, none below
    assert BROKER is not None
    warm, warm_cold = model_per_request(0.5, BROKER)
    cold, cold_cold = model_per_request(3.0, BROKER)
    assert warm_cold == pytest.approx(0.0, abs=0.01)      # the run's first request
    assert cold_cold == pytest.approx(1.0, abs=0.01)
    assert cold - warm == pytest.approx(BROKER["cold_us"], rel=0.1)


def test_the_report_puts_each_gap_s_rounds_beside_the_model(tmp_path):
    for r, cpu in enumerate((1.0, 1.2)):
        _run(run_path(tmp_path, 0.5, r), 4000, cpu)
    text = report(read_runs(tmp_path), BROKER)
    row = next(line for line in text.splitlines() if line.startswith("| 0.5 |"))
    assert row.startswith("| 0.5 | 2 | 275 (250-300) | ")
