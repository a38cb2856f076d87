"""Per-record client statistics in aerospike-client-go's batch parse (mechanisms.md section 5).

The node's statistics are a counter map per (namespace, command type) behind one
``sync.RWMutex`` shared by every concurrent batch parse on that node. An increment is a
read-locked Get then a write-locked Set: four atomic read-modify-writes on the lock's words
(``lock_lines``), each a cache-line transfer when other cores are parsing at the same time,
plus the map work (``increment_ns``). Increments per batch of N records, by variant:

* ``broken`` (fork v8.7.1-bsv3, issue #1001): every successful record iterates every record's
  namespace in the command: N per record, **N^2 per batch**;
* ``per_record_once`` (fork PR #4, v8.7.1-bsv4): one per record, N per batch;
* ``sampled``: one in ``sample_every`` records;
* ``sharded``: N per batch, but over ``shards`` independent locks, so a line is shared by
  ``concurrent / shards`` parses;
* ``per_batch``: one aggregated update per batch;
* ``disabled`` (teranode PR #1003 stopped calling EnableMetrics): none.

Simplification: the lost updates of the racy Get/Set (~99 % per issue #1001) do not change the
cost, which is what is modelled; the writer lock's wait for readers is folded into the line
transfers.
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
    increment_ns: float = 40.0
    lock_lines: float = 4.0
    sample_every: int = 100
    shards: int = 16

    def __post_init__(self) -> None:
        owner = "StatsConfig"
        check_choice(owner, "variant", self.variant, VARIANTS)
        check_number(owner, "increment_ns", self.increment_ns)
        check_number(owner, "lock_lines", self.lock_lines)
        check_int(owner, "sample_every", self.sample_every, minimum=1)
        check_int(owner, "shards", self.shards, minimum=1)

    def increments(self, n: int) -> int:
        """Counter updates for one batch of ``n`` successfully parsed records."""
        v = self.variant
        if v == "broken":
            return n * n
        if v in ("per_record_once", "sharded"):
            return n
        if v == "sampled":
            return n // self.sample_every
        if v == "per_batch":
            return 1 if n else 0
        return 0

    def cost_ns(self, n: int, concurrent: int, cpu: CPUConfig) -> float:
        """CPU time of the statistics of one batch while ``concurrent`` parses (this one
        included) update the node's counters."""
        if self.variant == "disabled":
            return 0.0
        sharers = concurrent if self.variant != "sharded" else math.ceil(concurrent / self.shards)
        per_increment = self.increment_ns + self.lock_lines * cpu.line_transfer_ns(sharers)
        return self.increments(n) * per_increment
