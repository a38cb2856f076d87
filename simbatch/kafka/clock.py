"""The Kafka engine's clock: the simulation counts whole microseconds.

Inside a Kafka run, SimPy's time is in microseconds and every time is a whole number of them
(:func:`ticks`): the feed's schedule, the outer batcher's timer, the clients' lingers, each
request's latency and each fetch. Whole numbers are exact in float64 (up to 2^53 us), so two
events due at the same instant *are* at the same instant whichever path computed them: a 1 s
deadline armed by the message published at 40 x 25 ms coincides with the lingers armed by
the flush at 1 s. In seconds, ``40 * 0.025`` summed gap by gap differs from ``1.0`` in the
last bit, and which of two such events came first would be decided by rounding. On whole
microseconds, events at one instant run in the order they were scheduled (SimPy), and the
components state their tie rules (the outer batcher's timer wins over a message arriving at
that instant); the feed's step comes first at its instants (:class:`Arrival`). One
microsecond is far below anything measured (timer slack ~0.3-1 ms).
Results leave the engine in seconds (:data:`S_PER_TICK`).
"""

from __future__ import annotations

import simpy
from simpy.events import URGENT

S_PER_TICK = 1e-6


def ticks(t_s: float) -> float:
    """A time in seconds as the clock's whole microseconds.

    >>> ticks(0.025) * 40 == ticks(1.0)
    True
    """
    return float(round(t_s * 1e6))


class Arrival(simpy.Event):
    """The feed's step at ``at`` (clock units): it runs before every other event due at that
    instant, whenever that event was scheduled.

    Messages published at ``t`` are in their channels before any goroutine or timer acts at
    ``t``. Without this, whether a timer due at ``t`` ran before or after the feed's step
    would depend on when each was scheduled: the feed's wait at the previous arrival instant
    against the timer's arming, an order the per-batch engine (:mod:`.aggregate`) has no
    event to reproduce. SimPy runs an instant's urgent events before its normal ones, and
    anything the feed's step sets off (a goroutine woken on its channel) is a normal event
    after those already due.
    """

    def __init__(self, env: simpy.Environment, at: float) -> None:
        super().__init__(env)
        self._ok = True
        self._value = None
        env.schedule(self, URGENT, at - env.now)
