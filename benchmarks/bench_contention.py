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
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _child(design: str, n_tx: int, cores: int) -> None:
    from simbatch.bucketmap import MapCosts, MapWorkload, map_metrics, simulate_map
    from simbatch.cpu import CPUConfig

    spec = tomllib.loads((ROOT / "scenarios/r4-scaling.toml").read_text())
    cpu = CPUConfig(**{**spec["cpu"], "cores": cores})
    costs = MapCosts(**spec["costs"])
    wl = MapWorkload(n_tx=n_tx, n_subtrees=max(1, round(n_tx / 1_048_576)), design=design,
                     n_probes=n_tx, exists="rlock" if design == "old" else "frozen")
    t0 = time.perf_counter()
    m = map_metrics(simulate_map(cpu, costs, wl, seed=1), cpu)
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
