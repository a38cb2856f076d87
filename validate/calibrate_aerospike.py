"""Aerospike calibration: measure batch reads on a real server, fit the service model, compare.

``SIMBATCH_AEROSPIKE_HOST=host[:port] python -m validate.calibrate_aerospike [--quick]
[--out-dir DIR] [--model FILE]`` loads UTXO-shaped records (if the set does not hold them),
measures the (size, concurrency) grid with validate/aerospike_harness.py, writes the raw
samples (CSV), fits the service model (``simbatch.fit.fit_service``: fixed and per-key cost
on the concurrency-1 medians, the measured spread, the single-record path, and the permit
pool chosen on the concurrent cells), writes a ``models/`` file with provenance, and prints
measured beside predicted median / p90 / p99 for every cell.

The same fit runs in CI on the recorded measurements (tests/test_service_fit.py, with
``shared/data/aerospike-loopback``); this script is how a user calibrates on their own
server. ``--from-csv`` re-fits from a CSV written earlier, no server needed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
from pathlib import Path

import pandas as pd

from validate.aerospike_harness import HarnessError, Server, measure, server_from_env

HERE = Path(__file__).resolve().parent

GRID = {"sizes": [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000], "concurrencies": [1, 2, 4, 8],
        "samples": 2000, "get_samples": 3000, "n_records": 200_000}
QUICK = {"sizes": [1, 10, 100, 1000], "concurrencies": [1, 2], "samples": 300,
         "get_samples": 300, "n_records": 20_000}
# Tolerances, the same as on the recorded measurements (tests/test_service_fit.py).
TOLERANCE = {"c1_median": 0.15, "c1_p90": 0.20, "c1_p99": 0.45, "conc_small_median": 0.35}


def calibrate(df: pd.DataFrame, calls: int = 1000):
    """(fit, check table, quality) for raw samples."""
    from simbatch.fit import check_fit, fit_quality, fit_service

    fit = fit_service(df)
    table = check_fit(df, fit.config, calls=calls)
    return fit, table, fit_quality(table, fit.max_size)


def verdicts(quality: dict[str, float]) -> dict[str, bool]:
    """Each region of :func:`simbatch.fit.fit_quality` within its tolerance (its 'small'
    concurrent cells leave out one-key calls, whose fixed cost switches between two levels
    with thread placement: the recorded data's caveat 4)."""
    return {name: quality[f"{name}_max_abs_error"] <= tol for name, tol in TOLERANCE.items()}


def table_md(table: pd.DataFrame) -> str:
    lines = ["| keys | c | measured median / p90 / p99 ms | predicted ms | median error |",
             "|---:|---:|---|---|---:|"]
    for r in table.sort_values(["concurrency", "batch_size"]).itertuples():
        m, p = (" / ".join(f"{getattr(r, f'{side}_{q}_s') * 1e3:.3f}"
                           for q in ("median", "p90", "p99")) for side in ("measured", "predicted"))
        lines.append(f"| {r.batch_size} | {r.concurrency} | {m} | {p} | {r.error_median:+.0%} |")
    return "\n".join(lines)


def provenance(server: Server | None, grid: dict, csv_path: Path) -> dict[str, str]:
    from importlib.metadata import version

    return {"system": f"Aerospike server at {server}" if server else "Aerospike (from CSV)",
            "client": f"aerospike (Python) {version('aerospike')}",
            "machine": f"{platform.platform()}, {platform.processor() or platform.machine()}",
            "measured_on": (dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
                            if server else "see the CSV's own provenance"),
            "settings": "from the CSV's own cells" if server is None else f"{grid}",
            "samples": str(csv_path),
            "command": "python -m validate.calibrate_aerospike"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small grid (~1 min)")
    parser.add_argument("--out-dir", default=str(HERE / "measurements"))
    parser.add_argument("--model", default=None,
                        help="models/ file to write (default models/aerospike-<host>.toml)")
    parser.add_argument("--from-csv", default=None, help="re-fit a CSV written earlier")
    args = parser.parse_args(argv)
    grid = QUICK if args.quick else GRID
    server = None
    try:
        if args.from_csv:
            csv_path = Path(args.from_csv)
            df = pd.read_csv(csv_path)
        else:
            server = server_from_env()
            if server is None:
                print("no Aerospike server named: set SIMBATCH_AEROSPIKE_HOST=host[:port]",
                      file=sys.stderr)
                return 2
            df = measure(server, grid["sizes"], grid["concurrencies"], samples=grid["samples"],
                         get_samples=grid["get_samples"], n_records=grid["n_records"],
                         progress=print)
            csv_path = Path(args.out_dir) / f"aerospike-{server.host}.csv"
            csv_path.parent.mkdir(parents=True, exist_ok=True)
            df.to_csv(csv_path, index=False)
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    from simbatch.fit import model_toml

    fit, table, quality = calibrate(df)
    model = Path(args.model or HERE.parent / "models" /
                 f"aerospike-{server.host if server else 'from-csv'}.toml")
    model.write_text(model_toml(fit, provenance(server, grid, csv_path), quality))
    print(table_md(table))
    print(f"fixed {fit.config.fixed_us:.1f} us + {fit.config.per_record_us:.3f} us/key, "
          f"single {fit.config.single_record_us} us, permits {fit.config.max_in_flight}")
    print("within tolerance: " + ", ".join(f"{k} {'yes' if v else 'NO'}"
                                           for k, v in verdicts(quality).items()))
    print(f"wrote {model} (samples in {csv_path})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
