"""Kafka calibration: measure configurations on a real broker with each real client, fit,
predict, compare.

``python -m validate.calibrate_kafka [--ci] [--configs A,B] [--out-dir DIR] [--models-dir DIR]
[--from-csv]`` uses the broker named by ``SIMBATCH_KAFKA_BOOTSTRAP=host:port`` (a user's
cluster), else starts the local one (validate/kafka_broker.py); warms it up with a discarded
load; measures every configuration of :data:`CONFIGS` (the full grid: 37 minutes on the
project's 2-vCPU VM, and ~13 more for the dense CPU configurations) or :data:`CI_CONFIGS`
(``--ci``: the subset the test suite runs, validate/test_kafka_calibration.py: 5.3 minutes
before the dense CPU configuration), each run just after a run of its client's
fit configuration, until it has ``REPEATS`` quiet pairs, serially (noisy runs of a shared VM
are re-measured, see ``STEAL_MAX``); writes one CSV per kept run; fits each client's system
parameters; writes the models files with provenance (into models/ for the whole grid; for
``--ci`` or ``--configs``, into ``--out-dir`` unless ``--models-dir`` says otherwise, since
a subset may lack the runs a parameter is fitted on: :func:`models_dir_for`); and prints
measured beside predicted p50 / p99 with the tolerance of issue 12 (15 %, or 5 ms where the
measured figure is under 50 ms) and the direction of p50 against P per client.

Clients (validate/kafka_harness.py): ``librdkafka`` (confluent-kafka, in process),
``franz-go`` (validate/franzgo, teranode's options), ``java`` (validate/javaproducer,
kafka-clients 3.9.1 defaults); the Go and Java harnesses are built on first use.

The pieces, a module each: the grid of configurations (validate/kafka_grid.py); a session's
runs read back and each client's fit on them, with the model of a harness run
(validate/kafka_fit.py); the broker's CPU costs and the host speed they hold at
(validate/broker_costs.py); the broker JVM's young collections (validate/broker_gc.py).
This module measures (:func:`measure`), predicts (:func:`predict`), compares and reports,
and writes the models files. ``--gc-pool DIR ...`` instead pools the broker JVM's young pauses
and Remarks of calibration sessions into this CPU's entry of ``models/kafka-gc-loopback.toml``
(the sessions behind the shipped one: ``validate/kafka_gc_sessions/``), which the judge
draws pauses from beside a session's own (validate/broker_gc.py, "Why a pool").

CI runs :data:`CI_CONFIGS` (each client at one linger and one P, the deadline outer batcher
once, the fits, and one dense multi-partition configuration), building the Go and Java
harnesses itself and skipping, with the reason, a client whose tool (``go``,
``mvn``/``java``) is missing; the full grid is this script.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from validate.broker_costs import (
    at_speed,
    broker_toml,
    costs_speed,
    cpu_samples,
    fitted_broker,
    held_out_broker,
    measured_cpu,
    session_record_cost,
    tells_costs_apart,
    write_costs_speed,
)
from validate.broker_gc import (
    GC_FIGURES,
    fitted_gc,
    gc_pool,
    measured_gc,
    measured_pauses,
    with_pool,
    write_gc_pool,
)
from validate.kafka_fit import (
    STALL_S,
    Fitted,
    Measured,
    fit,
    fit_runs,
    kept,
    model_case,
    percentile,
    read_measurements,
    run_percentile,
)
from validate.kafka_grid import (
    CI_CONFIGS,
    CLIENTS,
    CONFIGS,
    CPU_CONFIGS,
    CPU_FIT,
    FIT,
    MODEL_FIT_EXCLUDES,
    fit_configs,
)
from validate.kafka_harness import STATS_MS, HarnessConfig, run
from validate.kafka_models import (
    GcPool,
    broker_model_path,
    broker_speed_model,
    gc_pool_model,
    host_speed_model,
    model_broker,
)

if TYPE_CHECKING:
    from validate.kafka_record_cost import Costs

HERE = Path(__file__).resolve().parent

# Each configuration is measured in REPEATS serial runs and judged by the median of the
# per-run percentiles (the p99 of one 200-message run is its 3rd-largest value). The
# prediction follows the same procedure: the model's run k draws its noise from the fit run
# paired with measured run k and follows the harness's feed schedule, and the median is
# taken over runs (see :func:`predict`).
REPEATS = 3
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
# 1,500 messages over 8 partitions were not enough: the first configuration measured after
# them (linger10-p8-1000ps-dense) had p99 73-109 ms in two sessions on 2026-11-23, against
# 15 ms later in a session; after 8,000 messages at 2000 msg/s over 32 partitions, 16.6 ms.
WARMUP = HarnessConfig(n_messages=8000, feed="poisson", interval_ms=0.5, linger_ms=5,
                       n_partitions=32, warmup_s=0.5)
# The broker's CPU per produce request keeps falling for the first ~40 s of load at
# CPU_FIT's rate, however long the warm-up above (measured 2026-11-24 on a fresh broker, each
# run 4,000 messages at 1000 msg/s over 4 partitions, ~1,170 requests: 3.0, 1.6, 1.3, 1.3,
# 1.0, 0.87, 0.48, 0.65, 0.42 ms per request, then 0.47-0.59; after 30,000 warm-up messages
# instead of 8,000: 2.3, 1.3, 1.1, 0.52, 0.78, 0.55, 0.40). The costs are fitted on the
# session's runs (fit_broker), which must all be past this: CPU_SETTLE_RUNS discarded runs of
# CPU_FIT precede the first CPU configuration.
CPU_SETTLE_RUNS = 7


def settle_cpu(bootstrap: str, broker_pid: int | None) -> None:
    """:data:`CPU_SETTLE_RUNS` discarded runs of :data:`CPU_FIT`: the broker's CPU per
    request past its first ~40 s of load, before any run whose CPU is fitted or judged."""
    for _ in range(CPU_SETTLE_RUNS):
        run(bootstrap, CONFIGS[CPU_FIT], broker_pid=broker_pid)


def stalled_share(rec: np.ndarray) -> float:
    return float(1.0 - kept(rec).mean())


def steal_share(rec: np.ndarray) -> float:
    v = rec["steal_share"][np.isfinite(rec["steal_share"])]
    return float(v[0]) if v.size else 0.0


def noise(rec: np.ndarray) -> float:
    """Above 1: a noisy run (see NOISY_SHARE and STEAL_MAX)."""
    return max(stalled_share(rec) / NOISY_SHARE, steal_share(rec) / STEAL_MAX)


def predict(name: str, cfg: HarnessConfig, fitted: list[Fitted], runs: list[np.ndarray],
            brokers: list[dict] | None = None, per_run: int = 9, gc: dict | None = None,
            n_brokers: int = 1) -> dict:
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
    ``runs[k]``: measured run k; the messages it is judged on (:func:`kept`) are kept here.
    ``brokers[k]``: the model's ``[broker]`` for run k (:func:`fit_broker`), whose CPU is
    then predicted too (``broker_cpu``, cores over the run). ``gc``: the broker's young
    collections (:func:`fitted_gc`, without this configuration's runs, with the CPU's pool of
    pauses: :func:`~validate.broker_gc.with_pool`), for every run;
    ``n_brokers``: the cluster's size (:func:`model_case`). Also ``consume_after_ack``: the
    median message's consume minus ack time (:func:`consume_after_ack`), likewise."""
    from simbatch.core.streams import replication_seed
    from simbatch.kafka import simulate as simulate_kafka
    from simbatch.kafka.engine import ENGINE

    cpu = brokers is not None
    figures: dict[str, list[float]] = {"p50": [], "p99": [], "consume_after_ack": []}
    client = cfg.client == "librdkafka"
    if client:
        figures["client_int_p50"], figures["client_int_p99"] = [], []
    if cpu:
        figures["broker_cpu"] = []
        figures["fetch_per_produce"] = []
    if cpu and gc is not None:
        for key in GC_FIGURES:
            figures[key] = []
    for k, (f, rec) in enumerate(zip(fitted, runs, strict=True)):
        case = model_case(name, cfg, f, brokers[k] if brokers is not None else None, gc,
                          n_brokers)
        mask = kept(rec)
        sims = [simulate_kafka(case, replication_seed(1, k * per_run + r))
                for r in range(per_run)]
        figures["p50"].append(float(np.median([percentile(s.latency_s[mask], 0.5)
                                               for s in sims])))
        figures["p99"].append(float(np.median([percentile(s.latency_s[mask], 0.99)
                                               for s in sims])))
        figures["consume_after_ack"].append(float(np.median(
            [np.median((s.consume_s - s.ack_s)[mask]) for s in sims])))
        if client:
            ints = np.array([model_internal_latency(s) for s in sims])
            figures["client_int_p50"].append(float(np.median(ints[:, 0])))
            figures["client_int_p99"].append(float(np.median(ints[:, 1])))
        if cpu:
            figures["broker_cpu"].append(float(np.median(
                [ENGINE.run_metrics(s)["broker_cpu_cores"] for s in sims])))
            figures["fetch_per_produce"].append(float(np.median(
                [s.broker_fetches / s.requests for s in sims])))
        if cpu and gc is not None:
            for key in GC_FIGURES:
                figures[key].append(float(np.median([getattr(s, key) for s in sims])))
    return {q: float(np.median(v)) for q, v in figures.items()}


def model_internal_latency(sim) -> tuple[float, float]:
    """The model's :func:`validate.kafka_harness.internal_latency`: each message's time from
    Produce to its request (librdkafka writes the message set as it sends it), per window of
    ``STATS_MS`` by that time, the windows' p50 and p99, and the median of each over windows
    (seconds)."""
    sent = np.asarray(sim.request_sent_s)[sim.request]
    wait = sent - sim.produce_s
    window = np.floor(sent / (STATS_MS / 1e3)).astype(np.int64)
    order = np.argsort(window, kind="stable")
    window, wait = window[order], wait[order]
    cuts = np.flatnonzero(np.diff(window)) + 1
    parts = np.split(wait, cuts)
    return (float(np.median([np.percentile(w, 50) for w in parts])),
            float(np.median([np.percentile(w, 99) for w in parts])))


CLIENT_FIGURES = ("client_int_p50", "client_int_p99")
"""What :func:`predict` reports of a librdkafka configuration's client
(:func:`model_internal_latency`), beside the harness's ``client_int_p50_s`` and
``client_int_p99_s``: where the broker thread's whole-millisecond sleeps
(``simbatch/kafka/librdkafka.py`` L9) show."""
INT_LATENCY_BAND_S = 0.15e-3
"""How far the predicted p50 of ``int_latency`` may be from the measured on the rung: the
host's thread wake-up (~30-80 us here, ``[host] wake_us``), which the model leaves out, and
librdkafka's histogram, which reads ~10 ms in steps of 64 us (measured 10.24 ms in every
window of four runs, 2026-11-29). Without L9 the model reads 10.00."""


def within(predicted: float, measured: float, name: str | None = None,
           metric: str = "p50") -> bool:
    """Issue 12's tolerance: 15 %, or 5 ms where the measured figure is under 50 ms; for
    the CPU configurations (:data:`CPU_CONFIGS`) issue 14's: 25 %, or 5 ms where the
    measured figure is under 20 ms, and the broker's CPU within 25 %."""
    if name in CPU_CONFIGS:
        share, floor_below, floor = 0.25, (0.0 if metric == "broker_cpu" else 0.020), 0.005
    else:
        share, floor_below, floor = 0.15, 0.050, 0.005
    allowed = share * measured
    if measured < floor_below:
        allowed = max(allowed, floor)
    return abs(predicted - measured) <= allowed


DISCARDED: dict[str, list[tuple[float, float]]] = {}
KEPT: dict[str, list[tuple[float, float]]] = {}


def interleaved(names) -> list[str]:
    """``names`` with the clients taken in turn, so that each client's runs spread over the
    session instead of one block each (the machine drifts)."""
    names = list(names)
    by_client = [[n for n in names if CONFIGS[n].client == c] for c in CLIENTS]
    out = []
    for i in range(max(map(len, by_client), default=0)):
        out += [group[i] for group in by_client if i < len(group)]
    return out


def measure(bootstrap: str | None, out_dir: Path, repeats: int = REPEATS,
            names=None, broker_pid: int | None = None) -> dict[str, Measured]:
    """Every configuration of ``names`` (default: all of :data:`CONFIGS`) in pairs,
    serially: a run of its client's fit configuration, then one of the configuration, until
    ``repeats`` quiet pairs (a first pass, then retries in turn, see FIRST_PASS). One CSV per
    kept run (``NAME.runK.csv``) and per the fit run paired with it (``NAME.runK.fit.csv``);
    (stalled, stolen) shares of discarded and kept runs go to DISCARDED, KEPT.

    Why pairs: the machine drifts. Every prediction rests on the broker's append and the
    consumer's fetch, and those are measured seconds before the run they predict, under the
    same neighbours (measured: with the fit kept from the quietest of all its runs, a CI run
    predicted linger10-p1-dense p99 12.5 ms against 18.2 measured minutes later, and here
    outer10-linger10-p32-sparse 23.9 against 32.0)."""
    from validate.kafka_harness import write_csv

    names = list(CONFIGS) if names is None else list(names)
    out_dir.mkdir(parents=True, exist_ok=True)
    run(bootstrap, WARMUP)
    pid = {"broker_pid": broker_pid}
    DISCARDED.clear()
    KEPT.clear()
    others = interleaved(n for n in names if n not in FIT.values() and n != CPU_FIT)
    # per attempt: (the fit run, the configuration's run, CPU_FIT's run or None)
    pairs: dict[str, list[tuple]] = {name: [] for name in others}

    def pair_noise(pair):
        return max(noise(r) for r in pair if r is not None)

    def quiet(name):
        return sum(pair_noise(pr) <= 1 for pr in pairs[name])

    settled = False

    def attempt(name):
        nonlocal settled
        if name in CPU_CONFIGS and not settled:
            settle_cpu(bootstrap, broker_pid)
            settled = True
        fits = [run(bootstrap, CONFIGS[f], **pid) for f in fit_configs(name)]
        pairs[name].append((fits[0], run(bootstrap, CONFIGS[name], **pid),
                            fits[1] if len(fits) > 1 else None))
        if pair_noise(pairs[name][-1]) > 1:
            time.sleep(NOISY_PAUSE_S)

    for name in others:
        while quiet(name) < repeats and len(pairs[name]) < FIRST_PASS:
            attempt(name)
    deadline = time.monotonic() + RETRY_BUDGET_S + 10 * len(others)
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
        DISCARDED[name] = [(stalled_share(r), steal_share(r)) for _, r, _ in ranked[repeats:]]
        KEPT[name] = [(stalled_share(r), steal_share(r)) for _, r, _ in ranked[:repeats]]
        cpu_fits = [c for _, _, c in ranked[:repeats]] if name in CPU_CONFIGS else None
        results[name] = Measured([r for _, r, _ in ranked[:repeats]],
                                 [f for f, _, _ in ranked[:repeats]], cpu_fits)
        for k, (f, r, c) in enumerate(ranked[:repeats]):
            write_csv(r, out_dir / f"{name}.run{k}.csv")
            write_csv(f, out_dir / f"{name}.run{k}.fit.csv")
            if c is not None:
                write_csv(c, out_dir / f"{name}.run{k}.cpufit.csv")
    for client, fit_name in FIT.items():
        fit_all = sorted((f for name in others if CONFIGS[name].client == client
                          for f, _, _ in pairs[name]), key=noise)
        if not fit_all:
            continue
        DISCARDED[fit_name] = [(stalled_share(r), steal_share(r)) for r in fit_all[repeats:]]
        KEPT[fit_name] = [(stalled_share(r), steal_share(r)) for r in fit_all[:repeats]]
        results[fit_name] = Measured(fit_all[:repeats], fit_all[:repeats])
        for k, rec in enumerate(fit_all[:repeats]):
            write_csv(rec, out_dir / f"{fit_name}.run{k}.csv")
    return {name: results[name] for name in CONFIGS if name in results}


def compare(results: dict[str, Measured], models_dir: Path | None = None,
            design: Costs | None = None) -> list[dict]:
    """Measured beside predicted; run k of a configuration is predicted from the fit run
    paired with it; a CPU configuration's broker is fitted on the session's other runs
    (:func:`held_out_broker`, with the ``[broker]`` of :func:`broker_model_path` in
    ``models_dir`` as the shape where they cannot separate its costs, and the session's
    record cost, ``design``, where its design ran: :func:`session_record_cost`). The broker's
    young collections of a librdkafka configuration are fitted on the session's other runs,
    their pauses drawn from those runs' and from this CPU's pool in ``models_dir``
    (:func:`~validate.kafka_models.gc_pool_model`)."""
    rows = []
    shape = model_broker(models_dir or HERE.parent / "models")
    shape_speed = broker_speed_model(models_dir or HERE.parent / "models")
    host = host_speed_model()
    samples = cpu_samples(results)
    pool = gc_pool_model(models_dir or HERE.parent / "models")
    for name, m in results.items():
        fitted = fit_runs(m.fit_runs)
        brokers = None         # without the broker's CPU time (a user's cluster): no model
        if name in CPU_CONFIGS and any(s.config == name for s in samples):
            broker, at_s = held_out_broker(
                samples, name, shape, design,
                shape_speed.costs_at_s if shape_speed is not None else None)
            # each run's speed as the costs' own speed was read: the file's floor for its costs
            reader = shape_speed if broker is shape else host
            brokers = [at_speed(broker, at_s, reader.of(r) if reader else float("nan"))
                       for r in m.runs]
        gc = with_pool(fitted_gc(results, held_out=name), pool) \
            if CONFIGS[name].client == "librdkafka" else None
        pred = predict(name, CONFIGS[name], fitted, m.runs, brokers,
                       gc=gc[0] if gc is not None else None)
        measured = {"p50": run_percentile(m.runs, 0.5), "p99": run_percentile(m.runs, 0.99),
                    "broker_cpu": measured_cpu(m.runs)}
        fetch_ratio = pred.pop("fetch_per_produce", float("nan"))
        pred.pop("consume_after_ack")          # judged on replication (kafka_replication.py)
        client_int = tuple(pred.pop(k) for k in CLIENT_FIGURES if k in pred)
        gc_pred = [pred.pop(key) for key in GC_FIGURES if key in pred]
        for q in pred:
            rows.append({"config": name, "metric": q, "measured": measured[q],
                         "predicted": pred[q], "ok": within(pred[q], measured[q], name, q),
                         "fitted_on": name in FIT.values(),
                         "load": float(np.median([r["load_avg"][0] for r in m.runs]))})
        if client_int:
            rows[-1]["client_int"] = ((float(np.median([r["client_int_p50_s"][0]
                                                        for r in m.runs])),
                                       float(np.median([r["client_int_p99_s"][0]
                                                        for r in m.runs]))), client_int)
        if "broker_cpu" in pred:     # not judged: what the CPU's fetch share rests on
            rows[-1]["fetch_per_produce"] = (float(np.median(
                [r["fetch_requests"][0] / r["produce_requests"][0] for r in m.runs])),
                fetch_ratio)
            rows[-1]["broker"] = (broker, at_s) if brokers else None
            if gc_pred and gc is not None:
                rows[-1]["gc"] = (measured_gc(m.runs), tuple(gc_pred))
                rows[-1]["pauses"] = (measured_pauses(m.runs), gc[0]["pause_ms"],
                                      pool is not None)
        # load: the machine's 1-minute load average as the runs started (median)
    return rows


def _median_range(values: np.ndarray) -> str:
    """``median (min-max, n)`` of the finite ``values``, or ``none``."""
    v = values[np.isfinite(values)]
    if not v.size:
        return "none"
    return f"{np.median(v):.1f} ({v.min():.1f}-{v.max():.1f}, {v.size})"


def where_cpu_went(results: dict[str, Measured], rows: Sequence[dict] = ()) -> list[str]:
    """Per CPU configuration: the consumer's Fetch requests per Produce request, measured
    (librdkafka's statistics) and predicted (the broker's coalesced fetches,
    simbatch/kafka/broker.py) and the broker's costs it was predicted with, from ``rows``
    (:func:`compare`); and, where the broker's
    threads were measured (:func:`validate.broker_jvm.thread_usage`), the request path's
    CPU and context switches per produce request (the consumer's fetches included) and the
    cores the request path, the JIT compiler, the garbage collector and the rest of the JVM
    kept busy, for the configuration and its paired fit runs; medians over runs. The model's
    costs are fitted on the whole JVM (:func:`fit_broker`). First, per librdkafka
    configuration, the client's own internal latency (:data:`CLIENT_FIGURES`)."""
    lines = [f"{r['config']}: librdkafka int_latency (produce to message set; per "
             f"{STATS_MS} ms window, median over windows) p50 measured {mc[0] * 1e3:.2f} ms, "
             f"predicted {pc[0] * 1e3:.2f}; p99 measured {mc[1] * 1e3:.2f}, predicted "
             f"{pc[1] * 1e3:.2f}"
             for r in rows if "client_int" in r for mc, pc in [r["client_int"]]]
    lines += [f"{r['config']}: Fetch per Produce measured {r['fetch_per_produce'][0]:.2f}, "
             f"predicted {r['fetch_per_produce'][1]:.2f}"
             for r in rows if "fetch_per_produce" in r]
    lines += [f"{r['config']}: per run, young collections measured {mg[0]:.1f}, predicted "
              f"{pg[0]:.1f}; Remarks measured {mg[1]:.1f}, predicted {pg[1]:.1f}; allocated "
              f"measured {mg[2]:.0f} MB, predicted {pg[2]:.0f} MB (jstat; the model's "
              "collections fitted on the session's other runs)"
              for r in rows if "gc" in r for mg, pg in [r["gc"]]]
    lines += [f"{r['config']}: young pauses measured {_median_range(own[0])} ms"
              + (f" after which the survivor spaces held {_median_range(own[1])} MB"
                 if np.isfinite(own[1]).any() else "")
              + f"; the model draws from {_median_range(np.asarray(model, float))} ms, the "
              "session's other runs'" + (" and this CPU's pool's (models/kafka-gc-loopback.toml)"
                                         if pooled else "")
              + " (a pause's length follows what it copies, which the model does not draw: "
              "simbatch/kafka/gc.py)"
              for r in rows if "pauses" in r for own, model, pooled in [r["pauses"]]]
    lines += [_broker_line(results, r) for r in rows if r.get("broker")]
    for name, m in results.items():
        runs = list(m.runs) + list(m.cpu_fit_runs or [])
        if name not in CPU_CONFIGS or not all(np.isfinite(r["broker_data_switches"][0])
                                              for r in runs):
            continue
        for label, group in ((name, m.runs), (f"{CPU_FIT} (paired)", m.cpu_fit_runs or [])):
            def med(f):
                return float(np.median([f(r) for r in group]))
            span = med(lambda r: r["timed_s"][0])
            per_req = med(lambda r: r["broker_data_cpu_s"][0] / r["produce_requests"][0])
            cores = {k: med(lambda r, k=k: r[f"broker_{k}_cpu_s"][0] / r["timed_s"][0])
                     for k in ("data", "jit", "gc")}
            switches = med(lambda r: r["broker_data_switches"][0] / r["produce_requests"][0])
            per_switch = med(lambda r: r["broker_data_cpu_s"][0] / r["broker_data_switches"][0])
            rest = med(lambda r: (r["broker_cpu_s"][0] - r["broker_data_cpu_s"][0]
                                  - r["broker_jit_cpu_s"][0] - r["broker_gc_cpu_s"][0])
                       / r["timed_s"][0])
            lines.append(f"{label}: request path {per_req * 1e6:.0f} us and {switches:.1f} "
                         f"context switches per produce request ({per_switch * 1e6:.0f} us "
                         "per switch); "
                         f"cores: request path {cores['data']:.2f}, JIT {cores['jit']:.2f}, "
                         f"GC {cores['gc']:.2f}, rest {rest:.2f} (over {span:.1f} s)")
    return lines


def _broker_line(results: dict[str, Measured], row: dict) -> str:
    """The costs ``row``'s configuration was predicted with (:func:`compare`), where they
    come from, and the host speed they hold at beside its runs' (the probe's wait lateness
    beyond the host-speed file's floor, validate/kafka_replication.py)."""
    b, at_s = row["broker"]
    shape = model_broker(HERE.parent / "models")
    if tells_costs_apart(results) or shape is None:
        source = "fitted on the session's other runs"
    elif at_s is not None:
        source = "the models file's"
    else:
        source = f"the models file's scaled on the {CPU_FIT} runs' CPU"
    line = (f"{row['config']}: broker {source}: {b['request_cpu_us']:.0f} us per request "
            f"unit, a cold start {b['cold_us']:.0f} us after {b['cold_after_us']:.0f} us idle"
            + (f" (in full after {b['cold_after_us'] + b['cold_ramp_us']:.0f})"
               if b.get("cold_ramp_us") else "")
            + f", {b['partition_fetch_us']:.1f} us per partition fetched, "
            f"{b['record_cpu_us']:.2f} us per record")
    host, m = host_speed_model(), results.get(row["config"])
    if host is None or m is None:
        return line
    if source.endswith("runs' CPU") and shape and shape.get("request_cpu_us"):
        # the factor and the CPU_FIT runs' speed say at what speed the file's costs hold
        factor = b["request_cpu_us"] / shape["request_cpu_us"]
        held = host.cpu_costs_at(list(m.cpu_fit_runs or []), factor)
        if not np.isfinite(held):
            return line
        return (line + f" (x {factor:.2f}; those runs at a host speed of "
                f"{held * factor * 1e6:.1f} us, the probe's wait lateness beyond "
                f"{host.wake_floor_s * 1e6:.1f}: the file's costs hold at {held * 1e6:.1f} us "
                f"by the broker's CPU, where the replication acks fit "
                f"{host.costs_at_s * 1e6:.1f}, this CPU's line in "
                "models/kafka-host-speed-loopback.toml)")
    if at_s is None:
        return line
    # the runs' speed read as compare() read it: the file's costs against the file's floor
    reader = (broker_speed_model(HERE.parent / "models") if source == "the models file's"
              else None) or host
    speeds = [v for v in map(reader.of, m.runs) if v > 0]
    runs = (f"; its runs' {np.median(speeds) * 1e6:.1f} us, so x "
            f"{np.median(speeds) / at_s:.2f}" if speeds else "")
    return (line + f", at a host speed of {at_s * 1e6:.1f} us (the probe's wait lateness "
            f"beyond {reader.wake_floor_s * 1e6:.1f}){runs}; the replication acks fit the "
            f"costs' speed at {host.costs_at_s * 1e6:.1f} beyond {host.wake_floor_s * 1e6:.1f} "
            "(this CPU's line, models/kafka-host-speed-loopback.toml)")


def table(rows: list[dict]) -> str:
    def shares(runs):
        return ", ".join(f"{a:.0%}/{b:.0%}" for a, b in runs)

    def note(name, d):
        if not d:
            return ""
        if name in FIT.values():    # every pair has one; the quietest three are its own rows
            return f"; its {len(d)} other runs were paired with the configurations above"
        return f"; discarded as noisy: {shares(d)}"

    notes = [f"{name}: messages stalled > {STALL_S * 1e3:g} ms (left out) / CPU stolen, kept "
             f"runs {shares(KEPT[name])}" + note(name, d) for name, d in DISCARDED.items()]
    lines = notes + ["| config | metric | measured | predicted | error | within | load |",
             "|---|---|---:|---:|---:|---|---:|"]
    for r in rows:
        err = r["predicted"] / r["measured"] - 1
        tag = " (fit)" if r["fitted_on"] else ""
        scale, unit = (1.0, " cores") if r["metric"] == "broker_cpu" else (1e3, " ms")
        lines.append(f"| {r['config']}{tag} | {r['metric']} | {r['measured'] * scale:.2f}{unit}"
                     f" | {r['predicted'] * scale:.2f}{unit} | {err:+.0%} | "
                     f"{'yes' if r['ok'] else 'NO'} | {r['load']:.2f} |")
    return "\n".join(lines)


def directions(rows: list[dict]) -> list[dict]:
    """Per client and linger, how p50 moves from P = 1 to P = 128, measured and predicted:
    "rises" when p50 at the largest P measured is above 1.15 x p50 at P = 1, else "flat"
    (measured: librdkafka rises at linger 1 s, franz-go and Java stay flat)."""
    out = []
    for client in CLIENTS:
        for linger in (10, 1000):
            p50 = {}
            for r in rows:
                cfg = CONFIGS[r["config"]]
                if (r["metric"] == "p50" and cfg.client == client and cfg.linger_ms == linger
                        and cfg.outer_linger_ms is None and cfg.feed == "periodic"):
                    p50[cfg.n_partitions] = (r["measured"], r["predicted"])
            if 1 not in p50 or len(p50) < 2:
                continue
            top = max(p50)

            def trend(i: int) -> str:
                return "rises" if p50[top][i] > 1.15 * p50[1][i] else "flat"

            out.append({"client": client, "linger_ms": linger, "partitions": sorted(p50),
                        "measured": trend(0), "predicted": trend(1),
                        "ok": trend(0) == trend(1)})
    return out


def machine() -> str:
    """This machine as a models/ file's provenance names it: platform, CPUs, CPU model
    (:func:`~validate.host_probe.cpu_name`)."""
    from validate.host_probe import cpu_name
    return f"{platform.platform()}, {os.cpu_count()} CPUs, {cpu_name()}"


def provenance(kafka_version: str, client: str, bootstrap: str | None) -> dict[str, str]:
    import confluent_kafka

    clients = {"librdkafka": f"confluent-kafka {confluent_kafka.__version__}, librdkafka "
                             f"{confluent_kafka.libversion()[0]} (validate/kafka_harness.py, "
                             "acks=1)",
               "franz-go": "franz-go v1.20.6 (validate/franzgo: teranode's options, "
                           "idempotency off, 1 request in flight, default snappy)",
               "java": "kafka-clients 3.9.1 (validate/javaproducer: the client's defaults, "
                       "acks=all, idempotent, 5 in flight)"}
    broker = (f"the cluster at {bootstrap} (SIMBATCH_KAFKA_BOOTSTRAP)" if bootstrap else
              f"Apache Kafka {kafka_version} (org.apache.kafka:kafka_2.13, KRaft, single "
              "node, loopback)")
    return {"broker": broker, "client": clients[client],
            "machine": machine(),
            "measured_on": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "settings": f"fitted on {FIT[client]}: {CONFIGS[FIT[client]]}",
            "command": "python -m validate.calibrate_kafka"}


def model_path(models_dir: Path, client: str, bootstrap: str | None) -> Path:
    """``models/kafka-loopback[-client].toml``; a user's cluster gets its host's name."""
    host = "loopback" if bootstrap is None else bootstrap.split(",")[0].rsplit(":", 1)[0]
    suffix = "" if client == "librdkafka" else f"-{client}"
    return models_dir / f"kafka-{host}{suffix}.toml"


def model_toml(fitted: Fitted, prov: dict[str, str], rows: list[dict],
               gc: tuple[dict, list[str]] | None = None) -> str:
    lines = ["# Kafka broker and consumer parameters, as one client sees them; written by",
             "# validate/calibrate_kafka.py. Do not edit by hand: re-run the command.", "",
             "[provenance]"]
    lines += [f'{k} = "{v}"' for k, v in prov.items()] + ["", "[producer]",
              f"append_ms = {fitted.append_ms:.4f}",
              "append_ratios = [" + ", ".join(f"{r:g}" for r in fitted.append_ratios) + "]",
              "", "[consumer]", f"fetch_ms = {fitted.fetch_ms:.4f}",
              "fetch_ratios = [" + ", ".join(f"{r:g}" for r in fitted.fetch_ratios) + "]", ""]
    if gc is not None:
        lines += gc[1] + ["[gc]"] + [f"{k} = {v}" for k, v in gc[0].items()] + [""]
    lines += ["# measured beside predicted in the same run (seconds; broker_cpu: cores)"]
    for r in rows:
        lines.append(f"# {r['config']} {r['metric']}: measured {r['measured']:.4f} "
                     f"predicted {r['predicted']:.4f}")
    return "\n".join(lines) + "\n"


def measured_on(out_dir: Path) -> str:
    """When the newest CSV in ``out_dir`` was written (UTC)."""
    newest = max(p.stat().st_mtime for p in out_dir.glob("*.csv"))
    return dt.datetime.fromtimestamp(newest, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def models_dir_for(models_dir: str | None, names: Sequence[str] | None, out_dir: str) -> Path:
    """Where a calibration writes its models files: ``models_dir`` if given, else the
    repository's models/ for the whole grid (``names`` None) and ``out_dir`` for a subset. A
    subset can leave a parameter unidentified (a single partition count cannot tell the
    broker's cold start from a partition fetched) and would otherwise overwrite the models
    the scenarios use with it."""
    if models_dir is not None:
        return Path(models_dir)
    return HERE.parent / "models" if names is None else Path(out_dir)


def main() -> None:
    import sys

    from validate.kafka_broker import KAFKA_VERSION, BrokerError, KafkaBroker
    from validate.kafka_harness import HarnessError, user_bootstrap

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--ci", action="store_true",
                        help="measure only the subset the test suite runs (CI_CONFIGS)")
    parser.add_argument("--configs", default=None,
                        help="comma-separated configuration names (default: all)")
    parser.add_argument("--out-dir", default=str(HERE / "measurements"))
    parser.add_argument("--models-dir", default=None,
                        help="where to write the fitted models files (default: models/ for "
                             "the whole grid, --out-dir for --ci or --configs)")
    parser.add_argument("--from-csv", action="store_true",
                        help="re-fit and re-predict from the CSVs in --out-dir, no broker")
    parser.add_argument("--costs-speed", nargs="+", metavar="DIR", default=None,
                        help="instead, measure at what host speed the broker file's costs "
                             "hold by the broker's CPU on these sessions' CPU_FIT runs "
                             "(costs_speed) and write it into the file's [host_speed] "
                             "(models/, or --models-dir)")
    parser.add_argument("--gc-pool", nargs="+", metavar="DIR", default=None,
                        help="instead, pool the broker JVM's young pauses and Remarks of these "
                             "sessions' librdkafka runs (but the held-out configuration's) "
                             "into this CPU's entry of kafka-gc-loopback.toml (models/, or "
                             "--models-dir)")
    args = parser.parse_args()
    if args.gc_pool:
        from validate.host_probe import cpu_name

        where = Path(args.models_dir) if args.models_dir else HERE.parent / "models"
        try:
            pauses, remarks, lines = gc_pool([Path(d) for d in args.gc_pool])
            path = write_gc_pool(where, GcPool(cpu_name(), tuple(pauses), tuple(remarks), (
                f"{len(lines)} calibration sessions (python -m validate.calibrate_kafka "
                "--gc-pool " + " ".join(args.gc_pool) + ", "
                + dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d") + ")")))
        except HarnessError as exc:
            print(f"calibrate_kafka: error: {exc}", file=sys.stderr)
            sys.exit(2)
        print("\n".join(lines))
        print(f"{len(pauses)} young pauses, {len(remarks)} Remarks; wrote {path}")
        return
    if args.costs_speed:
        where = Path(args.models_dir) if args.models_dir else HERE.parent / "models"
        try:
            at_s, lines = costs_speed([Path(d) for d in args.costs_speed], where)
            host = host_speed_model(where)
        except HarnessError as exc:
            print(f"calibrate_kafka: error: {exc}", file=sys.stderr)
            sys.exit(2)
        assert host is not None
        print("\n".join(lines))
        path = broker_model_path(where)
        write_costs_speed(path, host.wake_floor_s, at_s,
                          f"the median of {len(lines)} sessions' (python -m "
                          "validate.calibrate_kafka --costs-speed "
                          + " ".join(Path(d).name for d in args.costs_speed) + ")")
        print(f"the costs hold at {at_s * 1e6:.1f} us; wrote {path}")
        return
    names = (CI_CONFIGS if args.ci else
             args.configs.split(",") if args.configs else None)
    unknown = [n for n in names or () if n not in CONFIGS]
    if unknown:
        parser.error(f"unknown configuration {unknown[0]!r} (see CONFIGS)")
    models_dir = models_dir_for(args.models_dir, names, args.out_dir)
    bootstrap = user_bootstrap()
    try:
        if args.from_csv:
            results = read_measurements(Path(args.out_dir), names)
        elif bootstrap is not None:
            results = measure(bootstrap, Path(args.out_dir), names=names)
        else:
            with KafkaBroker() as local:
                results = measure(local.bootstrap, Path(args.out_dir), names=names,
                                  broker_pid=local.pid)
                if tells_costs_apart(results):     # a ladder: a record's cost, measured
                    from validate.kafka_record_cost import CSV_NAME, write_rounds
                    from validate.kafka_record_cost import measure as measure_rounds

                    write_rounds(Path(args.out_dir) / CSV_NAME,
                                 measure_rounds(local.bootstrap, local.pid))
        design = session_record_cost(Path(args.out_dir))
    except (HarnessError, BrokerError) as exc:
        print(f"calibrate_kafka: error: {exc}", file=sys.stderr)
        sys.exit(2)
    shape = model_broker(HERE.parent / "models")
    rows = compare(results, design=design)
    models_dir.mkdir(parents=True, exist_ok=True)
    for client, fit_name in FIT.items():
        if fit_name not in results:
            continue
        prov = provenance(KAFKA_VERSION, client, bootstrap)
        if args.from_csv:    # the measurements are older than this fit: say when they were taken
            prov["fitted_on"] = prov["measured_on"]
            prov["measured_on"] = measured_on(Path(args.out_dir))
            prov["command"] += f" --from-csv --out-dir {args.out_dir}"
        path = model_path(models_dir, client, bootstrap)
        client_rows = [r for r in rows if CONFIGS[r["config"]].client == client]
        gc = with_pool(fitted_gc(results, held_out=MODEL_FIT_EXCLUDES), gc_pool_model()) \
            if client == "librdkafka" else None
        path.write_text(model_toml(fit(results[fit_name].runs), prov, client_rows, gc))
        print(f"wrote {path}")
    broker = fitted_broker(results, design, shape)
    if broker is not None:
        prov = provenance(KAFKA_VERSION, "librdkafka", bootstrap)
        prov["settings"] = f"fitted on {CPU_FIT}: {CONFIGS[CPU_FIT]}, and the CPU configurations"
        if args.from_csv:
            prov["command"] += f" --from-csv --out-dir {args.out_dir}"
            prov["fitted_on"] = prov["measured_on"]
            prov["measured_on"] = measured_on(Path(args.out_dir))
        path = broker_model_path(models_dir)
        path.write_text(broker_toml(broker, prov, rows))
        print(f"wrote {path}")
    print(table(rows))
    for line in where_cpu_went(results, rows):
        print(line)
    for d in directions(rows):
        print(f"p50 against P at linger {d['linger_ms']} ms, {d['client']} "
              f"(P = {d['partitions']}): measured {d['measured']}, predicted {d['predicted']}"
              f"{'' if d['ok'] else '  <- DIFFERENT'}")
    print(f"measurements in {args.out_dir}")


if __name__ == "__main__":
    main()
