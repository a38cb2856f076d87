"""The aggregated engine: the feed and the outer batcher simulated per batch, not per
message (``[simulation] aggregate = "auto"``, the default for open-loop feeds).

No mechanism of the outer batcher needs a message-level event: with the whole schedule known
in advance (an open-loop feed), when its timer fires and what it holds follow from the
arrival times. Per batch, from the index ``s`` of its first message and the instant ``c`` it
is taken (its arrival, or the end of the previous flush if it waited meanwhile):

* **debounce** (teranode's): the messages already there (up to ``max_batch``), then every
  next one that comes less than ``linger`` after the one before; the timer fires ``linger``
  after the last of them (a message at that very instant goes into the next batch: the timer
  wins the tie, as in :mod:`.outer_batcher`); or, if ``max_batch`` messages come first, the
  flush is at the arrival of the ``max_batch``-th;
* **deadline**: the messages that come before ``c + linger``, up to ``max_batch``;
* a linger of 0: the debounce flushes what is there, the deadline each message alone.

Gaps of at least ``linger`` are found once (``numpy``) and each batch is a binary search, so
a run costs per batch, not per message. The flush hands the batch to the client as one chunk
(:meth:`.client.Client.produce_chunk`); a Produce that blocks suspends the flush until the
client has room, exactly as the drain goroutine does, and the next batch starts with
everything that arrived meanwhile. Event order at one instant follows the message-level
outer batcher:

* the feed's step comes before anything else at its instant (:class:`.clock.Arrival`), and
  the drain goroutines it wakes run a step later, in publish order (:class:`Instants`);
* a timer's flush runs one step after the timer (its goroutine wakes on the timer's
  channel), after every event already due at that instant (a response, a client's linger);
  but when one of the producer's messages comes at that instant (the ``max_batch``-th, or
  one the timer keeps for the next batch), the feed's wake-up comes first and the flush
  runs then;
* a debounce timer is reset when its batch's last message wakes the goroutine, so timers
  due at one instant fire in the order they were reset.

On a shared broker CPU, or a client whose drains hop between goroutines, that order is which
request goes first.

Without an outer batcher, the messages due at one instant (a burst, or Poisson arrivals in
the same microsecond), which the feed publishes in one step, are one chunk.

Per-message latency is then arithmetic: a message's publish time is its arrival, its consume
time its request's answer plus the fetch. ``tests/test_kafka_aggregate.py`` checks that the
per-message latencies equal the message-level engine's.

Not aggregated (the engine runs message by message): the closed-loop feed (a sender waits
for its acknowledgement), an outer batcher whose linger is 0 (what it flushes then depends on
the order of the steps within one instant: the drain goroutine flushes what it has each time
it wakes) and
``aggregate = "off"``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
import simpy

from ..core.config import config
from .client import Client
from .clock import Arrival, ticks
from .outer_batcher import OuterBatcherConfig


@config
class SimulationConfig:
    """How the Kafka engine simulates (``[simulation]``): ``aggregate = "auto"`` per batch
    wherever that is exact (open-loop feeds), ``"off"`` message by message."""

    aggregate: Literal["auto", "off"] = "auto"


class Instants:
    """The arrivals that wake the aggregated outer batchers, in publish order.

    Message by message, the feed publishes the messages due at one instant in one step, in
    order, and each idle drain goroutine wakes a step later on its channel: the producers
    woken at one instant run in the order of their messages. Here each such wake-up is an
    event keyed by its message's number, and those due at one instant are triggered
    together, in that order, from one timer (what follows, the batch's own timer, keeps its
    place among the other events of its instant).
    """

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self._due: dict[float, list[tuple[int, simpy.Event]]] = {}

    def wake(self, at: float, msg: int) -> simpy.Event:
        """An event triggered a step after ``at`` (clock units), after every wake-up due
        then for an earlier message."""
        event = self.env.event()
        due = self._due.get(at)
        if due is None:
            due = self._due[at] = []
            Arrival(self.env, at).callbacks.append(lambda _e: self._fire(at))
        due.append((msg, event))
        return event

    def _fire(self, at: float) -> None:
        for _, event in sorted(self._due.pop(at), key=lambda d: d[0]):
            event.succeed()


class AggregatedOuter:
    """One producer's outer batcher over its known arrivals (module docstring)."""

    def __init__(self, env: simpy.Environment, config: OuterBatcherConfig, client: Client,
                 ids: np.ndarray, arrival: np.ndarray,
                 on_flush: Callable[[int, float], None] | None = None,
                 instants: Instants | None = None) -> None:
        self.env = env
        self.config = config
        self.client = client
        self.ids = ids
        self.t = arrival
        self.on_flush = on_flush
        self.instants = instants or Instants(env)

    def start(self) -> simpy.Process:
        return self.env.process(self._run())

    def _ready(self, s: int, c: float) -> int:
        """End of what the drain goroutine takes at once at ``c``: everything that arrived
        by then (the feed publishes an instant's messages in one step, before any step the
        goroutine takes at that instant: those are all triggered at the instant itself)."""
        return max(s + 1, int(np.searchsorted(self.t, c, side="right")))

    def _run(self):
        env, t, n = self.env, self.t, self.ids.size
        linger = ticks(self.config.effective_linger_s)
        most = self.config.effective_max_batch
        deadline = self.config.timer == "deadline"
        # index j (>= 1) whose gap from message j - 1 is at least the linger: a debounce
        # fires between them
        idle = np.flatnonzero(np.diff(t) >= linger) + 1 if linger > 0 else np.zeros(0, int)
        ids, wake = self.ids, self.instants.wake
        s = 0
        while s < n:
            if t[s] > env.now:   # the drain goroutine wakes on its channel, a step later
                yield wake(float(t[s]), int(ids[s]))
            c = env.now
            ready = min(self._ready(s, c), s + most)
            if linger == 0 or ready - s >= most:       # flushed at once
                end = s + 1 if linger == 0 and deadline else ready
                yield from self._flush(s, end)
                s = end
                continue
            if deadline:
                due = c + linger
                end = min(int(np.searchsorted(t, due, side="left")), s + most)
                at = t[end - 1] if end - s >= most else due
            else:
                end, at, armed = self._debounce(s, ready, c, linger, idle, most)
                if armed > env.now:
                    # the timer is last reset when the batch's last message wakes the
                    # drain goroutine: producers' timers due at one instant fire in the
                    # order they were reset, as message by message
                    yield wake(armed, int(ids[end - 1]))
            first = int(np.searchsorted(t, at, side="left"))
            if at > env.now and first < n and t[first] == at:
                # a message comes at the flush's instant (the max_batch-th, or one the
                # timer keeps for the next batch): the feed's step wakes the drain goroutine
                # before any timer acts, and it flushes then
                yield wake(float(at), int(ids[first]))
            else:
                if at > env.now:
                    yield env.timeout(at - env.now)
                yield env.timeout(0)          # one step after the timer
            yield from self._flush(s, end)
            s = end

    def _debounce(self, s: int, ready: int, c: float, linger: float, idle: np.ndarray,
                  most: int) -> tuple[int, float, float]:
        """(end, flush time, when the timer is last reset) of a debounce batch taken at
        ``c`` with ``[s, ready)`` there (-inf for a flush at ``max_batch``, no timer)."""
        t, n = self.t, self.ids.size
        if ready < n and t[ready] - c >= linger:
            j = ready                                 # nothing comes within the linger
        else:
            k = int(np.searchsorted(idle, ready + 1, side="left"))
            j = int(idle[k]) if k < idle.size else n
        if j - s >= most:                             # max_batch reached first
            return s + most, float(t[s + most - 1]), -np.inf
        last = c if j == ready else float(t[j - 1])
        return j, last + linger, last

    def _flush(self, s: int, end: int):
        if self.on_flush is not None:
            self.on_flush(end - s, self.env.now)
        i = s
        while i < end:
            taken, blocked = self.client.produce_chunk(self.ids[i:end])
            i += taken
            if blocked is not None:
                yield blocked
                i += 1


def aggregated_feed(env: simpy.Environment, ids: np.ndarray, arrival: np.ndarray,
                    fresh: np.ndarray, producer: np.ndarray, clients: list[Client]):
    """The feed without an outer batcher: the messages the feed publishes in one step go to
    their producers' clients as chunks (a run of one producer's messages each, in order;
    blocked records queue in the client)."""
    n = ids.size
    # a chunk starts where the instant changes or the producer does
    cut = fresh.copy()
    cut[1:] |= producer[1:] != producer[:-1]
    starts = np.flatnonzero(cut)
    bounds = np.r_[starts, n]
    for g in range(starts.size):
        a, b = int(bounds[g]), int(bounds[g + 1])
        if arrival[a] > env.now:
            yield Arrival(env, arrival[a])
        client = clients[int(producer[a])]
        chunk = ids[a:b]
        i = 0
        while i < chunk.size:
            taken, blocked = client.produce_chunk(chunk[i:])
            i += taken
            if blocked is not None:           # Publish does not wait: the rest queue too
                for msg in chunk[i + 1:].tolist():
                    client.produce(msg)
                break
