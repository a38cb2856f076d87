"""Contention model speed: a 500-million-transaction block at 192 cores, with peak memory.

Goal (issue 4): under 60 s on one core of this machine, under 2 GiB. Prints the wall time, the
peak RSS of a fresh process per design, and the predicted throughput. The block is 477
subtrees of ~1M transactions (teranode's largest subtree size), Phase A simulated per bucket
slice, Phase B (one probe per transaction) aggregated.
Usage: ``python benchmarks/bench_contention.py [--tx N] [--cores C]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _child(design: str, n_tx: int, cores: int) -> None:
    import dataclasses

    import simbatch
    from simbatch.contention import ENGINE

    # the R4 costs and machine, as the scenario loads them; this block and core count
    scenario = simbatch.load_scenario(ROOT / "scenarios/r4-scaling.toml")
    case = next(c for c in scenario.cases if c.params["map.design"] == design)
    case = dataclasses.replace(
        case, cpu=dataclasses.replace(case.cpu, cores=cores),
        map=dataclasses.replace(case.map, n_tx=n_tx, n_probes=n_tx,
                                n_subtrees=max(1, round(n_tx / 1_048_576))))
    t0 = time.perf_counter()
    m = ENGINE.run_metrics(simbatch.simulate(case, seed=1))
    print(json.dumps({"wall_s": time.perf_counter() - t0, **m,
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tx", type=int, default=500_000_000)
    parser.add_argument("--cores", type=int, default=192)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], int(args.child[1]), int(args.child[2]))
        return
    print("| design | tx | cores | wall s | peak MiB | throughput ops/s | cores busy |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for design in ("old", "new"):
        out = subprocess.run([sys.executable, __file__, "--child", design, str(args.tx),
                              str(args.cores)], capture_output=True, text=True, check=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        goal = "met" if r["wall_s"] < 60 and r["peak_rss_mib"] < 2048 else "NOT met"
        print(f"| {design} | {args.tx:,} | {args.cores} | {r['wall_s']:.1f} | "
              f"{r['peak_rss_mib']:.0f} | {r['throughput_ops_per_s']:.3g} | "
              f"{r['cores_busy']:.0f} |  goal (<60 s, <2 GiB): {goal}")


if __name__ == "__main__":
    main()
