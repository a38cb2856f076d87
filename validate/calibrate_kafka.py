"""Kafka calibration: measure configurations on a real broker, fit, predict, compare.

``python validate/calibrate_kafka.py [--out-dir DIR] [--model FILE] [--from-csv]``
starts a broker (validate/kafka_broker.py), warms it up with a discarded load, measures every
configuration in :data:`CONFIGS` until it has ``REPEATS`` quiet runs, serially (nothing else
runs beside them; noisy runs of the shared VM are re-measured, see ``STEAL_MAX``), writes one
CSV per kept run, fits the model's broker and consumer parameters, writes the
``models/`` file with provenance, and prints measured beside predicted p50 / p99.

What is fitted, and on what: only the ``linger0-p1-sparse`` configuration (no linger, no
outer batcher, one partition; one fit per run, see :func:`fit`; messages the host stalled
are left out, see ``STALL_S``), where a message's time is the broker append plus the
consumer fetch and nothing else:

* ``append_ms`` = median of (ack - handed to the client), ``append_ratios`` = its 100
  half-percentile points / median (the measured spread);
* ``fetch_ms`` = median of (consume - ack), ``fetch_ratios`` likewise. A message consumed
  before its delivery report ran (thread scheduling) counts as 10 us: a floor for the
  ratio, since a fetch cannot take no time.

Every other configuration (lingers 10 and 100 ms, 8 and 32 partitions, the stacked outer
batcher, the dense feed) is a prediction of the model (``semantics = "librdkafka"``, the
client confluent-kafka wraps) from those parameters.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from kafka_harness import HarnessConfig, run, scheduled_gaps_s, undisturbed  # noqa: E402

FIT_CONFIG = "linger0-p1-sparse"
CONFIGS: dict[str, HarnessConfig] = {
    FIT_CONFIG: HarnessConfig(n_messages=200, interval_ms=25, linger_ms=0, n_partitions=1),
    "linger10-p8-sparse": HarnessConfig(n_messages=200, interval_ms=25, linger_ms=10,
                                        n_partitions=8),
    "linger100-p32-sparse": HarnessConfig(n_messages=200, interval_ms=25, linger_ms=100,
                                          n_partitions=32),
    "linger100-p1-sparse": HarnessConfig(n_messages=200, interval_ms=25, linger_ms=100,
                                         n_partitions=1),
    "outer10-linger10-p32-sparse": HarnessConfig(n_messages=200, interval_ms=25, linger_ms=10,
                                                 n_partitions=32, outer_linger_ms=10),
    # One partition keeps the broker below CPU saturation: 500 msg/s over 8 partitions
    # with linger 10 ms is ~800 produce requests/s, and on a 2-vCPU machine the broker JVM
    # then burns ~1.8 CPUs and stalls acks by 100-300 ms; the model has no broker CPU yet.
    "linger10-p1-dense": HarnessConfig(n_messages=600, feed="poisson", interval_ms=2,
                                       linger_ms=10, n_partitions=1),
    "outer10-linger10-p8-dense": HarnessConfig(n_messages=300, feed="poisson", interval_ms=2,
                                               linger_ms=10, n_partitions=8,
                                               outer_linger_ms=10),
}
RATIO_FLOOR_S = 1e-5
# Each configuration is measured in REPEATS serial runs and judged by the median of the
# per-run percentiles (the p99 of one 200-message run is its 2nd-largest value). The prediction
# follows the same procedure: the model's run k draws its noise from fit run k and follows the
# harness's feed schedule, and the median is taken over runs.
REPEATS = 3
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
# Steal. The hypervisor also takes CPU from the broker, which the harness's stalls do not
# show: measured here, linger10-p8-sparse p99 14.5-17.6 ms in quiet runs (predicted 15-17)
# and 20-24 ms in runs where 7-33 % of the VM's CPU time was stolen (/proc/stat).
# A run with more than NOISY_SHARE of its messages left out, or more than STEAL_MAX of its CPU
# time stolen, is noisy: it is measured again, after a pause so that a noisy period can pass,
# up to MAX_ATTEMPTS runs per configuration; the REPEATS least noisy runs are kept, and every
# discard is reported.
NOISY_SHARE = 0.10
STEAL_MAX = 0.05
MAX_ATTEMPTS = 8
NOISY_PAUSE_S = 3.0
# A fresh broker JVM stalls acks by 100-300 ms while its produce path is cold (measured: the
# first configuration on a new broker had p99 241 ms against 10-24 ms once warm). This
# discarded load runs before any measured configuration (cf. KIP-1052's warm-up option).
WARMUP = HarnessConfig(n_messages=1500, feed="poisson", interval_ms=1, linger_ms=5,
                       n_partitions=8, warmup_s=0.5)


@dataclass(frozen=True)
class Fitted:
    append_ms: float
    append_ratios: tuple[float, ...]
    fetch_ms: float
    fetch_ratios: tuple[float, ...]


def percentile(latency: np.ndarray, p: float) -> float:
    """The published rule: ``sorted[floor((n - 1) p)]``."""
    lat = np.sort(latency[np.isfinite(latency)])
    return float(lat[int((lat.size - 1) * p)])


def kept(rec: np.ndarray) -> np.ndarray:
    """The messages a run is judged on (see STALL_S)."""
    return undisturbed(rec, STALL_S)


def stalled_share(rec: np.ndarray) -> float:
    return float(1.0 - kept(rec).mean())


def steal_share(rec: np.ndarray) -> float:
    v = rec["steal_share"][np.isfinite(rec["steal_share"])]
    return float(v[0]) if v.size else 0.0


def noise(rec: np.ndarray) -> float:
    """Above 1: a noisy run (see NOISY_SHARE and STEAL_MAX)."""
    return max(stalled_share(rec) / NOISY_SHARE, steal_share(rec) / STEAL_MAX)


def run_percentile(runs: list[np.ndarray], p: float) -> float:
    """Median over runs of each run's percentile of its kept messages."""
    return float(np.median([percentile(r["latency_s"][kept(r)], p) for r in runs]))


def _spread(values: np.ndarray) -> tuple[float, tuple[float, ...]]:
    values = np.maximum(values[np.isfinite(values)], RATIO_FLOOR_S)
    median = float(np.median(values))
    q = (np.arange(100) + 0.5) / 100
    return median * 1e3, tuple(round(float(x), 4) for x in np.quantile(values, q) / median)


def fit_runs(runs: list[np.ndarray]) -> list[Fitted]:
    """One fit per run of the linger-0, one-partition configuration (see :func:`fit`)."""
    return [fit([r]) for r in runs]


def fit(runs: list[np.ndarray]) -> Fitted:
    """Fit broker append and consumer fetch on the linger-0, one-partition configuration's
    typical run: the one whose p99 is the median of the runs (the parameters written to the
    models/ file). A broker or VM pause is a clustered event in one run, not per-message
    jitter, so pooling runs would turn one run's pause into an every-request tail."""
    p99 = [percentile(r["latency_s"][kept(r)], 0.99) for r in runs]
    rec = runs[int(np.argsort(p99)[len(p99) // 2])]
    rec = rec[kept(rec)]
    append_ms, append_ratios = _spread(rec["ack_s"] - rec["produce_s"])
    fetch_ms, fetch_ratios = _spread(rec["consume_s"] - rec["ack_s"])
    return Fitted(append_ms, append_ratios, fetch_ms, fetch_ratios)


def model_case(name: str, cfg: HarnessConfig, fitted: Fitted):
    """The model of configuration ``cfg``: its feed replays the harness's schedule
    (``feed = "trace"``, the seeded gaps every run of the harness follows)."""
    from simbatch.kafka_producer import KafkaProducerConfig
    from simbatch.kafka_sim import ConsumerConfig, KafkaCase, KafkaWorkload
    from simbatch.outer_batcher import OuterBatcherConfig

    return KafkaCase(
        name=name,
        workload=KafkaWorkload(n_messages=cfg.n_messages, message_bytes=cfg.message_bytes,
                               feed="trace",
                               gaps_ms=tuple(scheduled_gaps_s(cfg)[:-1] * 1e3)),
        outer=OuterBatcherConfig(linger_ms=cfg.outer_linger_ms, max_batch=cfg.outer_max_batch),
        producer=KafkaProducerConfig(
            semantics="librdkafka", linger_ms=cfg.linger_ms, n_partitions=cfg.n_partitions,
            batch_num_messages=cfg.batch_num_messages, batch_max_bytes=cfg.batch_size_bytes,
            max_buffered_records=100_000, max_inflight_per_broker=1_000_000,
            append_ms=fitted.append_ms, append_ratios=fitted.append_ratios),
        consumer=ConsumerConfig(fetch_ms=fitted.fetch_ms, fetch_ratios=fitted.fetch_ratios))


def predict(name: str, cfg: HarnessConfig, fitted: list[Fitted], masks: list[np.ndarray],
            per_run: int = 3) -> dict:
    """The measurement procedure in the model: simulated run k follows the harness's feed
    schedule and draws its noise from fit run k (pooled over ``per_run`` replications); each
    figure is the median over runs. Following the very schedule matters where one run holds
    few flushes: the dense feed through a 10 ms debounce flushes only on a gap above 10 ms
    (e^-5 of gaps at 500 msg/s), two or three times per 300-message run, so its percentiles
    follow the particular draw of gaps more than the model (outer10-linger10-p8-dense p50:
    -20 % with the model's own draw, -1 % with the schedule). The schedule, not the recorded
    publish times: when the VM pauses the harness, the feed publishes late but the real
    debounce timer is paused with it, so a recorded gap is not a gap the batcher saw.
    ``masks[k]``: the messages measured run k is judged on; the same are kept here."""
    from simbatch.kafka_sim import simulate_kafka

    figures: dict[str, list[float]] = {"p50": [], "p99": []}
    for k, (f, mask) in enumerate(zip(fitted, masks, strict=True)):
        case = model_case(name, cfg, f)
        lat = np.concatenate([simulate_kafka(case, 1, replication=k * per_run + r).latency_s[mask]
                              for r in range(per_run)])
        figures["p50"].append(percentile(lat, 0.5))
        figures["p99"].append(percentile(lat, 0.99))
    return {q: float(np.median(v)) for q, v in figures.items()}


def within(predicted: float, measured: float) -> bool:
    """Issue 3's tolerance: 25 %, or 5 ms where the measured figure is under 20 ms."""
    allowed = 0.25 * measured
    if measured < 0.020:
        allowed = max(allowed, 0.005)
    return abs(predicted - measured) <= allowed


DISCARDED: dict[str, list[tuple[float, float]]] = {}
KEPT: dict[str, list[tuple[float, float]]] = {}


def measure(bootstrap: str, out_dir: Path, repeats: int = REPEATS) -> dict[str, list]:
    """Every configuration until ``repeats`` quiet runs (at most MAX_ATTEMPTS), serially; one
    CSV per kept run; (stalled, stolen) shares of discarded and kept runs go to DISCARDED, KEPT.

    The fitted configuration is measured once between every two others as well, and its
    quietest runs are kept: every prediction rests on it, so one noisy minute must not be
    all it sees (measured: 8 consecutive attempts right after the broker's start had 17-21 %
    of the CPU stolen, and their fit predicted a p99 5 ms too high where the others were
    quiet)."""
    from kafka_harness import write_csv

    out_dir.mkdir(parents=True, exist_ok=True)
    run(bootstrap, WARMUP)
    DISCARDED.clear()
    KEPT.clear()
    attempts: dict[str, list] = {name: [] for name in CONFIGS}

    def quiet(name):
        return sum(noise(r) <= 1 for r in attempts[name])

    def attempt(name):
        rec = run(bootstrap, CONFIGS[name])
        attempts[name].append(rec)
        if noise(rec) > 1:
            time.sleep(NOISY_PAUSE_S)

    others = [name for name in CONFIGS if name != FIT_CONFIG]
    for name in others:
        attempt(FIT_CONFIG)
        while quiet(name) < repeats and len(attempts[name]) < MAX_ATTEMPTS:
            attempt(name)
    while quiet(FIT_CONFIG) < repeats and len(attempts[FIT_CONFIG]) < len(others) + MAX_ATTEMPTS:
        attempt(FIT_CONFIG)
    results: dict[str, list] = {}
    for name in CONFIGS:
        runs = sorted(attempts[name], key=noise)     # stable: quiet runs first, in order
        DISCARDED[name] = [(stalled_share(r), steal_share(r)) for r in runs[repeats:]]
        KEPT[name] = [(stalled_share(r), steal_share(r)) for r in runs[:repeats]]
        results[name] = runs[:repeats]
        for k, rec in enumerate(results[name]):
            write_csv(rec, out_dir / f"{name}.run{k}.csv")
    return results


def read_csv(path: Path) -> np.ndarray:
    from kafka_harness import COLUMNS

    data = np.genfromtxt(path, delimiter=",", names=True, dtype=float)
    rec = np.full(data.size, np.nan, dtype=[(c, "f8") for c in COLUMNS])
    for c in COLUMNS:                  # a column an older harness did not write stays NaN
        if c in data.dtype.names:
            rec[c] = data[c]
    return rec


def compare(results: dict[str, list], fitted: list[Fitted]) -> list[dict]:
    rows = []
    for name, runs in results.items():
        pred = predict(name, CONFIGS[name], fitted, [kept(r) for r in runs])
        for q, p in (("p50", 0.5), ("p99", 0.99)):
            measured = run_percentile(runs, p)
            rows.append({"config": name, "metric": q, "measured_s": measured,
                         "predicted_s": pred[q], "ok": within(pred[q], measured),
                         "fitted_on": name == FIT_CONFIG})
    return rows


def table(rows: list[dict]) -> str:
    def shares(runs):
        return ", ".join(f"{a:.0%}/{b:.0%}" for a, b in runs)

    notes = [f"{name}: messages stalled > {STALL_S * 1e3:g} ms (left out) / CPU stolen, kept "
             f"runs {shares(KEPT[name])}" + (f"; discarded as noisy: {shares(d)}" if d else "")
             for name, d in DISCARDED.items()]
    lines = notes + ["| config | metric | measured ms | predicted ms | error | within |",
             "|---|---|---:|---:|---:|---|"]
    for r in rows:
        err = r["predicted_s"] / r["measured_s"] - 1
        tag = " (fit)" if r["fitted_on"] else ""
        lines.append(f"| {r['config']}{tag} | {r['metric']} | {r['measured_s'] * 1e3:.2f} | "
                     f"{r['predicted_s'] * 1e3:.2f} | {err:+.0%} | {'yes' if r['ok'] else 'NO'} |")
    return "\n".join(lines)


def provenance(kafka_version: str) -> dict[str, str]:
    import confluent_kafka

    cpu = "unknown"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"broker": f"Apache Kafka {kafka_version} (org.apache.kafka:kafka_2.13, KRaft, "
                      "single node, loopback)",
            "client": f"confluent-kafka {confluent_kafka.__version__}, librdkafka "
                      f"{confluent_kafka.libversion()[0]}",
            "machine": f"{platform.platform()}, {os.cpu_count()} CPUs, {cpu}",
            "measured_on": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "settings": f"fitted on {FIT_CONFIG}: {CONFIGS[FIT_CONFIG]}",
            "command": "python validate/calibrate_kafka.py"}


def model_toml(fitted: Fitted, prov: dict[str, str], rows: list[dict]) -> str:
    lines = ["# Kafka broker and consumer parameters on loopback; written by",
             "# validate/calibrate_kafka.py. Do not edit by hand: re-run the command.", "",
             "[provenance]"]
    lines += [f'{k} = "{v}"' for k, v in prov.items()] + ["", "[producer]",
              'semantics = "librdkafka"', f"append_ms = {fitted.append_ms:.4f}",
              "append_ratios = [" + ", ".join(f"{r:g}" for r in fitted.append_ratios) + "]",
              "", "[consumer]", f"fetch_ms = {fitted.fetch_ms:.4f}",
              "fetch_ratios = [" + ", ".join(f"{r:g}" for r in fitted.fetch_ratios) + "]", "",
              "# measured beside predicted in the same run (seconds)"]
    for r in rows:
        lines.append(f"# {r['config']} {r['metric']}: measured {r['measured_s']:.4f} "
                     f"predicted {r['predicted_s']:.4f}")
    return "\n".join(lines) + "\n"


def main() -> None:
    from kafka_broker import KAFKA_VERSION, KafkaBroker

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=str(HERE / "measurements"))
    parser.add_argument("--model", default=str(HERE.parent / "models/kafka-loopback.toml"))
    parser.add_argument("--from-csv", action="store_true",
                        help="re-fit and re-predict from the CSVs in --out-dir, no broker")
    args = parser.parse_args()
    if args.from_csv:
        results = {name: [read_csv(p) for p in sorted(Path(args.out_dir).glob(f"{name}.run*.csv"))]
                   for name in CONFIGS}
    else:
        with KafkaBroker() as broker:
            results = measure(broker.bootstrap, Path(args.out_dir))
    rows = compare(results, fit_runs(results[FIT_CONFIG]))
    Path(args.model).write_text(model_toml(fit(results[FIT_CONFIG]), provenance(KAFKA_VERSION),
                                           rows))
    print(table(rows))
    print(f"wrote {args.model} and {len(results)} CSVs in {args.out_dir}")


if __name__ == "__main__":
    main()
