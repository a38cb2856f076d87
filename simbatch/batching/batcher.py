"""The size-or-timer batcher of ``bsv-blockchain/go-batcher`` (its ``batcher.go``, v1.1.0 to
v2.0.6).

Modelled, by version:

* **Timer.** ``timer = "cycle"`` is v1.0.0-v1.2.3 (teranode's v1.1.0 in Nov 2025): a timer of
  ``timeout`` is armed at the start of every cycle, a full batch ends the cycle early, a
  firing timer flushes a non-empty batch, and a new cycle starts at once even when the batch
  is empty, so the timer is anchored at the end of the previous flush.
  ``timer = "first_item"`` is v1.2.4+ and v2 ("max age"): armed only when an item arrives at
  an empty batch, never extended by later items, stopped by a size flush.
* **Tick mode** (v2.0.2+, ``tick_ms``): a fixed-cadence ticker created with the batcher,
  attached at the first item; a tick flushes a non-empty batch; the lazy timer is off; ticks
  that arrive while one is pending are dropped (a Go ticker's 1-slot channel).
* **Drain mode** (v1.2.8+): one blocking receive, then non-blocking receives while the batch
  is below ``size``, then flush at once; a 1-item batch when nothing else is queued.
* **Dispatch.** ``inline`` (background=false: the worker is busy for the service time),
  ``background`` (a new goroutine per batch, unbounded), ``pool`` (SetMaxConcurrent(n): the
  worker blocks until one of n slots is free, so backpressure reaches Put through the
  ``64 x size`` channel).
* **Close** (v2.0.4+): drain the channel, dispatch the remainder synchronously in chunks of at
  most ``size``, wait for in-flight background batches.

The host's timers fire late by ``HostConfig.timer_overshoot_us`` (the scenario's ``[host]``
table), applied to the timer and to ticks; with a measured host (``[host] model = ...``)
each timer's and tick's lateness is drawn from the host's ``timer_us`` distribution instead
(:mod:`simbatch.batching.hosttiming`).

Simplifications: ``Trigger()``, PutBatch and greedy accumulate are not modelled. Work at one
simulated instant is ordered by SimPy's event queue, so when a timer and an item are ready
at the same instant the one scheduled first wins (Go's select picks at random).
"""

from __future__ import annotations

from typing import Annotated, Literal

import simpy

from ..core.config import Bool, Float, PosInt, Rule, at, config
from ..core.pool import FifoPool
from ..core.work import EventGuard
from .channel import Channel
from .hosttiming import HostTiming

MAX_CONCURRENT = 100_000
"""``SetMaxConcurrent``'s bound here: the Go engine starts one goroutine per slot."""

TIMERS = ("first_item", "cycle")
DISPATCHES = ("inline", "background", "pool")
# Flush triggers, as stored in batch records.
SIZE, TIMER, DRAIN, CLOSE, TICK = "size", "timer", "drain", "close", "tick"
TRIGGERS = (SIZE, TIMER, DRAIN, CLOSE, TICK)


# Periodic timers below a microsecond are no timer a Go program runs, and would make a run
# of millions of firings: refused.
MIN_PERIOD_MS = 1e-3


@config
class BatcherConfig:
    """Settings of one go-batcher instance.

    Parameters
    ----------
    size : int
        Size cap: a batch flushes at once when it holds ``size`` items.
    timeout_ms : float
        Timer duration in milliseconds (the ``duration`` of ``NewWithPool``).
    timer : {"first_item", "cycle"}
        Timer semantics: v1.2.4+ max age from the first item, or v1.1.0 cycle timer.
    tick_ms : float or None
        Tick mode interval; replaces the lazy timer. ``None`` = off.
    drain : bool
        Drain mode (no timer; flush whatever is queued).
    dispatch : {"inline", "background", "pool"}
        Where the flush function runs.
    max_concurrent : int or None
        Pool size for ``dispatch = "pool"`` (required there, not allowed elsewhere).
    queue_factor : int
        Channel capacity in multiples of ``size`` (go-batcher: 64).

    Examples
    --------
    >>> BatcherConfig(size=100, timeout_ms=10).queue_capacity
    6400
    """

    size: PosInt = 100
    timeout_ms: Annotated[Float, at.Ge(0)] = 10.0
    timer: Literal["first_item", "cycle"] = "first_item"
    tick_ms: Annotated[Float, at.Ge(MIN_PERIOD_MS)] | None = None
    drain: Bool = False
    dispatch: Literal["inline", "background", "pool"] = "inline"
    max_concurrent: Annotated[PosInt, at.Le(MAX_CONCURRENT)] | None = None
    queue_factor: PosInt = 64
    RULES = (
        Rule("timeout_ms", f">= {MIN_PERIOD_MS:g} with timer = 'cycle' (a cycle re-arms the "
             "timer whether or not items came)",
             lambda c: c.timer != "cycle" or c.tick_ms is not None or c.drain
             or c.timeout_ms >= MIN_PERIOD_MS),
        Rule("max_concurrent", "set when dispatch = 'pool'",
             lambda c: c.dispatch != "pool" or c.max_concurrent is not None),
        Rule("max_concurrent", "unset unless dispatch = 'pool'",
             lambda c: c.dispatch == "pool" or c.max_concurrent is None),
        Rule("drain", "false when tick_ms is set (go-batcher forbids both)",
             lambda c: not (c.drain and c.tick_ms is not None)),
    )

    @property
    def queue_capacity(self) -> int:
        return self.queue_factor * self.size


class Batcher:
    """One go-batcher worker around a :class:`Channel`; build, then :meth:`start`.

    ``service`` records a closed batch (``close_batch``) and runs its call (``submit``,
    returning a SimPy event that succeeds when the flush function has finished); see
    :class:`simbatch.service.BatchService`. A batch closes when its trigger fires; with a
    pool, the wait for a free slot after that is the batch's dispatch wait.
    """

    def __init__(self, env: simpy.Environment, config: BatcherConfig, service, *,
                 on_enqueue=None, overshoot_s: float = 0.0,
                 guard: EventGuard | None = None, timing: HostTiming | None = None) -> None:
        self.env = env
        self.config = config
        self.service = service
        self.channel = Channel(env, config.queue_capacity, on_enqueue)
        self._timeout_s = config.timeout_ms / 1e3 + overshoot_s
        self._overshoot_s = overshoot_s
        self._timing = timing if timing is not None and timing.measured else None
        self._guard = guard or EventGuard(float("inf"))
        self._timer_gen = 0
        self._timer_due = False
        self._tick_due = False
        self._ticker_on = False
        self._closed = False
        self._slots = FifoPool(env, config.max_concurrent) if config.max_concurrent else None
        self._outstanding = 0                  # background batches not yet finished
        self._drained: simpy.Event | None = None
        self.process: simpy.Process | None = None

    # ------------------------------------------------------------------ wiring
    def start(self) -> simpy.Process:
        self._ticker_origin = self.env.now
        self.process = self.env.process(self._run())
        return self.process

    def put(self, item: int) -> simpy.Event | None:
        return self.channel.put(item)

    def close(self) -> None:
        """Ask the worker to flush what is left and stop (go-batcher v2.0.4 Close)."""
        self._closed = True
        self.channel.wake_receiver()

    # ------------------------------------------------------------------ timers
    def _arm_timer(self) -> None:
        if self.config.timer == "cycle":
            self._guard.fired("BatcherConfig", "timeout_ms", self.config.timeout_ms,
                              self.env.now)
        self._timer_gen += 1
        self._timer_due = False
        gen = self._timer_gen
        d_s = (self._timeout_s if self._timing is None
               else self._timing.timer_s(self.config.timeout_ms / 1e3))
        timeout = self.env.timeout(d_s)
        timeout.callbacks.append(lambda _ev: self._on_timer(gen))

    def _disarm_timer(self) -> None:
        self._timer_gen += 1
        self._timer_due = False

    def _on_timer(self, gen: int) -> None:
        if gen == self._timer_gen:
            self._timer_due = True
            self.channel.wake_receiver()

    def _ticker(self):
        # A time.Ticker created with the batcher: ticks at origin + k * d, whatever flushes do.
        period = self.config.tick_ms / 1e3
        elapsed = self.env.now - self._ticker_origin
        k = int(elapsed // period) + 1
        while not self._closed:
            late = (self._overshoot_s if self._timing is None
                    else self._timing.timer_s(period) - period)
            yield self.env.timeout(self._ticker_origin + k * period - self.env.now + late)
            k += 1
            self._guard.fired("BatcherConfig", "tick_ms", self.config.tick_ms, self.env.now)
            if not self._tick_due:
                self._tick_due = True
                self.channel.wake_receiver()

    # ------------------------------------------------------------------ worker
    def _run(self):
        cfg = self.config
        ch = self.channel
        size = cfg.size
        first_item = cfg.timer == "first_item" and cfg.tick_ms is None and not cfg.drain
        cycle = cfg.timer == "cycle" and cfg.tick_ms is None and not cfg.drain
        batch: list[int] = []
        opened_at = self.env.now
        if cycle:
            self._arm_timer()
        while True:
            if cfg.drain:
                while ch.items:
                    batch = [ch.take()]
                    opened_at = self.env.now
                    while len(batch) < size and ch.items:
                        batch.append(ch.take())
                    yield from self._flush(batch, SIZE if len(batch) == size else DRAIN,
                                           opened_at)
                batch = []
            else:
                while ch.items:
                    if not batch:
                        if first_item:
                            opened_at = self.env.now
                            self._arm_timer()
                        elif cfg.tick_ms is not None and not self._ticker_on:
                            self._ticker_on = True
                            self.env.process(self._ticker())
                        if not cycle and not first_item:
                            opened_at = self.env.now
                    batch.append(ch.take())
                    if len(batch) == size:
                        self._disarm_timer()
                        yield from self._flush(batch, SIZE, opened_at)
                        batch = []
                        if cycle:
                            opened_at = self.env.now
                            self._arm_timer()
                if self._timer_due:
                    self._timer_due = False
                    if batch:
                        yield from self._flush(batch, TIMER, opened_at)
                        batch = []
                    if cycle:
                        opened_at = self.env.now
                        self._arm_timer()
                    continue
                if self._tick_due:
                    self._tick_due = False
                    if batch:
                        yield from self._flush(batch, TICK, opened_at)
                        batch = []
                    continue
            if ch.items:
                continue
            if self._closed:
                break
            yield ch.wait()
        yield from self._close(batch, opened_at)

    def _close(self, batch: list[int], opened_at: float):
        self._disarm_timer()
        ch = self.channel
        while batch or ch.items:
            while len(batch) < self.config.size and ch.items:
                batch.append(ch.take())
            batch_id = self.service.close_batch(batch, CLOSE, opened_at)
            yield self.service.submit(batch_id, batch)
            batch, opened_at = [], self.env.now
        if self._outstanding:
            self._drained = self.env.event()
            yield self._drained

    def _flush(self, batch: list[int], trigger: str, opened_at: float):
        dispatch = self.config.dispatch
        batch_id = self.service.close_batch(batch, trigger, opened_at)
        if dispatch == "inline":
            yield self.service.submit(batch_id, batch)
            return
        if self._slots is not None:           # dispatch = "pool"
            slots = self._slots
            if not slots.try_acquire():
                yield slots.request()
            done = self.service.submit(batch_id, batch)
            done.callbacks.append(lambda _ev: slots.release())
        else:
            done = self.service.submit(batch_id, batch)
        self._outstanding += 1
        done.callbacks.append(self._background_done)

    def _background_done(self, _event: simpy.Event) -> None:
        self._outstanding -= 1
        if self._outstanding == 0 and self._drained is not None:
            self._drained.succeed()
