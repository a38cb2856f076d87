"""Engine speed: simulated items per second for a 1,000,000-input block, with peak memory.

Runs, each in a fresh process so that its peak resident memory is its own:

* simbatch's engine at fan-out 64 and at fan-out 4096 (R1's batcher: size 100, 10 ms
  first-item timer, pool of 64, 500 us flush), with the client's CPU off (the default) and
  on (``[go]``: every goroutine on 2 modelled processors with the costs of
  ``models/gobatcher-loopback.toml``, the host's timers of ``models/host-loopback.toml``);
* the CPU-on engine both ways, in the same run: compiled by ``simbatch compile`` (mypyc;
  the README's setup builds it; if this install has no compiled modules, they are built
  for the benchmark in a temporary copy of the package, about a minute) and as Python (a
  copy of the package's sources alone); without a C compiler, Python alone, saying why.
  The engine without ``[go]`` uses none of the compiled modules and runs as installed;
* the naive design beside it: one SimPy process per item, a ``simpy.Store`` as the channel,
  and the worker racing ``Store.get`` against a ``Timeout`` with ``AnyOf`` (what SimPy users
  hand-build today).

Goal (issues 2 and 11): the million-input block in under 10 s on one core, under 2 GiB, and
at least 10x the naive design's items per second, with the CPU off and on.
Usage: ``python benchmarks/bench_engine.py [--inputs N] [--naive-inputs N] [--reps R]``.
Timings on a shared machine are noisy: each of the R repetitions runs every design in turn,
each ratio is taken within one repetition, and the table and the verdicts give medians
(with the repetitions' range).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

MODELS = Path(__file__).resolve().parent.parent / "models"


def _engine(n_inputs: int, cap: int, cpu: bool = False) -> dict:
    from simbatch.batching import (
        BatcherConfig,
        BlockWorkload,
        Case,
        GoConfig,
        HostConfig,
        ServiceConfig,
        simulate,
    )

    extra = {}
    if cpu:
        go = tomllib.loads((MODELS / "gobatcher-loopback.toml").read_text())["go"]
        host = tomllib.loads((MODELS / "host-loopback.toml").read_text())["host"]
        extra = {"go": GoConfig(**go, gomaxprocs=2), "host": HostConfig(**host)}
    case = Case(workload=BlockWorkload(n_transactions=n_inputs // 3, inputs_per_tx=3,
                                       fanout="errgroup", cap=cap),
                batcher=BatcherConfig(size=100, timeout_ms=10, dispatch="pool",
                                      max_concurrent=64),
                service=ServiceConfig(fixed_us=500, is_sleep=cpu), **extra)
    t0 = time.perf_counter()
    run = simulate(case, seed=1)
    wall = time.perf_counter() - t0
    return {"items": len(run.recorder.item_txn), "wall_s": wall,
            "simulated_block_time_s": run.block_time_s}


def _naive(n_inputs: int, cap: int) -> dict:
    import simpy

    env = simpy.Environment()
    store = simpy.Store(env, capacity=6400)
    size, timeout, service = 100, 0.010, 0.0005
    pool = simpy.Resource(env, capacity=64)
    n_tx = n_inputs // 3
    state = {"next": 0, "items": 0}

    def serve(batch):
        with pool.request() as req:
            yield req
            yield env.timeout(service)
        for done in batch:
            done.succeed()

    def worker():
        batch = []
        deadline = None
        while True:
            get = store.get()
            if batch:
                timer = env.timeout(max(0.0, deadline - env.now))
                yield get | timer
                if not get.triggered:
                    get.cancel()
                    env.process(serve(batch))
                    batch = []
                    continue
            else:
                yield get
                deadline = env.now + timeout
            batch.append(get.value)
            if len(batch) == size:
                env.process(serve(batch))
                batch = []

    def item():
        done = env.event()
        yield store.put(done)
        yield done
        state["items"] += 1

    def producer():
        while state["next"] < n_tx:
            state["next"] += 1
            yield env.all_of([env.process(item()) for _ in range(3)])

    env.process(worker())
    producers = [env.process(producer()) for _ in range(cap)]
    t0 = time.perf_counter()
    env.run(until=env.all_of(producers))
    wall = time.perf_counter() - t0
    return {"items": state["items"], "wall_s": wall, "simulated_block_time_s": env.now}


def _child(kind: str, n_inputs: int, cap: int) -> None:
    if kind == "naive":
        result = _naive(n_inputs, cap)
    else:
        result = _engine(n_inputs, cap, cpu=kind.startswith("engine+cpu"))
    from simbatch import native

    result["compiled"] = native.compiled()
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--inputs", type=int, default=1_000_000)
    parser.add_argument("--naive-inputs", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=3,
                        help="repetitions, each running every design in turn")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], int(args.child[1]), int(args.child[2]))
        return
    if args.reps < 1:
        parser.error(f"--reps: must be at least 1; got {args.reps}")
    with tempfile.TemporaryDirectory(prefix="bench-engine-") as tmp:
        envs = _cpu_on_engines(Path(tmp))
        kinds = [("engine", args.inputs), *((kind, args.inputs) for kind in envs)]
        _bench(args, [(kind, n, cap) for kind, n in (*kinds, ("naive", args.naive_inputs))
                      for cap in (64, 4096)], envs)


def _cpu_on_engines(tmp: Path) -> dict[str, dict[str, str] | None]:
    """``{kind: the environment its child runs in}`` for the CPU-on engine compiled and as
    Python: each a copy of the package put first on ``PYTHONPATH``, or ``None`` for the
    package as installed."""
    from simbatch import native

    def first_on_path(root: Path) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [str(root), os.environ.get("PYTHONPATH")]))}

    native.copy_package(tmp / "python")
    envs: dict[str, dict[str, str] | None] = {"engine+cpu, Python": first_on_path(
        tmp / "python")}
    if native.compiled() == list(native.MODULES):
        envs["engine+cpu, compiled"] = None
        return envs
    t0 = time.perf_counter()
    try:
        built = native.build(native.copy_package(tmp / "compiled"))
    except native.NativeError as e:
        print(f"{e}\ntiming the CPU-on engine as Python only", file=sys.stderr)
        return envs
    print(f"this install is not compiled: compiled {', '.join(built)} in a copy in "
          f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    envs["engine+cpu, compiled"] = first_on_path(tmp / "compiled")
    return envs


def _bench(args: argparse.Namespace, runs: list[tuple[str, int, int]],
           envs: dict[str, dict[str, str] | None]) -> None:
    reps: list[dict[tuple[str, int], dict]] = []
    for _ in range(args.reps):
        rep = {}
        for kind, n, cap in runs:
            out = subprocess.run([sys.executable, __file__, "--child", kind, str(n), str(cap)],
                                 capture_output=True, text=True, check=True,
                                 env=envs.get(kind)).stdout
            r = json.loads(out.strip().splitlines()[-1])
            r["items_per_s"] = r["items"] / r["wall_s"]
            rep[(kind, cap)] = r
        reps.append(rep)
    print(f"medians of {args.reps} repetition(s), each running every design in turn")
    print("| design | fan-out | inputs | wall s | items/s | peak MiB | simulated block s | "
          "compiled modules |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for kind, _n, cap in runs:
        rs = [rep[(kind, cap)] for rep in reps]
        print(f"| {kind} | {cap} | {rs[0]['items']:,} | {_median(rs, 'wall_s'):.2f} | "
              f"{_median(rs, 'items_per_s'):,.0f} | {_median(rs, 'peak_rss_mib'):.0f} | "
              f"{rs[0]['simulated_block_time_s']:.4f} | {', '.join(rs[0]['compiled']) or '-'} |")
    kinds = list(dict.fromkeys(kind for kind, _n, _cap in runs if kind != "naive"))
    for kind in kinds:
        for cap in (64, 4096):
            ratios = sorted(rep[(kind, cap)]["items_per_s"] / rep[("naive", cap)]["items_per_s"]
                            for rep in reps)
            speedup = statistics.median(ratios)
            rs = [rep[(kind, cap)] for rep in reps]
            met = (_median(rs, "wall_s") < 10 and _median(rs, "peak_rss_mib") < 2048
                   and speedup >= 10)
            print(f"{kind}, fan-out {cap}: {speedup:.1f}x the naive design's items/s "
                  f"({ratios[0]:.1f}-{ratios[-1]:.1f}x); goal (<10 s, <2048 MiB, >=10x): "
                  f"{'met' if met else 'NOT met'}")
    for kind in kinds:
        if kind.endswith(", compiled") and (python := kind.replace("compiled", "Python")) in kinds:
            for cap in (64, 4096):
                ratio = statistics.median(rep[(python, cap)]["wall_s"] / rep[(kind, cap)]["wall_s"]
                                          for rep in reps)
                print(f"{kind}, fan-out {cap}: {ratio:.2f}x as fast as {python}")
    print(f"load average (1 min) at the end: {open('/proc/loadavg').read().split()[0]}")


def _median(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


if __name__ == "__main__":
    main()
