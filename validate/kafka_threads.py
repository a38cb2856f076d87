"""The broker's thread counts against the dense rungs' latency: measured on local brokers
that differ only in ``num.network.threads`` and ``num.io.threads``, interleaved, with the
model's prediction for each beside.

Why (issue 14): the model's broker threads are pools that a stage holds with a core
(``simbatch/kafka/broker.py``), so while a broker has at least as many threads as cores its
thread counts change nothing: at 2000 msg/s over 32 partitions the model gives a p99 of 16.4
ms with Kafka's defaults (3 network, 8 I/O threads) and 16.7 ms with one network and two I/O
threads. Whether the real broker's does is what this measures, on the same machine in the
same minutes (see ``simbatch/kafka/broker.py``'s known limits for what it found).

``python -m validate.kafka_threads [--reps 6] [--configs A,B] [--threads NAME=NET,IO ...]
[--out-dir DIR] [--from-csv]``: one broker per ``--threads`` setting (default: ``default=3,8``
and ``percore=1,2``), all running at once, each warmed as the calibration's CPU
configurations are; then ``--reps`` rounds, each measuring every configuration on every
broker in turn (the order rotated each round). One CSV per run
(``CONFIG.SETTING.runK.csv``). ``--from-csv`` prints the table again from ``--out-dir``. The
model reads the shipped files, unscaled: ``models/kafka-loopback.toml`` (librdkafka's round
trip, the consumer's fetch, the broker's young collections) and
``models/kafka-broker-loopback.toml`` (its CPU costs), with the setting's thread counts.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tomllib
from pathlib import Path

import numpy as np

from validate.broker_costs import serving_cpu_s
from validate.calibrate_kafka import WARMUP, model_path, predict
from validate.kafka_fit import Fitted, kept, percentile
from validate.kafka_grid import CONFIGS, CPU_CONFIGS, CPU_FIT
from validate.kafka_models import MODELS, broker_model_path, model_broker

HERE = Path(__file__).resolve().parent
DEFAULT_SETTINGS = {"default": (3, 8), "percore": (1, 2)}
DEFAULT_CONFIGS = ("linger10-p32-2000ps-dense", "linger10-p32-1000ps-dense")
WARM_RUNS = 3


def parse_setting(text: str) -> tuple[str, tuple[int, int]]:
    """``NAME=NET,IO`` -> (NAME, (network threads, I/O threads)); ValueError naming it."""
    m = re.fullmatch(r"([A-Za-z][\w-]*)=(\d+),(\d+)", text.strip())
    if m is None or int(m.group(2)) < 1 or int(m.group(3)) < 1:
        raise ValueError(f"--threads must read NAME=NET,IO with two counts of at least 1; "
                         f"got {text!r}")
    return m.group(1), (int(m.group(2)), int(m.group(3)))


def properties(threads: tuple[int, int]) -> tuple[str, ...]:
    return (f"num.network.threads={threads[0]}", f"num.io.threads={threads[1]}")


def measure(settings: dict[str, tuple[int, int]], names: list[str], reps: int,
            out_dir: Path) -> None:
    """Every configuration on every setting's broker, ``reps`` interleaved rounds."""
    from contextlib import ExitStack

    from validate.kafka_broker import KafkaBroker
    from validate.kafka_harness import run, write_csv

    out_dir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        brokers = {s: stack.enter_context(KafkaBroker(properties(t)))
                   for s, t in settings.items()}
        for b in brokers.values():
            run(b.bootstrap, WARMUP)
            for _ in range(WARM_RUNS):
                run(b.bootstrap, CONFIGS[CPU_FIT], broker_pid=b.pid)
        order = list(brokers)
        for k in range(reps):
            turn = order[k % len(order):] + order[:k % len(order)]
            for name in names:
                for s in turn:
                    rec = run(brokers[s].bootstrap, CONFIGS[name], broker_pid=brokers[s].pid)
                    write_csv(rec, out_dir / f"{name}.{s}.run{k}.csv")


def _model_inputs() -> tuple[Fitted, dict, dict | None]:
    m = tomllib.loads(model_path(MODELS, "librdkafka", None).read_text())
    fitted = Fitted.from_model(m)
    broker = model_broker(MODELS)
    if broker is None:
        raise SystemExit(f"kafka_threads: error: no [broker] in {broker_model_path(MODELS)}")
    return fitted, broker, m.get("gc")


def rows(settings: dict[str, tuple[int, int]], names: list[str], out_dir: Path,
         per_run: int = 5) -> list[dict]:
    """Measured beside predicted, per configuration and setting (milliseconds, cores)."""
    from validate.kafka_harness import read_csv

    fitted, broker, gc = _model_inputs()
    out = []
    for name in names:
        for s, (net, io) in settings.items():
            paths = sorted(out_dir.glob(f"{name}.{s}.run*.csv"))
            if not paths:
                continue
            runs = [read_csv(p) for p in paths]
            p99 = [percentile(r["latency_s"][kept(r)], 0.99) * 1e3 for r in runs]
            pred = predict(name, CONFIGS[name], [fitted] * len(runs), runs,
                           brokers=[{**broker, "network_threads": net, "io_threads": io}]
                           * len(runs), per_run=per_run, gc=gc)
            pauses = [float(np.nanmax(r["gc_pause_s"])) * 1e3 for r in runs
                      if np.isfinite(r["gc_pause_s"]).any()]
            out.append({
                "config": name, "setting": s, "threads": f"{net},{io}", "runs": len(runs),
                "p50": statistics.median(percentile(r["latency_s"][kept(r)], 0.5) * 1e3
                                         for r in runs),
                "p99": statistics.median(p99), "p99_runs": p99,
                "pred_p50": pred["p50"] * 1e3, "pred_p99": pred["p99"] * 1e3,
                "cpu": statistics.median(serving_cpu_s(r) / r["timed_s"][0] for r in runs),
                "pred_cpu": pred["broker_cpu"],
                "pause_max": statistics.median(pauses) if pauses else float("nan"),
                # the request path's threads: waiting runnable for a CPU, ms per second of
                # the run, and put off a CPU while runnable, per produce request
                # (NaN for runs recorded before the harness measured them)
                "runq": _nanmedian(r["broker_data_runq_s"][0] / r["timed_s"][0] * 1e3
                                   for r in runs),
                "preempted": _nanmedian(r["broker_data_preempted"][0]
                                        / r["produce_requests"][0] for r in runs)})
    return out


def _nanmedian(values) -> float:
    finite = [float(v) for v in values if np.isfinite(v)]
    return statistics.median(finite) if finite else float("nan")


def table(result: list[dict]) -> str:
    lines = ["| configuration | threads (network, I/O) | runs | p50 ms, measured / predicted "
             "| p99 ms, measured / predicted | each run's p99 | broker CPU, measured / "
             "predicted | longest young pause ms (median of runs) | request path waiting "
             "for a CPU, ms/s | its involuntary switches per request |",
             "|---|---|---:|---|---|---|---|---:|---:|---:|"]
    for r in result:
        lines.append(f"| {r['config']} | {r['setting']} ({r['threads']}) | {r['runs']} | "
                     f"{r['p50']:.1f} / {r['pred_p50']:.1f} | {r['p99']:.1f} / "
                     f"{r['pred_p99']:.1f} | {', '.join(f'{x:.0f}' for x in r['p99_runs'])} | "
                     f"{r['cpu']:.2f} / {r['pred_cpu']:.2f} | {r['pause_max']:.0f} | "
                     f"{r['runq']:.1f} | {r['preempted']:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--reps", type=int, default=6)
    parser.add_argument("--configs", default=",".join(DEFAULT_CONFIGS),
                        help="comma-separated dense configurations (CPU_CONFIGS)")
    parser.add_argument("--threads", action="append", default=None, metavar="NAME=NET,IO")
    parser.add_argument("--out-dir", default=str(HERE / "measurements" / "threads"))
    parser.add_argument("--from-csv", action="store_true",
                        help="print the table from the CSVs in --out-dir, no broker")
    args = parser.parse_args(argv)
    names = [n for n in args.configs.split(",") if n]
    unknown = [n for n in names if n not in CPU_CONFIGS]
    if unknown:
        parser.error(f"--configs: {unknown[0]!r} is not a dense configuration (CPU_CONFIGS)")
    if args.reps < 1:
        parser.error(f"--reps must be at least 1; got {args.reps}")
    try:
        settings = (dict(parse_setting(t) for t in args.threads) if args.threads
                    else dict(DEFAULT_SETTINGS))
    except ValueError as exc:
        parser.error(str(exc))
    out_dir = Path(args.out_dir)
    if args.from_csv and not out_dir.is_dir():
        parser.error(f"--out-dir: no such directory {str(out_dir)!r}")
    if not args.from_csv:
        from validate.kafka_broker import BrokerError
        from validate.kafka_harness import HarnessError
        try:
            measure(settings, names, args.reps, out_dir)
        except (BrokerError, HarnessError) as exc:
            print(f"kafka_threads: error: {exc}", file=sys.stderr)
            return 2
    print(table(rows(settings, names, out_dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
