"""Per-item, per-transaction and per-batch records; DataFrames built once, at the edge.

Components append to columns during the run: lists per item and per transaction (a list
takes an element as it is, where a typed array converts it, and an item's five columns are
the Go engine's hottest path; the price is memory: a million items hold ~170 MB compiled,
~50 MB in Python), typed arrays per batch; :meth:`Recorder.frames` turns them into pandas
DataFrames.

Item frame columns (one row per item put into the batcher)
    ``item`` id; ``txn`` the transaction that put it; ``batch`` the batch that carried it;
    ``t_put_s`` when the producer called Put; ``t_enqueued_s`` when it entered the channel
    (later than ``t_put_s`` only if Put blocked on a full channel); ``t_flush_s`` when its
    batch closed; ``t_start_s`` when the batch's call started; ``t_done_s`` when it ended;
    ``put_block_s`` = enqueued - put; ``batch_wait_s`` = flush - enqueued (waiting for the
    batch to close); ``dispatch_wait_s`` = start - flush (waiting for a pool slot or a
    permit); ``service_s`` = done - start; ``latency_s`` = done - put. Seconds.
Transaction frame columns
    ``txn``; ``n_inputs``; ``t_start_s`` (first Put); ``t_end_s`` (last input done);
    ``latency_s`` = end - start.
Batch frame columns
    ``batch``; ``trigger`` (size, timer, drain, tick, close); ``size`` items;
    ``n_cost`` records or unique keys the call was charged for; ``t_open_s`` (first item
    received, or cycle start for the cycle timer); ``t_flush_s``; ``t_start_s``;
    ``t_server_done_s`` (the call returned; its permit is free); ``t_done_s`` (the client has
    parsed it: the flush function returned); ``age_s`` = flush - open; ``service_s`` =
    done - start (server call plus the client's parse); ``client_parse_s``,
    ``client_stats_s`` the client CPU of the parse and of the per-record statistics,
    ``stats_set_s`` the part of the statistics in the map's Set, ``app_s`` the service's own
    CPU on the batch's records, ``stats_lock_wait_s`` the time the parse waited for the
    statistics lock (its statistics phase less the CPU it spent there).
A run's frames (:meth:`simbatch.core.engine.Run.frames`) also carry ``scenario``, ``case``,
``replication`` and ``seed`` columns.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Final

import numpy as np
import pandas as pd

from .batcher import TRIGGERS

_NAN: Final = float("nan")


class Recorder:
    """Append-only run records. ``keys`` (optional) maps item -> key for unique counts."""

    def __init__(self) -> None:
        # per item and per transaction: lists (see the module docstring)
        self.item_txn: list[int] = []
        self.item_put: list[float] = []
        self.item_enq: list[float] = []
        self.item_batch: list[int] = []
        self.item_key: list[int] = []
        self.batch_trigger = array("b")
        self.batch_size = array("q")
        self.batch_cost = array("q")
        self.batch_open = array("d")
        self.batch_flush = array("d")
        self.batch_start = array("d")
        self.batch_done_at = array("d")
        self.batch_server_done = array("d")
        self.batch_parse_ns = array("d")
        self.batch_stats_ns = array("d")
        self.batch_set_ns = array("d")
        self.batch_app_ns = array("d")
        self.batch_lock_wait_ns = array("d")
        self.txn_inputs: list[int] = []
        self.txn_start: list[float] = []
        self.txn_end: list[float] = []
        self._trigger_code = {t: i for i, t in enumerate(TRIGGERS)}

    # ------------------------------------------------------------- during the run
    def new_txn(self, n_inputs: int, now: float) -> int:
        self.txn_inputs.append(n_inputs)
        self.txn_start.append(now)
        self.txn_end.append(_NAN)
        return len(self.txn_inputs) - 1

    def new_item(self, txn: int, now: float, key: int = -1) -> int:
        self.item_txn.append(txn)
        self.item_put.append(now)
        self.item_enq.append(_NAN)
        self.item_batch.append(-1)
        self.item_key.append(key)
        return len(self.item_txn) - 1

    def new_items(self, txn: int, k: int, now: float, keys: Sequence[int]) -> range:
        """``k`` items of ``txn`` put at ``now``, their keys the next ``k`` of ``keys``
        (indexed by item): what ``k`` calls of :meth:`new_item` record, in one step."""
        first = len(self.item_txn)
        self.item_txn.extend([txn] * k)
        self.item_put.extend([now] * k)
        self.item_enq.extend([_NAN] * k)
        self.item_batch.extend([-1] * k)
        self.item_key.extend(keys[first:first + k])
        return range(first, first + k)

    def enqueued(self, item: int, now: float) -> None:
        self.item_enq[item] = now

    def new_batch(self, items: list[int], trigger: str, opened_at: float, now: float) -> int:
        batch_id = len(self.batch_size)
        self.batch_trigger.append(self._trigger_code[trigger])
        self.batch_size.append(len(items))
        self.batch_cost.append(len(items))
        self.batch_open.append(opened_at)
        self.batch_flush.append(now)
        self.batch_start.append(_NAN)
        self.batch_done_at.append(_NAN)
        self.batch_server_done.append(_NAN)
        self.batch_parse_ns.append(0.0)
        self.batch_stats_ns.append(0.0)
        self.batch_set_ns.append(0.0)
        self.batch_app_ns.append(0.0)
        self.batch_lock_wait_ns.append(0.0)
        item_batch = self.item_batch
        for item in items:
            item_batch[item] = batch_id
        return batch_id

    def batch_started(self, batch_id: int, now: float, n_cost: int) -> None:
        self.batch_start[batch_id] = now
        self.batch_cost[batch_id] = n_cost

    def batch_server_returned(self, batch_id: int, now: float) -> None:
        self.batch_server_done[batch_id] = now

    def batch_client_cpu(self, batch_id: int, parse_ns: float, stats_ns: float,
                         set_ns: float = 0.0, app_ns: float = 0.0,
                         lock_wait_ns: float = 0.0) -> None:
        self.batch_parse_ns[batch_id] = parse_ns
        self.batch_stats_ns[batch_id] = stats_ns
        self.batch_set_ns[batch_id] = set_ns
        self.batch_app_ns[batch_id] = app_ns
        self.batch_lock_wait_ns[batch_id] = lock_wait_ns

    def batch_done(self, batch_id: int, now: float) -> None:
        self.batch_done_at[batch_id] = now

    def txn_done(self, txn: int, now: float) -> None:
        self.txn_end[txn] = now

    def count_unique_keys(self, items: list[int]) -> int:
        keys = self.item_key
        return len({keys[i] for i in items})

    # ------------------------------------------------------------- at the edge
    def frames(self, **labels) -> dict[str, pd.DataFrame]:
        """``{"items", "txns", "batches"}`` DataFrames with the documented columns."""
        b = self.batch_frame()
        it = self.item_frame(b)
        tx = self.txn_frame()
        for frame in (it, tx, b):
            for name, value in labels.items():
                frame[name] = value
        return {"items": it, "txns": tx, "batches": b}

    def batch_frame(self) -> pd.DataFrame:
        trig = np.asarray(TRIGGERS, dtype=object)[np.frombuffer(self.batch_trigger, np.int8)]
        df = pd.DataFrame({
            "batch": np.arange(len(self.batch_size)),
            "trigger": pd.Categorical(trig, categories=list(TRIGGERS)),
            "size": np.frombuffer(self.batch_size, np.int64),
            "n_cost": np.frombuffer(self.batch_cost, np.int64),
            "t_open_s": np.frombuffer(self.batch_open),
            "t_flush_s": np.frombuffer(self.batch_flush),
            "t_start_s": np.frombuffer(self.batch_start),
            "t_server_done_s": np.frombuffer(self.batch_server_done),
            "t_done_s": np.frombuffer(self.batch_done_at),
            "client_parse_s": np.frombuffer(self.batch_parse_ns) * 1e-9,
            "client_stats_s": np.frombuffer(self.batch_stats_ns) * 1e-9,
            "stats_set_s": np.frombuffer(self.batch_set_ns) * 1e-9,
            "app_s": np.frombuffer(self.batch_app_ns) * 1e-9,
            "stats_lock_wait_s": np.frombuffer(self.batch_lock_wait_ns) * 1e-9,
        })
        df["age_s"] = df.t_flush_s - df.t_open_s
        df["service_s"] = df.t_done_s - df.t_start_s
        return df

    def item_frame(self, batches: pd.DataFrame | None = None) -> pd.DataFrame:
        b = self.batch_frame() if batches is None else batches
        bidx = np.asarray(self.item_batch, np.int64)
        ok = bidx >= 0
        safe = np.where(ok, bidx, 0)

        def col(name: str) -> np.ndarray:
            values = b[name].to_numpy()[safe] if len(b) else np.full(len(bidx), np.nan)
            return np.where(ok, values, np.nan)

        df = pd.DataFrame({
            "item": np.arange(len(bidx)),
            "txn": np.asarray(self.item_txn, np.int64),
            "batch": bidx,
            "t_put_s": np.asarray(self.item_put, np.float64),
            "t_enqueued_s": np.asarray(self.item_enq, np.float64),
            "t_flush_s": col("t_flush_s"),
            "t_start_s": col("t_start_s"),
            "t_done_s": col("t_done_s"),
        })
        df["put_block_s"] = df.t_enqueued_s - df.t_put_s
        df["batch_wait_s"] = df.t_flush_s - df.t_enqueued_s
        df["dispatch_wait_s"] = df.t_start_s - df.t_flush_s
        df["service_s"] = df.t_done_s - df.t_start_s
        df["latency_s"] = df.t_done_s - df.t_put_s
        return df

    def txn_frame(self) -> pd.DataFrame:
        df = pd.DataFrame({
            "txn": np.arange(len(self.txn_inputs)),
            "n_inputs": np.asarray(self.txn_inputs, np.int64),
            "t_start_s": np.asarray(self.txn_start, np.float64),
            "t_end_s": np.asarray(self.txn_end, np.float64),
        })
        df["latency_s"] = df.t_end_s - df.t_start_s
        return df
