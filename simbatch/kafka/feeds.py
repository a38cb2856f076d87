"""Messages published into the producer stack (``[workload]``): when each message is
published, by which producer, and how many there are.

A feed is given in one of three ways, never two at once:

* a gap, ``interval_ms`` (R2's sparse feed: one message every 25 ms);
* a rate over the whole topic, ``rate_per_s`` (messages per second, all producers together);
* a rate per partition, ``rate_per_partition_per_s`` (x ``[producer] n_partitions``).

How long: ``n_messages`` messages, or ``duration_s`` seconds of the feed, or the sum of
``[[workload.steps]]`` (the rate varying in time: each step lasts ``duration_s`` at its own
``rate_per_s`` / ``rate_per_partition_per_s``, or ``factor`` x the workload's rate; a step
starts its own schedule at its start). Nothing given: 200 messages 25 ms apart.

Shapes (``feed``): ``periodic``; ``poisson``; ``bursts`` (``burst_size`` messages per burst,
bursts at the mean rate, the messages of a burst spread evenly over ``burst_ms``, 0 = all at
once: a block-driven pattern, e.g. a block's transactions validated over ``burst_ms`` and
published as they go); ``closed_loop`` (``senders`` senders, each waiting for its message to
be acknowledged, then ``interval_ms``, before the next); ``trace`` (recorded gaps,
``gaps_ms[i]`` from message i to i + 1; ``interval_ms`` is not used).

Several producers (``producers``): each with its own outer batcher, client and connections
(teranode runs one per service instance), on one topic and one broker set. The rate is the
topic's: each producer publishes 1 / ``producers`` of it. A periodic or bursty feed is split
so that the producers take turns (producer k publishes burst k, k + K, ...: the topic sees
the same schedule as with one producer); Poisson producers are independent (their union is
the topic's Poisson feed); a trace's message i goes to producer i % K; closed-loop sender s
to producer s % K.

Messages are numbered in publish order over all producers (ties: by producer), and keyed
``k-<case name>-<number>``. Times are the engine's clock's whole microseconds
(:mod:`.clock`), the schedule summed in seconds and then rounded, as before (message 40 of a
25 ms feed comes at 1 s exactly); the messages due at one instant are published in one step
(as a burst's are), one after another.

Random stream ``feed``: Poisson gaps, drawn producer after producer, one per gap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np

from ..core.config import NONE_WORD, Bool, Int, NonNeg, PosFloat, PosInt, Rule, at, config

FEEDS = ("periodic", "poisson", "bursts", "closed_loop", "trace")
DEFAULT_N = 200
DEFAULT_INTERVAL_MS = 25.0
MAX_PRODUCERS = 10_000


@config
class RateStep:
    """One step of a feed whose rate varies in time (``[[workload.steps]]``): ``duration_s``
    at ``rate_per_s`` (the topic's), ``rate_per_partition_per_s``, or ``factor`` x the
    workload's rate (none of them: the workload's rate)."""

    duration_s: PosFloat = 1.0
    rate_per_s: Annotated[PosFloat | None, NONE_WORD] = None
    rate_per_partition_per_s: Annotated[PosFloat | None, NONE_WORD] = None
    factor: Annotated[PosFloat | None, NONE_WORD] = None
    RULES = (Rule("factor", "not set with rate_per_s or rate_per_partition_per_s (one rate "
                  "per step)", lambda s: (s.rate_per_s is not None)
                  + (s.rate_per_partition_per_s is not None) + (s.factor is not None) <= 1),)


def _given(*values: object) -> int:
    return sum(v is not None for v in values)


@config
class KafkaWorkload:
    """Messages published into the producer stack (``[workload]``; the module docstring
    says how the fields combine).

    Parameters
    ----------
    n_messages : int or None
        How many messages; ``None``: as many as ``duration_s`` or the steps hold, else 200.
    duration_s : float or None
        How long the feed runs (instead of ``n_messages``).
    feed : {"periodic", "poisson", "bursts", "closed_loop", "trace"}
    interval_ms : float or None
        Gap between messages over the topic (periodic), mean gap (poisson), gap between
        bursts (bursts), think time after each acknowledgement (closed loop); ``None``: from
        the rate, else 25 ms.
    rate_per_s, rate_per_partition_per_s : float or None
        The topic's rate, overall or per partition.
    steps : list of RateStep
        The rate in time, step after step (``[[workload.steps]]``).
    producers : int
        Producers, each with its own outer batcher and client.
    burst_size : int
        Messages per burst (bursts).
    burst_ms : float
        The messages of a burst spread evenly over this long (bursts; 0 = at once).
    senders : int
        Closed-loop senders.
    message_bytes : int
    keyed : bool
        Keys ``k-<case name>-<i>`` spread messages over partitions by the client's key
        hash; keyless messages go where the client's sticky partitioner puts them.
    gaps_ms : sequence of float
        The trace feed's gaps (at least ``n_messages - 1``); only with ``feed = "trace"``.

    Examples
    --------
    >>> KafkaWorkload(rate_per_s=1000, duration_s=2).messages_estimate(1)
    2000
    >>> KafkaWorkload(rate_per_s=1000, interval_ms=1)      # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    simbatch.core.errors.ConfigError: The 'interval_ms' parameter of KafkaWorkload must be ...
    """

    n_messages: Annotated[PosInt | None, NONE_WORD] = None
    duration_s: Annotated[PosFloat | None, NONE_WORD] = None
    feed: Literal["periodic", "poisson", "bursts", "closed_loop", "trace"] = "periodic"
    interval_ms: Annotated[NonNeg | None, NONE_WORD] = None
    rate_per_s: Annotated[PosFloat | None, NONE_WORD] = None
    rate_per_partition_per_s: Annotated[PosFloat | None, NONE_WORD] = None
    steps: tuple[RateStep, ...] = ()
    producers: Annotated[PosInt, at.Le(MAX_PRODUCERS)] = 1
    burst_size: PosInt = 1
    burst_ms: NonNeg = 0.0
    senders: PosInt = 1
    message_bytes: Annotated[Int, at.Ge(0)] = 256
    keyed: Bool = True
    gaps_ms: tuple[NonNeg, ...] = ()
    RULES = (
        Rule("interval_ms", "not set with rate_per_s or rate_per_partition_per_s (one way "
             "to give the rate)", lambda w: w.interval_ms is None
             or (w.rate_per_s is None and w.rate_per_partition_per_s is None)),
        Rule("rate_per_partition_per_s", "not set with rate_per_s (one way to give the rate)",
             lambda w: w.rate_per_s is None or w.rate_per_partition_per_s is None),
        Rule("duration_s", "not set with n_messages (one way to say how long)",
             lambda w: w.duration_s is None or w.n_messages is None),
        Rule("steps", "empty with n_messages or duration_s (the steps say how long)",
             lambda w: not w.steps or (w.n_messages is None and w.duration_s is None)),
        Rule("steps", "empty unless feed is 'periodic', 'poisson' or 'bursts'",
             lambda w: not w.steps or w.feed in ("periodic", "poisson", "bursts")),
        Rule("steps", "given a rate for every step with no rate of its own (set the "
             "workload's rate, or each step's)", lambda w: all(
                 s.rate_per_s is not None or s.rate_per_partition_per_s is not None
                 for s in w.steps) or _given(w.interval_ms, w.rate_per_s,
                                             w.rate_per_partition_per_s) == 1),
        Rule("feed", "not 'closed_loop' with a rate or steps (a closed loop's rate follows "
             "from its acknowledgements)", lambda w: w.feed != "closed_loop" or (
                 w.rate_per_s is None and w.rate_per_partition_per_s is None
                 and not w.steps and w.duration_s is None)),
        Rule("feed", "not 'trace' with a rate, steps or duration_s (the trace's gaps give "
             "them)", lambda w: w.feed != "trace" or (
                 w.rate_per_s is None and w.rate_per_partition_per_s is None
                 and not w.steps and w.duration_s is None)),
        Rule("gaps_ms", "empty unless feed = 'trace'",
             lambda w: w.feed == "trace" or not w.gaps_ms),
        Rule("gaps_ms", "at least n_messages - 1 gaps (feed = 'trace')",
             lambda w: w.feed != "trace" or len(w.gaps_ms) >= w.count_hint - 1),
        Rule("burst_ms", "0 unless feed = 'bursts'",
             lambda w: w.burst_ms == 0 or w.feed == "bursts"),
    )

    @property
    def count_hint(self) -> int:
        """``n_messages`` as given, else 200 (a trace without ``n_messages``: all its gaps
        + 1)."""
        if self.n_messages is not None:
            return self.n_messages
        return len(self.gaps_ms) + 1 if self.feed == "trace" and self.gaps_ms else DEFAULT_N

    def rate(self, n_partitions: int) -> float:
        """The topic's base rate, messages per second (a burst's messages every
        ``interval_ms`` for the bursts feed)."""
        if self.rate_per_s is not None:
            return self.rate_per_s
        if self.rate_per_partition_per_s is not None:
            return self.rate_per_partition_per_s * n_partitions
        interval = DEFAULT_INTERVAL_MS if self.interval_ms is None else self.interval_ms
        per_gap = self.burst_size if self.feed == "bursts" else 1
        return float("inf") if interval == 0 else per_gap * 1e3 / interval

    @property
    def gap_s(self) -> float:
        """The closed loop's think time, seconds."""
        return (DEFAULT_INTERVAL_MS if self.interval_ms is None else self.interval_ms) / 1e3

    def segments(self, n_partitions: int) -> list[tuple[float, float]]:
        """``(duration_s, rate_per_s)`` of each step (one step for a duration); empty when
        the feed is counted in messages."""
        base = self.rate(n_partitions)
        if self.steps:
            return [(s.duration_s, s.rate_per_s if s.rate_per_s is not None else
                     s.rate_per_partition_per_s * n_partitions
                     if s.rate_per_partition_per_s is not None else base * (s.factor or 1.0))
                    for s in self.steps]
        if self.duration_s is not None:
            return [(self.duration_s, base)]
        return []

    def messages_estimate(self, n_partitions: int) -> int:
        """How many messages the feed publishes (exact but for Poisson draws)."""
        segments = self.segments(n_partitions)
        if not segments:
            return self.count_hint
        total = 0.0
        for duration, rate in segments:
            total += min(duration * rate, 2.0**53) if np.isfinite(rate) else 2.0**53
        return int(min(total, 2.0**53))

    @property
    def duration_estimate_s(self) -> float:
        """How long the feed runs, seconds (at the base rate for counted feeds)."""
        segments = self.segments(1)
        if segments:
            return sum(d for d, _ in segments)
        return self.count_hint * (DEFAULT_INTERVAL_MS if self.interval_ms is None
                                  else self.interval_ms) / 1e3


@dataclass
class Arrivals:
    """The feed's schedule: ``ticks[i]`` the publish time of message i (clock units),
    ``producer[i]`` its producer, and ``fresh[i]`` whether the feed yields to the clock
    before publishing it. The messages due at one instant are published in one step (a
    burst is), so ``fresh[i]`` is whether message i comes later than message i - 1."""

    ticks: np.ndarray
    producer: np.ndarray
    fresh: np.ndarray

    @property
    def n(self) -> int:
        return int(self.ticks.size)


def arrivals(wl: KafkaWorkload, n_partitions: int, rng: np.random.Generator) -> Arrivals:
    """The schedule of an open-loop feed (every feed but ``closed_loop``)."""
    k = wl.producers
    parts = []
    for p in range(k):
        parts.append(_one_producer(wl, n_partitions, rng, p, k))
    if k == 1:
        t = parts[0]
        producer = np.zeros(t.size, np.int32)
    else:
        t = np.concatenate(parts)
        producer = np.concatenate([np.full(pt.size, i, np.int32) for i, pt in enumerate(parts)])
        order = np.argsort(t, kind="stable")
        t, producer = t[order], producer[order]
    fresh = np.ones(t.size, bool)
    fresh[1:] = t[1:] != t[:-1]
    return Arrivals(t, producer, fresh)


def _one_producer(wl: KafkaWorkload, n_partitions: int, rng: np.random.Generator, p: int,
                  k: int) -> np.ndarray:
    if wl.feed == "trace":
        n = wl.count_hint
        gaps = np.asarray(wl.gaps_ms[:n - 1], float) / 1e3
        t = np.concatenate([[0.0], np.cumsum(gaps)])
        return _ticks(t[np.arange(p, n, k)])
    segments = wl.segments(n_partitions)
    if not segments:                        # counted: n messages at the base rate
        n_all = wl.count_hint
        mine = n_all // k + (1 if p < n_all % k else 0)
        return _ticks(_schedule(wl, wl.rate(n_partitions), mine, None, rng, p, k))
    times, start = [], 0.0
    for duration, rate in segments:
        times.append(start + _schedule(wl, rate, None, duration, rng, p, k))
        start += duration
    return _ticks(np.concatenate(times))


def _ticks(seconds: np.ndarray) -> np.ndarray:
    return np.round(np.asarray(seconds, float) * 1e6)


def _schedule(wl: KafkaWorkload, rate: float, count: int | None, duration: float | None,
              rng: np.random.Generator, p: int, k: int) -> np.ndarray:
    """One producer's publish times in seconds from the segment's start: ``count``
    messages, or those before ``duration``."""
    gap = 0.0 if not np.isfinite(rate) else 1.0 / rate
    if wl.feed == "poisson":
        mean = gap * k
        if count is not None:
            gaps = rng.exponential(mean, max(count - 1, 0))
            seconds = np.concatenate([[0.0], np.cumsum(gaps)])
        else:
            seconds = _poisson_until(rng, mean, duration or 0.0)
        return seconds
    burst = wl.burst_size if wl.feed == "bursts" else 1
    period = gap * burst * k              # this producer's bursts
    phase = gap * burst * p
    if count is not None:
        bursts = -(-count // burst)
    else:
        usable = (duration or 0.0) - phase
        bursts = 0 if usable <= 0 else (int(np.ceil(usable / period - 1e-12)) if period > 0
                                        else 1)
        bursts = min(bursts, 2**40)
    if period > 0:
        # the schedule summed gap by gap, as the feed always summed it
        starts = phase + np.concatenate([[0.0], np.cumsum(np.full(max(bursts - 1, 0),
                                                                 period))])
    else:
        starts = np.full(bursts, phase)
    within = (np.arange(burst) * (wl.burst_ms / 1e3 / burst) if wl.feed == "bursts"
              else np.zeros(1))
    seconds = (starts[:, None] + within[None, :]).ravel()
    if count is not None:
        return seconds[:count]
    return seconds[seconds < (duration or 0.0)]


def _poisson_until(rng: np.random.Generator, mean: float, duration: float) -> np.ndarray:
    """Poisson arrival times in [0, duration): gaps drawn one after another (in blocks)."""
    if mean <= 0:
        return np.zeros(1)
    out = [np.zeros(1)]
    last = 0.0
    block = int(min(max(duration / mean * 1.05 + 16, 16), 2**24))
    while last < duration:
        times = last + np.cumsum(rng.exponential(mean, block))
        out.append(times)
        last = float(times[-1])
    seconds = np.concatenate(out)
    return seconds[seconds < duration]
