"""The batcher pipeline as the Go client runs it: every goroutine on the modelled processors.

Used when the case's ``[go]`` section sets ``gomaxprocs``; the goroutines are those of
``validate/gobatcher``'s harness and of teranode's decorate path:

* **the block's driver** (``BatchPreviousOutputsDecorate``): a loop over the transactions
  (``fanout = "sequential"``), or x/sync ``errgroup`` with ``SetLimit(cap)``: ``Go`` sends
  a token into a ``cap``-slot channel (blocking when it is full), ``wg.Add``, then a ``go``
  statement; each transaction goroutine, when done, receives its token back and calls
  ``wg.Done``; the driver ends in ``Wait``. The block ends when the driver runs again;
* **a transaction** (``PreviousOutputsDecorate``): one ``Put`` per input into go-batcher's
  ``64 x size`` channel (blocking when full), then ``Wait`` on its own wait group;
* **go-batcher's worker**, long-lived: v2.0.6 (``timer = "first_item"``) with drain mode
  or the lazy first-item timer, or v1.1.0 (``timer = "cycle"``) whose cycle timer runs at
  a random phase when the block starts (the batcher ticked through the time before it).
  Its ``select`` over the item channel and the timer picks among ready cases at random;
* **dispatch** (``flushBatch``): inline on the worker; a ``go`` statement per batch
  (``background``); or ``SetMaxConcurrent(n)``'s ``n`` persistent goroutines fed through an
  unbuffered channel, the worker blocking on the hand-off while all ``n`` are busy; then the
  worker takes the next batch's slice from its ``sync.Pool``, new when the pool has none
  (:mod:`.slicepool`), which the flush's goroutine gives back when its callback returns;
* **the process's other batchers**, idle (``[go] other_timers_ms``): each a v1.1.0 worker
  woken by its cycle timer, which re-arms it and blocks again;
* **the flush callback**: ``dispatchAndRecord``, then the call -- a ``time.Sleep``
  (``[service] is_sleep``: a runtime timer, :mod:`.hosttiming`), CPU on the processor
  (``[go] flush_cpu``), or the service model's call, the goroutine parked meanwhile --
  then one ``wg.Done`` per item, waking each transaction whose last input it was.

Simplifications: the tick mode, the open-loop workload and ``Close`` are not modelled with
the client's CPU (the case refuses them); the service's permit pool and client-side parse
(``[service]``) run on their own resources, not on these processors.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Final

import numpy as np
import simpy

from ..core.work import EventGuard
from .batcher import DRAIN, SIZE, TIMER, BatcherConfig
from .gocpu import GoConfig
from .gosync import Chan, Op, Waiter, WaitGroup
from .producers import inputs_and_keys
from .records import Recorder
from .scheduler import PARK, QUANTUM_NS, SYNC, G, P, Scheduler, Timer
from .slicepool import SlicePool

ITEM: Final = "item"
FIRED: Final = "timer"


class GoBlock:
    """The block's goroutines (see the module docstring); :meth:`start` returns the event
    that succeeds when the driver has seen every transaction done (``end_s``)."""

    def __init__(self, env: simpy.Environment, sched: Scheduler, case: Any,
                 recorder: Recorder, rngs: dict[str, np.random.Generator], service,
                 guard: EventGuard | None = None) -> None:
        self.env = env
        self.sched = sched
        self.go: GoConfig = case.go
        go = self.go                     # the costs read per item or transaction, as floats
        self._put_ns: float = go.put_ns
        self._exit_ns: float = go.exit_ns
        self._done_ns: float = go.done_ns
        self._ready_ns: float = go.ready_ns
        self._select_ready_ns: float = go.select_ready_ns
        self.workload = case.workload
        self.batcher: BatcherConfig = case.batcher
        self.service_config = case.service
        self.service = service
        self.rec = recorder
        self._counts, self._keys = inputs_and_keys(self.workload, rngs)
        self._noise: list[float] = []
        self._rng_service = rngs["service"]
        self._remaining: list[int] = []      # inputs not yet done, per transaction
        self._waiting: dict[int, G] = {}
        self.ch = Chan(sched, self.batcher.queue_capacity, recorder.enqueued)
        self.work = Chan(sched, 0)
        self.end_s = 0.0
        self.all_done = env.event()
        self._guard = guard or EventGuard(float("inf"))
        self._worker: G | None = None
        self.ready_selects = 0
        """Times go-batcher's worker's ``select`` found a case ready and did not block."""
        self._select: Waiter | None = None
        self._timer: Timer | None = None
        self.slices = SlicePool.for_batcher(go.gomaxprocs or 1, self.batcher.size,
                                            go.alloc_ns, go.alloc_kib_ns)

    # ------------------------------------------------------------------ wiring
    def start(self) -> simpy.Event:
        sched, cfg = self.sched, self.batcher
        worker = self._worker_v1 if cfg.timer == "cycle" and not cfg.drain else self._worker_v2
        self._v2 = worker == self._worker_v2
        self._worker = sched.parked(worker, name="worker")
        if cfg.dispatch == "pool":
            for i in range(cfg.max_concurrent or 1):
                sched.parked(self._pool, name=f"pool{i}")
        # the harness's main goroutine is running when a block starts (it has just probed
        # the host), so the other timers are armed by a running processor: no thread waits
        # in netpoll for them yet
        sched.start(self._driver, name="driver")
        for period_ms in self.go.other_timers_ms:
            first = period_ms / 1e3 * self.sched.choose(1 << 30) / (1 << 30)
            sched.parked(self._idle_batcher, period_ms / 1e3, first, name="idle-batcher")
        return self.all_done

    @property
    def worker_wakes(self) -> int:
        """How many times a processor switched to go-batcher's worker."""
        return self._worker.switches if self._worker is not None else 0

    def _idle_batcher(self, g: G, period_s: float, first_s: float) -> Op:
        """Another batcher of the process with nothing to batch (go-batcher v1.1.0's worker:
        ``select`` over its item channel and its cycle timer, ``timer.Reset`` each cycle):
        the timer's channel send readies it into the running processor's ``runnext``, it
        re-arms and blocks again; it stops with the block. Its wake-ups take the processor
        between the block's goroutines, and the one it displaces from ``runnext`` goes to
        the run queue's tail, as on the host."""
        sched, d = self.sched, first_s
        while not self.all_done.triggered:
            sched.timer(d, lambda _p: sched.ready(g))
            yield PARK
            yield self.go.chan_ns + self.go.timer_ns
            d = period_s
        yield PARK

    # ------------------------------------------------------------------ producers
    def _driver(self, g: G) -> Op:
        wl, sched = self.workload, self.sched
        n = wl.n_transactions
        if wl.fanout == "sequential":
            for tx in range(n):
                yield from self._decorate(g, tx)
        else:
            sem = Chan(sched, wl.cap)
            group = WaitGroup(sched)
            spawn, txn, go = self.go.spawn_ns, self._txn, sched.go
            for tx in range(n):
                cost = sem.try_send(None)
                if cost is None:
                    yield from sem.send(g, None)
                    cost = 0.0
                group.count += 1
                go(txn, tx, sem, group)
                yield cost + spawn
            yield from group.wait(g)
        self.end_s = sched.now
        yield SYNC
        self.all_done.succeed()

    def _txn(self, g: G, tx: int, sem: Chan, group: WaitGroup) -> Op:
        yield from self._decorate(g, tx)
        _, _, cost = sem.poll()
        yield cost + group.done() + self._exit_ns

    def _decorate(self, g: G, tx: int) -> Op:
        rec, sched, ch = self.rec, self.sched, self.ch
        k = self._counts[tx]
        txn = rec.new_txn(k, sched.now)
        self._remaining.append(k)
        if k == 0:
            rec.txn_done(txn, sched.now)
            return
        put = self._put_ns
        keys = self._keys
        cost = 0.0
        locking = ch.locking
        for _ in range(k):
            if locking:                            # the send takes the channel's lock
                spin = ch.lock(cost + put)
                if spin < 0:
                    cost = yield from self._lock_sleep(cost, put)
                else:
                    cost += spin
            item = rec.new_item(txn, sched.now, keys[len(rec.item_txn)])
            sent = ch.try_send(item)
            if sent is None:                       # the channel is full: Put blocks
                yield cost + put
                cost = 0.0
                yield from ch.send(g, item)
                continue
            cost += put + sent
            # a transaction's Puts land together, even beside another running processor:
            # each takes ~40-100 ns (the harness's put+recv micro-benchmark); the fitted
            # put_ns also carries the rest of the transaction's CPU
            if sched.observed or cost >= QUANTUM_NS:
                yield cost                         # let another processor see it now
                cost = 0.0
        if cost:
            yield cost
        if self._remaining[txn] > 0:
            self._waiting[txn] = g
            yield PARK

    def _lock_sleep(self, cost: float, ahead: float = 0.0) -> Generator[Any, Any, float]:
        """The thread found the item channel's lock held and sleeps on it
        (:meth:`.gosync.Chan.lock` returned -1): yield ``cost`` (CPU not yet yielded), try
        again after the wake-up (``ahead``: the operation's own CPU before it locks) -- at
        the waiters' tail if no other thread slept on the lock, so spinning -- and so on.
        Returns the CPU not yet yielded: the spin on the lock, if any."""
        ch = self.ch
        spin = -1.0
        while spin < 0:
            at_tail = ch.sleepers == 0
            ch.sleepers += 1
            self.sched.lock_sleep()
            yield cost
            ch.sleepers -= 1
            cost = 0.0
            spin = ch.lock(ahead, at_tail)
        return cost + spin

    # ------------------------------------------------------------------ worker
    def _on_timer(self, timer: Timer, _p: P | None) -> None:
        waiter = self._select
        if timer is self._timer and waiter is not None and waiter.claim(FIRED, None):
            self._select = None
            self.sched.ready(waiter.g)

    def _arm(self, d_s: float) -> Timer:
        if self._timer is not None:
            self._timer.dead = True
        timer: Timer = self.sched.timer(d_s, lambda p: self._on_timer(timer, p))
        self._timer = timer
        return timer

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.dead = True
            self._timer = None

    def _wait(self, g: G) -> Op:
        """go-batcher's ``select`` on the item channel and the timer."""
        ch, timer, sched = self.ch, self._timer, self.sched
        item_ready = ch.ready
        fired = timer is not None and sched.now >= timer.when
        if item_ready and fired:
            item_ready = sched.choose(2) == 0
        if item_ready:
            _, value, cost = ch.poll()
            yield cost + self._ready_select()
            return ITEM, value
        if fired:
            yield self.go.chan_ns + self._ready_select()
            return FIRED, None
        waiter = Waiter(g)
        self._select = waiter
        ch.park(waiter)
        yield PARK
        if self._v2:
            yield self.go.select_ns        # the blocking select's own locking and queueing
        return waiter.case, waiter.value

    def _ready_select(self) -> float:
        """The CPU of the worker's ``select`` when a case is ready: v2's four cases locked
        and polled (``[go] select_ready_ns``); v1's is not measured and costs nothing here."""
        self.ready_selects += 1
        return self._select_ready_ns if self._v2 else 0.0

    def _worker_v2(self, g: G) -> Op:
        cfg, go, ch, sched = self.batcher, self.go, self.ch, self.sched
        size, timeout = cfg.size, cfg.timeout_ms / 1e3
        item_ns, drain = go.item_ns, cfg.drain
        batch: list[int] = []
        opened = 0.0
        cost = 0.0                       # CPU not yet yielded: effects land at the run's start
        locking = ch.locking
        while True:
            if locking:                          # the select locks the channel
                spin = ch.lock(cost)
                if spin < 0:
                    cost = yield from self._lock_sleep(cost)
                else:
                    cost += spin
            timer = self._timer
            if ch.buf and (timer is None or sched.now < timer.when):
                _, value, more = ch.poll()          # select: only the item case is ready
                cost += more + self._ready_select()
                case: Any = ITEM
            else:
                if cost:
                    yield cost
                    cost = 0.0
                case, value = yield from self._wait(g)
            if case is FIRED:
                self._disarm()
                yield from self._flush(g, batch, TIMER, opened)
                batch = []
                continue
            if not batch:
                opened = sched.now
            batch.append(value)
            cost += item_ns
            if drain:
                while len(batch) < size:
                    if locking and ch.ready:  # from an empty channel: no lock (chanrecv)
                        spin = ch.lock(cost)
                        if spin < 0:
                            cost = yield from self._lock_sleep(cost)
                        else:
                            cost += spin
                    ok, value, more = ch.poll()
                    cost += more
                    if not ok:
                        break
                    batch.append(value)
                    cost += item_ns
                yield cost
                cost = 0.0
                yield from self._flush(g, batch, SIZE if len(batch) == size else DRAIN, opened)
                batch = []
            elif len(batch) == size:
                yield cost
                cost = 0.0
                yield from self._flush(g, batch, SIZE, opened)
                batch = []
                if self._timer is not None:
                    self._disarm()
                    cost += go.timer_ns
            elif len(batch) == 1:
                self._arm(timeout)
                cost += go.timer_ns
            if cost >= QUANTUM_NS or sched.observed or sched.shared:
                yield cost
                cost = 0.0

    def _worker_v1(self, g: G) -> Op:
        cfg, go, sched = self.batcher, self.go, self.sched
        size, timeout = cfg.size, cfg.timeout_ms / 1e3
        first = True
        while True:
            # the cycle in progress when the block starts has a random part left
            self._guard.fired("BatcherConfig", "timeout_ms", cfg.timeout_ms, sched.now)
            self._arm(timeout * sched.choose(1 << 30) / (1 << 30) if first else timeout)
            first = False
            opened = sched.now
            yield go.timer_ns
            batch: list[int] = []
            while True:
                if self.ch.locking:                 # the select locks the channel
                    spin = self.ch.lock(0.0)
                    if spin < 0:
                        spin = yield from self._lock_sleep(0.0)
                    if spin:
                        yield spin
                case, value = yield from self._wait(g)
                if case is FIRED:
                    break
                batch.append(value)
                yield go.item_ns
                if len(batch) == size:
                    break
            self._disarm()
            if batch:
                yield from self._flush(g, batch, SIZE if len(batch) == size else TIMER, opened)

    # ------------------------------------------------------------------ dispatch
    def _flush(self, g: G, batch: list[int], trigger: str, opened: float) -> Op:
        batch_id = self.rec.new_batch(batch, trigger, opened, self.sched.now)
        dispatch = self.batcher.dispatch
        if dispatch == "inline":
            yield from self._call(g, batch_id, batch)
        elif dispatch == "pool":
            if self._v2:
                yield self.go.dispatch_ns
            yield from self.work.send(g, (batch_id, batch))
        else:
            self.sched.go(self._flusher, batch_id, batch)
            yield self.go.spawn_ns + (self.go.dispatch_ns if self._v2 else 0.0)
        # the next batch's slice, from the pool or new (flushBatch's "Reset for the next batch")
        p = self.sched.p
        new = self.slices.get(p.id if p is not None else 0)
        if new:
            yield new

    def _pool(self, g: G) -> Op:
        work: Any = None
        while True:
            if work is None:
                waiter = Waiter(g)
                self.work.park(waiter)
                yield PARK
                work = waiter.value
            yield from self._call(g, *work)
            ok, work, cost = self.work.poll()
            yield cost
            if not ok:
                work = None

    def _flusher(self, g: G, batch_id: int, batch: list[int]) -> Op:
        yield from self._call(g, batch_id, batch)
        yield self.go.exit_ns

    def _call(self, g: G, batch_id: int, batch: list[int]) -> Op:
        """The flush callback: dispatchAndRecord, the call, one ``wg.Done`` per item."""
        go, rec, sched, svc = self.go, self.rec, self.sched, self.service_config
        yield go.flush_ns
        n = len(batch)
        if svc.cost_basis == "unique_keys":
            n = rec.count_unique_keys(batch)
        external = not (go.flush_cpu or svc.is_sleep)
        if external:
            yield SYNC
            done = self.service.submit(batch_id, batch)
            done.callbacks.append(lambda _ev: sched.ready(g))
            yield PARK
        else:
            rec.batch_started(batch_id, sched.now, n)
            d = svc.median_s(n) * self._noise_factor()
            if go.flush_cpu:
                yield d * 1e9
            else:
                sched.timer(d, lambda _p: sched.ready(g))
                yield go.timer_ns
                yield PARK
            rec.batch_server_returned(batch_id, sched.now)
            rec.batch_done(batch_id, sched.now)
        cost = self._complete(batch)
        p = sched.p                      # the slice goes back to the pool on this processor
        self.slices.put(p.id if p is not None else 0)
        yield cost

    def _noise_factor(self) -> float:
        if self.service_config.noise == "constant":
            return 1.0
        if not self._noise:
            self._noise = self.service_config.noise_samples(self._rng_service, 4096).tolist()
        return self._noise.pop()

    def _complete(self, items: list[int]) -> float:
        """``wg.Done`` for each item; a transaction whose last input this was is woken."""
        remaining, item_txn = self._remaining, self.rec.item_txn
        sched, now = self.sched, self.sched.now
        cost = self._done_ns * len(items)
        for item in items:
            txn = item_txn[item]
            remaining[txn] -= 1
            if remaining[txn] == 0:
                self.rec.txn_done(txn, now)
                waiter = self._waiting.pop(txn, None)
                if waiter is not None:
                    sched.ready(waiter)
                    cost += self._ready_ns
        return cost
