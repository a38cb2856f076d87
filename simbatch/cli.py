"""The ``simbatch`` command: run a scenario file and print predicted beside published.

``simbatch run FILE [--replications R] [--seed S] [--set section.field=value ...] [--json]``

Bad input (a missing file, an unknown key, a bad value) prints one line naming the file, the
key and the value, and exits with status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from .errors import ConfigError
from .scenario import Scenario, load_scenario
from .sweep import compare, run_scenario

HEADLINE = {"batcher": ("block_time_s", "item_latency_p50_s", "item_latency_p99_s",
                        "batch_size_mean", "flush_share_size", "flush_share_timer",
                        "flush_share_drain"),
            "kafka": ("latency_p50_s", "latency_p99_s", "latency_max_s", "requests",
                      "records_per_request", "outer_flushes"),
            "contention": ("throughput_ops_per_s", "cores_busy", "total_s", "insert_ops_per_s",
                           "probe_ns_per_op")}
# A batcher scenario with a client CPU stage (statistics, parse, the service's own work)
# shows where the CPU goes, and each case's throughput against the first case's.
CLIENT_HEADLINE = ("block_time_s", "throughput_items_per_s", "stats_cpu_share",
                   "stats_set_cpu_share", "item_stats_lock_wait_mean_s", "item_latency_p99_s")


def _fmt(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if value == 0:
        return "0"
    if abs(value) >= 100 or abs(value) < 0.001:
        return f"{value:.4g}"
    return f"{value:.4f}".rstrip("0").rstrip(".")


def _table(scenario: Scenario, summaries) -> str:
    lines = [f"# {scenario.name}: {scenario.description}".rstrip(": "), ""]
    rows = compare(scenario, summaries)
    if rows:
        lines.append("| case | metric | predicted | ±95% | published | error | within |")
        lines.append("|---|---|---:|---:|---:|---:|---|")
        ci = {s.name: s.ci95 for s in summaries}
        for r in rows:
            lines.append(f"| {r.case} | {r.metric} | {_fmt(r.predicted)} | "
                         f"{_fmt(ci[r.case].get(r.metric, float('nan')))} | {_fmt(r.published)} | "
                         f"{r.error_rel:+.1%} | {'yes' if r.ok else 'NO'} |")
        lines.append("")
    headline = HEADLINE[scenario.kind]
    client = scenario.kind == "batcher" and any(s.metrics.get("stats_cpu_share")
                                                for s in summaries)
    if client:
        headline = CLIENT_HEADLINE
        base = summaries[0].metrics["throughput_items_per_s"]
    lines.append("| case | " + " | ".join(headline) + (" | throughput vs first |" if client
                                                         else " |"))
    lines.append("|---|" + "---:|" * (len(headline) + client))
    for s in summaries:
        cells = [_fmt(s.metrics.get(m)) for m in headline]
        if client:
            cells.append(f"{s.metrics['throughput_items_per_s'] / base:.2f}x" if base else "-")
        lines.append(f"| {s.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _json(scenario: Scenario, summaries) -> str:
    def clean(d):
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}

    doc = {"scenario": scenario.name, "cases": [
        {"name": s.name, "metrics": clean(s.metrics), "ci95": clean(s.ci95),
         "published": scenario.published.get(s.name, {}),
         "runs": [clean(r) for r in s.runs.to_dict(orient="records")]}
        for s in summaries]}
    return json.dumps(doc, indent=1)


def _fit_service(args) -> int:
    from pathlib import Path

    from .fit import check_fit, fit_quality, fit_service, load_samples, model_toml

    try:
        df = load_samples(args.samples)
    except (OSError, ValueError) as exc:
        print(f"simbatch: error: {exc}", file=sys.stderr)
        return 2
    fit = fit_service(df)
    provenance = {"system": args.system, "samples": args.samples,
                  "method": "fixed + per-key median on c=1 (least squares, relative), empirical "
                            "ratio noise, permit pool chosen by closed-loop simulation",
                  "command": f"simbatch fit-service {args.samples} --out {args.out} "
                             f"--system '{args.system}'"}
    table = check_fit(df, fit.config, calls=1000)
    Path(args.out).write_text(model_toml(fit, provenance, fit_quality(table, fit.max_size)))
    cols = ["batch_size", "concurrency", "error_median", "error_p90", "error_p99"]
    print(f"wrote {args.out}")
    print(table[cols].to_string(index=False, float_format=lambda x: f"{x:+.2f}"))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="simbatch", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a scenario file")
    run.add_argument("file")
    run.add_argument("--replications", type=int, default=None)
    run.add_argument("--seed", type=int, default=None)
    run.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    run.add_argument("--json", action="store_true", help="print one JSON document")
    run.add_argument("--plots", metavar="DIR", default=None,
                     help="save latency CDFs (and percentiles against a swept axis) as PNG")
    fit = sub.add_parser("fit-service", help="fit the service model to measured samples")
    fit.add_argument("samples", help="CSV of raw samples (op, batch_size, concurrency, latency_s)")
    fit.add_argument("--out", required=True, help="models/ file to write")
    fit.add_argument("--system", default="", help="what was measured (for provenance)")
    args = parser.parse_args(argv)
    if args.command == "fit-service":
        return _fit_service(args)
    try:
        if args.replications is not None and args.replications < 1:
            raise ConfigError(f"--replications must be an integer >= 1; got {args.replications}.")
        if args.seed is not None and args.seed < 0:
            raise ConfigError(f"--seed must be an integer >= 0; got {args.seed}.")
        scenario = load_scenario(args.file, args.set)
        summaries = run_scenario(scenario, replications=args.replications, seed=args.seed)
    except ConfigError as exc:
        print(f"simbatch: error: {exc}", file=sys.stderr)
        return 2
    print(_json(scenario, summaries) if args.json else _table(scenario, summaries))
    if args.plots:
        from .plots import save_plots

        for path in save_plots(scenario, summaries, args.plots):
            print(f"saved {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
