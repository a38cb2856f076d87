"""The Kafka pipeline builder: feed -> outer batcher -> producer client -> broker -> consumer.

Predicts publish-to-consume latency per message, the figure users measure (teranode's
``linger_latency_regression_test.go``: consumer-callback time minus publish time, percentile
= ``sorted[floor((n - 1) p)]``, which is numpy's ``method="lower"``).

Feeds: ``periodic`` (one message every ``interval_ms``: R2's sparse feed), ``poisson``,
``bursts`` (``burst_size`` messages at once every ``interval_ms``: per-block bursts) and
``closed_loop`` (``senders`` senders, each waiting for its message to be consumed-visible,
i.e. acknowledged, before the next) and ``trace`` (recorded gaps replayed: ``gaps_ms[i]`` is
the time from message i to message i + 1, e.g. a measured run's publish times, so that a
prediction sees the very arrivals the measurement saw).

The consumer subscribed before producing: an appended record reaches the consumer callback
``fetch_ms`` later (a long-poll fetch returns as soon as data is there).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

import numpy as np
import simpy

from .errors import check_bool, check_choice, check_int, check_number, fail
from .kafka_producer import KafkaProducer, KafkaProducerConfig, partition_of
from .outer_batcher import OuterBatcher, OuterBatcherConfig

FEEDS = ("periodic", "poisson", "bursts", "closed_loop", "trace")


@dataclass(frozen=True, kw_only=True)
class KafkaWorkload:
    """Messages published into the producer stack.

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
        Keys spread messages over partitions by hash; keyless go round-robin.
    """

    n_messages: int = 200
    feed: str = "periodic"
    interval_ms: float = 25.0
    burst_size: int = 1
    senders: int = 1
    message_bytes: int = 256
    keyed: bool = True
    gaps_ms: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        owner = "KafkaWorkload"
        check_int(owner, "n_messages", self.n_messages, minimum=1)
        check_choice(owner, "feed", self.feed, FEEDS)
        if self.feed != "trace" and len(self.gaps_ms):
            raise fail(owner, "gaps_ms", "unset unless feed = 'trace'", f"{len(self.gaps_ms)} gaps")
        if self.feed == "trace" and len(self.gaps_ms) < self.n_messages - 1:
            raise fail(owner, "gaps_ms", f"n_messages - 1 = {self.n_messages - 1} gaps or more "
                       "(feed = 'trace')", f"{len(self.gaps_ms)} gaps")
        for g in self.gaps_ms:
            check_number(owner, "gaps_ms", g)
        check_number(owner, "interval_ms", self.interval_ms)
        check_int(owner, "burst_size", self.burst_size, minimum=1)
        check_int(owner, "senders", self.senders, minimum=1)
        check_int(owner, "message_bytes", self.message_bytes, minimum=0)
        check_bool(owner, "keyed", self.keyed)


@dataclass(frozen=True, kw_only=True)
class ConsumerConfig:
    """``fetch_ms``: median time from a request's append to the consumer callback;
    ``fetch_ratios``: measured fetch time / median, resampled per request (empty = constant).
    """

    fetch_ms: float = 1.0
    fetch_ratios: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        check_number("ConsumerConfig", "fetch_ms", self.fetch_ms)
        for r in self.fetch_ratios:
            check_number("ConsumerConfig", "fetch_ratios", r, strict=True)


@dataclass(frozen=True, kw_only=True)
class KafkaCase:
    name: str = "default"
    workload: KafkaWorkload = field(default_factory=KafkaWorkload)
    outer: OuterBatcherConfig = field(default_factory=OuterBatcherConfig)
    producer: KafkaProducerConfig = field(default_factory=KafkaProducerConfig)
    consumer: ConsumerConfig = field(default_factory=ConsumerConfig)


@dataclass
class KafkaRun:
    case: KafkaCase
    seed: int
    replication: int
    publish_s: np.ndarray
    consume_s: np.ndarray
    partition: np.ndarray
    append_order: np.ndarray
    publish_order: np.ndarray
    outer_flushes: int
    requests: int
    end_s: float

    @property
    def latency_s(self) -> np.ndarray:
        return self.consume_s - self.publish_s


def simulate_kafka(case: KafkaCase, seed: int = 0, *, replication: int = 0) -> KafkaRun:
    """Run the Kafka pipeline once; see the module docstring.

    Examples
    --------
    >>> run = simulate_kafka(KafkaCase(workload=KafkaWorkload(n_messages=5)), seed=1)
    >>> bool((run.latency_s > 0.010).all())   # at least the 10 ms outer linger
    True
    """
    child = np.random.SeedSequence(seed).spawn(replication + 1)[replication]
    feed_rng, rng = (np.random.default_rng(c) for c in child.spawn(2))
    wl, env = case.workload, simpy.Environment()
    n = wl.n_messages
    publish = array("d", [np.nan] * n)
    consume = array("d", [np.nan] * n)
    order = array("q", [-1] * n)
    published_order = array("q", [-1] * n)
    keys = [f"k-{case.name}-{i}" if wl.keyed else None for i in range(n)]
    parts = [partition_of(keys[i], i, case.producer.n_partitions) for i in range(n)]
    fetch_s = case.consumer.fetch_ms / 1e3
    acked: dict[int, simpy.Event] = {}
    counter = {"appended": 0, "flushes": 0, "published": 0}

    def stamp(msg):
        publish[msg] = env.now
        published_order[msg] = counter["published"]
        counter["published"] += 1
    all_done = env.event()

    fetch_ratios = list(case.consumer.fetch_ratios)
    last_consume = [0.0] * case.producer.n_partitions

    def on_append(records, now):
        fetch = fetch_s
        if fetch_ratios:
            fetch *= fetch_ratios[int(rng.integers(len(fetch_ratios)))]
        for msg in records:
            # a consumer reads a partition in order: never before an earlier record of it
            p = parts[msg]
            last_consume[p] = consume[msg] = max(now + fetch, last_consume[p])
            order[msg] = counter["appended"]
            counter["appended"] += 1
            waiter = acked.pop(msg, None)
            if waiter is not None:
                waiter.succeed()
        if counter["appended"] == n:
            all_done.succeed()

    producer = KafkaProducer(env, case.producer, parts.__getitem__,
                             lambda _m: wl.message_bytes, on_append, rng)

    def count_flush(_size, _now):
        counter["flushes"] += 1

    if case.outer.linger_ms is None:
        def publish_msg(msg):
            stamp(msg)
            producer.produce(msg)
    else:
        outer = OuterBatcher(env, case.outer, producer.produce, count_flush)
        outer.start()

        def publish_msg(msg):
            stamp(msg)
            outer.publish(msg)

    env.process(_feed(env, wl, feed_rng, publish_msg, acked))
    env.run(until=all_done)
    return KafkaRun(case=case, seed=seed, replication=replication,
                    publish_s=np.frombuffer(publish).copy(),
                    consume_s=np.frombuffer(consume).copy(),
                    partition=np.asarray(parts), append_order=np.frombuffer(order, np.int64).copy(),
                    publish_order=np.frombuffer(published_order, np.int64).copy(),
                    outer_flushes=counter["flushes"], requests=producer.requests, end_s=env.now)


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
                    yield env.timeout(gap)
        yield env.all_of([env.process(sender(s)) for s in range(min(wl.senders, n))])
        return
    msg = 0
    while msg < n:
        count = wl.burst_size if wl.feed == "bursts" else 1
        for _ in range(min(count, n - msg)):
            publish_msg(msg)
            msg += 1
        if msg < n:
            yield env.timeout(rng.exponential(gap) if wl.feed == "poisson" else
                              wl.gaps_ms[msg - 1] / 1e3 if wl.feed == "trace" else gap)


def kafka_metrics(runs: list[KafkaRun]) -> dict[str, float]:
    """Pooled publish-to-consume latency (``method="lower"``, the published rule) and means."""
    lat = np.concatenate([r.latency_s for r in runs])
    m = {"latency_mean_s": float(lat.mean())}
    for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        m[f"latency_{name}_s"] = float(np.quantile(lat, q, method="lower"))
    m["latency_max_s"] = float(lat.max())
    m["requests"] = float(np.mean([r.requests for r in runs]))
    m["records_per_request"] = float(np.mean([r.case.workload.n_messages / r.requests
                                              for r in runs]))
    m["outer_flushes"] = float(np.mean([r.outer_flushes for r in runs]))
    m["duration_s"] = float(np.mean([r.end_s for r in runs]))
    return m


def summarize_kafka(case: KafkaCase, replications: int, seed: int):
    """Replications of ``case``: pooled latency percentiles, per-run rows and 95 % CIs."""
    from .results import summary_from_runs

    runs = [simulate_kafka(case, seed, replication=r) for r in range(replications)]
    rows = [{"replication": r.replication, "seed": r.seed, **kafka_metrics([r])} for r in runs]
    pooled = {k: v for k, v in kafka_metrics(runs).items() if k.startswith("latency")}
    return summary_from_runs(case.name, rows, pooled,
                             np.concatenate([r.latency_s for r in runs]))
