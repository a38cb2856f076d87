"""The broker's CPU per produce request against the idle time between requests: what the
model's cold start (``[broker] cold_us``, growing from ``cold_after_us`` of idle time over
``cold_ramp_us``, ``simbatch/kafka/broker.py``) stands for, measured on its own (issue 14).

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

Measured (2026-11-29, request path per produce request, one Fetch each, median and range
over rounds; this command with three rounds, then with two, then a first script of the same
design):

| gap ms | measured us, 3 rounds | 2 rounds | the same, earlier | the step model us |
|---:|---|---|---|---|
| 0.5 | 284 (245-292) | 268 (253-283) | 270-320 | 256 |
| 1 | 307 (274-310) | 287 (277-298) | 295-313 | 256 |
| 1.5 | 280 (265-315) | 303 (301-306) | 311-320 | 475 |
| 2 | 307 (301-307) | 340 (294-387) | 361-373 | 694 |
| 3 | 400 (370-450) | 355 (300-410) | 360-470 | 694 |
| 4 | 560 (547-600) | | | 694 |
| 5 | 500 (467-601) | 508 (417-600) | 533-567 | 694 |
| 7 | 584 (537-724) | | | 694 |
| 10 | 650 (600-775) | 638 (600-675) | 575-800 | 694 |
| 15 | 800 (600-875) | | | 694 |
| 25 | 750 (625-925) | 638 (550-725) | 700-850 | 694 |

The cost rises over milliseconds of idle time; the step model (``cold_us`` after
``cold_after_us`` = 1 ms, no ramp) charges it all from ~1.5 ms on, 1.4-2x what the broker
spends between 1.5 and 5 ms. :func:`fit_shape` on the five periodic rounds together: a ramp
from 1 ms of idle time, in full at 7 ms (8.7 % RMS over gaps; the best step, at 2 ms,
19.2 %); on each session alone, from 1.5 ms to 7.5 ms (9.1 %, step 19.7 %) and from 0.75 ms
to 6.75 ms (3.8 %, step 20.6 %). Where it starts is loosely held (250-1500 us within 0.5
points); where it ends, 7-9 ms in every fit within 0.5 points of the best.

The same ramp, two more sessions the same day (two rounds each):

- beside a memory-bound load (a process copying 32 MB arrays 2 ms of every 4, on the other
  vCPU): 235 us per request at 0.5 ms, 446 at 3, 654 at 7, 775-850 at 10-25; best from
  0.25 to 8.25 ms (7.0 %, step 22.9 %), a cold start 541 us on the request path, against 420
  without the load;
- a Poisson feed (``--feed poisson``, gaps the mean): 260 at 0.5, 356 at 3, 480 at 7, 575 at
  10, 712 at 25; best from 0.25 to 16.25 ms (4.0 %, step 12.8 %): idle spells of every
  length, each paying its own share.

Not in ``models/kafka-broker-loopback.toml``. Its costs are fitted on the calibration's
ladder (the whole JVM, 1-32 partitions, linger 10-100 ms, Poisson feeds), which fits a step
better than the ramp (``validate/broker_costs.py``'s ``COLD_AFTER_GRID_US``); and the
request path's CPU at one configuration differs between sessions by more than the ramp
moves it: 4 partitions at linger 10 ms and 1000 msg/s (the ladder's ``CPU_FIT``, ~290
requests/s) read 365-455 us per produce request on a fresh broker in three rounds here, and
603-709 in the ladder's session of 2026-11-28; one partition at linger 0 at the same request
rate, 352-443.

The followers (``--replicas 3``: a local cluster of three brokers, warmed and settled as
validate/kafka_replication.py's; the same runs at three replicas): the replica fetcher
threads' CPU per append on each follower (``ReplicaFetcherThread``: one thread receives the
leader's reply, appends it and sends the next Fetch). Measured 2026-11-29 in two sessions
of three rounds each, medians (range):

| gap ms | first session | second | pooled |
|---:|---|---|---|
| 0.5 | 85 (84-86) | 95 (95-96) | 91 (84-96) |
| 1 | 90 (88-92) | 93 (92-97) | 92 (88-97) |
| 2 | 120 (110-123) | 130 (103-137) | 122 (103-137) |
| 5 | 208 (183-233) | 242 (192-258) | 221 (183-258) |
| 10 | 275 (250-287) | 275 (275-300) | 275 (250-300) |
| 25 | 250 (250-288) | 312 (288-325) | 288 (250-325) |

A cold start of 165 and 217 us (pooled, 197), where the model charged the request path's
(438 us as the ladder fits it; ~420 measured on its own above). ``--write-model`` on the
pooled runs set it as ``[broker] follower_cold_us`` in ``models/kafka-broker-loopback.toml``
(simbatch/kafka/replication.py). With it, the replication suite's p50 at three replicas,
judged again on the kept runs of nine CI jobs (68-71, 73-77; 77 measured after the change),
measured against predicted:

| row | before (follower pays 438 us) | after (197 us) |
|---|---|---|
| sparse | +15, +7, +11, -2, +17, +16, +22, +17, +16 % | +3, -4, -1, -12, +3, +3, +8, +5, +3 % |
| franz-go | +5, +10, +12, -4, +24, +3, +9, +2, +12 % | -5, +0, +2, -13, +12, -9, -2, -8, +1 % |
| dense | -4, -14, -12, -15, -5, -6, -2, -4, -4 % | -5, -14, -12, -15, -5, -6, -3, -5, -4 % |

Since 2026-12-06 each follower run keeps its host probe's wait lateness
(``host_wake_s``), and where the broker file states the host speed its costs hold at
(``[host_speed]``, validate/calibrate_kafka.py) each run's CPU is taken at that speed
before the cold start is read, as the ladder's costs are: on this VM (``--gaps 0.5 25
--rounds 4``, 13:26 UTC) 67 us per append at 0.5 ms and 277 at 25 ms, a cold start of
210 us at its runs' 39.5 us of lateness, 320 us at a file's 59.0. The shipped file's 197 us
is the machine before's, measured before the probe; the speed it states (70.4 us since
2026-12-06) was measured for its other costs.

``python -m validate.kafka_cold_start [--rounds N] [--gaps MS ...] [--feed F] [--replicas 3
[--write-model]] [--out DIR]`` (each run's
per-message CSV goes to ``DIR/gap<ms>-r<round>.csv``); ``--from-csv`` reports on a
directory of such runs again.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from validate.kafka_harness import HarnessConfig, HarnessError, read_csv

if TYPE_CHECKING:
    from validate.kafka_models import HostSpeed

HERE = Path(__file__).resolve().parent
GAPS_MS = (0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 25.0)
"""The gaps between messages measured by default (ms)."""
RUN_S = 3.0
"""Each run's length (s) where it holds at least ``MIN_MESSAGES`` (at most 4,000 messages)."""
MIN_MESSAGES = 400
_NAME = re.compile(r"(?:^|/)(poisson-)?gap([0-9.]+)-r([0-9]+)\.csv$")
FEEDS = ("periodic", "poisson")
"""The feeds a run may have: a message every gap, or Poisson arrivals at that mean gap."""


def gap_config(gap_ms: float, feed: str = "periodic") -> HarnessConfig:
    """One run at ``gap_ms``: linger 0, one partition, a ``feed`` (:data:`FEEDS`)."""
    n = int(min(4000, max(MIN_MESSAGES, RUN_S * 1e3 / gap_ms)))
    return HarnessConfig(n_messages=n, feed=feed, interval_ms=gap_ms, linger_ms=0,
                         n_partitions=1, label=f"gap{gap_ms:g}")


def run_path(out: Path, gap_ms: float, round_no: int, feed: str = "periodic") -> Path:
    prefix = "" if feed == "periodic" else f"{feed}-"
    return out / f"{prefix}gap{gap_ms:g}-r{round_no}.csv"


def interleaved(rounds: int, gaps: tuple[float, ...]) -> Iterator[tuple[int, float]]:
    """(round, gap) in the order the runs go: each round walks the gaps the other way from
    the round before, so that no gap always runs after the same one."""
    for r in range(rounds):
        for gap in (gaps if r % 2 == 0 else gaps[::-1]):
            yield r, gap


def measure(out: Path, rounds: int = 2, gaps: tuple[float, ...] = GAPS_MS,
            feed: str = "periodic") -> None:
    """Start a local broker, warm and settle it, and write one run per gap per round."""
    from validate.calibrate_kafka import WARMUP, settle_cpu
    from validate.kafka_broker import KafkaBroker
    from validate.kafka_harness import run

    out.mkdir(parents=True, exist_ok=True)
    with KafkaBroker() as broker:
        run(broker.bootstrap, WARMUP, None, broker.pid)
        settle_cpu(broker.bootstrap, broker.pid)
        for r, gap in interleaved(rounds, gaps):
            run(broker.bootstrap, gap_config(gap, feed), run_path(out, gap, r, feed),
                broker.pid)
            print(f"gap {gap:g} ms, round {r}: done", file=sys.stderr, flush=True)


def read_runs(out: Path) -> pd.DataFrame:
    """Per run in ``out``: its feed, gap, round, produce requests and the request path's CPU
    per request (us)."""
    rows = []
    for path in sorted(out.glob("*gap*-r*.csv")):
        m = _NAME.search(path.name)
        if m is None:
            continue
        rec = read_csv(path)
        requests = float(rec["produce_requests"][0])
        rows.append({"feed": "poisson" if m[1] else "periodic", "gap_ms": float(m[2]),
                     "round": int(m[3]), "requests": requests,
                     "us_per_request": float(rec["broker_data_cpu_s"][0]) / requests * 1e6})
    if not rows:
        raise HarnessError(f"no runs ([poisson-]gap<ms>-r<round>.csv) in {out}")
    return pd.DataFrame(rows)


def model_per_request(gap_ms: float, broker: dict,
                      feed: str = "periodic") -> tuple[float, float]:
    """The model's broker CPU per produce request (us) and cold starts per request, for the
    run at ``gap_ms`` (``feed``) with ``broker``'s costs."""
    from simbatch.kafka import simulate
    from validate.kafka_fit import Fitted, model_case

    model = tomllib.loads((HERE.parent / "models" / "kafka-loopback.toml").read_text())
    cfg = gap_config(gap_ms, feed)
    sim = simulate(model_case(cfg.label or f"gap{gap_ms:g}", cfg, Fitted.from_model(model),
                              broker), 1)
    return sim.broker_cpu_s / sim.requests * 1e6, sim.broker_cold_starts / sim.requests


FOLLOWERS_CSV = "followers.csv"
"""Where :func:`measure_followers` writes its runs, one row each."""


def measure_followers(out: Path, rounds: int = 2, gaps: tuple[float, ...] = GAPS_MS,
                      feed: str = "periodic") -> None:
    """Start a local cluster of three brokers (validate/kafka_replication.py's, warmed and
    settled), and write, per gap per round, a run at three replicas and its brokers'
    replica fetcher threads' CPU (:data:`FOLLOWERS_CSV`, a row each)."""
    from dataclasses import replace

    from validate.broker_jvm import fetcher_cpu_s
    from validate.kafka_harness import run
    from validate.kafka_replication import warm_cluster

    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with warm_cluster() as cluster:
        for r, gap in interleaved(rounds, gaps):
            cfg = replace(gap_config(gap, feed), replication=3)
            before = [fetcher_cpu_s(pid) for pid in cluster.pids]
            rec = run(cluster.bootstrap, cfg)
            used = [fetcher_cpu_s(pid) - b for pid, b in zip(cluster.pids, before, strict=True)]
            rows.append({"feed": feed, "gap_ms": gap, "round": r, "messages": cfg.n_messages,
                         "host_wake_s": float(rec["host_wake_s"][0]),
                         **{f"fetcher_cpu_s_{k}": u for k, u in enumerate(used)}})
            pd.DataFrame(rows).to_csv(out / FOLLOWERS_CSV, index=False)
            print(f"gap {gap:g} ms, round {r}: done", file=sys.stderr, flush=True)


def read_followers(out: Path) -> pd.DataFrame:
    """:func:`measure_followers`'s runs in ``out``, each with its followers' fetcher CPU per
    append (us): the two brokers whose fetchers used the most (the partition's followers;
    its leader's fetchers follow other partitions' leaders, if any), averaged, over the
    run's messages (one append each at linger 0)."""
    path = out / FOLLOWERS_CSV
    if not path.is_file():
        raise HarnessError(f"no follower runs ({FOLLOWERS_CSV}) in {out}")
    runs = pd.read_csv(path)
    if not {"gap_ms", "messages"} <= set(runs.columns) or \
            runs.filter(like="fetcher_cpu_s_").shape[1] < 2:
        raise HarnessError(f"{path}: not the follower runs' table (gap_ms, messages and "
                           "fetcher_cpu_s_<broker> of each broker)")
    bad = runs[~(pd.to_numeric(runs["messages"], errors="coerce") > 0)]
    if len(bad):
        raise HarnessError(f"{path}: row {bad.index[0] + 2}: messages must be a count above 0; "
                           f"got {bad['messages'].iloc[0]}")
    cpu = np.sort(runs.filter(like="fetcher_cpu_s_").to_numpy(), axis=1)[:, -2:]
    runs["us_per_append"] = cpu.mean(axis=1) / runs["messages"] * 1e6
    return runs


def follower_report(runs: pd.DataFrame, broker: dict) -> str:
    """The followers' fetcher CPU per append, measured (median and range over rounds) per
    gap, the cold start it shows (the longest gap's median less the shortest's) and the
    model's warm append and cold start for it, as lines."""
    from simbatch.kafka import BrokerConfig

    lines = ["| gap ms | runs | fetcher us per append per follower |", "|---:|---:|---|"]
    for gap, g in runs.groupby("gap_ms")["us_per_append"]:
        us = g.to_numpy()
        lines.append(f"| {gap:g} | {len(us)} | {np.median(us):.0f} ({us.min():.0f}-"
                     f"{us.max():.0f}) |")
    cfg = BrokerConfig(**broker)
    warm = cfg.produce_s(1, gap_config(1.0).message_bytes) * 1e6
    cold = cfg.cold_us if cfg.follower_cold_us is None else cfg.follower_cold_us
    lines.append(f"a follower's cold start: {follower_cold_us(runs):.0f} us measured (the "
                 f"{runs.gap_ms.max():g} ms gap's median less the {runs.gap_ms.min():g} ms "
                 f"one's); the model's append {warm:.0f} us warm, {cold:.0f} us more cold")
    return "\n".join(lines)


def follower_cold_us(runs: pd.DataFrame, speed: HostSpeed | None = None) -> float:
    """The followers' cold start the runs show (:func:`follower_report`): the longest gap's
    median fetcher CPU per append less the shortest gap's; with ``speed`` (the broker
    file's ``[host_speed]``) and runs that carry the host probe's lateness, each run's CPU
    taken at the speed the file's costs hold at first, as the ladder's are
    (validate/broker_costs.py's ``fit_broker``)."""
    per = at_file_speed(runs, speed)
    med = per.groupby(runs["gap_ms"]).median()
    return float(med.iloc[-1] - med.iloc[0])


def at_file_speed(runs: pd.DataFrame, speed: HostSpeed | None) -> pd.Series:
    """Each run's fetcher CPU per append (us) at ``speed.costs_at_s``: scaled by it over the
    run's own speed (:func:`run_speeds`); as measured without them."""
    own = run_speeds(runs, speed)
    if own is None or speed is None:
        return runs["us_per_append"]
    return runs["us_per_append"] * speed.costs_at_s / own


def run_speeds(runs: pd.DataFrame, speed: HostSpeed | None) -> pd.Series | None:
    """Each run's host speed (seconds: its probe's lateness beyond ``speed``'s floor); None
    without ``speed`` or where any run lacks the probe's figure (runs before 2026-12-06)."""
    if speed is None or "host_wake_s" not in runs:
        return None
    own = runs["host_wake_s"] - speed.wake_floor_s
    return own if bool((own > 0).all()) else None


def write_follower_cold(path: Path, us: float, note: str) -> None:
    """Set ``[broker] follower_cold_us`` in the models/ file at ``path`` to ``us`` (rounded
    to whole microseconds), with ``note`` as the comment line above ``[broker]``."""
    lines = path.read_text().splitlines() if path.is_file() else []
    lines = [line for line in lines if not line.startswith(("follower_cold_us =",
                                                             "# follower_cold_us:"))]
    if "[broker]" not in lines:
        raise HarnessError(f"no [broker] in {path}: run python -m validate.calibrate_kafka "
                           "first (it writes the broker's costs)")
    at = lines.index("[broker]")
    lines.insert(at, f"# follower_cold_us: {note}")
    lines.insert(at + 2, f"follower_cold_us = {round(us):.1f}")
    path.write_text("\n".join(lines) + "\n")


AFTER_GRID_US = (250.0, 500.0, 750.0, 1000.0, 1500.0, 2000.0)
"""The ``cold_after_us`` tried by :func:`fit_shape`."""
RAMP_GRID_US = (0.0, 2000.0, 4000.0, 6000.0, 8000.0, 10000.0, 12000.0, 16000.0)
"""The ``cold_ramp_us`` tried by :func:`fit_shape` (0: the step the model had before)."""


@dataclass(frozen=True)
class Shape:
    """A cold start's growth with idle time fitted on the runs (:func:`fit_shape`): the
    model's cold starts per request at each gap (``cold``) against the measured median,
    ``warm_us + cold_us x cold``, with its relative residual (RMS over gaps)."""

    cold_after_us: float
    cold_ramp_us: float
    warm_us: float
    cold_us: float
    rms: float
    cold: tuple[float, ...]


def fit_shape(runs: pd.DataFrame, broker: dict,
              afters: tuple[float, ...] = AFTER_GRID_US,
              ramps: tuple[float, ...] = RAMP_GRID_US) -> list[Shape]:
    """Every shape of the grid fitted on ``runs`` (the measured median per gap), best first:
    for each, the model's broker (``broker``'s costs, the shape's growth) gives the cold
    starts per request at each gap, and a least-squares line gives a warm request's CPU and a
    cold start's from them (the request path's, not the whole JVM's the ladder fits: so the
    shape is what this measurement gives, the costs the ladder's)."""
    medians = runs.groupby(["feed", "gap_ms"])["us_per_request"].median()
    y = medians.to_numpy()
    out = []
    for after in afters:
        for ramp in ramps:
            at = {**broker, "cold_after_us": after, "cold_ramp_us": ramp}
            x = np.array([model_per_request(float(g), at, feed)[1]
                          for feed, g in medians.index])
            a = np.c_[np.ones_like(x), x]
            (warm, cold), *_ = np.linalg.lstsq(a, y, rcond=None)
            rms = float(np.sqrt(np.mean(((y - a @ np.array([warm, cold])) / y) ** 2)))
            out.append(Shape(after, ramp, float(warm), float(cold), rms,
                             tuple(float(v) for v in x)))
    return sorted(out, key=lambda f: f.rms)


def shape_report(shapes: list[Shape], step: Shape | None = None) -> str:
    """The best shapes (:func:`fit_shape`) and the best step, as lines."""
    best = shapes[0]
    step = step or min((f for f in shapes if f.cold_ramp_us == 0), key=lambda f: f.rms,
                       default=None)
    lines = [f"cold start's growth, best: from {best.cold_after_us:.0f} us idle, in full "
             f"{best.cold_after_us + best.cold_ramp_us:.0f} us (a warm request "
             f"{best.warm_us:.0f} us, a cold start {best.cold_us:.0f} us more on the request "
             f"path; {best.rms:.1%} RMS over gaps)"]
    lines += [f"  next: from {f.cold_after_us:.0f}, in full {f.cold_after_us + f.cold_ramp_us:.0f}"
              f" us ({f.rms:.1%})" for f in shapes[1:4]]
    if step is not None:
        lines.append(f"  best step (ramp 0): at {step.cold_after_us:.0f} us ({step.rms:.1%})")
    return "\n".join(lines)


def report(runs: pd.DataFrame, broker: dict) -> str:
    """Measured (median and range over rounds) beside the model, per gap, as Markdown."""
    lines = ["| feed | gap ms | runs | measured us per request | model us per request | "
             "model cold starts per request |", "|---|---:|---:|---|---:|---:|"]
    for (feed, gap), g in runs.groupby(["feed", "gap_ms"]):
        us = g["us_per_request"].to_numpy()
        model, cold = model_per_request(float(gap), broker, str(feed))
        lines.append(f"| {feed} | {gap:g} | {len(g)} | {np.median(us):.0f} ({us.min():.0f}-"
                     f"{us.max():.0f}) | {model:.0f} | {cold:.2f} |")
    return "\n".join(lines)


def main() -> None:
    from simbatch.core.errors import ConfigError
    from validate.kafka_broker import BrokerError
    from validate.kafka_models import broker_model_path, broker_speed_model, model_broker

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--replicas", type=int, choices=(1, 3), default=1,
                        help="3: the followers' fetcher threads on a cluster of three")
    parser.add_argument("--write-model", action="store_true",
                        help="with --replicas 3: set [broker] follower_cold_us in models/")
    parser.add_argument("--feed", choices=FEEDS, default="periodic",
                        help="a message every gap, or Poisson arrivals at that mean gap")
    parser.add_argument("--gaps", type=float, nargs="+", default=list(GAPS_MS))
    parser.add_argument("--out", default="kafka-cold-start")
    parser.add_argument("--from-csv", action="store_true",
                        help="report on the runs already in --out instead of measuring")
    args = parser.parse_args()
    if args.write_model and args.replicas != 3:
        parser.error("--write-model sets the followers' cold start: it needs --replicas 3")
    if args.rounds < 1 or not all(0 < g < math.inf for g in args.gaps):   # nan too
        parser.error(f"--rounds must be at least 1 and every --gaps value above 0; got "
                     f"--rounds {args.rounds}, --gaps {' '.join(f'{g:g}' for g in args.gaps)}")
    out = Path(args.out)
    broker = model_broker(HERE.parent / "models")
    try:
        if args.replicas == 3:
            if not args.from_csv:
                measure_followers(out, args.rounds, tuple(args.gaps), args.feed)
            runs = read_followers(out)
            print(follower_report(runs, broker or {}))
            speed = broker_speed_model(HERE.parent / "models")
            cold = follower_cold_us(runs, speed)
            own = run_speeds(runs, speed)
            scaled = own is not None            # run_speeds gives none without a speed
            if own is not None and speed is not None:
                print(f"at the broker file's host speed ({speed.costs_at_s * 1e6:.1f} us; "
                      f"these runs' a median {np.median(own) * 1e6:.1f}): {cold:.0f} us")
            if args.write_model:
                from datetime import UTC, datetime

                path = broker_model_path(HERE.parent / "models")
                when = datetime.fromtimestamp((out / FOLLOWERS_CSV).stat().st_mtime, UTC)
                write_follower_cold(path, cold, (
                    f"measured {when:%Y-%m-%d %H:%M} UTC by python -m validate.kafka_cold_start "
                    f"--replicas 3 (the followers' fetcher CPU per append at "
                    f"{runs.gap_ms.max():g} ms between messages less at {runs.gap_ms.min():g} "
                    f"ms, medians of {runs['round'].nunique()} rounds"
                    + (", each run's at the host speed of [host_speed] below)" if scaled
                       else ")")))
                print(f"wrote {path}")
            return
        if not args.from_csv:
            measure(out, args.rounds, tuple(args.gaps), args.feed)
        runs = read_runs(out)
        print(report(runs, broker or {}))
        print(shape_report(fit_shape(runs, broker or {})))
    except (HarnessError, BrokerError) as exc:
        print(f"kafka_cold_start: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except ConfigError as exc:          # a [broker] value the model refuses
        print(f"kafka_cold_start: error: {broker_model_path(HERE.parent / 'models')}: {exc}",
              file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
