"""Each client's fit on a calibration session's runs, and the model of a harness run.

A session (``validate/calibrate_kafka.py``'s ``measure``) writes each kept run's CSV;
:func:`read_measurements` reads them back as :class:`Measured`, a configuration's runs
beside the fit runs paired with them. The messages a run is judged on leave out those the
host stalled (:data:`STALL_S`, :func:`kept`).

What is fitted, and on what: per client, only its ``lingerL0-p1`` configuration
(``linger0-p1-sparse``, ``franz-go-linger0-p1-sparse``, ``java-linger0-p1-sparse``: no
linger, no outer batcher, one partition; one fit per run, and each configuration's run k is
predicted from its client's fit run measured just before it, see
:func:`~validate.calibrate_kafka.measure`; messages the host stalled are left out, see
``STALL_S``), where a message's time is the broker append plus the consumer fetch and nothing else:

* ``append_ms`` = median of (first sign of the append - handed to the client), the first sign
  being the delivery report or the consumption, whichever came first (franz-go runs its
  promise callbacks after the consumer can already see the record); ``append_ratios`` =
  every measured value / median (the measured spread, each value with its own weight);
* ``fetch_ms`` = median of (consume - first sign), ``fetch_ratios`` likewise, floored at
  10 us (a fetch cannot take no time).

These are system parameters of each client on this machine: its own request path (Java's
acks=all with the idempotent producer, franz-go's snappy compression and promise goroutines,
librdkafka's broker thread) and its consumer. Everything else (lingers, partitions, the outer
batcher and its timer) is a prediction of the model from the client's semantics
(``semantics`` = the client, its source-read rules in simbatch/kafka/) and those parameters;
no configuration has its own correction. librdkafka's fit is ``models/kafka-loopback.toml``
(the one the R2 scenarios load), the others ``models/kafka-loopback-franz-go.toml`` and
``models/kafka-loopback-java.toml``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from validate.kafka_grid import CONFIGS, CPU_CONFIGS, FIT
from validate.kafka_harness import HarnessConfig, scheduled_gaps_s, undisturbed

RATIO_FLOOR_S = 1e-5
# Host stalls. The shared 2-vCPU VM deschedules the harness process now and then (steal time;
# measured here: 10-75 ms, on up to half of a run's messages in a noisy minute), freezing its
# consumer and delivery-report threads: a stalled message's latency measures the VM, not
# Kafka (p99 44-60 ms against 17 predicted and 13-16 measured in quiet runs). The harness
# records, per message, the longest stall overlapping its flight (feed lateness and the 1 ms
# poller's stalls). A message stalled longer than STALL_S is left out of the percentiles on
# both sides: the model's run follows the same schedule, so message i is the same message
# there and is left out too. Stalls up to STALL_S are kept: they include waits for the GIL
# (5 ms switch interval) while the real-code outer batcher flushes, part of what is measured.
STALL_S = 0.010


@dataclass(frozen=True)
class Fitted:
    append_ms: float
    append_ratios: tuple[float, ...]
    fetch_ms: float
    fetch_ratios: tuple[float, ...]

    @classmethod
    def from_model(cls, model: dict) -> Fitted:
        """The fit a models/ file holds (its ``[producer]`` and ``[consumer]``, read)."""
        return cls(model["producer"]["append_ms"], tuple(model["producer"]["append_ratios"]),
                   model["consumer"]["fetch_ms"], tuple(model["consumer"]["fetch_ratios"]))


def percentile(latency: np.ndarray, p: float) -> float:
    """The published rule: ``sorted[floor((n - 1) p)]``."""
    lat = np.sort(latency[np.isfinite(latency)])
    return float(lat[int((lat.size - 1) * p)])


def kept(rec: np.ndarray) -> np.ndarray:
    """The messages a run is judged on (see STALL_S)."""
    return undisturbed(rec, STALL_S)


def run_percentile(runs: list[np.ndarray], p: float,
                   of: Callable[[np.ndarray], np.ndarray] = lambda r: r["latency_s"]) -> float:
    """Median over runs of each run's percentile of its kept messages' latency (or of what
    ``of`` gives per message)."""
    return float(np.median([percentile(of(r)[kept(r)], p) for r in runs]))


def _spread(values: np.ndarray) -> tuple[float, tuple[float, ...]]:
    """(median ms, every measured value / median, sorted): the empirical distribution, each
    value with its own weight. Not a 100-point quantile grid, which gives a run's largest
    value 1 % of the mass where it had 1/200: right at the p99 the runs are judged on."""
    values = np.maximum(values[np.isfinite(values)], RATIO_FLOOR_S)
    median = float(np.median(values))
    return median * 1e3, tuple(round(float(x), 4) for x in np.sort(values) / median)


def fit_runs(runs: list[np.ndarray]) -> list[Fitted]:
    """One fit per run of the linger-0, one-partition configuration (see :func:`fit`)."""
    return [fit([r]) for r in runs]


def fit(runs: list[np.ndarray]) -> Fitted:
    """Fit broker append and consumer fetch on the linger-0, one-partition configuration's
    typical run: the one whose p99 is the median of the runs (the parameters written to the
    models/ file). A broker or VM pause is a clustered event in one run, not per-message
    jitter, so pooling runs would turn one run's pause into an every-request tail."""
    p99 = [percentile(r["latency_s"][kept(r)], 0.99) for r in runs]
    whole = runs[int(np.argsort(p99)[len(p99) // 2])]
    rec = whole[kept(whole)]
    first_sign = np.fmin(rec["ack_s"], rec["consume_s"])
    append_ms, append_ratios = _spread(first_sign - rec["produce_s"])
    fetch_ms, fetch_ratios = _spread(rec["consume_s"] - first_sign)
    return Fitted(append_ms, append_ratios, fetch_ms, fetch_ratios)


def producer_settings(client: str, cfg: HarnessConfig) -> dict:
    """The model's ``[producer]`` for a harness run: the client's semantics and the settings
    its harness gives it (validate/kafka_harness.py, franzgo/main.go, javaproducer)."""
    if client == "librdkafka":
        return {"semantics": "librdkafka", "batch_num_messages": cfg.batch_num_messages,
                "batch_max_bytes": cfg.batch_size_bytes, "max_buffered_records": 100_000}
    if client == "franz-go":       # teranode's options: 1 MiB batches, 10000 buffered, 1 in flight
        return {"semantics": "franz-go", "batch_max_bytes": 1_048_576,
                "max_buffered_records": 10_000, "max_inflight_per_broker": 1}
    # kafka-clients 3.9.1 defaults: batch.size 16384, 5 in flight, 32 MiB of buffer memory
    return {"semantics": "java", "java_version": "3", "max_buffered_records": 100_000}


def model_case(name: str, cfg: HarnessConfig, fitted: Fitted, broker: dict | None = None,
               gc: dict | None = None, n_brokers: int = 1):
    """The model of configuration ``cfg``: its client's semantics and harness settings, its
    keys (``k-<name>-<i>``, the harness's label), its feed replaying the harness's schedule
    (``feed = "trace"``, the seeded gaps every run of the harness follows), on a cluster of
    ``n_brokers`` with the topic's ``replication`` (``[broker] replicas``)."""
    import simbatch.kafka as sk

    return sk.KafkaCase(
        name=name,
        workload=sk.KafkaWorkload(n_messages=cfg.n_messages, message_bytes=cfg.message_bytes,
                                  feed="trace",
                                  gaps_ms=tuple(scheduled_gaps_s(cfg)[:-1] * 1e3)),
        outer=sk.OuterBatcherConfig(linger_ms=cfg.outer_linger_ms, timer=cfg.outer_timer,
                                    max_batch=cfg.outer_max_batch),
        producer=sk.KafkaProducerConfig(
            linger_ms=cfg.linger_ms, n_partitions=cfg.n_partitions, n_brokers=n_brokers,
            append_ms=fitted.append_ms, append_ratios=fitted.append_ratios,
            **producer_settings(cfg.client, cfg)),
        consumer=sk.ConsumerConfig(fetch_ms=fitted.fetch_ms, fetch_ratios=fitted.fetch_ratios),
        broker=sk.BrokerConfig(**{**(broker or {}), **(
            {"replicas": cfg.replication} if cfg.replication > 1 else {})}),
        gc=sk.GcConfig(**(gc or {})))


def consume_after_ack(runs: list[np.ndarray]) -> float:
    """Median over runs of each run's median consume minus ack time (its kept messages):
    where the consumer reads a record against its producer's ack."""
    return float(np.median([np.median((r["consume_s"] - r["ack_s"])[kept(r)]) for r in runs]))


@dataclass
class Measured:
    """A configuration's kept runs and, for each, the fitted configuration's run measured
    just before it (for the fitted configuration itself: its own runs)."""

    runs: list[np.ndarray]
    fit_runs: list[np.ndarray]
    cpu_fit_runs: list[np.ndarray] | None = None    # CPU_FIT's, for a CPU configuration


def read_measurements(out_dir: Path, names=None) -> dict[str, Measured]:
    """What :func:`~validate.calibrate_kafka.measure` wrote in ``out_dir`` (the configurations
    ``names``, default every configuration with a run there)."""
    from validate.kafka_harness import read_csv

    wanted = list(CONFIGS) if names is None else list(names)
    results = {}
    for name in wanted:
        runs = sorted(out_dir.glob(f"{name}.run[0-9].csv"))
        if not runs and names is None:
            continue
        fits = [p.with_name(p.stem + ".fit.csv") for p in runs]
        is_fit = name in FIT.values()
        if name in CPU_CONFIGS:
            fits += [p.with_name(p.stem + ".cpufit.csv") for p in runs]
        missing = [str(f) for f in ([] if is_fit else fits) if not f.exists()]
        if not runs or missing:
            why = (f" paired with a fit run ({missing[0]} is missing: measured before runs "
                   "were paired?)" if missing else "")
            raise SystemExit(f"{out_dir}: no measurements of {name}{why}; measure again "
                             "without --from-csv")
        cpu_fits = ([read_csv(p.with_name(p.stem + ".cpufit.csv")) for p in runs]
                    if name in CPU_CONFIGS else None)
        results[name] = Measured([read_csv(p) for p in runs],
                                 [read_csv(p if is_fit else f)
                                  for p, f in zip(runs, fits[:len(runs)], strict=True)],
                                 cpu_fits)
    if not results:
        raise SystemExit(f"{out_dir}: no measurements; measure again without --from-csv")
    return results
