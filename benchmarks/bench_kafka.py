"""Kafka engine speed: simulated messages per second of wall time for 10 s of a
1.3M messages/s topic over 256 partitions (R2's production paragraph), with peak memory.

The case of ``tests/test_kafka_aggregate.py::test_a_production_sized_run_is_estimated_per_
batch_and_not_refused``: a Poisson feed at 1.3M messages/s for 10 s (13M messages, keyed
over 256 partitions), teranode's outer debounce batcher (10 ms, flush at 50,000) in front of
franz-go (linger 10 ms, MaxBufferedRecords 50,000), simulated per batch by the aggregated
engine (:mod:`simbatch.kafka.aggregate`). Each run is a fresh process, so that its peak
resident memory (``getrusage`` maxrss) is its own; setup (the schedule, the key hashes) is
inside the timed wall.

Goal (issue 14): under 60 s on one core of this machine, under 2 GiB.
Usage: ``python benchmarks/bench_kafka.py [--seconds S] [--rate R] [--repeats N]``.
Timings on a shared machine are noisy: the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def _case(seconds: float, rate: float):
    from simbatch.kafka import KafkaCase, KafkaProducerConfig, KafkaWorkload, OuterBatcherConfig

    return KafkaCase(workload=KafkaWorkload(rate_per_s=rate, duration_s=seconds,
                                            feed="poisson"),
                     outer=OuterBatcherConfig(linger_ms=10, max_batch=50_000),
                     producer=KafkaProducerConfig(n_partitions=256, linger_ms=10,
                                                  max_buffered_records=50_000))


def _child(seconds: float, rate: float) -> None:
    from simbatch.kafka import simulate
    from simbatch.kafka.engine import ENGINE

    case = _case(seconds, rate)
    t0 = time.perf_counter()
    run = simulate(case, seed=1)
    wall = time.perf_counter() - t0
    m = ENGINE.run_metrics(run)
    print(json.dumps({
        "messages": int(run.publish_s.size), "wall_s": wall, "aggregated": case.aggregated,
        "requests": run.requests, "latency_p99_s": m["latency_p99_s"],
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "load_1min": float(open("/proc/loadavg").read().split()[0])}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--seconds", type=float, default=10.0, help="simulated seconds")
    parser.add_argument("--rate", type=float, default=1.3e6, help="messages per second")
    parser.add_argument("--repeats", type=int, default=1, help="runs, each a fresh process")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.seconds, args.rate)
        return
    print("| run | messages | wall s | simulated msgs/s of wall | peak MiB | requests | "
          "p99 ms | load (1 min) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    # the child imports simbatch from this checkout, whatever the installed copy points at
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    for i in range(args.repeats):
        out = subprocess.run([sys.executable, __file__, "--child", "--seconds",
                              str(args.seconds), "--rate", str(args.rate)],
                             capture_output=True, text=True, check=True, env=env).stdout
        r = json.loads(out.strip().splitlines()[-1])
        rows.append(r)
        print(f"| {i + 1} | {r['messages']:,} | {r['wall_s']:.1f} | "
              f"{r['messages'] / r['wall_s']:,.0f} | {r['peak_rss_mib']:.0f} | "
              f"{r['requests']:,} | {r['latency_p99_s'] * 1e3:.1f} | {r['load_1min']:.2f} |")
    best = min(rows, key=lambda r: r["wall_s"])
    met = best["wall_s"] < 60 and max(r["peak_rss_mib"] for r in rows) < 2048
    print(f"goal (10 s of 1.3M msgs/s over 256 partitions in < 60 s, < 2048 MiB): "
          f"{'met' if met else 'NOT met'} (fastest {best['wall_s']:.1f} s, aggregated "
          f"engine: {best['aggregated']})")
    print(f"load average at the end: {' '.join(open('/proc/loadavg').read().split()[:3])}")


if __name__ == "__main__":
    main()
