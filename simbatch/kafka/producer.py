"""The Kafka producer client's settings (``[producer]``), for three client semantics.

Each semantics is one module, with the rules read in the client's source and cited there:

* ``"franz-go"`` (``franz_go.py``, twmb/franz-go v1.20.6): per-partition max-age lingers; a
  drain takes one batch from *every* partition of the broker; a drain asked for while the
  in-flight slot is taken runs when the response frees it; no lingering while Produce is
  blocked; murmur2 for keys, ``UniformBytesPartitioner`` for keyless records.
* ``"librdkafka"`` (``librdkafka.py``, confluent-kafka): per-partition max-age lingers, one
  partition per produce request; ``batch.num.messages`` / ``batch.size`` make a batch ready
  early; CRC-32 for keys, sticky keyless records (``sticky.partitioning.linger.ms``).
* ``"java"`` (``java_producer.py``, kafka-clients): a broker is ready when any of its
  partitions is (full batch, linger passed, memory exhausted) and then every partition's
  first batch goes, lingering or not; murmur2 for keys, the uniform sticky partitioner for
  keyless records.

What they share (batches, the buffered-record gate, in-order connections) is ``client.py``;
the partitioners are ``partitioners.py``. A setting left unset (``None``, ``"none"`` in a
scenario file) takes the client's own default (:data:`DEFAULTS`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from ..core.config import NONE_WORD, Float, Int, NonNeg, PosInt, Rule, at, config

SEMANTICS = ("franz-go", "librdkafka", "java")

DEFAULTS = {
    # client: (linger.ms by version, batch bytes, requests in flight per broker)
    # franz-go config.go defaultCfg: linger 10 ms (v1.20+), ProducerBatchMaxBytes 1000012,
    #   MaxProduceRequestsInflightPerBroker 1 (idempotency disabled, as teranode runs it).
    # librdkafka CONFIGURATION.md / rdkafka_conf.c: linger.ms 5, batch.size 1000000,
    #   max.in.flight 1000000.
    # kafka-clients ProducerConfig: linger.ms 0 (3.x) / 5 (4.x, KIP-1030), batch.size 16384,
    #   max.in.flight.requests.per.connection 5.
    "franz-go": ({"3": 10.0, "4": 10.0}, 1_000_012, 1),
    "librdkafka": ({"3": 5.0, "4": 5.0}, 1_000_000, 1_000_000),
    "java": ({"3": 0.0, "4": 5.0}, 16_384, 5),
}
STICKY_LINGER_MAX_MS = 900_000.0     # librdkafka caps sticky.partitioning.linger.ms


@config
class KafkaProducerConfig:
    """The client and the topic (``[producer]``).

    Parameters
    ----------
    semantics : {"franz-go", "librdkafka", "java"}
        Which client's batching, requests and partitioners (module docstring).
    linger_ms : float or None
        franz-go ``ProducerLinger`` / librdkafka and Java ``linger.ms``; ``None`` = the
        client's default (franz-go 10, librdkafka 5, Java 0 in 3.x and 5 from 4.0).
    java_version : {"3", "4"}
        kafka-clients major version, for the Java producer's defaults (``linger.ms``).
    n_partitions, n_brokers : int
        Partition p lives on broker ``p % n_brokers``.
    batch_max_bytes : int or None
        Per-partition batch byte cap (franz-go ``ProducerBatchMaxBytes``, librdkafka and Java
        ``batch.size``); ``None`` = the client's default (1000012, 1000000, 16384).
    batch_num_messages : int
        librdkafka ``batch.num.messages`` (the other clients have no count cap).
    sticky_linger_ms : float or None
        librdkafka ``sticky.partitioning.linger.ms`` for keyless records; ``None`` = the
        client's rule, 2 x ``linger.ms``; 0 = a random partition per record.
    max_buffered_records : int
        Produce blocks while this many records are unacknowledged (franz-go
        ``MaxBufferedRecords``; stands in for librdkafka's queue and Java's buffer memory).
    max_inflight_per_broker : int or None
        Produce requests in flight per broker connection; ``None`` = the client's default
        (franz-go 1 without idempotency, librdkafka 1000000, Java 5).
    append_ms : float
        Median time from sending a request to its response (the broker's append, the
        loopback round trip, the client's own threads: measured per client).
    append_ratios : tuple of float
        Measured append time / median, resampled per request (empty = constant).
    record_overhead_bytes : int
        Bytes a record adds to a batch beyond its value (key, headers, framing).

    Examples
    --------
    >>> KafkaProducerConfig(semantics="java").linger_s
    0.005
    >>> KafkaProducerConfig(semantics="java", java_version="3").linger_s
    0.0
    >>> KafkaProducerConfig(semantics="librdkafka", linger_ms=1000).sticky_interval_s
    2.0
    """

    semantics: Literal["franz-go", "librdkafka", "java"] = "franz-go"
    linger_ms: Annotated[NonNeg | None, NONE_WORD] = None
    java_version: Literal["3", "4"] = "4"
    n_partitions: Annotated[PosInt, at.Le(1_000_000)] = 1
    n_brokers: Annotated[PosInt, at.Le(100_000)] = 1
    batch_max_bytes: Annotated[PosInt | None, NONE_WORD] = None
    batch_num_messages: PosInt = 10_000
    sticky_linger_ms: Annotated[NonNeg | None, NONE_WORD] = None
    max_buffered_records: PosInt = 10_000
    max_inflight_per_broker: Annotated[PosInt | None, NONE_WORD] = None
    append_ms: NonNeg = 1.0
    append_ratios: tuple[Annotated[Float, at.Gt(0)], ...] = ()
    record_overhead_bytes: Annotated[Int, at.Ge(0)] = 70
    RULES = (Rule("sticky_linger_ms", "not set unless semantics = 'librdkafka'",
                  lambda c: c.sticky_linger_ms is None or c.semantics == "librdkafka"),)

    @property
    def linger_s(self) -> float:
        """The linger in effect, seconds."""
        if self.linger_ms is not None:
            return self.linger_ms / 1e3
        return DEFAULTS[self.semantics][0][self.java_version] / 1e3

    @property
    def batch_bytes(self) -> int:
        """The batch byte cap in effect."""
        return self.batch_max_bytes or DEFAULTS[self.semantics][1]

    @property
    def batch_count_cap(self) -> int:
        """Records per batch at most (librdkafka only)."""
        return self.batch_num_messages if self.semantics == "librdkafka" else 2**62

    @property
    def inflight_cap(self) -> int:
        """Requests in flight per broker in effect."""
        return self.max_inflight_per_broker or DEFAULTS[self.semantics][2]

    @property
    def sticky_interval_s(self) -> float:
        """librdkafka's sticky partition interval in effect, seconds."""
        if self.sticky_linger_ms is not None:
            return self.sticky_linger_ms / 1e3
        return min(STICKY_LINGER_MAX_MS, 2 * self.linger_s * 1e3) / 1e3
