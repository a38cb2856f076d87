"""go-batcher's batch slices: a ``sync.Pool`` per batcher, and what a slice costs when it is empty.

Both go-batcher versions the harness drives are built with ``NewWithPool`` (teranode's
Aerospike store does the same), so after handing a batch to its dispatch the worker takes the
next batch's slice from a ``sync.Pool`` whose ``New`` makes ``make([]*T, 0, size)``, and the
goroutine that ran the flush callback puts the slice back when the callback returns
(go-batcher v2.0.6 ``batcher.go``: ``flushBatch``, "Reset for the next batch", and the pool
goroutines of ``SetMaxConcurrent``; v1.1.0 ``batcher.go`` the same). A slice is 8 bytes per
slot, so at size 4096 a new one is 32 KiB to allocate and zero; at size 100, 800 bytes.

``sync.Pool``'s rules (Go 1.26 ``src/sync/pool.go``):

* ``Put`` on processor P stores the slice in P's ``private`` slot if it is empty, else at the
  head of P's ``shared`` chain;
* ``Get`` on P takes P's ``private``, else the head of P's ``shared``, else (``getSlow``) the
  tail of another processor's ``shared`` -- never another processor's ``private`` -- and only
  then calls ``New``;
* each garbage collection moves the pool to its victim cache and drops the previous victim
  (``poolCleanup``), so two collections empty it.

The harness collects between blocks and interleaves its cells, so a batcher's pool has been
through many collections between two of its blocks: the pool starts every block empty. A
block that flushes one batch at a time reuses one or two slices; one whose batches are in
flight or queued together allocates a slice per batch on the worker, between its hand-off
and its next receive: drain mode with a sleeping flush, or with a CPU-bound one at
GOMAXPROCS 2 when the worker and the transactions run on different processors and the
pool goroutines wait behind the transactions in a run queue (an execution trace of the
harness shows the worker handing out 35 batches in one 250 us run that way:
``validate/gobatcher/data/README.md``).

The CPU of a ``New`` is ``[go] alloc_ns + alloc_kib_ns x 8 x size / 1024``, measured by the
harness's micro-benchmark (``validate/gobatcher/costs.go``, ``newSliceNs``: ``Get`` on an
empty pool of 100- and 4096-slot slices, the slices kept, each round after a collection);
a ``Get`` or ``Put`` that reuses a slice is in ``flush_ns``. Both costs default to 0.
"""

from __future__ import annotations

SLOT_BYTES = 8


class SlicePool:
    """One batcher's ``sync.Pool`` of batch slices, per processor (see the module docstring).

    Examples
    --------
    >>> pool = SlicePool(processors=2, new_ns=500.0)
    >>> pool.get(0)                 # empty: New
    500.0
    >>> pool.put(1); pool.get(0)    # processor 1's private slot is not stolen
    500.0
    >>> pool.put(1); pool.get(0)    # its shared chain is
    0.0
    >>> pool.get(1), pool.news
    (0.0, 2)
    """

    __slots__ = ("private", "shared", "new_ns", "news")

    def __init__(self, processors: int, new_ns: float) -> None:
        self.private = [False] * processors
        self.shared = [0] * processors
        self.new_ns = new_ns
        self.news = 0

    @classmethod
    def for_batcher(cls, processors: int, size: int, alloc_ns: float,
                    alloc_kib_ns: float) -> SlicePool:
        """The pool of a batcher of ``size`` slots, with the ``[go]`` allocation costs."""
        return cls(processors, alloc_ns + alloc_kib_ns * SLOT_BYTES * size / 1024)

    def get(self, p: int) -> float:
        """Take a slice on processor ``p``; the CPU beyond a reuse (ns)."""
        if self.private[p]:
            self.private[p] = False
            return 0.0
        if self.shared[p]:
            self.shared[p] -= 1
            return 0.0
        for q, n in enumerate(self.shared):
            if n:
                self.shared[q] -= 1
                return 0.0
        self.news += 1
        return self.new_ns

    def put(self, p: int) -> None:
        """Give a slice back on processor ``p``."""
        if self.private[p]:
            self.shared[p] += 1
        else:
            self.private[p] = True
