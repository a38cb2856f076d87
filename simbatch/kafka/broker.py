"""The broker's CPU (``[broker]``): produce requests served by the broker's threads on its
cores, so that the append time follows from the queue.

A Kafka broker (``core/.../network/SocketServer.scala``, ``KafkaRequestHandler.scala``)
reads a request on one of its ``num.network.threads`` network threads, queues it for one of
its ``num.io.threads`` request-handler (I/O) threads, which appends it to the log, and sends
the response back on the network thread; a connection is muted from the moment its request
is read until its response is sent (``Processor.processCompletedReceives`` /
``processNewResponses``), so one connection's requests are served one after another. All
threads run on the machine's ``cores``: each broker's own, or, with ``colocated``, one
machine's shared by every broker (a local cluster: ``validate/kafka_replication.py`` runs
three broker JVMs on this VM's 2 vCPUs).

Here a produce request costs ``request_cpu_us + record_cpu_us x records + byte_cpu_ns x
bytes`` of CPU (plus a cold start, below), the consumer's fetch of its records included
(each was measured as the broker JVM's CPU time, ``/proc/PID/stat``, over calibration runs:
``validate/calibrate_kafka.py``). ``fetch_share`` of it is the fetch: a job on the
consumer's connection (muted too), after the append, off the producer's path; the rest is
the produce request. The consumer keeps one Fetch outstanding per broker and sends the next
only once it has handled the reply (librdkafka ``rd_kafka_broker_consumer_serve`` sends a
Fetch only while ``!rkb_fetching``, which ``rd_kafka_broker_fetch_reply`` clears), so the
appends made while a fetch is served, or while its reply and the next request are on their
way (taken as the consumer's ``fetch_ms``: the append-to-callback time it measured), are
read by one fetch: its per-request share is paid once for them all, the per-record and
per-byte shares for each. Measured (``fetch_requests``, librdkafka's statistics), 0.94
Fetch per Produce at 250 msg/s over 32 partitions and 0.68 at 2000; predicted so, with the
fitted costs below, 0.98 and 0.68 (``validate/calibrate_kafka.py``). This is the broker's CPU
only: a record still reaches the consumer ``fetch_ms`` after its producer's ack, or at it
with followers (``engine.py``).
A fetch names every partition the consumer reads from the broker, with or without new
records (librdkafka's ``rd_kafka_broker_fetch_toppars``, ``rdkafka_fetcher.c``, writes each
active partition; its ``INTRODUCTION.md`` lists KIP-227's incremental fetch sessions as not
supported), and the broker reads each: ``partition_fetch_us`` per partition named, on the I/O
thread.

Cold starts. The broker's threads park when they have nothing to do (a request handler
blocks in ``requestChannel.receiveRequest(300)``, ``KafkaRequestHandler.run``; a network
thread in its selector's poll), and a stage that starts after the broker has run no request
stage for a while costs more: the wake-up, and caches the idle spell left to other
processes (a hypothesis; what is measured is below; cf. ``[go] cold_ns``,
simbatch/batching/gocpu.py). How much grows with the idle time
(:meth:`BrokerConfig.cold_share`): nothing up to ``cold_after_us``, then in step with the
idle time, to all of ``cold_us`` ``cold_ramp_us`` later (a step at ``cold_after_us`` with
no ramp). Measured on its own (``validate/kafka_cold_start.py``, 2026-11-29: linger 0, one
partition, one request every 0.5 to 25 ms, periodic or Poisson), the request path's CPU
per produce request grows from ~260-280 us at 0.5 ms between requests to ~650-800 us at
10-25 ms: a ramp from ~1 ms of idle time to ~7 ms fits it (periodic; Poisson, slower), a
step charges 1.4-2x between 1.5 and 5 ms. The local broker's file
(``models/kafka-broker-loopback.toml``) keeps a step all the same: the calibration's ladder,
whose whole-JVM CPU its costs are fitted on, fits a step better than that ramp, and the
replication suite's sparse predictions are worse with the ramp
(``validate/broker_costs.py``'s ``COLD_AFTER_GRID_US`` has the figures).
Measured (``validate/calibrate_kafka.py``'s dense ladder, per thread from ``/proc``): the
request path's CPU per produce request falls with the rate, from 764 to 373 us between 250
and 2000 msg/s over 32 partitions, its context switches per request from 9.0 to 7.3 and its
CPU per switch from 85 to 51 us; a busy broker's stages follow one another warm. At an idle
broker every request pays one cold start (what the fitted round trip already holds, see
below).

Of each, ``network_share`` of the per-request and per-byte cost runs on a network thread,
the rest (and the per-record cost) on an I/O thread; each stage holds one thread of its
pool and one core (FIFO, :class:`~simbatch.core.pool.FifoPool`). A request's time at the
broker is its wait for the connection (muted), for a thread and a core, and its
two stages. A fetch's records are the exception (:meth:`BrokerConfig.read_stages_s`): its
I/O thread finds them in the log and hands the network thread a slice of the log's file
(``UnifiedLog.read`` returns ``FileRecords``), which the network thread writes to the
socket when it sends the reply (``DefaultRecordsSend`` -> ``FileRecords.writeTo``, the
kernel's ``sendfile``; Kafka's ``docs/implementation/network-layer.md``), so the fetch's
per-record and per-byte share runs on the network thread.

The measured round trip (``[producer] append_ms`` x a resampled ratio) was fitted on
one-record requests at an idle broker, so it already holds one such request's service and
its cold start; with the broker's CPU on, a request is answered ``append_ms x ratio`` minus
that (:meth:`BrokerConfig.idle_produce_s`) after the broker is done with it: at an idle
broker a one-record request takes exactly what it took without the CPU model, and every
record beyond, every byte and every wait adds to it (a warm start takes that much less).

Other load on the broker's cores (``[broker]``): ``background_records_per_s`` (other
clients' produce traffic on each broker, Poisson requests of
``background_records_per_request`` records, each on its own connection, at the same costs)
and ``background_cores`` (other processes on the machine: Poisson jobs of
``background_job_ms`` holding one core). ``idle_cores``: what the JVM burns besides requests
(garbage collection, the compiler, the KRaft controller), in the CPU metric only.

Replication (``replicas``, :mod:`.replication`): with followers, a request's append is
done, and its records go to the consumer's fetch, once every follower has fetched them
(the consumer's reply first: ``engine.py``).

Simplifications: the request queue's bound (``queued.max.requests``), the log's flush and
page cache are not modelled (the JVM's young collections are: ``gc.py``, a pause freezes
every stage); a network thread's share of a request is one stage before the append.

Known limits, measured on the local broker (``validate/kafka_threads.py``, 2026-11-27, 32
partitions, linger 10 ms):

* The request path's threads wait for a CPU: 505 ms per second of the run at 2000 msg/s
  (Kafka's default threads; 297 at 1000 msg/s), beside 0.59 and 0.45 cores of the broker's
  own CPU and 0.44 and 0.33 of the rest of the machine (the harness). That is ~50 us per
  context switch (9,700 and 6,600 a second, 40 % of them involuntary): many short waits,
  of the order of this host's thread wake-up (``[host] wake_us``, median ~30 us), not
  the few long ones by which the measured p99 exceeds the model's (23.6 against 16.3 ms
  at 2000 msg/s, 18.5 against 14.3 at 1000). The model's broker owns its cores
  (``background_cores`` 0; ``validate/calibrate_kafka.py`` says why).
* A stage holds a thread and a core together, so thread counts at or above the cores change
  nothing here (16.3-16.7 ms at 2000 msg/s for 3 network and 8 I/O threads or 1 and 2).
  Measured, 12 runs of each over two sessions: at 2000 msg/s, 23.6 ms with the defaults and
  38.4 with 1 and 2, five of whose runs had a p99 above 60 ms (two of the defaults'); but the
  second session alone showed no difference (23.6 and 22.9), and at 1000 msg/s there was
  none (18.5 and 18.6). One network thread with 8 I/O threads (24.6, one session) and 3
  with 2 (28.1) lay between.
* The measured p99s above were taken with the harness's ``jstat`` starting with the feed;
  its start-up (a JVM: 1.5 vCPUs for 150 ms) took the broker's CPU and delayed the feed's
  first messages by up to 100 ms (``validate/broker_jvm.py``, ``GcSampler``). With it
  started before the feed (2026-11-27, six interleaved pairs on one broker, medians): 21.3
  -> 20.3 ms at 2000 msg/s (model 16.3), 20.5 -> 16.8 at 1000 (model 14.3). What remains
  is mostly the JVM's pauses: in six more runs at 2000 msg/s with ``-Xlog:safepoint``, most
  of the slow 1 % overlapped a young collection or a Remark in five (the two runs with 3
  and 4 Remarks read 26 ms, the four with 0 or 1 17.3-21 ms); in the sixth, 61 slow
  messages in 25 ms overlapped none, with the harness's own poller stalled 5 ms.
* A request's cost is linear in its records here, at the record cost measured on requests
  of 400-4,000 records (``validate/kafka_record_cost.py``: the JVM's CPU less its
  compiler's and collector's, 0.57-0.91 us per 256-byte record in three sessions of
  2026-11-28), while requests of half a G1 region or more are humongous objects whose cost
  to the collector depends on the heap's state (0.35-0.56 cores at 10 requests/s of
  0.65-1.3 MB in one session of four, ~0-0.1 in the others and after a fresh broker's
  first rounds, 0.06-0.6 in such rounds later the same day), which the model leaves out.
* A cold start is the broker's here, but the broker's threads start cold each: its request
  handlers take requests from one queue in turn, so a sparse feed (one message every 25 ms)
  gives each request a handler idle some 60 ms, and on a cluster of three at replication 3
  the followers' next Fetches, which the model handles warm right after the produce
  request, cost the leader 360-390 us of a handler's CPU as every request there does
  (``validate/kafka_handlers.py``, 2026-12-06; the model's warm fetch ~55 us at that host's
  speed): ~0.3 ms of the follower round the model lacks
  (``validate/kafka_replication.py``, "What the costs' speed holds").
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Annotated

import numpy as np
import simpy

from ..core.config import NONE_WORD, Bool, Cores, Float, NonNeg, PosFloat, PosInt, Rule, at, config
from ..core.pool import FifoPool
from .clock import ticks
from .gc import Collector
from .replication import Commit, ReplicaLink, wake


@config
class BrokerConfig:
    """The broker's CPU (``[broker]``, module docstring); ``cores = "none"`` (the default):
    no CPU model, the fitted round trip alone.

    Examples
    --------
    >>> cpu = BrokerConfig(cores=2, request_cpu_us=300, record_cpu_us=2)
    >>> round(cpu.service_s(10, 3000) * 1e6), round(cpu.produce_s(10, 3000) * 1e6)   # us
    (320, 160)
    """

    cores: Annotated[Cores | None, NONE_WORD] = None
    replicas: Annotated[PosInt, at.Le(100)] = 1
    colocated: Bool = False
    network_threads: PosInt = 3
    io_threads: PosInt = 8
    request_cpu_us: NonNeg = 0.0
    record_cpu_us: NonNeg = 0.0
    byte_cpu_ns: NonNeg = 0.0
    cold_us: NonNeg = 0.0
    cold_after_us: PosFloat = 1000.0
    cold_ramp_us: NonNeg = 0.0
    follower_cold_us: Annotated[NonNeg | None, NONE_WORD] = None
    partition_fetch_us: NonNeg = 0.0
    network_share: Annotated[Float, at.Ge(0), at.Le(1)] = 0.5
    fetch_share: Annotated[Float, at.Ge(0), at.Lt(1)] = 0.5
    idle_cores: NonNeg = 0.0
    background_records_per_s: NonNeg = 0.0
    background_records_per_request: PosInt = 100
    background_cores: NonNeg = 0.0
    background_job_ms: PosFloat = 1.0
    RULES = (Rule("background_cores", "below cores (the broker needs some of them)",
                  lambda b: b.cores is None or b.background_cores < b.cores),)

    @property
    def on(self) -> bool:
        return self.cores is not None

    def stages_s(self, records: int, n_bytes: float,
                 share: float = 1.0) -> tuple[float, float]:
        """(network-thread seconds, I/O-thread seconds) of ``share`` of a request's cost."""
        shared = (self.request_cpu_us * 1e-6 + self.byte_cpu_ns * 1e-9 * n_bytes) * share
        network = self.network_share * shared
        return network, shared - network + self.record_cpu_us * 1e-6 * records * share

    def read_stages_s(self, records: int, n_bytes: float) -> tuple[float, float]:
        """(network-thread seconds, I/O-thread seconds) of a fetch that reads ``records``
        (``fetch_share`` of their request's cost): its records' and bytes' share on the
        network thread, which sends them (module docstring).

        >>> cpu = BrokerConfig(cores=2, request_cpu_us=300, record_cpu_us=2)
        >>> [round(s * 1e6) for s in cpu.read_stages_s(10, 3000)]   # us
        [85, 75]
        """
        share = self.fetch_share
        request = self.request_cpu_us * 1e-6 * share
        network = self.network_share * request
        data = (self.byte_cpu_ns * 1e-9 * n_bytes + self.record_cpu_us * 1e-6 * records) * share
        return network + data, request - network

    def service_s(self, records: int, n_bytes: float) -> float:
        """CPU seconds of a request of ``records`` records and ``n_bytes`` bytes, its fetch
        included."""
        network, io = self.stages_s(records, n_bytes)
        return network + io

    def produce_s(self, records: int, n_bytes: float) -> float:
        """CPU seconds of the produce request alone (on the producer's connection)."""
        return self.service_s(records, n_bytes) * (1.0 - self.fetch_share)

    def cold_share(self, idle_us: float) -> float:
        """The share of ``cold_us`` a stage pays after ``idle_us`` with no request stage
        running: none up to ``cold_after_us``, then growing in step with the idle time
        over ``cold_ramp_us`` to all of it (a step at ``cold_after_us`` when the ramp is 0).

        >>> cfg = BrokerConfig(cold_us=400, cold_after_us=500, cold_ramp_us=2000)
        >>> [cfg.cold_share(t) for t in (400, 500, 1500, 2500, 9000)]
        [0.0, 0.0, 0.5, 1.0, 1.0]
        """
        beyond = idle_us - self.cold_after_us
        if beyond <= 0:
            return 0.0
        if beyond >= self.cold_ramp_us:
            return 1.0
        return beyond / self.cold_ramp_us

    def idle_produce_s(self, records: int, n_bytes: float) -> float:
        """Seconds the produce request alone takes at an idle, cold broker (its stages'
        CPU and one cold start): what the fitted round trip already holds."""
        return self.produce_s(records, n_bytes) + self.cold_us * 1e-6


class Broker:
    """One broker's threads and cores; ``submit(records, bytes, done)`` serves a request and
    calls ``done()`` when the broker is through with it."""

    def __init__(self, env: simpy.Environment, config: BrokerConfig,
                 rng: np.random.Generator | None = None, gc: Collector | None = None,
                 turnaround: float = 0.0, fetch_partitions: int = 1,
                 cores: FifoPool | None = None) -> None:
        assert config.cores is not None
        self.env = env
        self.config = config
        # one machine's cores, shared, when colocated
        self.cores = cores if cores is not None else FifoPool(env, config.cores)
        self.network = FifoPool(env, config.network_threads)
        self.io = FifoPool(env, config.io_threads)
        self.cpu_s = 0.0                    # broker work (requests), seconds
        self.rng = rng
        self._fetches: deque[tuple[int, float]] = deque()     # the consumer's connection
        self._fetching = False
        self.turnaround = turnaround        # clock units: a reply's way back and the next's
        self.fetches = 0                    # the consumer's fetches served
        self.fetch_partitions = fetch_partitions   # partitions each fetch names
        self.cold_starts = 0.0              # cold starts paid (a share counts its share)
        self._running = 0                   # request stages on a core now
        self._idle_since = -np.inf          # when the last one ended (clock units)
        self.gc = gc                        # young pauses freeze every stage (gc.py)
        self.links: list[ReplicaLink] = []  # its followers' fetch loops (replication.py)

    def follow(self, followers: list[Broker], turnaround: float) -> None:
        """Let ``followers`` replicate this broker's appends (:mod:`.replication`)."""
        self.links = [ReplicaLink(self, f, turnaround) for f in followers]

    def submit(self, records: int, n_bytes: float, done: Callable[[], None]) -> None:
        """Serve a produce request; ``done()`` when its append is through (then its
        records' fetch queues on the consumer's connection)."""
        cfg = self.config
        network, io = cfg.stages_s(records, n_bytes, 1.0 - cfg.fetch_share)
        self.cpu_s += network + io

        def committed() -> None:
            if cfg.fetch_share > 0:
                self._fetches.append((records, n_bytes))
                if not self._fetching:
                    self._fetch_next()
            done()

        def appended() -> None:
            if self.links:
                wake(self.links, records, n_bytes, Commit(len(self.links), committed))
            else:
                committed()

        self.stage(self.network, ticks(network),
                   lambda: self.stage(self.io, ticks(io), appended))

    def _fetch_next(self) -> None:
        """One fetch for every append waiting for the consumer (module docstring)."""
        records, n_bytes = 0, 0.0
        while self._fetches:
            r, b = self._fetches.popleft()
            records += r
            n_bytes += b
        network, io = self.config.read_stages_s(records, n_bytes)
        io += self.config.partition_fetch_us * 1e-6 * self.fetch_partitions
        self.cpu_s += network + io
        self.fetches += 1
        self._fetching = True

        def back(_event: simpy.Event | None = None) -> None:
            self._fetching = False
            if self._fetches:
                self._fetch_next()

        def fetched() -> None:
            if self.turnaround > 0:
                self.env.timeout(self.turnaround).callbacks.append(back)
            else:
                back()

        self.stage(self.network, ticks(network),
                   lambda: self.stage(self.io, ticks(io), fetched))

    def stage(self, threads: FifoPool, duration: float, then: Callable[[], None],
              cold_us: float | None = None) -> None:
        """Run ``duration`` (clock units) on one of ``threads`` and one core, FIFO, then
        ``then()``; a cold start there costs ``cold_us`` (None: ``[broker] cold_us``)."""
        def on_thread() -> None:
            self.cores.acquire(on_core)

        def on_core() -> None:
            run = duration + self._cold(cold_us)
            self._running += 1
            if self.gc is not None:
                self.gc.run_after(run, lambda: finish(None))
            else:
                self.env.timeout(run).callbacks.append(finish)

        def finish(_event: simpy.Event | None) -> None:
            self._running -= 1
            if self._running == 0:
                self._idle_since = self.env.now
            self.cores.release()
            threads.release()
            then()

        threads.acquire(on_thread)

    def _cold(self, cold_us: float | None = None) -> float:
        """The extra time of a stage starting now: :meth:`BrokerConfig.cold_share` of
        ``cold_us`` (None: ``[broker] cold_us``) for the time no request stage has run
        (module docstring)."""
        if self._running:
            return 0.0
        share = self.config.cold_share(self.env.now - self._idle_since)
        if share == 0.0:
            return 0.0
        cost = share * (self.config.cold_us if cold_us is None else cold_us) * 1e-6
        self.cold_starts += share
        self.cpu_s += cost
        return ticks(cost)

    def start_background(self, record_bytes: float) -> None:
        """Start the other load (module docstring), drawn from ``rng``."""
        cfg = self.config
        if cfg.background_records_per_s > 0:
            rate = cfg.background_records_per_s / cfg.background_records_per_request
            n = cfg.background_records_per_request
            self.env.process(self._poisson(rate, lambda: self._background_request(
                n, n * record_bytes)))
        if cfg.background_cores > 0:
            job = ticks(cfg.background_job_ms / 1e3)
            rate = cfg.background_cores / (cfg.background_job_ms / 1e3)
            self.env.process(self._poisson(rate, lambda: self.cores.acquire(
                lambda: self.env.timeout(job).callbacks.append(
                    lambda _e: self.cores.release()))))

    def _background_request(self, records: int, n_bytes: float) -> None:
        """Another client's request, on its own connection, its fetch included."""
        network, io = self.config.stages_s(records, n_bytes)
        self.cpu_s += network + io
        if self.gc is not None:
            self.gc.request_read()
        then: Callable[[], None] = _nothing
        if self.links:                  # its followers fetch it too (nobody waits)
            def then() -> None:
                wake(self.links, records, n_bytes, None)

        self.stage(self.network, ticks(network),
                   lambda: self.stage(self.io, ticks(io), then))

    def _poisson(self, rate_per_s: float, arrive: Callable[[], None]):
        assert self.rng is not None
        mean = 1.0 / rate_per_s
        while True:
            gaps = self.rng.exponential(mean, 1024)
            for gap in gaps:
                yield self.env.timeout(ticks(float(gap)))
                arrive()

    def cpu_cores(self, span_s: float) -> float:
        """Cores the broker's JVM kept busy over ``span_s`` seconds (requests and idle)."""
        return self.cpu_s / span_s + self.config.idle_cores if span_s > 0 else float("nan")


def _nothing() -> None:
    return None


__all__ = ["Broker", "BrokerConfig"]
