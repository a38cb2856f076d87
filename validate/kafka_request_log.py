"""The brokers' request log: where a request's time goes inside each broker of the local
cluster, to find the mechanism behind a row the model misses (issue 14: the dense
configuration at three replicas, ``validate/kafka_replication.py``).

What Kafka writes (3.9.1): with ``kafka.request.logger`` at DEBUG, one "Completed request"
line per request once its response is sent (``RequestChannel.Request.updateRequestMetrics``;
the line's timestamp, to the millisecond, is then), with the request's header (API, client
id, correlation id), its body and its response's (a produce request's acks and partitions, a
Fetch's partitions and the bytes returned), its connection, and its times in ms:

* ``requestQueueTimeMs``: read by a network thread, waiting for an I/O thread;
* ``localTimeMs``: on the I/O thread, the delayed operations its work completed included:
  ``KafkaApis.handle`` runs ``ReplicaManager.tryCompleteActions`` in its ``finally`` block,
  before it stamps the local completion, so an append completes its partition's parked
  Fetches (the followers', the consumers') there, one after another;
* ``remoteTimeMs``: parked in a purgatory (a produce request at acks=all until its
  followers' next Fetch moves the high watermark; a Fetch until data comes or its wait
  ends);
* ``responseQueueTimeMs`` (waiting for the network thread), ``sendTimeMs`` and
  ``totalTimeMs``.

The brokers start with the request logger off (``validate/kafka-log4j.properties``);
:func:`~validate.kafka_broker.set_log_level` turns it on at run time. Writing a line per
request costs the network threads: on 2026-11-29 the sparse configuration's p50 at
replication 1 read 1.49 and 1.21 ms (medians of 3-4 runs) with the log on against 1.29 and
1.01 off in two sessions, and the dense configuration at three replicas fell into its slow
mode (below) in 4 of 8 runs with the log on against 0 of 4 off. Runs read this way show
the mechanism; they are not the runs the model is judged on.

What it showed (2026-11-29; ``python -m validate.kafka_request_log``, medians):

* Sparse (one record per request, the brokers idle between): the leader's produce request
  took 0.39-0.57 ms at acks=1 (local 0.21-0.29), 1.85-2.21 ms at acks=all: local 0.72-0.75
  ms (the append and, completed in it, the two followers' parked Fetches, one after the
  other) and remote 0.87-1.09 ms. Of the remote, the leader's reply to the woken Fetch
  waited 0.06 ms and took 0.08 to send, and the follower's next Fetch waited 0.06 ms for an
  I/O thread and 0.20-0.23 ms on it.
* Dense (1000 messages/s over 8 partitions, linger 10 ms): librdkafka sends one partition
  per ProduceRequest (``simbatch/kafka/librdkafka.py``, L1), 110-180 requests/s to each
  leader, and the followers fetch once per produce request. At acks=all a request took
  2.1-2.7 ms at the leader (local 0.40-0.52, remote 1.09-1.49) against 0.40-0.51 at acks=1:
  replication adds 1.6-2.2 ms, where the model's request (sent to acknowledged) is 1.0 ms
  longer at three replicas than at one. A follower's turn between a reply and its next
  Fetch was 0.31-0.69 ms. With 0.5-1.0 ms added to each follower round the model reads
  12.0-12.7 ms, the p50 of the runs that held (12.1-13.0; ``validate/kafka_replication.py``).
* The dense slow mode (some partitions 50-230 ms late, growing through the run) is the
  producer's connection to one leader saturating. A connection is muted while its request
  is served, so its requests are served one at a time; librdkafka keeps pipelining one
  request per partition batch behind them, and a request queued does not grow (its batch
  is closed), so once a leader's requests take longer on average than the time between
  them (250 ms windows with the requests' total time 0.83-1.01 of the window, their remote
  time up to 5-12 ms as the followers' turns lengthen to 1-3 ms) the queue only grows.
  The model has each of these mechanisms, and the same cliff: with 3.5 and 4 ms added to
  each follower round its p50 reads 32 and 131 ms (15.7 with 3 ms); its own round is too
  short to get there.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from validate.kafka_harness import HarnessError

LOGGER = "kafka.request.logger"
MARK = "Completed request:"
STAGES = ("rq", "local", "remote", "respq", "send", "total")
"""Each request's times (ms): request queue, local, remote, response queue, send, total."""
FIELDS = dict(zip(STAGES, ("requestQueueTimeMs", "localTimeMs", "remoteTimeMs",
                           "responseQueueTimeMs", "sendTimeMs", "totalTimeMs"), strict=True))
BIN_S = 0.25
"""The windows a connection's busy share is read over (:func:`busiest`)."""


def read(logs: dict[int, Path]) -> pd.DataFrame:
    """Every produce and Fetch request in ``logs`` (``{node: its log}``): one row each, with
    ``node``, ``start_s`` and ``end_s`` (seconds, the file's clock), ``api``, ``client``,
    ``correlation``, ``connection``, ``acks`` (produce), ``topic`` (produce),
    ``partitions`` (a produce request's; a Fetch's that returned records), ``bytes`` (a
    Fetch's records) and the :data:`STAGES`."""
    rows = []
    for node, path in sorted(logs.items()):
        try:
            lines = path.read_text().splitlines()
        except OSError as exc:
            raise HarnessError(f"cannot read the broker's log {path}: {exc.strerror}") from exc
        for n, line in enumerate(lines, start=1):
            if MARK in line:
                row = _row(line, f"{path}:{n}")
                if row is not None:
                    rows.append({"node": node, **row})
    df = pd.DataFrame(rows, columns=["node", "end_s", "api", "client", "correlation",
                                     "connection", "acks", "topic", "partitions", "bytes",
                                     *STAGES])
    df["start_s"] = df["end_s"] - df["total"] / 1e3
    return df


def _row(line: str, where: str) -> dict | None:
    try:
        stamp = datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        body = json.loads(line.split(MARK, 1)[1].rsplit(f" ({LOGGER})", 1)[0])
        header = body["requestHeader"]
        times = {k: float(body[f]) for k, f in FIELDS.items()}
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise HarnessError(f"{where}: not a request log line Kafka writes ({exc!r}): "
                           f"{line[:120]!r}") from exc
    api = header.get("requestApiKeyName")
    if api not in ("PRODUCE", "FETCH"):
        return None
    request = body.get("request") or {}
    acks = topic = None
    if api == "PRODUCE":
        data = request["topicData"][0]
        acks, topic = int(request["acks"]), data["name"]
        parts = tuple(int(p["index"]) for p in data["partitionData"])
        n_bytes = 0
    else:
        got = [p for t in (body.get("response") or {}).get("responses") or []
               for p in t.get("partitions", [])]
        parts = tuple(int(p["partitionIndex"]) for p in got if p.get("recordsSizeInBytes"))
        n_bytes = sum(int(p.get("recordsSizeInBytes") or 0) for p in got)
    return {"end_s": stamp, "api": api, "client": header["clientId"],
            "correlation": int(header["correlationId"]), "connection": body["connection"],
            "acks": acks, "topic": topic, "partitions": parts, "bytes": n_bytes, **times}


def runs_topics(df: pd.DataFrame) -> list[str]:
    """The produce requests' topics in the order they first appear (one per harness run)."""
    produce = df[df["api"] == "PRODUCE"]
    return produce.groupby("topic")["start_s"].min().sort_values().index.tolist()


def produce_stages(df: pd.DataFrame, topic: str) -> pd.DataFrame:
    """Per leader: ``topic``'s produce requests' median :data:`STAGES` (ms), their count and
    partitions, without the first (it waits for the new partitions' leaders)."""
    produce = df[(df["api"] == "PRODUCE") & (df["topic"] == topic)].sort_values("start_s")
    produce = produce.iloc[1:]
    by = produce.groupby("node")
    out = by[list(STAGES)].median()
    out["requests"] = by.size()
    out["partitions"] = by["partitions"].agg(lambda s: sorted({p for t in s for p in t}))
    return out


def busiest(df: pd.DataFrame, topic: str, bin_s: float = BIN_S) -> pd.Series:
    """Per leader: the largest share of a ``bin_s`` window that ``topic``'s produce requests
    started in it spent at the broker (their total times over the window; the producer has
    one connection to each leader, served one request at a time, so near 1 it saturates),
    over the windows with at least 5 requests, the first request left out."""
    produce = df[(df["api"] == "PRODUCE") & (df["topic"] == topic)].sort_values("start_s")
    produce = produce.iloc[1:]
    window = ((produce["start_s"] - produce["start_s"].min()) // bin_s).astype(int)
    sums = produce.assign(window=window).groupby(["node", "window"])["total"].agg(
        ["sum", "size"])
    sums = sums[sums["size"] >= 5]
    return (sums["sum"] / (bin_s * 1e3)).groupby(level="node").max()


def follower_rounds(df: pd.DataFrame, start_s: float, end_s: float) -> pd.DataFrame:
    """Per (leader, follower fetcher): the followers' Fetches that started in
    [``start_s``, ``end_s``]: how many, and medians (ms) of the follower's turn (from a
    reply's send to its next Fetch's arrival: the reply's way, the follower's append and
    the next Fetch's way), the leader's request queue, local and remote times and its
    reply's response queue and send."""
    fetches = df[(df["api"] == "FETCH") & df["client"].str.contains("-fetcher-")
                 & (df["start_s"] >= start_s) & (df["start_s"] <= end_s)]
    rows = []
    for (node, client), group in fetches.groupby(["node", "client"]):
        group = group.sort_values("correlation")
        turn = (group["start_s"].to_numpy()[1:] - group["end_s"].to_numpy()[:-1]) * 1e3
        rows.append({"leader": node, "follower": client, "fetches": len(group),
                     "turn": float(np.median(turn)) if turn.size else float("nan"),
                     **{k: float(group[k].median())
                        for k in ("rq", "local", "remote", "respq", "send")}})
    return pd.DataFrame(rows)


def report(df: pd.DataFrame, labels: Iterable[str]) -> str:
    """Each run's produce stages per leader, its busiest window, and its followers' rounds
    (``labels``: the runs in order, one per topic of :func:`runs_topics`)."""
    out = []
    for label, topic in zip(labels, runs_topics(df), strict=False):
        stages = produce_stages(df, topic)
        stages["busiest"] = busiest(df, topic)
        produce = df[(df["api"] == "PRODUCE") & (df["topic"] == topic)]
        out += [f"## {label} ({topic})", "", stages.round(2).to_string(), ""]
        rounds = follower_rounds(df, float(produce["start_s"].min()),
                                 float(produce["end_s"].max()))
        if not rounds.empty:
            out += [rounds.round(2).to_string(index=False), ""]
    return "\n".join(out)


def measure(config: str, reps: int, warm_rounds: int) -> tuple[pd.DataFrame, list[str]]:
    """A fresh cluster of three brokers, warmed up and settled as validate/kafka_replication.py
    does; then ``config`` at replication 1 and 3, ``reps`` times, interleaved, with the
    request log on; returns the log read and a label per run (with its p50)."""
    from validate.kafka_broker import set_log_level
    from validate.kafka_harness import run
    from validate.kafka_replication import BROKERS, config_of, warm_cluster

    labels = []
    with warm_cluster(warm_rounds) as cluster:
        set_log_level(cluster.bootstrap, BROKERS, LOGGER, "DEBUG")
        for rep in range(reps):
            for rf in (1, 3):
                rec = run(cluster.bootstrap, config_of(config, rf))
                labels.append(f"{config} rf{rf} run {rep}: p50 "
                              f"{np.nanmedian(rec['latency_s']) * 1e3:.2f} ms")
                print(labels[-1], file=sys.stderr)
        set_log_level(cluster.bootstrap, BROKERS, LOGGER, "WARN")
        logs = {n: Path(cluster.data_dir) / f"broker{n}.log" for n in range(1, BROKERS + 1)}
        return read(logs), labels


def main() -> None:
    from validate.kafka_broker import BrokerError
    from validate.kafka_replication import CONFIGS, WARM_ROUNDS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--config", choices=list(CONFIGS), default="dense")
    parser.add_argument("--reps", type=int, default=4)
    parser.add_argument("--warm", type=int, default=WARM_ROUNDS)
    args = parser.parse_args()
    if args.reps < 1 or args.warm < 0:
        parser.error(f"--reps must be at least 1 and --warm at least 0; got --reps "
                     f"{args.reps}, --warm {args.warm}")
    try:
        df, labels = measure(args.config, args.reps, args.warm)
        print(report(df, labels))
    except (HarnessError, BrokerError) as exc:
        print(f"kafka_request_log: error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
