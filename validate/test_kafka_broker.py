"""The real broker: started by the fixture, used through confluent-kafka, stopped by pid."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from validate.kafka_broker import BrokerError, start, stop

pytestmark = pytest.mark.kafka
confluent_kafka = pytest.importorskip("confluent_kafka")


def test_keyed_messages_all_consumed_in_partition_order(kafka_broker):
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = kafka_broker["bootstrap"]
    admin = AdminClient({"bootstrap.servers": bootstrap})  # keep it alive until the result
    admin.create_topics([NewTopic("smoke", num_partitions=8,
                                  replication_factor=1)])["smoke"].result(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "smoke",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["smoke"])
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    n = 200
    for i in range(n):
        producer.produce("smoke", key=f"k{i % 16}", value=str(i).encode())
    assert producer.flush(30) == 0
    seen: dict[int, list[int]] = {}
    deadline = time.monotonic() + 60
    while sum(map(len, seen.values())) < n and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is not None and msg.error() is None:
            seen.setdefault(msg.partition(), []).append(int(msg.value()))
    consumer.close()
    values = sorted(v for vs in seen.values() for v in vs)
    assert values == list(range(n))                       # none lost, none duplicated
    for vs in seen.values():
        assert vs == sorted(vs)                           # order kept within a partition


def test_start_and_stop_by_pid_cleans_up(kafka_libs):
    info = start(kafka_libs)
    assert Path(info["data_dir"]).is_dir()
    stop(info["pid"], info["data_dir"])
    with pytest.raises(ProcessLookupError):
        os.kill(info["pid"], 0)
    assert not Path(info["data_dir"]).exists()


@pytest.mark.parametrize("brokers", [0, -2, 1.5])
def test_a_cluster_of_no_brokers_is_refused_naming_the_value(brokers):
    with pytest.raises(BrokerError, match=rf"brokers must be a whole number of at least 1; "
                                          rf"got {brokers}"):
        start(brokers=brokers)
