"""The Go scheduler's run queues as the insert phase meets them: cores, ``runnext``, and the
global run queue's lock.

From ``src/runtime/proc.go``:

* ``newproc`` puts a new goroutine in its P's ``runnext`` and pushes the previous one to the
  tail of the P's local run queue (``runqput(pp, gp, next=true)``); a full local queue (256
  slots) moves half of itself plus the new goroutine, 129 goroutines, to the **global** run
  queue under ``sched.lock`` (``runqputslow``). An idle P takes goroutines back from it under
  the same lock (``globrunqgetbatch``: ``min(128, len / GOMAXPROCS + 1)`` at a time), walking
  their ``schedlink`` lines one by one, so a goroutine that goes through the global queue costs
  ``sched.lock`` one line transfer. :func:`global_share` gives which of a spawner's children
  go that way when nobody steals from its queue (the upper bound: stealing empties it sooner).
* ``ready`` (a woken waiter: ``Semrelease`` → ``goready``) puts the goroutine in the waker's
  ``runnext``: it runs next on that P, before everything queued. Here: the front of the queue.

Simplifications: the per-P queues are merged into one FIFO shared by all cores (work stealing
keeps cores from idling while any queue holds work; its cost, ``runqgrab`` reading other Ps'
queues, is not charged); ``sched.lock`` is a FIFO serial section whose handoff slows with the
threads at it (:meth:`simbatch.core.cpu.CPUConfig.runtime_lock_factor`, golang/go#68578),
reserved by time arithmetic; a thread waiting at it spins briefly then sleeps, so its core
counts idle (one spinner counted busy while a queue stands).
"""

from __future__ import annotations

from collections import deque
from functools import lru_cache

import numpy as np

from ..core.cpu import CPUConfig

LOCAL_QUEUE_SLOTS = 256          # len(pp.runq)
Item = tuple[int, int]           # what the caller queues: (its kind of work, an id)


@lru_cache(maxsize=64)
def _shares(children: int) -> tuple[bool, ...]:
    queue: deque[int] = deque()
    runnext: int | None = None
    via_global = [False] * children
    for k in range(children):
        if runnext is None:
            runnext = k
            continue
        kicked, runnext = runnext, k
        if len(queue) < LOCAL_QUEUE_SLOTS:
            queue.append(kicked)
            continue
        for _ in range(LOCAL_QUEUE_SLOTS // 2):       # runqputslow: half the queue ...
            via_global[queue.popleft()] = True
        via_global[kicked] = True                     # ... and the goroutine being put
    return tuple(via_global)


def global_share(children: int) -> np.ndarray:
    """Which of ``children`` goroutines spawned back to back by one goroutine, in spawn order,
    reach the global run queue (``runqput`` / ``runqputslow``, no stealing meanwhile).

    >>> int(global_share(1024).sum()), int(global_share(257).sum())
    (774, 0)
    """
    return np.array(_shares(children), dtype=bool)


class RunQueue:
    """``cores`` cores and one queue of runnable goroutines (:data:`Item`); the caller's event
    loop gives the time. ``put`` appends (a new goroutine), ``ready`` puts at the front (a
    woken one: ``runnext``); ``take`` grants a free core to the next item, ``release`` frees
    one. Integrates cores busy (ns) and the time threads slept at ``sched.lock``."""

    def __init__(self, cpu: CPUConfig) -> None:
        self.cpu = cpu
        self.free = cpu.cores
        self.items: deque[Item] = deque()
        self.busy_ns = 0.0
        self._since = 0.0
        self.xfer = cpu.line_transfer_ns(cpu.cores)
        self.lock_hold = cpu.runq_lock_lines * self.xfer
        self.lock_free_at = 0.0
        self.lock_ends: deque[float] = deque()
        self.asleep_ns = 0.0

    def _account(self, now: float) -> None:
        self.busy_ns += (self.cpu.cores - self.free) * (now - self._since)
        self._since = now

    def put(self, item: Item) -> None:
        self.items.append(item)

    def ready(self, item: Item) -> None:
        self.items.appendleft(item)

    def take(self, now: float) -> Item | None:
        """The next item, now holding a core; None if no core is free or nothing waits."""
        if not self.free or not self.items:
            return None
        self._account(now)
        self.free -= 1
        return self.items.popleft()

    def release(self, now: float) -> None:
        self._account(now)
        self.free += 1

    def sched_lock(self, now: float) -> float:
        """A goroutine taken from the global queue: the time its core is through ``sched.lock``
        (FIFO; the hold slowed by the threads at the lock, this one included)."""
        ends = self.lock_ends
        while ends and ends[0] <= now:
            ends.popleft()
        hold = self.lock_hold * self.cpu.runtime_lock_factor(len(ends) + 1)
        start = max(now, self.lock_free_at)
        self.lock_free_at = start + hold
        ends.append(self.lock_free_at)
        self.asleep_ns += max(0.0, start - now - hold)
        return self.lock_free_at

    def busy_time(self, now: float) -> float:
        """Core-ns busy so far, less the time threads slept at ``sched.lock``."""
        self._account(now)
        return max(0.0, self.busy_ns - self.asleep_ns)
