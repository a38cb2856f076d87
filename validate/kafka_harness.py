"""Run a Kafka scenario against a real broker and measure publish-to-consume latency, with
any of the three real clients.

The pipeline is real code: a feed publishes messages (periodic or Poisson gaps) into the
**outer batcher** (teranode's loop in ``util/kafka/kafka_producer_async.go``: block for the
first message, then flush when the timer fires or when ``max_batch`` messages are buffered;
the timer is a debounce, reset by every message, or a deadline, ``linger`` after the first
message of the batch; the flush calls ``Produce`` serially; when the feed ends the last batch
still waits for its timer), in front of the client (``HarnessConfig.client``):

* ``"librdkafka"``: confluent-kafka, in this process (Python), with the scenario's
  ``linger.ms``, ``batch.num.messages`` and ``batch.size``, acks=1 (acks=all with
  ``replication`` above 1);
* ``"franz-go"``: the Go harness ``validate/franzgo`` (franz-go v1.20.6 with teranode's
  options), built here with ``go build``;
* ``"java"``: the Java harness ``validate/javaproducer`` (kafka-clients 3.9.1, the client's
  defaults but ``linger.ms``), built here with ``mvn -q -B package``.

All three write the same per-message columns. A consumer is assigned to every partition
**before** the first message, and the latency of each message is its consume time minus its
publish time (one process, one clock). Keys are ``k-<label>-<i>`` (``label``: the run's
topic unless given; the calibration gives the configuration's name, which the model uses
too, so both put each message in the same partition).

The broker: ``SIMBATCH_KAFKA_BOOTSTRAP=host:port`` names a user's cluster for every harness
and the calibration (:func:`user_bootstrap`); without it the callers start the local broker
(``validate/kafka_broker.py``). The topic is created per run, with ``replication``
replicas (1 by default; above 1 the librdkafka harness asks ``acks=all``, the clients'
default, which franz-go's harness keeps, so that a delivery report waits for the followers
as production's does; the Java harness takes 1 only).

Per message the CSV has ``msg, partition, publish_s, produce_s`` (handed to the client),
``ack_s`` (delivery report), ``consume_s``, ``latency_s``, ``publish_late_s`` (how late the
feed thread published the message against its schedule), ``stall_s`` (the longest stall of
the 1 ms delivery-report poller while the message was in flight) and ``steal_share`` (the
run's: CPU time the hypervisor took from the VM, /proc/stat ``steal``, over the run's CPU
time; it also slows the broker, which the harness's own stalls do not show); and, per run
(the same value in every row), ``broker_cpu_s`` (the broker JVM's CPU time, utime + stime of
``/proc/PID/stat``, from the first publish until every message was consumed; a local
cluster's JVMs summed where :func:`run` is given each's pid; NaN without the broker's pid or
for the Go and Java harnesses), ``machine_cpu_s`` (the whole machine's busy
CPU time over that span, all CPUs: /proc/stat user, nice, system, irq, softirq; what is not
the broker's is other load on its cores: this harness, and whatever else runs) and
``timed_s`` (that span's wall time); and ``broker_idle_cores``, the broker's CPU time over
the warm-up pause before the feed (clients connected, no traffic: the consumer's empty long-
polls, the JVM's own work) per second; ``load_avg``, the machine's 1-minute load average as
the feed starts (what else ran); ``produce_requests`` and ``fetch_requests``, the Produce
requests the producer sent and the Fetch requests the consumer sent over the timed span
(librdkafka's statistics, ``brokers.*.req``; NaN for the Go and Java harnesses);
``broker_alloc_mb`` and ``broker_eden_mb``, what the broker JVM allocated over the timed span
and its eden's size, ``gc_pause_s``, its young collections' pauses over that span, one per
row from the first (NaN below), and ``gc_remark_s``, its marking cycles' stops the same way
(Remark and Cleanup of one cycle together), and ``gc_survivor_mb``, what each young
collection left in the survivor spaces (``S0U + S1U`` after it: what it copied there), one
per row beside its pause, all from ``jstat -gc PID 100`` (:class:`~validate.broker_jvm.GcSampler`,
started during the warm-up pause so that its own JVM's start-up is not in the span; NaN
without the broker's pid or a JDK's ``jstat``); ``broker_data_cpu_s``, ``broker_jit_cpu_s``
and ``broker_gc_cpu_s``, the part of ``broker_cpu_s`` its request path, its JIT compiler and
its garbage collector's threads took, and ``broker_data_switches``, the request path's
context switches, ``broker_data_preempted`` the involuntary ones, and ``broker_data_runq_s``
its threads' time runnable but waiting for a CPU (:func:`~validate.broker_jvm.thread_usage`); and
``client_int_p50_s`` and ``client_int_p99_s``, librdkafka's own ``int_latency`` (a message's
time from ``produce()`` into its message set: its linger and the broker thread's wake-up,
``simbatch/kafka/librdkafka.py`` L9) over the timed span: each statistics window's median and
p99 (per broker, the producer's statistics every ``STATS_MS``), the median over windows (NaN
for the Go and Java harnesses); and the host's speed through the run, for every harness,
medians of a probe beside it (``validate/host_probe.py``; over the Go and Java harnesses'
whole process, the librdkafka harness's timed span): ``host_work_s``, how long a fixed
piece of work took, ``host_wake_s``, how late a timed wait woke, and ``host_trip_s``, a
one-byte round trip between two processes. Times are seconds from the run's start. A large
lateness or stall means the harness process itself was paused (the shared VM descheduled
it), which delays its consumer and delivery-report threads too: such a run's stalled
messages measure the VM, not Kafka (see :func:`undisturbed`).

Python's garbage collector is kept out of the timed section (``gc.freeze()`` of everything
alive, collection disabled while measuring, restored after): a full collection stops every
Python thread, including the consumer and delivery-report threads, and in a process full of
other objects (a pytest run) it inflated measured p99s from ~30 ms to 130-450 ms. The same
harness artefact is documented for the Aerospike data (shared/data/aerospike-loopback,
caveat 3).
Likewise the measuring tools start before the span: ``jstat`` is a JVM whose start-up takes
1.5 vCPUs for 150 ms, and started with the feed it delayed the feed's first messages by up to
a hundred milliseconds (:class:`~validate.broker_jvm.GcSampler`).

Faults: with no broker reachable, :func:`run` raises :class:`HarnessError` within
``connect_timeout_s`` (5 s; the Go and Java harnesses exit with one ``error:`` line, which
becomes the HarnessError's message); if the broker stops answering mid-run (no progress for
``stall_timeout_s``), it raises naming what happened, after writing the measurements taken
so far. A harness that cannot be built (``go`` or ``mvn`` missing, a failed build) raises
:class:`HarnessUnavailable` saying which tool.
"""

from __future__ import annotations

import csv
import gc
import json
import os
import queue
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from validate.broker_jvm import GcSampler, _cpu_s, _threads, machine_cpu_s
from validate.host_probe import HostProbe

COLUMNS = ("msg", "partition", "publish_s", "produce_s", "ack_s", "consume_s", "latency_s",
           "publish_late_s", "stall_s", "steal_share", "broker_cpu_s", "machine_cpu_s",
           "timed_s", "broker_idle_cores", "load_avg", "produce_requests", "fetch_requests",
           "broker_alloc_mb", "broker_eden_mb", "gc_pause_s", "gc_remark_s",
           "gc_survivor_mb", "broker_data_cpu_s", "broker_jit_cpu_s", "broker_gc_cpu_s",
           "broker_data_switches", "broker_data_preempted", "broker_data_runq_s",
           "client_int_p50_s", "client_int_p99_s", "host_work_s", "host_wake_s",
           "host_trip_s")
STALL_MIN_S = 0.002
STATS_MS = 200       # librdkafka's statistics interval (request counts, see _requests)
ENV = "SIMBATCH_KAFKA_BOOTSTRAP"
CLIENTS = ("librdkafka", "franz-go", "java")
HERE = Path(__file__).resolve().parent
FRANZGO_DIR = HERE / "franzgo"
JAVA_DIR = HERE / "javaproducer"
FRANZGO_BIN = HERE / ".kafka" / "bin" / "franzgo"
JAVA_JAR = JAVA_DIR / "target" / "javaproducer.jar"


class HarnessError(RuntimeError):
    """The run could not start or did not finish; the message says what happened."""


class HarnessUnavailable(HarnessError):
    """A client's harness cannot be built here (its tool is missing or the build failed)."""


@dataclass(frozen=True, kw_only=True)
class HarnessConfig:
    client: str = "librdkafka"        # "librdkafka" | "franz-go" | "java"
    n_messages: int = 100
    feed: str = "periodic"            # "periodic" | "poisson" (Poisson: librdkafka only)
    interval_ms: float = 25.0
    message_bytes: int = 256
    n_partitions: int = 1
    linger_ms: float = 0.0            # the client's linger (linger.ms / ProducerLinger)
    outer_linger_ms: float | None = None   # None: no outer batcher
    outer_timer: Literal["debounce", "deadline"] = "debounce"
    outer_max_batch: int = 10_000
    batch_num_messages: int = 10_000  # librdkafka only
    batch_size_bytes: int = 1_000_000  # librdkafka only
    label: str | None = None          # keys k-<label>-<i>; None: the run's topic
    warmup_s: float = 2.0
    connect_timeout_s: float = 5.0
    stall_timeout_s: float = 15.0
    seed: int = 1
    nagle_disable: bool = False       # librdkafka socket.nagle.disable (default false)
    replication: int = 1              # the topic's replicas (librdkafka: acks=all above 1)


def user_bootstrap() -> str | None:
    """The user's cluster, ``SIMBATCH_KAFKA_BOOTSTRAP=host:port``, or None (local broker)."""
    value = os.environ.get(ENV, "").strip()
    return value or None


def check_reachable(bootstrap: str, timeout_s: float) -> None:
    """Wait until the first address of ``bootstrap`` (``host:port[,host:port...]``) accepts
    connections."""
    host, port = bootstrap.split(",")[0].strip().rsplit(":", 1)
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, int(port)), timeout=1.0):
                return
        except OSError as exc:
            last = exc
            time.sleep(0.2)
    raise HarnessError(f"no Kafka broker reachable at {bootstrap} within {timeout_s:g} s "
                       f"({last})")


class OuterBatcher(threading.Thread):
    """teranode's outer drain loop: debounce or deadline timer, size trigger, serial
    Produce; after ``stop`` the last batch still waits for its timer."""

    def __init__(self, linger_s: float, max_batch: int, produce,
                 timer: str = "debounce") -> None:
        super().__init__(daemon=True)
        if timer not in ("debounce", "deadline"):
            raise HarnessError(f"the outer timer must be debounce or deadline; got {timer!r}")
        self.inbox: queue.Queue = queue.Queue()
        self.linger_s, self.max_batch, self.produce = linger_s, max_batch, produce
        self.deadline = timer == "deadline"
        self.stop = threading.Event()
        self.flushes = 0

    def run(self) -> None:
        buffer: list = []
        due = 0.0                      # first message + linger (deadline), last + linger
        while not (self.stop.is_set() and self.inbox.empty() and not buffer):
            try:
                if not buffer:
                    buffer.append(self.inbox.get(timeout=0.1))
                    due = time.perf_counter() + self.linger_s
                    continue
                if len(buffer) >= self.max_batch:
                    raise queue.Empty
                wait = due - time.perf_counter()
                if wait <= 0:
                    raise queue.Empty
                buffer.append(self.inbox.get(timeout=wait))
                if not self.deadline:
                    due = time.perf_counter() + self.linger_s   # the timer is reset
            except queue.Empty:
                for item in buffer:
                    self.produce(item)
                self.flushes += 1
                buffer = []


def run(bootstrap: str | None, config: HarnessConfig,
        out_csv: str | Path | None = None,
        broker_pid: int | Sequence[int] | None = None) -> np.ndarray:
    """Measure one configuration with its client on the broker at ``bootstrap`` (None: the
    user's, :func:`user_bootstrap`); returns a structured array with :data:`COLUMNS` (and
    writes it to ``out_csv`` if given). ``broker_pid``: the local broker's process, whose CPU
    time the librdkafka harness records (``broker_cpu_s``), or a local cluster's processes,
    whose CPU times it records summed (then without ``jstat``'s heap figures: those are one
    JVM's)."""
    bootstrap = bootstrap or user_bootstrap()
    if bootstrap is None:
        raise HarnessError(f"no Kafka broker named: pass one, or set {ENV}=host:port")
    if config.client not in CLIENTS:
        raise HarnessError(f"the client must be one of {', '.join(CLIENTS)}; "
                           f"got {config.client!r}")
    if config.outer_timer not in ("debounce", "deadline"):
        raise HarnessError("the outer timer must be debounce or deadline; "
                           f"got {config.outer_timer!r}")
    if not isinstance(config.replication, int) or config.replication < 1:
        raise HarnessError(f"replication must be a whole number of at least 1; got "
                           f"{config.replication!r}")
    if config.replication != 1 and config.client == "java":
        raise HarnessError(f"replication {config.replication} is measured with the librdkafka "
                           f"and franz-go harnesses only; got client {config.client!r}")
    if config.client == "librdkafka":
        return _run_librdkafka(bootstrap, config, out_csv, broker_pid)
    return _run_external(bootstrap, config, out_csv)


def _run_librdkafka(bootstrap: str, config: HarnessConfig, out_csv: str | Path | None,
                    broker_pid: int | Sequence[int] | None = None) -> np.ndarray:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    check_reachable(bootstrap, config.connect_timeout_s)
    n = config.n_messages
    topic = f"simbatch-{uuid.uuid4().hex[:10]}"
    label = config.label or topic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.create_topics([NewTopic(topic, num_partitions=config.n_partitions,
                                      replication_factor=config.replication)],
                            request_timeout=config.connect_timeout_s)[topic].result(
            config.connect_timeout_s + 5)
    except KafkaException as exc:
        raise HarnessError(f"could not create topic {topic} on {bootstrap}: {exc}") from None
    rec = np.full(n, np.nan, dtype=[(c, "f8") for c in COLUMNS])
    rec["msg"] = np.arange(n)
    t0 = time.perf_counter()
    steal0 = _steal_s()
    now = lambda: time.perf_counter() - t0  # noqa: E731
    stats = {"producer": "", "consumer": ""}     # the clients' latest statistics (JSON)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic,
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                         "statistics.interval.ms": STATS_MS,
                         "stats_cb": lambda js: stats.__setitem__("consumer", js)})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING)
                     for p in range(config.n_partitions)])
    consumed = [0]
    stop_consumer = threading.Event()

    def consume_loop():
        while not stop_consumer.is_set():
            msg = consumer.poll(0.05)
            if msg is None or msg.error() is not None:
                continue
            i = int(msg.value()[:12])
            if i >= 0 and np.isnan(rec["consume_s"][i]):
                rec["consume_s"][i] = now()
                rec["partition"][i] = msg.partition()
                consumed[0] += 1

    windows: list[str] | None = None          # the producer's statistics over the timed span

    def on_producer_stats(js: str) -> None:
        stats["producer"] = js
        if windows is not None:
            windows.append(js)

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": config.linger_ms,
                         "batch.num.messages": config.batch_num_messages,
                         "batch.size": config.batch_size_bytes,
                         "acks": 1 if config.replication == 1 else -1,
                         "socket.nagle.disable": config.nagle_disable,
                         "statistics.interval.ms": STATS_MS,
                         "stats_cb": on_producer_stats})
    pad = b"x" * max(0, config.message_bytes - 12)

    def on_ack(err, msg):
        if err is None:
            i = int(msg.value()[:12])
            if i >= 0:
                rec["ack_s"][i] = now()

    def produce(i: int) -> None:
        rec["produce_s"][i] = now()
        while True:
            try:
                producer.produce(topic, key=f"k-{label}-{i}", value=b"%012d" % i + pad,
                                 on_delivery=on_ack)
                break
            except BufferError:        # the client's queue is full: Produce blocks
                time.sleep(0.005)

    stalls: list[tuple[float, float]] = []     # (end, length) of the poller's late wake-ups

    def poll_loop():  # delivery reports fire inside poll(): keep ack times exact
        last = now()
        while not stop_consumer.is_set():
            producer.poll(0.001)
            t = now()
            if t - last > STALL_MIN_S:
                stalls.append((t, t - last))
            last = t

    reader = threading.Thread(target=consume_loop, daemon=True)
    reader.start()
    poller = threading.Thread(target=poll_loop, daemon=True)
    poller.start()
    # warm-up: metadata for every partition, and a consumer that is already fetching
    for p in range(config.n_partitions):
        producer.produce(topic, value=b"%012d" % -1, partition=p)
    producer.flush(config.connect_timeout_s)
    pids = ((broker_pid,) if isinstance(broker_pid, int)
            else tuple(broker_pid) if broker_pid is not None else ())
    heap = GcSampler(pids[0] if len(pids) == 1 else None)   # before the warm-up: a JVM too
    probe = HostProbe()                                       # and a Python
    try:
        idle0, idle_t0 = _cpu_s(pids), time.perf_counter()
        time.sleep(config.warmup_s)
        rec["broker_idle_cores"] = ((_cpu_s(pids) - idle0)
                                    / (time.perf_counter() - idle_t0))
        outer = None
        if config.outer_linger_ms is not None:
            outer = OuterBatcher(config.outer_linger_ms / 1e3, config.outer_max_batch,
                                 produce, config.outer_timer)
            outer.start()
    except BaseException:
        heap.kill()
        probe.kill()
        raise
    gaps = scheduled_gaps_s(config)
    error = None
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.freeze()
    gc.disable()
    rec["load_avg"] = os.getloadavg()[0]
    requests0 = request_counts(stats)
    windows = []
    heap.start_span()
    probe.start()
    threads0 = _threads(pids)
    cpu0, machine0, timed0 = _cpu_s(pids), machine_cpu_s(), time.perf_counter()
    cpu1 = machine1 = timed1 = float("nan")
    threads1 = {name: float("nan") for name in threads0}
    try:
        next_t = time.perf_counter()
        for i in range(n):
            rec["publish_late_s"][i] = time.perf_counter() - next_t
            rec["publish_s"][i] = now()
            if outer is not None:
                outer.inbox.put(i)
            else:
                produce(i)
            next_t += gaps[i]
            time.sleep(max(0.0, next_t - time.perf_counter()))
        if outer is not None:
            outer.stop.set()
            outer.join(timeout=config.stall_timeout_s)
        last, last_change = -1, time.monotonic()
        while consumed[0] < n:
            time.sleep(0.05)
            if consumed[0] != last:
                last, last_change = consumed[0], time.monotonic()
            elif time.monotonic() - last_change > config.stall_timeout_s:
                error = (f"the broker at {bootstrap} stopped answering: {consumed[0]} of {n} "
                         f"messages consumed, none for {config.stall_timeout_s:g} s")
                break
        cpu1, machine1, timed1 = _cpu_s(pids), machine_cpu_s(), time.perf_counter()
        threads1 = _threads(pids)
        rec["host_work_s"], rec["host_wake_s"], rec["host_trip_s"] = probe.stop()
        heap_figures = heap.stop()
        rec["broker_alloc_mb"], rec["broker_eden_mb"] = heap_figures[:2]
        for column, values in (("gc_pause_s", heap_figures.pauses),
                               ("gc_remark_s", heap_figures.remarks),
                               ("gc_survivor_mb", heap_figures.survivors_mb)):
            rec[column][:min(len(values), n)] = values[:n]
        time.sleep(1.5 * STATS_MS / 1e3)         # the clients' statistics after the run
        rec["produce_requests"], rec["fetch_requests"] = np.subtract(request_counts(stats),
                                                                     requests0)
        rec["client_int_p50_s"], rec["client_int_p99_s"] = internal_latency(windows)
    finally:
        heap.kill()
        probe.kill()
        if gc_was_enabled:
            gc.enable()
        gc.unfreeze()
        producer.flush(2.0)
        stop_consumer.set()
        reader.join(timeout=5)
        poller.join(timeout=5)
        rec["latency_s"] = rec["consume_s"] - rec["publish_s"]
        rec["stall_s"] = _stalls_per_message(rec, stalls)
        rec["broker_cpu_s"] = cpu1 - cpu0
        for key in threads0:
            rec[f"broker_{key}"] = threads1[key] - threads0[key]
        rec["timed_s"] = timed1 - timed0
        rec["machine_cpu_s"] = machine1 - machine0
        steal = _steal_s()
        if steal is not None and steal0 is not None:
            rec["steal_share"] = (steal - steal0) / ((os.cpu_count() or 1)
                                                     * max(time.perf_counter() - t0, 1e-9))
        if out_csv is not None:
            write_csv(rec, out_csv)
        consumer.close()
    if error is not None:
        raise HarnessError(error + (f"; measurements so far written to {out_csv}"
                                    if out_csv is not None else ""))
    return rec


def request_counts(stats: dict[str, str]) -> tuple[float, float]:
    """(Produce requests the producer sent, Fetch requests the consumer sent) so far, from
    the clients' latest statistics (librdkafka's ``brokers.*.req``); NaN before any."""
    def count(which: str, request: str) -> float:
        if not stats[which]:
            return float("nan")
        brokers = json.loads(stats[which]).get("brokers", {}).values()
        return float(sum(b.get("req", {}).get(request, 0) for b in brokers))

    return count("producer", "Produce"), count("consumer", "Fetch")


def internal_latency(windows: list[str]) -> tuple[float, float]:
    """librdkafka's ``int_latency`` (produce() to message set) over statistics windows (the
    producer's JSON, one per ``STATS_MS``): the median over windows, and over brokers, of
    each window's p50 and p99, in seconds; NaN without a window that made a message set.
    librdkafka keeps it per broker and starts it anew each window (``rd_avg_rollover``)."""
    p50, p99 = [], []
    for js in windows:
        for b in json.loads(js).get("brokers", {}).values():
            lat = b.get("int_latency", {})
            if b.get("nodeid", -1) >= 0 and lat.get("cnt", 0) > 0:
                p50.append(lat["p50"] * 1e-6)
                p99.append(lat["p99"] * 1e-6)
    if not p50:
        return float("nan"), float("nan")
    return float(np.median(p50)), float(np.median(p99))


def _stalls_per_message(rec: np.ndarray, stalls: list[tuple[float, float]]) -> np.ndarray:
    """Per message, the longest poller stall that overlapped its publish-to-consume time."""
    out = np.zeros(rec.size)
    end = np.where(np.isfinite(rec["consume_s"]), rec["consume_s"], np.inf)
    for t, gap in stalls:
        hit = (rec["publish_s"] <= t) & (end >= t - gap)
        out[hit] = np.maximum(out[hit], gap)
    return out


def _steal_s() -> float | None:
    """CPU time the hypervisor took from this VM so far (/proc/stat ``steal``, all CPUs), or
    None where the kernel does not report it."""
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def undisturbed(rec: np.ndarray, limit_s: float) -> np.ndarray:
    """Messages whose flight no harness stall longer than ``limit_s`` overlapped (the feed's
    late wake-up for it, or the poller's stalls while it was in flight)."""
    late = np.nan_to_num(rec["publish_late_s"], nan=0.0)
    stall = np.nan_to_num(rec["stall_s"], nan=0.0)
    return (late <= limit_s) & (stall <= limit_s)


def scheduled_gaps_s(config: HarnessConfig) -> np.ndarray:
    """The feed's schedule: gap after each message (seeded, the same in every run)."""
    n = config.n_messages
    if config.feed == "poisson":
        return np.random.default_rng(config.seed).exponential(config.interval_ms / 1e3, n)
    return np.full(n, config.interval_ms / 1e3)


def write_csv(rec: np.ndarray, path: str | Path) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        for row in rec:
            w.writerow([int(row["msg"])] + [("" if np.isnan(v) else f"{v:.10g}")
                                            for v in list(row)[1:]])


# ---------------------------------------------------------------------- Go and Java harnesses
def _newest_mtime(root: Path, patterns: tuple[str, ...]) -> float:
    return max((p.stat().st_mtime for pat in patterns for p in root.rglob(pat)), default=0.0)


def _build(what: str, tool: str, cmd: list[str], cwd: Path, product: Path,
           sources: tuple[str, ...]) -> Path:
    if product.exists() and product.stat().st_mtime >= _newest_mtime(cwd, sources):
        return product
    if shutil.which(tool) is None:
        raise HarnessUnavailable(f"{tool} is not on PATH: the {what} harness "
                                 f"({cwd.relative_to(HERE.parent)}) cannot be built")
    product.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1200)
    if proc.returncode != 0 or not product.exists():
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        raise HarnessUnavailable(f"building the {what} harness failed ({' '.join(cmd)}): "
                                 + " | ".join(tail))
    return product


def build_franzgo() -> Path:
    """``go build`` the franz-go harness (once; again when its sources change)."""
    return _build("franz-go", "go", ["go", "build", "-o", str(FRANZGO_BIN), "."],
                  FRANZGO_DIR, FRANZGO_BIN, ("*.go", "go.mod", "go.sum"))


def build_javaproducer() -> Path:
    """``mvn -q -B package`` the Java producer harness (once; again when it changes)."""
    if shutil.which("java") is None:
        raise HarnessUnavailable("java is not on PATH: the Java producer harness cannot run")
    return _build("Java producer", "mvn", ["mvn", "-q", "-B", "package"], JAVA_DIR, JAVA_JAR,
                  ("*.java", "pom.xml"))


def harness_command(client: str, bootstrap: str | None, config: HarnessConfig,
                    out_csv: Path) -> list[str]:
    """The command line that runs ``config`` with the Go or Java harness (``bootstrap``
    None: the harness's own default, ``$SIMBATCH_KAFKA_BOOTSTRAP``)."""
    if config.feed != "periodic":
        raise HarnessError(f"the {client} harness feeds periodic messages only; "
                           f"got feed={config.feed!r}")
    outer = "none" if config.outer_linger_ms is None else config.outer_linger_ms
    if client == "franz-go":
        cmd = [str(build_franzgo()), "-partitions", str(config.n_partitions),
               "-replication", str(config.replication),
               "-linger", f"{config.linger_ms:g}ms",
               "-outer-linger", outer if outer == "none" else f"{outer:g}ms",
               "-outer-timer", config.outer_timer,
               "-outer-max-batch", str(config.outer_max_batch), "-n", str(config.n_messages),
               "-interval", f"{config.interval_ms:g}ms",
               "-message-bytes", str(config.message_bytes),
               "-warmup", f"{config.warmup_s:g}s",
               "-connect-timeout", f"{config.connect_timeout_s:g}s",
               "-stall-timeout", f"{config.stall_timeout_s:g}s", "-out", str(out_csv)]
        flag = "-"
    else:
        def whole(name: str, value: float) -> str:
            if value != int(value):
                raise HarnessError(f"the Java harness takes whole milliseconds; got "
                                   f"{name}={value}")
            return str(int(value))

        cmd = ["java", "-jar", str(build_javaproducer()),
               "--partitions", str(config.n_partitions),
               "--linger-ms", whole("linger_ms", config.linger_ms),
               "--outer-linger-ms", ("none" if config.outer_linger_ms is None
                                     else whole("outer_linger_ms", config.outer_linger_ms)),
               "--outer-timer", config.outer_timer,
               "--outer-max-batch", str(config.outer_max_batch), "--n", str(config.n_messages),
               "--interval-ms", whole("interval_ms", config.interval_ms),
               "--message-bytes", str(config.message_bytes),
               "--warmup-ms", whole("warmup_ms", config.warmup_s * 1e3),
               "--connect-timeout-ms", whole("connect_timeout_ms",
                                             config.connect_timeout_s * 1e3),
               "--stall-timeout-ms", whole("stall_timeout_ms", config.stall_timeout_s * 1e3),
               "--out", str(out_csv)]
        flag = "--"
    if config.label:
        cmd += [f"{flag}label", config.label]
    if bootstrap is not None:
        cmd += [f"{flag}broker", bootstrap]
    return cmd


def _run_external(bootstrap: str | None, config: HarnessConfig,
                  out_csv: str | Path | None) -> np.ndarray:
    with tempfile.TemporaryDirectory(prefix="simbatch-harness-") as tmp:
        path = Path(out_csv) if out_csv is not None else Path(tmp) / "run.csv"
        cmd = harness_command(config.client, bootstrap, config, path)
        limit = (config.connect_timeout_s + config.warmup_s + 30 + config.stall_timeout_s
                 + config.n_messages * config.interval_ms / 1e3
                 + 4 * (config.linger_ms + (config.outer_linger_ms or 0)) / 1e3)
        probe = HostProbe()
        probe.start()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            raise HarnessError(f"the {config.client} harness did not finish within "
                               f"{limit:.0f} s") from None
        finally:
            host = probe.stop()
        if proc.returncode != 0:
            lines = [ln for ln in proc.stderr.strip().splitlines() if "error:" in ln]
            raise HarnessError(lines[-1].split("error:", 1)[1].strip() if lines else
                               f"the {config.client} harness exited with "
                               f"{proc.returncode}: {proc.stderr.strip()[-500:]}")
        summary = json.loads(proc.stdout.strip().splitlines()[-1])
        if summary.get("consumed") != config.n_messages:
            raise HarnessError(f"the {config.client} harness consumed "
                               f"{summary.get('consumed')} of {config.n_messages} messages")
        rec = read_csv(path)
        rec["host_work_s"], rec["host_wake_s"], rec["host_trip_s"] = host
        if out_csv is not None:
            write_csv(rec, path)
        return rec


def read_csv(path: str | Path) -> np.ndarray:
    """A per-message CSV of any harness as a structured array with :data:`COLUMNS` (a
    column an older harness did not write stays NaN). A file that is not one is refused,
    naming it (:class:`HarnessError`)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")            # an empty file: numpy warns, then fails
            data = np.atleast_1d(np.genfromtxt(path, delimiter=",", names=True, dtype=float))
    except (ValueError, IndexError, OSError) as exc:
        reason = " ".join(str(exc).split())              # numpy's spans several lines
        raise HarnessError(f"{path}: not a harness's per-message CSV ({reason})") from None
    if data.size == 0 or "latency_s" not in (data.dtype.names or ()):
        raise HarnessError(f"{path}: not a harness's per-message CSV (no rows, or no "
                           "latency_s column)")
    rec = np.full(data.size, np.nan, dtype=[(c, "f8") for c in COLUMNS])
    for c in COLUMNS:
        if c in (data.dtype.names or ()):
            rec[c] = data[c]
    return rec
