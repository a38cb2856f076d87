"""The application's outer batcher in front of a Kafka client (teranode
``util/kafka/kafka_producer_async.go``, its drain goroutine after PR #894), with either timer.

One drain goroutine per producer. Each pass: with an empty buffer, a blocking receive of one
message; with ``len(buffer) >= max_batch``, a synchronous flush; otherwise a select on
{message -> append, timer -> flush all}. A flush calls ``Produce`` serially for each
buffered message on the drain goroutine itself; ``Produce`` blocks while the client is at
``MaxBufferedRecords``, and while it blocks nothing is received.

The timer (``timer``):

* ``"debounce"`` (teranode's): the timer is **reset to ``linger``** on every pass with a
  non-empty buffer, i.e. after every appended message: it fires only after ``linger``
  without a new message (an idle timer);
* ``"deadline"``: the timer starts when the first message enters the empty buffer and fires
  ``linger`` after it whatever arrives meanwhile (go-batcher's first-item timer; the
  ``-outer-timer deadline`` of ``validate/franzgo`` and ``validate/javaproducer``).

A message that arrives at the very instant the timer fires goes into the next batch (the
timer wins the tie), so with a periodic feed a deadline ``T`` flushes ``T / interval``
messages. Adaptive slow mode (``slow = true``): linger x 4 clamped to [50 ms, 500 ms] (after
PR #894; [200 ms, 5 s] before it, ``slow_clamp = "pre894"``) and max_batch x 4 clamped to
[100, 20,000]. The toggle itself (a broker write-rate hook) is not modelled: slow mode is a
setting of the case. Simplification: Publish into the outer channel never blocks (its
capacity, 10,000 in the validator, is far above the cases modelled).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Annotated, Literal

import simpy

from ..core.config import NONE_WORD, Bool, NonNeg, PosInt, config
from .clock import S_PER_TICK, ticks

CLAMPS = {"post894": (0.050, 0.500), "pre894": (0.200, 5.0)}


@config
class OuterBatcherConfig:
    """Parameters of the outer debounce batcher (``[outer]``).

    Parameters
    ----------
    linger_ms : float or None
        The timer's linger; ``None`` (``"none"`` in a scenario file) = no outer batcher,
        messages go straight to Produce.
    timer : {"debounce", "deadline"}
        Flush ``linger_ms`` after the last message (debounce, teranode's) or after the
        first message of the batch (deadline).
    max_batch : int
        Size trigger (``flush_messages``).
    slow : bool
        Adaptive slow mode on.
    slow_clamp : {"post894", "pre894"}

    Examples
    --------
    >>> OuterBatcherConfig(linger_ms=10, slow=True).effective_linger_s
    0.05
    """

    linger_ms: Annotated[NonNeg | None, NONE_WORD] = 10.0
    timer: Literal["debounce", "deadline"] = "debounce"
    max_batch: PosInt = 50_000
    slow: Bool = False
    slow_clamp: Literal["post894", "pre894"] = "post894"

    @property
    def effective_linger_s(self) -> float:
        linger = (self.linger_ms or 0.0) / 1e3
        if self.slow:
            lo, hi = CLAMPS[self.slow_clamp]
            return min(max(linger * 4, lo), hi)
        return linger

    @property
    def effective_max_batch(self) -> int:
        return min(max(self.max_batch * 4, 100), 20_000) if self.slow else self.max_batch


class OuterBatcher:
    """The drain goroutine. ``produce(msg)`` returns ``None`` or an event to wait on."""

    def __init__(self, env: simpy.Environment, config: OuterBatcherConfig,
                 produce: Callable[[int], simpy.Event | None],
                 on_flush: Callable[[int, float], None] | None = None) -> None:
        self.env = env
        self.config = config
        self.produce = produce
        self.on_flush = on_flush
        self._inbox: deque[int] = deque()
        self._wake: simpy.Event | None = None
        self._timer_gen = 0
        self._timer_due = False
        self._timer_at = float("inf")
        self.closed = False
        self.process: simpy.Process | None = None

    def start(self) -> simpy.Process:
        self.process = self.env.process(self._run())
        return self.process

    def publish(self, msg: int) -> None:
        self._inbox.append(msg)
        self._notify()

    def close(self) -> None:
        self.closed = True
        self._notify()

    def _notify(self) -> None:
        if self._wake is not None and not self._wake.triggered:
            self._wake.succeed()

    def _arm(self, linger: float) -> None:
        self._timer_gen += 1
        self._timer_due = False
        self._timer_at = self.env.now + linger
        gen = self._timer_gen
        self.env.timeout(linger).callbacks.append(lambda _e: self._fire(gen))

    def _disarm(self) -> None:
        self._timer_gen += 1
        self._timer_due = False
        self._timer_at = float("inf")

    def _fire(self, gen: int) -> None:
        if gen == self._timer_gen:
            self._timer_due = True
            self._notify()

    def _expired(self) -> bool:
        # the timer wins a tie with a message that arrives at the same instant
        return self._timer_due or self.env.now >= self._timer_at

    def _flush(self, buffer: list[int]):
        self._disarm()
        if self.on_flush is not None:
            self.on_flush(len(buffer), self.env.now * S_PER_TICK)
        for msg in buffer:
            blocked = self.produce(msg)
            if blocked is not None:
                yield blocked

    def _run(self):
        linger = ticks(self.config.effective_linger_s)
        max_batch = self.config.effective_max_batch
        deadline = self.config.timer == "deadline"
        buffer: list[int] = []
        while True:
            if not buffer:
                if not self._inbox:
                    if self.closed:
                        return
                    self._wake = self.env.event()
                    yield self._wake
                    continue
                buffer.append(self._inbox.popleft())
                if deadline:
                    self._arm(linger)
                continue
            if len(buffer) >= max_batch:
                yield from self._flush(buffer)
                buffer = []
                continue
            if self._inbox and (not deadline or not self._expired()):
                buffer.append(self._inbox.popleft())   # ready at once: the select takes it
                continue
            if not deadline:
                self._arm(linger)             # debounce: reset after every message
            while not self._inbox and not self._expired() and not self.closed:
                self._wake = self.env.event()
                yield self._wake
            if self._inbox and not self._expired():
                buffer.append(self._inbox.popleft())
                continue
            yield from self._flush(buffer)
            buffer = []
