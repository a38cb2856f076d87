"""Aerospike calibration: measure batch reads on a real server, fit the service model, judge it.

``SIMBATCH_AEROSPIKE_HOST=host[:port] python -m validate.calibrate_aerospike [--quick]
[--out FILE] [--force] [--samples-dir DIR] [--cleanup]`` loads UTXO-shaped records (if the
set does not hold them), measures the (size, concurrency) grid with
validate/aerospike_harness.py, writes the raw samples (CSV, with the server's description
beside it), fits the service model (``simbatch.planning.fit``: the cost per call and per key
and the tail per region of batch size at concurrency 1, the two cost levels as a persistent
regime, and how the client and the server share the machine's cores at concurrency >= 2),
and judges it (``simbatch.planning.judge``): per cell and per region, measured beside
predicted and what is allowed. The model file, with provenance, is written only if every
region is within tolerance, or with ``--force``.

Tolerances, the same on every data set (the recorded ones in CI, yours here): concurrency 1
medians within 15 % at every size up to 2000 keys, p90 within 25 %, p99 within 50 % (each
cell predicted with its measured fast-level share, an input); concurrency >= 2 medians within
30 % for 2 to 200 keys; one-key concurrent cells between the fast- and slow-regime
predictions, 30 % either side.

Timings on the project's VM kind (2 vCPUs shared by client and server, loopback): the full
grid takes about 4 minutes (some 15 s loading 200,000 records the first time, 3 minutes
measuring 48 cells, 15-30 s fitting and judging); ``--quick`` about 15 s (10 s measuring, a
few seconds fitting).

Exit status: 0 the model is within tolerance (and written); 1 it is out of tolerance
(written only with ``--force``, and then never over an existing file: beside it, as
``NAME-out-of-tolerance.toml``); 2 nothing could be judged (bad option, no server named, a
server error, an unreadable CSV, or an existing ``--out`` file without ``--force``). An
existing file is never overwritten without ``--force``.

The same fit and judge run in CI on the recorded measurements
(validate/test_aerospike_calibration.py, with ``--from-csv``); this script is how a user
calibrates on their own server. ``--from-csv`` re-fits from a CSV written earlier (``.csv``
or ``.csv.gz``), no server needed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import sys
from pathlib import Path

import pandas as pd

from simbatch.planning import judge
from simbatch.planning.judge import Calibration
from validate.aerospike_harness import (
    ENV_DEFAULTS,
    ENV_HOST,
    ENV_VARS,
    HarnessError,
    Server,
    measure,
    server_from_env,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PROG = "python -m validate.calibrate_aerospike"

GRID = {"sizes": [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000], "concurrencies": [1, 2, 4, 8],
        "samples": 2000, "get_samples": 3000, "n_records": 200_000}
QUICK = {"sizes": [1, 10, 100, 1000], "concurrencies": [1, 2], "samples": 300,
         "get_samples": 300, "n_records": 20_000}
SECRET = re.compile(r"PASS|SECRET|TOKEN|KEY|CRED", re.IGNORECASE)
REQUIRED_COLUMNS = ("op", "batch_size", "concurrency", "latency_s")


class UsageError(RuntimeError):
    """The command cannot run as given; the message says why and what to do."""


def calibrate(df: pd.DataFrame, cores: int = 2, calls: int = 2000) -> Calibration:
    """Fit and judge raw samples (``simbatch.planning.judge.calibrate``)."""
    return judge.calibrate(df, cores=cores, calls=calls)


def model_text(cal: Calibration, prov: dict[str, str]) -> str:
    """The models/ file text (``simbatch.planning.fit.model_toml``)."""
    from simbatch.planning.fit import model_toml

    return model_toml(cal.fit, prov, judge.quality(cal.verdict))


def report(cal: Calibration) -> str:
    """Per cell and per region: measured, predicted, allowed, verdict; then the model."""
    c = cal.fit.config
    m, r = c.machine, c.regime
    single = ("not seen at the slow level" if c.single_record_us is None
              else f"{c.single_record_us:.1f} us")
    fast = ("not seen" if r.fast_fixed_us is None
            else f"{r.fast_fixed_us:.1f} us + per key, lasting ~{r.fast_sojourn_ms:g} ms")
    model = (f"model: {c.fixed_us:.1f} us + {c.per_record_us:.3f} us/key at the slow level "
             f"(single record {single}); fast level {fast}; {m.cores} shared cores "
             f"delivering {m.busy_capacity_cores} when busy, {m.wake_us} us to wake an idle "
             "one; client work under the GIL")
    return "\n".join([judge.cells_md(cal.table), "", model, judge.regions_md(cal.verdict)])


def _repo_relative(path: Path) -> str:
    """``path`` relative to the repository root (``../shared/...`` outside it)."""
    return os.path.relpath(Path(path).resolve(), REPO)


def _toml_safe(text: str) -> str:
    # simbatch.fit.model_toml writes each provenance value inside "..." as it is
    return text.replace("\\", "/").replace('"', "'").replace("\n", "; ")


def environment() -> str:
    """The environment variables the run reads: name=value, a secret's name only, or unset."""
    parts = []
    for name in ENV_VARS:
        value = os.environ.get(name, "").strip()
        if not value:
            parts.append(f"{name} unset" + (f" (default {ENV_DEFAULTS[name]!r})"
                                             if name in ENV_DEFAULTS else ""))
        else:
            parts.append(f"{name}=<set, secret>" if SECRET.search(name) else f"{name}={value}")
    return ", ".join(parts)


def command(args: argparse.Namespace) -> str:
    """The exact command, every option spelled out, paths relative to the repository root
    (run it from there); the server's variables first, secrets left out."""
    env = [f"{n}={shlex.quote(os.environ[n].strip())}" for n in ENV_VARS
           if os.environ.get(n, "").strip() and not SECRET.search(n) and not args.from_csv]
    opts = ["--quick"] if args.quick else []
    if args.from_csv:
        opts += ["--from-csv", _repo_relative(Path(args.from_csv))]
    else:
        opts += ["--samples-dir", _repo_relative(Path(args.samples_dir))]
        opts += ["--cleanup"] if args.cleanup else []
    opts += ["--out", _repo_relative(Path(args.out))] + (["--force"] if args.force else [])
    return " ".join(env + [PROG] + [shlex.quote(o) for o in opts])


def _client_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"aerospike (Python) {version('aerospike')}"
    except PackageNotFoundError:
        return "aerospike (Python) not installed where this ran"


def provenance(args: argparse.Namespace, server: Server | None, grid: dict, csv_path: Path,
               info: dict[str, str]) -> dict[str, str]:
    system = (f"Aerospike {info.get('edition', '?')} build {info.get('build', '?')} at "
              f"{server}" if server else info.get("system", "Aerospike (from CSV)"))
    prov = {"system": system,
            "server_config": (f"service: {info.get('service_config', '?')}; namespace: "
                              f"{info.get('namespace_config', '?')}"),
            "client": info.get("client", _client_version()),
            "shared_cores": info.get("cores", "2 (not recorded beside the CSV: the recorded "
                                              "VMs' vCPUs)"),
            "machine": f"{platform.platform()}, {platform.processor() or platform.machine()}",
            "measured_on": info.get("measured_on", "unknown (no description beside the CSV)"),
            "settings": f"{grid}" if server else "from the CSV's own cells",
            "records": info.get("records", "not recorded"),
            "samples": _repo_relative(csv_path),
            "command": command(args),
            "as_typed": " ".join([PROG] + [shlex.quote(a) for a in args.argv]),
            "environment": environment()}
    return {k: _toml_safe(v) for k, v in prov.items()}


def _sidecar(csv_path: Path) -> Path:
    name = csv_path.name.removesuffix(".gz").removesuffix(".csv")
    return csv_path.with_name(f"{name}.server.json")


def read_samples(path: Path) -> pd.DataFrame:
    try:
        df = pd.read_csv(path)
    except (OSError, ValueError, EOFError) as exc:
        raise UsageError(f"cannot read --from-csv {path}: {exc}") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise UsageError(f"--from-csv {path} lacks the columns {missing}; it needs "
                         f"{list(REQUIRED_COLUMNS)}")
    if not ((df.op == "batch_read") & (df.concurrency == 1)).any():
        raise UsageError(f"--from-csv {path} has no batch_read calls at concurrency 1 (the "
                         "fit starts from them)")
    return df


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _measure(args, server: Server, grid: dict) -> tuple[pd.DataFrame, Path, dict]:
    info: dict[str, str] = {}
    started = dt.datetime.now(dt.UTC)
    df = measure(server, grid["sizes"], grid["concurrencies"], samples=grid["samples"],
                 get_samples=grid["get_samples"], n_records=grid["n_records"],
                 progress=_progress, cleanup=args.cleanup, info=info)
    info["measured_on"] = (f"{started:%Y-%m-%d %H:%M}-{dt.datetime.now(dt.UTC):%H:%M} UTC")
    # the vCPUs the client shares with a server on the same host (loopback: the fit's cores)
    info["cores"] = str(os.cpu_count() or 2)
    info["client"] = _client_version()
    info["system"] = (f"Aerospike {info.get('edition', '?')} build {info.get('build', '?')} "
                      f"at {server}")
    csv_path = Path(args.samples_dir) / f"aerospike-{server.host}-{started:%Y%m%dT%H%M%SZ}.csv"
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(csv_path, index=False)
    _sidecar(csv_path).write_text(json.dumps(info, indent=1) + "\n")
    return df, csv_path, info


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, allow_abbrev=False, description=__doc__.split("\n\n")[0],
        epilog=f"The server: {ENV_HOST}=host[:port] (and optionally "
               "SIMBATCH_AEROSPIKE_NAMESPACE, default 'test', SIMBATCH_AEROSPIKE_SET, default "
               "'utxo'). Exit status: 0 within tolerance, 1 out of tolerance, 2 could not run.")
    p.add_argument("--quick", action="store_true",
                   help="a small grid: 4 sizes x 2 concurrencies, 300 calls a cell, 20,000 "
                        "records (about 15 s in all; the full grid takes about 4 minutes)")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="the model file to write (default models/aerospike-<host>.toml, "
                        "models/aerospike-from-csv.toml with --from-csv); an existing file "
                        "is replaced only with --force")
    p.add_argument("--force", action="store_true",
                   help="replace an existing --out file; write the model even when it is out "
                        "of tolerance (the exit status still says so; never over an existing "
                        "file: beside it, as NAME-out-of-tolerance.toml)")
    p.add_argument("--samples-dir", default=str(HERE / "measurements"), metavar="DIR",
                   help="where the raw samples (CSV) and the server's description (JSON) go "
                        "(default validate/measurements/, which git ignores)")
    p.add_argument("--cleanup", action="store_true",
                   help="remove the calibration's records from the set after the run (even "
                        "if it fails); default: leave them, so the next run skips loading")
    p.add_argument("--from-csv", default=None, metavar="CSV",
                   help="re-fit samples written earlier (.csv or .csv.gz), no server needed")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser().parse_args(argv)
    args.argv = argv
    grid = QUICK if args.quick else GRID
    server: Server | None = None
    try:
        if args.from_csv and args.cleanup:
            raise UsageError("--cleanup needs a server run; it means nothing with --from-csv")
        if not args.from_csv:
            server = server_from_env()
            if server is None:
                raise UsageError(f"no Aerospike server named: set {ENV_HOST}=host[:port]")
        default = f"aerospike-{server.host if server else 'from-csv'}.toml"
        args.out = str(Path(args.out) if args.out else REPO / "models" / default)
        if Path(args.out).exists() and not args.force:
            raise UsageError(f"{_repo_relative(Path(args.out))} exists; pass --force to "
                             "replace it, or --out to write elsewhere")
        if args.from_csv:
            csv_path = Path(args.from_csv)
            df = read_samples(csv_path)
            side = _sidecar(csv_path)
            info = json.loads(side.read_text()) if side.is_file() else {}
        else:
            df, csv_path, info = _measure(args, server, grid)
    except (HarnessError, UsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    cores = int(info.get("cores", 2)) if args.from_csv else int(info["cores"])
    _progress(f"fitting and judging {len(df):,} samples (about 15-30 s; {cores} shared cores)")
    cal = calibrate(df, cores=cores)
    print(report(cal))
    print("within tolerance: " + ", ".join(f"{r.region} {'yes' if r.ok else 'NO'}"
                                           for r in cal.verdict.itertuples()))
    out = Path(args.out)
    written = judge.write_model(out, model_text(cal, provenance(args, server, grid, csv_path,
                                                                info)),
                                ok=cal.ok, force=args.force)
    if written is None:
        print(f"not written: the model is out of tolerance, so nothing was written to "
              f"{_repo_relative(out)} (pass --force to write it anyway)", file=sys.stderr)
    else:
        print(f"wrote {_repo_relative(written)} (samples in {_repo_relative(csv_path)})"
              + ("" if cal.ok else "; OUT OF TOLERANCE, written because of --force"))
    return 0 if cal.ok else 1


if __name__ == "__main__":
    sys.exit(main())
