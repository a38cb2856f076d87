"""Go's ``sync.Mutex`` (the bucket lock ``PutMultiBucket`` takes), normal and starvation modes.

The rules of ``src/internal/sync/mutex.go`` (``Lock``, ``lockSlow``, ``Unlock``,
``unlockSlow``), as the simulation of the insert phase drives them:

* **Normal mode.** A goroutine that finds the lock free takes it, even when a woken waiter is
  on its way (*barging*). One that finds it held queues at the tail of the wait queue (FIFO) and
  parks. ``Unlock`` frees the lock and, unless a waiter is already woken, wakes the head waiter
  (``runtime_Semrelease(handoff=false)``): the waiter does not own the lock, it competes for it
  when it runs; one that loses is queued again at the **front** (``queueLifo``).
* **Starvation mode.** A woken waiter that loses and has waited more than
  ``STARVATION_THRESHOLD_NS`` (``starvationThresholdNs`` = 1 ms) switches the mutex to
  starvation mode. Then ``Unlock`` hands ownership straight to the head waiter
  (``Semrelease(handoff=true)``, the unlocker yields its P) and arrivals queue at the tail
  without trying. The waiter that receives the lock switches back to normal mode when it
  waited less than 1 ms or is the last waiter.

Active spinning is not modelled: ``runtime_canSpin`` refuses while the P's local run queue is
not empty, as it never is with hundreds of runnable goroutines per core. Waiters are
identified by an integer (the caller's goroutine id).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

STARVATION_THRESHOLD_NS = 1e6


@dataclass
class MutexStats:
    """Counts over every bucket lock of a run (waits in ns, from the first ``Lock`` call)."""

    acquisitions: int = 0
    starving_acquisitions: int = 0      # found the mutex in starvation mode (hand-offs)
    barged: int = 0                     # woken waiters that lost the lock to an arrival
    waits_over_1ms: int = 0
    wait_ns: float = 0.0
    starvation_entries: int = 0


class GoMutex:
    """One ``sync.Mutex``; the caller owns time and cores and calls these at the right instants.

    Examples
    --------
    >>> stats = MutexStats()
    >>> m = GoMutex(stats)
    >>> m.lock(1, 0.0), m.lock(2, 10.0)         # 1 takes it, 2 parks
    (True, False)
    >>> m.unlock(100.0)                          # wakes 2 (normal mode: no ownership)
    (2, False)
    >>> m.lock(3, 150.0)                         # 3 barges in before 2 runs
    True
    >>> m.retry(2, 2e6)                          # 2 loses after > 1 ms: starvation mode
    False
    >>> m.starving, m.unlock(2.1e6)              # the unlock hands the lock to 2
    (True, (2, True))
    """

    __slots__ = ("locked", "starving", "woken", "waiters", "since", "stats")

    def __init__(self, stats: MutexStats) -> None:
        self.locked = False
        self.starving = False
        self.woken = False
        self.waiters: deque[int] = deque()
        self.since: dict[int, float] = {}      # waiter -> its first Lock call (ns)
        self.stats = stats

    def _acquired(self, g: int, now: float) -> None:
        self.locked = True
        s = self.stats
        s.acquisitions += 1
        start = self.since.pop(g, None)
        if start is not None:
            s.wait_ns += now - start
            if now - start > STARVATION_THRESHOLD_NS:
                s.waits_over_1ms += 1

    def lock(self, g: int, now: float) -> bool:
        """``Lock`` by a goroutine not yet waiting: True if it holds the lock, else it parked."""
        if not self.locked and not self.starving:
            self._acquired(g, now)
            return True
        self.since[g] = now
        self.waiters.append(g)
        return False

    def retry(self, g: int, now: float) -> bool:
        """A woken waiter runs (normal mode): True if it took the lock, else it parked again
        at the front, after switching the mutex to starvation mode if it waited > 1 ms."""
        self.woken = False
        if not self.locked and not self.starving:
            self._acquired(g, now)
            return True
        self.stats.barged += 1
        if now - self.since[g] > STARVATION_THRESHOLD_NS and not self.starving:
            self.starving = True
            self.stats.starvation_entries += 1
        self.waiters.appendleft(g)
        return False

    def owns(self, g: int, now: float) -> None:
        """The waiter the lock was handed to (starvation mode) runs and takes ownership."""
        waited = now - self.since[g]
        self._acquired(g, now)
        self.stats.starving_acquisitions += 1
        if waited < STARVATION_THRESHOLD_NS or not self.waiters:
            self.starving = False

    def unlock(self, now: float) -> tuple[int, bool] | None:
        """``Unlock``: the waiter to ready and whether it was handed the lock, or None."""
        if self.starving:
            return self.waiters.popleft(), True    # starving implies a waiter
        self.locked = False
        if not self.waiters or self.woken:
            return None
        self.woken = True
        return self.waiters.popleft(), False
