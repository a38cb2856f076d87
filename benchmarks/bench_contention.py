"""Contention model speed: the production block (``scenarios/r4-production-192-cores.toml``,
420M transactions from 400 subtrees, 192 cores) and R4's 16M block at 192 cores
(``scenarios/r4-scaling.toml``, what the planner's question (e) runs), both designs.

Goal (issue 13): the production block under 60 s on one core of this machine. Each run is a
fresh process (peak RSS per run); prints wall and CPU seconds (CPU time is the figure to trust
on a shared machine), peak memory and the predicted throughput and cores busy.
Usage: ``python benchmarks/bench_contention.py [--cores C]``.
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
BLOCKS = {"production": "scenarios/r4-production-192-cores.toml",
          "r4-16M": "scenarios/r4-scaling.toml"}


def _child(block: str, design: str, cores: int) -> None:
    import dataclasses

    import simbatch
    from simbatch.contention import ENGINE

    scenario = simbatch.load_scenario(ROOT / BLOCKS[block])
    case = next(c for c in scenario.cases if c.params["map.design"] == design)
    case = dataclasses.replace(case, cpu=dataclasses.replace(case.cpu, cores=cores))
    t0, c0 = time.perf_counter(), time.process_time()
    m = ENGINE.run_metrics(simbatch.simulate(case, seed=1))
    print(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                      **m, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                      / 1024}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--cores", type=int, default=192)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1], int(args.child[2]))
        return
    print(f"loadavg {Path('/proc/loadavg').read_text().strip()}" if os.path.exists(
        "/proc/loadavg") else "")
    print("| block | design | cores | wall s | CPU s | peak MiB | throughput ops/s | "
          "cores busy | goal (production < 60 s) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for block in BLOCKS:
        for design in ("old", "new"):
            out = subprocess.run([sys.executable, __file__, "--child", block, design,
                                  str(args.cores)], capture_output=True, text=True,
                                 check=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            goal = ("met" if r["cpu_s"] < 60 else "NOT met") if block == "production" else ""
            print(f"| {block} | {design} | {args.cores} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
                  f"{r['peak_rss_mib']:.0f} | {r['throughput_ops_per_s']:.3g} | "
                  f"{r['cores_busy']:.0f} | {goal} |")


if __name__ == "__main__":
    main()
