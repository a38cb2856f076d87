"""Calibration suite against the real broker (issues 3 and 12): the CI subset of the grid
(``validate.calibrate_kafka.CI_CONFIGS``: each client, librdkafka, franz-go and the Java
producer, at linger 1 s and P = 32, librdkafka at linger 10 ms, the deadline outer batcher,
and each client's fit) measured on the broker the fixture started (or the user's cluster,
``SIMBATCH_KAFKA_BOOTSTRAP``) and predicted by the model in the same run, printed side by
side. Predicted p50 and p99 must be within 15 % of measured (5 ms where measured is under
50 ms); a measured figure is the median over REPEATS serial runs of the configuration, each
predicted from its client's fit run measured just before it. The full grid (every client at
linger 10 ms and 1 s, P = 1, 8, 32, 128, and the deadline outer batcher at 100 ms and 1 s
over both lingers) is ``python -m validate.calibrate_kafka``.

The Go and Java harnesses are built by the fixtures (``go build``, ``mvn -q -B package``);
a client whose tool is missing is skipped with the reason. Measurements run serially; on a
2-core machine nothing else should run beside them.
"""

from __future__ import annotations

import numpy as np
import pytest

from validate.calibrate_kafka import CI_CONFIGS, CONFIGS, FIT, compare, measure, table
from validate.conftest import need
from validate.kafka_harness import HarnessConfig, HarnessError, run

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def calibration(kafka_broker, harnesses, tmp_path_factory):
    out = tmp_path_factory.mktemp("kafka-measurements")
    names = [n for n in CI_CONFIGS if not harnesses[CONFIGS[n].client]]
    if not names:
        pytest.skip("no Kafka client harness can run here: " + "; ".join(
            v for v in harnesses.values() if v))
    results = measure(kafka_broker["bootstrap"], out, names=names)
    rows = compare(results)
    print("\n" + table(rows))
    return out, rows, names


def test_the_grid_covers_what_the_model_claims():
    from validate.calibrate_kafka import CLIENTS

    for client in CLIENTS:
        mine = [c for c in CONFIGS.values() if c.client == client]
        plain = {(c.linger_ms, c.n_partitions) for c in mine
                 if c.outer_linger_ms is None and c.n_messages == 200 and c.interval_ms == 25}
        assert plain >= {(linger, p) for linger in (10, 1000) for p in (1, 8, 32, 128)}
        deadline = {(c.outer_linger_ms, c.linger_ms) for c in mine
                    if c.outer_timer == "deadline"}
        assert deadline == {(100, 10), (100, 1000), (1000, 10), (1000, 1000)}
        assert FIT[client] in CONFIGS and CONFIGS[FIT[client]].linger_ms == 0
    assert all(c.label == name for name, c in CONFIGS.items())   # the model's keys
    ci = {CONFIGS[n].client for n in CI_CONFIGS}
    assert ci == set(CLIENTS) and set(FIT.values()) <= set(CI_CONFIGS)
    assert any(CONFIGS[n].outer_timer == "deadline" for n in CI_CONFIGS)


def test_measurements_are_written(calibration):
    out, _, names = calibration
    from validate.calibrate_kafka import REPEATS

    # each kept run, and for every configuration but the fits the fit run paired with it
    assert sorted(p.stem for p in out.glob("*.csv")) == sorted(
        [f"{name}.run{k}" for name in names for k in range(REPEATS)]
        + [f"{name}.run{k}.fit" for name in names if name not in FIT.values()
           for k in range(REPEATS)])


def test_runs_are_judged_on_most_of_their_messages(calibration):
    from validate.calibrate_kafka import KEPT

    # messages the host stalled are left out on both sides; a run missing half of them
    # would be judged on too little
    assert all(stalled < 0.5 for runs in KEPT.values() for stalled, _ in runs), KEPT


@pytest.mark.parametrize("name,metric", [(n, m) for n in CI_CONFIGS for m in ("p50", "p99")])
def test_prediction_within_tolerance(calibration, harnesses, name, metric):
    need(harnesses, CONFIGS[name].client)
    _, rows, _ = calibration
    row = next(r for r in rows if r["config"] == name and r["metric"] == metric)
    assert row["ok"], row


def test_no_broker_fails_fast_with_a_clear_message(tmp_path):
    import time

    from validate.kafka_broker import free_port

    t0 = time.monotonic()
    with pytest.raises(HarnessError, match=r"no Kafka broker reachable at 127\.0\.0\.1:\d+"):
        run(f"127.0.0.1:{free_port()}", HarnessConfig(connect_timeout_s=2.0))
    assert time.monotonic() - t0 < 10


def test_broker_killed_mid_run_keeps_measurements(kafka_libs, tmp_path):
    import threading

    from validate.kafka_broker import start, stop

    pytest.importorskip("confluent_kafka")
    info = start(kafka_libs)
    try:
        killer = threading.Timer(4.0, stop, args=(info["pid"], None))   # mid-feed
        killer.start()
        out = tmp_path / "partial.csv"
        cfg = HarnessConfig(n_messages=200, interval_ms=25, stall_timeout_s=5.0)
        with pytest.raises(HarnessError, match="stopped answering") as exc:
            run(info["bootstrap"], cfg, out_csv=out)
        assert str(out) in str(exc.value)
        lines = out.read_text().splitlines()
        consumed = [ln for ln in lines[1:] if ln.split(",")[5]]
        assert 10 < len(consumed) < 200           # what was measured before the kill is kept
    finally:
        killer.cancel()
        stop(info["pid"], info["data_dir"])


@pytest.mark.parametrize("late,stall,kept", [(0.001, 0.004, True), (0.012, 0.0, False),
                                             (0.0, 0.011, False), (np.nan, np.nan, True)])
def test_a_message_stalled_by_the_host_is_left_out(late, stall, kept):
    from validate.kafka_harness import COLUMNS, undisturbed

    rec = np.zeros(1, dtype=[(c, "f8") for c in COLUMNS])
    rec["publish_late_s"], rec["stall_s"] = late, stall
    assert undisturbed(rec, 0.010)[0] == kept


def test_stalls_are_charged_to_the_messages_in_flight():
    from validate.kafka_harness import COLUMNS, _stalls_per_message

    rec = np.zeros(3, dtype=[(c, "f8") for c in COLUMNS])
    rec["publish_s"] = [0.0, 0.10, 0.20]
    rec["consume_s"] = [0.05, 0.15, np.nan]          # the last one never consumed
    # a 20 ms stall ending at 0.11 (overlaps message 1), a 30 ms one ending at 0.5 (message 2)
    out = _stalls_per_message(rec, [(0.11, 0.020), (0.5, 0.030)])
    assert out.tolist() == [0.0, 0.020, 0.030]


def test_runs_are_paired_with_the_fit_run_before_them_and_noisy_pairs_measured_again(
        tmp_path, monkeypatch):
    # measure() with the harness replaced by a script of quiet and noisy runs (no broker):
    # each kept run must come with the fit run measured just before it, and a pair with a
    # noisy run in it must be measured again, not kept
    import validate.calibrate_kafka as ck
    from validate.kafka_harness import COLUMNS

    calls: list[str] = []
    noisy_calls = {3, 4}          # the 2nd pair: its fit run and its configuration run
    names = [ck.FIT_CONFIG, "linger10-p8-sparse", "linger1000-p32-sparse",
             ck.FIT["java"], "java-linger10-p1-sparse"]

    def fake_run(bootstrap, cfg, out_csv=None):
        name = next((n for n, c in ck.CONFIGS.items() if c == cfg), "warmup")
        calls.append(name)
        rec = np.zeros(5, dtype=[(c, "f8") for c in COLUMNS])
        rec["msg"] = len(calls) - 1                     # which call measured it
        rec["latency_s"] = 0.001
        rec["steal_share"] = 0.5 if len(calls) - 1 in noisy_calls else 0.0
        return rec

    monkeypatch.setattr(ck, "run", fake_run)
    monkeypatch.setattr(ck, "NOISY_PAUSE_S", 0.0)
    results = ck.measure("unused:0", tmp_path, repeats=2, names=names)
    assert calls[0] == "warmup"
    assert set(results) == set(names)
    first = "linger10-p8-sparse"
    for name, m in results.items():
        assert len(m.runs) == len(m.fit_runs) == 2
        for run_, fit_run in zip(m.runs, m.fit_runs, strict=True):
            assert ck.noise(run_) <= 1 and ck.noise(fit_run) <= 1
            if name not in ck.FIT.values():
                i = int(run_["msg"][0])
                assert calls[i] == name and int(fit_run["msg"][0]) == i - 1
                assert calls[i - 1] == ck.fit_config(name)     # its own client's fit
    assert calls[1:7] == [ck.FIT_CONFIG, first] * 3          # the noisy pair measured again
    assert calls[7:9] == [ck.FIT["java"], "java-linger10-p1-sparse"]   # clients in turn
    assert ck.DISCARDED[first] == [(0.0, 0.5)]
    assert (tmp_path / f"{first}.run1.fit.csv").exists()
