"""Check a recommendation's leading candidates on the real system: ``simbatch recommend
QUESTION.toml --verify``.

For a Kafka question, each candidate configuration is run by the real client's harness
(validate/kafka_harness.py: librdkafka through confluent-kafka, franz-go, the Java producer)
against a broker: the user's (``SIMBATCH_KAFKA_BOOTSTRAP``) or one started here on loopback
(validate/kafka_broker.py). The candidate is measured in ``repeats`` runs and predicted by the
same procedure the calibration suite uses (validate/calibrate_kafka.py): the model follows the
harness's feed schedule, leaves out the messages the host stalled on both sides, and judges
the median over runs of each run's percentile, with the tolerance the suite uses for its
configurations near the broker's limits: 25 %, or 5 ms where the measured figure is under
20 ms (:func:`within`). A metric constraint of the question (e.g. ``latency_p99_s <=
0.050``) is checked on the measurement too.

Aerospike questions would be verified against the server named by
``SIMBATCH_AEROSPIKE_HOST``; no shipped question is one, so only Kafka is wired here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from simbatch.core.errors import ConfigError


@dataclass
class Verified:
    """One candidate measured beside predicted."""

    params: dict[str, Any]
    measured: dict[str, float]
    predicted: dict[str, float]
    within: dict[str, bool]
    constraints: dict[str, bool]

    @property
    def ok(self) -> bool:
        return all(self.within.values()) and all(self.constraints.values())


def within(predicted: float, measured: float) -> bool:
    """25 %, or 5 ms where the measured figure is under 20 ms."""
    allowed = 0.25 * measured
    if measured < 0.020:
        allowed = max(allowed, 0.005)
    return abs(predicted - measured) <= allowed


def harness_config(case: Any, label: str) -> Any:
    """The harness run of a Kafka case (what the harness can express; the rest refused)."""
    from validate.kafka_harness import HarnessConfig

    wl, outer, producer = case.workload, case.outer, case.producer
    if wl.feed not in ("periodic", "poisson"):
        raise ConfigError.parameter("--verify", "workload.feed", "'periodic' or 'poisson' (what "
                                    "the harness feeds)", wl.feed)
    return HarnessConfig(client=producer.semantics, n_messages=wl.n_messages, feed=wl.feed,
                         interval_ms=wl.interval_ms, message_bytes=wl.message_bytes,
                         n_partitions=producer.n_partitions, linger_ms=producer.linger_ms,
                         outer_linger_ms=outer.linger_ms, outer_timer=outer.timer,
                         outer_max_batch=outer.max_batch,
                         batch_num_messages=producer.batch_num_messages,
                         batch_size_bytes=producer.batch_max_bytes, label=label)


def _predict(case: Any, cfg: Any, masks: list[np.ndarray], per_run: int = 9
             ) -> dict[str, float]:
    from simbatch.core.streams import replication_seed
    from simbatch.kafka import simulate
    from validate.kafka_fit import percentile
    from validate.kafka_harness import scheduled_gaps_s

    traced = dataclasses.replace(case, name=cfg.label, workload=dataclasses.replace(
        case.workload, feed="trace", gaps_ms=tuple(scheduled_gaps_s(cfg)[:-1] * 1e3)))
    figures: dict[str, list[float]] = {"latency_p50_s": [], "latency_p99_s": []}
    for k, mask in enumerate(masks):
        runs = [simulate(traced, replication_seed(1, k * per_run + r)).latency_s[mask]
                for r in range(per_run)]
        figures["latency_p50_s"].append(float(np.median([percentile(x, 0.5) for x in runs])))
        figures["latency_p99_s"].append(float(np.median([percentile(x, 0.99) for x in runs])))
    return {m: float(np.median(v)) for m, v in figures.items()}


def verify(recommendation: Any, top: int = 2, repeats: int = 3,
           bootstrap: str | None = None) -> list[Verified]:
    """Measure the recommendation and the next best (``top`` in all) on the real system."""
    from validate.kafka_broker import KafkaBroker
    from validate.kafka_fit import kept
    from validate.kafka_harness import run, user_bootstrap

    q = recommendation.question
    if q.scenario.kind != "kafka":
        raise ConfigError.parameter("--verify", "question", "a Kafka question (the only real "
                                    "system --verify can reach here)", q.scenario.kind)
    candidates = [recommendation.chosen, *recommendation.alternatives][:top]
    bootstrap = bootstrap or user_bootstrap()
    broker = None
    if bootstrap is None:
        broker = KafkaBroker()
        bootstrap = broker.__enter__().bootstrap
    try:
        out = []
        for i, cand in enumerate(candidates):
            cfg = harness_config(cand.case, f"verify{i}")
            runs = [run(bootstrap, cfg) for _ in range(repeats)]
            masks = [kept(r) for r in runs]
            measured = {"latency_p50_s": float(np.median(
                            [np.quantile(r["latency_s"][m], 0.5, method="lower")
                             for r, m in zip(runs, masks)])),
                        "latency_p99_s": float(np.median(
                            [np.quantile(r["latency_s"][m], 0.99, method="lower")
                             for r, m in zip(runs, masks)]))}
            predicted = _predict(cand.case, cfg, masks)
            out.append(Verified(
                params=dict(cand.params), measured=measured, predicted=predicted,
                within={m: within(predicted[m], measured[m]) for m in measured},
                constraints={str(c): c.holds(measured[c.name])
                             for c in q.metric_constraints if c.name in measured}))
        return out
    finally:
        if broker is not None:
            broker.__exit__(None, None, None)


def markdown(results: list[Verified]) -> str:
    """Measured beside predicted, per candidate and metric."""
    lines = ["| configuration | metric | measured | predicted | error | within | "
             "constraints on the measurement |", "|---|---|---:|---:|---:|---|---|"]
    for v in results:
        conf = ", ".join(f"{k} = {x}" for k, x in v.params.items())
        cons = ", ".join(f"`{c}` {'yes' if ok else 'NO'}" for c, ok in v.constraints.items())
        for metric in v.measured:
            m, p = v.measured[metric], v.predicted[metric]
            lines.append(f"| {conf} | {metric} | {m * 1e3:.2f} ms | {p * 1e3:.2f} ms | "
                         f"{(p - m) / m:+.0%} | {'yes' if v.within[metric] else 'NO'} | "
                         f"{cons} |")
    return "\n".join(lines)
