"""The broker's CPU per produce request against the idle time between requests: what the
model's cold start (``[broker] cold_us`` after ``cold_after_us`` idle, ``simbatch/kafka/
broker.py``) stands for, measured on its own (issue 14).

Why: the dense ladder's CPU does not pin ``cold_after_us``. Refitted with a small change of
the client model (2026-11-29) it moved from 1000 to 750 us, a neighbour the ladder supports
about as well (at the fit's first stage the residual varies by 3 % between 750 and 2000 us),
and the replication suite's sparse predictions moved 0.44 ms with it.

How: one local broker, warmed and settled as the calibration does (``WARMUP``, then
``settle_cpu``); then, in interleaved rounds (each round walks the
gaps the other way from the round before), one run per gap of the librdkafka harness at
linger 0 over one partition with a periodic feed: every message is its own produce request,
answered before the next (its round trip is ~0.25 ms), and the consumer fetches it, so the
broker idles for the gap less that. The CPU of a request is the request path's (the
network and request-handler threads, ``broker_data_cpu_s``; the JVM's other threads, whose
idle CPU is as large as a slow run's requests, are left out) over the produce requests
librdkafka counted. Beside it, the model's broker (``models/kafka-broker-loopback.toml``) on
the same runs.

Measured (2026-11-29, two rounds each, request path per produce request, one Fetch each;
this command, then a first script of the same design):

| gap ms | measured us | the same, earlier | model us (cold starts per request) |
|---:|---|---|---|
| 0.5 | 268 (253-283) | 270-320 | 256 (0) |
| 1 | 287 (277-298) | 295-313 | 256 (0) |
| 1.5 | 303 (301-306) | 311-320 | 475 (0.5) |
| 2 | 340 (294-387) | 361-373 | 694 (1) |
| 3 | 355 (300-410) | 360-470 | 694 (1) |
| 5 | 508 (417-600) | 533-567 | 694 (1) |
| 10 | 638 (600-675) | 575-800 | 694 (1) |
| 25 | 638 (550-725) | 700-850 | 694 (1) |

The cost rises over milliseconds of idle time and reaches the model's cold start at ~10 ms;
the model steps to it between 1.25 and 2 ms, so between 1.5 and 5 ms of idle time it charges
1.4-2x what the broker spends. Not yet in the model (the step is fitted on the ladder).

``python -m validate.kafka_cold_start [--rounds N] [--gaps MS ...] [--out DIR]`` (each run's
per-message CSV goes to ``DIR/gap<ms>-r<round>.csv``); ``--from-csv`` reports on a
directory of such runs again.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

from validate.kafka_harness import HarnessConfig, HarnessError, read_csv

HERE = Path(__file__).resolve().parent
GAPS_MS = (0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 25.0)
"""The gaps between messages measured by default (ms)."""
RUN_S = 3.0
"""Each run's length (s) where it holds at least ``MIN_MESSAGES`` (at most 4,000 messages)."""
MIN_MESSAGES = 400
_NAME = re.compile(r"gap([0-9.]+)-r([0-9]+)\.csv$")


def gap_config(gap_ms: float) -> HarnessConfig:
    """One run at ``gap_ms``: linger 0, one partition, a periodic feed."""
    n = int(min(4000, max(MIN_MESSAGES, RUN_S * 1e3 / gap_ms)))
    return HarnessConfig(n_messages=n, feed="periodic", interval_ms=gap_ms, linger_ms=0,
                         n_partitions=1, label=f"gap{gap_ms:g}")


def run_path(out: Path, gap_ms: float, round_no: int) -> Path:
    return out / f"gap{gap_ms:g}-r{round_no}.csv"


def measure(out: Path, rounds: int = 2, gaps: tuple[float, ...] = GAPS_MS) -> None:
    """Start a local broker, warm and settle it, and write one run per gap per round."""
    from validate.calibrate_kafka import WARMUP, settle_cpu
    from validate.kafka_broker import KafkaBroker
    from validate.kafka_harness import run

    out.mkdir(parents=True, exist_ok=True)
    with KafkaBroker() as broker:
        run(broker.bootstrap, WARMUP, None, broker.pid)
        settle_cpu(broker.bootstrap, broker.pid)
        for r in range(rounds):
            for gap in (gaps if r % 2 == 0 else gaps[::-1]):
                run(broker.bootstrap, gap_config(gap), run_path(out, gap, r), broker.pid)
                print(f"gap {gap:g} ms, round {r}: done", file=sys.stderr, flush=True)


def read_runs(out: Path) -> pd.DataFrame:
    """Per run in ``out``: its gap, round, produce requests and the request path's CPU per
    request (us)."""
    rows = []
    for path in sorted(out.glob("gap*-r*.csv")):
        m = _NAME.search(path.name)
        if m is None:
            continue
        rec = read_csv(path)
        requests = float(rec["produce_requests"][0])
        rows.append({"gap_ms": float(m[1]), "round": int(m[2]), "requests": requests,
                     "us_per_request": float(rec["broker_data_cpu_s"][0]) / requests * 1e6})
    if not rows:
        raise HarnessError(f"no runs (gap<ms>-r<round>.csv) in {out}")
    return pd.DataFrame(rows)


def model_per_request(gap_ms: float, broker: dict) -> tuple[float, float]:
    """The model's broker CPU per produce request (us) and cold starts per request, for the
    run at ``gap_ms`` with ``broker``'s costs."""
    from simbatch.kafka import simulate
    from validate.calibrate_kafka import Fitted, model_case

    model = tomllib.loads((HERE.parent / "models" / "kafka-loopback.toml").read_text())
    cfg = gap_config(gap_ms)
    sim = simulate(model_case(cfg.label, cfg, Fitted.from_model(model), broker), 1)
    return sim.broker_cpu_s / sim.requests * 1e6, sim.broker_cold_starts / sim.requests


def report(runs: pd.DataFrame, broker: dict) -> str:
    """Measured (median and range over rounds) beside the model, per gap, as Markdown."""
    lines = ["| gap ms | runs | measured us per request | model us per request | "
             "model cold starts per request |", "|---:|---:|---|---:|---:|"]
    for gap, g in runs.groupby("gap_ms"):
        us = g["us_per_request"].to_numpy()
        model, cold = model_per_request(float(gap), broker)
        lines.append(f"| {gap:g} | {len(g)} | {np.median(us):.0f} ({us.min():.0f}-"
                     f"{us.max():.0f}) | {model:.0f} | {cold:.2f} |")
    return "\n".join(lines)


def main() -> None:
    from validate.calibrate_kafka import model_broker
    from validate.kafka_broker import BrokerError

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--gaps", type=float, nargs="+", default=list(GAPS_MS))
    parser.add_argument("--out", default="kafka-cold-start")
    parser.add_argument("--from-csv", action="store_true",
                        help="report on the runs already in --out instead of measuring")
    args = parser.parse_args()
    if args.rounds < 1 or min(args.gaps) <= 0:
        parser.error(f"--rounds must be at least 1 and every --gaps value above 0; got "
                     f"--rounds {args.rounds}, --gaps {' '.join(f'{g:g}' for g in args.gaps)}")
    out = Path(args.out)
    broker = model_broker(HERE.parent / "models")
    try:
        if not args.from_csv:
            measure(out, args.rounds, tuple(args.gaps))
        print(report(read_runs(out), broker or {}))
    except (HarnessError, BrokerError) as exc:
        print(f"kafka_cold_start: error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
