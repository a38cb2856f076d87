"""A pool of identical units granted first come, first served: cores, mutexes, permits.

One permit pool for every engine: go-batcher's ``SetMaxConcurrent`` slots, a database
client's in-flight permits (teranode's connection throttle), a machine's cores, a
``sync.Mutex`` (one unit).

Not ``simpy.Resource``: that keeps waiting requests in a list and removes from its front,
which is quadratic when hundreds of thousands of goroutines are runnable at once (the old
map-fill design spawns 262,144 for one block); a deque makes every grant O(1). Grants are
synchronous callbacks (:meth:`FifoPool.acquire`), so a unit passes to the next waiter at
the very instant and in the very order it is released; :meth:`FifoPool.request` wraps one in
a SimPy event for processes. The pool integrates the number of busy units over time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import simpy


class FifoPool:
    """``capacity`` identical units granted in FIFO order.

    Examples
    --------
    >>> env = simpy.Environment()
    >>> pool = FifoPool(env, 1)
    >>> a, b = pool.request(), pool.request()
    >>> a.triggered, b.triggered
    (True, False)
    >>> pool.release(); b.triggered
    True
    """

    def __init__(self, env: simpy.Environment, capacity: int) -> None:
        self.env = env
        self.capacity = capacity
        self.in_use = 0
        self.waiting: deque[Callable[[], Any]] = deque()
        self._busy = 0.0
        self._since = 0.0

    def _account(self) -> None:
        now = self.env.now
        self._busy += self.in_use * (now - self._since)
        self._since = now

    @property
    def busy_time(self) -> float:
        """Units busy, integrated over time (in the environment's time unit)."""
        self._account()
        return self._busy

    @property
    def free(self) -> bool:
        return self.in_use < self.capacity and not self.waiting

    def try_acquire(self) -> bool:
        """Take a unit if one is free now; never waits."""
        if not self.free:
            return False
        self._account()
        self.in_use += 1
        return True

    def acquire(self, on_grant: Callable[[], Any]) -> None:
        """Call ``on_grant`` once a unit is held: now if one is free, else when released."""
        if self.try_acquire():
            on_grant()
        else:
            self.waiting.append(on_grant)

    def request(self) -> simpy.Event:
        """An event that succeeds when a unit is held."""
        event = self.env.event()
        self.acquire(lambda: self._grant(event))
        return event

    @staticmethod
    def _grant(event: simpy.Event) -> None:
        event.succeed()

    def release(self) -> None:
        if self.waiting:
            self.waiting.popleft()()      # the unit passes straight to the next
        else:
            self._account()
            self.in_use -= 1
