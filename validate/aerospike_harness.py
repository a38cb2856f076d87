"""Measure batch-read latency on a real Aerospike server: raw samples in the format the
service fit reads (``simbatch.fit``; ``shared/data/aerospike-loopback``'s long format).

The server is named by environment variables: ``SIMBATCH_AEROSPIKE_HOST`` (``host`` or
``host:port``, port 3000 by default), ``SIMBATCH_AEROSPIKE_NAMESPACE`` (``test`` by default;
it must exist on the server) and ``SIMBATCH_AEROSPIKE_SET`` (``utxo`` by default; created by
the first write). No Aerospike server can be installed on the project's own machines; where
none is named, :func:`server_from_env` returns ``None`` and the calibration tests skip with a
message that says so.

Before the client connects, :func:`probe` sends one raw ``info`` request (``build``) so that
a port where nothing listens, a server that accepts and closes the connection, one that
answers in another protocol and one that never answers each end in a one-line
:class:`HarnessError` within ``PROBE_TIMEOUT_S`` (a few seconds), not a client traceback.
An unknown namespace is refused by name (with the namespaces the server has), and every
client error while loading or measuring becomes a one-line :class:`HarnessError` naming the
operation, the namespace and the set.

The method is the one the recorded data were taken with (``measure_batch_read.py`` beside
``shared/data/aerospike-loopback/batch_read_latency.csv``, whose README explains each step):

* records shaped like UTXOs: a 32-byte sha256 user key passed as a ``bytearray`` (client
  19.x sends a ``bytes`` user key as a string cut at the first NUL:
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

After the run the records are left in place (the next run skips loading) unless
``cleanup=True``, which removes the calibration's records (keys 0 to n_records - 1 of the
set), whichever run loaded them.

Columns: ``op, batch_size, concurrency, thread, seq, latency_s, start_s``.
"""

from __future__ import annotations

import gc
import hashlib
import math
import os
import random
import socket
import struct
import threading
import time
from dataclasses import dataclass

import pandas as pd

SET = "utxo"
OUTPUTS_BYTES = 200
WARMUP_CALLS = 20
COLUMNS = ("op", "batch_size", "concurrency", "thread", "seq", "latency_s", "start_s")
ENV_HOST, ENV_NAMESPACE, ENV_SET = ("SIMBATCH_AEROSPIKE_HOST", "SIMBATCH_AEROSPIKE_NAMESPACE",
                                    "SIMBATCH_AEROSPIKE_SET")
ENV_VARS = (ENV_HOST, ENV_NAMESPACE, ENV_SET)
ENV_DEFAULTS = {ENV_NAMESPACE: "test", ENV_SET: SET}
PROBE_TIMEOUT_S = 3.0
CONNECT_TIMEOUT_MS = 5_000
REMOVE_CHUNK = 5_000
# What the provenance keeps of the server's configuration (``info get-config``): the
# settings that change a batch read's cost.
SERVICE_KEYS = ("service-threads", "batch-index-threads", "batch-max-buffers-per-queue",
                "batch-max-requests", "batch-max-unused-buffers", "proto-fd-max",
                "transaction-max-ms")
NAMESPACE_KEYS = ("replication-factor", "default-ttl", "storage-engine", "data-size",
                  "memory-size", "transaction-max-ms")


class HarnessError(RuntimeError):
    """The server cannot be reached or answers wrongly; the message says which and where."""


@dataclass(frozen=True)
class Server:
    host: str
    port: int = 3000
    namespace: str = "test"
    set: str = SET

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def __str__(self) -> str:
        return f"{self.address} (namespace {self.namespace!r}, set {self.set!r})"


def parse_server(text: str, namespace: str = "test", set_name: str = SET) -> Server:
    """``host`` or ``host:port``; a clear error naming the variable and the value otherwise.

    >>> parse_server("10.0.0.5:3100")
    Server(host='10.0.0.5', port=3100, namespace='test', set='utxo')
    """
    host, sep, port = text.strip().partition(":")
    port = port if sep else "3000"
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise HarnessError(f"{ENV_HOST} must be 'host' or 'host:port'; got {text!r}.")
    if not namespace or len(namespace) > 31 or any(c in namespace for c in ":;\0 "):
        raise HarnessError(f"{ENV_NAMESPACE} must be a namespace name (1 to 31 characters, "
                           f"no ':', ';' or spaces); got {namespace!r}.")
    if not set_name or len(set_name) > 63 or any(c in set_name for c in ":;\0"):
        raise HarnessError(f"{ENV_SET} must be a set name (1 to 63 characters, no ':' or "
                           f"';'); got {set_name!r}.")
    return Server(host, int(port), namespace, set_name)


def server_from_env() -> Server | None:
    text = os.environ.get(ENV_HOST, "").strip()
    if not text:
        return None
    return parse_server(text, *(os.environ.get(k, "").strip() or ENV_DEFAULTS[k]
                                for k in (ENV_NAMESPACE, ENV_SET)))


def _info_request(names: str) -> bytes:
    body = names.encode() + b"\n"
    return struct.pack(">Q", (2 << 56) | (1 << 48) | len(body)) + body


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def probe(server: Server, timeout_s: float = PROBE_TIMEOUT_S) -> str:
    """The server's ``build``, asked with one raw info request (Aerospike's wire protocol:
    an 8-byte header, version 2, type 1 = info, 48-bit length). Each way a server can fail
    to be an Aerospike server raises a one-line :class:`HarnessError` within about
    ``2 * timeout_s``."""
    where = f"at {server.address}"
    try:
        sock = socket.create_connection((server.host, server.port), timeout=timeout_s)
    except socket.gaierror as exc:
        raise HarnessError(f"no Aerospike server answered {where}: cannot resolve "
                           f"{server.host!r} ({exc.strerror}); check {ENV_HOST}") from None
    except TimeoutError:
        raise HarnessError(f"no Aerospike server answered {where}: the TCP connection was "
                           f"not accepted within {timeout_s:g} s") from None
    except OSError as exc:
        raise HarnessError(f"no Aerospike server answered {where}: "
                           f"{exc.strerror or exc}") from None
    with sock:
        try:
            sock.sendall(_info_request("build"))
            head = _recv_exact(sock, 8)
        except TimeoutError:
            raise HarnessError(f"the server {where} accepted the connection but did not "
                               f"answer an info request within {timeout_s:g} s") from None
        except OSError as exc:
            head, reset = b"", f" ({exc.strerror or exc})"
        else:
            reset = ""
        if not head:
            raise HarnessError(f"the server {where} accepted the connection, then closed it "
                               f"without answering{reset} (not an Aerospike server, or one "
                               "that refuses this client: TLS or access control?)")
        word = int.from_bytes(head.ljust(8, b"\0"), "big")
        if len(head) < 8 or word >> 56 != 2 or (word >> 48) & 0xFF != 1:
            raise HarnessError(f"the server {where} answered, but not in Aerospike's "
                               f"protocol (first bytes {head[:8]!r}): is the port right?")
        try:
            body = _recv_exact(sock, min(word & (2**48 - 1), 1 << 16))
        except OSError:
            body = b""
    return _info_value(body.decode(errors="replace"))


def _info_value(text: str) -> str:
    """The value of a one-command info answer ``"name\tvalue\n"``."""
    return text.split("\t", 1)[-1].strip()


def _error_text(exc: Exception) -> str:
    """One line from a client exception: its class, message and code."""
    msg = getattr(exc, "msg", None) or (exc.args[1] if len(exc.args) > 1 else str(exc))
    code = getattr(exc, "code", None)
    return f"{type(exc).__name__}: {msg}" + (f" (code {code})" if code is not None else "")


def connect(server: Server, timeout_ms: int = 10_000):
    """A connected client (policies as in the recorded data: 10 s total and socket timeouts),
    after :func:`probe` has checked that an Aerospike server answers."""
    import aerospike

    probe(server)
    policy = {"total_timeout": timeout_ms, "socket_timeout": timeout_ms}
    cfg = {"hosts": [(server.host, server.port)], "timeout": min(timeout_ms, CONNECT_TIMEOUT_MS),
           "policies": {"batch": policy, "read": policy, "write": policy}}
    try:
        return aerospike.client(cfg).connect()
    except aerospike.exception.AerospikeError as exc:
        raise HarnessError(f"the server at {server.address} answered, but the client could "
                           f"not connect: {_error_text(exc)}") from None


def _info(client, command: str) -> str:
    """The first node's answer to an info command ('' if it answered with an error)."""
    for _node, (err, text) in sorted(client.info_all(command).items()):
        if err is None and text:
            return _info_value(text)
    return ""


def check_namespace(client, server: Server) -> None:
    """Refuse a namespace the server does not have, naming the ones it has."""
    have = [n for n in _info(client, "namespaces").split(";") if n]
    if server.namespace not in have:
        raise HarnessError(f"namespace {server.namespace!r} not found on the server at "
                           f"{server.address} (it has: {', '.join(have) or 'none'}); "
                           f"set {ENV_NAMESPACE}")


def _pick(config: str, keys: tuple[str, ...]) -> str:
    pairs = [kv.partition("=") for kv in config.split(";") if "=" in kv]
    return ", ".join(f"{k}={v}" for k, _, v in pairs
                     if k in keys or any(k.startswith(f"{key}.") for key in keys))


def server_info(client, server: Server) -> dict[str, str]:
    """The server's build and the configuration that shapes a batch read, as ``info``
    reports them (for the model's provenance)."""
    ns = f"get-config:context=namespace;id={server.namespace}"
    return {"build": _info(client, "build"), "edition": _info(client, "edition"),
            "service_config": _pick(_info(client, "get-config:context=service"), SERVICE_KEYS),
            "namespace_config": _pick(_info(client, ns), NAMESPACE_KEYS)}


def utxo_key(server: Server, i: int) -> tuple:
    return (server.namespace, server.set, bytearray(hashlib.sha256(struct.pack("<Q", i)).digest()))


def set_objects(client, server: Server) -> int:
    for _err, text in client.info_all(f"sets/{server.namespace}/{server.set}").values():
        for part in (text or "").strip().replace("\t", ":").split(":"):
            if part.startswith("objects="):
                return int(part.split("=")[1].rstrip(";"))
    return 0


def _client_error(what: str, server: Server, exc: Exception) -> HarnessError:
    return HarnessError(f"{what} in {server.namespace}/{server.set} on {server.address} "
                        f"failed: {_error_text(exc)}")


def load(client, server: Server, n_records: int, progress=None) -> int:
    """Write records 0 .. n_records - 1 (skipped when the set already holds as many);
    returns the number written. ``progress`` gets a line about every 10 %."""
    import aerospike

    have = set_objects(client, server)
    if have >= n_records:
        if progress:
            progress(f"set {server.namespace}/{server.set} holds {have:,} records; "
                     "not loading")
        return 0
    if progress:
        progress(f"loading {n_records:,} records into {server.namespace}/{server.set} "
                 f"(it holds {have:,})")
    payload = random.Random(12345).randbytes(OUTPUTS_BYTES * n_records)
    step, t0 = max(1, n_records // 10), time.perf_counter()
    for i in range(n_records):
        try:
            client.put(utxo_key(server, i), {
                "outputs": payload[i * OUTPUTS_BYTES:(i + 1) * OUTPUTS_BYTES],
                "version": 1 + (i % 2), "locktime": 0 if i % 10 else 500_000 + i})
        except aerospike.exception.AerospikeError as exc:
            raise _client_error(f"writing record {i}", server, exc) from None
        if progress and (i + 1) % step == 0:
            progress(f"  loaded {i + 1:,} / {n_records:,} ({time.perf_counter() - t0:.1f} s)")
    return n_records


def remove_records(client, server: Server, n_records: int, progress=None) -> None:
    """Remove the calibration's records (keys 0 .. n_records - 1), whichever run wrote them;
    keys already absent are no error."""
    import aerospike

    if progress:
        progress(f"removing the calibration's {n_records:,} records from "
                 f"{server.namespace}/{server.set}")
    for lo in range(0, n_records, REMOVE_CHUNK):
        keys = [utxo_key(server, i) for i in range(lo, min(n_records, lo + REMOVE_CHUNK))]
        try:
            client.batch_remove(keys)
        except aerospike.exception.AerospikeError as exc:
            raise _client_error(f"removing records {lo}..", server, exc) from None


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
            self.errors.append(f"thread {th}: {_error_text(exc)}")
            self.barrier.abort()
        finally:
            with self.lock:
                self.left -= 1
                if self.left == 0:
                    self.all_done.set()
        i = 0
        while not self.all_done.is_set() and not self.errors:   # keep the load at `conc`
            try:
                self._call(self.lists[th][i % len(self.lists[th])])
            except Exception as exc:        # noqa: BLE001 - reported with the cell's name
                self.errors.append(f"thread {th}, untimed call: {_error_text(exc)}")
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
            seed: int = 2024, progress=None, cleanup: bool = False,
            info: dict | None = None) -> pd.DataFrame:
    """Load the records if needed, then measure every (op, size, concurrency) cell.

    ``progress`` (a callable taking one line) hears about loading and each cell;
    ``cleanup=True`` removes the calibration's records afterwards (also after a failure);
    ``info``, if given, receives the server's build and configuration
    (:func:`server_info`) and what happened to the records.
    """
    client = connect(server)
    try:
        check_namespace(client, server)
        if info is not None:
            info.update(server_info(client, server))
        loaded = load(client, server, n_records, progress)
        if info is not None:
            info["records"] = (f"{n_records} in {server.namespace}/{server.set}, "
                               f"{loaded} loaded by this run, "
                               + ("removed after it (--cleanup)" if cleanup else "left in place"))
        return _measure_cells(client, server, sizes, concurrencies, samples=samples,
                              get_samples=get_samples, n_records=n_records, seed=seed,
                              progress=progress)
    finally:
        try:
            if cleanup:
                remove_records(client, server, n_records, progress)
        finally:
            client.close()


def _measure_cells(client, server: Server, sizes: list[int], concurrencies: list[int], *,
                   samples: int, get_samples: int, n_records: int, seed: int,
                   progress) -> pd.DataFrame:
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
        lat = []
        for th, got in enumerate(cell.samples):
            rows += [(op, size, conc, th, seq, dt, t0 - t_run0)
                     for seq, (t0, dt) in enumerate(got)]
            lat += [dt for _, dt in got]
        if progress:
            median_ms = sorted(lat)[len(lat) // 2] * 1e3 if lat else float("nan")
            progress(f"[{k + 1}/{len(cells)}] {op} size={size} conc={conc}: median "
                     f"{median_ms:.3f} ms ({time.perf_counter() - t_run0:.1f} s)")
    return pd.DataFrame(rows, columns=list(COLUMNS))
