"""Partition librdkafka (through confluent-kafka) picks for keys k-<label>-<i>, per partition count.

    python validate/partitioners/librdkafka_vectors.py BOOTSTRAP [--label p] [--n 2000]
        [--counts 1,8,32,128,256] [--out validate/partitioners/librdkafka.csv]

For each partition count a topic of that many partitions is created on the broker at
BOOTSTRAP, every key is produced with the client's default partitioner (``consistent_random``)
and the partition is read back from the delivery report: the real client's choice. The script
then checks it against CRC-32 (zlib's, the same reflected 0xEDB88320 polynomial as librdkafka's
rdcrc32) of the key modulo the partition count, librdkafka's
``rd_kafka_msg_partitioner_consistent`` (src/rdkafka_msg.c), and fails if any key disagrees.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
import uuid
import zlib


def produced_partitions(bootstrap: str, n_partitions: int, keys: list[str]) -> list[int]:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"simbatch-rdkvec-{n_partitions}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=n_partitions, replication_factor=1)],
                        request_timeout=10)[topic].result(15)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:     # every partition known with a leader
        md = admin.list_topics(topic, timeout=5).topics.get(topic)
        if md is not None and len(md.partitions) == n_partitions and all(
                p.leader >= 0 for p in md.partitions.values()):
            break
        time.sleep(0.1)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    got: dict[int, int] = {}

    def on_delivery(err, msg):
        if err is not None:
            raise RuntimeError(f"delivery failed: {err}")
        got[int(msg.value())] = msg.partition()

    for i, key in enumerate(keys):
        producer.produce(topic, key=key, value=str(i), on_delivery=on_delivery)
        producer.poll(0)
    producer.flush(30)
    if len(got) != len(keys):
        raise RuntimeError(f"{len(got)} of {len(keys)} delivery reports for {topic}")
    return [got[i] for i in range(len(keys))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("bootstrap")
    ap.add_argument("--label", default="p")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--counts", default="1,8,32,128,256")
    ap.add_argument("--out", default="validate/partitioners/librdkafka.csv")
    args = ap.parse_args()
    import confluent_kafka

    keys = [f"k-{args.label}-{i}" for i in range(args.n)]
    rows = []
    for p in (int(c) for c in args.counts.split(",")):
        parts = produced_partitions(args.bootstrap, p, keys)
        bad = [k for k, q in zip(keys, parts) if zlib.crc32(k.encode()) % p != q]
        if bad:
            sys.exit(f"{len(bad)} keys at {p} partitions disagree with crc32 % n, e.g. {bad[0]}")
        print(f"{p} partitions: {len(keys)} delivery reports, all equal crc32(key) % {p}",
              file=sys.stderr)
        rows += [("librdkafka", p, k, q) for k, q in zip(keys, parts)]
    with open(args.out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["client", "n_partitions", "key", "partition"])
        w.writerows(rows)
    print(f"wrote {args.out} (confluent-kafka {confluent_kafka.version()}, librdkafka "
          f"{confluent_kafka.libversion()[0]})", file=sys.stderr)


if __name__ == "__main__":
    main()
