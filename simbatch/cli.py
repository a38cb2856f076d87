"""The ``simbatch`` command.

``simbatch run FILE``: run a scenario file and print predicted beside published (a Markdown
table, ``--json`` for one JSON document, ``--out`` for the tidy table as CSV or Parquet,
``--plots DIR`` for PNG plots). ``simbatch fit-service SAMPLES --out FILE``: fit the batch
call's service model to measured samples.

Bad input (a missing file, an unknown key, a bad value, a run too big to finish) prints one
line naming the file, the key and the value, and exits with status 2; never a traceback. A
closed pipe (``simbatch run ... | head``) ends quietly.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import NoReturn

from . import __version__
from .core.errors import ConfigError, check_int
from .core.work import Bounds


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors in simbatch's one line and status."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"simbatch: error: {message} (see simbatch {self.prog.split()[-1]} "
                     "--help)\n")


def _int(name: str, minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ConfigError.parameter("simbatch run", name, f"an integer >= {minimum}",
                                        text) from None
        return check_int("simbatch run", name, value, minimum=minimum)
    return parse


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="simbatch", description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--version", action="version", version=f"simbatch {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="run a scenario file", allow_abbrev=False,
                         description="Run every case of a scenario file and print predicted "
                                     "beside published.")
    run.add_argument("file", help="the scenario file (TOML), e.g. scenarios/r1-decorate-fanout"
                                  ".toml")
    run.add_argument("--replications", default=None, metavar="R",
                     help="replications per case (default: the file's [scenario] value)")
    run.add_argument("--seed", default=None, metavar="S",
                     help="the experiment's seed (default: the file's); replication r runs "
                          "with a seed derived from it, recorded in the results")
    run.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                     help="override a field in every case, e.g. --set batcher.timeout_ms=5 "
                          "(the value is read as TOML; repeat for several)")
    run.add_argument("--json", action="store_true",
                     help="print one JSON document instead of the table")
    run.add_argument("--out", default=None, metavar="PATH",
                     help="write the tidy table, one row per case, to PATH (.csv or "
                          ".parquet), and one row per replication beside it (NAME.runs.EXT)")
    run.add_argument("--plots", metavar="DIR", default=None,
                     help="save the engine's plots (latency CDFs, a metric against a swept "
                          "parameter, throughput against cores) as PNG files in DIR")
    run.add_argument("--max-events", default=None, metavar="N",
                     help=f"refuse runs estimated above N simulation events "
                          f"(default {Bounds().max_events:.0e})")
    fit = sub.add_parser("fit-service", allow_abbrev=False,
                         help="fit the service model to measured samples",
                         description="Fit the batch call's service model to measured samples "
                                     "and write a models/ file.")
    fit.add_argument("samples", help="CSV of raw samples (op, batch_size, concurrency, "
                                     "latency_s)")
    fit.add_argument("--out", required=True, help="models/ file to write")
    fit.add_argument("--system", default="", help="what was measured (for provenance)")
    return parser


def _write_tables(scenario, summaries, out: str) -> list[Path]:
    from .planning.sweep import tables

    path = Path(out)
    if path.suffix not in (".csv", ".parquet"):
        raise ConfigError.parameter("simbatch run", "out", "a path ending in .csv or .parquet",
                                    out)
    cases, runs = tables(scenario, summaries)
    runs_path = path.with_name(f"{path.stem}.runs{path.suffix}")
    path.parent.mkdir(parents=True, exist_ok=True)
    for frame, target in ((cases, path), (runs, runs_path)):
        if path.suffix == ".csv":
            frame.to_csv(target, index=False)
        else:
            frame.to_parquet(target, index=False)
    return [path, runs_path]


def _run(args: argparse.Namespace, argv: list[str]) -> int:
    import simbatch  # noqa: F401  (registers the engines)

    from .planning.report import document, markdown, to_json
    from .planning.scenario import load_scenario
    from .planning.sweep import run_scenario

    replications = (None if args.replications is None
                    else _int("replications", 1)(args.replications))
    seed = None if args.seed is None else _int("seed", 0)(args.seed)
    bounds = Bounds() if args.max_events is None else Bounds(
        max_events=_int("max_events", 1)(args.max_events))
    scenario = load_scenario(args.file, args.set)
    summaries = run_scenario(scenario, replications=replications, seed=seed, bounds=bounds)
    if args.json:
        command = "simbatch " + " ".join(shlex.quote(a) for a in argv)
        print(to_json(document(scenario, summaries, command=command,
                               replications=replications, seed=seed)))
    else:
        print(markdown(scenario, summaries))
    if args.out:
        for path in _write_tables(scenario, summaries, args.out):
            print(f"wrote {path}", file=sys.stderr)
    if args.plots:
        from .planning.plots import save_plots

        for path in save_plots(scenario, summaries, args.plots):
            print(f"saved {path}", file=sys.stderr)
    return 0


def _fit_service(args: argparse.Namespace) -> int:
    from .planning.fit import check_fit, fit_quality, fit_service, load_samples, model_toml

    df = load_samples(args.samples)
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
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv)
    try:
        if args.command == "fit-service":
            return _fit_service(args)
        return _run(args, argv)
    except ConfigError as exc:
        print(f"simbatch: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader went away (| head): stop quietly, and keep Python's exit from
        # complaining about the closed stdout
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
