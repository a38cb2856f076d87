"""The Kafka pipeline's engine: feed -> outer batcher -> producer client -> broker -> consumer.

Predicts publish-to-consume latency per message, the figure users measure (teranode's
``linger_latency_regression_test.go``: consumer-callback time minus publish time, percentile
= ``sorted[floor((n - 1) p)]``, which is numpy's ``method="lower"``).

Feeds (``[workload]``): ``periodic`` (one message every ``interval_ms``: R2's sparse feed),
``poisson``, ``bursts`` (``burst_size`` messages at once every ``interval_ms``: per-block
bursts), ``closed_loop`` (``senders`` senders, each waiting for its message to be
consumed-visible, i.e. acknowledged, before the next) and ``trace`` (recorded gaps replayed:
``gaps_ms[i]`` is the time from message i to message i + 1, e.g. a measured run's publish
times, so that a prediction sees the very arrivals the measurement saw).

The consumer subscribed before producing: an appended record reaches the consumer callback
``fetch_ms`` later (a long-poll fetch returns as soon as data is there), never before an
earlier record of its partition.

Keys: message i has key ``k-<case name>-<i>`` (the harnesses' ``k-<label>-<i>``), placed by
the client's own partitioner (``partitioners``); keyless messages (``keyed = false``) by the
client's sticky choice when they reach it.

The clock counts whole microseconds (``clock.py``), so events due at one instant coincide.

Random streams: ``feed`` (Poisson gaps), ``append`` (the broker's append noise), ``fetch``
(the consumer's fetch noise), ``partition`` (sticky choices for keyless records), each its
own.

Metrics: ``latency_{mean,p50,p90,p99,max}_s`` (pooled over replications, the published
rule), ``requests``, ``records_per_request``, ``outer_flushes``, ``duration_s``.
Frames: ``messages`` (``msg``; ``partition``; ``request`` that carried it; ``t_publish_s``;
``t_consume_s``; ``latency_s``; ``publish_order``, ``append_order``: its rank among
publishes and appends) and ``requests`` (``request``; ``broker``; ``n_records``;
``t_sent_s``; ``t_acked_s``; ``append_s`` = acked - sent). Seconds.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
import simpy

from ..core.config import Bool, Field, Float, Int, NonNeg, PosInt, Rule, at, config
from ..core.engine import CaseBase, PlotSpec, Run, register
from ..core.errors import check_int, fail
from ..core.streams import streams
from ..core.work import Bounds, Work
from .client import Client
from .clock import S_PER_TICK, ticks
from .franz_go import FranzGo
from .java_producer import JavaProducer
from .librdkafka import Librdkafka
from .outer_batcher import OuterBatcher, OuterBatcherConfig
from .partitioners import key_partition
from .producer import KafkaProducerConfig

STREAMS = ("feed", "append", "fetch", "partition")
CLIENTS: dict[str, type[Client]] = {"franz-go": FranzGo, "librdkafka": Librdkafka,
                                    "java": JavaProducer}
"""The client model of each ``[producer] semantics``."""
FEEDS = ("periodic", "poisson", "bursts", "closed_loop", "trace")


@config
class KafkaWorkload:
    """Messages published into the producer stack (``[workload]``).

    Parameters
    ----------
    n_messages : int
    feed : {"periodic", "poisson", "bursts", "closed_loop", "trace"}
    interval_ms : float
        Gap between messages (periodic), mean gap (poisson), gap between bursts (bursts).
    gaps_ms : sequence of float
        The trace feed's gaps (at least ``n_messages - 1``); only with ``feed = "trace"``.
    burst_size : int
        Messages per burst (bursts).
    senders : int
        Closed-loop senders.
    message_bytes : int
    keyed : bool
        Keys ``k-<case name>-<i>`` spread messages over partitions by the client's key
        hash; keyless messages go where the client's sticky partitioner puts them.
    """

    n_messages: PosInt = 200
    feed: Literal["periodic", "poisson", "bursts", "closed_loop", "trace"] = "periodic"
    interval_ms: NonNeg = 25.0
    burst_size: PosInt = 1
    senders: PosInt = 1
    message_bytes: Annotated[Int, at.Ge(0)] = 256
    keyed: Bool = True
    gaps_ms: tuple[NonNeg, ...] = ()
    RULES = (Rule("gaps_ms", "empty unless feed = 'trace'",
                  lambda w: w.feed == "trace" or not w.gaps_ms),
             Rule("gaps_ms", "at least n_messages - 1 gaps (feed = 'trace')",
                  lambda w: w.feed != "trace" or len(w.gaps_ms) >= w.n_messages - 1))


@config
class ConsumerConfig:
    """``fetch_ms``: median time from a request's append to the consumer callback;
    ``fetch_ratios``: measured fetch time / median, resampled per request (empty =
    constant). ``[consumer]``."""

    fetch_ms: NonNeg = 1.0
    fetch_ratios: tuple[Annotated[Float, at.Gt(0)], ...] = ()


@config
class KafkaCase(CaseBase):
    """One Kafka configuration: feed, outer batcher, client and topic, consumer.

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


@dataclass
class KafkaRun(Run):
    """Per-message and per-request records of one replication."""

    publish_s: np.ndarray = None  # type: ignore[assignment]
    consume_s: np.ndarray = None  # type: ignore[assignment]
    partition: np.ndarray = None  # type: ignore[assignment]
    request: np.ndarray = None  # type: ignore[assignment]
    append_order: np.ndarray = None  # type: ignore[assignment]
    publish_order: np.ndarray = None  # type: ignore[assignment]
    request_broker: np.ndarray = None  # type: ignore[assignment]
    request_records: np.ndarray = None  # type: ignore[assignment]
    request_sent_s: np.ndarray = None  # type: ignore[assignment]
    request_acked_s: np.ndarray = None  # type: ignore[assignment]
    outer_flushes: int = 0
    requests: int = 0
    end_s: float = 0.0

    @property
    def latency_s(self) -> np.ndarray:
        return self.consume_s - self.publish_s

    def _frames(self) -> dict[str, pd.DataFrame]:
        messages = pd.DataFrame({
            "msg": np.arange(self.publish_s.size), "partition": self.partition,
            "request": self.request, "t_publish_s": self.publish_s,
            "t_consume_s": self.consume_s, "latency_s": self.latency_s,
            "publish_order": self.publish_order, "append_order": self.append_order})
        requests = pd.DataFrame({
            "request": np.arange(self.request_sent_s.size), "broker": self.request_broker,
            "n_records": self.request_records, "t_sent_s": self.request_sent_s,
            "t_acked_s": self.request_acked_s,
            "append_s": self.request_acked_s - self.request_sent_s})
        return {"messages": messages, "requests": requests}


def simulate(case: KafkaCase, seed: int = 0, *, bounds: Bounds | None = None) -> KafkaRun:
    """Run the Kafka pipeline once with ``seed`` (the run's own seed); see the module
    docstring. Every timer here fires once per message or batch, so ``bounds`` has nothing
    to guard while the run goes: the work estimate bounds it."""
    if not isinstance(case, KafkaCase):
        raise fail("simulate", "case", "a simbatch.kafka.KafkaCase", type(case).__name__)
    check_int("simulate", "seed", seed)
    rngs = streams(seed, STREAMS)
    wl, env = case.workload, simpy.Environment()
    n = wl.n_messages
    publish = array("d", [np.nan] * n)
    consume = array("d", [np.nan] * n)
    carried = array("q", [-1] * n)
    order = array("q", [-1] * n)
    published_order = array("q", [-1] * n)
    keyed = _keyed_partitions(case, n)
    parts = array("q", [-1] * n)
    fetch_s = case.consumer.fetch_ms / 1e3
    acked: dict[int, simpy.Event] = {}
    counter = {"appended": 0, "flushes": 0, "published": 0}
    fetch_rng = rngs["fetch"]

    def stamp(msg: int) -> None:
        publish[msg] = env.now * S_PER_TICK
        published_order[msg] = counter["published"]
        counter["published"] += 1
    all_done = env.event()

    fetch_ratios = list(case.consumer.fetch_ratios)
    last_consume = [0.0] * case.producer.n_partitions     # clock units (us)

    def on_append(records: list[int], now: float, request: int) -> None:
        fetch = fetch_s
        if fetch_ratios:
            fetch *= fetch_ratios[int(fetch_rng.integers(len(fetch_ratios)))]
        for msg in records:
            # a consumer reads a partition in order: never before an earlier record of it
            p = parts[msg]
            last_consume[p] = max(now + ticks(fetch), last_consume[p])
            consume[msg] = last_consume[p] * S_PER_TICK
            carried[msg] = request
            order[msg] = counter["appended"]
            counter["appended"] += 1
            waiter = acked.pop(msg, None)
            if waiter is not None:
                waiter.succeed()
        if counter["appended"] == n:
            all_done.succeed()

    producer = CLIENTS[case.producer.semantics](
        env, case.producer, keyed_partition=keyed, value_bytes=lambda _m: wl.message_bytes,
        on_append=on_append, append_rng=rngs["append"], partition_rng=rngs["partition"],
        partition_out=parts)

    def count_flush(_size: int, _now: float) -> None:
        counter["flushes"] += 1

    if case.outer.linger_ms is None:
        def publish_msg(msg: int) -> None:
            stamp(msg)
            producer.produce(msg)
    else:
        outer = OuterBatcher(env, case.outer, producer.produce, count_flush)
        outer.start()

        def publish_msg(msg: int) -> None:
            stamp(msg)
            outer.publish(msg)

    env.process(_feed(env, wl, rngs["feed"], publish_msg, acked))
    env.run(until=all_done)
    return KafkaRun(case=case, seed=seed,
                    publish_s=np.frombuffer(publish).copy(),
                    consume_s=np.frombuffer(consume).copy(),
                    partition=np.frombuffer(parts, np.int64).copy(),
                    request=np.frombuffer(carried, np.int64).copy(),
                    append_order=np.frombuffer(order, np.int64).copy(),
                    publish_order=np.frombuffer(published_order, np.int64).copy(),
                    request_broker=np.frombuffer(producer.request_broker, np.int64).copy(),
                    request_records=np.frombuffer(producer.request_records, np.int64).copy(),
                    request_sent_s=np.frombuffer(producer.request_sent).copy(),
                    request_acked_s=np.frombuffer(producer.request_acked).copy(),
                    outer_flushes=counter["flushes"],
                    requests=producer.requests, end_s=env.now * S_PER_TICK)


def _keyed_partitions(case: KafkaCase, n: int) -> array:
    """Each message's partition by its key (-1: keyless, the client chooses at Produce)."""
    cfg = case.producer
    out = array("q", [-1] * n)
    if case.workload.keyed:
        for i in range(n):
            p = key_partition(cfg.semantics, f"k-{case.name}-{i}".encode(), cfg.n_partitions)
            out[i] = -1 if p is None else p
    return out


def _feed(env, wl: KafkaWorkload, rng, publish_msg, acked):
    gap = wl.interval_ms / 1e3
    n = wl.n_messages
    if wl.feed == "closed_loop":
        def sender(first):
            for msg in range(first, n, wl.senders):
                acked[msg] = env.event()
                waiter = acked[msg]
                publish_msg(msg)
                yield waiter
                if gap:
                    yield env.timeout(ticks(gap))
        yield env.all_of([env.process(sender(s)) for s in range(min(wl.senders, n))])
        return
    msg, scheduled = 0, 0.0
    while msg < n:
        count = wl.burst_size if wl.feed == "bursts" else 1
        for _ in range(min(count, n - msg)):
            publish_msg(msg)
            msg += 1
        if msg < n:
            # the schedule is summed, then put on the clock's microseconds: message 40 of a
            # 25 ms feed comes at 1 s exactly (clock.py)
            scheduled += (rng.exponential(gap) if wl.feed == "poisson" else
                          wl.gaps_ms[msg - 1] / 1e3 if wl.feed == "trace" else gap)
            yield env.timeout(max(0.0, ticks(scheduled) - env.now))


_QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
METRICS = ("latency_mean_s", *(f"latency_{q}_s" for q, _ in _QUANTILES), "latency_max_s",
           "requests", "records_per_request", "outer_flushes", "duration_s")
"""Every metric of a Kafka case (see the module docstring)."""


def latency_metrics(latency: np.ndarray) -> dict[str, float]:
    """Mean, percentiles (``method="lower"``, the published rule) and maximum, seconds."""
    m = {"latency_mean_s": float(latency.mean())}
    for name, q in _QUANTILES:
        m[f"latency_{name}_s"] = float(np.quantile(latency, q, method="lower"))
    m["latency_max_s"] = float(latency.max())
    return m


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
        m = latency_metrics(run.latency_s)
        m["requests"] = float(run.requests)
        m["records_per_request"] = run.case.workload.n_messages / run.requests
        m["outer_flushes"] = float(run.outer_flushes)
        m["duration_s"] = run.end_s
        return m

    def pool(self, run: KafkaRun) -> dict[str, np.ndarray]:
        return {"latency": run.latency_s}

    def pooled_metrics(self, pools: list[dict[str, np.ndarray]]) -> dict[str, float]:
        return latency_metrics(np.concatenate([p["latency"] for p in pools]))

    def headline_for(self, summaries: list[Any]) -> tuple[str, ...]:
        return self.headline

    def scaled_load(self, case: KafkaCase, factor: float) -> dict[str, Any]:
        """Messages ``factor`` times as fast (the gaps divided by it), or ``factor`` times
        the closed-loop senders."""
        wl = case.workload
        if wl.feed == "closed_loop":
            return {"workload.senders": max(1, round(wl.senders * factor))}
        if wl.feed == "trace":
            return {"workload.gaps_ms": tuple(g / factor for g in wl.gaps_ms)}
        return {"workload.interval_ms": wl.interval_ms / factor}

    def work(self, case: KafkaCase) -> Work:
        n, parts = case.workload.n_messages, case.producer.n_partitions
        return Work(events=8.0 * n, memory_bytes=300.0 * n + 200.0 * parts,
                    driver="workload.n_messages" if n >= parts else "producer.n_partitions",
                    value=n if n >= parts else parts)


ENGINE = register(KafkaEngine())
