"""Kafka calibration: measure configurations on a real broker, fit, predict, compare.

``python -m validate.calibrate_kafka [--out-dir DIR] [--model FILE] [--from-csv]``
starts a broker (validate/kafka_broker.py), warms it up with a discarded load, measures every
configuration in :data:`CONFIGS`, each run just after a run of the fitted configuration, until
it has ``REPEATS`` quiet pairs, serially (nothing else runs beside them; noisy runs of the
shared VM are re-measured, see ``STEAL_MAX``), writes one CSV per kept run, fits the model's
broker and consumer parameters, writes the ``models/`` file with provenance, and prints
measured beside predicted p50 / p99.

What is fitted, and on what: only the ``linger0-p1-sparse`` configuration (no linger, no
outer batcher, one partition; one fit per run, and each configuration's run k is predicted
from the fit run measured just before it, see :func:`measure`; messages the host stalled are
left out, see ``STALL_S``), where a message's time is the broker append plus the
consumer fetch and nothing else:

* ``append_ms`` = median of (ack - handed to the client), ``append_ratios`` = every
  measured value / median (the measured spread, each value with its own weight);
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
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from validate.kafka_harness import HarnessConfig, run, scheduled_gaps_s, undisturbed

HERE = Path(__file__).resolve().parent

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
    # 3000 messages: a run's p99 rests on its ~30 slowest messages, some 10 batches (one
    # request carries ~5 messages here); with 600 it rested on one or two broker pauses
    # (measured: 13.2-15.7 ms here, 18.2 ms in a CI run whose fit predicted 12.5 ms).
    "linger10-p1-dense": HarnessConfig(n_messages=3000, feed="poisson", interval_ms=2,
                                       linger_ms=10, n_partitions=1),
    "outer10-linger10-p8-dense": HarnessConfig(n_messages=300, feed="poisson", interval_ms=2,
                                               linger_ms=10, n_partitions=8,
                                               outer_linger_ms=10),
}
RATIO_FLOOR_S = 1e-5
# Each configuration is measured in REPEATS serial runs and judged by the median of the
# per-run percentiles (the p99 of one 200-message run is its 3rd-largest value). The
# prediction follows the same procedure: the model's run k draws its noise from the fit run
# paired with measured run k and follows the harness's feed schedule, and the median is
# taken over runs (see :func:`predict`).
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
# time stolen, is noisy, and so is a pair (see :func:`measure`) with a noisy run: it is measured
# again. A first pass gives each configuration up to
# FIRST_PASS attempts; the configurations still short of quiet pairs are then retried in turn,
# one attempt each round, until RETRY_BUDGET_S has passed or MAX_ATTEMPTS are spent, so that
# the retries of one configuration are spread over minutes, not crowded into one noisy one
# (a CI run kept a run with over half its messages stalled after 8 back-to-back attempts).
# The REPEATS least noisy runs are kept, and every discard is reported.
NOISY_SHARE = 0.10
STEAL_MAX = 0.05
FIRST_PASS = 4
MAX_ATTEMPTS = 12
RETRY_BUDGET_S = 420.0
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
    rec = runs[int(np.argsort(p99)[len(p99) // 2])]
    rec = rec[kept(rec)]
    append_ms, append_ratios = _spread(rec["ack_s"] - rec["produce_s"])
    fetch_ms, fetch_ratios = _spread(rec["consume_s"] - rec["ack_s"])
    return Fitted(append_ms, append_ratios, fetch_ms, fetch_ratios)


def model_case(name: str, cfg: HarnessConfig, fitted: Fitted):
    """The model of configuration ``cfg``: its feed replays the harness's schedule
    (``feed = "trace"``, the seeded gaps every run of the harness follows)."""
    from simbatch.kafka import (
        ConsumerConfig,
        KafkaCase,
        KafkaProducerConfig,
        KafkaWorkload,
        OuterBatcherConfig,
    )

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
            per_run: int = 9) -> dict:
    """The measurement procedure in the model: simulated run k follows the harness's feed
    schedule and draws its noise from fit run k; its figure is the median over ``per_run``
    simulated runs of their own percentiles, and each figure is the median over k.

    The same statistic on both sides: measured is the median over runs of one run's p99 (the
    3rd largest of 200 messages), and a rare delay at about 1 % of messages (a 13-20 ms fetch,
    one or two in a run) puts that p99 on a cliff, either ~2 ms or ~13 ms. Pooling the
    simulated runs instead (the p99 of 600 values) lands on the cliff far more often than a
    median does: a CI run's fit row predicted 8.2 ms against 1.7 measured that way.

    Following the very schedule matters where one run holds
    few flushes: the dense feed through a 10 ms debounce flushes only on a gap above 10 ms
    (e^-5 of gaps at 500 msg/s), two or three times per 300-message run, so its percentiles
    follow the particular draw of gaps more than the model (outer10-linger10-p8-dense p50:
    -20 % with the model's own draw, -1 % with the schedule). The schedule, not the recorded
    publish times: when the VM pauses the harness, the feed publishes late but the real
    debounce timer is paused with it, so a recorded gap is not a gap the batcher saw.
    ``masks[k]``: the messages measured run k is judged on; the same are kept here."""
    from simbatch.core.streams import replication_seed
    from simbatch.kafka import simulate as simulate_kafka

    figures: dict[str, list[float]] = {"p50": [], "p99": []}
    for k, (f, mask) in enumerate(zip(fitted, masks, strict=True)):
        case = model_case(name, cfg, f)
        runs = [simulate_kafka(case, replication_seed(1, k * per_run + r)).latency_s[mask]
                for r in range(per_run)]
        figures["p50"].append(float(np.median([percentile(lat, 0.5) for lat in runs])))
        figures["p99"].append(float(np.median([percentile(lat, 0.99) for lat in runs])))
    return {q: float(np.median(v)) for q, v in figures.items()}


def within(predicted: float, measured: float) -> bool:
    """Issue 3's tolerance: 25 %, or 5 ms where the measured figure is under 20 ms."""
    allowed = 0.25 * measured
    if measured < 0.020:
        allowed = max(allowed, 0.005)
    return abs(predicted - measured) <= allowed


DISCARDED: dict[str, list[tuple[float, float]]] = {}
KEPT: dict[str, list[tuple[float, float]]] = {}


@dataclass
class Measured:
    """A configuration's kept runs and, for each, the fitted configuration's run measured
    just before it (for the fitted configuration itself: its own runs)."""

    runs: list[np.ndarray]
    fit_runs: list[np.ndarray]


def measure(bootstrap: str, out_dir: Path, repeats: int = REPEATS) -> dict[str, Measured]:
    """Every configuration in pairs, serially: a run of the fitted configuration, then one of
    the configuration, until ``repeats`` quiet pairs (a first pass, then retries in turn, see
    FIRST_PASS). One CSV per kept run (``NAME.runK.csv``) and per the fit run paired with it
    (``NAME.runK.fit.csv``); (stalled, stolen) shares of discarded and kept runs go to
    DISCARDED, KEPT.

    Why pairs: the machine drifts. Every prediction rests on the broker's append and the
    consumer's fetch, and those are measured seconds before the run they predict, under the
    same neighbours (measured: with the fit kept from the quietest of all its runs, a CI run
    predicted linger10-p1-dense p99 12.5 ms against 18.2 measured minutes later, and here
    outer10-linger10-p32-sparse 23.9 against 32.0)."""
    from validate.kafka_harness import write_csv

    out_dir.mkdir(parents=True, exist_ok=True)
    run(bootstrap, WARMUP)
    DISCARDED.clear()
    KEPT.clear()
    others = [name for name in CONFIGS if name != FIT_CONFIG]
    pairs: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {name: [] for name in others}

    def pair_noise(pair):
        return max(noise(pair[0]), noise(pair[1]))

    def quiet(name):
        return sum(pair_noise(pr) <= 1 for pr in pairs[name])

    def attempt(name):
        pairs[name].append((run(bootstrap, CONFIGS[FIT_CONFIG]), run(bootstrap, CONFIGS[name])))
        if pair_noise(pairs[name][-1]) > 1:
            time.sleep(NOISY_PAUSE_S)

    for name in others:
        while quiet(name) < repeats and len(pairs[name]) < FIRST_PASS:
            attempt(name)
    deadline = time.monotonic() + RETRY_BUDGET_S
    while time.monotonic() < deadline:
        short = [name for name in others
                 if quiet(name) < repeats and len(pairs[name]) < MAX_ATTEMPTS]
        if not short:
            break
        for name in short:
            attempt(name)
    results: dict[str, Measured] = {}
    for name in others:
        ranked = sorted(pairs[name], key=pair_noise)     # stable: quiet pairs first, in order
        DISCARDED[name] = [(stalled_share(r), steal_share(r)) for _, r in ranked[repeats:]]
        KEPT[name] = [(stalled_share(r), steal_share(r)) for _, r in ranked[:repeats]]
        results[name] = Measured([r for _, r in ranked[:repeats]],
                                 [f for f, _ in ranked[:repeats]])
        for k, (f, r) in enumerate(ranked[:repeats]):
            write_csv(r, out_dir / f"{name}.run{k}.csv")
            write_csv(f, out_dir / f"{name}.run{k}.fit.csv")
    fit_all = sorted((f for name in others for f, _ in pairs[name]), key=noise)
    DISCARDED[FIT_CONFIG] = [(stalled_share(r), steal_share(r)) for r in fit_all[repeats:]]
    KEPT[FIT_CONFIG] = [(stalled_share(r), steal_share(r)) for r in fit_all[:repeats]]
    results[FIT_CONFIG] = Measured(fit_all[:repeats], fit_all[:repeats])
    for k, rec in enumerate(fit_all[:repeats]):
        write_csv(rec, out_dir / f"{FIT_CONFIG}.run{k}.csv")
    return {name: results[name] for name in CONFIGS}


def read_csv(path: Path) -> np.ndarray:
    from validate.kafka_harness import COLUMNS

    data = np.genfromtxt(path, delimiter=",", names=True, dtype=float)
    rec = np.full(data.size, np.nan, dtype=[(c, "f8") for c in COLUMNS])
    for c in COLUMNS:                  # a column an older harness did not write stays NaN
        if c in data.dtype.names:
            rec[c] = data[c]
    return rec


def read_measurements(out_dir: Path) -> dict[str, Measured]:
    """What :func:`measure` wrote in ``out_dir``."""
    results = {}
    for name in CONFIGS:
        runs = sorted(out_dir.glob(f"{name}.run[0-9].csv"))
        fits = [p.with_name(p.stem + ".fit.csv") for p in runs]
        missing = [str(f) for f in ([] if name == FIT_CONFIG else fits) if not f.exists()]
        if not runs or missing:
            why = (f" paired with a fit run ({missing[0]} is missing: measured before runs "
                   "were paired?)" if missing else "")
            raise SystemExit(f"{out_dir}: no measurements of {name}{why}; measure again "
                             "without --from-csv")
        results[name] = Measured([read_csv(p) for p in runs],
                                 [read_csv(p if name == FIT_CONFIG else f)
                                  for p, f in zip(runs, fits, strict=True)])
    return results


def compare(results: dict[str, Measured]) -> list[dict]:
    """Measured beside predicted; run k of a configuration is predicted from the fit run
    paired with it."""
    rows = []
    for name, m in results.items():
        pred = predict(name, CONFIGS[name], fit_runs(m.fit_runs), [kept(r) for r in m.runs])
        for q, p in (("p50", 0.5), ("p99", 0.99)):
            measured = run_percentile(m.runs, p)
            rows.append({"config": name, "metric": q, "measured_s": measured,
                         "predicted_s": pred[q], "ok": within(pred[q], measured),
                         "fitted_on": name == FIT_CONFIG})
    return rows


def table(rows: list[dict]) -> str:
    def shares(runs):
        return ", ".join(f"{a:.0%}/{b:.0%}" for a, b in runs)

    def note(name, d):
        if not d:
            return ""
        if name == FIT_CONFIG:      # every pair has one; the quietest three are its own rows
            return f"; its {len(d)} other runs were paired with the configurations above"
        return f"; discarded as noisy: {shares(d)}"

    notes = [f"{name}: messages stalled > {STALL_S * 1e3:g} ms (left out) / CPU stolen, kept "
             f"runs {shares(KEPT[name])}" + note(name, d) for name, d in DISCARDED.items()]
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
            "command": "python -m validate.calibrate_kafka"}


def model_toml(fitted: Fitted, prov: dict[str, str], rows: list[dict]) -> str:
    lines = ["# Kafka broker and consumer parameters on loopback; written by",
             "# validate/calibrate_kafka.py. Do not edit by hand: re-run the command.", "",
             "[provenance]"]
    lines += [f'{k} = "{v}"' for k, v in prov.items()] + ["", "[producer]",
              f"append_ms = {fitted.append_ms:.4f}",
              "append_ratios = [" + ", ".join(f"{r:g}" for r in fitted.append_ratios) + "]",
              "", "[consumer]", f"fetch_ms = {fitted.fetch_ms:.4f}",
              "fetch_ratios = [" + ", ".join(f"{r:g}" for r in fitted.fetch_ratios) + "]", "",
              "# measured beside predicted in the same run (seconds)"]
    for r in rows:
        lines.append(f"# {r['config']} {r['metric']}: measured {r['measured_s']:.4f} "
                     f"predicted {r['predicted_s']:.4f}")
    return "\n".join(lines) + "\n"


def main() -> None:
    from validate.kafka_broker import KAFKA_VERSION, KafkaBroker

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=str(HERE / "measurements"))
    parser.add_argument("--model", default=str(HERE.parent / "models/kafka-loopback.toml"))
    parser.add_argument("--from-csv", action="store_true",
                        help="re-fit and re-predict from the CSVs in --out-dir, no broker")
    args = parser.parse_args()
    if args.from_csv:
        results = read_measurements(Path(args.out_dir))
    else:
        with KafkaBroker() as broker:
            results = measure(broker.bootstrap, Path(args.out_dir))
    rows = compare(results)
    prov = provenance(KAFKA_VERSION)
    if args.from_csv:          # the measurements are older than this fit: say when they were taken
        newest = max(p.stat().st_mtime for p in Path(args.out_dir).glob("*.csv"))
        prov["fitted_on"] = prov["measured_on"]
        prov["measured_on"] = dt.datetime.fromtimestamp(newest, dt.timezone.utc).strftime(
            "%Y-%m-%d %H:%M UTC")
        prov["command"] += f" --from-csv --out-dir {args.out_dir}"
    Path(args.model).write_text(model_toml(fit(results[FIT_CONFIG].runs), prov, rows))
    print(table(rows))
    print(f"wrote {args.model}; measurements in {args.out_dir}")


if __name__ == "__main__":
    main()
