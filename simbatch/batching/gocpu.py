"""The Go client's CPU: how many processors it runs on and what each runtime operation costs.

The ``[go]`` section of a batcher case. Off by default (``gomaxprocs`` unset): the engine
then charges no CPU at all and orders work at one instant as SimPy schedules it, exactly as
before this section existed. With ``gomaxprocs`` set, every goroutine of the pipeline (the
block's driver and its errgroup, one goroutine per transaction, go-batcher's worker, its
dispatch pool or per-batch goroutines, the flush callback) runs on ``gomaxprocs``
processors under Go's scheduler (:mod:`simbatch.batching.scheduler`), and each operation
below is CPU time on the processor that runs it, in nanoseconds.

Where each cost is spent (go-batcher v2.0.6 ``batcher.go``, x/sync ``errgroup``, the Go
runtime of ``src/runtime``):

``spawn_ns``
    a ``go`` statement in the parent (``newproc``: a goroutine from the free list, put in
    the processor's ``runnext``), with errgroup's ``wg.Add``;
``exit_ns``
    a goroutine's return (``goexit0``, back to the free list), with errgroup's ``done``;
``switch_ns``
    a context switch: the running goroutine parks (``gopark``) or exits and ``schedule``
    starts the next one;
``cold_ns``
    more, when the goroutine switched to has been parked for over 100 us (or is new): its
    stack and state are no longer in the caches -- a block of thousands of goroutines
    wakes most of them cold. The shipped model's costs are measured on goroutines that
    mostly ran cold (a CPU profile of the harness), so it sets 0;
``ready_ns``
    making a parked goroutine runnable (``goready``: ``runqput`` and ``wakep``), charged to
    the goroutine that wakes it (a channel hand-off, ``wg.Done``, a pool hand-off);
``wakep_ns``
    more, when that ``wakep`` finds an idle processor and no spinning thread and so wakes a
    thread (``startm``: a futex wake-up, a system call);
``chan_ns``
    one channel operation that neither blocks nor wakes (a buffered send or receive, a
    ``select`` poll, errgroup's semaphore);
``put_ns``
    go-batcher's ``Put`` beyond its channel send (``enqueue``: the metrics hook, the select),
    with the rest of the transaction's own CPU spread over its Puts (measured as a
    transaction goroutine's CPU per Put: the harness's clock reads and wait group included);
``item_ns``
    the worker's work per item received (``appendItems``);
``flush_ns``
    per flush, the flush goroutine's side: ``dispatchAndRecord`` (trigger metrics, tracing
    span, clock reads, the callback's own bookkeeping) and the slice pool's ``Put``;
``dispatch_ns``
    per flush handed to a pool slot or a goroutine of its own, the worker's side of it in
    go-batcher v2 (``flushBatch``: ``inflight.Add``, the clock reads around the hand-off's
    ``select``, the slice pool's ``Get``) beyond the hand-off's ``chan_ns + ready_ns``;
    ``flush_ns`` is the flush goroutine's side. Measured from a CPU profile of the harness's
    drain cell (``validate/gobatcher/data/README.md``); v1.1.0's worker does none of it;
``select_ns``
    each time go-batcher v2's worker resumes from a blocking ``select`` (over the item
    channel, its timer, its ticker and ``done``: it locks all four, queues on each and, woken,
    takes itself off the others), beyond the hand-off its sender pays (``chan_ns +
    ready_ns``). Measured from the same profile; v1.1.0's select is not measured and costs
    nothing here;
``select_ready_ns``
    each time go-batcher v2's worker's ``select`` finds a case ready and does not block
    (drain off: every item after the first of a wake-up; drain on: a cycle that starts with
    items waiting; a timer already fired), beyond the receive's ``chan_ns``: ``selectgo``
    shuffles and locks the cases and polls each. Measured from a CPU profile of a drain-off
    cell, where each item but the first of a wake-up passes there; v1.1.0's is not measured
    and costs nothing here;
``alloc_ns``, ``alloc_kib_ns``
    a new batch slice, when go-batcher's slice pool has none to give (``sync.Pool``'s
    ``New``: ``make([]*T, 0, size)``, 8 bytes per slot): ``alloc_ns`` plus
    ``alloc_kib_ns`` per KiB of the slice (:mod:`.slicepool`). Measured by the harness's
    ``-costs`` since 2026-11-24 (~0.74 us for a 4096-slot slice here); the shipped
    ``models/gobatcher-loopback.toml`` does not charge them (why:
    ``validate/gobatcher/data/README.md``);
``timer_ns``
    arming or stopping a timer (``timer.Reset``, ``time.Sleep``);
``done_ns``
    the flush callback's work per item it completes (``wg.Done``, and whatever the
    callback records per item: the harness writes each item's completion time);
``flush_cpu``
    the flush callback's service time is CPU on a processor (a CPU-bound callback, the
    harness's spin flush) rather than a wait;
``lock_ns``
    the time one operation on go-batcher's item channel holds the channel's lock as
    another processor sees it (``hchan.lock``, taken by every send, every receive that
    finds an item and every ``select`` over it). Two processors' operations less than this
    apart contend: the later one finds the lock held (:meth:`.gosync.Chan.lock`). Measured
    by ``validate/gobatcher -costs``: the time per operation while one processor sends and
    the other receives from a backlog, both without pause, serialized on the lock
    (GOMAXPROCS 2). 0 (the default) leaves the lock out;
``lock_sleep``
    the chance that a thread which finds the lock held sleeps on it (``runtime.lock2`` in
    ``src/runtime/lock_spinbit.go``: only the thread holding the lock word's spin bit
    spins, the others sleep in ``futex`` at once), holding its processor until the
    holder's unlock wakes it, a wake-up later (``[host] wake_us``); otherwise it spins
    until the holder lets go. Measured with the runtime's ``lock2`` counting the item
    channel's contended acquisitions: 25-45 % of them end in a sleep in every kind of
    block (``validate/gobatcher/data/README.md``, "The channel's lock");
``other_timers_ms``
    the periods of the process's other batchers' cycle timers, each started at a random
    phase (the harness's process keeps two go-batcher v1.1.0 batchers of 5 and 10 ms
    cycling through every block). Each batcher is an idle goroutine that its timer readies
    into ``runnext``; it re-arms (``chan_ns + timer_ns``) and blocks again, so it takes the
    processor between the block's goroutines, starts a new time slice when it blocks, and
    wakes an idle process, which re-truncates its wait for the next timer to whole
    milliseconds (:mod:`.scheduler`, :mod:`.goclient`).

How long an idle processor's thread takes to wake, how long ``runqgrab``'s ``usleep(3)``
back-off takes, and how often other processes on the machine take the client's threads
are properties of the host (``[host] wake_us``, ``backoff_us``, ``stall_per_s``,
``stall_us``: :mod:`.hosttiming`), and so is how long the kernel runs two of its threads on
one CPU after it wakes an idle processor's (``packed_us``).

The costs of ``models/gobatcher-loopback.toml`` were measured on this project's machine:
the runtime's operations by ``validate/gobatcher -costs`` (micro-benchmarks), each
goroutine's own work (``spawn_ns``, ``switch_ns``, ``put_ns``, ``flush_ns``, ``done_ns``,
``dispatch_ns``, ``select_ns``, ``select_ready_ns``) from CPU profiles of two harness cells
(``validate/calibrate_gobatcher.py --profile``). None is fitted to block times.
``[go] model = "../models/gobatcher-loopback.toml"`` loads them.
"""

from __future__ import annotations

from typing import Annotated

from ..core.config import Bool, Cores, Float, NonNeg, at, config

OpNs = Annotated[NonNeg, at.Le(1e6)]
"""A runtime operation's CPU, nanoseconds: at most a millisecond (the measured ones are tens
to thousands of nanoseconds; a goroutine's CPU is run in slices of a few hundred)."""

COSTS = ("spawn_ns", "exit_ns", "switch_ns", "cold_ns", "ready_ns", "wakep_ns", "chan_ns",
         "put_ns", "item_ns", "flush_ns", "dispatch_ns", "select_ns", "select_ready_ns",
         "alloc_ns", "alloc_kib_ns", "timer_ns", "done_ns", "lock_ns")


@config
class GoConfig:
    """The Go client's processors and the CPU cost of each runtime operation (``[go]``).

    Parameters
    ----------
    gomaxprocs : int or None
        Processors (``GOMAXPROCS``) the client's goroutines run on; ``None`` = the client's
        CPU is not modelled (the default).
    spawn_ns, exit_ns, switch_ns, cold_ns, ready_ns, wakep_ns, chan_ns, put_ns, item_ns, \
flush_ns, dispatch_ns, select_ns, select_ready_ns, alloc_ns, alloc_kib_ns, timer_ns, done_ns : float
        CPU per operation, nanoseconds (see the module docstring).
    lock_ns : float
        How long an item-channel operation holds the channel's lock, nanoseconds; 0: the
        lock is not modelled.
    lock_sleep : float
        Chance, 0 to 1, that a thread finding the lock held sleeps on it.
    flush_cpu : bool
        The flush callback's service time is CPU on a processor.
    other_timers_ms : list of float
        Periods of the process's other timers (milliseconds).

    Examples
    --------
    >>> GoConfig().enabled, GoConfig(gomaxprocs=2).enabled
    (False, True)
    """

    gomaxprocs: Cores | None = None
    spawn_ns: OpNs = 400.0
    exit_ns: OpNs = 300.0
    switch_ns: OpNs = 250.0
    cold_ns: OpNs = 0.0
    ready_ns: OpNs = 150.0
    wakep_ns: OpNs = 2000.0
    chan_ns: OpNs = 60.0
    put_ns: OpNs = 30.0
    item_ns: OpNs = 30.0
    flush_ns: OpNs = 600.0
    dispatch_ns: OpNs = 0.0
    select_ns: OpNs = 0.0
    select_ready_ns: OpNs = 0.0
    alloc_ns: OpNs = 0.0
    alloc_kib_ns: OpNs = 0.0
    timer_ns: OpNs = 100.0
    done_ns: OpNs = 30.0
    flush_cpu: Bool = False
    other_timers_ms: tuple[Annotated[Float, at.Ge(0.01)], ...] = ()
    lock_ns: OpNs = 0.0
    lock_sleep: Annotated[Float, at.Ge(0.0), at.Le(1.0)] = 0.35

    @property
    def enabled(self) -> bool:
        return self.gomaxprocs is not None
