"""Per-record client statistics in aerospike-client-go's batch parse (mechanisms.md section 5).

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

Simplification: the lost updates of the racy Get/Set (~99 % per issue #1001) do not change the
cost, which is what is modelled; a writer's wait for readers is folded into the transfers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .cpu import CPUConfig
from .errors import check_choice, check_int, check_number

VARIANTS = ("broken", "per_record_once", "sampled", "sharded", "per_batch", "disabled")


@dataclass(frozen=True, kw_only=True)
class StatsConfig:
    """The statistics variant and its costs (nanoseconds).

    Examples
    --------
    >>> StatsConfig(variant="broken").increments(1024)
    1048576
    >>> StatsConfig(variant="per_record_once").increments(1024)
    1024
    """

    variant: str = "disabled"
    read_ns: float = 25.0
    write_ns: float = 45.0
    lock_lines: float = 2.0
    local_ns: float = 2.0
    sample_every: int = 100
    shards: int = 16

    def __post_init__(self) -> None:
        owner = "StatsConfig"
        check_choice(owner, "variant", self.variant, VARIANTS)
        for name in ("read_ns", "write_ns", "lock_lines", "local_ns"):
            check_number(owner, name, getattr(self, name))
        check_int(owner, "sample_every", self.sample_every, minimum=1)
        check_int(owner, "shards", self.shards, minimum=1)

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

    def cost_ns(self, n: int, concurrent: int, cpu: CPUConfig) -> tuple[float, float]:
        """(statistics CPU, of which the map Set) of one batch while ``concurrent`` parses
        (this one included) update the node's counters.

        >>> cpu = CPUConfig(cores=8, line_near_ns=80)
        >>> StatsConfig(variant="broken").cost_ns(10, 1, cpu)       # 100 x (25 + 45)
        (7000.0, 4500.0)
        """
        v = self.variant
        if v == "disabled":
            return 0.0, 0.0
        sharers = concurrent if v != "sharded" else math.ceil(concurrent / self.shards)
        line = cpu.line_transfer_ns(sharers)
        write = self.write_ns + self.lock_lines * line
        k = self.increments(n)
        if v in ("broken", "sampled"):
            read = self.read_ns + self.lock_lines * line
            total = k * (read + write)
            if v == "sampled":
                total += n * (self.local_ns + line)
            return total, k * write
        total = k * write + (n * self.local_ns if v == "per_batch" else 0.0)
        return total, k * write
