"""The evidence behind FINDINGS.md, one table per section, from the recorded data (and, for
``onekey``, ``sharing``, ``profile`` and ``transfer``, the product's fit of each set,
:func:`simbatch.planning.fit.fit_service`, about 15 s a set).

``python -m validate.aerospike_model.evidence [SECTION ...]`` with sections ``levels``
(mixture or regime: runs test, autocorrelation, longest runs, window dispersion, per cell),
``switches`` (when the fast level ends in each c = 1 cell), ``onekey`` (fast-level share by
cell, and the loopback set's fresh-process repeats), ``sharing`` (c >= 2: time per call at
the closed loop's throughput against the c = 1 costs), ``tails`` (p90 / p99 over the level
median by size), ``profile`` (how well the c >= 2 medians pin each sharing parameter; about
2 minutes) and ``transfer`` (one set's sharing parameters on the other set). No section
named: all but ``profile``.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from simbatch.batching import ServiceConfig
from simbatch.batching.closedloop import closed_loop
from simbatch.planning.fit import LEVEL_MAX_SIZE, conc_cells, fit_service
from simbatch.planning.judge import judge, predict
from validate.aerospike_model.levels import (
    longest_run_p,
    runs_test,
    split_levels,
    window_dispersion,
)

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
DATASETS = {"loopback": SHARED / "aerospike-loopback" / "batch_read_latency.csv",
            "live": SHARED / "aerospike-harness-live-2026-11-23" / "full-grid.csv.gz"}
REPEATS = DATASETS["loopback"].parent / "placement_repeats.csv"


def _all(name: str) -> pd.DataFrame:
    return pd.read_csv(DATASETS[name])


def load(path: Path) -> pd.DataFrame:
    df = pd.read_csv(path)
    return df[df.op == "batch_read"].copy()


@functools.cache
def _fitted(name: str) -> ServiceConfig:
    return fit_service(pd.read_csv(DATASETS[name])).config


def levels() -> None:
    """Per small cell: the two levels, and the tests of independence in call order."""
    print("## levels: two levels in call order; a mixture gives z ~ 0, lag1 ~ 0, "
          "dispersion ~ 1, p_longest not small")
    print("op,keys,c | low/high us | high share | runs (indep.) z | lag1 | longest high/low"
          " (p under a mixture) | dispersion (p) | per-thread z")
    for name in DATASETS:
        df = _all(name)
        print(f"-- {name}")
        for (op, n, c), g in df[df.batch_size <= LEVEL_MAX_SIZE].groupby(
                ["op", "batch_size", "concurrency"]):
            g = g.sort_values("start_s")
            lv = split_levels(g.latency_s.to_numpy() * 1e6)
            if lv is None:
                continue
            rt, lr, wd = runs_test(lv.high), longest_run_p(lv.high), window_dispersion(lv.high)
            per_thread = ""
            if c > 1:
                zs = [runs_test(lv.high[(g.thread == th).to_numpy()])["z"]
                      for th in range(c) if 0 < lv.high[(g.thread == th).to_numpy()].mean() < 1]
                per_thread = " ".join(f"{z:+.1f}" for z in zs)
            print(f"{op},{n},{c} | {lv.low_us:.0f}/{lv.high_us:.0f} | {lv.share_high:.2f} | "
                  f"{rt['runs']:.0f} ({rt['expected_runs']:.0f}) {rt['z']:+.1f} | "
                  f"{rt['lag1']:+.2f} | {lr['longest_high']:.0f} ({lr['p_longest_high']:.1g}) / "
                  f"{lr['longest_low']:.0f} ({lr['p_longest_low']:.1g}) | "
                  f"{wd['dispersion']:.1f} ({wd['p_value']:.1g}) | {per_thread}")


def switches() -> None:
    """For each c = 1 cell with a fast level: where in the cell (calls, ms) it ends."""
    print("## switches: the last fast call of each c = 1 cell (threshold: the levels' "
          "geometric midpoint)")
    print("set op keys | fast calls | last fast call: index, ms after the first timed call |"
          " fast share before it | cell ms")
    for name in DATASETS:
        df = _all(name)
        for (op, n), g in df[(df.concurrency == 1) & (df.batch_size <= LEVEL_MAX_SIZE)].groupby(
                ["op", "batch_size"]):
            g = g.sort_values("start_s")
            x = g.latency_s.to_numpy() * 1e6
            lv = split_levels(x)
            if lv is None:
                continue
            fast = ~lv.high
            t = (g.start_s.to_numpy() - g.start_s.iloc[0]) * 1e3
            last = int(np.flatnonzero(fast)[-1])
            print(f"{name} {op} {n} | {fast.sum()} | {last}, {t[last]:.1f} ms | "
                  f"{fast[:last + 1].mean():.2f} | {t[-1]:.0f}")


def onekey() -> None:
    """The fast level's share in every one-key cell and the smallest batches, both sets."""
    print("## onekey: share of calls under the midpoint between the fast level and the "
          "slow line (fast level = the lowest one-key level seen)")
    for name in DATASETS:
        df = _all(name)
        p = _fitted(name)
        rows = []
        for (op, n, c), g in df[df.batch_size <= 10].groupby(["op", "batch_size", "concurrency"]):
            slow = p.fixed_us + p.per_record_us * n
            fast = (p.regime.fast_fixed_us or 0.0) + p.per_record_us * n
            cut = np.sqrt(slow * fast)
            rows.append((op, n, c, float((g.latency_s * 1e6 < cut).mean())))
        t = pd.DataFrame(rows, columns=["op", "keys", "c", "fast_share"])
        print(f"-- {name} (fast {p.regime.fast_fixed_us:.0f} + {p.per_record_us:.1f} n us, "
              f"slow {p.fixed_us:.0f} + {p.per_record_us:.1f} n us)")
        print(t.pivot_table(index=["op", "keys"], columns="c", values="fast_share")
              .round(2).to_string())
    if REPEATS.is_file():
        r = pd.read_csv(REPEATS)
        print("-- loopback placement_repeats.csv: c = 1 medians (us) in 10 fresh processes")
        print((r.pivot_table(index="process", columns=["op", "batch_size"],
                             values="median_s") * 1e6).round(1).T.to_string())


def sharing() -> None:
    """c >= 2: mean latency / c (the time per call at the closed loop's throughput) against
    the c = 1 CPU per call (the fitted slow line less two wakes), and the c = 2 / c = 1 median
    ratio."""
    print("## sharing: time per call at throughput (mean latency / c, us); 'cpu1' = the c=1 "
          "slow line - 2 wakes (fitted); cpu1 / (mean/c at c=8) estimates the vCPUs of work "
          "two busy vCPUs deliver")
    for name in DATASETS:
        df = _all(name)
        df = df[df.op == "batch_read"]
        p = _fitted(name)
        g = df.groupby(["batch_size", "concurrency"]).latency_s
        mean = g.mean().unstack() * 1e6
        med = g.median().unstack() * 1e6
        t = pd.DataFrame({f"mean/c c={c}": mean[c] / c for c in mean.columns})
        t["cpu1"] = (p.fixed_us + p.per_record_us * t.index.to_numpy()
                     - 2 * p.machine.wake_us)
        t["cpu1/(mean/c, c=8)"] = t["cpu1"] / t["mean/c c=8"]
        t["med c2/c1"] = med[2] / med[1]
        print(f"-- {name}")
        print(t.round(2).to_string())


def tails() -> None:
    """c = 1, slow level: p10, p90, p99 over the median by size."""
    print("## tails: c = 1, slow-level calls, quantile / median")
    for name in DATASETS:
        df = _all(name)
        c1 = df[(df.op == "batch_read") & (df.concurrency == 1)]
        rows = []
        for n, g in c1.groupby("batch_size"):
            x = g.sort_values("start_s").latency_s.to_numpy() * 1e6
            lv = split_levels(x) if n <= LEVEL_MAX_SIZE else None
            x = x if lv is None else x[lv.high]
            q = np.quantile(x, [0.1, 0.5, 0.9, 0.99])
            rows.append((n, q[1], q[0] / q[1], q[2] / q[1], q[3] / q[1]))
        print(f"-- {name}")
        print(pd.DataFrame(rows, columns=["keys", "median_us", "p10/med", "p90/med",
                                          "p99/med"]).round(3).to_string(index=False))


def _loss(p: ServiceConfig, measured: pd.Series) -> tuple[float, float]:
    errs = np.abs([np.log(np.median(closed_loop(p, int(n), int(c), calls=500, seed=7)) / m)
                   for (n, c), m in measured.items()])
    return float(errs.mean()), float(errs.max())


def _machine(p: ServiceConfig, **changes) -> ServiceConfig:
    return replace(p, machine=replace(p.machine, **changes))


def profile() -> None:
    """Mean / max |log error| of the c >= 2 medians (2-200 keys) as each sharing parameter
    moves away from its fit, the others held."""
    print("## profile: mean/max |log(pred/meas)| of c >= 2 medians, 2-200 keys")
    for name in DATASETS:
        p0, measured = _fitted(name), conc_cells(load(DATASETS[name]))
        print(f"-- {name}: at the fit {_loss(p0, measured)[0]:.3f}")
        for field, values in (("busy_capacity_cores", (1.1, 1.3, 1.5, 1.7, 2.0)),
                              ("wake_us", (0, 6, 12, 18, 24, 30)),
                              ("client_key_share", (0.1, 0.25, 0.4, 0.55, 0.7, 0.85)),
                              ("client_fixed_share", (0.1, 0.3, 0.5, 0.7, 0.9))):
            cells = [f"{v:g}: {m:.3f}/{x:.2f}" for v in values
                     for m, x in [_loss(_machine(p0, **{field: v}), measured)]]
            print(f"{field:18s} " + "  ".join(cells))


def transfer() -> None:
    """Each set with its own c = 1 costs and the other set's sharing parameters."""
    print("## transfer: c >= 2 with the other set's wake, client shares and SMT capacity")
    for target, source in (("live", "loopback"), ("loopback", "live")):
        mine, other = _fitted(target), _fitted(source)
        p = _machine(mine, wake_us=other.machine.wake_us,
                     busy_capacity_cores=other.machine.busy_capacity_cores)
        df = load(DATASETS[target])
        conc, own = (judge(predict(q, df, calls=1000)).set_index("region").loc["conc_median"]
                     for q in (p, mine))
        print(f"{target} with {source}'s sharing: worst c>=2 median error "
              f"{conc.worst_error:+.0%} ({conc.worst_cell}); with its own fit "
              f"{own.worst_error:+.0%} ({own.worst_cell})")


SECTIONS = {"levels": levels, "switches": switches, "onekey": onekey, "sharing": sharing,
            "tails": tails, "profile": profile, "transfer": transfer}


def main(argv: list[str] | None = None) -> int:
    names = sys.argv[1:] if argv is None else argv
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        print(f"unknown section(s) {unknown}; choose from {list(SECTIONS)}", file=sys.stderr)
        return 2
    for n in names or [s for s in SECTIONS if s != "profile"]:
        SECTIONS[n]()
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
