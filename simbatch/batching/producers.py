"""Producers in front of a batcher: a block of transactions (closed loop) or open arrivals.

Block workload (teranode ``BatchPreviousOutputsDecorate``, ``stores/utxo/aerospike/get.go``): N
transactions, each with a number of inputs drawn from a distribution; a transaction puts its
inputs one Put at a time and waits until all of them are done. ``fanout = "sequential"`` is
the pre-PR #893 serial loop; ``fanout = "errgroup"`` is an ``errgroup`` with ``SetLimit(cap)``
(PR #893), modelled as ``cap`` workers taking the next transaction in order, which is what
``g.Go`` in a loop does when it blocks for a free slot.

Open-loop workload: transactions arrive by a Poisson or periodic process and do not wait for
their results (a separate goroutine per arrival): a Put that blocks delays only that
transaction's items, which keep their FIFO order in the channel's sender queue.
"""

from __future__ import annotations

from array import array
from typing import Literal

import numpy as np
import simpy

from ..core.config import Bool, PosFloat, PosInt, Rule, config
from ..core.distributions import Quantity, as_distribution

FANOUTS = ("sequential", "errgroup")
ARRIVALS = ("poisson", "periodic")


@config
class BlockWorkload:
    """A block of ``n_transactions`` closed-loop transactions (``[workload] kind = "block"``).

    Parameters
    ----------
    n_transactions : int
    inputs_per_tx : number or distribution table
        Inputs (items) per transaction; rounded to whole items when sampled.
    fanout : {"sequential", "errgroup"}
    cap : int or None
        errgroup limit: transactions in flight at once (required for ``errgroup``).
    key_space : int or None
        Items draw their key uniformly from this many keys (for per-unique-key costs);
        ``None`` = every item has its own key.

    Examples
    --------
    >>> BlockWorkload(n_transactions=10, fanout="errgroup", cap=4).concurrency
    4
    """

    kind: Literal["block"] = "block"
    n_transactions: PosInt = 1000
    inputs_per_tx: Quantity = 3
    fanout: Literal["sequential", "errgroup"] = "sequential"
    cap: PosInt | None = None
    key_space: PosInt | None = None
    RULES = (Rule("cap", "set when fanout = 'errgroup'",
                  lambda w: w.fanout != "errgroup" or w.cap is not None),
             Rule("cap", "unset when fanout = 'sequential'",
                  lambda w: w.fanout != "sequential" or w.cap is None))

    @property
    def distribution(self):
        return as_distribution(self.inputs_per_tx)

    @property
    def concurrency(self) -> int:
        return 1 if self.fanout == "sequential" else int(self.cap or 1)


@config
class OpenLoopWorkload:
    """Transactions arriving at ``rate_per_s`` (Poisson or periodic), not waiting
    (``[workload] kind = "open_loop"``).

    Parameters
    ----------
    n_transactions : int
    rate_per_s : float
        Transactions per second.
    arrival : {"poisson", "periodic"}
    inputs_per_tx : number or distribution table
    key_space : int or None
    close_after_last : bool
        Close the batcher right after the last arrival (its remainder flushes with trigger
        ``close``) instead of letting the timer flush it.
    """

    kind: Literal["open_loop"] = "open_loop"
    n_transactions: PosInt = 10_000
    rate_per_s: PosFloat = 1000.0
    arrival: Literal["poisson", "periodic"] = "poisson"
    inputs_per_tx: Quantity = 1
    key_space: PosInt | None = None
    close_after_last: Bool = False

    @property
    def distribution(self):
        return as_distribution(self.inputs_per_tx)


def inputs_and_keys(workload, rngs: dict[str, np.random.Generator]
                    ) -> tuple[list[int], array]:
    """Each transaction's input count, and each item's key by the item's index (its
    transaction's place in the run decides which items are its), from the ``inputs`` and
    ``keys`` streams; without a key space every item's key is its own index."""
    counts = np.rint(workload.distribution.sample(rngs["inputs"], workload.n_transactions))
    n_items = int(counts.sum())
    ks = workload.key_space
    keys = array("q", rngs["keys"].integers(0, ks, n_items).tolist() if ks else range(n_items))
    return counts.astype(np.int64).tolist(), keys


class Producers:
    """Drives a workload into ``batcher``; :meth:`items_done` is the service's callback.

    ``start()`` returns an event that succeeds when every transaction has completed.
    """

    def __init__(self, env: simpy.Environment, workload, recorder,
                 rngs: dict[str, np.random.Generator]) -> None:
        self.env = env
        self.workload = workload
        self.recorder = recorder
        self.batcher = None
        self._counts, self._keys = inputs_and_keys(workload, rngs)
        self._rng_arrivals = rngs["arrivals"]
        self._remaining = array("q")
        self._waiters: dict[int, simpy.Event] = {}
        self._next = 0
        self._finished = 0
        self.all_done = env.event()

    def start(self, batcher) -> simpy.Event:
        self.batcher = batcher
        wl = self.workload
        if isinstance(wl, BlockWorkload):
            for _ in range(min(wl.concurrency, wl.n_transactions)):
                self.env.process(self._closed_loop())
        else:
            self.env.process(self._open_loop())
        return self.all_done

    # ---------------------------------------------------------------- transactions
    def _begin(self) -> tuple[int, int]:
        index = self._next
        self._next += 1
        k = self._counts[index]
        txn = self.recorder.new_txn(k, self.env.now)
        self._remaining.append(k)
        if k == 0:
            self._complete(txn)
        return txn, k

    def _complete(self, txn: int) -> None:
        self.recorder.txn_done(txn, self.env.now)
        waiter = self._waiters.pop(txn, None)
        if waiter is not None:
            waiter.succeed()
        self._finished += 1
        if self._finished == self.workload.n_transactions:
            self.all_done.succeed()

    def _closed_loop(self):
        n = self.workload.n_transactions
        env, rec, keys = self.env, self.recorder, self._keys
        put, ch = self.batcher.put, self.batcher.channel
        while self._next < n:
            txn, k = self._begin()
            if k == 0:
                continue
            done = env.event()
            self._waiters[txn] = done
            if ch.fits(k):       # the transaction's Puts in one step: none of them blocks
                ch.put_many(rec.new_items(txn, k, env.now, keys))
            else:
                for _ in range(k):
                    item = rec.new_item(txn, env.now, keys[len(rec.item_txn)])
                    blocked = put(item)
                    if blocked is not None:
                        yield blocked
            yield done

    def _open_loop(self):
        wl = self.workload
        n = wl.n_transactions
        if wl.arrival == "poisson":
            gaps = self._rng_arrivals.exponential(1.0 / wl.rate_per_s, n).tolist()
        else:
            gaps = [1.0 / wl.rate_per_s] * n
        env, rec, keys = self.env, self.recorder, self._keys
        put, ch = self.batcher.put, self.batcher.channel
        for gap in gaps:
            yield env.timeout(gap)
            txn, k = self._begin()
            if ch.fits(k):
                ch.put_many(rec.new_items(txn, k, env.now, keys))
                continue
            for _ in range(k):
                put(rec.new_item(txn, env.now, keys[len(rec.item_txn)]))
        if wl.close_after_last:
            self.batcher.close()

    def items_done(self, items: list[int]) -> None:
        remaining = self._remaining
        item_txn = self.recorder.item_txn
        for item in items:
            txn = item_txn[item]
            remaining[txn] -= 1
            if remaining[txn] == 0:
                self._complete(txn)
