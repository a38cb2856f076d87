"""The broker threads' tool (validate/kafka_handlers.py): its reading of a thread dump and of
the threads' counts, on made-up figures; the measurement itself is ``python -m
validate.kafka_handlers`` on a local cluster (not run in the suite)."""

from __future__ import annotations

import pytest

from validate.kafka_handlers import served, thread_names
from validate.kafka_harness import HarnessError

PROCESSOR = "data-plane-kafka-network-thread-2-ListenerName({})-PLAINTEXT-0"
DUMP = "\n".join([
    '"data-plane-kafka-request-handler-0" #61 daemon prio=5 os_prio=0 cpu=3.1ms elapsed=9s '
    'tid=0x1 nid=0x10 waiting on condition',
    '"data-plane-kafka-request-handler-1" #62 daemon prio=5 tid=0x2 nid=0x11 waiting',
    f'"{PROCESSOR.format("PLAINTEXT")}" #40 prio=5 tid=0x3 nid=0x20 runnable',
    f'"{PROCESSOR.format("CONTROLLER")}" #41 prio=5 tid=0x4 nid=0x21 runnable',
    '"ReplicaFetcherThread-0-1" #90 prio=5 tid=0x5 nid=0x30 runnable',
    '"kafka-log-cleaner-thread-0" #91 prio=5 tid=0x6 nid=0x31 waiting'])


def test_a_thread_dump_names_the_handlers_processors_and_fetchers_by_tid():
    names = thread_names(1, DUMP)
    assert names == {
        "16": ("handler", "data-plane-kafka-request-handler-0"),
        "17": ("handler", "data-plane-kafka-request-handler-1"),
        "32": ("network", PROCESSOR.format("PLAINTEXT")),
        "48": ("fetcher", "ReplicaFetcherThread-0-1"),
    }


def test_without_jstack_the_tool_says_so(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda _name: None)
    with pytest.raises(HarnessError, match="jstack .* is not on PATH"):
        thread_names(1)


def _broker(bid: int, fetch_from: int) -> dict[str, tuple[str, str]]:
    return {f"{bid}0": ("handler", "data-plane-kafka-request-handler-0"),
            f"{bid}1": ("handler", "data-plane-kafka-request-handler-1"),
            f"{bid}5": ("network", f"data-plane-kafka-network-thread-{bid}-ListenerName("
                                   "PLAINTEXT)-PLAINTEXT-0"),
            f"{bid}9": ("fetcher", f"ReplicaFetcherThread-0-{fetch_from}")}


def test_the_leader_s_requests_are_its_handlers_wake_ups_beyond_the_idle_brokers():
    # three brokers; 2 leads: its two handlers woke 110 and 90 times, the others' 10 (their
    # polls' timeouts), over 100 messages; each idle handler used 1 ms, the leader's 41 and
    # 31 ms, so (40 + 30) ms over 180 requests
    names = {1: _broker(1, 2), 2: _broker(2, 1), 3: _broker(3, 2)}
    before = {pid: {t: (0.0, 0) for t in names[pid]} for pid in names}
    after = {pid: {t: (0.001, 10) for t in names[pid]} for pid in names}
    after[2]["20"], after[2]["21"], after[2]["25"] = (0.041, 110), (0.031, 90), (0.020, 300)
    after[1]["19"], after[3]["39"] = (0.012, 100), (0.014, 100)     # both fetch from 2
    s = served(before, after, names, messages=100)
    assert s.handlers == 2
    assert s.requests == pytest.approx(1.8)
    assert s.handler_us == pytest.approx(70e-3 / 180 * 1e6)
    assert (s.fewest, s.most) == (80, 100)
    assert s.network_us == pytest.approx(200)
    assert s.fetcher_us == pytest.approx(260)


def test_brokers_without_a_named_handler_are_refused_saying_so():
    names = {1: {"19": ("fetcher", "ReplicaFetcherThread-0-2")}}
    counts = {1: {"19": (0.0, 0)}}
    with pytest.raises(HarnessError, match="no request handler among the brokers' threads"):
        served(counts, counts, names, messages=10)
