"""The broker's CPU per record and per request, measured directly: steady streams of records
through the local broker (produced and consumed) at two rates and two request sizes, the
broker JVM's CPU time read from ``/proc``, a record's and a request's cost told apart by
least squares (issue 14).

Why: the ladder of ``validate/calibrate_kafka.py`` fitted a record's cost beside a
request's on requests of 1-3 records (its large-request rungs carry 25 and 100), where
records are a small share of the broker's work, and its sessions disagreed: 3.06 us (two
sessions on 2026-11-26), 0.35-0.64 and 1.24 (2026-11-27), 0.98 +- 1.5 (11-28).
``scenarios/r2-production.toml``'s figures before the fix rest on it (~40k-record requests).
So the calibration takes it from here: a ladder session on a local broker runs this design
after its configurations and writes the rounds (:data:`CSV_NAME`), and the ladder's fit is
given their record cost (:func:`record_cost`). Here the design separates them:
one partition, so a request carries one batch; 20,000 records/s in requests of ~2,000
(``linger.ms`` 100) and of ~400 (20 ms), and 40,000 records/s in requests of ~4,000: the
same records in five times the requests, twice the records in as many. Each design point
runs :data:`REPS` times, interleaved.

Each round: a fresh topic, a warm-up of 5,000 records, then ``rate`` records/s of 256 bytes
for ``seconds`` (librdkafka, ``acks=1``, keyed, as the calibration's), every record consumed;
over the span, the JVM's CPU (``/proc/PID/stat``) and its threads' by group
(:data:`~validate.broker_jvm.THREAD_GROUPS`: the request path, the JIT compiler, the
collector; to the nanosecond since 2026-12-06, ``broker_jvm._thread_cpu_s``: in clock
ticks a warm broker on that day's machine read the same request path at both request
sizes), and the produce and fetch requests the clients sent (librdkafka's statistics).
The fit: the request path's CPU in cores = a request's cost x (produce + fetch requests)/s +
a record's cost x records/s + a constant; beside it, each design point's serving CPU (the
JVM's less its JIT compiler's, as the calibration counts it:
``validate.broker_costs.serving_cpu_s``) and its collector's. A fresh broker's compiler
recompiles the large-request path for a minute or more (measured 2026-11-27: 1.3-1.7 s of
compiler CPU in each of the first 6 s rounds, the request path's CPU falling by two thirds),
so :data:`WARM_ROUNDS` rounds come first and are not fitted.

What it found (2026-11-27, three fresh brokers): the request path costs 840 +- 84, 734 +- 30
(``--reps 4``) and 1007 +- 128 us per request (produce or fetch; three repetitions), and
0.32 +- 0.31, 0.10 +- 0.11 and -0.06 +- 0.48 us per record of 256 bytes: a record's own share
is too small to tell from zero here, and nowhere near the ladder's 3.06 us. In the first
session the JVM's collector threads also burned 0.35-0.56 cores at 10 produce requests/s of
~0.65 and ~1.3 MB (linger 100 ms at 20,000 and 40,000 records/s) and ~0 at 47/s of ~130 KB
(20 ms); in the others, 0-0.1 and ~0. A
produce request is read into one heap buffer of its size (``NetworkReceive.readFrom``
allocates ``receiveSize`` from the socket server's memory pool, ``MemoryPool.NONE`` -- a
plain ``ByteBuffer.allocate`` -- unless ``queued.max.request.bytes`` is set: Kafka's
``clients/.../common/network/NetworkReceive.java``, ``core/.../network/SocketServer.scala``),
and G1 allocates an object of half a region or more (512 KB here: 1 MB regions of a
256-512 MB heap) as a humongous object outside eden, whose allocation can start a marking
cycle once the heap is past its occupancy threshold (HotSpot ``g1CollectedHeap.cpp``,
``attempt_allocation_humongous``): a large request's cost to the collector depends on the
heap's state, not on its records alone, which the model's costs (fitted on requests of 1-100
records) do not hold. Production's requests before the fix (~13 MB) are humongous in any
heap. Those swings come in the warm rounds (2026-11-28, a fresh broker: the collector at
0.07-0.31 cores in four of six warm rounds, under 0.01 in the twelve after); the serving
CPU of the rounds after them gave 831 +- 60 us per request and 0.52 +- 0.22 us per record,
the request path's threads 922 +- 86 and 0.40 +- 0.32. On a broker whose heap a ladder
session had aged (the same day, the design run on the ladder's broker after its runs), the
collector burnt 0.06-0.22 cores in four of the eight large-request rounds and ~0 in the
small-request ones, and on a fresh broker later up to 0.61: the serving CPU's fit read
1.8 +- 2.5 and 2.6 +- 8.2 us per record, the request path's 0.94 +- 0.24 and 0.82 +- 0.44,
and the JVM's CPU less its compiler's and collector's 0.91 +- 0.25 and 0.89 +- 0.38 (0.57 +-
0.22 in the session above). So the calibration's record cost leaves the collector out
(:func:`record_cost`), as the model does (module docstring of simbatch/kafka/broker.py).

``python -m validate.kafka_record_cost [--seconds 6] [--reps 4] [--warm 6] [--out-dir DIR]``:
on a broker it starts (the local one only: the CPU is read from its process); with
``--out-dir``, the rounds go to ``DIR/record-cost.csv`` for ``python -m
validate.calibrate_kafka --from-csv --out-dir DIR``.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from validate.broker_jvm import process_cpu_s, thread_usage
from validate.kafka_harness import HarnessError, request_counts
from validate.kafka_models import broker_model_path, model_broker

HERE = Path(__file__).resolve().parent
DESIGN = ((20_000, 100), (20_000, 20), (40_000, 100))
"""(records/s, ``linger.ms``) of each design point, one partition (module docstring)."""
REPS = 4
WARM_ROUNDS = 6
WARM_RECORDS = 5000
CSV_NAME = "record-cost.csv"
"""The rounds' file in a calibration's output directory (``--out-dir``): where
validate/calibrate_kafka.py takes a record's cost from (:func:`record_cost`)."""


@dataclass(frozen=True)
class Round:
    """One round's figures over its timed span (CPU in seconds)."""

    rate: float
    linger_ms: float
    records: int
    span_s: float
    jvm_cpu_s: float
    data_cpu_s: float
    jit_cpu_s: float
    gc_cpu_s: float
    produce_requests: float
    fetch_requests: float

    @property
    def serving_cores(self) -> float:
        return (self.jvm_cpu_s - self.jit_cpu_s) / self.span_s

    @property
    def requests_per_s(self) -> float:
        return (self.produce_requests + self.fetch_requests) / self.span_s

    @property
    def records_per_s(self) -> float:
        return self.records / self.span_s


def measure_round(bootstrap: str, pid: int, rate: float, seconds: float, linger_ms: float,
                  partitions: int = 1, message_bytes: int = 256,
                  timeout_s: float = 30.0) -> Round:
    """One round (module docstring) on the broker at ``bootstrap`` whose process is ``pid``."""
    from confluent_kafka import Consumer, KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = "simbatch-rc-" + uuid.uuid4().hex[:10]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout_s)
    except KafkaException as exc:
        raise HarnessError(f"could not create topic {topic} on {bootstrap}: {exc}") from None
    stats = {"producer": "", "consumer": ""}
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": linger_ms, "acks": 1,
                         "batch.num.messages": 1_000_000, "batch.size": 1_000_000,
                         "queue.buffering.max.messages": 2_000_000,
                         "queue.buffering.max.kbytes": 2_000_000,
                         "statistics.interval.ms": 100,
                         "stats_cb": lambda js: stats.__setitem__("producer", js)})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "statistics.interval.ms": 100,
                         "stats_cb": lambda js: stats.__setitem__("consumer", js)})
    consumer.subscribe([topic])
    got = [0]
    done = threading.Event()

    def consume() -> None:         # the only thread that calls the consumer until it closes
        while not done.is_set():
            got[0] += sum(1 for m in consumer.consume(100_000, 0.1) if m.error() is None)

    value = b"x" * message_bytes
    n = int(rate * seconds)
    reader = threading.Thread(target=consume, daemon=True)
    try:
        for i in range(WARM_RECORDS):
            producer.produce(topic, value, key=b"w%d" % i)
        producer.flush(timeout_s)
        reader.start()
        _wait(lambda: got[0] >= WARM_RECORDS, timeout_s, "the warm-up's records")
        time.sleep(0.5)                           # a statistics report after the warm-up
        producer.poll(0)
        before = process_cpu_s(pid), thread_usage(pid), request_counts(stats)
        t0 = time.perf_counter()
        chunk, sent, due = max(1, int(rate / 1000)), 0, t0
        while sent < n:                           # every millisecond its share of the rate
            for i in range(sent, min(n, sent + chunk)):
                _produce(producer, topic, value, b"k%d" % i)
            sent = min(n, sent + chunk)
            producer.poll(0)
            due += chunk / rate
            time.sleep(max(0.0, due - time.perf_counter()))
        producer.flush(timeout_s)
        _wait(lambda: got[0] >= WARM_RECORDS + n, timeout_s, "every record back")
        span = time.perf_counter() - t0
        time.sleep(0.25)     # the clients' statistics after the span (the reader polls its own)
        producer.poll(0)
        after = process_cpu_s(pid), thread_usage(pid), request_counts(stats)
    finally:
        done.set()
        if reader.is_alive():
            reader.join()
        consumer.close()
    groups = {k: after[1][f"{k}_cpu_s"] - before[1][f"{k}_cpu_s"] for k in ("data", "jit", "gc")}
    return Round(rate, linger_ms, n, span, after[0] - before[0], groups["data"],
                 groups["jit"], groups["gc"], after[2][0] - before[2][0],
                 after[2][1] - before[2][1])


def _produce(producer, topic: str, value: bytes, key: bytes) -> None:
    while True:
        try:
            producer.produce(topic, value, key=key)
            return
        except BufferError:                       # the client's queue is full: let it send
            producer.poll(0.001)


def _wait(cond: Callable[[], bool], timeout_s: float, what: str) -> None:
    end = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > end:
            raise HarnessError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.01)


@dataclass(frozen=True)
class Costs:
    """A fit's costs (us) with their standard errors, and the constant (cores)."""

    request_us: float
    request_se: float
    record_us: float
    record_se: float
    base_cores: float


def fit(rounds: Sequence[Round], cores: Callable[[Round], float]) -> Costs:
    """Least squares of ``cores(round)`` on requests/s, records/s and a constant."""
    a = np.array([[r.requests_per_s, r.records_per_s, 1.0] for r in rounds])
    y = np.array([cores(r) for r in rounds])
    if len(rounds) < 4 or np.linalg.matrix_rank(a) < 3:
        raise ValueError(f"{len(rounds)} rounds cannot tell a request's cost from a record's: "
                         "the design needs two request sizes and two rates")
    x, *_ = np.linalg.lstsq(a, y, rcond=None)
    resid = a @ x - y
    cov = float(resid @ resid) / (len(y) - 3) * np.linalg.inv(a.T @ a)
    se = np.sqrt(np.diag(cov))
    return Costs(x[0] * 1e6, se[0] * 1e6, x[1] * 1e6, se[1] * 1e6, x[2])


def record_cost(rounds: Sequence[Round]) -> Costs:
    """A record's cost to the broker JVM's CPU less its compiler's (as the calibration's
    ladder counts it, ``validate.broker_costs.serving_cpu_s``) and its collector's, told
    from a request's by the design (module docstring): the collector's share at these
    requests swings with the heap's state (0 to 0.6 cores, 2026-11-28), not with the
    records, and the model leaves it out."""
    return fit(rounds, lambda r: r.serving_cores - r.gc_cpu_s / r.span_s)


def write_rounds(path: Path, rounds: Sequence[Round]) -> None:
    """``rounds`` as CSV, one line each (:func:`read_rounds` reads them back)."""
    names = [f.name for f in dataclasses.fields(Round)]
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(names)
        out.writerows([getattr(r, n) for n in names] for r in rounds)


def read_rounds(path: Path) -> list[Round]:
    """The rounds :func:`write_rounds` wrote at ``path``."""
    def parse(row: dict[str, str]) -> Round:
        values: dict[str, Any] = {f.name: float(row[f.name]) for f in dataclasses.fields(Round)}
        values["records"] = int(values["records"])
        return Round(**values)

    try:
        with path.open(newline="") as fh:
            return [parse(row) for row in csv.DictReader(fh)]
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise HarnessError(f"{path}: not a file of record-cost rounds "
                           f"({type(exc).__name__}: {exc})") from None


def measure(bootstrap: str, pid: int, seconds: float = 6.0, reps: int = REPS,
            warm: int = WARM_ROUNDS, report: Callable[[str], None] = print) -> list[Round]:
    """``warm`` rounds at the first design point, then ``reps`` rounds of each, interleaved;
    the rounds after the warm ones."""
    rounds: list[Round] = []
    plan = [DESIGN[0]] * warm + [point for _ in range(reps) for point in DESIGN]
    for k, (rate, linger) in enumerate(plan):
        r = measure_round(bootstrap, pid, rate, seconds, linger)
        report(row(k + 1, r, warm=k < warm))
        if k >= warm:
            rounds.append(r)
    return rounds


HEADER = ("| round | records/s | linger ms | requests/s | serving cores | request path cores "
          "| JIT cores | GC cores |\n|---:|---:|---:|---:|---:|---:|---:|---:|")


def row(k: int, r: Round, warm: bool = False) -> str:
    """Round ``k``'s line of :data:`HEADER`'s table."""
    return (f"| {k}{' (warm)' if warm else ''} | {r.records_per_s:,.0f} | {r.linger_ms:.0f} | "
            f"{r.requests_per_s:.1f} | {r.serving_cores:.4f} | {r.data_cpu_s / r.span_s:.4f} | "
            f"{r.jit_cpu_s / r.span_s:.4f} | {r.gc_cpu_s / r.span_s:.4f} |")


def by_point(rounds: Sequence[Round]) -> dict[tuple[float, float], dict[str, float]]:
    """Per design point, the medians of its rounds' cores: serving, request path, collector."""
    out: dict[tuple[float, float], dict[str, float]] = {}
    for rate, linger in DESIGN:
        mine = [r for r in rounds if (r.rate, r.linger_ms) == (rate, linger)]
        if mine:
            out[(rate, linger)] = {
                "requests_per_s": float(np.median([r.requests_per_s for r in mine])),
                "serving": float(np.median([r.serving_cores for r in mine])),
                "data": float(np.median([r.data_cpu_s / r.span_s for r in mine])),
                "gc": float(np.median([r.gc_cpu_s / r.span_s for r in mine]))}
    return out


def summary(rounds: Sequence[Round], shipped: dict | None) -> list[str]:
    """Each design point's medians, the request path's fit, the models file's costs."""
    out = ["| records/s | linger ms | requests/s | serving cores | request path cores | "
           "GC cores |", "|---:|---:|---:|---:|---:|---:|"]
    out += [f"| {rate:,.0f} | {linger:.0f} | {m['requests_per_s']:.1f} | {m['serving']:.4f} | "
            f"{m['data']:.4f} | {m['gc']:.4f} |" for (rate, linger), m in by_point(rounds).items()]
    c = fit(rounds, lambda r: r.data_cpu_s / r.span_s)
    out.append(f"\nthe request path's threads: {c.request_us:.0f} +- {c.request_se:.0f} us per "
               f"request (produce or fetch), {c.record_us:.2f} +- {c.record_se:.2f} us per "
               f"record, {c.base_cores:.3f} cores besides")
    c = record_cost(rounds)
    out.append(f"the JVM's CPU less its compiler's and collector's (the calibration's record "
               f"cost): {c.request_us:.0f} +- {c.request_se:.0f} us per request, "
               f"{c.record_us:.2f} +- {c.record_se:.2f} us per record, {c.base_cores:.3f} "
               "cores besides")
    if shipped is not None:
        out.append(f"the models file: {shipped['request_cpu_us']} us per request warm and "
                   f"{shipped['cold_us']} more cold (fitted on the ladder, the JVM less its "
                   f"compiler), {shipped['record_cpu_us']} us per record (this design's)")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--reps", type=int, default=REPS)
    parser.add_argument("--warm", type=int, default=WARM_ROUNDS)
    parser.add_argument("--out-dir", default=None,
                        help=f"also write the rounds to DIR/{CSV_NAME}, where "
                             "validate/calibrate_kafka.py takes a record's cost from")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.reps < 2 or args.warm < 0:
        parser.error(f"--seconds must be above 0, --reps at least 2, --warm at least 0; got "
                     f"{args.seconds}, {args.reps}, {args.warm}")
    from validate.kafka_broker import BrokerError, KafkaBroker

    out = None if args.out_dir is None else Path(args.out_dir) / CSV_NAME
    try:
        if out is not None:                # before minutes of measuring, not after
            out.parent.mkdir(parents=True, exist_ok=True)
            out.touch()
        print(HEADER, flush=True)
        with KafkaBroker() as broker:
            rounds = measure(broker.bootstrap, broker.pid, args.seconds, args.reps, args.warm,
                             report=lambda line: print(line, flush=True))
        if out is not None:
            write_rounds(out, rounds)
    except (HarnessError, BrokerError, OSError) as exc:
        print(f"kafka_record_cost: error: {exc}", file=sys.stderr)
        sys.exit(2)
    print("\n" + "\n".join(summary(rounds, model_broker(HERE.parent / "models"))))
    print(f"(costs of {broker_model_path(HERE.parent / 'models').name})")


if __name__ == "__main__":
    main()
