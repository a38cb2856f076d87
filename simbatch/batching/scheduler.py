"""Go's scheduler: which runnable goroutine runs next, on which processor, and when.

The rules are those of the Go runtime the harness ran (Go 1.26, ``src/runtime/proc.go``):

* **runnext.** A goroutine made runnable by the running one (``ready`` with ``next=true``,
  called by ``goready`` for a channel hand-off or ``wg.Done``, and by ``newproc`` for a
  ``go`` statement) goes into its processor's one-slot ``runnext``; the goroutine that held
  the slot is kicked to the tail of the local run queue (``runqput``). ``schedule`` ->
  ``findRunnable`` -> ``runqget`` runs ``runnext`` first, then the local queue in FIFO
  order, then the global queue. The local queue holds 256: a goroutine put on a full one
  moves the older half of it, and itself, to the global queue's tail (``runqputslow``).
  A processor out of local work takes a batch from the global queue (``globrunqgetbatch``:
  up to ``size / GOMAXPROCS + 1``, at most half a local queue) and runs the first.
* **Time slices.** A goroutine taken from ``runnext`` inherits the running time slice
  (``runqget``'s ``inheritTime``); any other starts a new one, and the processor's
  ``schedtick`` counts them (``execute``). Every 61st tick, a processor that schedules
  looks at the global queue first (``findRunnable``: ``schedtick%61 == 0``). ``sysmon``
  wakes every 10 ms while the processors are busy (its sleep doubles from 20 us up to 10 ms
  while it finds nothing to do) and preempts the goroutine running on a processor whose
  ``schedtick`` it saw unchanged 10 ms before (``retake``, ``forcePreemptNS``: "a single
  long-running goroutine or a sequence of goroutines run via runnext, which share a single
  schedtick time slice"); the preempted goroutine goes to the global queue's tail
  (``gopreempt_m`` -> ``goschedImpl`` -> ``globrunqput``) and the processor schedules. A
  request that finds the goroutine blocking at the end of its run lapses (``execute`` clears
  ``gp.preempt``); ``sysmon`` asks again 10 ms later. In drain mode the worker, the pool's
  flush goroutines and the transactions hand the processor to each other through
  ``runnext`` for long stretches, so a slice lasts until ``sysmon`` cuts it, and the
  goroutine it cuts -- most often a flush goroutine in a CPU-burning flush -- waits in the
  global queue, its pool slot held, behind whatever overflowed there.
* **Work stealing.** A processor out of work steals half of another's local queue
  (``stealWork`` -> ``runqsteal`` -> ``runqgrab``: ``n - n/2``) and runs the last of them;
  only when that queue is empty, on its last attempt, does it take the other's
  ``runnext``, and if that processor is running it first sleeps ``usleep(3)`` "to ensure
  that pp isn't about to run the g we are about to steal" (``runqgrab``), so a goroutine
  readied by a producer that is about to block usually runs on the producer's processor.
  The sleep lasts what the host makes of a 3 us nanosleep (``[host] backoff_us``).
* **Waking idle processors.** Readying a goroutine or starting one calls ``wakep``: if a
  processor is idle and no thread is spinning, one idle processor's thread is woken
  (``startm``); it starts looking for work after a wake-up latency (a futex wake and the
  kernel scheduling the thread), drawn from the host's measured distribution (``[host]
  wake_us``). A thread that finds work stops spinning and, being the last spinner, wakes
  another (``resetspinning``).
* **Timers.** A timer or sleep that expires while a processor is running fires at that
  processor's next scheduling point (``checkTimers`` at the top of ``schedule`` /
  ``findRunnable``) and its goroutine goes into that processor's ``runnext``. While a
  processor is idle its thread waits for the earliest timer in ``netpoll``
  (``runtime/netpoll_epoll.go``): ``epoll_wait`` for ``delay / 1 ms`` whole milliseconds,
  truncated, and 1 ms for any delay under 1 ms, each wait returning late by the host's
  measured overshoot of a 1 ms wait (``[host] sleep_us``, key 1000); it then runs the
  timers due, or waits again. So ``time.Sleep(500us)`` in an idle process takes ~1.1 ms,
  a 10 ms timer ~10.2 ms, and any other wake-up of the idle process (another timer:
  ``[go] other_timers_ms``) makes the next timer later by up to 1 ms, as on the host. With
  ``[host] timer_overshoot_us`` instead, an idle process's timers fire that late.
* **The item channel's lock** (``[go] lock_ns``): every send on go-batcher's item channel,
  every receive that finds an item and every ``select`` over it takes the channel's
  runtime lock (``hchan.lock``). An operation that finds it held by the other processor's
  spins until it is free, or, with a chance ``lock_sleep``, its thread sleeps on it
  (``runtime.lock2``, ``src/runtime/lock_spinbit.go``: only the thread holding the lock
  word's spin bit spins; "most other Ms must attempt to spend their time sleeping") and
  holds its processor, without CPU, until the holder's unlock wakes it, a wake-up later
  (``[host] wake_us``), and tries again, spinning if no other thread slept on the lock
  (``lock2``'s ``atTail``: the bottom of the waiters' stack spins, it does not sleep again)
  (:meth:`Scheduler.lock_sleep`, :meth:`.gosync.Chan.lock`). A worker asleep there while
  the other processor keeps ``Put``-ting comes back to a backlog whose receives meet more
  ``Put``-s: the lock convoy that makes some drain blocks at GOMAXPROCS 2 a few large flushes
  (``validate/gobatcher/data/README.md``, "The channel's lock").
* **select.** A ``select`` with several ready cases picks one uniformly at random
  (``selectgo``'s random ``pollorder``), from the same stream.

* **The host's other processes** take a running processor's thread now and then: a run is
  lengthened by a stall at the host's measured rate (``[host] stall_per_s``, by how many
  of the client's threads are running) and length (``stall_us``).
* **The host's processors differ in speed** (``[host] speed_ratio``): each processor's
  runs take its own multiple of their CPU, drawn for the run
  (:meth:`~simbatch.batching.hosttiming.HostTiming.processor_speeds`).
* **The same work takes a different time each run** (``[host] cpu_noise_ns``): a run of
  ``c`` ns of CPU takes ``c`` times a lognormal draw of mean 1 and variance
  ``cpu_noise_ns / c`` (:mod:`~simbatch.batching.hosttiming`).
* **The kernel packs the client's threads onto one CPU** for a drawn time per run
  (``[host] packed_us``), spent in windows that each open at a wake-up of an idle
  processor's thread: a thread woken inside one waits for that CPU, which the running
  thread holds (the kernel gives one of two runnable threads a slice of milliseconds,
  longer than the window), so it starts looking for work only when the window ends, and
  one processor runs the goroutines meanwhile -- or as soon as every running thread sleeps
  (its processor idle), which frees the CPU: the waiting thread gets it then, or when its
  own wake-up ends if that is later (:meth:`Scheduler._release_held`), and the window
  closes, what is left of the run's packed time waiting for the next wake-up. So a block
  of rounds separated by idle spells (sleeping flushes) is packed round after round until
  the time is spent, as the harness's are: a GOMAXPROCS 2 drain block of 1,000
  transactions at cap 64 runs each round's 64 on one processor, one flush per transaction,
  and its threads wait 1-6 ms for a CPU over the block (``runq_wait_s``,
  ``validate/gobatcher/data/full12``). As measured: the harness's drain blocks whose
  threads waited long for a CPU (``runq_wait_s``) make one flush per transaction, as at
  GOMAXPROCS 1; and a sleep that falls due while a thread waits so ends at the idle
  process's netpoll wake, not at the window's end (drain, pool 64, cap = all, N = 256,
  GOMAXPROCS 2: the first 64 flushes' 500 us sleeps end 1.36-1.85 ms into the block
  however long its threads waited, ``validate/gobatcher/data/full10``).

So the order of simultaneous runnable goroutines -- the worker woken by a ``Put`` against
the producers still putting -- follows from these rules and the random wake-up latencies:
with one processor it is fixed, with two it varies run to run, as the harness measures.
The random draws (wake-ups, stalls, ``select``) come from the run's ``scheduler`` stream.

Simulation: a goroutine is a Python generator (:class:`G`) that yields its CPU cost in
nanoseconds, or :data:`PARK` to block (it has registered where it waits), or :data:`SYNC`
to let the simulation clock catch up before it touches a SimPy component. A run of a
goroutine on a processor lasts until it blocks, has used ``QUANTUM_NS``
(``SHARED_QUANTUM_NS`` while another processor runs too), or has made a goroutine runnable
while another processor is idle or looking for work (which may steal it); its effects
(channel operations, goroutines it readies, records) happen at the run's start and the
processor is then busy for the run's CPU. When a processor's next run starts before any
other pending event, it runs at once without an event ("run ahead"), which keeps a block of
a million inputs fast; the scheduler's other events are kept in its own heap, in SimPy's
order (:class:`_Pump`). A run that ``sysmon`` preempts ends where the model's run
ends (after a CPU-burning flush's whole spin, not inside it). ``sysmon`` samples every
10 ms from a random phase; while every processor is idle it sleeps, and it samples again
when one starts (in Go it sleeps until the next timer, which is when a processor starts, or
until a syscall wakes it). Not modelled: per-processor timer heaps (timers are global), the
garbage collector.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Generator
from typing import Any, Final, cast

import numpy as np
import simpy
from simpy.core import NORMAL

from .gocpu import GoConfig
from .hosttiming import HostTiming

PARK: Final = object()
"""Yielded by a goroutine that blocks; whoever it waits for calls :meth:`Scheduler.ready`."""
SYNC: Final = object()
"""Yielded by a goroutine before it calls into SimPy: its run ends, the next starts at a
real simulation event."""

LOCAL_RUNQ: Final = 256
"""Slots of a processor's local run queue (``p.runq``)."""
GLOBAL_EVERY: Final = 61
"""A processor checks the global queue first on every 61st ``schedtick`` (``findRunnable``)."""
FORCE_PREEMPT_S: Final = 10e-3
"""``forcePreemptNS``: the time slice ``sysmon`` lets a processor's goroutines share."""
SYSMON_PERIOD_S: Final = 10e-3
"""``sysmon``'s sleep while the processors are busy (``usleep(delay)``, ``delay`` at its 10 ms
cap once ``sysmon`` has found nothing to retake for a few milliseconds)."""
QUANTUM_NS: Final = 5000.0
SHARED_QUANTUM_NS: Final = 250.0
"""While another processor runs too, a run ends after this much CPU, so that what the two
do to the same channels interleaves at this resolution (a run's effects land at its start)."""
COLD_AFTER_S: Final = 100e-6
"""A goroutine parked for longer than this resumes cold (``[go] cold_ns``)."""
_CHUNK: Final = 4096
_NORMAL: Final = NORMAL
# Final: the compiled engine reads these without a lookup in the module's globals
heappush: Final = heapq.heappush
heappop: Final = heapq.heappop
_log1p: Final = math.log1p              # (math.sqrt and math.exp it compiles to C calls)

IDLE: Final = 0
WAKING: Final = 1
RUNNING: Final = 2
_CONT: Final = 0
_PARKED: Final = 1
_EXITED: Final = 2
_SYNCED: Final = 3

Body = Generator[Any, Any, None]
_Event = tuple[float, int, Callable[..., None], tuple[Any, ...]]
"""One of the scheduler's own events: (when, id, callback, args)."""
_SimEntry = tuple[float, int, int, Any]
"""An entry of SimPy's queue: (time, priority, id, event); an int time or priority reads as
a float or an int."""


class G:
    """A goroutine: its body (a generator, resumed with ``next``: whoever readies it leaves
    what it waited for where the body looks, in a :class:`~.gosync.Waiter` or a channel) and
    where it last ran."""

    __slots__ = ("body", "name", "p", "parked_at", "switches")

    def __init__(self, body: Body, name: str = "") -> None:
        self.body = body
        self.name = name
        self.p: P | None = None
        self.parked_at = -1.0            # when it last blocked; new goroutines are cold
        self.switches = 0                # times a processor switched to it

    def __repr__(self) -> str:
        return f"G({self.name})"


class P:
    """A processor: its ``runnext`` slot, its local run queue, its state."""

    __slots__ = ("id", "runnext", "runq", "state", "g", "busy_ns", "stall_in", "slowness",
                 "tick", "seen_tick", "seen_when", "preempt", "held", "spin_gen", "woken_at")

    def __init__(self, index: int) -> None:
        self.id = index
        self.runnext: G | None = None
        self.runq: deque[G] = deque()
        self.state = IDLE
        self.g: G | None = None
        self.busy_ns = 0.0
        self.stall_in = -1.0            # running time to the next stall, in units of 1/rate
        self.slowness = 1.0             # wall time per unit of CPU work ([host] speed_ratio)
        self.tick = 0                   # schedtick: time slices started
        self.seen_tick = -1             # sysmon's last look at it (sysmontick)
        self.seen_when = 0.0
        self.preempt: G | None = None   # the goroutine sysmon asked to stop
        self.held = False               # woken, its thread waiting for the packed CPU
        self.spin_gen = 0               # its pending look for work (_spin_at)
        self.woken_at = 0.0             # when its thread's wake-up ends, packed CPU or not


class Timer:
    """A runtime timer: once it is due (``when``), it calls ``fire`` with the processor
    that runs it, at that processor's next scheduling point or when the idle process's
    poller wakes (see the module docstring). ``dead`` timers (stopped, reset, fired) are
    skipped."""

    __slots__ = ("when", "fire", "dead")

    def __init__(self, when: float, fire: Callable[[P], None]) -> None:
        self.when = when
        self.fire = fire
        self.dead = False

    def __lt__(self, other: Timer) -> bool:
        return self.when < other.when


class _Pump:
    """A SimPy queue entry that runs the scheduler's own events.

    The scheduler keeps its events (runs' ends, wake-ups, timers' polls) in its own heap,
    keyed as SimPy keys a timeout -- time, then an id from the environment's counter -- so
    the run's order is exactly what one SimPy timeout per event would give, at a fraction
    of the cost: while both processors are busy they end a run every ``SHARED_QUANTUM_NS``.
    One ``_Pump`` sits in SimPy's queue at the key of the scheduler's earliest event; when
    SimPy reaches it, the scheduler runs its events in key order, moving the environment's
    clock to each, until SimPy's next event comes first, and leaves a new ``_Pump`` for the
    rest. This reaches into SimPy 4's ``Environment`` (``_queue``: ``(time, priority, id,
    event)``; ``_eid``; ``_now``), as ``Environment.schedule`` and ``step`` do."""

    __slots__ = ("callbacks", "_ok", "key")

    def __init__(self, pump: Callable[[tuple[float, int]], None],
                 key: tuple[float, int]) -> None:
        self.callbacks: list[Any] | None = [lambda _ev: pump(key)]   # SimPy sets None
        self._ok = True
        self.key = key


class Scheduler:
    """Runs goroutines on ``config.gomaxprocs`` processors (see the module docstring).

    Parameters
    ----------
    env : simpy.Environment
    config : GoConfig
    rng : numpy.random.Generator
        The ``scheduler`` stream: ``select``'s choices.
    host : HostTiming
        How long timers and sleeps take when every processor is idle, idle processors'
        wake-ups and the host's stalls (drawn from the ``host`` stream).
    """

    def __init__(self, env: simpy.Environment, config: GoConfig, rng: np.random.Generator,
                 host: HostTiming) -> None:
        self.env = env
        self._simq = cast("list[_SimEntry]", env._queue)  # SimPy's queue, id counter: _Pump
        self._next_eid: Callable[[], int] = env._eid.__next__
        self.config = config
        self._switch_ns: float = config.switch_ns     # read per run: kept as plain floats
        self._cold_ns: float = config.cold_ns
        self._wakep_ns: float = config.wakep_ns
        self.host = host
        self._rng = rng
        self._u: list[float] = []
        self._stalls = bool(host.config.stall_per_s)
        self._noise_ns = host.config.cpu_noise_ns
        self._z: list[float] = []
        self.ps = [P(i) for i in range(config.gomaxprocs or 1)]
        for p, slowness in zip(self.ps, host.processor_speeds(len(self.ps))):
            p.slowness = slowness
        for p in self.ps:               # a long-lived process's schedtick is anywhere in
            p.tick = int(rng.random() * GLOBAL_EVERY)       # its 61-cycle at a block's start
        self._idle: deque[P] = deque(self.ps)
        self._global: deque[G] = deque()
        self._spinning = 0
        self._running = 0
        self._timers: list[Timer] = []
        self._q: list[_Event] = []                 # see _Pump
        self._pump_at: tuple[float, int] | None = None
        self._pumping = False
        self._pumps: set[tuple[float, int]] = set()    # keys of _Pumps in SimPy's queue

        self._packed_until = -1.0        # the open packed window's end ([host] packed_us)
        self._pack_left = -1.0           # the run's packed time left (drawn at its first wakep)
        self._pack_from = -1.0           # the open window's start; -1 when none is open
        self._held = 0                   # processors whose woken thread waits for the packed CPU
        self._poll_gen = 0
        self._poll_for: float | None = None
        self.now = 0.0
        """The time the running goroutine's effects happen at (seconds)."""
        self.p: P | None = None
        """The processor running a goroutine right now (``None`` between runs)."""
        self.p_extra_ns = 0.0
        """CPU the running goroutine's runtime calls added to its run (wakep)."""
        self.run_ns = 0.0
        """CPU the running goroutine's run has yielded so far: what it does next happens that
        long after :attr:`now` (ns)."""
        self.p_wait_s = 0.0
        """Time the running goroutine's thread slept holding its processor (a runtime
        lock's futex sleep): the run lasts that much longer, without CPU."""
        self.switches = 0
        """Context switches so far: runs of a goroutine other than the one the processor ran
        last (each charged ``switch_ns``)."""
        self._observed = False
        self._sysmon_asleep = False
        self._after_cb: Callable[[P, G, int], None] = self._after    # bound once, not per run
        self._at(float(rng.random()) * SYSMON_PERIOD_S, self._sysmon)

    @property
    def shared(self) -> bool:
        """Whether another processor is running beside the running goroutine's: a goroutine
        that batches its CPU into one yield should yield it now (``SHARED_QUANTUM_NS``)."""
        return self._running > 1

    @property
    def observed(self) -> bool:
        """Whether the running goroutine has made another runnable while another processor
        is idle or looking for work: its run should end so that time can pass."""
        return self._observed

    # ---------------------------------------------------------------- random draws
    def _stall_s(self, p: P, cost_ns: float) -> float:
        """How long the host's other processes hold ``p``'s thread during a run of
        ``cost_ns`` (seconds; usually 0)."""
        host = self.host
        threads = max(1, self._running)
        rate = host.stall_rate(threads)
        if rate <= 0:
            return 0.0
        if p.stall_in < 0:
            p.stall_in = host.exponential()
        p.stall_in -= cost_ns * 1e-9 * rate
        stalled = 0.0
        while p.stall_in < 0:
            stalled += host.stall_s(threads)
            p.stall_in += host.exponential()
        return stalled

    def lock_sleep(self) -> None:
        """The running goroutine's thread sleeps on a runtime lock it found held, holding
        its processor, until the holder's unlock wakes it (a futex wake-up, ``[host]
        wake_us``); the goroutine's run ends at its next yield."""
        self.p_wait_s += self.host.wake_s()
        self._observed = True

    def uniform(self) -> float:
        """A uniform draw from the scheduler's stream."""
        if not self._u:
            self._u = self._rng.random(_CHUNK).tolist()
        return self._u.pop()

    def choose(self, n: int) -> int:
        """A uniform choice among ``n`` ready ``select`` cases."""
        return min(int(self.uniform() * n), n - 1)

    # ---------------------------------------------------------------- goroutines
    def start(self, fn: Callable[..., Body], *args: Any, name: str = "main") -> G:
        """Start a goroutine ``fn(g, *args)`` from outside any goroutine (the block's
        driver): it runs on an idle processor now."""
        g = G(None, name)  # type: ignore[arg-type]
        g.body = fn(g, *args)
        self._ready_outside(g)
        return g

    def parked(self, fn: Callable[..., Body], *args: Any, name: str = "") -> G:
        """A goroutine ``fn(g, *args)`` that is already blocked when the simulation starts
        (a long-lived batcher's worker and pool): its body runs, free, to its first
        :data:`PARK`."""
        g = G(None, name)  # type: ignore[arg-type]
        g.body = fn(g, *args)
        prev, self.p = self.p, self.ps[0]
        while next(g.body) is not PARK:
            pass
        self.p = prev
        return g

    def go(self, fn: Callable[..., Body], *args: Any, name: str = "") -> G:
        """A ``go`` statement of the running goroutine: ``fn(g, *args)`` starts in the
        processor's ``runnext`` (``newproc``)."""
        g = G(None, name)  # type: ignore[arg-type]
        g.body = fn(g, *args)
        self.ready(g)
        return g

    def ready(self, g: G) -> None:
        """Make ``g`` runnable from the running goroutine (``goready``)."""
        p = self.p
        if p is None:                     # from a SimPy callback: an idle processor
            self.now = self.env.now
            self._ready_outside(g)
            return
        self._runqput(p, g)
        if self._idle or self._spinning:
            self._observed = True          # another processor may look at this queue
            if not self._spinning:
                self._wakep()
                self.p_extra_ns += self._wakep_ns

    def _ready_outside(self, g: G) -> None:
        if self._idle:
            p = self._idle.popleft()
            self._runqput(p, g)
            self._begin(p)
            self._at(self.now, self._schedule, p)
        else:
            self._global.append(g)

    def _runqput(self, p: P, g: G) -> None:
        old = p.runnext
        p.runnext = g
        if old is not None:
            self._runq_tail(p, old)

    def _runq_tail(self, p: P, g: G) -> None:
        q = p.runq
        if len(q) < LOCAL_RUNQ:
            q.append(g)
            return
        glob = self._global                         # runqputslow: half of it, and g
        glob.extend(q.popleft() for _ in range(LOCAL_RUNQ // 2))
        glob.append(g)

    # ---------------------------------------------------------------- sysmon
    def _sysmon(self) -> None:
        """``sysmon``'s ``retake``: preempt the goroutine of a processor whose time slice
        it has seen for ``FORCE_PREEMPT_S`` (see the module docstring)."""
        now = self.now
        if len(self._idle) == len(self.ps):
            self._sysmon_asleep = True     # deep sleep until a processor starts again
            return
        for p in self.ps:
            if p.state != RUNNING:
                continue
            if p.tick != p.seen_tick:
                p.seen_tick, p.seen_when = p.tick, now
            elif p.seen_when + FORCE_PREEMPT_S <= now + 1e-12 and p.g is not None:
                p.preempt = p.g
        self._at(now + SYSMON_PERIOD_S, self._sysmon)

    # ---------------------------------------------------------------- time
    def _at(self, when: float, callback: Callable[..., None], *args: Any) -> None:
        """``callback(*args)`` at ``when``, in the order a SimPy timeout made now would have
        (see :class:`_Pump`)."""
        now: float = self.env._now
        if when > now:
            now += when - now               # as SimPy adds a timeout's delay
        eid = self._next_eid()
        heappush(self._q, (now, eid, callback, args))
        if not self._pumping:
            key = (now, eid)
            if self._pump_at is None or key < self._pump_at:
                self._pump_for(key)

    def _pump_for(self, key: tuple[float, int]) -> None:
        self._pump_at = key
        if key not in self._pumps:      # one superseded earlier may wait at this key still
            self._pumps.add(key)
            simq = self._simq                          # SimPy's own entries are Events
            heappush(simq, (key[0], _NORMAL, key[1], _Pump(self._pump, key)))

    def _sim_head(self) -> _SimEntry | None:
        """SimPy's next event, after dropping superseded :class:`_Pump` entries."""
        simq = self._simq
        while simq:
            head = simq[0]
            ev = head[3]
            if type(ev) is not _Pump or ev.key == self._pump_at:
                return head
            heappop(simq)
            self._pumps.discard(ev.key)
        return None

    def _sim_time(self) -> float:
        """When SimPy's next event happens (seconds; infinite if none)."""
        head = self._sim_head()
        return head[0] if head is not None else math.inf

    def _pump(self, key: tuple[float, int]) -> None:
        """Run the scheduler's events due before SimPy's next one (see :class:`_Pump`)."""
        self._pumps.discard(key)
        if key != self._pump_at:
            return                          # superseded by an earlier event's pump
        self._pump_at = None
        self._pumping = True
        env, q = self.env, self._q
        simq = self._simq
        pop = heappop
        try:
            while q:
                head = q[0]
                if simq:
                    nxt: _SimEntry | None = simq[0]
                    if type(simq[0][3]) is _Pump:       # superseded while pumping
                        nxt = self._sim_head()
                    if nxt is not None and (nxt[0] < head[0] or nxt[0] == head[0] and (
                            nxt[1] < _NORMAL or nxt[1] == _NORMAL and nxt[2] < head[1])):
                        break                           # SimPy's comes first
                pop(q)
                env._now = self.now = head[0]
                head[2](*head[3])
        finally:
            self._pumping = False
        if q:
            self._pump_for((q[0][0], q[0][1]))

    def timer(self, d_s: float, fire: Callable[[P], None]) -> Timer:
        """A runtime timer (``time.Timer``, ``time.Sleep``) of ``d_s`` from now;
        ``fire(p)`` runs when it fires (see the module docstring)."""
        t = Timer(self.now + d_s, fire)
        heappush(self._timers, t)
        if self._idle and (self._poll_for is None or t.when < self._poll_for):
            self._poll()                  # netpollBreak: the poller waits for the new one
        return t

    def _earliest(self) -> Timer | None:
        timers = self._timers
        while timers and timers[0].dead:
            heappop(timers)
        return timers[0] if timers else None

    def _poll(self) -> None:
        """An idle processor's thread waits in ``netpoll`` for the earliest timer."""
        t = self._earliest()
        self._poll_gen += 1
        if t is None or not self._idle:
            self._poll_for = None
            return
        delay = t.when - self.now
        if self.host.measured:
            if delay <= 0:
                wake = self.now
            else:
                # whole milliseconds, truncated (a delay of exactly k ms has lost a little
                # to the arming goroutine's park by the time Go computes it)
                wait_ms = max(1, math.ceil(delay * 1e3 - 1e-9) - 1)
                wake = self.now + wait_ms * 1e-3 + self.host.poll_overshoot_s()
        else:
            wake = max(t.when, self.now) + self.host.config.timer_overshoot_us * 1e-6
        self._poll_for = t.when
        gen = self._poll_gen
        self._at(wake, self._poll_woke, gen)

    def _poll_woke(self, gen: int) -> None:
        if gen != self._poll_gen:
            return                         # superseded by a newer wait
        self._poll_for = None
        t = self._earliest()
        if t is not None and t.when <= self.now and self._idle:
            p = self._idle.popleft()
            self._begin(p)
            self._run_due(p)
            self._schedule(p)
            return
        self._poll()

    def _fire(self, t: Timer, p: P) -> None:
        t.dead = True
        prev, self.p = self.p, p
        t.fire(p)
        self.p = prev

    def _run_due(self, p: P) -> None:
        timers, now = self._timers, self.now
        while timers and (timers[0].dead or timers[0].when <= now):
            t = heappop(timers)
            if not t.dead:
                self._fire(t, p)

    def _timers_due(self) -> bool:
        t = self._earliest()
        return t is not None and t.when <= self.now

    # ---------------------------------------------------------------- processors
    def _begin(self, p: P) -> None:
        if p.state != RUNNING:
            p.state = RUNNING
            self._running += 1
            if self._sysmon_asleep:
                self._sysmon_asleep = False
                self._at(self.now, self._sysmon)

    def _to_waking(self, p: P) -> None:
        if p.state == RUNNING:
            self._running -= 1
        p.state = WAKING

    def _go_idle(self, p: P) -> None:
        if p.state == RUNNING:
            self._running -= 1
        p.state = IDLE
        self._idle.append(p)
        if self._held and self._running == 0 and self._spinning == self._held:
            self._release_held()        # its thread sleeps: the packed CPU is free
        t = self._earliest()
        if t is not None and (self._poll_for is None or t.when < self._poll_for):
            self._poll()          # findRunnable: netpollBreak if the poller waits for later

    def _wakep(self) -> None:
        now = self.now
        if self._pack_left < 0:
            self._pack_left = self.host.packed_s()
        if now >= self._packed_until:            # no packed window open
            if self._pack_from >= 0:             # the last one ran to its end
                self._pack_left = 0.0
                self._pack_from = -1.0
            if self._pack_left > 0:
                self._pack_from = now
                self._packed_until = now + self._pack_left
        p = self._idle.popleft()
        self._to_waking(p)
        self._spinning += 1
        # while the threads are packed, the woken one waits for the running one's CPU
        when = self.now + self.host.wake_s()
        p.spin_gen += 1
        p.woken_at = when
        if self._packed_until > when:
            when = self._packed_until
            p.held = True
            self._held += 1
        self._at(when, self._spin_at, p, p.spin_gen)

    def _spin_at(self, p: P, gen: int) -> None:
        if gen != p.spin_gen:
            return                       # brought forward (_release_held)
        if p.held:
            p.held = False
            self._held -= 1
        self._spin(p)

    def _release_held(self) -> None:
        """The running threads all sleep: a woken thread waiting for the packed CPU gets it
        now, or once its own wake-up ends if that is later (its futex wake's latency runs
        whether the CPU is packed or not)."""
        if self._pack_from >= 0:         # the window closes; what is left of it waits
            self._pack_left = max(0.0, self._pack_left - (self.now - self._pack_from))
            self._pack_from = -1.0
            self._packed_until = self.now
        for p in self.ps:
            if p.held:
                p.held = False
                self._held -= 1
                p.spin_gen += 1
                self._at(max(self.now, p.woken_at), self._spin_at, p, p.spin_gen)
                return

    def _spin(self, p: P) -> None:
        """A woken thread looks for work (``findRunnable`` while spinning)."""
        if self._timers_due():
            self._run_due(p)
        g = self._local(p) or self._steal(p)
        if g is not None:
            self._spinning -= 1
            self._begin(p)
            if self._idle and not self._spinning:
                self._wakep()                      # resetspinning
            self._run(p, g, True)
            return
        victim = self._runnext_victim(p)
        if victim is not None:                     # runqgrab: back off, then steal runnext
            self._at(self.now + self.host.backoff_s(), self._steal_next, p, victim)
            return
        self._spinning -= 1
        self._go_idle(p)

    def _steal_next(self, p: P, victim: P) -> None:
        g = victim.runnext
        if g is not None:
            victim.runnext = None
            p.tick += 1
            self._spinning -= 1
            self._begin(p)
            self._run(p, g, True)
            return
        self._to_waking(p)
        self._spin(p)

    def _runnext_victim(self, p: P) -> P | None:
        for other in self.ps:
            if other is not p and other.runnext is not None:
                return other
        return None

    def _local(self, p: P) -> G | None:
        """``findRunnable``'s own queues: the global queue on every ``GLOBAL_EVERY``-th
        tick, ``runnext`` (the time slice goes on), the local queue, a batch of the global
        queue (all but ``runnext`` start a new slice)."""
        glob = self._global
        if glob and p.tick % GLOBAL_EVERY == 0:
            p.tick += 1
            return glob.popleft()
        g = p.runnext
        if g is not None:
            p.runnext = None
            return g
        if p.runq:
            p.tick += 1
            return p.runq.popleft()
        if glob:
            p.tick += 1
            n = min(len(glob), len(glob) // len(self.ps) + 1, LOCAL_RUNQ // 2)
            g = glob.popleft()
            p.runq.extend(glob.popleft() for _ in range(n - 1))
            return g
        return None

    def _steal(self, p: P) -> G | None:
        for other in self.ps:
            if other is not p and other.runq:
                q = other.runq
                n = len(q) - len(q) // 2
                stolen = [q.popleft() for _ in range(n)]
                p.runq.extend(stolen[:-1])
                p.tick += 1
                return stolen[-1]
        return None

    def _schedule(self, p: P) -> None:
        """``schedule``: the processor's goroutine blocked or ended; run the next one."""
        if self._timers_due():
            self._run_due(p)
        g = self._local(p)
        if g is None:
            g = self._steal(p)
        if g is not None:
            self._run(p, g, True)
            return
        victim = self._runnext_victim(p)
        if victim is not None and not self._spinning:
            self._spinning += 1
            self._to_waking(p)
            self._at(self.now + self.host.backoff_s(), self._steal_next, p, victim)
            return
        self._go_idle(p)

    def _run(self, p: P, g: G, switched: bool) -> None:
        """Run ``g`` on ``p`` until it blocks, ends or has used a quantum; then, at the end
        of that CPU, continue it or schedule the next goroutine."""
        while True:
            p.g = g
            g.p = p
            self.p = p
            cost = 0.0
            if switched:
                self.switches += 1
                g.switches += 1
                cost = self._switch_ns
                if self.now - g.parked_at > COLD_AFTER_S or g.parked_at < 0:
                    cost += self._cold_ns
            self.p_extra_ns = 0.0
            self.p_wait_s = 0.0
            self.run_ns = cost
            status = _EXITED
            for op in g.body:
                if op is PARK:
                    status = _PARKED
                    break
                if op is SYNC:
                    status = _SYNCED
                    break
                cost += cast(float, op)      # compiled: a float add, not a generic one
                self.run_ns = cost
                if cost >= QUANTUM_NS or self._observed or (
                        cost >= SHARED_QUANTUM_NS and self._running > 1):
                    # a goroutine it made runnable may be stolen: let time pass
                    self._observed = False
                    status = _CONT
                    break
            cost += self.p_extra_ns
            # [host] cpu_noise_ns: lognormal, mean 1, variance cpu_noise_ns / cost (none
            # below a picosecond, where noise / cost would overflow)
            if self._noise_ns and cost > 1e-3:
                z = self._z
                if not z:
                    z.extend(self.host.normals())
                s2 = _log1p(self._noise_ns / cost)
                cost *= math.exp(math.sqrt(s2) * z.pop() - 0.5 * s2)
            cost *= p.slowness
            p.busy_ns += cost
            self.p = None
            if status == _PARKED or status == _EXITED:
                g.parked_at = self.now + cost * 1e-9
            end = self.now + cost * 1e-9 + self.p_wait_s
            if self._stalls:
                end += self._stall_s(p, cost)
            q = self._q
            if status == _SYNCED or (q and end >= q[0][0]) or end >= self._sim_time():
                self._at(end, self._after_cb, p, g, status)
                return
            self.now = end                             # run ahead: nothing happens before
            if status == _CONT:
                switched = False
                continue
            p.g = None
            if self._timers_due():
                self._run_due(p)
            nxt = self._local(p) or self._steal(p)
            if nxt is None:
                self._schedule(p)
                return
            g, switched = nxt, True

    def _after(self, p: P, g: G, status: int) -> None:
        if p.preempt is not None:
            preempted = p.preempt is g and status == _CONT
            p.preempt = None
            if preempted:                    # gopreempt_m: to the global queue, wakep
                p.g = None
                self._global.append(g)
                if self._idle and not self._spinning:
                    self._wakep()
                self._schedule(p)
                return
        if status in (_CONT, _SYNCED):
            self._run(p, g, False)
            return
        p.g = None
        self._schedule(p)

    # ---------------------------------------------------------------- accounting
    @property
    def busy_s(self) -> float:
        """CPU the goroutines used, over all processors (seconds)."""
        return sum(p.busy_ns for p in self.ps) * 1e-9
