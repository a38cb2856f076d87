"""The wire between the local cluster and its clients: when the leader sends each produce
reply and each consumer Fetch reply, to tell a broker's share of a timing from a client's
(issue 14: where the consumer reads a record against its producer's ack at three replicas,
``validate/test_kafka_replication.py``).

How: a raw packet socket on the loopback interface (Linux ``AF_PACKET``, so root), each TCP
segment to or from a broker's port with the kernel's receive timestamp (``SO_TIMESTAMPNS``),
written by a process of its own (``--capture``) so that the harness's timing shares no
interpreter with it. A segment to a broker opens with a request's header (size, API key,
version, correlation id, client id: Kafka's protocol guide), one from it with a response's
(size, correlation id). The producer's connection is the one carrying Produce requests
(API 0), the consumer's the one carrying Fetch requests (API 1) from a client id not a
broker's fetcher's (``broker-N-fetcher-0``). A produce reply is matched to its request by
correlation id; a message to its request by the 12-digit number each harness writes at
the head of its value (``%012d``). franz-go compresses batches with snappy by default
(``pkg/kgo/config.go``, ``compression``), which hides that number, so its messages are
matched by order: the run's last n produce requests, the consumer's last replies that carry
records (an empty reply's size is the most common one; a reply's records counted by its
size beyond that, over the median of one record's).

For each message: ``produce_reply_s`` and ``fetch_reply_s`` (the segment that carries its
record; the capture's clock), the harness's ``ack_s`` and ``consume_s`` (its own).
``broker_lead_s`` = fetch reply minus produce reply, the broker's share of consume minus
ack; the client's share is the rest
(``client_s``): the two clocks' offset cancels in it.

What it showed (2026-12-07 14:37 UTC, ``python -m validate.kafka_wire --reps 3``, nothing
else running; the sparse configurations of ``validate/kafka_replication.py``, three local
brokers; per run, medians over its 200 messages):

* At one replica the consumer's reply left the leader 0.23-0.39 ms after the produce reply
  (p10 0.03-0.07, p90 0.56-0.90), and the clients' own ways added -0.04 to +0.06 ms: consume
  minus ack is the broker's (the parked Fetch completed after the Produce is answered).
* At three replicas it left 0.01-0.29 ms *before* it, in two modes: in 48-69 % of the
  messages 0.30-0.42 ms before (that mode's median), in the rest 0.13-0.18 ms after. The
  clients' ways put the consumer 0.12-0.14 ms (librdkafka) and 0.04-0.07 ms (franz-go)
  behind, so the harnesses read consume minus ack at -0.10 to +0.02 (librdkafka) and -0.12
  to -0.17 ms (franz-go). The consumer's lead at three replicas is the broker's: Kafka
  completes the partition's parked consumer Fetch before its parked Produce
  (``Partition.scala``, ``checkAndCompleteAll``). The model reads consume minus ack as 0 at
  three replicas, where the broker's share is some -0.2 ms and the clients' +0.04 to +0.14.
* The two modes, segment by segment: the consumer's reply leaves in two writes, its header
  and then its records (zero-copy), 0.04-0.06 ms apart (median). In the first mode the
  produce reply leaves 0.30-0.42 ms after them, and in 60-78 % of those messages only after
  the consumer's *next* Fetch has reached the leader: the consumer has read the record and
  asked again before the producer's answer is on the wire. In the second the produce reply
  leaves about with the consumer's, between its two writes in 17-36 % of them. So in the
  first mode the produce reply is held after the consumer's is out, on the I/O thread that
  completes both or at its network thread; which, and why in about 60 % of the messages, is
  not found. A woken network thread preempting the I/O thread that woke it would do it: the
  same librdkafka runs' harness columns (``broker_data_preempted``, ``broker_data_runq_s``:
  the three brokers' request-path threads over the 5 s of 200 messages) read 1,363-1,562
  involuntary switches at three replicas (~7 a message; 681-706 at one) and 0.42-0.70 s
  runnable but waiting for a CPU (2.1-3.5 ms a message, summed over the threads; 0.18-0.24
  s at one): on two vCPUs the request path is put off a CPU several times a message.
  Not tied to one message.
"""

from __future__ import annotations

import argparse
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

from validate.kafka_harness import HarnessError, read_csv

NUMBER = re.compile(rb"(?<!\d)(\d{12})(?!\d)")
"""A harness's message number at the head of its value (``%012d``)."""
FIELDS = ("t_s", "sport", "dport", "size", "api", "corr", "client", "msgs")
SO_TIMESTAMPNS = 35        # <asm-generic/socket.h>; not exported by Python's socket module
ETH_P_ALL = 0x0003
READY = "capturing"
"""What the capture process prints once it reads the wire (:func:`start_capture`)."""
NAMES = ("sparse", "franz-go-sparse")
"""The configurations measured (``validate/kafka_replication.py``'s ``CONFIGS``)."""


def segment(frame: bytes, ports: set[int]) -> tuple | None:
    """An Ethernet frame's TCP segment to or from one of ``ports`` with a payload, as
    ``(sport, dport, size, api, corr, client, msgs)`` (``api`` -1 for a response); None for
    anything else."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[23] != 6:     # IPv4, TCP
        return None
    tcp = 14 + (frame[14] & 15) * 4
    sport, dport = struct.unpack("!HH", frame[tcp:tcp + 4])
    if sport not in ports and dport not in ports:
        return None
    payload = frame[tcp + (frame[tcp + 12] >> 4) * 4:]
    if len(payload) < 8:
        return None
    api, corr, client = -1, -1, "-"
    if dport in ports:
        if len(payload) < 14:
            return None
        api, _version, corr = struct.unpack("!hhi", payload[4:12])
        (n,) = struct.unpack("!h", payload[12:14])
        if 0 < n < 256:
            client = payload[14:14 + n].decode("latin-1").replace(" ", "_") or "-"
    else:
        (corr,) = struct.unpack("!i", payload[4:8])
    msgs = ",".join(m.decode() for m in NUMBER.findall(payload)[:64]) or "-"
    return sport, dport, len(payload), api, corr, client, msgs


def capture(out: Path, ports: set[int]) -> None:
    """Write every segment to or from ``ports`` on ``lo`` to ``out``, a line each
    (:data:`FIELDS`), until SIGTERM."""
    try:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        sock.bind(("lo", 0))
    except (AttributeError, OSError) as exc:
        raise HarnessError(f"capturing the loopback interface needs Linux and root "
                           f"(a raw packet socket): {exc}") from exc
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
    sock.settimeout(0.2)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    try:
        f = out.open("w")
    except OSError as exc:
        raise HarnessError(f"the capture cannot write {out}: {exc.strerror}") from exc
    print(READY, flush=True)
    with f:
        while not stop:
            try:
                frame, ancillary, _flags, address = sock.recvmsg(1 << 17, 64)
            except TimeoutError:
                continue
            if address[2] == socket.PACKET_OUTGOING:     # lo shows each frame twice
                continue
            seg = segment(frame, ports)
            stamp = [struct.unpack("qq", data[:16]) for level, kind, data in ancillary
                     if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS]
            if seg is not None and stamp:
                sec, ns = stamp[0]
                f.write(f"{sec + ns * 1e-9:.9f} " + " ".join(map(str, seg)) + "\n")


def start_capture(out: Path, ports: list[str] | list[int],
                  timeout_s: float = 30.0) -> subprocess.Popen:
    """The capture process (:func:`capture`), returned once it reads the wire; a
    :class:`HarnessError` naming why if it cannot."""
    cap = subprocess.Popen([sys.executable, "-m", "validate.kafka_wire", "--capture", str(out),
                            *map(str, ports)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    assert cap.stdout is not None
    said: list[str] = []
    first = threading.Thread(target=lambda: said.append(cap.stdout.readline()), daemon=True)
    first.start()
    first.join(timeout_s)                 # its first line, or its end (then "")
    if said != [READY + "\n"]:
        cap.kill()
        _, err = cap.communicate()
        why = "stopped" if said else f"did not start within {timeout_s:.0f} s"
        raise HarnessError(f"the capture {why}: {err.strip() or 'no message'}")
    return cap


def stop_capture(cap: subprocess.Popen, what: str) -> None:
    """Stop the capture process; a :class:`HarnessError` if it had failed."""
    cap.send_signal(signal.SIGTERM)
    try:
        _, err = cap.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        cap.kill()
        raise HarnessError(f"the capture of {what} did not stop within 10 s") from None
    if cap.returncode != 0:
        raise HarnessError(f"the capture of {what} failed (exit {cap.returncode}): "
                           f"{err.strip()}")


def read(path: Path) -> pd.DataFrame:
    """A capture's segments, one row each (:data:`FIELDS`); a :class:`HarnessError` naming
    the file and what in it does not read if it is not one."""
    if path.stat().st_size == 0:
        return pd.DataFrame({f: pd.Series(dtype=str if f in ("client", "msgs") else float)
                             for f in FIELDS})
    try:
        return pd.read_csv(path, sep=" ", names=list(FIELDS),
                           dtype={f: str if f in ("client", "msgs") else float for f in FIELDS})
    except (ValueError, pd.errors.ParserError) as exc:
        raise HarnessError(f"{path} is not a capture of this module's: {exc}") from exc


def replies(segments: pd.DataFrame, run: np.ndarray) -> pd.DataFrame:
    """Each message of ``run`` (a harness's records) with the leader's produce and consumer
    Fetch reply times (module docstring); empty if the capture cannot be matched."""
    msgs = run["msg"][run["msg"] >= 0].astype(int)
    n = len(msgs)
    requests = segments[segments["api"] >= 0]
    produce = requests[requests["api"] == 0]
    fetch = requests[(requests["api"] == 1) & ~requests["client"].str.startswith("broker")]
    if produce.empty or fetch.empty:
        return pd.DataFrame()
    p_conn = produce.groupby(["sport", "dport"]).size().idxmax()
    c_conn = fetch.groupby(["sport", "dport"]).size().idxmax()
    p_req = produce[(produce["sport"] == p_conn[0]) & (produce["dport"] == p_conn[1])]
    back = segments[(segments["api"] < 0) & (segments["sport"] == p_conn[1])
                    & (segments["dport"] == p_conn[0])].drop_duplicates("corr")
    answered = dict(zip(back["corr"], back["t_s"], strict=True))
    to_consumer = segments[(segments["api"] < 0) & (segments["sport"] == c_conn[1])
                           & (segments["dport"] == c_conn[0])]
    numbered = p_req["msgs"] != "-"
    if numbered.sum() >= n:                       # by the numbers in the values
        produce_at = {int(m): answered.get(c, np.nan) for c, ms in
                      zip(p_req["corr"], p_req["msgs"], strict=True) if ms != "-"
                      for m in ms.split(",")}
        fetch_at: dict[int, float] = {}
        for t, ms in zip(to_consumer["t_s"], to_consumer["msgs"], strict=True):
            if ms != "-":
                for m in ms.split(","):
                    fetch_at.setdefault(int(m), t)
    else:                                         # by order (snappy)
        corrs = p_req["corr"].to_numpy()[-n:]
        sizes = to_consumer["size"].to_numpy()
        empty = pd.Series(sizes).mode()[0]
        extra = sizes - empty
        one = np.median(extra[extra > 20]) if (extra > 20).any() else np.nan
        carried = np.where(extra > 20, np.maximum(1, np.rint(extra / one)), 0).astype(int)
        times = np.repeat(to_consumer["t_s"].to_numpy(), carried)[-n:]
        if len(corrs) < n or len(times) < n:
            return pd.DataFrame()
        order = np.sort(msgs)
        produce_at = {int(m): answered.get(c, np.nan) for m, c in zip(order, corrs, strict=True)}
        fetch_at = {int(m): float(t) for m, t in zip(order, times, strict=True)}
    out = pd.DataFrame({"msg": msgs, "ack_s": run["ack_s"][run["msg"] >= 0],
                        "consume_s": run["consume_s"][run["msg"] >= 0]})
    out["produce_reply_s"] = [produce_at.get(m, np.nan) for m in out["msg"]]
    out["fetch_reply_s"] = [fetch_at.get(m, np.nan) for m in out["msg"]]
    out["broker_lead_s"] = out["fetch_reply_s"] - out["produce_reply_s"]
    out["client_s"] = (out["consume_s"] - out["ack_s"]) - out["broker_lead_s"]
    return out.dropna()


def summary(tag: str, matched: pd.DataFrame) -> str:
    """One run's line: the broker's lead and the client's share, ms (median; p10 / p90)."""
    if matched.empty:
        return f"| {tag} | not matched | | | |"
    lead, client = matched["broker_lead_s"] * 1e3, matched["client_s"] * 1e3
    harness = (matched["consume_s"] - matched["ack_s"]) * 1e3
    return (f"| {tag} | {len(matched)} | {lead.median():+.3f} ({lead.quantile(0.1):+.3f} / "
            f"{lead.quantile(0.9):+.3f}) | {client.median():+.3f} | {harness.median():+.3f} |")


HEADER = ("| run | messages | consumer's reply minus produce reply at the leader, ms "
          "(p10 / p90) | the clients' share, ms | consume minus ack (harness), ms |\n"
          "|---|---|---|---|---|")


def report(out: Path) -> str:
    """The table of every run captured in ``out``."""
    if not any(out.glob("*.cap")):
        raise HarnessError(f"no captured runs (*.cap beside their *.csv) in {out}")
    lines = [HEADER]
    for csv in sorted(out.glob("*.csv")):
        cap = csv.with_suffix(".cap")
        if cap.exists():
            lines.append(summary(csv.stem, replies(read(cap), read_csv(csv))))
    return "\n".join(lines)


def measure(out: Path, reps: int, warm: int) -> None:
    """``reps`` rounds of :data:`NAMES` at replication 1 and 3 on a fresh local cluster
    (``validate/kafka_replication.py``'s), each run with a capture beside it."""
    from validate.kafka_harness import run
    from validate.kafka_replication import REPLICATIONS, config_of, warm_cluster

    out.mkdir(parents=True, exist_ok=True)
    with warm_cluster(warm) as cluster:
        ports = [p.rsplit(":", 1)[1] for p in cluster.bootstrap.split(",")]
        for rep in range(reps):
            for name in NAMES:
                for rf in REPLICATIONS:
                    tag = f"{name}-rf{rf}-{rep}"
                    cap = start_capture(out / f"{tag}.cap", ports)
                    try:
                        run(cluster.bootstrap, config_of(name, rf), out / f"{tag}.csv",
                            broker_pid=cluster.pids)
                        time.sleep(0.3)         # the last replies' segments
                    finally:
                        stop_capture(cap, tag)
                    print(f"{tag} done", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    from validate.kafka_broker import BrokerError
    from validate.kafka_replication import WARM_ROUNDS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--warm", type=int, default=WARM_ROUNDS)
    parser.add_argument("--out", type=Path, default=Path("kafka-wire"))
    parser.add_argument("--from-dir", action="store_true",
                        help="report the runs already captured in --out")
    parser.add_argument("--capture", nargs="+", metavar=("FILE", "PORT"),
                        help=argparse.SUPPRESS)       # the capture process (measure)
    args = parser.parse_args(argv)
    try:
        if args.capture:
            ports = args.capture[1:]
            if not ports or not all(p.isdigit() and 0 < int(p) < 65536 for p in ports):
                parser.error(f"--capture takes a file and the brokers' ports; got {ports}")
            capture(Path(args.capture[0]), {int(p) for p in ports})
            return
        if args.reps < 1 or args.warm < 0:
            parser.error(f"--reps must be at least 1 and --warm at least 0; got --reps "
                         f"{args.reps}, --warm {args.warm}")
        if not args.from_dir:
            measure(args.out, args.reps, args.warm)
        print(report(args.out))
    except (HarnessError, BrokerError) as exc:
        print(f"kafka_wire: error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
