"""The client and the server sharing one machine's cores (``[service.machine]``).

Modelled on a Python client (``aerospike`` 19.x, a C extension) and an Aerospike server on
one 2-vCPU VM, as in the recorded calibration data (``validate/aerospike_model/
FINDINGS.md``, section 5). A call of ``n`` keys is three pieces of CPU work, each needing a
core:

1. the client's own work before the call (key conversion, ``pyobject_to_key``): a share
   ``client_pre_share`` of the client's part;
2. the server's work and the C client's I/O and parse, run without the client's lock
   (``Py_BEGIN_ALLOW_THREADS``);
3. the client's work after the reply (``batch_read_cb``: one ``BatchRecord`` per key, under
   ``PyGILState_Ensure``): the rest of the client's part.

The client's part is ``client_fixed_share`` of the call's fixed CPU plus
``client_key_share`` of its per-key cost (:class:`~simbatch.batching.servicecost.CallCost`);
with ``client_lock`` it holds the process's one lock (CPython's GIL), so client work of
different calls never overlaps. A piece of work made runnable while a core is idle first
wakes it (``wake_us``, the core reserved meanwhile; paid in the slow regime only: a halted
vCPU woken by an IPI and a VM exit and entry); otherwise it waits for a core. One running
piece runs at speed 1; ``k`` running share ``1 + (k - 1) (busy_capacity_cores - 1) /
(cores - 1)`` cores of work (two busy vCPUs of the recorded VMs deliver ~1.4-1.5: SMT
siblings or a shared host core), re-timed whenever one starts or ends (processor sharing).
A freed core or the released lock goes to a random waiter (``pick = "random"``: CFS orders
by virtual runtime and the GIL goes to whichever woken waiter takes it first), or the first
(``"fifo"``). A caller that starts its next call the instant its last one returns keeps its
core and the lock (a thread that does not block does not give them up).

At concurrency 1 a call in the slow regime takes exactly its median ``fixed_us +
per_record_us * n`` (two wake-ups and its CPU); at 2 or more, client and server compete for
the cores and the lock, which is what sets the recorded medians up to 200 keys.

Simplifications: the client's garbage collector (pauses that grow with batch size and with
calls in flight, above ~500 keys) is not modelled; neither is the GIL's 5 ms switch
interval (no client thread here runs Python for that long); the cores are one pool (no
per-core run queues).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Annotated, Literal

import numpy as np
import simpy

from ..core.config import NONE_WORD, Bool, Cores, Float, NonNeg, Rule, at, config

Share = Annotated[Float, at.Ge(0), at.Le(1)]


@config
class MachineConfig:
    """The cores the client and the server share, and the client's lock.

    Parameters
    ----------
    cores : int or None
        Cores the client's calls and the server share; ``None`` (``"none"`` in a scenario
        file) = the server runs elsewhere and nothing is shared (a call is then its median
        times its tail factor).
    busy_capacity_cores : float or None
        Cores' worth of work delivered when every core is busy (2 cores of a VM sharing
        host cores: ~1.5); ``None`` = ``cores`` (independent cores).
    wake_us : float
        Waking an idle core for a piece of work made runnable, per hand-off, microseconds
        (slow regime only; part of ``fixed_us``, which includes two).
    client_fixed_share, client_key_share : float
        The client's own share of the call's fixed CPU and of its per-key cost.
    client_pre_share : float
        The share of the client's work done before the call (the rest after the reply).
    client_lock : bool
        The client's work holds one process-wide lock (CPython's GIL).
    pick : {"random", "fifo"}
        Which waiter gets a freed core or the released lock.

    Examples
    --------
    >>> MachineConfig(cores=2, busy_capacity_cores=1.5).speed(2)
    0.75
    """

    cores: Annotated[Cores | None, NONE_WORD] = None
    busy_capacity_cores: Annotated[Annotated[Float, at.Ge(1)] | None, NONE_WORD] = None
    wake_us: NonNeg = 0.0
    client_fixed_share: Share = 0.3
    client_key_share: Share = 0.4
    client_pre_share: Share = 0.3
    client_lock: Bool = False
    pick: Literal["random", "fifo"] = "random"
    RULES = (Rule("busy_capacity_cores", "at most cores", lambda c: c.cores is None
                  or c.busy_capacity_cores is None or c.busy_capacity_cores <= c.cores),)

    def speed(self, running: int) -> float:
        """Speed of each of ``running`` pieces of work (1 = one core's worth)."""
        cores = self.cores or 1
        if running <= 1 or cores == 1:
            return 1.0 / max(running, 1)
        capacity = self.busy_capacity_cores if self.busy_capacity_cores is not None else cores
        k = min(running, cores)
        total = 1.0 + (k - 1) * (capacity - 1.0) / (cores - 1)
        return total / running


class _Call:
    """One call's pieces of work (seconds) and what to do when it returns."""

    __slots__ = ("pre", "server", "post", "wake", "on_returned")

    def __init__(self, pre: float, server: float, post: float, wake: float,
                 on_returned: Callable[[], object]) -> None:
        self.pre, self.server, self.post, self.wake = pre, server, post, wake
        self.on_returned = on_returned


class SharedMachine:
    """The machine's cores and the client's lock, shared by every call in flight (see the
    module docstring). Callbacks, no processes: a call is :meth:`call`."""

    def __init__(self, env: simpy.Environment, config: MachineConfig,
                 rng: np.random.Generator | None) -> None:
        self.env = env
        self.config = config
        self.rng = rng
        self.free = config.cores or 1          # cores neither running, waking nor held
        self.ready: list[Callable[[], None]] = []
        self.lock_free = True
        self.lock_queue: list[Callable[[], None]] = []
        self._lock = config.client_lock
        self._speeds = [config.speed(k) for k in range(self.free + 1)]
        self._running: dict[int, list] = {}    # id -> [work left (s), on_done]
        self._ids = itertools.count()
        self._last = 0.0
        self._version = 0
        self._next = -1
        self._in_tick = False
        self._handover = False
        self._random = config.pick == "random"

    # ------------------------------------------------------------------ a call
    def call(self, pre_s: float, server_s: float, post_s: float, wake_s: float,
             on_returned: Callable[[], object], *, continuing: bool = False) -> None:
        """Run one call: client work ``pre_s``, server work ``server_s``, client work
        ``post_s`` (seconds of one core), each hand-off to an idle core paying ``wake_s``;
        ``on_returned()`` when the last piece ends. The caller is running when it calls (no
        wake-up for the first piece). ``continuing``: called from inside the previous call's
        ``on_returned`` by the same thread, which keeps that call's core and lock."""
        c = _Call(pre_s, server_s, post_s, wake_s, on_returned)
        if continuing and self._handover:
            self._handover = False
            self._run(c.pre, lambda: self._pre_done(c))
            return
        begin = self._begin(c)
        if not self._lock:
            self._runnable(begin, 0.0)
        elif self.lock_free:
            self.lock_free = False
            self._runnable(begin, 0.0)
        else:                                   # blocked on the lock, woken when it comes
            self.lock_queue.append(lambda: self._runnable(begin, c.wake))

    def _begin(self, c: _Call) -> Callable[[], None]:
        return lambda: self._run(c.pre, lambda: self._pre_done(c))

    def _pre_done(self, c: _Call) -> None:
        self.free += 1                          # its core: the lock's waiter may take it
        self._release_lock()
        self._dispatch()
        self._runnable(lambda: self._run(c.server, lambda: self._server_done(c)), c.wake)

    def _server_done(self, c: _Call) -> None:
        self.free += 1
        self._dispatch()
        self._runnable(lambda: self._received(c), c.wake)

    def _received(self, c: _Call) -> None:
        post = lambda: self._run(c.post, lambda: self._returned(c))  # noqa: E731
        if not self._lock:
            post()
        elif self.lock_free:
            self.lock_free = False
            post()
        else:                                   # blocked on the lock: its core goes
            self.lock_queue.append(lambda: self._runnable(post, c.wake))
            self.free += 1
            self._dispatch()

    def _returned(self, c: _Call) -> None:
        self._handover = True
        c.on_returned()
        if self._handover:                      # no next call: give up the core and lock
            self._handover = False
            self.free += 1
            self._release_lock()
            self._dispatch()

    # ------------------------------------------------------------------ the lock
    def _release_lock(self) -> None:
        if not self._lock:
            return
        if self.lock_queue:
            self._pick(self.lock_queue)()       # the lock passes to the waiter
        else:
            self.lock_free = True

    def _pick(self, queue: list[Callable[[], None]]) -> Callable[[], None]:
        if self._random and len(queue) > 1:
            assert self.rng is not None
            return queue.pop(int(self.rng.integers(0, len(queue))))
        return queue.pop(0)

    # ------------------------------------------------------------------ the cores
    def _runnable(self, start: Callable[[], None], wake_s: float) -> None:
        """A piece of work is ready: on a free core (after waking it), or it waits."""
        if self.free <= 0:
            self.ready.append(start)
            return
        self.free -= 1
        if wake_s > 0:
            self.env.timeout(wake_s).callbacks.append(lambda _ev: start())
        else:
            start()

    def _dispatch(self) -> None:
        while self.ready and self.free > 0:
            self.free -= 1
            self._pick(self.ready)()

    def _advance(self) -> None:
        now = self.env.now
        if self._running and now > self._last:
            step = (now - self._last) * self._speeds[len(self._running)]
            for job in self._running.values():
                job[0] -= step
        self._last = now

    def _run(self, work_s: float, on_done: Callable[[], None]) -> None:
        """Run ``work_s`` on the core the caller holds; ``on_done()`` when it is done, the
        core still held (the caller hands it on)."""
        self._advance()
        self._running[next(self._ids)] = [work_s, on_done]
        if not self._in_tick:
            self._reschedule()

    def _reschedule(self) -> None:
        self._version += 1
        if not self._running:
            return
        self._next, job = min(self._running.items(), key=lambda kv: kv[1][0])
        version = self._version
        self.env.timeout(max(job[0], 0.0) / self._speeds[len(self._running)]).callbacks.append(
            lambda _ev: self._tick(version))

    def _tick(self, version: int) -> None:
        if version != self._version:            # re-timed since: a later timeout holds
            return
        self._advance()
        done = [jid for jid, job in self._running.items()
                if jid == self._next or job[0] <= 1e-12]
        self._in_tick = True
        try:
            for jid in done:
                self._running.pop(jid)[1]()
        finally:
            self._in_tick = False
        self._reschedule()
