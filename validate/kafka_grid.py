"""The Kafka calibration's grid: the configurations measured on the real broker with each
real client (:data:`CONFIGS`), the subset the test suite measures (:data:`CI_CONFIGS`), the
configuration each client is fitted on (:data:`FIT`) and those predicted with the broker's
CPU (:data:`CPU_CONFIGS`). ``validate/calibrate_kafka.py`` measures them.

The grid (:data:`CONFIGS`), all on the sparse keyed feed (200 messages of 256 bytes, 25 ms
apart) unless named ``-dense``:

* per client, linger 10 ms and 1 s x P = 1, 8, 32, 128, no outer batcher
  (``[client-]lingerL-pP-sparse``; librdkafka's names carry no prefix);
* per client, the deadline outer batcher at 100 ms and 1 s over linger 10 ms and 1 s, P = 32
  (``[client-]deadlineT-lingerL-p32-sparse``);
* librdkafka's earlier configurations (linger 100 ms, the stacked debounce outer batcher,
  the dense Poisson feeds).
"""

from __future__ import annotations

import os

from validate.kafka_harness import HarnessConfig

CLIENTS = ("librdkafka", "franz-go", "java")
PREFIX = {"librdkafka": "", "franz-go": "franz-go-", "java": "java-"}
FIT = {client: f"{PREFIX[client]}linger0-p1-sparse" for client in CLIENTS}
FIT_CONFIG = FIT["librdkafka"]
SPARSE = {"n_messages": 200, "interval_ms": 25}


CPU_FIT = "linger10-p4-1000ps-fit"
"""A configuration the broker's CPU costs are fitted on
(:func:`~validate.broker_costs.fit_broker`, beside the fit runs and the other CPU
configurations): 4 partitions, 1000 msg/s, linger 10 ms (the broker JVM at ~0.2 of the 2 vCPUs
here), measured just before each run of a CPU configuration; in CI the one that scales the
models/ file's costs to the machine (:func:`~validate.broker_costs.held_out_broker`)."""
DENSE_RATES = (250, 500, 1000, 2000)
"""Messages per second of the dense multi-partition configurations (issue 14): measured
here, the broker JVM went from ~0.1 to ~0.6 of the 2 vCPUs, and the machine (the broker,
the Python harness and the neighbours) to all of them, at 2000."""
RECORD_RATES = (2000, 8000)
"""Messages per second of the large-request CPU configurations (``linger100-p8-Rps-dense``):
librdkafka sends one partition's batch per produce request (``rd_kafka_ProduceRequest(rkb,
rktp, ...)`` in ``rd_kafka_toppar_producer_serve``, rdkafka_broker.c), so at linger 100 ms over 8
partitions a request carries R / 80 records (25 and 100) while the requests stay at ~80 per
second; the ladder's carry 1-3. They check the record cost the design measured
(:func:`~validate.broker_costs.session_record_cost`) where requests are large; their own few
hundredths of a core of records cannot tell it (validate/broker_costs.py's docstring, "A
record's cost")."""


def _configs() -> dict[str, HarnessConfig]:
    out: dict[str, HarnessConfig] = {}

    def add(client: str, name: str, **kw) -> None:
        name = PREFIX[client] + name
        out[name] = HarnessConfig(client=client, label=name, **{**SPARSE, **kw})

    for client in CLIENTS:
        add(client, "linger0-p1-sparse", linger_ms=0, n_partitions=1)
        for linger in (10, 1000):
            for parts in (1, 8, 32, 128):
                add(client, f"linger{linger}-p{parts}-sparse", linger_ms=linger,
                    n_partitions=parts)
        for outer in (100, 1000):
            for linger in (10, 1000):
                add(client, f"deadline{outer}-linger{linger}-p32-sparse", linger_ms=linger,
                    n_partitions=32, outer_linger_ms=outer, outer_timer="deadline")
    add("librdkafka", "linger100-p32-sparse", linger_ms=100, n_partitions=32)
    add("librdkafka", "linger100-p1-sparse", linger_ms=100, n_partitions=1)
    add("librdkafka", "outer10-linger10-p32-sparse", linger_ms=10, n_partitions=32,
        outer_linger_ms=10)
    # One partition keeps the broker below CPU saturation: 500 msg/s over 8 partitions
    # with linger 10 ms is ~800 produce requests/s, and on a 2-vCPU machine the broker JVM
    # then burns ~1.8 CPUs and stalls acks by 100-300 ms; the model has no broker CPU yet.
    # 3000 messages: a run's p99 rests on its ~30 slowest messages, some 10 batches (one
    # request carries ~5 messages here); with 600 it rested on one or two broker pauses
    # (measured: 13.2-15.7 ms here, 18.2 ms in a CI run whose fit predicted 12.5 ms).
    add("librdkafka", "linger10-p1-dense", n_messages=3000, feed="poisson", interval_ms=2,
        linger_ms=10, n_partitions=1)
    add("librdkafka", "outer10-linger10-p8-dense", n_messages=300, feed="poisson",
        interval_ms=2, linger_ms=10, n_partitions=8, outer_linger_ms=10)
    # Issue 14: dense multi-partition feeds from an idle broker towards this machine's limit
    # (4 s of Poisson traffic each), predicted with the broker's CPU (see CPU_CONFIGS).
    for parts in (8, 32):
        for rate in DENSE_RATES:
            add("librdkafka", f"linger10-p{parts}-{rate}ps-dense", n_messages=4 * rate,
                feed="poisson", interval_ms=1000 / rate, linger_ms=10, n_partitions=parts)
    # Large requests (issue 14): linger 100 ms over 8 partitions, 25 and 100 records per
    # produce request against the ladder's 1-3, so a record's cost parts from a request's
    for rate in RECORD_RATES:
        add("librdkafka", f"linger100-p8-{rate}ps-dense", n_messages=4 * rate,
            feed="poisson", interval_ms=1000 / rate, linger_ms=100, n_partitions=8)
    add("librdkafka", CPU_FIT, n_messages=4000, feed="poisson", interval_ms=1, linger_ms=10,
        n_partitions=4)
    return out


CONFIGS: dict[str, HarnessConfig] = _configs()
CI_CONFIGS = (FIT["librdkafka"], "linger1000-p32-sparse", "linger10-p8-sparse",
              FIT["franz-go"], "franz-go-linger1000-p32-sparse",
              "franz-go-deadline100-linger10-p32-sparse",
              FIT["java"], "java-linger1000-p32-sparse", "linger10-p32-1000ps-dense")
"""The subset the test suite measures: each client at linger 1 s and P = 32 (where
librdkafka's one-partition requests part from the others' broker-wide drains), librdkafka at
linger 10 ms, the deadline outer batcher once, the three fits, and the dense feed at
1000 msg/s over 32 partitions with the broker's CPU (last, on a warmed broker; ~80 s: a
fit run, a CPU fit run and its own, three times, after ~45 s of settling runs,
:data:`~validate.calibrate_kafka.CPU_SETTLE_RUNS`). Its 8-partition twin is in the full grid
only: it would add as much again."""


LOCAL_CORES = os.cpu_count() or 1
"""The local broker's cores: the machine's (2 vCPUs here), shared with the harness."""
CPU_CONFIGS = tuple(n for n, c in CONFIGS.items() if n.endswith("ps-dense"))
"""The dense multi-partition configurations: predicted with the broker's CPU on (its costs
fitted on the session's other runs, :func:`~validate.broker_costs.held_out_broker`) and judged
by issue 14's tolerance on p50, p99 and the broker JVM's CPU (see
:func:`~validate.calibrate_kafka.within`)."""


def fit_config(name: str) -> str:
    """The fit configuration of ``name``'s client."""
    return FIT[CONFIGS[name].client]


def fit_configs(name: str) -> tuple[str, ...]:
    """What is measured just before each run of ``name``: its client's fit configuration,
    and for a CPU configuration :data:`CPU_FIT` too."""
    return (fit_config(name),) + ((CPU_FIT,) if name in CPU_CONFIGS else ())
MODEL_FIT_EXCLUDES = "linger10-p32-1000ps-dense"
"""The dense configuration the models/ file's ``[broker]`` is not fitted on: the one CI
measures and predicts with it (:func:`~validate.calibrate_kafka.compare`)."""
RECORD_CONFIGS = tuple(f"linger100-p8-{rate}ps-dense" for rate in RECORD_RATES)
"""The CPU configurations whose requests carry many records (:data:`RECORD_RATES`)."""
