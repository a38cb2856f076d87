"""Per-record client statistics in aerospike-client-go's batch parse (``node_stats.go``
``updateOrInsert``, called from ``parseRecordResults`` in the bsv fork v8.7.1-bsv3; issue #1001).

The node's statistics are a counter map per (namespace, command type) behind one
``sync.RWMutex`` shared by every concurrent batch parse on that node. The upstream increment
(``nodeStats.updateOrInsert``) is a read-locked Get then a write-locked Set. Costs, in
nanoseconds:

* ``read_ns``: the Get uncontended (RLock, map lookup, RUnlock); ``write_ns``: the Set
  uncontended (Lock, map assign, Unlock). validate/gobench measures both on the machine it
  runs on (``[stats]`` in its models/ file).
* ``lock_lines`` cache-line transfers per lock round trip when other cores are parsing at the
  same time (:meth:`simbatch.cpu.CPUConfig.line_transfer_ns` of the number of concurrent
  parses). Default 2: the lock's words share one line (a ``sync.RWMutex`` is 24 bytes), so
  the acquire takes the line (Lock's second atomic hits the line it just took) and the
  release takes it again after another core stole it in between. Get and Set are then
  alike in transfers and differ only in their own work, which is why the map's Set is about
  half of the statistics CPU (published: 21 of 43 % and 30 of 59 %, table R3).

Locked updates per batch of N successfully parsed records, by variant:

* ``broken`` (fork v8.7.1-bsv3, issue #1001): every record iterates every record's namespace,
  each a Get then a Set: **N^2 per batch**;
* ``per_record_once`` (fork PR #4, v8.7.1-bsv4): one write-locked update-or-insert per record;
* ``sampled``: the broken update on one record in ``sample_every`` (the decision is one atomic
  add on a counter shared by the parses, ``local_ns`` plus a line transfer, per record):
  N^2 / sample_every;
* ``sharded``: per-record-once over ``shards`` independent locks, so a line is shared by
  ``concurrent / shards`` parses;
* ``per_batch``: counted locally (``local_ns`` per record), one update per batch;
* ``disabled`` (teranode PR #1003 stopped calling EnableMetrics): none.

The lock is also a capacity (:class:`StatsLocks`): the Set's exclusive section and every
transfer of the lock's line happen one at a time, so parses updating one counter map at once
share at most one lock's worth of updates per second (~3 million for the broken Get-then-Set
at R3's 16 sharers, 332 ns of lock per update). The broken variant's N^2 loop is bound by it,
not by the cores: that, not the per-update CPU, sets its sync rate.

Simplifications: the lost updates of the racy Get/Set (~99 % per issue #1001) do not change
the cost, which is what is modelled; a writer's wait for readers is folded into the
transfers; a parse waiting for the lock is parked and burns no CPU (see :class:`StatsLocks`);
``sync.Mutex``'s starvation mode (direct hand-off after a waiter has waited 1 ms,
``src/internal/sync/mutex.go``), which would idle the lock for a wake-up at every hand-off,
is not modelled.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from ..core.config import NonNeg, PosInt, at, config
from ..core.cpu import CPUConfig

VARIANTS = ("broken", "per_record_once", "sampled", "sharded", "per_batch", "disabled")


@config
class StatsConfig:
    """The statistics variant and its costs (nanoseconds); ``[service.stats]`` in a scenario.

    Parameters
    ----------
    variant : {"broken", "per_record_once", "sampled", "sharded", "per_batch", "disabled"}
    read_ns, write_ns : float
        The Get and the Set uncontended (validate/gobench measures both: ``[service.stats]``
        of its models/ file, which a scenario loads with ``model = ...``).
    lock_lines : float
        Cache-line transfers per lock round trip when other cores parse at the same time.
    local_ns : float
        A local count or the sampling decision's own work, per record.
    sample_every : int
        ``sampled``: the broken update on one record in this many.
    shards : int
        ``sharded``: independent locks.
    command_types : int
        Counter maps the batches spread over, one per (namespace, command type): batch ``i``
        updates map ``i % command_types`` (2 for a workload of batch reads and writes). Each
        map's lock is a shared server (:class:`StatsLocks`).

    Examples
    --------
    >>> StatsConfig(variant="broken").increments(1024)
    1048576
    >>> StatsConfig(variant="per_record_once").increments(1024)
    1024
    """

    variant: Literal["broken", "per_record_once", "sampled", "sharded", "per_batch",
                     "disabled"] = "disabled"
    read_ns: NonNeg = 25.0
    write_ns: NonNeg = 45.0
    lock_lines: NonNeg = 2.0
    local_ns: NonNeg = 2.0
    sample_every: PosInt = 100
    shards: PosInt = 16
    command_types: Annotated[PosInt, at.Le(1024)] = 1

    def increments(self, n: int) -> int:
        """Locked counter updates for one batch of ``n`` successfully parsed records."""
        v = self.variant
        if v == "broken":
            return n * n
        if v in ("per_record_once", "sharded"):
            return n
        if v == "sampled":
            return (n // self.sample_every) * n
        if v == "per_batch":
            return 1 if n else 0
        return 0

    def per_increment_ns(self, sharers: int, cpu: CPUConfig) -> tuple[float, float, float]:
        """(CPU, of which the map Set, the lock's busy time) of one locked update while
        ``sharers`` parses share its lock.

        The CPU is the parse's own work: the map operations and one line transfer per lock
        word it touches. The lock's busy time is what the lock cannot overlap between
        parses: the Set's exclusive section and every transfer of the lock's line, which one
        core owns at a time (a reader's Get overlaps other readers' Gets, so only its line
        transfers count).

        >>> cpu = CPUConfig(cores=8, line_near_ns=80)
        >>> StatsConfig(variant="broken").per_increment_ns(1, cpu)   # uncontended: no transfer
        (70.0, 45.0, 45.0)
        >>> StatsConfig(variant="broken").per_increment_ns(2, cpu)   # 4 transfers of 40 ns
        (230.0, 125.0, 205.0)
        """
        if self.variant == "disabled":
            return 0.0, 0.0, 0.0
        line = cpu.line_transfer_ns(sharers)
        write = self.write_ns + self.lock_lines * line
        if self.variant in ("broken", "sampled"):
            read = self.read_ns + self.lock_lines * line
            return read + write, write, write + self.lock_lines * line
        return write, write, write

    def sharers(self, parses: int) -> int:
        """Parses sharing one lock when ``parses`` update the same counter map at once."""
        return parses if self.variant != "sharded" else math.ceil(parses / self.shards)

    def unlocked_ns(self, n: int, sharers: int, cpu: CPUConfig) -> float:
        """CPU a batch of ``n`` records spends on statistics outside the lock: the sampling
        decision (an atomic add on a counter the parses share) or counting locally."""
        if self.variant == "sampled":
            return n * (self.local_ns + cpu.line_transfer_ns(sharers))
        if self.variant == "per_batch":
            return n * self.local_ns
        return 0.0

    def cost_ns(self, n: int, concurrent: int, cpu: CPUConfig) -> tuple[float, float]:
        """(statistics CPU, of which the map Set) of one batch while ``concurrent`` parses
        (this one included) update the node's counters, all the while.

        The closed form at a fixed number of parses, for back-of-envelope use: the engine
        runs :class:`StatsLocks`, whose CPU equals this when the number does not change.

        >>> cpu = CPUConfig(cores=8, line_near_ns=80)
        >>> StatsConfig(variant="broken").cost_ns(10, 1, cpu)       # 100 x (25 + 45)
        (7000.0, 4500.0)
        """
        sharers = self.sharers(concurrent)
        own, write, _hold = self.per_increment_ns(sharers, cpu)
        k = self.increments(n)
        return k * own + self.unlocked_ns(n, concurrent, cpu), k * write


class StatsLocks:
    """The node's counter locks, shared by the batch parses in their statistics phase.

    A per-increment event is out of reach (a broken 1024-record batch makes a million), so
    each lock is a fluid server. While ``p`` parses update one counter map, each advances at
    ``min(1 / own, 1 / (s * hold))`` increments per nanosecond, ``s`` = :meth:`StatsConfig.sharers`
    of ``p``: as fast as its own CPU allows, or its equal share of a lock that can be busy at
    most all of the time. Rates are recomputed whenever a parse enters or leaves, so the
    lock's busy time never exceeds the time that passed (tested). A parse that waits for the
    lock burns no CPU here: Go parks it (``RWMutex.RLock`` sleeps on ``readerSem`` while a
    writer is pending, Go 1.26 ``src/sync/rwmutex.go``; ``Mutex.Lock`` spins at most
    ``active_spin`` = 4 rounds before ``runtime_SemacquireMutex``,
    ``src/internal/sync/mutex.go`` and ``runtime.sync_runtime_canSpin``), so its core is free
    for other work; the spin rounds and the park and wake are not charged (an unmodelled
    extra, which would raise the statistics' share).

    ``stats.command_types`` counter maps, one per (namespace, command type); batch ``i``
    updates map ``i % command_types`` (a workload of batch reads and writes has two).

    ``on_done(cpu_ns, set_ns)`` is called once per :meth:`update`, when its increments are
    all done, with the CPU they cost.
    """

    def __init__(self, env, stats: StatsConfig, cpu: CPUConfig) -> None:
        self.stats = stats
        self._maps = [_CounterMap(env, stats, cpu) for _ in range(stats.command_types)]

    def update(self, batch_id: int, n: int, on_done) -> None:
        """Count ``n`` successfully parsed records of batch ``batch_id``."""
        self._maps[batch_id % len(self._maps)].enter(self.stats.increments(n), on_done)

    @property
    def busy_ns(self) -> list[float]:
        """Each counter map's lock busy time so far (nanoseconds)."""
        return [m.busy_ns for m in self._maps]


class _CounterMap:
    """One (namespace, command type) counter map: the fluid server of :class:`StatsLocks`."""

    def __init__(self, env, stats: StatsConfig, cpu: CPUConfig) -> None:
        self.env = env
        self.stats = stats
        self.cpu = cpu
        self._active: dict[int, list] = {}   # token -> [remaining, cpu_ns, set_ns, on_done]
        self._next_token = 0
        self._epoch = 0
        self._last = 0.0
        self._rate = 0.0                      # increments per ns, per parse
        self._costs = (0.0, 0.0, 0.0)         # per increment: own CPU, Set, lock busy
        self.busy_ns = 0.0

    def enter(self, increments: int, on_done) -> None:
        if increments <= 0:
            on_done(0.0, 0.0)
            return
        self._advance()
        self._active[self._next_token] = [float(increments), 0.0, 0.0, on_done]
        self._next_token += 1
        self._reschedule()

    def _advance(self) -> None:
        now_ns = self.env.now * 1e9
        step = (now_ns - self._last) * self._rate
        self._last = now_ns
        if step <= 0.0:
            return
        own, write, hold = self._costs
        for entry in self._active.values():
            done = min(entry[0], step)
            entry[0] -= done
            entry[1] += done * own
            entry[2] += done * write
            self.busy_ns += done * hold

    def _reschedule(self) -> None:
        self._epoch += 1
        if not self._active:
            self._rate = 0.0
            return
        s = self.stats.sharers(len(self._active))
        self._costs = own, _write, hold = self.stats.per_increment_ns(s, self.cpu)
        self._rate = 1.0 / max(own, s * hold)
        first = min(entry[0] for entry in self._active.values())
        epoch = self._epoch
        wait_s = first / self._rate * 1e-9
        self.env.timeout(wait_s).callbacks.append(lambda _ev: self._fire(epoch))

    def _fire(self, epoch: int) -> None:
        if epoch != self._epoch:
            return
        self._advance()
        # finish every parse whose remainder is within rounding of zero
        finished = [t for t, e in self._active.items() if e[0] <= 1e-6]
        if not finished:
            finished = [min(self._active, key=lambda t: self._active[t][0])]
        done = []
        for token in finished:
            remaining, cpu_ns, set_ns, on_done = self._active.pop(token)
            own, write, hold = self._costs
            done.append((on_done, cpu_ns + remaining * own, set_ns + remaining * write))
            self.busy_ns += remaining * hold
        self._reschedule()
        for on_done, cpu_ns, set_ns in done:
            on_done(cpu_ns, set_ns)
