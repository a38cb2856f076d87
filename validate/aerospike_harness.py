"""Measure batch-read latency on a real Aerospike server: raw samples in the format the
service fit reads (``simbatch.fit``; ``shared/data/aerospike-loopback``'s long format).

The server is named by the environment variable ``SIMBATCH_AEROSPIKE_HOST`` (``host`` or
``host:port``, port 3000 by default) and its namespace by ``SIMBATCH_AEROSPIKE_NAMESPACE``
(``test`` by default). No Aerospike server can be installed on the project's own machines;
where none is named, :func:`server_from_env` returns ``None`` and the calibration tests skip
with a message that says so.

The method is the one the recorded data were taken with (``measure_batch_read.py`` beside
``shared/data/aerospike-loopback/batch_read_latency.csv``, whose README explains each step):

* records shaped like UTXOs in set ``utxo``: a 32-byte sha256 user key passed as a
  ``bytearray`` (client 19.x sends a ``bytes`` user key as a string cut at the first NUL:
  aerospike-client-python issue #159), a 200-byte ``outputs`` blob, ``version``,
  ``locktime``;
* per (op, batch size, concurrency) cell: ``concurrency`` threads share one client, each
  makes 20 warm-up calls, a barrier, then its share of the timed calls back to back
  (``perf_counter`` right before and after ``client.batch_read`` or ``client.get``); a
  thread that has finished keeps calling, untimed, until all have, so every sample ran at
  the full concurrency;
* every key list is built before its cell starts, and ``gc.freeze()`` moves the harness's
  own objects out of the collector's reach (otherwise a full collection walks the key lists:
  the recorded data's caveat 3);
* cells run in a seeded random order, so slow drift does not line up with the grid.

Columns: ``op, batch_size, concurrency, thread, seq, latency_s, start_s``.
"""

from __future__ import annotations

import gc
import hashlib
import math
import os
import random
import struct
import threading
import time
from dataclasses import dataclass

import pandas as pd

SET = "utxo"
OUTPUTS_BYTES = 200
WARMUP_CALLS = 20
COLUMNS = ("op", "batch_size", "concurrency", "thread", "seq", "latency_s", "start_s")
ENV_HOST, ENV_NAMESPACE = "SIMBATCH_AEROSPIKE_HOST", "SIMBATCH_AEROSPIKE_NAMESPACE"


class HarnessError(RuntimeError):
    """The server cannot be reached or answers wrongly; the message says which and where."""


@dataclass(frozen=True)
class Server:
    host: str
    port: int = 3000
    namespace: str = "test"

    def __str__(self) -> str:
        return f"{self.host}:{self.port} (namespace {self.namespace!r})"


def parse_server(text: str, namespace: str = "test") -> Server:
    """``host`` or ``host:port``; a clear error naming the variable and the value otherwise.

    >>> parse_server("10.0.0.5:3100")
    Server(host='10.0.0.5', port=3100, namespace='test')
    """
    host, sep, port = text.strip().partition(":")
    port = port if sep else "3000"
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise HarnessError(f"{ENV_HOST} must be 'host' or 'host:port'; got {text!r}.")
    return Server(host, int(port), namespace)


def server_from_env() -> Server | None:
    text = os.environ.get(ENV_HOST, "").strip()
    return parse_server(text, os.environ.get(ENV_NAMESPACE, "test")) if text else None


def connect(server: Server, timeout_ms: int = 10_000):
    """A connected client (policies as in the recorded data: 10 s total and socket timeouts)."""
    import aerospike

    policy = {"total_timeout": timeout_ms, "socket_timeout": timeout_ms}
    cfg = {"hosts": [(server.host, server.port)], "timeout": min(timeout_ms, 5_000),
           "policies": {"batch": policy, "read": policy, "write": policy}}
    try:
        return aerospike.client(cfg).connect()
    except aerospike.exception.AerospikeError as exc:
        raise HarnessError(f"no Aerospike server answered at {server}: {exc}") from None


def utxo_key(server: Server, i: int) -> tuple:
    return (server.namespace, SET, bytearray(hashlib.sha256(struct.pack("<Q", i)).digest()))


def set_objects(client, server: Server) -> int:
    for _err, text in client.info_all(f"sets/{server.namespace}/{SET}").values():
        for part in (text or "").strip().split(":"):
            if part.startswith("objects="):
                return int(part.split("=")[1])
    return 0


def load(client, server: Server, n_records: int) -> None:
    """Write records 0 .. n_records - 1 (idempotent: skipped when the set holds them)."""
    if set_objects(client, server) >= n_records:
        return
    payload = random.Random(12345).randbytes(OUTPUTS_BYTES * n_records)
    for i in range(n_records):
        client.put(utxo_key(server, i), {
            "outputs": payload[i * OUTPUTS_BYTES:(i + 1) * OUTPUTS_BYTES],
            "version": 1 + (i % 2), "locktime": 0 if i % 10 else 500_000 + i})


class _Cell:
    """One (op, size, concurrency) cell: pre-built key lists, threads, raw samples."""

    def __init__(self, client, keys: list, op: str, size: int, conc: int, n_total: int,
                 seed: int):
        self.client, self.op, self.size, self.conc = client, op, size, conc
        per_thread = math.ceil(n_total / conc)
        self.lists = []
        for th in range(conc):
            rnd = random.Random(seed * 1000 + th)
            n_lists = WARMUP_CALLS + per_thread
            self.lists.append([keys[rnd.randrange(len(keys))] for _ in range(n_lists)]
                              if op == "get" else
                              [[keys[j] for j in rnd.sample(range(len(keys)), size)]
                               for _ in range(n_lists)])
        self.per_thread = per_thread
        self.samples: list[list[tuple[float, float]]] = [[] for _ in range(conc)]
        self.errors: list[str] = []
        self.barrier = threading.Barrier(conc)
        self.left = conc
        self.lock = threading.Lock()
        self.all_done = threading.Event()

    def _call(self, arg):
        if self.op == "get":
            return self.client.get(arg)
        return self.client.batch_read(arg)

    def _ok(self, res) -> bool:
        if self.op == "get":
            return res[2] is not None
        recs = res.batch_records
        return (res.result == 0 and len(recs) == self.size
                and all(r.result == 0 and r.record is not None for r in (recs[0], recs[-1])))

    def _thread(self, th: int) -> None:
        try:
            lists, out, pc, call = self.lists[th], self.samples[th], time.perf_counter, self._call
            for i in range(WARMUP_CALLS):
                call(lists[i])
            self.barrier.wait()
            for s in range(self.per_thread):
                arg = lists[WARMUP_CALLS + s]
                t0 = pc()
                res = call(arg)
                out.append((t0, pc() - t0))
                if not self._ok(res):
                    self.errors.append(f"call {s} of thread {th}: missing records")
        except Exception as exc:            # noqa: BLE001 - reported with the cell's name
            self.errors.append(f"thread {th}: {exc}")
            self.barrier.abort()
        finally:
            with self.lock:
                self.left -= 1
                if self.left == 0:
                    self.all_done.set()
        i = 0
        while not self.all_done.is_set() and not self.errors:   # keep the load at `conc`
            self._call(self.lists[th][i % len(self.lists[th])])
            i += 1

    def run(self) -> None:
        threads = [threading.Thread(target=self._thread, args=(th,), daemon=True)
                   for th in range(self.conc)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


def measure(server: Server, sizes: list[int], concurrencies: list[int], *,
            samples: int = 2000, get_samples: int = 3000, n_records: int = 200_000,
            seed: int = 2024, progress=None) -> pd.DataFrame:
    """Load the records if needed, then measure every (op, size, concurrency) cell."""
    client = connect(server)
    try:
        load(client, server, n_records)
        keys = [utxo_key(server, i) for i in range(n_records)]
        cells = [("batch_read", s, c) for c in concurrencies for s in sizes]
        cells += [("get", 1, c) for c in concurrencies]
        random.Random(seed).shuffle(cells)
        rows, t_run0 = [], time.perf_counter()
        for k, (op, size, conc) in enumerate(cells):
            cell = _Cell(client, keys, op, size, conc,
                         get_samples if op == "get" else samples, seed=k + 1)
            gc.collect()
            gc.freeze()
            try:
                cell.run()
            finally:
                gc.unfreeze()
            if cell.errors:
                raise HarnessError(f"{op} of {size} keys at concurrency {conc} against "
                                   f"{server} failed: {cell.errors[0]}")
            for th, got in enumerate(cell.samples):
                rows += [(op, size, conc, th, seq, lat, t0 - t_run0)
                         for seq, (t0, lat) in enumerate(got)]
            if progress:
                progress(f"[{k + 1}/{len(cells)}] {op} size={size} conc={conc}")
        return pd.DataFrame(rows, columns=list(COLUMNS))
    finally:
        client.close()
