"""Go channels and wait groups between simulated goroutines (:mod:`.scheduler`).

Models ``src/runtime/chan.go`` and ``src/sync/waitgroup.go`` as far as the batcher pipeline
uses them:

* **send** (``chansend``): a parked receiver takes the value directly and is readied
  (``send`` -> ``goready``); else the value goes into the buffer if it has room; else the
  sender parks in the channel's send queue, FIFO.
* **receive** (``chanrecv``): from the buffer, and if a sender is parked, its value moves
  into the freed slot and it is readied (``recv``); from an unbuffered channel, directly
  from the first parked sender; else the receiver parks.
* **select** with several channels parks one waiter on all of them; the first case to
  fire claims it (``selectgo``'s ``selectDone``), the others skip it.
* **WaitGroup**: ``Done`` readies the waiter when the count reaches zero.
* **the channel's lock** (``[go] lock_ns``, ``lock_sleep``; :meth:`Chan.lock`): an
  operation that comes within ``lock_ns`` of another processor's on the same channel finds
  the lock held, and spins or sleeps (:mod:`.scheduler`). go-batcher's item channel is the
  one the pipeline contends on; its users call :meth:`Chan.lock` before each operation.

Each operation is a generator used with ``yield from`` inside a goroutine's body; it yields
its CPU cost (``[go]`` ``chan_ns``, ``ready_ns``) and :data:`~.scheduler.PARK` when it blocks.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from typing import Any, cast

from .scheduler import PARK, G, P, Scheduler

Op = Generator[Any, Any, Any]


class Waiter:
    """A goroutine parked on one channel or on a ``select`` of several: the first case
    that fires claims it and sets ``case`` and ``value``."""

    __slots__ = ("g", "case", "value", "done")

    def __init__(self, g: G) -> None:
        self.g = g
        self.case: Any = None
        self.value: Any = None
        self.done = False

    def claim(self, case: Any, value: Any) -> bool:
        if self.done:
            return False
        self.done, self.case, self.value = True, case, value
        return True


class Chan:
    """A channel of ``capacity`` values (0: unbuffered) between goroutines.

    ``on_enter(value, now)`` is called when a value enters the buffer or is handed to a
    receiver (the item's enqueue time, for the records).
    """

    def __init__(self, sched: Scheduler, capacity: int,
                 on_enter: Callable[[Any, float], None] | None = None) -> None:
        self.sched = sched
        self.capacity = capacity
        self.buf: deque[Any] = deque()
        self.recvq: deque[Waiter] = deque()
        self.sendq: deque[tuple[G, Any]] = deque()
        self.on_enter = on_enter
        cfg = sched.config
        self._op_ns = cfg.chan_ns
        self._wake_ns = cfg.chan_ns + cfg.ready_ns
        self.locking = bool(cfg.lock_ns) and len(sched.ps) > 1
        self._lock_s = cfg.lock_ns * 1e-9
        self._lock_sleep = cfg.lock_sleep
        self._ops: list[deque[float]] = [deque(maxlen=64) for _ in sched.ps]
        self.lock_sleeps = 0
        self.lock_held = 0
        self.sleepers = 0               # threads asleep on the lock now (_lock_sleep)

    def __len__(self) -> int:
        return len(self.buf)

    def lock(self, offset_ns: float, at_tail: bool = False) -> float:
        """The running goroutine takes the channel's lock ``offset_ns`` after the CPU it has
        yielded in this run (``offset_ns``: CPU it has spent and not yet yielded).

        Another processor's operation holds the lock for ``[go] lock_ns`` from its start.
        Found held, the thread sleeps with chance ``lock_sleep`` (returns -1: the caller
        calls :meth:`Scheduler.lock_sleep`, yields and tries again); else it spins until the
        holder lets go and returns those nanoseconds, which the caller adds to its CPU. A
        thread ``at_tail`` -- woken from a sleep on this lock that it went to with no other
        thread asleep on it -- spins and does not sleep again: ``lock2``
        (``src/runtime/lock_spinbit.go``, Go 1.26) sets ``atTail`` for an M woken at the
        bottom of the waiters' stack and lets it spin as the spin bit's holder would, four
        rounds of ``procyield(30)`` and an ``osyield``, microseconds against the
        ``lock_ns`` another operation holds the lock for. An
        operation of the other processor that the model ran ahead of this one (later in
        time, already done) and that overlaps it counts as held too: the model cannot make
        the other wait after the fact, so this one does."""
        sched = self.sched
        t = sched.now + (sched.run_ns + offset_ns) * 1e-9
        window = self._lock_s
        lo = t - window
        mine = self._ops[cast(P, sched.p).id]
        for ops in self._ops:
            if ops is mine or not ops or ops[-1] <= lo:
                continue                     # the usual case: nothing of the other's near
            for tq in reversed(ops):
                if tq <= lo:
                    break
                if tq < t + window:
                    self.lock_held += 1
                    if not at_tail and sched.uniform() < self._lock_sleep:
                        self.lock_sleeps += 1
                        return -1.0
                    spin = (max(tq, t) + window - t) * 1e9
                    mine.append(t + spin * 1e-9)
                    return spin
        mine.append(t)
        return 0.0

    @property
    def ready(self) -> bool:
        """A receive would not block."""
        return bool(self.buf) or bool(self.sendq)

    def try_send(self, value: Any) -> float | None:
        """A send that does not block: hands ``value`` to a parked receiver or buffers it
        and returns the CPU ns; ``None`` (nothing done) if the sender must block."""
        while self.recvq:
            waiter = self.recvq.popleft()
            if waiter.claim(self, value):
                if self.on_enter is not None:
                    self.on_enter(value, self.sched.now)
                self.sched.ready(waiter.g)
                return self._wake_ns
        if len(self.buf) < self.capacity and not self.sendq:
            self.buf.append(value)
            if self.on_enter is not None:
                self.on_enter(value, self.sched.now)
            return self._op_ns
        return None

    def send(self, g: G, value: Any) -> Op:
        """``ch <- value`` by goroutine ``g``: as :meth:`try_send`, else it parks."""
        ns = self.try_send(value)
        if ns is not None:
            yield ns
            return
        self.sendq.append((g, value))
        yield PARK

    def poll(self) -> tuple[bool, Any, float]:
        """A non-blocking receive: (received, value, CPU ns)."""
        if self.buf:
            value = self.buf.popleft()
            if self.sendq:
                sender, sent = self.sendq.popleft()
                self.buf.append(sent)
                if self.on_enter is not None:
                    self.on_enter(sent, self.sched.now)
                self.sched.ready(sender)
                return True, value, self._wake_ns
            return True, value, self._op_ns
        if self.sendq:
            sender, value = self.sendq.popleft()
            if self.on_enter is not None:
                self.on_enter(value, self.sched.now)
            self.sched.ready(sender)
            return True, value, self._wake_ns
        return False, None, self._op_ns

    def recv(self, g: G) -> Op:
        """``<-ch`` by goroutine ``g``; returns the value."""
        ok, value, cost = self.poll()
        yield cost
        if ok:
            return value
        waiter = Waiter(g)
        self.recvq.append(waiter)
        yield PARK
        return waiter.value

    def park(self, waiter: Waiter) -> None:
        """Register a ``select`` waiter as a receiver (the caller then yields PARK)."""
        self.recvq.append(waiter)


class WaitGroup:
    """``sync.WaitGroup`` with one waiter."""

    __slots__ = ("sched", "count", "waiter")

    def __init__(self, sched: Scheduler, count: int = 0) -> None:
        self.sched = sched
        self.count = count
        self.waiter: G | None = None

    def done(self) -> float:
        """``Done``; returns the CPU ns of readying the waiter, if it did."""
        self.count -= 1
        if self.count == 0 and self.waiter is not None:
            g, self.waiter = self.waiter, None
            self.sched.ready(g)
            return self.sched.config.ready_ns
        return 0.0

    def wait(self, g: G) -> Op:
        """``Wait`` by goroutine ``g``."""
        if self.count > 0:
            self.waiter = g
            yield PARK
