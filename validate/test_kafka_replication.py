"""Replication on a real cluster (validate/kafka_replication.py): three local brokers, each
configuration at replication 1 and 3, measured in this job; the model, with each client's
round trip fitted on its sparse configuration's replication-1 runs alone (librdkafka's and
franz-go's), predicts the rest. Judged: the p50 of each configuration at replication 3,
within :data:`TOLERANCE` (on the sparse configuration the
model without replication would miss by some 40 %: measured 2.08 and 2.21 ms in two
sessions, 1.2 and 1.1 at replication 1). The p99 at replication 3 is printed, not judged:
the model misses it (``validate/kafka_replication.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from validate.conftest import need
from validate.kafka_harness import HarnessConfig, HarnessError, run
from validate.kafka_replication import FIT, judge, measure, table

TOLERANCE = 0.25
"""The calibration suite's tolerance for p50 (issue 14: within 25 %)."""


@pytest.fixture(scope="module")
def rows(kafka_libs, harnesses, tmp_path_factory):
    names = ("sparse", "dense") + (() if harnesses["franz-go"] else ("franz-go-sparse",))
    runs = measure(tmp_path_factory.mktemp("replication"), reps=3, names=names)
    out = judge(runs)
    print("\n" + table(out))
    return {(r.name, r.replication): r for r in out}


@pytest.mark.kafka
def test_replication_is_measured(rows):
    # acks=all at three replicas: every record waits for the followers on the real cluster
    assert rows[(FIT[0], 3)].measured_p50 > rows[FIT].measured_p50 * 1.3, rows


@pytest.mark.kafka
@pytest.mark.parametrize("name", ["sparse", "dense", "franz-go-sparse"])
def test_the_p50_at_three_replicas_is_predicted(rows, harnesses, name):
    if name.startswith("franz-go"):
        need(harnesses, "franz-go")
    row = rows[(name, 3)]
    assert np.isfinite(row.measured_p50)
    assert row.predicted_p50 == pytest.approx(row.measured_p50, rel=TOLERANCE), row


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
