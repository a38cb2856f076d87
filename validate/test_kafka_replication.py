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
