"""The Kafka producer stack: the application's outer batcher, the client's per-partition
lingers and requests, the broker's CPU and append, and the consumer's fetch.

One mechanism per module: ``feeds`` (gaps or rates, producers, steps, bursts),
``outer_batcher`` (teranode's debounce batcher, or a deadline timer), ``producer`` (the
client's settings), ``client`` (batches, the buffered-record gate, in-order broker
connections), one module per client semantics (``franz_go``, ``librdkafka``,
``java_producer``), ``partitioners`` (the clients' key hashes and sticky keyless choices),
``keys`` (key hashes in bulk), ``broker`` (the broker's threads and cores), ``gc`` (the
broker JVM's young collections, stop-the-world pauses), ``aggregate``
(the feed and the outer batcher per batch), ``metrics`` and ``engine`` (the case, the
builder, the run).
"""

from .aggregate import SimulationConfig
from .broker import BrokerConfig
from .engine import ENGINE, ConsumerConfig, KafkaCase, KafkaRun, KafkaWorkload, simulate
from .feeds import RateStep
from .gc import GcConfig
from .outer_batcher import OuterBatcherConfig
from .producer import KafkaProducerConfig

__all__ = ["ENGINE", "BrokerConfig", "ConsumerConfig", "GcConfig", "KafkaCase",
           "KafkaProducerConfig",
           "KafkaRun", "KafkaWorkload", "OuterBatcherConfig", "RateStep", "SimulationConfig",
           "simulate"]
