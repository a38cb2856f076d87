"""The Kafka producer stack: the application's outer batcher, the client's per-partition
lingers and requests, the broker's append and the consumer's fetch.

One mechanism per module: ``outer_batcher`` (teranode's debounce batcher, or a deadline
timer), ``producer`` (the client's settings), ``client`` (batches, the buffered-record gate,
in-order broker connections), one module per client semantics (``franz_go``,
``librdkafka``, ``java_producer``), ``partitioners`` (the clients' key hashes and sticky
keyless choices), ``engine`` (the workload, the case, the builder and the metrics).
"""

from .engine import ENGINE, ConsumerConfig, KafkaCase, KafkaRun, KafkaWorkload, simulate
from .outer_batcher import OuterBatcherConfig
from .producer import KafkaProducerConfig

__all__ = ["ENGINE", "ConsumerConfig", "KafkaCase", "KafkaProducerConfig", "KafkaRun",
           "KafkaWorkload", "OuterBatcherConfig", "simulate"]
