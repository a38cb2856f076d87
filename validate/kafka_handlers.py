"""Which of the brokers' threads serve a run, and what a request costs on each: every
request handler, network processor and replica fetcher of the three brokers of the local
cluster, named by the JDK's ``jstack``, with its CPU (the scheduler's count,
``broker_jvm._thread_cpu_s``) and its wake-ups (voluntary context switches,
``broker_jvm.thread_switches``) over one harness run.

Why (issue 14): the speed at which the broker's costs hold, fitted on the replication acks,
is half the one its CPU time measures (``validate/kafka_replication.py``, "What the costs'
speed holds"), so the model's follower round lacks ~0.4 ms of CPU. The model charges a
cold start to the first stage after the *broker* idled (``[broker] cold_us``,
``simbatch/kafka/broker.py``); this tells whether each *thread* starts cold. Kafka's request
handlers take requests from one queue (``RequestChannel``: an ``ArrayBlockingQueue`` that
each handler polls with a 300 ms timeout, ``KafkaRequestHandler.run``); the queue's
condition wakes the thread that has waited longest (``AbstractQueuedSynchronizer``'s
``ConditionObject.signal`` takes the first waiter), so the handlers take turns, and each
network processor serves the connections assigned to it when they opened.

``python -m validate.kafka_handlers [--config sparse] [--reps 2]``: a fresh cluster, warmed
up and settled as the replication suite's, then the configuration at replication 1 and 3,
``--reps`` times, interleaved; per run the leader (the broker whose handlers woke most)
beside the other two, whose handlers only wake for their poll's timeout: its handlers'
wake-ups beyond theirs (requests handled), CPU per request handled, how evenly the
handlers shared them, and its processors' and the followers' fetchers' CPU per message.
The broker that also runs the cluster's controller has a second pool of handlers under the
same names (the controller's, idle here): when it leads, the table counts 16 handlers and
the fewest requests per handler reads about 0. Made for the one-partition configurations
(``sparse``, ``franz-go-sparse``): with several partitions every broker leads some, the
table reads the busiest alone, and a controller's broker among the others makes their
idle baseline wrong (``--config dense`` on 2026-12-06 read -0.50 requests per message in
one run of four). What that run gave all the same: 200-220 us per request handled at one
replica and 105 us at three, where the sparse feed's were 440-450 and 360-390: a handler
that idles as long costs less when its broker is busy, so a cold start is not the
thread's alone.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

import numpy as np

from validate.broker_jvm import _thread_cpu_s, thread_switches
from validate.kafka_harness import HarnessError

KINDS = (("handler", re.compile(r"request-handler-\d+$")),
         ("network", re.compile(r"network-thread-\d+-ListenerName\(PLAINTEXT\)")),
         ("fetcher", re.compile(r"^ReplicaFetcherThread-")))
"""The threads read, by their Java names (Kafka 3.9: ``data-plane-kafka-request-handler-N``,
``data-plane-kafka-network-thread-B-ListenerName(PLAINTEXT)-PLAINTEXT-N``,
``ReplicaFetcherThread-F-LEADER``); the controller listener's processors are left out."""
_NID = re.compile(r'^"([^"]+)".*?\bnid=(0x[0-9a-f]+)', re.M)


def thread_names(pid: int, dump: str | None = None) -> dict[str, tuple[str, str]]:
    """Process ``pid``'s threads of :data:`KINDS`, by tid: (kind, Java name), from
    ``jstack``'s thread dump (``dump``: one already taken); a missing JDK tool or a dump it
    cannot take is an error saying so."""
    if dump is None:
        jstack = shutil.which("jstack")
        if jstack is None:
            raise HarnessError("jstack (the JDK's) is not on PATH: the broker's threads cannot "
                               "be named")
        done = subprocess.run([jstack, str(pid)], capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise HarnessError(f"jstack {pid} failed: {done.stderr.strip()[:200]}")
        dump = done.stdout
    out = {}
    for name, nid in _NID.findall(dump):
        kind = next((k for k, pattern in KINDS if pattern.search(name)), None)
        if kind is not None:
            out[str(int(nid, 16))] = (kind, name)
    return out


def counts(pid: int, tids) -> dict[str, tuple[float, int]]:
    """Each thread's (CPU seconds, voluntary context switches) so far; one that exited is
    left out."""
    out = {}
    for tid in tids:
        switches = thread_switches(pid, tid)
        if switches is not None:
            out[tid] = (_thread_cpu_s(pid, tid, []), switches.get("voluntary_ctxt_switches", 0))
    return out


@dataclass(frozen=True)
class Served:
    """One run at the leader: the requests its handlers took (their wake-ups beyond those of
    the other brokers' idle handlers), CPU per request handled (beyond theirs), the spread of
    the requests over its handlers (fewest and most), and CPU per message of its processors
    and of the followers' fetchers from it (summed over both)."""
    handlers: int
    requests: float
    handler_us: float
    fewest: float
    most: float
    network_us: float
    fetcher_us: float


def served(before: dict, after: dict, names: dict, messages: int) -> Served:
    """:class:`Served` from the threads' counts of each broker (``{pid: {tid: (cpu,
    wakes)}}``) before and after a run of ``messages``, and their ``names``
    (:func:`thread_names` per pid)."""
    def delta(pid: int, kind: str) -> list[tuple[float, int]]:
        return [(after[pid][t][0] - before[pid][t][0], after[pid][t][1] - before[pid][t][1])
                for t, (k, _) in names[pid].items()
                if k == kind and t in before[pid] and t in after[pid]]

    def woke(pid: int) -> int:
        return sum(w for _, w in delta(pid, "handler"))

    leader = max(names, key=woke)
    own = delta(leader, "handler")
    if not own:
        raise HarnessError("no request handler among the brokers' threads (jstack named "
                           "none data-plane-kafka-request-handler-N): nothing to count")
    idle = [d for pid in names if pid != leader for d in delta(pid, "handler")]
    idle_cpu = float(np.median([c for c, _ in idle])) if idle else 0.0
    idle_woke = float(np.median([w for _, w in idle])) if idle else 0.0
    taken = [w - idle_woke for _, w in own]
    requests = float(sum(taken))
    cpu = sum(c - idle_cpu for c, _ in own)
    from_leader = f"-{_broker_id(names[leader])}"
    fetched = [after[pid][t][0] - before[pid][t][0] for pid in names if pid != leader
               for t, (k, n) in names[pid].items()
               if k == "fetcher" and n.endswith(from_leader)
               and t in before[pid] and t in after[pid]]
    return Served(len(own), requests / messages, cpu / requests * 1e6 if requests > 0
                  else float("nan"), min(taken), max(taken),
                  sum(c for c, _ in delta(leader, "network")) / messages * 1e6,
                  sum(fetched) / messages * 1e6)


def _broker_id(names: dict[str, tuple[str, str]]) -> str:
    """A broker's id, from its processors' names (``...network-thread-ID-...``)."""
    for kind, name in names.values():
        found = re.search(r"network-thread-(\d+)-", name)
        if kind == "network" and found:
            return found.group(1)
    return "?"


def measure(config: str, reps: int) -> list[tuple[str, Served]]:
    """A fresh cluster warmed up and settled as the replication suite's, then ``config`` at
    replication 1 and 3, ``reps`` times, interleaved; a label and :class:`Served` per run."""
    from validate.kafka_harness import run
    from validate.kafka_replication import REPLICATIONS, config_of, warm_cluster

    out = []
    with warm_cluster() as cluster:
        names = {pid: thread_names(pid) for pid in cluster.pids}
        for rep in range(reps):
            for rf in REPLICATIONS:
                cfg = config_of(config, rf)
                before = {pid: counts(pid, names[pid]) for pid in cluster.pids}
                rec = run(cluster.bootstrap, cfg)
                after = {pid: counts(pid, names[pid]) for pid in cluster.pids}
                label = (f"{config} rf{rf} run {rep}: p50 "
                         f"{np.nanmedian(rec['latency_s']) * 1e3:.2f} ms, probe "
                         f"{rec['host_wake_s'][0] * 1e6:.0f} us")
                print(label, file=sys.stderr)
                out.append((label, served(before, after, names, cfg.n_messages)))
    return out


def table(rows: list[tuple[str, Served]]) -> str:
    lines = ["| run | handlers | requests per message | CPU per request handled | requests "
             "per handler (fewest-most) | processors' CPU per message | followers' fetchers' "
             "CPU per message |", "|---|---:|---:|---:|---:|---:|---:|"]
    for label, s in rows:
        lines.append(f"| {label} | {s.handlers} | {s.requests:.2f} | {s.handler_us:.0f} us | "
                     f"{s.fewest:.0f}-{s.most:.0f} | {s.network_us:.0f} us | "
                     f"{s.fetcher_us:.0f} us |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    from validate.kafka_broker import BrokerError
    from validate.kafka_replication import CONFIGS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--config", choices=list(CONFIGS), default="sparse")
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error(f"--reps must be at least 1; got {args.reps}")
    try:
        print(table(measure(args.config, args.reps)))
    except (HarnessError, BrokerError) as exc:
        print(f"kafka_handlers: error: {exc}", file=sys.stderr)
        sys.exit(2)


__all__ = ["Served", "counts", "measure", "served", "table", "thread_names"]

if __name__ == "__main__":
    main()
