"""The brokers' request log (validate/kafka_request_log.py): its lines read into each
request's stages, and the local broker writing them when asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from validate.kafka_harness import HarnessConfig, HarnessError, run
from validate.kafka_request_log import (
    LOGGER,
    busiest,
    follower_rounds,
    produce_stages,
    read,
    runs_topics,
)

TIMES = {"totalTimeMs": 2.2, "requestQueueTimeMs": 0.1, "localTimeMs": 0.7,
         "remoteTimeMs": 1.2, "responseQueueTimeMs": 0.1, "sendTimeMs": 0.1}


def _line(stamp: str, body: dict) -> str:
    return f"[2026-11-29 {stamp}] DEBUG Completed request:{json.dumps(body)} ({LOGGER})"


def _produce(stamp: str, correlation: int, partition: int, **times) -> str:
    return _line(stamp, {
        "requestHeader": {"requestApiKey": 0, "correlationId": correlation,
                          "clientId": "rdkafka", "requestApiKeyName": "PRODUCE"},
        "request": {"acks": -1, "topicData": [{"name": "simbatch-t", "partitionData": [
            {"index": partition, "recordsSizeInBytes": 80}]}]},
        "connection": "127.0.0.1:1-127.0.0.1:2-0", **{**TIMES, **times}})


def _fetch(stamp: str, correlation: int, n_bytes: int, **times) -> str:
    return _line(stamp, {
        "requestHeader": {"requestApiKey": 1, "correlationId": correlation,
                          "clientId": "broker-2-fetcher-0", "requestApiKeyName": "FETCH"},
        "request": "", "response": {"responses": [{"topicId": "x", "partitions": [
            {"partitionIndex": 0, "recordsSizeInBytes": n_bytes}]}]},
        "connection": "127.0.0.1:1-127.0.0.1:3-1", **{**TIMES, **times}})


def test_a_completed_request_line_is_read_into_its_stages(tmp_path):
    log = tmp_path / "broker1.log"
    log.write_text("\n".join([
        "[2026-11-29 03:50:08,000] WARN something else (kafka.server.KafkaApis)",
        _produce("03:50:08,010", 7, 2, totalTimeMs=400.0),     # the first: leader election
        *(_produce(f"03:50:08,{20 + 2 * k:03d}", 8 + k, k % 3) for k in range(6)),
        _line("03:50:08,030", {"requestHeader": {"correlationId": 1, "clientId": "c",
                                                 "requestApiKeyName": "METADATA"},
                               "connection": "c", **TIMES}),
        _fetch("03:50:08,012", 40, 80, remoteTimeMs=25.0),
        _fetch("03:50:08,013", 41, 0, remoteTimeMs=0.4, totalTimeMs=0.6),
        _fetch("03:50:08,017", 42, 80, remoteTimeMs=3.0),
    ]) + "\n")
    df = read({1: log})
    assert list(df["api"]).count("PRODUCE") == 7 and list(df["api"]).count("FETCH") == 3
    first = df.iloc[0]
    assert (first["node"], first["acks"], first["topic"], first["partitions"]) == \
        (1, -1, "simbatch-t", (2,))
    assert first["start_s"] == pytest.approx(first["end_s"] - 0.4)
    assert runs_topics(df) == ["simbatch-t"]

    stages = produce_stages(df, "simbatch-t")         # the first request left out
    assert stages.loc[1, "requests"] == 6 and stages.loc[1, "partitions"] == [0, 1, 2]
    assert stages.loc[1, "total"] == pytest.approx(2.2)
    # six requests of 2.2 ms started within 10 ms: a quarter-second window 5.3 % busy
    assert busiest(df, "simbatch-t").loc[1] == pytest.approx(6 * 2.2 / 250)

    rounds = follower_rounds(df, 0.0, 1e12)
    assert len(rounds) == 1 and rounds.loc[0, "fetches"] == 3
    # fetch 40 ended at 08.012, 41 started at 08.013 - 0.6 ms; 41 ended at 08.013, 42
    # started at 08.017 - 2.2 ms: turns of 0.4 and 1.8 ms
    assert rounds.loc[0, "turn"] == pytest.approx((0.4 + 1.8) / 2, abs=1e-3)   # float stamps
    assert df[df["api"] == "FETCH"]["partitions"].tolist() == [(0,), (), (0,)]


def test_a_line_it_cannot_read_is_refused_naming_the_file_and_line(tmp_path):
    log = tmp_path / "broker1.log"
    log.write_text(_produce("03:50:08,010", 7, 2) + "\n"
                   + _produce("03:50:08,011", 8, 2)[:90] + "\n")
    with pytest.raises(HarnessError, match=f"{log}:2: not a request log line"):
        read({1: log})
    with pytest.raises(HarnessError, match="cannot read the broker's log .*missing.log"):
        read({1: tmp_path / "missing.log"})


@pytest.mark.kafka
def test_the_broker_logs_each_request_with_its_stages_when_asked(kafka_broker):
    from validate.kafka_broker import set_log_level

    if kafka_broker["data_dir"] is None:
        pytest.skip("a user's cluster (SIMBATCH_KAFKA_BOOTSTRAP): its logs are not here")
    log = Path(kafka_broker["data_dir"]) / "broker.log"
    set_log_level(kafka_broker["bootstrap"], 1, LOGGER, "DEBUG")
    try:
        rec = run(kafka_broker["bootstrap"], HarnessConfig(n_messages=20, interval_ms=5,
                                                           linger_ms=0, warmup_s=0.5))
    finally:
        set_log_level(kafka_broker["bootstrap"], 1, LOGGER, "WARN")
    df = read({1: log})
    produce = df[(df["api"] == "PRODUCE") & (df["topic"] == runs_topics(df)[-1])]
    # every message its own request at linger 0 (the harness's warm-up ones too), acks=1
    assert len(produce) >= len(rec) and set(produce["acks"]) == {1}
    assert (produce["remote"] == 0).all()
    parts = produce[["rq", "local", "remote", "respq", "send"]].sum(axis=1)
    assert (parts <= produce["total"] + 0.01).all()
