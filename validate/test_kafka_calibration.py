"""Calibration suite against the real broker (issues 3 and 12): the CI subset of the grid
(``validate.kafka_grid.CI_CONFIGS``: each client, librdkafka, franz-go and the Java
producer, at linger 1 s and P = 32, librdkafka at linger 10 ms, the deadline outer batcher,
and each client's fit) measured on the broker the fixture started (or the user's cluster,
``SIMBATCH_KAFKA_BOOTSTRAP``) and predicted by the model in the same run, printed side by
side. Predicted p50 and p99 must be within 15 % of measured (5 ms where measured is under
50 ms); a measured figure is the median over REPEATS serial runs of the configuration, each
predicted from its client's fit run measured just before it. The full grid (every client at
linger 10 ms and 1 s, P = 1, 8, 32, 128, and the deadline outer batcher at 100 ms and 1 s
over both lingers) is ``python -m validate.calibrate_kafka``.

Issue 14: the dense feed at 1000 msg/s over 32 partitions (one of ``CPU_CONFIGS``) is
predicted with the broker's CPU, its costs those of ``models/kafka-broker-loopback.toml``
(fitted on a ladder session without this configuration) at each run's own host speed (the
file's ``[host_speed]`` and the run's probe: nothing fitted on this session; a file without
``[host_speed]`` is scaled by one factor fitted on this run's ``CPU_FIT`` runs), and with
the broker JVM's young collections fitted on the session's other librdkafka runs
(``fitted_gc``), and judged on p50 and p99 (25 %, or 5 ms where measured is under 20 ms)
and on the broker JVM's measured CPU (25 %); a target that does not hold here is marked
xfail with its figures (``NOT_YET``; the p99, there from 2026-11-29 to 2026-12-06, again, see
the comment below it). The whole ladder, 250 to 2000 msg/s, is ``python -m
validate.calibrate_kafka --configs`` with the ``-dense`` names.

The Go and Java harnesses are built by the fixtures (``go build``, ``mvn -q -B package``);
a client whose tool is missing is skipped with the reason. Measurements run serially; on a
2-core machine nothing else should run beside them.
"""

from __future__ import annotations

import numpy as np
import pytest

from validate.calibrate_kafka import (
    INT_LATENCY_BAND_S,
    compare,
    measure,
    table,
    where_cpu_went,
)
from validate.conftest import need
from validate.kafka_grid import CI_CONFIGS, CONFIGS, CPU_CONFIGS, FIT
from validate.kafka_harness import HarnessConfig, HarnessError, run

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def calibration(kafka_broker, harnesses, tmp_path_factory):
    out = tmp_path_factory.mktemp("kafka-measurements")
    names = [n for n in CI_CONFIGS if not harnesses[CONFIGS[n].client]]
    if not names:
        pytest.skip("no Kafka client harness can run here: " + "; ".join(
            v for v in harnesses.values() if v))
    results = measure(kafka_broker["bootstrap"], out, names=names,
                      broker_pid=kafka_broker["pid"])
    rows = compare(results)
    print("\n" + table(rows))
    print("\n".join(where_cpu_went(results, rows)))
    return out, rows, names


def test_the_grid_covers_what_the_model_claims():
    from validate.kafka_grid import CLIENTS

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
           for k in range(REPEATS)]
        + [f"{name}.run{k}.cpufit" for name in names if name in CPU_CONFIGS
           for k in range(REPEATS)])


def test_the_brokers_cpu_is_split_by_thread(calibration):
    from validate.kafka_harness import read_csv

    out, _, names = calibration
    cpu = [n for n in names if n in CPU_CONFIGS]
    if not cpu:
        pytest.skip("no CPU configuration measured")
    for path in sorted(out.glob("*.csv")):
        rec = read_csv(path)
        total = rec["broker_cpu_s"][0]
        if not np.isfinite(total):
            continue                       # a Go or Java harness: no broker CPU
        parts = [rec[f"broker_{k}_cpu_s"][0] for k in ("data", "jit", "gc")]
        # the request path carries the requests; the groups are parts of the JVM's time.
        # Each thread's utime and stime are whole 10 ms ticks, split by the kernel's
        # cputime_adjust per thread and for the process apart, so the groups' ~20 threads
        # can pass the process's total by a few ticks: 3 ticks and 10 % (a fresh-clone run
        # on 2026-11-27 read 0.28 + 0.19 + 0 s against 0.44, a JIT burst in a sparse run)
        assert parts[0] > 0 and min(parts) >= 0, (path.name, parts)
        assert sum(parts) <= 1.1 * total + 0.03, (path.name, parts, total)
        assert rec["broker_data_switches"][0] > 0          # its threads woke for requests


def test_runs_are_judged_on_most_of_their_messages(calibration):
    from validate.calibrate_kafka import KEPT

    # messages the host stalled are left out on both sides; a run missing half of them
    # would be judged on too little
    assert all(stalled < 0.5 for runs in KEPT.values() for stalled, _ in runs), KEPT


# Issue 14's targets that do not hold on this machine, with the figures measured (see the
# docstring of simbatch/kafka/gc.py, "Not modelled either", for the mechanism looked for).
NOT_YET: dict[tuple[str, str], str] = {
    ("linger10-p32-1000ps-dense", "p99"): "issue 14 open: the model's young pauses are drawn "
    "from the session's other runs' and this CPU's pool (models/kafka-gc-loopback.toml), and a "
    "session whose own runs stop longer than those misses low: CI 149 (2026-12-07) measured "
    "27.10 ms against 17.03 predicted, its runs holding a Remark of 19 ms and a pause of 18 (a "
    "pause's length follows what the collection copies, which the model does not draw; see "
    "comment)",
}
# The rung's pauses, since 2026-12-07 (late): drawn from the session's other runs' and this
# CPU's pool (validate/broker_gc.py, "Why a pool"; models/kafka-gc-loopback.toml: CI 147-152's
# other runs, 20 pauses of 7-30 ms and 5 Remarks). Before it, a session's one to six pauses set
# every drawn pause: CI 148 predicted 31.67 ms against 21.78 measured from a single pause of
# 30 ms. On those six sessions, each judged with the other five's pauses pooled in (`--ci
# --from-csv`): -7, -17, -37, -9, -16, +13 % (the session's own alone: -12, +45, -29, -13, +3,
# -11 %). On sessions the pool was not made from (2026-12-07, 22:55-23:36 UTC, nothing else
# running; three by `python -m validate.calibrate_kafka --ci`, one by this file's fixture):
# measured 19.34, 22.96, 20.02 and 21.64 ms, predicted +0, -23, -7 and -21 % (the session's own
# alone: -5, -10, -21, -21 %); and CI 153 (00:00 UTC), the first job with the pool, measured
# 24.44 ms, predicted 17.86 (-27 %, XFAIL; -33 % with its own alone): its rung's own pauses
# read 9-20 ms (median 15) at 4.5-7 MB of survivors, four young collections a run against the
# model's three; and one more by the command (00:17 UTC): 20.86 ms, -16 % (own alone -3 %).
# On these six held-out sessions the pool misses as often as the session's own alone (one
# each, CI 153) and reads as far off on average (|error| 15.7 against 15.5 %): what it takes
# out is the tiny sample's high miss (CI 148 above, CI 112 below), not the low side. The
# model still reads the rung's tail low more often than high: a session measuring above ~23
# ms misses (the mechanisms below).
# The rung's p99 is a non-strict xfail again since CI 112 (2026-12-06, the 26th fresh-clone
# run on this machine), which missed high: 14.03 ms measured, 21.15 predicted. Its session's
# other runs held a single young pause, of 20 ms, and the model drew every pause of the rung
# at that length (the rung's own: twelve of 3-9 ms), with 3 Remarks per run against none
# measured: the pause's length follows what the collection copies, which the model does not
# draw (simbatch/kafka/gc.py, "Not modelled either"). The same runs with the costs scaled by
# the factor of before read 20.89: the costs' speed is not what moved it.
# The rung's p99 was judged again from 2026-12-06 morning: a non-strict xfail from 2026-11-29, it
# passed in all 16 fresh-clone runs on this machine (AMD EPYC of family 26, 2 vCPUs; CI 87 to
# 102, 2026-12-06). Measured / predicted ms, each job's runs re-judged (`python -m
# validate.calibrate_kafka --ci --from-csv --out-dir COPY`): 14.06 / 13.14 (-7 %), 14.67 /
# 12.19 (-17 %), 13.98 / 17.44 (+25 %), 14.11 / 12.52 (-11 %), 14.32 / 13.46 (-6 %), 14.18 /
# 13.57 (-4 %), 17.55 / 15.04 (-14 %), 15.36 / 12.90 (-16 %), 14.20 / 13.95 (-2 %), 16.09 /
# 13.47 (-16 %) (CI 87-91, 93, 98-101): at most 3.5 ms off where the band under 20 ms is 5.
# Its misses were on the machine before (below: two of six fresh-clone runs on 2026-11-29,
# 22.45 / 16.77 and 17.82 / 12.18 ms), and the prediction still reads low more often than
# high (the mechanisms below), so a slower host may miss again.
# The rung's p99, back here on 2026-11-29 after six fresh-clone runs that day, measured /
# predicted ms: 18.55 / 18.28, 22.45 / 16.77 (failed), 18.48 / 16.44, 17.21 / 12.27 (within
# only by the 5 ms band under 20 ms), 13.64 / 15.36, 17.82 / 12.18 (failed). CI fits the
# collector on the session's other runs, which held 3 young pauses each (5, 7, 7 ms; 5, 9,
# 16; 5, 9, 9): one pause of 16 ms among them puts the prediction at 15.4, none above 9 at
# 12.1-12.3. The model also carries a pause into the messages' latency less than the broker
# does: on CI 68's runs it reads 12.86 with the rung's own pauses and Remarks, 13.85 with the
# models file's 16 pauses pooled in and 11.82 with no collections, against 17.21 measured;
# the broker's own produce requests (its request log, validate/kafka_request_log.py: three
# runs of the rung) took at most 1.1-2.2 ms at p99, so ~4 ms of the messages' tail lies
# between the client and the broker's reading of the request (the muted connection, the
# client), where the log's whole-ms stamps cannot place it.
# And it swings high: CI 84 (2026-11-29) read 14.71 / 17.74 (+21 %). Its other runs held 3
# young pauses (12, 12, 20 ms; the rung's own 4-10): with the rung's own pauses the model
# reads 16.68, with none 16.20, and 12.23 with none and the round trips of that job's
# linger-0 fit runs, which the model resamples per request, cut at their 98th percentile
# (their p99 up to 5.5 times the median): the tail of the fit runs sets most of it. A
# pause's length follows what the collection copies, which each run's new topic inflates
# (simbatch/kafka/gc.py, "Not modelled either"). Since: +6 % (CI 85), +15 % (CI 86), and on
# a machine whose CPU is twice as fast (2026-12-06) -11 % in a session of the validate suite
# and -7 % in CI 87 (14.06 / 13.14 ms), +25 % in CI 89 (13.98 / 17.44, within the 5 ms band
# under 20 ms) and -11 % in CI 90 (14.11 / 12.52).
# Since 2026-12-06 the models file states the host speed its costs hold at ([host_speed],
# measured on CI 98-101's sessions: 70.4 us), and the rung's broker CPU is predicted at each
# run's speed with nothing fitted on the session (validate/broker_costs.py, "The host's
# speed": CI 103-109's kept runs, held out, +3, 0, -4, +2, +10 and -1 %). The figures below
# are of the factor fitted on each session's CPU_FIT runs, before.
# The rung's broker CPU was here until 2026-11-29, a non-strict xfail, with a strict 50 %
# bound beside it. CI scales the models file's costs by one factor fitted on the session's
# CPU_FIT runs (4 partitions), and the two configurations' CPU ratio moved from session to
# session: within 25 % in 13 of the first 15 fresh-clone runs after the JIT compiler was left
# out (5c52727, 2026-11-27), +26 % and +25 % in the last two (another machine of the same
# type); on 2026-11-27 +18, +1 and -9 % in three CI sessions; on 2026-11-28 within 25 % in
# all nine fresh-clone runs that measured it. Since the record's cost comes from its own
# design (validate/kafka_record_cost.py; models file of 2026-11-28, 0.57 us per record
# against 3.06): measured / predicted 0.44 / 0.45 cores (+3 %) in a session of this module
# alone, within 25 % in the two fresh-clone runs after it, 0.49 / 0.49 (+1 %) in another
# session of this module alone (2026-11-29): it is judged like every other figure now.
# The rung's p99 was here until 2026-11-28. It was predicted low (-17 to -24 %) until the
# harness started jstat before the feed and the model's young collections were fitted on the
# session's other runs (2026-11-27); since, measured / predicted 18.6 / 17.8, 19.0 / 16.8 and
# 18.6 / 16.7 ms in three CI sessions, within the band in all nine fresh-clone runs of
# 2026-11-28 that measured it, and 17.29 / 17.47 in a session of this module alone: it was
# judged like every other figure from then until 2026-11-29 (above). What the model still
# leaves out of that tail (messages in flight over a collection's pause answered 1-10 ms
# beyond it, the measured pauses aligned with -Xlog:safepoint; the model's within ~0.5 ms)
# is told in full in this table's entry for it at commit c69e7b1.


def _cases():
    for name in CI_CONFIGS:
        for metric in ("p50", "p99") + (("broker_cpu",) if name in CPU_CONFIGS else ()):
            reason = NOT_YET.get((name, metric))
            marks = [pytest.mark.xfail(strict=False, reason=reason)] if reason else []
            yield pytest.param(name, metric, marks=marks, id=f"{name}-{metric}")


@pytest.mark.parametrize("name,metric", list(_cases()))
def test_prediction_within_tolerance(calibration, harnesses, name, metric):
    need(harnesses, CONFIGS[name].client)
    _, rows, _ = calibration
    row = next((r for r in rows if r["config"] == name and r["metric"] == metric), None)
    if row is None:
        pytest.skip("the broker's CPU time is not measured on a user's cluster")
    assert row["ok"], row


def test_librdkafka_s_own_internal_latency_is_predicted_on_the_rung(calibration, harnesses):
    # the client's own statistics (int_latency: produce() to message set, per 200 ms window)
    # against the model's broker thread, which sleeps whole milliseconds (librdkafka.py L9):
    # measured 10.24 ms in every window of four runs on 2026-11-29, predicted 10.23 (10.00
    # without L9); nothing is fitted to it
    need(harnesses, "librdkafka")
    _, rows, names = calibration
    rung = next(n for n in names if n in CPU_CONFIGS)
    row = next(r for r in rows if r["config"] == rung and "client_int" in r)
    (measured, _), (predicted, _) = row["client_int"]
    assert np.isfinite(measured), row
    assert abs(predicted - measured) <= INT_LATENCY_BAND_S, row["client_int"]


def test_the_clients_internal_latency_is_printed_beside_the_model_s():
    rows = [{"config": "linger10-p8-sparse", "client_int": ((0.01024, 0.0111),
                                                            (0.01023, 0.01095))}]
    line, = where_cpu_went({}, rows)
    assert ("int_latency (produce to message set; per 200 ms window, median over windows) "
            "p50 measured 10.24 ms, predicted 10.23; p99 measured 11.10, predicted 10.95") in line


def test_the_broker_costs_fitted_at_a_host_speed_give_back_each_run_s_cpu_at_its_own():
    # the synthetic ladder's runs at host speeds 30 to 90 us, each burning its work at the
    # true costs (holding at 60 us) scaled to its speed: the fit at 60 us finds the true costs
    from validate.broker_costs import at_speed, fit_broker, speed_of

    samples = _synthetic_samples()
    speeds = np.linspace(30e-6, 90e-6, len(samples))
    truth = dict(zip(_keys(), TRUTH, strict=True))
    for s, v in zip(samples, speeds, strict=True):
        s.speed = float(v)
        own = at_speed(truth, 60e-6, s.speed)
        s.work = float(s.served(_costs(own)) @ np.array(_costs(own)[:N_COSTS])) * 1e-6
    assert speed_of(samples) == pytest.approx(60e-6)
    # (the step's idle time is picked on a grid at unit costs: 750 us here, the costs within
    # 25 %; 165.6, 375.6 and 4.53 against 150, 400 and 6)
    broker = fit_broker(samples, record_cpu_us=TRUTH[3], at_s=60e-6)
    assert _costs(broker)[:N_COSTS] == pytest.approx(TRUTH[:N_COSTS], rel=0.25)
    # unscaled, the same runs fit worse: the slow runs' CPU read as their traffic's (cold
    # start 191, a partition 11.1)
    plain = fit_broker(samples, record_cpu_us=TRUTH[3])
    err = [abs(a / b - 1) for a, b in zip(_costs(plain)[:3], TRUTH[:3], strict=True)]
    assert max(err) > 0.4, _costs(plain)
    # one run without the probe: no speed to hold the costs at
    samples[0].speed = float("nan")
    assert speed_of(samples) is None


def test_the_costs_a_cpu_configuration_is_predicted_with_are_printed_with_their_speed(
        listed_cpu):
    # the models file's costs holding at 60 us, a rung whose runs read 30 us beyond the floor
    from validate.calibrate_kafka import HERE
    from validate.kafka_fit import Measured
    from validate.kafka_harness import COLUMNS
    from validate.kafka_models import host_speed_model, model_broker

    shape, speed = model_broker(HERE.parent / "models"), host_speed_model()
    assert shape is not None and speed is not None
    recs = []
    for _ in range(3):
        rec = np.zeros(4, dtype=[(c, "f8") for c in COLUMNS])
        rec["host_wake_s"] = speed.wake_floor_s + 30e-6
        rec["broker_data_switches"] = np.nan         # its threads not read: no such line
        recs.append(rec)
    name = next(iter(CPU_CONFIGS))
    rows = [{"config": name, "broker": (shape, 60e-6)}]
    line = next(x for x in where_cpu_went({name: Measured(recs, [], recs)}, rows)
                if "broker the models file's" in x)
    assert f"at a host speed of 60.0 us (the probe's wait lateness beyond " \
        f"{speed.wake_floor_s * 1e6:.1f}); its runs' 30.0 us, so x 0.50" in line, line
    # a ladder's session fits each configuration's costs on the others
    ladder = {n: Measured([], [], recs) for n in CPU_CONFIGS}
    assert any("broker fitted on the session's other runs" in x
               for x in where_cpu_went(ladder, rows))
    # a file without [host_speed]: its costs x 0.40 fit the CPU_FIT runs' CPU at 28.8 us
    # (CI 100): they hold at 72 us by the broker's CPU
    for rec in recs:
        rec["host_wake_s"] = speed.wake_floor_s + 28.8e-6
    scaled = {**shape, "request_cpu_us": 0.4 * shape["request_cpu_us"]}
    line = next(x for x in where_cpu_went({name: Measured([], [], recs)},
                                          [{"config": name, "broker": (scaled, None)}])
                if "scaled on the" in x)
    assert "(x 0.40; those runs at a host speed of 28.8 us" in line, line
    assert f"the file's costs hold at 72.0 us by the broker's CPU, where the replication acks " \
        f"fit {speed.costs_at_s * 1e6:.1f}" in line, line


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
    from validate.kafka_grid import FIT, FIT_CONFIG, fit_config
    from validate.kafka_harness import COLUMNS

    calls: list[str] = []
    noisy_calls = {3, 4}          # the 2nd pair: its fit run and its configuration run
    names = [FIT_CONFIG, "linger10-p8-sparse", "linger1000-p32-sparse",
             FIT["java"], "java-linger10-p1-sparse"]

    def fake_run(bootstrap, cfg, out_csv=None, broker_pid=None):
        name = next((n for n, c in CONFIGS.items() if c == cfg), "warmup")
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
            if name not in FIT.values():
                i = int(run_["msg"][0])
                assert calls[i] == name and int(fit_run["msg"][0]) == i - 1
                assert calls[i - 1] == fit_config(name)     # its own client's fit
    assert calls[1:7] == [FIT_CONFIG, first] * 3          # the noisy pair measured again
    assert calls[7:9] == [FIT["java"], "java-linger10-p1-sparse"]   # clients in turn
    assert ck.DISCARDED[first] == [(0.0, 0.5)]
    assert (tmp_path / f"{first}.run1.fit.csv").exists()


def test_the_grid_takes_dense_multi_partition_feeds_from_idle_to_saturation():
    from validate.kafka_grid import (
        CPU_FIT,
        DENSE_RATES,
        RECORD_CONFIGS,
        RECORD_RATES,
        fit_configs,
    )

    def dense(linger):
        return {(CONFIGS[n].n_partitions, round(1000 / CONFIGS[n].interval_ms))
                for n in CPU_CONFIGS if CONFIGS[n].linger_ms == linger}

    assert dense(10) == {(p, rate) for p in (8, 32) for rate in DENSE_RATES}
    # and large requests, 25 and 100 records each (one partition's batch per request)
    assert dense(100) == {(8, rate) for rate in RECORD_RATES} and dense(100) == {
        (CONFIGS[n].n_partitions, round(1000 / CONFIGS[n].interval_ms)) for n in RECORD_CONFIGS}
    # predicted from costs fitted on another configuration, measured just before each run
    assert CPU_FIT in CONFIGS and CPU_FIT not in CPU_CONFIGS
    assert CONFIGS[CPU_FIT].n_partitions not in {CONFIGS[n].n_partitions for n in CPU_CONFIGS}
    assert all(fit_configs(n) == (FIT["librdkafka"], CPU_FIT) for n in CPU_CONFIGS)
    assert {CONFIGS[n].n_partitions for n in CI_CONFIGS if n in CPU_CONFIGS} == {32}


def test_dense_multi_partition_configurations_are_judged_by_issue_14s_tolerance():
    from validate.calibrate_kafka import within

    dense, sparse = CPU_CONFIGS[0], "linger10-p8-sparse"
    assert within(0.0149, 0.010, dense) and not within(0.0151, 0.010, dense)  # 5 ms < 20 ms
    assert within(0.031, 0.025, dense) and not within(0.0315, 0.025, dense)   # 25 %
    assert within(0.62, 0.5, dense, "broker_cpu")
    assert not within(0.63, 0.5, dense, "broker_cpu")
    assert not within(0.0576, 0.050, sparse) and within(0.0574, 0.050, sparse)  # 15 %


TRUTH = (150.0, 400.0, 6.0, 3.0, 1000.0, 0.0)
"""Broker costs for synthetic runs: request unit, cold start, partition fetched, record (us),
and the cold start's growth (``cold_after_us``, ``cold_ramp_us``: a step, as the ladder's fit
tries)."""
N_COSTS = 4
"""How many of :data:`TRUTH` are costs (the rest is the cold start's growth)."""
LADDER = ("linger10-p8-500ps-dense", "linger10-p32-250ps-dense", "linger10-p32-2000ps-dense")


def _synthetic_samples(costs=TRUTH, configs=LADDER + ("linger100-p8-2000ps-dense",)):
    """One run of each rate and partition count the fit sees (``configs`` besides the fit
    and CPU fit runs), whose broker did exactly the model's work at ``costs``."""
    from validate.broker_costs import CpuSample
    from validate.kafka_fit import Fitted
    from validate.kafka_grid import CPU_FIT

    fitted = Fitted(0.8, (1.0,), 0.3, (1.0,))
    out = []
    for name in (FIT["librdkafka"], CPU_FIT, *configs):
        sample = CpuSample(name, 0.0, 0.05, fitted, 0)
        sample.work = float(sample.served(costs) @ np.array(costs[:N_COSTS])) * 1e-6
        out.append(sample)
    return out


def _costs(broker):
    return tuple(broker[k] for k in _keys())


def test_the_broker_costs_fitted_on_runs_give_back_their_cpu():
    # runs whose CPU is the model's own at known costs, from idle (one partition, 40
    # requests/s, every request cold) to 2000 msg/s over 32 partitions (mostly warm): the
    # fit finds the idle time, costs near the true ones, and gives every run's CPU back
    from validate.broker_costs import fit_broker

    samples = _synthetic_samples()
    broker = fit_broker(samples, record_cpu_us=TRUTH[3])
    assert broker["idle_cores"] == 0.05 and broker["cores"] >= 1
    assert _costs(broker)[N_COSTS:] == TRUTH[N_COSTS:]
    assert _costs(broker)[:N_COSTS] == pytest.approx(TRUTH[:N_COSTS], rel=0.2)
    for s in samples:
        got = float(s.served(_costs(broker)) @ np.array(_costs(broker)[:N_COSTS])) * 1e-6
        assert got == pytest.approx(s.work, rel=0.05), s.config


def test_a_models_files_ramp_is_kept_when_its_costs_are_scaled():
    # a user's file whose cold start grows over a ramp (as validate/kafka_cold_start.py
    # measured): a small session scales its costs and keeps its growth
    from validate.broker_costs import fit_broker
    from validate.kafka_grid import CPU_FIT

    truth = (*TRUTH[:N_COSTS], 1000.0, 6000.0)
    samples = [s for s in _synthetic_samples(costs=truth)
               if s.config in (FIT["librdkafka"], CPU_FIT)]
    half = dict(zip(_keys(), (*(c / 2 for c in truth[:N_COSTS]), *truth[N_COSTS:]),
                    strict=True))
    assert _costs(fit_broker(samples, half)) == pytest.approx(truth, rel=0.02)


def test_a_small_session_scales_the_models_files_costs():
    # CI's session cannot tell a cold start from a partition fetched: the models/ file's
    # costs at half the truth are scaled back by the one factor its runs give
    from validate.broker_costs import fit_broker
    from validate.kafka_grid import CPU_FIT

    samples = [s for s in _synthetic_samples() if s.config in (FIT["librdkafka"], CPU_FIT)]
    half = dict(zip(_keys(), (*(c / 2 for c in TRUTH[:N_COSTS]), *TRUTH[N_COSTS:]),
                    strict=True))
    assert _costs(fit_broker(samples, half)) == pytest.approx(TRUTH, rel=0.02)


def test_a_rung_is_predicted_from_the_other_runs_or_the_models_file():
    # held out, the 8-partition rung leaves no 8-partition runs to tell a partition's cost
    # from a cold start's: it takes the models/ file's costs, scaled on CPU_FIT's runs; a
    # 32-partition rung leaves both counts, and is fitted on the session's own runs
    from validate.broker_costs import held_out_broker, separable

    samples = _synthetic_samples(costs=(*TRUTH[:3], 0.0, *TRUTH[N_COSTS:]), configs=LADDER)
    shape = dict(zip(_keys(), (100.0, 100.0, 1.0, 1.0, 500.0, 0.0), strict=True))
    eight, at_s = held_out_broker(samples, "linger10-p8-500ps-dense", shape)
    assert eight["cold_after_us"] == 500.0 and at_s is None
    assert eight["cold_us"] / eight["request_cpu_us"] == pytest.approx(1.0, rel=0.02)
    assert separable([s for s in samples if s.config != "linger10-p32-250ps-dense"])
    own, at_s = held_out_broker(samples, "linger10-p32-250ps-dense", shape)
    assert _costs(own)[N_COSTS:] == TRUTH[N_COSTS:] and at_s is None      # no probe: no speed
    # a models file that says the speed its costs hold at, and runs with the probe: the
    # file's costs as they are, nothing fitted (each run's costs scaled to its speed later)
    for s in samples:
        s.speed = 50e-6
    file_costs, at_s = held_out_broker(samples, "linger10-p8-500ps-dense", shape,
                                       shape_at_s=60e-6)
    assert file_costs is shape and at_s == 60e-6


def _keys():
    from validate.broker_costs import COSTS, SHAPE

    return (*COSTS, *SHAPE)


def test_a_records_cost_is_given_to_the_ladders_fit_not_fitted_on_it():
    # the ladder's requests carry 1-100 records, too few to tell a record's cost (the
    # sessions of 2026-11-26 to 11-28 fitted 3.6, 2.6, 1.24 and 0.98 +- 1.5 us on them): the
    # fit takes it as given (kafka_record_cost.py's design measures it) and finds the rest
    from validate.broker_costs import fit_broker

    samples = _synthetic_samples()
    assert _costs(fit_broker(samples, record_cpu_us=TRUTH[3]))[:N_COSTS] == pytest.approx(
        TRUTH[:N_COSTS], rel=0.2)
    folded = fit_broker(samples)             # given none: the records' CPU lands elsewhere
    assert folded["record_cpu_us"] == 0.0
    assert folded["request_cpu_us"] > TRUTH[0]
    assert fit_broker(samples, record_cpu_us=-0.4)["record_cpu_us"] == 0.0


def test_a_rounds_file_it_cannot_read_is_refused_with_the_path(tmp_path):
    from validate.broker_costs import session_record_cost
    from validate.kafka_harness import HarnessError
    from validate.kafka_record_cost import CSV_NAME

    (tmp_path / CSV_NAME).write_text("rate,linger_ms\n20000,abc\n")
    with pytest.raises(HarnessError, match=f"{CSV_NAME}: not a file of record-cost rounds"):
        session_record_cost(tmp_path)


@pytest.mark.parametrize("text", ["x\n1,2,3\n", "", "a,b\n1,2\n", "msg,latency_s\n"])
def test_a_file_that_is_not_a_harness_csv_is_refused_with_the_path(tmp_path, text):
    # garbage, empty, other columns, no rows: one line naming the file, not numpy's error
    from validate.kafka_harness import HarnessError, read_csv

    path = tmp_path / "linger0-p1-sparse.run0.csv"
    path.write_text(text)
    with pytest.raises(HarnessError, match=f"{path}: not a harness's per-message CSV") as err:
        read_csv(path)
    assert "\n" not in str(err.value)


# jstat -gc's columns that gc_figures reads (it finds them by name among the others)
JSTAT = """\
 S0C      EC       EU        OU     YGC     YGCT    FGC    FGCT     CGC    CGCT     GCT
 0.0   65536.0  60000.0   90000.0     10    0.100     0    0.000     2    0.010    0.110
 0.0   65536.0  64000.0   90000.0     10    0.100     0    0.000     2    0.010    0.110
 0.0   65536.0   1000.0   91000.0     11    0.112     0    0.000     2    0.010    0.122
 0.0   65536.0   3000.0   91000.0     11    0.112     0    0.000     2    0.010    0.122
 0.0   65536.0   3000.0   91000.0     11    0.112     0    0.000     4    0.021    0.133
"""


def test_jstat_samples_give_allocation_eden_and_each_young_pause():
    from validate.broker_jvm import gc_figures

    mb, eden, pauses, remarks, survivors = gc_figures(JSTAT)
    # 4000 KB, then (65536 - 64000) before the collection + 1000 after, then 2000: 8536 KB
    assert mb == pytest.approx(8536 / 1024)
    assert eden == pytest.approx(64.0) and pauses == pytest.approx([0.012])
    assert remarks == pytest.approx([0.011])         # a cycle's Remark and Cleanup together
    assert np.isnan(survivors).all() and len(survivors) == 1   # no S0U, S1U columns here
    assert tuple(gc_figures("")) == (pytest.approx(float("nan"), nan_ok=True),) * 2 + (
        [], [], [])


def test_each_young_pause_comes_with_what_it_left_in_the_survivor_spaces():
    # jstat -gc prints both survivor spaces; after a collection one holds what it copied.
    # A pause sampled while under way gets the survivors of the sample its time lands in
    from validate.broker_jvm import gc_figures

    text = "\n".join([" S0U      S1U      EC       EU        OU     YGC     YGCT    CGC    CGCT",
                      " 0.0    5120.0   65536.0  60000.0  90000.0  10  0.100   2  0.010",
                      " 0.0    5120.0   65536.0      0.0  90000.0  11  0.100   2  0.010",
                      " 6656.0    0.0   65536.0   2000.0  91000.0  11  0.109   2  0.010",
                      " 6656.0    0.0   65536.0  64000.0  91000.0  11  0.109   2  0.010",
                      " 0.0    1024.0   65536.0   1000.0  92000.0  12  0.113   2  0.010"])
    figures = gc_figures(text)
    assert figures.pauses == pytest.approx([0.009, 0.004])
    assert figures.survivors_mb == pytest.approx([6.5, 1.0])


def test_a_pause_sampled_while_under_way_gets_its_time_from_the_next_sample():
    # the collection counts itself at its start and adds its time at its end: the second
    # sample is taken during a 9 ms young pause, the fourth during a 7 ms Remark; the fifth
    # holds a 12 ms pause of its own besides
    from validate.broker_jvm import gc_figures

    head = JSTAT.splitlines()[0]
    text = "\n".join([head,
                      " 0.0 65536.0 60000.0 90000.0 10 0.100 0 0.000 2 0.010 0.110",
                      " 0.0 65536.0     0.0 90000.0 11 0.100 0 0.000 2 0.010 0.110",
                      " 0.0 65536.0  2000.0 91000.0 11 0.109 0 0.000 2 0.010 0.119",
                      " 0.0 65536.0  2000.0 91000.0 11 0.109 0 0.000 3 0.010 0.119",
                      " 0.0 65536.0  1000.0 91000.0 12 0.121 0 0.000 4 0.019 0.140",
                      ""])
    _, _, pauses, remarks, _ = gc_figures(text)
    assert pauses == pytest.approx([0.009, 0.012])
    assert remarks == pytest.approx([0.009])      # the Remark's 7 ms and its Cleanup's 2
    # a pause under way at the span's first sample is one pause, its time all in the span
    first = "\n".join([head, " 0.0 65536.0 0.0 90000.0 11 0.100 0 0.000 2 0.010 0.110",
                       " 0.0 65536.0 10.0 90000.0 11 0.108 0 0.000 2 0.010 0.118", ""])
    assert gc_figures(first)[2] == pytest.approx([0.008])
    # two collections in one sample, the second under way: two pauses, their whole time
    two = "\n".join([head, " 0.0 65536.0 0.0 90000.0 10 0.100 0 0.000 2 0.010 0.110",
                     " 0.0 65536.0 0.0 90000.0 12 0.110 0 0.000 2 0.010 0.120",
                     " 0.0 65536.0 9.0 90000.0 12 0.118 0 0.000 2 0.010 0.128", ""])
    assert gc_figures(two)[2] == pytest.approx([0.005, 0.013])


def test_the_model_s_collections_are_printed_beside_the_measured_ones():
    rows = [{"config": CPU_CONFIGS[0], "gc": ((6.0, 2.0, 600.0), (5.0, 1.0, 512.0))}]
    line, = where_cpu_went({}, rows)
    assert ("young collections measured 6.0, predicted 5.0; Remarks measured 2.0, "
            "predicted 1.0; allocated measured 600 MB, predicted 512 MB") in line


def test_the_pauses_the_model_draws_are_printed_beside_the_rung_s_own():
    # the configuration's own pauses (and what each left in the survivor spaces) against
    # the session's other runs' pauses, which the model resamples
    from validate.broker_gc import measured_pauses
    from validate.kafka_harness import COLUMNS

    runs = []
    for pauses, survivors in (([0.006, 0.004], [5.0, 1.0]), ([0.010], [float("nan")])):
        r = np.full(4, np.nan, dtype=[(c, "f8") for c in COLUMNS])
        r["gc_pause_s"][:len(pauses)], r["gc_survivor_mb"][:len(pauses)] = pauses, survivors
        runs.append(r)
    own = measured_pauses(runs)
    assert own[0] == pytest.approx([6.0, 4.0, 10.0])
    line, = where_cpu_went({}, [{"config": CPU_CONFIGS[0],
                                 "pauses": (own, [12.0, 20.0], False)}])
    assert ("young pauses measured 6.0 (4.0-10.0, 3) ms after which the survivor spaces held "
            "3.0 (1.0-5.0, 2) MB; the model draws from 16.0 (12.0-20.0, 2) ms, the session's "
            "other runs' (a pause") in line
    # with this CPU's pool drawn from beside them, the line says so
    line, = where_cpu_went({}, [{"config": CPU_CONFIGS[0], "pauses": (own, [12.0, 20.0], True)}])
    assert "other runs' and this CPU's pool's (models/kafka-gc-loopback.toml)" in line


def test_jstat_samples_before_the_span_are_only_its_baseline():
    # jstat starts during the warm-up (its start-up is a JVM's, which took the broker's CPU
    # when it started with the span): the collection read at t=1.0, before the span, is
    # not the span's; the sample before the span is its baseline
    from validate.broker_jvm import gc_figures, span_text

    head, *rows = JSTAT.splitlines(keepends=True)
    lines = [(0.0, head)] + [(t, row) for t, row in zip((0.5, 1.0, 1.5, 2.0, 2.5), rows)]
    text = span_text(lines, start=1.2)
    assert text == head + "".join(rows[1:])
    _, _, pauses, remarks, _ = gc_figures(text)
    assert pauses == pytest.approx([0.012]) and remarks == pytest.approx([0.011])
    pauses = gc_figures(span_text(lines, start=1.7)).pauses
    assert pauses == [] and span_text([], 1.0) == ""
    assert span_text(lines, start=0.0) == JSTAT     # a span from before the first sample


def test_the_collections_fitted_on_the_other_configurations_give_back_their_allocation():
    # a session whose broker allocates 20 KB per produce request and 3 KB per partition of
    # each fetch: fitted_gc finds both from every configuration's runs but the one held
    # out (the one predicted with it), and pools their pauses and Remarks
    from validate.broker_gc import fitted_gc
    from validate.kafka_fit import Measured
    from validate.kafka_grid import CPU_FIT
    from validate.kafka_harness import COLUMNS

    def rec(name, requests, fetches, pauses, remarks=(), kb_per_request=20):
        r = np.full(50, np.nan, dtype=[(c, "f8") for c in COLUMNS])
        r["gc_remark_s"][:len(remarks)] = remarks
        r["produce_requests"], r["fetch_requests"] = requests, fetches
        parts = CONFIGS[name].n_partitions
        r["broker_alloc_mb"] = (kb_per_request * requests + 3 * fetches * parts) / 1024
        r["broker_eden_mb"] = 70.0
        r["gc_pause_s"][:len(pauses)] = pauses
        return r

    fit, rung, sparse8 = FIT["librdkafka"], CPU_CONFIGS[-1], "linger10-p8-sparse"
    fits = [rec(fit, 200, 202, []), rec(fit, 200, 204, [])]
    cpu = [rec(CPU_FIT, 1100, 1000, [0.006]), rec(CPU_FIT, 1200, 1100, [0.009, 0.007],
                                                   [0.012])]
    # the rung's own runs allocate differently: held out, they change nothing
    own = [rec(rung, 3000, 2500, [0.030] * 9, [0.050] * 9, kb_per_request=90)]
    eights = [rec(sparse8, 200, 205, [0.008])]
    results = {fit: Measured(fits, fits), rung: Measured(own, fits, cpu),
               sparse8: Measured(eights, fits)}
    gc, notes = fitted_gc(results, held_out=rung)
    assert gc["request_kb"] == pytest.approx(20, rel=1e-3)
    assert gc["partition_fetch_kb"] == pytest.approx(3, rel=1e-3)
    assert gc["eden_mb"] == 70.0 and gc["pause_ms"] == [6.0, 7.0, 8.0, 9.0]
    assert gc["remarks_per_young"] == pytest.approx(1 / 4, abs=1e-3)
    assert gc["remark_ms"] == [12.0]
    assert "3 configurations" in notes[0] and f"not {rung}" in notes[0]
    assert sparse8 in notes[-1] and CPU_FIT in notes[-1]
    # not held out, the rung's runs count too
    assert fitted_gc(results)[0]["pause_ms"][-1] == 30.0
    # one partition count cannot tell the two costs apart: no [gc]
    assert fitted_gc({fit: Measured(fits, fits)}) is None


def test_the_cpu_s_pool_of_pauses_is_drawn_from_beside_the_session_s_own():
    # a session's runs hold a few pauses; the model draws from them and this CPU's pool,
    # and counts Remarks per young collection over both
    from validate.broker_gc import with_pool
    from validate.kafka_models import GcPool

    session = ({"eden_mb": 90.0, "request_kb": 50.0, "partition_fetch_kb": 4.0,
                "pause_ms": [30.0]}, ["# [gc]: fitted on 9 runs"])
    pool = GcPool("AMD EPYC (family 25, model 1)", (7.0, 9.0, 12.0), (13.0,), "3 sessions")
    gc, notes = with_pool(session, pool)
    assert gc["pause_ms"] == [7.0, 9.0, 12.0, 30.0] and gc["remark_ms"] == [13.0]
    assert gc["remarks_per_young"] == 0.25
    assert gc["eden_mb"] == 90.0 and gc["request_kb"] == 50.0     # allocation: the session's
    assert notes[0] == session[1][0] and "3 young pauses and 1 Remarks of 3 sessions" in notes[1]
    # Remarks of the session's own count too; none anywhere: no Remarks drawn
    own = ({**session[0], "remarks_per_young": 1.0, "remark_ms": [11.0]}, [])
    assert with_pool(own, pool)[0]["remark_ms"] == [11.0, 13.0]
    assert "remark_ms" not in with_pool(session, GcPool("c", (7.0,), (), "s"))[0]
    # no pool for this CPU, or no jstat in the session: as it was
    assert with_pool(session, None) is session and with_pool(None, pool) is None


def test_the_pool_file_holds_a_pool_per_cpu_and_refuses_a_bad_entry(tmp_path):
    from validate.broker_gc import write_gc_pool
    from validate.kafka_models import GcPool, gc_pool_model, gc_pool_path, gc_pools

    path = gc_pool_path(tmp_path)
    assert gc_pool_model(tmp_path, cpu="AMD EPYC (family 25, model 1)") is None   # no file
    a = GcPool("AMD EPYC (family 25, model 1)", (7.0, 30.0), (13.0,), "2 sessions (a)")
    b = GcPool("AMD EPYC (family 26)", (5.5,), (), "1 session (b)")
    write_gc_pool(tmp_path, a)
    write_gc_pool(tmp_path, b)
    write_gc_pool(tmp_path, GcPool(a.cpu, (8.0,), (), "1 session (a2)"))   # replaces a, keeps b
    assert gc_pools(tmp_path) == {a.cpu: GcPool(a.cpu, (8.0,), (), "1 session (a2)"), b.cpu: b}
    assert gc_pool_model(tmp_path, cpu="AMD EPYC (family 26, model 2)") == b     # family's line
    assert gc_pool_model(tmp_path, cpu="Intel Xeon (family 6, model 85)") is None
    text = path.read_text()
    for bad, field, value in (('pause_ms = [8]', "pause_ms = []", "[]"),
                              ('pause_ms = [8]', "pause_ms = [8, -1]", "[8, -1]"),
                              ('remark_ms = []', 'remark_ms = ["x"]', "['x']"),
                              ('sessions = "1 session (a2)"', 'sessions = ""', "''")):
        path.write_text(text.replace(bad, field, 1))
        with pytest.raises(HarnessError) as err:
            gc_pools(tmp_path)
        assert str(path) in str(err.value) and field.split(" = ")[0] in str(err.value) \
            and value in str(err.value), err.value
    path.write_text(text.replace('cpu = "AMD EPYC (family 26)"',
                                 'cpu = "AMD EPYC (family 25, model 1)"'))
    with pytest.raises(HarnessError, match="has two entries"):
        gc_pools(tmp_path)
    path.write_text("[pool]\ncpu = 'x'\n")
    with pytest.raises(HarnessError, match="one \\[\\[pool\\]\\] entry per CPU"):
        gc_pools(tmp_path)


def test_the_shipped_pool_is_what_the_command_gives_on_its_sessions(tmp_path, monkeypatch):
    # models/kafka-gc-loopback.toml's pool is every pause and Remark of the sessions kept in
    # validate/kafka_gc_sessions/ but the held-out rung's runs: the command, re-run, gives it
    import sys

    import validate.calibrate_kafka as ck
    from validate.calibrate_kafka import HERE
    from validate.kafka_models import gc_pool_model, gc_pools

    shipped = gc_pools(HERE.parent / "models")
    cpu = "AMD EPYC (family 25, model 1)"
    dirs = shipped[cpu].sessions.split("--gc-pool ")[1].split(",")[0].split()
    assert len(dirs) == 6 and all((HERE.parent / d).is_dir() for d in dirs)
    monkeypatch.setattr(sys, "argv", ["calibrate_kafka", "--models-dir", str(tmp_path),
                                      "--gc-pool", *[str(HERE.parent / d) for d in dirs]])
    monkeypatch.setattr("validate.host_probe.cpu_name", lambda: cpu)
    ck.main()
    again = gc_pool_model(tmp_path, cpu=cpu)
    assert again is not None
    assert (again.pause_ms, again.remark_ms) == (shipped[cpu].pause_ms, shipped[cpu].remark_ms)
    assert len(again.pause_ms) == 20        # against 1-6 in any one of the sessions
    # a directory that is not a session's: the one error format, no traceback
    monkeypatch.setattr(sys, "argv", ["calibrate_kafka", "--models-dir", str(tmp_path),
                                      "--gc-pool", str(tmp_path / "nowhere")])
    with pytest.raises(SystemExit) as exit_:
        ck.main()
    assert exit_.value.code == 2


def test_each_fitted_cost_gets_a_standard_error_from_the_residuals():
    # runs whose CPU is the model's own at the truth leave no residual: every cost fitted
    # is exact; noise on the runs' CPU gives each a spread; a record's cost, given to
    # the fit, has none
    from validate.broker_costs import COSTS, FITTED, cost_errors, fit_broker

    truth = dict(zip(_keys(), TRUTH, strict=True))
    samples = _synthetic_samples()
    exact = cost_errors(samples, truth)
    assert all(exact[COSTS[i]] == pytest.approx(0.0, abs=1e-9) for i in FITTED)
    for k, s in enumerate(samples):
        s.work *= 1.1 if k % 2 else 0.9
    se = cost_errors(samples, fit_broker(samples, record_cpu_us=TRUTH[3]))
    assert all(se[COSTS[i]] > 0 for i in FITTED)
    assert np.isnan(se["record_cpu_us"])            # given, not fitted


def test_the_broker_cpu_judged_leaves_out_the_jit_compilers_bursts():
    # 2.4 s of the JVM's CPU over a 4 s run, 0.4 s of it the JIT compiler's: 0.5 cores serve
    # the traffic; a run recorded before the harness split the JVM's threads keeps its whole
    from validate.broker_costs import measured_cpu, serving_cpu_s

    names = ["broker_cpu_s", "broker_jit_cpu_s", "timed_s"]
    run = np.array([(2.4, 0.4, 4.0)], dtype=[(n, float) for n in names])
    assert serving_cpu_s(run) == pytest.approx(2.0)
    assert measured_cpu([run, run]) == pytest.approx(0.5)
    unsplit = np.array([(2.4, np.nan, 4.0)], dtype=[(n, float) for n in names])
    old = np.array([(2.4, 4.0)], dtype=[("broker_cpu_s", float), ("timed_s", float)])
    assert serving_cpu_s(unsplit) == serving_cpu_s(old) == pytest.approx(2.4)


def test_the_model_s_internal_latency_is_taken_per_statistics_window():
    from types import SimpleNamespace

    from validate.calibrate_kafka import model_internal_latency

    # requests sent at 10 ms and 10.3 ms (window 0) and at 210 ms (window 1); messages
    # produced 10, 10 and 10.6 ms before theirs
    sim = SimpleNamespace(request_sent_s=np.array([0.010, 0.0103, 0.210]),
                          request=np.array([0, 1, 2]),
                          produce_s=np.array([0.0, 0.0003, 0.1994]))
    p50, p99 = model_internal_latency(sim)
    assert p50 == pytest.approx(np.median([0.010, 0.0106]))       # 10 ms and 10.6 ms
    assert p99 == pytest.approx(np.median([0.010, 0.0106]))


def test_a_refit_keeps_the_models_files_follower_cold_start(monkeypatch):
    # the ladder runs on one broker and cannot see a follower: a refit keeps the value that
    # validate/kafka_cold_start.py --replicas 3 measured, and says where it comes from
    import validate.broker_costs as bc

    samples = _synthetic_samples()
    monkeypatch.setattr(bc, "cpu_samples", lambda results: samples)
    shape = {**dict(zip(_keys(), TRUTH, strict=True)), "follower_cold_us": 165.0}
    broker, notes, at_s = bc.fitted_broker({}, None, shape)
    assert at_s is None                     # runs without the probe: at their own speed
    assert broker["follower_cold_us"] == 165.0
    assert any("follower_cold_us" in n and "--replicas 3" in n for n in notes)
    assert "follower_cold_us" not in bc.fitted_broker({}, None, dict(zip(
        _keys(), TRUTH, strict=True)))[0]


def test_a_ladder_s_file_says_the_host_speed_its_costs_hold_at(tmp_path, listed_cpu,
                                                                monkeypatch):
    # a fit at 59 us writes [host_speed] beside [broker] (the floor the runs' speeds were
    # read against, this CPU's); read back on this CPU, the rung is predicted at its runs'
    # speed from it. A file without it (fitted before the probe, as the shipped one of
    # 2026-11-28) reads None, and so does one read on another CPU: its floor is not that
    # CPU's (the session scales the costs on its own CPU fit runs instead)
    import validate.kafka_models as km
    from validate.broker_costs import broker_toml
    from validate.kafka_models import broker_model_path, broker_speed_model, host_speed_model

    host = host_speed_model()
    assert host is not None
    broker = dict(zip(_keys(), TRUTH, strict=True))
    path = broker_model_path(tmp_path)
    path.write_text(broker_toml((broker, ["# notes"], 59e-6), {"broker": "test"}, []))
    assert f'cpu = "{listed_cpu}"' in path.read_text()
    speed = broker_speed_model(tmp_path)
    assert speed is not None
    assert (speed.wake_floor_s, speed.costs_at_s) == pytest.approx((host.wake_floor_s, 59e-6))
    monkeypatch.setattr(km, "cpu_name", lambda: "Another CPU (family 1, model 2)")
    assert broker_speed_model(tmp_path) is None
    monkeypatch.setattr(km, "cpu_name", lambda: listed_cpu)
    path.write_text(broker_toml((broker, ["# notes"], None), {"broker": "test"}, []))
    assert broker_speed_model(tmp_path) is None
    path.write_text("# a note naming [host_speed]\n" + path.read_text())   # a comment: no table
    assert broker_speed_model(tmp_path) is None
    table = "\n[host_speed]\nwake_floor_us = 80.7\ncosts_at_us = 0\n"
    path.write_text(path.read_text() + table)
    with pytest.raises(HarnessError, match=r"\[host_speed\] cpu must name the CPU its speed "
                                           r"was measured on .*; got None"):
        broker_speed_model(tmp_path)
    path.write_text(path.read_text().replace(table, f'\n[host_speed]\ncpu = "{listed_cpu}"'
                                             + table.split("]", 1)[1]))
    with pytest.raises(HarnessError, match=r"\[host_speed\] costs_at_us must be a positive "
                                           r"number of microseconds; got 0"):
        broker_speed_model(tmp_path)


def test_the_speed_a_file_s_costs_hold_at_is_measured_on_sessions_and_written(
        tmp_path, monkeypatch, listed_cpu):
    # three sessions whose CPU_FIT runs burnt the file's costs x 0.5, 0.4 and 0.6 at host
    # speeds of 30, 28 and 39 us: the costs hold at 60, 70 and 65 us, so 65 is written
    import shutil
    from pathlib import Path

    import validate.broker_costs as bc
    from validate.kafka_harness import COLUMNS
    from validate.kafka_models import MODELS, broker_speed_model, host_speed_model

    models = tmp_path / "models"
    models.mkdir()
    for name in ("kafka-broker-loopback.toml", "kafka-host-speed-loopback.toml"):
        shutil.copy(MODELS / name, models / name)
    shape = bc.model_broker(models)
    host = host_speed_model(models)
    assert shape is not None and host is not None
    sessions = {"a": (0.5, 30e-6), "b": (0.4, 28e-6), "c": (0.6, 39e-6)}

    def samples_at(factor):
        costs = tuple(float(shape[k]) * factor for k in bc.COSTS) + bc.cold_shape(shape)
        return [s for s in _synthetic_samples(costs=costs) if s.config == bc.CPU_FIT]

    def measured(d, names=None):
        factor, speed = sessions[Path(d).name]
        rec = np.zeros(4, dtype=[(c, "f8") for c in COLUMNS])
        rec["host_wake_s"] = host.wake_floor_s + speed
        monkeypatch.setattr(bc, "cpu_samples", lambda results: samples_at(factor))
        return {next(iter(CPU_CONFIGS)): bc.Measured([rec], [rec], [rec])}

    monkeypatch.setattr(bc, "read_measurements", measured)
    at_s, lines = bc.costs_speed([tmp_path / n for n in sessions], models)
    assert at_s == pytest.approx(65e-6, rel=0.02)
    assert [float(x.split("hold at ")[1].split(" us")[0]) for x in lines] == pytest.approx(
        [60.0, 70.0, 65.0], rel=0.02)
    path = bc.broker_model_path(models)
    for _ in range(2):                       # written again: replaced, not added
        bc.write_costs_speed(path, host.wake_floor_s, at_s, "three sessions' median")
    text = path.read_text()
    assert text.splitlines().count("[host_speed]") == 1 and bc.model_broker(models) == shape
    assert broker_speed_model(models).costs_at_s == pytest.approx(65e-6, abs=1e-7)
    assert "scaled by its own CPU fit runs" not in text
    # a table without the comment above it is replaced all the same
    path.write_text("\n".join(x for x in text.splitlines() if not x.startswith(
        bc.HOST_SPEED_NOTE)) + "\n")
    bc.write_costs_speed(path, host.wake_floor_s, 70e-6, "one session's")
    assert path.read_text().splitlines().count("[host_speed]") == 1
    assert broker_speed_model(models).costs_at_s == pytest.approx(70e-6, abs=1e-7)
