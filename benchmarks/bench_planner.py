"""Planner speed: a 200-case sweep on 1 core and on 2, and each shipped question's time to
answer.

Goals (issue 10): the sweep >= 1.7x faster on 2 cores than on 1; every question answered in
<= 60 s on this 2-core machine. Repetitions alternate 1-core and 2-core runs so that both see
the same neighbours; the machine's load average is printed with each figure (a shared VM:
read the ratio, not the absolutes).

Usage: ``python benchmarks/bench_planner.py [--repeats 2] [--skip-questions]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SWEEP = ROOT / "scenarios/r1-decorate-fanout.toml"
# 5 cases x 40 timer values = 200 cases of R1's block at 3,000 transactions, 3 replications
TIMERS = [round(1 + i * 0.5, 1) for i in range(40)]


def _load() -> str:
    return open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?"


def sweep_seconds(workers: int) -> float:
    import simbatch
    from simbatch.planning.executors import make_executor
    from simbatch.planning.scenario import read_toml, scenario_from_data

    data = read_toml(SWEEP)
    data["sweep"] = {"batcher.timeout_ms": TIMERS}
    data["workload"]["n_transactions"] = 3000
    scenario = scenario_from_data(data, SWEEP)
    assert len(scenario.cases) == 200
    t0 = time.perf_counter()
    simbatch.run_scenario(scenario, replications=3, executor=make_executor(workers))
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--repeats", type=int, default=2, help="alternating repetitions")
    parser.add_argument("--skip-questions", action="store_true",
                        help="time only the 200-case sweep")
    args = parser.parse_args()
    times: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(args.repeats):
        for workers in (1, 2):
            seconds = sweep_seconds(workers)
            times[workers].append(seconds)
            print(f"200-case sweep, {workers} core(s): {seconds:.1f} s (load {_load()})")
    one, two = statistics.median(times[1]), statistics.median(times[2])
    ratio = one / two
    print(f"200-case sweep: 1 core {one:.1f} s, 2 cores {two:.1f} s, speedup {ratio:.2f}x "
          f"(goal >= 1.7x: {'met' if ratio >= 1.7 else 'NOT met'})")
    if args.skip_questions:
        return
    from simbatch.planning.executors import make_executor
    from simbatch.planning.recommend import recommend

    print("| question | seconds | runs | load | goal (<= 60 s) |")
    print("|---|---:|---:|---:|---|")
    for path in sorted((ROOT / "questions").glob("*.toml")):
        t0 = time.perf_counter()
        rec = recommend(path, executor=make_executor(None))
        seconds = time.perf_counter() - t0
        print(f"| {path.stem} | {seconds:.1f} | {rec.runs} | {_load()} | "
              f"{'met' if seconds <= 60 else 'NOT met'} |")


if __name__ == "__main__":
    main()
