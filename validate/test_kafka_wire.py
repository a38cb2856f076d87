"""The wire's reader (validate/kafka_wire.py): a captured frame read into a Kafka request's or
response's header, and a run's messages matched to the leader's replies, by the numbers in
their values and, where snappy hides them, by order."""

from __future__ import annotations

import struct

import numpy as np
import pandas as pd
import pytest

from validate.kafka_harness import COLUMNS
from validate.kafka_wire import FIELDS, replies, segment

BROKER, PRODUCER, CONSUMER, FOLLOWER = 9092, 50001, 50002, 50003


def _frame(sport: int, dport: int, payload: bytes) -> bytes:
    ethernet = b"\x00" * 12 + b"\x08\x00"
    ip = bytes([0x45]) + b"\x00" * 8 + bytes([6]) + b"\x00" * 10          # IPv4, TCP
    tcp = struct.pack("!HH", sport, dport) + b"\x00" * 8 + bytes([5 << 4]) + b"\x00" * 7
    return ethernet + ip + tcp + payload


def _request(api: int, corr: int, client: str, body: bytes = b"") -> bytes:
    rest = struct.pack("!hhih", api, 9, corr, len(client)) + client.encode() + body
    return struct.pack("!i", len(rest)) + rest


def _response(corr: int, body: bytes = b"") -> bytes:
    return struct.pack("!ii", 4 + len(body), corr) + body


def test_a_frame_reads_into_a_request_s_or_a_response_s_header():
    ports = {BROKER}
    body = b"\x01" + b"000000000042" + b"x" * 4           # a record's value: %012d, padding
    produce = _frame(PRODUCER, BROKER, _request(0, 7, "rdkafka", body))
    # 4 (size) + 10 (key, version, correlation, client id's length) + 7 + 17
    assert segment(produce, ports) == (PRODUCER, BROKER, 38, 0, 7, "rdkafka", "000000000042")
    reply = _frame(BROKER, CONSUMER, _response(8, b"\x01" * 20))
    assert segment(reply, ports) == (BROKER, CONSUMER, 28, -1, 8, "-", "-")
    assert segment(_frame(PRODUCER, 80, _request(0, 7, "x")), ports) is None   # not a broker's
    assert segment(_frame(PRODUCER, BROKER, b""), ports) is None               # a bare ack
    udp = bytearray(produce)
    udp[23] = 17
    assert segment(bytes(udp), ports) is None


def _run(n: int) -> np.ndarray:
    rec = np.zeros(n, dtype=[(c, "f8") for c in COLUMNS])
    rec["msg"] = np.arange(n)
    rec["ack_s"] = 1.0 + np.arange(n) * 0.025 + 0.002
    rec["consume_s"] = rec["ack_s"] - 0.0001            # the harness: 0.1 ms ahead
    return rec


def _segments(n: int, numbered: bool) -> pd.DataFrame:
    """A leader's produce replies at 10 + 25 ms i + 2 ms, each consumer reply 0.2 ms before
    its produce reply, empty consumer replies between, a follower's Fetch (ignored)."""
    rows = []
    for i in range(n):
        t = 10.0 + i * 0.025
        msgs = f"{i:012d}" if numbered else "-"
        rows.append((t, PRODUCER, BROKER, 400, 0, 100 + i, "kgo", msgs))
        rows.append((t + 0.0001, FOLLOWER, BROKER, 90, 1, i, "broker-2-fetcher-0", "-"))
        rows.append((t + 0.0005, CONSUMER, BROKER, 90, 1, 500 + i, "kgo", "-"))
        rows.append((t + 0.0018, BROKER, CONSUMER, 117 if not numbered else 380, -1, 500 + i,
                     "-", msgs))
        rows.append((t + 0.002, BROKER, PRODUCER, 60, -1, 100 + i, "-", "-"))
        for k in range(3):
            rows.append((t + 0.005 + k * 0.005, BROKER, CONSUMER, 73, -1, 600 + i, "-", "-"))
    return pd.DataFrame(rows, columns=list(FIELDS))


@pytest.mark.parametrize("numbered", [True, False])
def test_each_message_is_matched_to_the_leader_s_two_replies(numbered):
    matched = replies(_segments(20, numbered), _run(20))
    assert list(matched["msg"]) == list(range(20))
    assert matched["broker_lead_s"].to_numpy() == pytest.approx(-0.0002, abs=1e-9)
    # the clients' share: the harness's -0.1 ms less the broker's -0.2
    assert matched["client_s"].to_numpy() == pytest.approx(0.0001, abs=1e-9)


def test_two_records_in_one_consumer_reply_count_as_two():
    seg = _segments(4, numbered=False)
    reply = (seg["dport"] == CONSUMER) & (seg["size"] == 117)
    first, second = seg.index[reply][:2]
    seg.loc[first, "size"] = 73 + 2 * 44             # messages 0 and 1 in the first reply
    seg = seg.drop(index=second)
    matched = replies(seg, _run(4))
    assert matched.loc[matched["msg"] == 1, "fetch_reply_s"].item() == \
        matched.loc[matched["msg"] == 0, "fetch_reply_s"].item()
    assert list(matched["msg"]) == [0, 1, 2, 3]


def test_a_capture_that_cannot_be_matched_gives_no_rows():
    seg = _segments(5, numbered=False)
    assert replies(seg[seg["api"] != 0], _run(5)).empty             # no produce request
    assert replies(seg, _run(50)).empty                             # fewer requests than messages


def test_the_capture_reads_a_request_sent_on_the_loopback_interface(tmp_path):
    # the real kernel's packets: a Produce request's header sent to a listening port, read
    # back from the capture file by the capture process the measurement starts
    import socket
    import time

    from validate.kafka_harness import HarnessError
    from validate.kafka_wire import read, start_capture, stop_capture

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    out = tmp_path / "run.cap"
    try:
        cap = start_capture(out, [port])
    except HarnessError as exc:
        server.close()
        pytest.skip(f"no raw packet socket here: {exc}")
    with socket.create_connection(("127.0.0.1", port)) as client:
        conn, _ = server.accept()
        client.sendall(_request(0, 41, "kgo", b"000000000007"))
        conn.recv(1024)
        time.sleep(0.3)
    conn.close()
    server.close()
    stop_capture(cap, "the test's request")
    seg = read(out)
    sent = seg[seg["api"] == 0]
    assert len(sent) == 1, seg
    assert (sent["dport"].item(), sent["corr"].item(), sent["client"].item(),
            sent["msgs"].item()) == (port, 41, "kgo", "000000000007")


def test_a_capture_that_cannot_write_its_file_is_refused_naming_it(tmp_path):
    from validate.kafka_harness import HarnessError
    from validate.kafka_wire import start_capture

    where = tmp_path / "missing" / "run.cap"
    with pytest.raises(HarnessError, match=f"the capture stopped: .*cannot write {where}"):
        start_capture(where, [1])


def test_a_file_that_is_not_a_capture_is_refused_naming_it(tmp_path):
    from validate.kafka_harness import HarnessError
    from validate.kafka_wire import read

    bad = tmp_path / "run.cap"
    bad.write_text("not a capture\n")
    with pytest.raises(HarnessError, match=f"{bad} is not a capture"):
        read(bad)
    empty = tmp_path / "empty.cap"
    empty.write_text("")
    assert read(empty).empty and list(read(empty).columns) == list(FIELDS)
