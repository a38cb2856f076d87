"""New topics and the broker's young collections: what each collection left in the survivor
spaces, and its pause, before and after topics are created on a broker under steady load.

Why (issue 14): the model draws a young pause's length from the session's measured pauses
alone (``simbatch/kafka/gc.py``, "Not modelled either"), while G1's pause follows what the
collection copies, and every harness run creates a topic of its own. This measures whether
new topics raise the survivors, on a broker whose only other traffic is one producer.

``python -m validate.kafka_gc_survivors [--rate 3000] [--partitions 32] [--topics 10]
[--before-s 40] [--after-s 60]``: starts the local broker (validate/kafka_broker.py; the
broker's ``jstat`` needs its pid, so not a user's cluster), creates one topic of
``--partitions`` and produces ``--rate`` messages/s of 256 bytes to it (librdkafka, acks=1,
linger 5 ms, no consumer) for ``--before-s``, creates ``--topics`` more topics of the same
size, and produces for ``--after-s`` more; ``jstat -gc PID 100`` samples the broker's heap
throughout. Prints each young collection: its time, the phase, its pause and what it left in
the survivor spaces (``S0U + S1U``), with the old generation's use. About two minutes.

Measured on 2026-11-29 (this project's 2-vCPU VM, the defaults), twice: the survivors
2.4-2.7 MB over the steady collections, 6.8 and 7.5 MB at the first after the ten topics
were created, then 6.0-7.0 and 4.5-6.0 over the next 8-10 (none promoted within 55 s); the
pauses 3-9 ms before (medians 5.5 and 4), 7-11 and 4-10 after (medians 7 and 5.5). The
second figure of each pair is from a first version of this script (the same steps), whose
two collections in the broker's first 8 s (16 and 13 ms, at 11.5 and 3.0 MB: the broker's
own start-up) are left out of it.
"""

from __future__ import annotations

import argparse
import sys
import time


def collections(lines: list[tuple[float, str]], marks: dict[str, float]) -> list[dict]:
    """Each young collection in ``jstat -gc`` output read at the given times (``lines``:
    (time, line), the header first): when its pause ended (the sample its time grew in),
    the phase (the last of ``marks``, name -> time, before it), its pause (ms), the survivor
    spaces' and the old generation's use after it (MB)."""
    from validate.broker_jvm import jstat_samples

    samples = jstat_samples(lines)
    out = []
    for (_, a), (t, b) in zip(samples, samples[1:]):
        if b["YGCT"] > a["YGCT"]:
            passed = [name for name, at in sorted(marks.items(), key=lambda m: m[1]) if at <= t]
            out.append({"t": t, "phase": passed[-1] if passed else "start",
                        "pause_ms": (b["YGCT"] - a["YGCT"]) * 1e3,
                        "survivors_mb": (b["S0U"] + b["S1U"]) / 1024, "old_mb": b["OU"] / 1024})
    return out


def table(rows: list[dict], t0: float) -> str:
    lines = ["| s | phase | pause ms | survivors MB | old MB |", "|---:|---|---:|---:|---:|"]
    lines += [f"| {r['t'] - t0:.1f} | {r['phase']} | {r['pause_ms']:.0f} | "
              f"{r['survivors_mb']:.2f} | {r['old_mb']:.1f} |" for r in rows]
    return "\n".join(lines)


def measure(rate: float, partitions: int, topics: int, before_s: float,
            after_s: float) -> tuple[list[tuple[float, str]], dict[str, float]]:
    """Run the experiment on a fresh local broker; jstat's lines with the times they were
    read, and when each phase started."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from validate.broker_jvm import GcSampler
    from validate.kafka_broker import KafkaBroker

    def create(name: str) -> None:
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)

    with KafkaBroker() as broker:
        heap = GcSampler(broker.pid)
        if heap.proc is None:
            raise SystemExit("kafka_gc_survivors: error: no jstat (a JDK's) on the PATH")
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                             "acks": 1})
        create("steady")

        def produce(seconds: float) -> None:
            t0, i = time.perf_counter(), 0
            while time.perf_counter() - t0 < seconds:
                producer.produce("steady", b"x" * 256, key=str(i).encode())
                producer.poll(0)
                i += 1
                if i % 100 == 0:
                    time.sleep(max(0.0, t0 + i / rate - time.perf_counter()))
            producer.flush(10)

        marks = {"steady": time.perf_counter()}
        produce(before_s)
        marks["creating"] = time.perf_counter()
        for k in range(topics):
            create(f"new-{k}")
        marks["after new topics"] = time.perf_counter()
        produce(after_s)
        time.sleep(0.3)
        heap.kill()
        return heap.lines, marks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--rate", type=float, default=3000.0, help="messages per second")
    parser.add_argument("--partitions", type=int, default=32)
    parser.add_argument("--topics", type=int, default=10, help="topics created mid-run")
    parser.add_argument("--before-s", type=float, default=40.0)
    parser.add_argument("--after-s", type=float, default=60.0)
    args = parser.parse_args(argv)
    for name in ("rate", "partitions", "before_s", "after_s"):
        if not getattr(args, name) > 0:
            parser.error(f"--{name.replace('_', '-')} must be above 0; "
                         f"got {getattr(args, name)}")
    if args.topics < 0:
        parser.error(f"--topics must be 0 or more; got {args.topics}")
    from validate.kafka_broker import BrokerError

    try:
        lines, marks = measure(args.rate, args.partitions, args.topics, args.before_s,
                               args.after_s)
    except BrokerError as exc:
        print(f"kafka_gc_survivors: error: {exc}", file=sys.stderr)
        return 1
    print(table(collections(lines, marks), marks["steady"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
