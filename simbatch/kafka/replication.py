"""Replication (``[broker] replicas``): each partition's followers fetch its leader's
appends, and a produce request is answered, and its records read by consumers, only once
every follower has them (the clients' default ``acks=all``: franz-go ``AllISRAcks``,
librdkafka and the Java producer ``acks=-1``).

How Kafka does it (Apache Kafka 3.9, ``core/src/main/scala/kafka/server`` and
``kafka/cluster/Partition.scala``):

* A follower broker runs one fetcher thread per leader it follows
  (``num.replica.fetchers`` = 1, ``ReplicaFetcherThread`` / ``AbstractFetcherThread``). It
  keeps one Fetch outstanding: it sends the next as soon as it has appended the last reply's
  records to its own log (``processFetchRequest`` -> ``appendRecordsToFollowerOrFutureReplica``).
* The leader answers a follower's Fetch at once if it has records beyond the fetch offset,
  else parks it (``DelayedFetch``, ``replica.fetch.min.bytes`` = 1,
  ``replica.fetch.wait.max.ms`` = 500) until an append completes it.
* A Fetch carries the follower's log end: when it reaches the leader, the leader moves the
  follower's end, advances the high watermark to the smallest end among the in-sync
  replicas (``Partition.maybeIncrementLeaderHW``) and completes the produce requests that
  waited for it (``DelayedProduce``, acks=-1). Consumers read only up to the high
  watermark: the move completes the partition's parked consumer Fetches first, then those
  produce requests (``DelayedOperations.checkAndCompleteAll``), so a consumer reads a record
  at its producer's ack (``engine.py``).

So a record is committed when each follower's *next* Fetch after the one that carried it
reaches the leader: the leader's read, the reply's way, the follower's append, the next
Fetch's way and the leader's handling of it. Here each (leader, follower) pair is a
:class:`ReplicaLink` holding that loop:

* each time the leader serves a follower's Fetch it costs what a consumer's fetch costs it
  (the ``fetch_share`` of the request and record costs, ``broker.py``), on its network and
  I/O threads and cores: when the Fetch comes (the follower's new log end, the high
  watermark, the produce requests it completes, a read), and again when an append wakes it
  parked: Kafka completes a parked Fetch then (``DelayedFetch.onComplete`` reads the log and
  builds the reply, run by the appending request's handler thread from ``KafkaApis.handle``'s
  ``finally``, ``ReplicaManager.tryCompleteActions``), so the parked Fetches an append wakes
  are read one after the other, each reply sent once its read is done: the last follower's
  reply leaves after every read before it. A read is the I/O share of a request's cost;
  its records go out with the reply, on a network thread (zero-copy:
  :meth:`~simbatch.kafka.broker.BrokerConfig.read_stages_s`), so a read of many records
  holds the appender's thread no longer than a read of one. Measured (2026-11-29,
  ``validate/kafka_request_log.py``): a produce request's time on the I/O thread, 0.17-0.29
  ms at acks=1, is 0.40-0.52 at acks=all on the dense configuration and 0.72-0.75 on the
  sparse one, the two followers' Fetches completed in it; and the three JVMs' CPU per
  message on the dense configuration (``python -m validate.kafka_replication --cpu``: the
  slope between runs of 2,000 and 6,000 messages, so without the runs' set-up) rose by
  0.42-0.47 ms from one replica to three in one session and by 0.59-0.74 in another
  (0.31-0.55 ms at one replica, where the model reads 0.31), where the model with these
  costs adds 0.45 (0.33 with the woken Fetch's records alone, as before);
* the follower's append costs the follower what the produce request cost the leader (the
  rest of the request and record costs), on the link's fetcher thread and the follower's
  cores, and a cold start after the follower idled: ``[broker] follower_cold_us``, one
  thread waking (the request path's ``cold_us`` wakes a network and a handler thread; None:
  that one). Measured (2026-11-29, ``python -m validate.kafka_cold_start --replicas 3``,
  one partition, linger 0, two sessions of three rounds, pooled): the fetcher threads' CPU
  per append on each follower, 91 us (84-96) at 0.5 ms between messages, 122 at 2, 221 at
  5, 275-288 at 10-25 ms: a cold start of 197 us (the sessions alone, 165 and 217; an
  earlier script of the same design, ~220), where the request path's is ~420 us measured
  on its own and 438 as the ladder fits it;
* a reply's way to the follower and the next Fetch's way back take ``turnaround`` together,
  the consumer's measured fetch time (``[consumer] fetch_ms``), half each way;
* every append made while a Fetch is out is read by the next one, the other clients'
  (``background_records_per_s``) too.

Partition ``p``'s leader is broker ``p % n_brokers`` and its followers the next
``replicas - 1`` brokers (``(p + i) % n_brokers``): Kafka's rack-less placement (the KRaft
controller's ``StripedReplicaPlacer``; ``AdminUtils.assignReplicasToBrokers`` under
ZooKeeper) likewise spreads them so that every broker leads some partitions and follows
others. ``min.insync.replicas``, followers falling out of sync, and the leader's
epoch checks are not modelled: every follower stays in sync.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.pool import FifoPool
from .clock import ticks

if TYPE_CHECKING:
    from .broker import Broker


class Commit:
    """One append waiting for its followers: ``done()`` once ``remaining`` reach 0."""

    __slots__ = ("done", "remaining")

    def __init__(self, followers: int, done: Callable[[], None]) -> None:
        self.remaining = followers
        self.done = done

    def replicated(self) -> None:
        self.remaining -= 1
        if self.remaining == 0:
            self.done()


class ReplicaLink:
    """One follower's fetch loop from one leader (module docstring)."""

    def __init__(self, leader: Broker, follower: Broker, turnaround: float) -> None:
        self.leader = leader
        self.follower = follower
        self.half_way = turnaround / 2.0
        self.thread = FifoPool(leader.env, 1)        # the follower's fetcher thread
        self.unread: deque[tuple[int, float, Commit | None]] = deque()
        self.parked = True                           # the follower's Fetch waits at the leader
        self.fetches = 0

    def appended(self, records: int, n_bytes: float, commit: Commit | None) -> bool:
        """An append at the leader; ``commit`` (None: nobody waits) learns when this
        follower has it. True if it woke the follower's parked Fetch: the appender then
        reads it (:func:`wake`)."""
        self.unread.append((records, n_bytes, commit))
        if self.parked:
            self.parked = False
            return True
        return False

    def _take(self) -> tuple[int, float, list[Commit], float, float]:
        """Every append the follower has not read, and the leader's (network, I/O) seconds
        of serving them, charged to its CPU."""
        records, n_bytes, commits = 0, 0.0, []
        while self.unread:
            r, b, c = self.unread.popleft()
            records += r
            n_bytes += b
            if c is not None:
                commits.append(c)
        network, io = self.leader.config.read_stages_s(records, n_bytes)
        self.leader.cpu_s += network + io
        return records, n_bytes, commits, network, io

    def _read(self, acked: list[Commit]) -> None:
        """The follower's Fetch comes to the leader, which serves it: every append it has
        not read (none: the Fetch parks). ``acked``: the commits the Fetch has just come to
        confirm (it carries the follower's new log end)."""
        records, n_bytes, commits, network, io = self._take()
        leader = self.leader
        leader.stage(leader.network, ticks(network), lambda: leader.stage(
            leader.io, ticks(io), lambda: self._handled(acked, records, n_bytes, commits)))

    def _woken(self, then: Callable[[], None]) -> None:
        """An append woke the parked Fetch: the appender's I/O thread reads it, then
        ``then()`` (the next read) while a network thread sends the reply."""
        records, n_bytes, commits, network, io = self._take()
        leader = self.leader

        def read() -> None:
            then()
            leader.stage(leader.network, ticks(network),
                         lambda: self._handled([], records, n_bytes, commits))

        leader.stage(leader.io, ticks(io), read)

    def _handled(self, acked: list[Commit], records: int, n_bytes: float,
                 commits: list[Commit]) -> None:
        for commit in acked:            # the high watermark moves
            commit.replicated()
        if records:
            self.fetches += 1
            self._later(lambda: self._append(records, n_bytes, commits))
        elif self.unread:               # appended while the empty Fetch was handled
            self._read([])
        else:
            self.parked = True

    def _append(self, records: int, n_bytes: float, commits: list[Commit]) -> None:
        """The follower appends the reply's records, then sends its next Fetch."""
        follower = self.follower
        network, io = follower.config.stages_s(records, n_bytes,
                                               1.0 - follower.config.fetch_share)
        follower.cpu_s += network + io
        follower.stage(self.thread, ticks(network + io),
                       lambda: self._later(lambda: self._read(commits)),
                       follower.config.follower_cold_us)

    def _later(self, then: Callable[[], None]) -> None:
        if self.half_way > 0:
            self.leader.env.timeout(self.half_way).callbacks.append(lambda _e: then())
        else:
            then()


def wake(links: list[ReplicaLink], records: int, n_bytes: float,
         commit: Commit | None) -> None:
    """An append of ``records`` at the leader of ``links``: each link learns of it, and the
    parked Fetches it wakes are read one after the other (module docstring)."""
    woken = [link for link in links if link.appended(records, n_bytes, commit)]

    def read(i: int) -> None:
        if i < len(woken):
            woken[i]._woken(lambda: read(i + 1))

    read(0)


__all__ = ["Commit", "ReplicaLink", "wake"]
