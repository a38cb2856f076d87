"""Replication on a real cluster (validate/kafka_replication.py): three local brokers, each
configuration at replication 1 and 3, measured in this job; the model, with each client's
round trip fitted on its sparse configuration's replication-1 runs alone (librdkafka's and
franz-go's), predicts the rest. Judged: the p50 of each configuration at replication 3,
within :data:`TOLERANCE`, each a non-strict xfail since it missed on three local brokers in
some sessions (the dense one since 2026-11-28, the sparse ones since 2026-12-06, on a faster
machine; see the marks' comments), so a session where it holds shows as XPASS (on the
sparse configuration the
model without replication would miss by some 40 %: measured 2.08 and 2.21 ms in two
sessions, 1.2 and 1.1 at replication 1); where the consumer reads a record against its
producer's ack, at both replications, within :data:`AFTER_ACK_TOLERANCE_S`; each
configuration's p50 at replication 3 with each run predicted at its own host speed (its host
probe's, ``models/kafka-host-speed-loopback.toml``), within :data:`TOLERANCE` (each a
non-strict xfail: the probe-to-speed line is one machine's, see the marks); and that
replication is measured at all (the acks' floor rises). The p99 at replication 3 is
printed, not judged: the model misses it (``validate/kafka_replication.py``)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from validate.conftest import need
from validate.kafka_fit import run_percentile
from validate.kafka_harness import HarnessConfig, HarnessError, run
from validate.kafka_models import host_speed_model, no_speed_line
from validate.kafka_replication import at_host_speed, judge, measure, speed_table, table

TOLERANCE = 0.25
"""The calibration suite's tolerance for p50 (issue 14: within 25 %)."""


@pytest.fixture(scope="module")
def runs(kafka_libs, harnesses, tmp_path_factory):
    names = ("sparse", "dense") + (() if harnesses["franz-go"] else ("franz-go-sparse",))
    return measure(tmp_path_factory.mktemp("replication"), reps=3, names=names)


@pytest.fixture(scope="module")
def rows(runs):
    out, note = judge(runs)
    print("\n" + table(out) + "\n" + note)
    return {(r.name, r.replication): r for r in out}


def ack_floor(runs: list[np.ndarray]) -> float:
    """Median over runs of each run's p10 of produce-to-ack time (its kept messages)."""
    return run_percentile(runs, 0.1, of=lambda r: r["ack_s"] - r["produce_s"])


@pytest.mark.kafka
@pytest.mark.parametrize("name", ["sparse", "franz-go-sparse"])
def test_replication_is_measured(runs, harnesses, name):
    # acks=all at three replicas: every record's ack waits for a follower's Fetch round, so
    # the floor of the ack time rises. Judged on the floor (p10) of the acks, not on the
    # end-to-end p50: the p50's rise spread 0.08-1.35 ms from round to round on 2026-12-06's
    # machine and once read 0.92 ms at three replicas against 0.88 at one (a fresh-clone CI
    # run), where the ack's p10 rose 1.8-5.0x in each of the ten sessions kept that day
    # (median of three runs; librdkafka 0.27-0.55 to 0.63-1.76 ms, franz-go 0.27-0.77 to
    # 0.69-1.79).
    if name.startswith("franz-go"):
        need(harnesses, "franz-go")
    one, three = ack_floor(runs[(name, 1)]), ack_floor(runs[(name, 3)])
    assert three > one * 1.3, (name, one, three)


# The dense configuration at three replicas: within the band in the five recorded sessions
# (measured / predicted 12.1-13.0 / 11.1-11.3 ms) and in a CI run of 2026-11-28 (12.81 /
# 11.09), but missed in most sessions since: 21.3 and 23.2 ms (2026-11-28, standalone), 32.4
# against 11.5 (2026-11-29, even with the noisy runs measured again), 16.96 and 27.95 in two
# CI runs of 2026-11-29. A slow run's wait is per leader: its partitions at 50-520 ms beside
# the others at 14-40, growing through the run, on acks and consumption alike, with the
# machine half idle (0.8-1.2 of its 2 vCPUs), the JIT compilers and the collector quiet, and
# a 50 ms replica.fetch.wait.max.ms no different. The brokers' request log
# (validate/kafka_request_log.py, 2026-11-29) found the mechanism: the producer's connection
# to that leader saturates. Each acks=all request waits for the followers' next Fetch
# (remote 1.1-1.5 ms, total 2.1-2.7 at the leader in the runs that held), the connection is
# muted while one is served, and librdkafka sends one partition per request (110-180 a
# second to each leader); in the slow runs the followers' turns lengthened to 1-3 ms, the
# requests' remote time to 5-12 ms, and their total time filled 83-101 % of 250 ms windows,
# so the queue only grew. The model has the same cliff (its p50 reads 32 ms with 3.5 ms added
# to each follower round, 131 with 4) but its round is shorter than the brokers' (replication
# adds 1.0 ms to its requests, 1.6-2.2 to theirs), so it predicts neither the slow mode nor,
# in the runs that held, the last 1-1.5 ms. On the faster machine of 2026-12-06 no run fell
# into it over 25 sessions (75 runs, 10.6-14.1 ms), then two of CI 103's three did (15.1 and
# 22.1 ms, p99 117 ms), the probe 61-65 us beyond its floor (dense runs had held at up to 71
# before): what tips a run into it is not found.
DENSE = pytest.mark.xfail(strict=False, reason="issue 14 open: on three local brokers the "
                          "producer's connection to one leader often saturates at "
                          "replication 3 (see comment), committing its partitions 50-520 ms "
                          "late; the model's follower round is too short to reach it")


# The sparse configurations at three replicas: within the band in every CI job until
# 2026-11-29 (measured / predicted 2.08-2.41 / 1.97-2.34 ms), but on a machine whose CPU is
# twice as fast (2026-12-06, an AMD EPYC of family 26) they missed in four of seven sessions:
# franz-go 0.97 / 1.63; sparse 1.18 / 1.61 (standalone); sparse 1.14 / 1.59 and franz-go
# 1.02 / 1.48 in one fresh-clone CI run, sparse 1.06 / 1.58 in another. There the rounds'
# p50s spread 2x within a session (0.72, 1.15 and 1.66 ms in the first of those CI runs),
# the model's stays ~1.6, and the session medians ranged 0.97-2.23. The model's figure
# rested on two errors that cancelled: its consumer read a record fetch_ms after the ack,
# where Kafka completes the consumer's parked Fetch before the Produce (fixed since: the
# test above), and its ack at three replicas is ~0.4 ms short (not found). With the first
# fixed it reads 1.37-1.64 ms against the nine sessions' 0.74-2.15 (27 % off on average;
# validate/kafka_replication.py's docstring). What spreads the rounds is the host's speed,
# 3.5x from run to run: each run predicted at its own speed is judged by the test above.
SPARSE = pytest.mark.xfail(strict=False, reason="issue 14 open: on a machine twice as fast "
                           "(2026-12-06) the sparse p50 at three replicas read 0.74-2.15 ms "
                           "over nine sessions, the rounds' p50s spreading 2x within a "
                           "session, where the model reads 1.37-1.64; its ack at three "
                           "replicas is ~0.4 ms short of the sessions' median (see comment)")


@pytest.mark.kafka
@pytest.mark.parametrize("name", [pytest.param("sparse", marks=SPARSE),
                                  pytest.param("dense", marks=DENSE),
                                  pytest.param("franz-go-sparse", marks=SPARSE)])
def test_the_p50_at_three_replicas_is_predicted(rows, harnesses, name):
    if name.startswith("franz-go"):
        need(harnesses, "franz-go")
    row = rows[(name, 3)]
    assert np.isfinite(row.measured_p50)
    assert row.predicted_p50 == pytest.approx(row.measured_p50, rel=TOLERANCE), row


# franz-go's runs at their speed: 18 % off per run on average over seven sessions none fitted
# on (16 of 21 within 25 %, against 30 % and 13 of 21 as judged above), but the sessions'
# medians of per-run ratios read +10, +10, +10, -6, +17, +10 and -32 % (CI 100: its three
# runs at 16-22 us above the probe's floor took 0.93-1.08 ms, predicted 0.65-0.92), six of
# seven within 25 %, as many as the plain rows'. Near the floor the acks stay above the
# line the floor was fitted on (librdkafka's did once too: -18 % in CI 100): the probe's
# wait is a proxy for the host's speed, and franz-go's acks follow it less closely
# (correlation 0.89 per run against librdkafka's 0.96). On this VM's CPU (family 25, its own
# line: below) the sessions' medians read 0.85-1.00 in the three fitted on and 0.85-1.05 in
# the twelve not (0.85-1.15 with CI 151's 1.15; 2026-12-07), where 2026-12-06's line read
# 0.86-1.47.
FRANZ_AT_SPEED = pytest.mark.xfail(strict=False, reason="issue 14 open: franz-go's runs at "
                                   "their host speed read 18 % off on average, but one "
                                   "session's median in seven missed by 32 % (CI 100), runs "
                                   "near the probe's floor slower than its line (see comment)")


# librdkafka's sparse runs at their speed, each CPU's line (models/kafka-host-speed-loopback.toml)
# judged on sessions it was not fitted on. 2026-12-06's line (an AMD EPYC of family 26) held
# within 25 % in every CI run there (CI 95-106); read on this VM's CPU (family 25, probe
# 126-165 us where 2026-12-06's read 96-126) it missed in three sessions of twelve (CI 144
# +39 %, 15:22 +53 %, 17:22 +36 %: the line is a machine's). This VM's own line, fitted on
# 2026-12-07's three plain sessions (15:16-15:27; 0.96, 1.06, 0.99), reads the twelve it was
# not fitted on whose runs were kept at 0.82-1.03: the two captured sessions (0.87, 0.87),
# CI 146 (0.97), the CI job after it (1.00), 17:22 (0.96), CI 147 (0.98), 18:11 (0.94),
# CI 148 (0.82: its runs slower than their probes said), CI 149 (1.03), 19:35 (1.02), CI 150
# (1.00), CI 151 (0.97). On an unknown CPU the row skips, naming the command that adds a line.
@pytest.fixture(scope="module")
def at_speed(runs):
    speed = host_speed_model()
    if speed is None:
        pytest.skip(no_speed_line())
    rows = at_host_speed(runs, speed)
    print("\n" + speed_table(rows, speed))
    return rows


@pytest.mark.kafka
@pytest.mark.parametrize("name", ["sparse",
                                  pytest.param("franz-go-sparse", marks=FRANZ_AT_SPEED),
                                  pytest.param("dense", marks=DENSE)])
def test_the_p50_at_three_replicas_is_predicted_at_each_runs_host_speed(at_speed, harnesses,
                                                                        name):
    # the host's speed moved 3-4x from run to run on 2026-12-06's machine, and the runs'
    # acks with it (correlation 0.96 with the host probe's wait lateness at three replicas):
    # each run predicted with its client's round trip and the broker's costs scaled to its
    # own speed (models/kafka-host-speed-loopback.toml; validate/kafka_replication.py's
    # docstring)
    if name.startswith("franz-go"):
        need(harnesses, "franz-go")
    # Each run has its own prediction, so each is compared with its own measurement and the
    # median of those ratios judged: the ratio of the two medians mixes runs at different
    # speeds (in a session of 2026-12-06 franz-go's runs read +17, +39 and -53 %; the two
    # medians, one run's prediction against another's measurement, +34 %)
    rows = [r for r in at_speed if (r.name, r.replication) == (name, 3)]
    assert len(rows) >= 2, at_speed
    ratio = float(np.median([r.at_speed_p50 / r.measured_p50 for r in rows]))
    assert ratio == pytest.approx(1.0, abs=TOLERANCE), rows


AFTER_ACK_TOLERANCE_S = 0.15e-3
"""Consume minus ack, predicted against measured: within 0.15 ms. The model read +0.18 to
+0.26 ms at three replicas before it read the consumer's Fetch as completed with the
Produce; the runs read -0.09 to +0.04 (2026-12-06, nine sessions)."""


# The dense configuration at three replicas reads its consumer ahead of the ack by 0.02-0.09
# ms (each session's median of runs, 25 sessions of 2026-12-06), where the model reads it at
# the ack, but by 0.15 and 0.18 ms in the runs that fell into the slow mode (CI 103: p50
# 15.1 and 22.1 ms against 11-12; the session's -0.152 ms missed by 2 us): the producer's
# connection to a leader saturates, so its acks queue behind it while the consumer reads at
# the high watermark's move. The model does not reach that mode (DENSE, above).
DENSE_AFTER_ACK = pytest.mark.xfail(strict=False, reason="issue 14 open: in the dense "
                                    "configuration's slow mode at replication 3 the acks "
                                    "queue behind the producer's saturated connection, so the "
                                    "consumer reads 0.15-0.18 ms ahead of them (CI 103); the "
                                    "model does not reach that mode (see comment)")


# franz-go's sparse configuration at three replicas reads its consumer ahead of the ack by
# 0.14, 0.12, 0.12, 0.11, 0.03, 0.16 and 0.18 ms in seven fresh-clone CI runs (CI 128-143,
# each the median of three runs), librdkafka's by 0.04-0.06 in the same runs, where the model
# reads both at the ack: CI 142 and 143 missed the band, by 6 and 32 us. On the wire
# (validate/kafka_wire.py) the lead is the broker's: the consumer's reply leaves the leader
# 0.01-0.29 ms before the produce reply (two modes: most messages 0.3-0.4 ms before, the rest
# ~0.15 after), and the clients' own ways take some of it back, librdkafka's 0.12-0.14 ms,
# franz-go's 0.04-0.07; the model reads both shares as 0. What sets the broker's two modes
# and the clients' shares is not found.
FRANZ_AFTER_ACK = pytest.mark.xfail(strict=False, reason="issue 14 open: franz-go's consumer "
                                    "reads 0.03-0.18 ms (median 0.12) ahead of its ack at "
                                    "three replicas in seven CI runs, librdkafka's 0.04-0.06: "
                                    "the broker sends the consumer's reply first, the clients "
                                    "take back part of it, librdkafka more; the model reads "
                                    "both shares as 0 and the band is 0.15 ms (see comment)")


@pytest.mark.kafka
@pytest.mark.parametrize("key", [("sparse", 3), ("dense", 1),
                                 pytest.param(("dense", 3), marks=DENSE_AFTER_ACK),
                                 pytest.param(("franz-go-sparse", 3), marks=FRANZ_AFTER_ACK)])
def test_where_the_consumer_reads_against_the_ack_is_predicted(rows, harnesses, key):
    # at one replica the leader answers the Produce, then completes the consumer's parked
    # Fetch; at three the high watermark's move completes the Fetch first (Partition.scala,
    # checkAndCompleteAll), so the consumer reads a record at its producer's ack
    if key[0].startswith("franz-go"):
        need(harnesses, "franz-go")
    row = rows[key]
    assert abs(row.predicted_after_ack - row.measured_after_ack) <= AFTER_ACK_TOLERANCE_S, row


@pytest.mark.parametrize(("client", "replication", "message"), [
    ("librdkafka", 0, "replication must be a whole number of at least 1; got 0"),
    ("franz-go", 2.5, "replication must be a whole number of at least 1; got 2.5"),
    ("java", 3, "replication 3 is measured with the librdkafka and franz-go harnesses only"),
])
def test_a_replication_the_harness_cannot_run_is_refused_naming_it(client, replication,
                                                                   message):
    config = HarnessConfig(client=client, replication=replication)
    with pytest.raises(HarnessError, match=message):
        run("127.0.0.1:1", config)


def test_the_least_noisy_runs_are_kept_in_order_and_the_others_set_aside(tmp_path):
    from validate.kafka_harness import COLUMNS, write_csv
    from validate.kafka_replication import _quietest, read

    def a_run(stalled: int) -> np.ndarray:      # 20 messages, `stalled` of them stalled 50 ms
        rec = np.zeros(20, dtype=[(c, "f8") for c in COLUMNS])
        rec["msg"] = np.arange(20)
        rec["latency_s"] = 0.002
        rec["stall_s"][:stalled] = 0.050
        return rec

    done = []
    for rep, stalled in enumerate((0, 10, 1, 0)):          # run 1 is noisy (half stalled)
        path = tmp_path / f"sparse-rf1-{rep}.csv"
        rec = a_run(stalled)
        write_csv(rec, path)
        done.append((rec, path))
    kept = _quietest(done, 3, tmp_path)
    assert [int((r["stall_s"] > 0).sum()) for r in kept] == [0, 1, 0]
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == \
        ["sparse-rf1-0.csv", "sparse-rf1-2.csv", "sparse-rf1-3.csv"]
    assert [p.name for p in (tmp_path / "discarded").iterdir()] == ["sparse-rf1-1.csv"]
    assert len(read(tmp_path)[("sparse", 1)]) == 3        # --from-csv judges what was kept


def _a_run(n: int, gap_s: float, round_trip_s: np.ndarray,
           wake_s: float = float("nan")) -> np.ndarray:
    """A harness run of ``n`` messages ``gap_s`` apart, each acked ``round_trip_s`` after
    its produce and consumed 0.2 ms after, the host probe's wait lateness ``wake_s``."""
    from validate.kafka_harness import COLUMNS

    rec = np.zeros(n, dtype=[(c, "f8") for c in COLUMNS])
    rec["msg"] = np.arange(n)
    rec["produce_s"] = rec["publish_s"] = np.arange(n) * gap_s
    rec["ack_s"] = rec["produce_s"] + round_trip_s
    rec["consume_s"] = rec["ack_s"] + 0.0002
    rec["latency_s"] = rec["consume_s"] - rec["publish_s"]
    rec["broker_cpu_s"] = np.nan
    rec["host_wake_s"] = wake_s
    return rec


def test_the_three_jvms_cpu_at_replication_1_is_printed_beside_the_models(monkeypatch):
    import validate.kafka_replication as kr
    from validate.kafka_replication import config_of, judge

    rng = np.random.default_rng(7)
    n = config_of("dense", 1).n_messages
    fits = [_a_run(200, 0.025, rng.gamma(4.0, 0.0002, 200)) for _ in range(2)]
    dense = [_a_run(n, 0.001, np.full(n, 0.010)) for _ in range(2)]
    _, note = judge({("sparse", 1): fits, ("dense", 1): dense}, per_run=1)
    assert note == "dense-rf1: the JVMs' CPU not measured", note
    for rec, cores in zip(dense, (0.14, 0.16)):     # 2 s, 0.05 idle, 0.1 s of compiler
        rec["timed_s"], rec["broker_idle_cores"], rec["broker_jit_cpu_s"] = 2.0, 0.05, 0.1
        rec["broker_cpu_s"] = (cores + 0.05) * 2.0 + 0.1
    _, note = judge({("sparse", 1): fits, ("dense", 1): dense}, per_run=1)
    assert note.startswith("dense-rf1: the three JVMs' CPU beyond idle measured 0.150 cores "
                           "(median of 2 runs), the model's 0."), note
    # a broker file that says the speed its costs hold at by the JVM's CPU ([host_speed]),
    # and runs with the probe at twice that speed: the model's CPU with its costs at the
    # runs' speed, about twice the file's
    cpu_speed = kr.HostSpeed(80.7e-6, 59e-6)
    monkeypatch.setattr(kr, "broker_speed_model", lambda models_dir=None: cpu_speed)
    for rec in dense:
        rec["host_wake_s"] = cpu_speed.wake_floor_s + 2 * cpu_speed.costs_at_s
    _, note = judge({("sparse", 1): fits, ("dense", 1): dense}, per_run=1)
    plain, fast = (float(x) for x in re.findall(
        r"the model's (\d\.\d+), (\d\.\d+) with its costs at each run's host speed", note)[0])
    assert fast == pytest.approx(2 * plain, rel=0.15), note


def test_the_wake_floor_is_where_the_acks_lines_meet():
    from validate.kafka_replication import fit_wake_floor

    rng = np.random.default_rng(3)
    wake = rng.uniform(95e-6, 140e-6, (2, 12))
    pairs = {rf: [(w, slope * (w - 80e-6) * (1 + rng.normal(0, 0.02))) for w in ws]
             for rf, slope, ws in ((1, 15.0, wake[0]), (3, 38.0, wake[1]))}
    assert fit_wake_floor(pairs) == pytest.approx(80e-6, abs=2e-6)


def test_the_host_speed_is_fitted_on_the_probed_sparse_runs_and_scales_the_prediction():
    from validate.kafka_models import HostSpeed
    from validate.kafka_replication import at_host_speed, fit_speed

    rng = np.random.default_rng(5)
    # acks on lines meeting at 80 us of wake lateness, 15 and 38 times the speed above it
    session = {(name, rf): [_a_run(200, 0.025, rng.gamma(8.0, slope * (w - 80e-6) / 8,
                                                              200), w)
                            for w in (100e-6, 115e-6, 130e-6)]
               for name, rf, slope in (("sparse", 1, 15.0), ("sparse", 3, 38.0))}
    speed, lines = fit_speed([session], per_run=1)
    assert speed.wake_floor_s == pytest.approx(80e-6, abs=5e-6)
    assert lines[0].startswith("wake floor 8") and "6 runs of sparse" in lines[0]
    assert "3 runs of sparse at replication 3" in lines[1]
    # a run twice as far above the floor is predicted slower, and a run without the probe's
    # figure is left out
    slow, fast = (at_host_speed(session, HostSpeed(80e-6, s), per_run=1)
                  for s in (20e-6, 40e-6))
    assert [r.run for r in slow] == [0, 1, 2]
    assert all(a.at_speed_p50 > b.at_speed_p50 for a, b in zip(slow, fast))
    assert slow[2].at_speed_p50 > slow[0].at_speed_p50
    session[("sparse", 3)][1]["host_wake_s"] = np.nan
    assert [r.run for r in at_host_speed(session, speed, per_run=1)] == [0, 2]


def test_a_run_s_broker_costs_grow_in_step_with_its_host_speed():
    from validate.kafka_models import HostSpeed, scaled_costs

    # costs holding at 40 us, for a run at 60: every CPU cost x 1.5, nothing else
    broker = {"request_cpu_us": 200.0, "cold_us": 300.0, "record_cpu_us": 0.8,
              "follower_cold_us": 100.0, "cold_after_us": 1000.0, "cores": 2}
    got = HostSpeed(80.7e-6, 40e-6).costs(broker, 60e-6)
    assert got == pytest.approx({"request_cpu_us": 300.0, "cold_us": 450.0,
                                 "record_cpu_us": 1.2, "follower_cold_us": 150.0,
                                 "cold_after_us": 1000.0, "cores": 2})
    assert scaled_costs(broker, 40e-6, 40e-6) == broker
    run = _a_run(10, 0.001, np.full(10, 0.001), 140.7e-6)
    assert HostSpeed(80.7e-6, 40e-6).of(run) == pytest.approx(60e-6)


def test_the_speed_the_costs_hold_at_by_the_broker_s_cpu_is_the_runs_speed_over_the_factor():
    from validate.kafka_models import HostSpeed

    # CI 100's CPU-fit runs: wait lateness 109.5, 106.9, 119.7 us; the file's costs x 0.40
    speed = HostSpeed(80.7e-6, 32.5e-6)
    runs = [_a_run(10, 0.001, np.full(10, 0.001), w) for w in (109.5e-6, 106.9e-6, 119.7e-6)]
    assert speed.cpu_costs_at(runs, 0.404) == pytest.approx(28.8e-6 / 0.404)
    # without the probe's figures, or at no positive factor, nothing is measured
    assert np.isnan(speed.cpu_costs_at(runs, 0.0))
    assert np.isnan(speed.cpu_costs_at([_a_run(10, 0.001, np.full(10, 0.001))], 0.4))
    runs[0]["host_wake_s"] = np.nan                  # one run without: the others' median
    assert speed.cpu_costs_at(runs, 0.5) == pytest.approx((113.3e-6 - 80.7e-6) / 0.5)


def test_too_few_probed_runs_to_fit_the_host_speed_on_are_refused_saying_so():
    from validate.kafka_replication import fit_speed

    runs = [_a_run(200, 0.025, np.full(200, 0.001), np.nan) for _ in range(3)]
    with pytest.raises(HarnessError, match=r"at least 3 runs of sparse at each replication "
                                           r"with the host probe's figures; got \{\}"):
        fit_speed([{("sparse", 1): runs, ("sparse", 3): runs}])


ENTRY = '[[host_speed]]\ncpu = "AMD EPYC (family 25, model 1)"\n'


@pytest.mark.parametrize(("text", "message"), [
    (ENTRY + "wake_floor_us = -3.0\ncosts_at_us = 30.0\n",
     r"\[\[host_speed\]\] cpu = 'AMD EPYC \(family 25, model 1\)': wake_floor_us must be a "
     r"positive number of microseconds; got -3.0"),
    (ENTRY + "wake_floor_us = 80.0\n",
     r"costs_at_us must be a positive number of microseconds; got None"),
    (ENTRY + "wake_floor_us = 80.0\ncosts_at_us = \"fast\"\n",
     r"costs_at_us must be a positive number of microseconds; got 'fast'"),
    ("[host_speed\n", "not TOML"),
    ("[host_speed]\nwake_floor_us = 80.0\ncosts_at_us = 30.0\n",
     r"one \[\[host_speed\]\] entry per CPU, each naming its cpu; got a single \[host_speed\]"),
    ("[[host_speed]]\nwake_floor_us = 80.0\ncosts_at_us = 30.0\n",
     r"\[\[host_speed\]\] cpu must name the CPU its line was fitted on .*; got None"),
    (2 * (ENTRY + "wake_floor_us = 80.0\ncosts_at_us = 30.0\n"),
     r"cpu 'AMD EPYC \(family 25, model 1\)' has two entries"),
    ("host_speed = [80.0, 30.0]\n", r"cpu must name the CPU its line was fitted on"),
], ids=["negative", "missing", "not-a-number", "not-toml", "one-table", "no-cpu", "twice",
        "not-entries"])
def test_a_host_speed_file_it_cannot_use_is_refused_naming_the_field(tmp_path, text, message):
    from validate.kafka_models import host_speed_model, speed_model_path

    speed_model_path(tmp_path).write_text(text)
    with pytest.raises(HarnessError, match=message) as err:
        host_speed_model(tmp_path, cpu="AMD EPYC (family 25, model 1)")
    assert str(speed_model_path(tmp_path)) in str(err.value)


@pytest.mark.parametrize(("entry", "cpu", "same"), [
    ("AMD EPYC (family 26)", "AMD EPYC (family 26, model 17)", True),
    ("AMD EPYC (family 26)", "AMD EPYC (family 25, model 1)", False),
    ("AMD EPYC (family 25, model 1)", "AMD EPYC (family 25, model 1)", True),
    ("AMD EPYC (family 25, model 1)", "AMD EPYC (family 25, model 17)", False),
    ("AMD EPYC (family 25, model 1)", "Intel Xeon (family 25, model 1)", False),
    ("AMD EPYC (family 26)", "AMD EPYC", False),
    ("unknown", "unknown", True),
])
def test_a_host_speed_line_is_read_on_the_cpu_it_names(entry, cpu, same):
    # the probe-to-speed line is a machine's: a line fitted on 2026-12-06's CPU (family 26)
    # read this VM's sessions (family 25) 0.95-1.53 where its own line reads 0.82-1.06
    from validate.kafka_models import same_cpu

    assert same_cpu(entry, cpu) is same


def test_the_cpu_is_named_as_the_go_harness_names_it():
    from validate.host_probe import cpu_name

    block = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n" \
            "model name\t: AMD EPYC\n\nprocessor\t: 1\ncpu family\t: 99\n"
    assert cpu_name(block) == "AMD EPYC (family 25, model 1)"
    assert cpu_name("processor\t: 0\nmodel name\t: Some ARM\n") == "Some ARM"
    assert cpu_name("processor\t: 0\n") == "unknown"


def test_each_shipped_host_speed_line_is_read_and_its_floor_refitted_from_the_stored_runs():
    # each line's command names the sessions it was fitted on, kept in the repository (their
    # sparse runs: validate/kafka_replication_runs/); the floor is refitted here, the costs'
    # speed (a grid of simulations, ~1 minute a line) by the command
    import shlex
    import tomllib

    from validate.kafka_models import host_speed_lines, speed_model_path
    from validate.kafka_replication import HERE, fit_wake_floor, read, wake_pairs

    lines = host_speed_lines()
    entries = tomllib.loads(speed_model_path(HERE.parent / "models").read_text())["host_speed"]
    assert len(entries) == len(lines) >= 2
    for entry in entries:
        speed = lines[entry["cpu"]]
        assert 0 < speed.costs_at_s
        words = shlex.split(entry["command"])
        assert words[:4] == ["python", "-m", "validate.kafka_replication", "--fit-speed"], words
        assert words[-2:] == ["--on-cpu", entry["cpu"]], words
        sessions = [read(HERE.parent / d) for d in words[4:-2]]
        assert len(sessions) >= 3
        assert fit_wake_floor(wake_pairs(sessions)) == pytest.approx(speed.wake_floor_s,
                                                                     abs=0.05e-6)


def test_a_cpu_s_line_is_replaced_only_with_force_and_the_others_kept(tmp_path, capsys):
    from validate.kafka_models import host_speed_lines, speed_model_path
    from validate.kafka_replication import HostSpeed, main, speed_entry, with_speed_entry

    one, _ = with_speed_entry(None, "A (family 1)", speed_entry(
        "A (family 1)", HostSpeed(80e-6, 30e-6), [tmp_path / "a"], ["fitted on a"]))
    two, replaced = with_speed_entry(one, "B (family 2)", speed_entry(
        "B (family 2)", HostSpeed(20e-6, 60e-6), [tmp_path / "b"], ["fitted on b"]))
    assert not replaced
    speed_model_path(tmp_path).write_text(two)

    def lines_us():
        return {k: pytest.approx((v.wake_floor_s * 1e6, v.costs_at_s * 1e6))
                for k, v in host_speed_lines(tmp_path).items()}
    assert lines_us() == {"A (family 1)": (80, 30), "B (family 2)": (20, 60)}
    with pytest.raises(SystemExit) as done:
        main(["--fit-speed", str(tmp_path / "runs"), "--models", str(tmp_path),
              "--on-cpu", "A (family 1)"])
    assert done.value.code == 2
    assert "has a line for A (family 1); pass --force to replace it" in capsys.readouterr().err
    assert speed_model_path(tmp_path).read_text() == two
    # replaced in place: the other CPU's line and its comments kept as they were
    three, replaced = with_speed_entry(two, "A (family 1)", speed_entry(
        "A (family 1)", HostSpeed(70e-6, 35e-6), [tmp_path / "c"], ["fitted on c"]))
    assert replaced and "# fitted on b" in three and "# fitted on a" not in three
    speed_model_path(tmp_path).write_text(three)
    assert lines_us() == {"A (family 1)": (70, 35), "B (family 2)": (20, 60)}
