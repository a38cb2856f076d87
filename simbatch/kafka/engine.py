"""The Kafka pipeline's engine: feed -> outer batcher -> producer client -> broker -> consumer.

Predicts publish-to-consume latency per message, the figure users measure (teranode's
``linger_latency_regression_test.go``: consumer-callback time minus publish time, percentile
= ``sorted[floor((n - 1) p)]``, which is numpy's ``method="lower"``), and what the producer
and the broker see on the way (:mod:`.metrics`).

Sections: ``[workload]`` (the feed: gaps or rates, producers, steps, bursts; :mod:`.feeds`),
``[outer]`` (:mod:`.outer_batcher`), ``[producer]`` (the client and the topic;
:mod:`.producer`), ``[consumer]``, ``[broker]`` (its CPU; :mod:`.broker`) and
``[simulation]`` (per batch or per message; :mod:`.aggregate`).

The consumer subscribed before producing: an appended record reaches the consumer callback
``fetch_ms`` after its producer's ack (a long-poll fetch returns as soon as data is there),
never before an earlier record of its partition. With followers (``[broker] replicas`` above
1, the broker's CPU on), at its producer's ack: the high watermark's move completes the
partition's parked Fetches, then its parked Produce requests (Kafka's ``Partition.scala``,
``DelayedOperations.checkAndCompleteAll``: ``fetch``, then ``produce``), and both replies
take the same way to their clients; at one replica the Produce is answered by its own
request's handler and the parked Fetch only in the ``finally`` after it
(``KafkaApis.handle`` -> ``ReplicaManager.tryCompleteActions``), which ``fetch_ms`` holds.
Measured (2026-12-06, ``validate/kafka_replication.py``, four sessions): consume minus ack,
median, +0.11 to +0.26 ms at one replica and -0.01 to -0.09 at three, on its three
configurations. Known limit: at three the two replies do not take the same way. On the
wire (``validate/kafka_wire.py``, 2026-12-07) the leader sent the consumer's reply 0.01-0.29
ms before the produce reply (in about 60 % of messages the produce reply held 0.3-0.4 ms),
and the clients' own ways put the consumer 0.04-0.14 ms back behind; the model has
neither, so it reads 0 where franz-go's consumer reads 0.03-0.18 ms ahead.

Keys: message i has key ``k-<case name>-<i>`` (the harnesses' ``k-<label>-<i>``), placed by
the client's own partitioner (``partitioners``, in bulk ``keys``); keyless messages
(``keyed = false``) by the client's sticky choice when they reach it. Each producer has its
own outer batcher, client and connections; the brokers (and their CPU) are shared.

The clock counts whole microseconds (``clock.py``), so events due at one instant coincide.

Random streams: ``feed`` (Poisson gaps), ``append`` (the round trip's noise), ``fetch``
(the consumer's fetch noise), ``partition`` (sticky choices for keyless records), ``broker``
(the broker's background load), each its own; producer k > 0 draws from its own
``append-k``, ``fetch-k`` and ``partition-k``.

Frames: ``messages`` (``msg``; ``producer``; ``partition``; ``request`` that carried it;
``t_publish_s``; ``t_produce_s`` (handed to the client); ``t_ack_s``; ``t_consume_s``;
``latency_s``; ``publish_order``, ``append_order``: its rank among publishes and appends)
and ``requests`` (``request``; ``broker``; ``n_records``; ``t_sent_s``; ``t_acked_s``;
``append_s`` = acked - sent). Seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
import pandas as pd
import simpy

from ..core.config import Field, Float, NonNeg, Rule, at, config
from ..core.engine import CaseBase, PlotSpec, Run, register
from ..core.errors import check_int, fail
from ..core.pool import FifoPool
from ..core.streams import streams
from ..core.work import Bounds, Work
from . import metrics as km
from .aggregate import AggregatedOuter, Instants, SimulationConfig, aggregated_feed
from .broker import Broker, BrokerConfig
from .client import Client
from .clock import S_PER_TICK, Arrival, ticks
from .feeds import Arrivals, KafkaWorkload, RateStep, arrivals
from .franz_go import FranzGo
from .gc import Collector, GcConfig
from .java_producer import JavaProducer
from .keys import key_partitions
from .librdkafka import Librdkafka
from .outer_batcher import OuterBatcher, OuterBatcherConfig
from .producer import KafkaProducerConfig

STREAMS = ("feed", "append", "fetch", "partition", "broker", "gc")
CLIENTS: dict[str, type[Client]] = {"franz-go": FranzGo, "librdkafka": Librdkafka,
                                    "java": JavaProducer}
"""The client model of each ``[producer] semantics``."""
METRICS = km.METRICS
latency_metrics = km.latency_metrics

__all__ = ["CLIENTS", "ENGINE", "METRICS", "ConsumerConfig", "KafkaCase", "KafkaRun",
           "KafkaWorkload", "RateStep", "latency_metrics", "simulate"]


@config
class ConsumerConfig:
    """``fetch_ms``: median time from a request's append to the consumer callback;
    ``fetch_ratios``: measured fetch time / median, resampled per request (empty =
    constant). ``[consumer]``."""

    fetch_ms: NonNeg = 1.0
    fetch_ratios: tuple[Annotated[Float, at.Gt(0)], ...] = ()


@config
class KafkaCase(CaseBase):
    """One Kafka configuration: feed, outer batcher, client and topic, consumer, broker.

    Examples
    --------
    >>> run = simulate(KafkaCase(workload=KafkaWorkload(n_messages=5)), seed=1)
    >>> bool((run.latency_s > 0.010).all())   # at least the 10 ms outer linger
    True
    """

    workload: KafkaWorkload = Field(default_factory=KafkaWorkload)
    outer: OuterBatcherConfig = Field(default_factory=OuterBatcherConfig)
    producer: KafkaProducerConfig = Field(default_factory=KafkaProducerConfig)
    consumer: ConsumerConfig = Field(default_factory=ConsumerConfig)
    broker: BrokerConfig = Field(default_factory=BrokerConfig)
    gc: GcConfig = Field(default_factory=GcConfig)
    simulation: SimulationConfig = Field(default_factory=SimulationConfig)

    RULES = (Rule("broker.replicas", "at most producer.n_brokers (a partition's replicas "
                  "are on different brokers)",
                  lambda c: c.broker.replicas <= c.producer.n_brokers),)

    @property
    def aggregated(self) -> bool:
        """Whether this case runs per batch (:mod:`.aggregate`)."""
        return (self.simulation.aggregate == "auto" and self.workload.feed != "closed_loop"
                and not self.gc.on
                and (self.outer.linger_ms is None or ticks(self.outer.effective_linger_s) > 0))


@dataclass
class KafkaRun(Run):
    """Per-message and per-request records of one replication (times in seconds)."""

    publish_s: np.ndarray = None  # type: ignore[assignment]
    consume_s: np.ndarray = None  # type: ignore[assignment]
    produce_s: np.ndarray = None  # type: ignore[assignment]
    partition: np.ndarray = None  # type: ignore[assignment]
    request: np.ndarray = None  # type: ignore[assignment]
    append_order: np.ndarray = None  # type: ignore[assignment]
    publish_order_: np.ndarray | None = None
    producer: np.ndarray | None = None
    request_broker: np.ndarray = None  # type: ignore[assignment]
    request_records: np.ndarray = None  # type: ignore[assignment]
    request_sent_s: np.ndarray = None  # type: ignore[assignment]
    request_acked_s: np.ndarray = None  # type: ignore[assignment]
    outer_flushes: int = 0
    requests: int = 0
    end_s: float = 0.0
    broker_cpu_s: float = float("nan")
    broker_fetches: int = 0
    broker_cold_starts: float = 0.0
    replica_fetches: int = 0
    """The followers' Fetches that carried records (``[broker] replicas``; 0 without)."""
    gc_youngs: int = 0
    """The broker JVMs' young collections over the run (``[gc]``; 0 without it)."""
    gc_remarks: int = 0
    """Their marking cycles' Remark stops."""
    gc_alloc_mb: float = 0.0
    """What they allocated (MB)."""

    @property
    def latency_s(self) -> np.ndarray:
        return self.consume_s - self.publish_s

    @property
    def publish_order(self) -> np.ndarray:
        """Each message's rank among publishes."""
        if self.publish_order_ is None:
            return np.arange(self.publish_s.size)
        return self.publish_order_

    @property
    def ack_s(self) -> np.ndarray:
        """Each message's acknowledgement (its request's answer)."""
        return self.request_acked_s[self.request]

    def _frames(self) -> dict[str, pd.DataFrame]:
        n = self.publish_s.size
        messages = pd.DataFrame({
            "msg": np.arange(n),
            "producer": self.producer if self.producer is not None else np.zeros(n, int),
            "partition": self.partition, "request": self.request,
            "t_publish_s": self.publish_s, "t_produce_s": self.produce_s,
            "t_ack_s": self.ack_s, "t_consume_s": self.consume_s,
            "latency_s": self.latency_s, "publish_order": self.publish_order,
            "append_order": self.append_order})
        requests = pd.DataFrame({
            "request": np.arange(self.request_sent_s.size), "broker": self.request_broker,
            "n_records": self.request_records, "t_sent_s": self.request_sent_s,
            "t_acked_s": self.request_acked_s,
            "append_s": self.request_acked_s - self.request_sent_s})
        return {"messages": messages, "requests": requests}


def simulate(case: KafkaCase, seed: int = 0, *, bounds: Bounds | None = None) -> KafkaRun:
    """Run the Kafka pipeline once with ``seed`` (the run's own seed); see the module
    docstring. Every timer here fires once per message, batch or request, so ``bounds`` has
    nothing to guard while the run goes: the work estimate bounds it."""
    if not isinstance(case, KafkaCase):
        raise fail("simulate", "case", "a simbatch.kafka.KafkaCase", type(case).__name__)
    check_int("simulate", "seed", seed)
    return _Simulation(case, seed).run()


class _Simulation:
    """One run: the records, the components and their wiring."""

    def __init__(self, case: KafkaCase, seed: int) -> None:
        self.case, self.seed = case, seed
        self.rngs = streams(seed, STREAMS)
        self.env = simpy.Environment()
        wl, cfg = case.workload, case.producer
        self.arrivals: Arrivals | None = None
        if wl.feed != "closed_loop":
            self.arrivals = arrivals(wl, cfg.n_partitions, self.rngs["feed"])
            n = self.arrivals.n
        else:
            n = wl.count_hint
        self.n = n
        # clock units until the run ends, then seconds (in place: 13M messages are ~100 MB
        # per array)
        self.publish = (self.arrivals.ticks if case.aggregated and self.arrivals is not None
                        else np.full(n, np.nan))
        self.consume = np.full(n, np.nan)
        self.produced = np.full(n, np.nan)
        self.carried = np.full(n, -1, np.int32 if n < 2**31 else np.int64)
        self.order = np.full(n, -1, np.int32 if n < 2**31 else np.int64)
        self.publish_order = None if case.aggregated else np.full(n, -1, np.int64)
        if wl.keyed:     # the client writes each record's partition: for keys, these
            self.keyed = key_partitions(cfg.semantics, case.name, n, cfg.n_partitions)
            self.parts = self.keyed
        else:
            self.keyed = np.full(n, -1, np.int64)
            self.parts = np.full(n, -1, np.int64)
        self.last_consume = np.zeros(cfg.n_partitions)          # clock units (us)
        self.fetch_s = case.consumer.fetch_ms / 1e3
        # with followers the consumer's Fetch is completed with the producer's (docstring)
        self.fetch_after_ack = case.broker.cores is None or case.broker.replicas == 1
        self.fetch_ratios = np.asarray(case.consumer.fetch_ratios, float)
        self.acked: dict[int, simpy.Event] = {}
        self.appended = 0
        self.published = 0
        self.flushes = 0
        self.all_done = self.env.event()
        self.gcs = ([Collector(self.env, case.gc, self.rngs["gc"])
                     for _ in range(cfg.n_brokers)] if case.gc.on else None)
        if self.gcs is not None:       # each fetch's append time; the consumer's fetch in flight
            self.fetch_from = np.full(n, np.nan)
            self.fetch_due = np.full(n, np.nan)
            self.fetching_until = [0.0] * cfg.n_brokers
        self.brokers = self._brokers()
        self.client_rngs = [self._producer_streams(k) for k in range(wl.producers)]
        self.clients = [self._client(k) for k in range(wl.producers)]

    def _brokers(self) -> list[Broker] | None:
        bc = self.case.broker
        if bc.cores is None:
            return None
        turnaround = ticks(self.case.consumer.fetch_ms / 1e3)   # the consumer's next fetch
        machine = FifoPool(self.env, bc.cores) if bc.colocated else None   # shared cores
        out = [Broker(self.env, bc, self.rngs["broker"], self.gcs[b] if self.gcs else None,
                      turnaround, fetch_partitions=self._fetch_partitions, cores=machine)
               for b in range(self.case.producer.n_brokers)]
        n = len(out)
        for b, broker in enumerate(out):     # partition p's followers (replication.py)
            broker.follow([out[(b + i) % n] for i in range(1, bc.replicas)], turnaround)
            broker.start_background(self._record_bytes)
        return out

    @property
    def _fetch_partitions(self) -> int:
        """Partitions the consumer's fetch names on each broker (every one it reads there:
        librdkafka keeps no incremental fetch session, ``broker.py``)."""
        return -(-self.case.producer.n_partitions // self.case.producer.n_brokers)

    @property
    def _record_bytes(self) -> int:
        return self.case.workload.message_bytes + self.case.producer.record_overhead_bytes

    def _producer_streams(self, k: int) -> dict[str, np.random.Generator]:
        """Producer k's own ``append``, ``fetch`` and ``partition`` streams (producer 0's
        are the run's): adding a producer changes no other producer's draws."""
        if k == 0:
            return self.rngs
        return streams(self.seed, tuple(f"{name}-{k}" for name in
                                        ("append", "fetch", "partition")))

    def _stream(self, k: int, name: str) -> np.random.Generator:
        return self.client_rngs[k][name if k == 0 else f"{name}-{k}"]

    def _client(self, k: int) -> Client:
        size = self.case.workload.message_bytes
        return CLIENTS[self.case.producer.semantics](
            self.env, self.case.producer, keyed_partition=self.keyed,
            value_bytes=lambda _m: size,
            on_append=lambda records, now, request: self._on_append(records, now, request, k),
            append_rng=self._stream(k, "append"), partition_rng=self._stream(k, "partition"),
            partition_out=self.parts, produce_out=self.produced, brokers=self.brokers,
            record_bytes=self._record_bytes, gcs=self.gcs)

    # ------------------------------------------------------------------ the consumer
    def _on_append(self, records: np.ndarray, now: float, request: int, k: int = 0) -> None:
        due = now
        if self.fetch_after_ack:
            fetch = self.fetch_s
            if self.fetch_ratios.size:
                pick = int(self._stream(k, "fetch").integers(self.fetch_ratios.size))
                fetch *= self.fetch_ratios[pick]
            due = now + ticks(fetch)
        if self.gcs is not None:
            self._fetch_gc(records, now, due, request, k)
        k = records.size
        if k == 1:
            msg = int(records[0])
            p = self.parts[msg]
            # a consumer reads a partition in order: never before an earlier record of it
            self.last_consume[p] = max(due, self.last_consume[p])
            self.consume[msg] = self.last_consume[p]
        else:
            parts = self.parts[records]
            at = np.maximum(due, self.last_consume[parts])
            self.consume[records] = at
            self.last_consume[parts] = at
        self.carried[records] = request
        self.order[records] = np.arange(self.appended, self.appended + k)
        self.appended += k
        if self.acked:
            for msg in records.tolist():
                waiter = self.acked.pop(msg, None)
                if waiter is not None:
                    waiter.succeed()
        if self.appended == self.n:
            self.all_done.succeed()

    def _fetch_gc(self, records: np.ndarray, now: float, due: float, request: int,
                  k: int) -> None:
        """The young collections' share of a fetch (``gc.py``): the consumer's fetch, unless
        one is in flight on this broker, uses eden for every partition it names; its
        records' consume times are set at the end of the run, when every pause is known."""
        assert self.gcs is not None
        broker = self.clients[k].request_broker[request]
        if now >= self.fetching_until[broker]:
            self.gcs[broker].allocate(self.case.gc.partition_fetch_kb * self._fetch_partitions)
            self.fetching_until[broker] = due
        self.fetch_from[records] = now
        self.fetch_due[records] = due

    def _consume_after_pauses(self) -> None:
        """Each fetch takes its time in its broker's unpaused time; a partition's records
        stay in order (the same rule as ``_on_append``, on the unpaused clock)."""
        assert self.gcs is not None
        done = np.flatnonzero(np.isfinite(self.fetch_from))
        if done.size == 0:
            return
        owner = np.asarray(self.parts)[done]
        brokers = owner % self.case.producer.n_brokers
        start, due = self.fetch_from[done], self.fetch_due[done]
        raw = np.empty(done.size)
        for b, gc in enumerate(self.gcs):
            on = brokers == b
            u0 = gc.unpaused_clock(start[on])
            # never before the append (a zero-length fetch at a pause's end)
            raw[on] = np.maximum(start[on], gc.wall_clock(u0 + (due[on] - start[on])))
        # in append order, a partition's consume times never go back
        order = np.argsort(self.order[done], kind="stable")
        frame = pd.DataFrame({"p": owner[order], "t": raw[order]})
        self.consume[done[order]] = frame.groupby("p")["t"].cummax().to_numpy()

    # ------------------------------------------------------------------ the feed
    def _stamp(self, msg: int) -> None:
        self.publish[msg] = self.env.now
        if self.publish_order is not None:
            self.publish_order[msg] = self.published
        self.published += 1

    def _count_flush(self, _size: int, _now: float) -> None:
        self.flushes += 1

    def _wire(self) -> None:
        env, case, arr = self.env, self.case, self.arrivals
        if case.aggregated:
            assert arr is not None
            self.published = self.n
            if case.outer.linger_ms is None:
                ids = np.arange(self.n)
                env.process(aggregated_feed(env, ids, arr.ticks, arr.fresh, arr.producer,
                                            self.clients))
                return
            instants = Instants(env)          # the producers' wake-ups, in order
            for k, client in enumerate(self.clients):
                mine = np.flatnonzero(arr.producer == k) if len(self.clients) > 1 else \
                    np.arange(self.n)
                AggregatedOuter(env, case.outer, client, mine, arr.ticks[mine],
                                self._count_flush, instants).start()
            return
        sinks = []
        for client in self.clients:
            if case.outer.linger_ms is None:
                sinks.append(client.produce)
            else:
                outer = OuterBatcher(env, case.outer, client.produce, self._count_flush)
                outer.start()
                sinks.append(outer.publish)
        if arr is None:
            env.process(self._closed_loop(sinks))
        else:
            env.process(self._open_loop(arr, sinks))

    def _open_loop(self, arr: Arrivals, sinks):
        env = self.env
        t, producer = arr.ticks, arr.producer
        for msg in range(self.n):
            if t[msg] > env.now:
                yield Arrival(env, t[msg])
            self._stamp(msg)
            sinks[int(producer[msg])](msg)

    def _closed_loop(self, sinks):
        env, wl, n = self.env, self.case.workload, self.n
        gap = ticks(wl.gap_s)

        def sender(first: int):
            sink = sinks[first % len(sinks)]
            for msg in range(first, n, wl.senders):
                waiter = self.acked[msg] = env.event()
                self._stamp(msg)
                sink(msg)
                yield waiter
                if gap:
                    yield env.timeout(gap)
        yield env.all_of([env.process(sender(s)) for s in range(min(wl.senders, n))])

    # ------------------------------------------------------------------ the run
    def run(self) -> KafkaRun:
        self._wire()
        if self.n:
            self.env.run(until=self.all_done)
        if self.gcs is not None:
            self._consume_after_pauses()
        clients = self.clients

        def joined(name: str, dtype: Any) -> np.ndarray:
            arrays = [np.frombuffer(getattr(c, name), dtype) for c in clients]
            return np.concatenate(arrays) if len(arrays) > 1 else arrays[0].copy()

        offsets = np.cumsum([0] + [c.requests for c in clients])[:-1]
        request = self.carried
        if len(clients) > 1:       # request ids per client -> one numbering
            owner = self.arrivals.producer if self.arrivals is not None else \
                np.arange(self.n) % self.case.workload.senders % len(clients)
            request = self.carried + offsets[owner]
        end = self.env.now
        cpu = sum(b.cpu_s for b in self.brokers) if self.brokers else float("nan")
        for times in (self.publish, self.consume, self.produced):
            times *= S_PER_TICK
        producer = None
        if len(clients) > 1:
            producer = (self.arrivals.producer.astype(np.int64) if self.arrivals is not None
                        else np.arange(self.n) % self.case.workload.senders % len(clients))
        return KafkaRun(
            case=self.case, seed=self.seed, publish_s=self.publish,
            consume_s=self.consume, produce_s=self.produced,
            partition=self.parts, request=request, append_order=self.order,
            publish_order_=self.publish_order, producer=producer,
            request_broker=joined("request_broker", np.int64),
            request_records=joined("request_records", np.int64),
            request_sent_s=joined("request_sent", np.float64),
            request_acked_s=joined("request_acked", np.float64),
            outer_flushes=self.flushes, requests=sum(c.requests for c in clients),
            end_s=float(end) * S_PER_TICK, broker_cpu_s=cpu,
            broker_fetches=sum(b.fetches for b in self.brokers) if self.brokers else 0,
            broker_cold_starts=sum(b.cold_starts for b in self.brokers) if self.brokers else 0.0,
            replica_fetches=sum(link.fetches for b in self.brokers or () for link in b.links),
            gc_youngs=sum(g.youngs for g in self.gcs or ()),
            gc_remarks=sum(g.remark_stops for g in self.gcs or ()),
            gc_alloc_mb=sum(g.allocated_kb for g in self.gcs or ()) / 1024)


class KafkaEngine:
    """The engine of ``[scenario] kind = "kafka"``."""

    kind = "kafka"
    case_type = KafkaCase
    metrics = METRICS
    report_metrics = ("latency_p50_s", "latency_p99_s", "latency_max_s", "requests")
    headline = ("latency_p50_s", "latency_p99_s", "latency_max_s", "requests",
                "records_per_request", "outer_flushes")
    plots = (PlotSpec("cdf"),
             PlotSpec("percentiles", "producer.n_partitions", ("latency_p50_s",
                                                               "latency_p99_s")))

    def simulate(self, case: KafkaCase, seed: int, *, bounds: Bounds | None = None
                 ) -> KafkaRun:
        return simulate(case, seed, bounds=bounds)

    def run_metrics(self, run: KafkaRun) -> dict[str, float]:
        m = km.latency_metrics(run.latency_s)
        m.update(self._producer_metrics(run))
        n = run.publish_s.size
        m["requests"] = float(run.requests)
        m["records_per_request"] = n / run.requests if run.requests else float("nan")
        m["outer_flushes"] = float(run.outer_flushes)
        m["duration_s"] = float(run.end_s)
        m["throughput_msgs_per_s"] = n / run.end_s if run.end_s > 0 else float("nan")
        m["broker_cpu_cores"] = (run.broker_cpu_s / run.end_s + run.case.broker.idle_cores
                                 if run.end_s > 0 and np.isfinite(run.broker_cpu_s) else 0.0)
        return m

    @staticmethod
    def _producer_metrics(run: KafkaRun) -> dict[str, float]:
        ack = run.ack_s
        request = run.request_acked_s - run.request_sent_s
        k = run.case.workload.producers
        m: dict[str, float] = {}
        for name, start in (("producer", run.publish_s), ("client", run.produce_s)):
            waited = ack - start
            m[f"{name}_latency_p50_s"] = km.quantile(waited, 0.5)
            m[f"{name}_latency_p99_s"] = km.quantile(waited, 0.99)
            del waited
        m["request_latency_p50_s"] = km.quantile(request, 0.5)
        m["request_latency_p99_s"] = km.quantile(request, 0.99)
        m["request_latency_max_s"] = float(request.max()) if request.size else float("nan")
        m["request_latency_p99_dash_s"] = km.histogram_quantile(0.99, request)
        m["request_latency_p99_dash_mean_s"], m["request_latency_p99_dash_max_s"] = \
            km.dashboard_quantile(0.99, run.request_acked_s, request)
        span = run.end_s
        m["outer_buffered_mean"], m["outer_buffered_max"] = km.per_producer(
            run.producer, k, run.publish_s, run.produce_s, span)
        m["outer_gauge_mean"], m["outer_gauge_max"] = km.gauge_per_producer(
            run.producer, k, run.publish_s, run.produce_s)
        m["client_buffered_mean"], m["client_buffered_max"] = km.per_producer(
            run.producer, k, run.produce_s, ack, span)
        return m

    def pool(self, run: KafkaRun) -> dict[str, np.ndarray]:
        return {"latency": run.latency_s}

    def pooled_metrics(self, pools: list[dict[str, np.ndarray]]) -> dict[str, float]:
        return km.latency_metrics(np.concatenate([p["latency"] for p in pools]))

    def headline_for(self, summaries: list[Any]) -> tuple[str, ...]:
        return self.headline

    def scaled_load(self, case: KafkaCase, factor: float) -> dict[str, Any]:
        """Messages ``factor`` times as fast (rates times it, gaps divided by it), or
        ``factor`` times the closed-loop senders."""
        wl = case.workload
        if wl.feed == "closed_loop":
            return {"workload.senders": max(1, round(wl.senders * factor))}
        if wl.feed == "trace":
            return {"workload.gaps_ms": tuple(g / factor for g in wl.gaps_ms)}
        out: dict[str, Any] = {}
        if wl.rate_per_s is not None:
            out["workload.rate_per_s"] = wl.rate_per_s * factor
        elif wl.rate_per_partition_per_s is not None:
            out["workload.rate_per_partition_per_s"] = wl.rate_per_partition_per_s * factor
        else:
            out["workload.interval_ms"] = (25.0 if wl.interval_ms is None
                                           else wl.interval_ms) / factor
        if any(s.rate_per_s is not None or s.rate_per_partition_per_s is not None
               for s in wl.steps):
            out["workload.steps"] = [_scaled_step(s, factor) for s in wl.steps]
        return out

    def work(self, case: KafkaCase) -> Work:
        """Events and record memory of a run: per message for the message-level engine;
        per batch, request and linger for the aggregated one (a message then costs only
        its share of vector arithmetic, counted as a tenth of an event)."""
        wl, cfg = case.workload, case.producer
        n = wl.messages_estimate(cfg.n_partitions)
        parts = cfg.n_partitions
        driver, value = ("workload.n_messages", n) if n >= parts else \
            ("producer.n_partitions", parts)
        if wl.n_messages is None and n >= parts:
            driver, value = _duration_driver(wl)
        memory = 120.0 * n + 400.0 * parts * wl.producers
        if not case.aggregated:
            return Work(events=8.0 * n, memory_bytes=memory, driver=driver, value=value)
        events = 0.1 * n + _batch_events(case, n)
        return Work(events=events, memory_bytes=memory, driver=driver, value=value)


def _scaled_step(step: RateStep, factor: float) -> dict[str, Any]:
    out: dict[str, Any] = {"duration_s": step.duration_s}
    if step.rate_per_s is not None:
        out["rate_per_s"] = step.rate_per_s * factor
    elif step.rate_per_partition_per_s is not None:
        out["rate_per_partition_per_s"] = step.rate_per_partition_per_s * factor
    elif step.factor is not None:
        out["factor"] = step.factor
    return out


def _duration_driver(wl: KafkaWorkload) -> tuple[str, Any]:
    if wl.steps:
        return "workload.steps", f"{len(wl.steps)} steps"
    if wl.duration_s is not None:
        return "workload.duration_s", wl.duration_s
    return "workload.n_messages", wl.count_hint


def _batch_events(case: KafkaCase, n: int) -> float:
    """Events of the aggregated engine beyond its vector work: outer flushes, client
    lingers and requests (each at most one per message), background load."""
    wl, cfg, outer = case.workload, case.producer, case.outer
    duration = max(wl.duration_estimate_s, 1e-3)
    linger = max(cfg.linger_s, 1e-4)
    if outer.linger_ms is None:
        chunks = float(n) / (wl.burst_size if wl.feed == "bursts" else 1)
    else:
        chunks = min(float(n), n / outer.effective_max_batch
                     + duration / max(outer.effective_linger_s, 1e-4))
    # per chunk: a linger or a drain per partition touched; per linger period a request
    touched = min(float(cfg.n_partitions), n / max(chunks, 1.0))
    requests = min(float(n), chunks * cfg.n_brokers + duration / linger * cfg.n_brokers
                   * wl.producers)
    background = 0.0
    if case.broker.on:
        b = case.broker
        background = duration * cfg.n_brokers * (
            b.background_records_per_s / b.background_records_per_request
            + b.background_cores / (b.background_job_ms / 1e3)) * 4
    return 6.0 * chunks + 2.0 * chunks * touched + 8.0 * requests + background


ENGINE = register(KafkaEngine())
