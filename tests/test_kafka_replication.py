"""Replication (simbatch/kafka/replication.py): a record is answered, and consumed, once each
follower's next Fetch after the one that carried it is back at the leader, and the wait
adds up from the broker's costs and the consumer's fetch time; followers read many appends
in one Fetch; other clients' appends are replicated too; brokers on one machine share its
cores; a replication factor above the cluster's size is refused, naming the field."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from simbatch.core.errors import ConfigError
from simbatch.kafka import (
    BrokerConfig,
    ConsumerConfig,
    KafkaCase,
    KafkaProducerConfig,
    KafkaWorkload,
    OuterBatcherConfig,
)
from simbatch.kafka import simulate as simulate_kafka

CPU = BrokerConfig(cores=2, request_cpu_us=300, record_cpu_us=10)
FETCH_MS = 0.3


def _case(broker: BrokerConfig, n_brokers: int = 3, **workload) -> KafkaCase:
    return KafkaCase(workload=KafkaWorkload(**{"n_messages": 60, **workload}),
                     outer=OuterBatcherConfig(linger_ms=None),
                     producer=KafkaProducerConfig(semantics="librdkafka", linger_ms=0,
                                                  n_brokers=n_brokers, append_ms=0.8),
                     consumer=ConsumerConfig(fetch_ms=FETCH_MS), broker=broker)


def _replicated(broker: BrokerConfig, replicas: int) -> BrokerConfig:
    return dataclasses.replace(broker, replicas=replicas)


@pytest.mark.parametrize("replicas", [2, 3])
def test_an_idle_cluster_adds_the_follower_round_trip_to_every_record(replicas):
    # 25 ms apart every record finds the cluster idle. Beyond its append, it waits for: the
    # leader's completing the parked Fetch with it (the fetch share of a request of one
    # record: Kafka reads the log and builds the reply then), half the fetch time to the
    # follower, the follower's append (the produce share of a request of one record), half
    # the fetch time back, the leader's handling of the next Fetch (the fetch share of a
    # request's cost). The followers run side by side on their own brokers, but the leader
    # reads their woken Fetches one after the other on the appending request's I/O thread
    # and sends each reply, its record with it, once its read is done: the last follower's
    # reply leaves after the I/O share of every read before it (the request's, not the
    # record's: the network thread sends the record).
    share = CPU.fetch_share
    read_io_us = 300 * share * (1 - CPU.network_share)
    added_us = ((300 + 10) * share + FETCH_MS * 1e3 / 2 + (300 + 10) * (1 - share)
                + FETCH_MS * 1e3 / 2 + 300 * share + (replicas - 2) * read_io_us)
    one = simulate_kafka(_case(CPU, interval_ms=25.0), 3)
    more = simulate_kafka(_case(_replicated(CPU, replicas), interval_ms=25.0), 3)
    # each stage's time is a whole microsecond (simbatch/kafka/clock.py): half of one each
    atol = 0.5e-6 * (5 + replicas - 2)
    np.testing.assert_allclose(more.request_acked_s - one.request_acked_s, added_us * 1e-6,
                               atol=atol)
    np.testing.assert_allclose(one.consume_s - one.ack_s, FETCH_MS * 1e-3, atol=0.5e-6)
    np.testing.assert_array_equal(more.consume_s, more.ack_s)
    np.testing.assert_allclose(more.latency_s - one.latency_s,
                               added_us * 1e-6 - FETCH_MS * 1e-3, atol=atol + 0.5e-6)


def test_replication_costs_each_follower_an_append_and_the_leader_a_fetch_twice():
    # per record: the produce request and the consumer's fetch at the leader (as without
    # replication), and per follower an append on the follower (the produce share of a
    # request of one record) and, at the leader, a fetch's share twice: completing the
    # parked Fetch with the record and handling the next Fetch, which carries none
    share = CPU.fetch_share
    one = simulate_kafka(_case(CPU, interval_ms=25.0), 3)
    three = simulate_kafka(_case(_replicated(CPU, 3), interval_ms=25.0), 3)
    per_follower_us = (300 + 10) * (1 - share) + (300 + 10) * share + 300 * share
    assert three.broker_cpu_s == pytest.approx(
        one.broker_cpu_s + 2 * three.requests * per_follower_us * 1e-6, rel=1e-9)


@pytest.mark.parametrize("follower_cold_us", [None, 400.0, 150.0, 0.0])
def test_a_follower_s_append_after_an_idle_spell_pays_its_own_cold_start(follower_cold_us):
    # 25 ms apart every stage finds its broker idle: the leader's produce request pays
    # cold_us (400), each follower's append follower_cold_us (its fetcher thread waking;
    # None: cold_us), and the stages that follow within the round run warm. So each record
    # waits, and each follower's CPU grows, by follower_cold_us beyond a warm follower's
    warm = dataclasses.replace(CPU, cold_us=400.0, replicas=3)
    case = _case(dataclasses.replace(warm, follower_cold_us=0.0), interval_ms=25.0)
    base = simulate_kafka(case, 3)
    run = simulate_kafka(dataclasses.replace(
        case, broker=dataclasses.replace(warm, follower_cold_us=follower_cold_us)), 3)
    paid = 400.0 if follower_cold_us is None else follower_cold_us
    np.testing.assert_allclose(run.latency_s - base.latency_s, paid * 1e-6, atol=2e-6)
    assert run.broker_cpu_s == pytest.approx(base.broker_cpu_s
                                             + 2 * run.requests * paid * 1e-6, rel=1e-9)


def test_a_follower_reads_the_appends_made_while_its_fetch_was_away_in_one_fetch():
    # 25 ms apart, each append has a Fetch of its own per follower. A connection is muted
    # until its response is sent, at commit, so one producer's requests reach the leader one
    # per loop of the Fetch; six producers' appends (connections of their own) come faster
    # than a Fetch's loop (its read, 0.3 ms of way, the follower's append and the next
    # Fetch's handling), so each Fetch carries several
    sparse = simulate_kafka(_case(_replicated(CPU, 3), interval_ms=25.0), 5)
    assert sparse.replica_fetches == 2 * sparse.requests
    fast = _case(_replicated(CPU, 3), interval_ms=0.05, n_messages=600, producers=6)
    run = simulate_kafka(fast, 5)
    assert np.isfinite(run.consume_s).all()
    assert 0 < run.replica_fetches < 2 * run.requests / 2


def test_other_clients_appends_are_replicated_too():
    # the other clients' traffic costs each follower its appends: the cluster's CPU grows
    # by the followers' share of it, and the producer's records wait behind it
    background = dataclasses.replace(CPU, background_records_per_s=20_000,
                                     background_records_per_request=100)
    one = simulate_kafka(_case(background, interval_ms=5.0), 4)
    three = simulate_kafka(_case(_replicated(background, 3), interval_ms=5.0), 4)
    assert three.broker_cpu_s > 2.5 * one.broker_cpu_s


def test_colocated_brokers_share_the_machine_s_cores():
    # one core for three brokers: the followers' appends queue behind the leader's work,
    # so records wait longer than with a core for each broker
    tight = dataclasses.replace(CPU, cores=1, replicas=3)
    apart = simulate_kafka(_case(tight, interval_ms=0.2, n_messages=300), 6)
    shared = simulate_kafka(_case(dataclasses.replace(tight, colocated=True),
                                  interval_ms=0.2, n_messages=300), 6)
    assert shared.latency_s.mean() > apart.latency_s.mean()
    assert shared.broker_cpu_s == pytest.approx(apart.broker_cpu_s, rel=0.2)


def test_more_replicas_than_brokers_is_refused_naming_the_field():
    with pytest.raises(ConfigError, match=r"'broker.replicas' parameter of KafkaCase must be "
                                          r"at most producer.n_brokers.*got 3"):
        _case(_replicated(CPU, 3), n_brokers=2)
