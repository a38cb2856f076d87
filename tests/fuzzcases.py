"""Mutated scenario files and overrides, as a new user (or a typo) would make them.

:func:`mutants` draws, from every shipped scenario, inputs with a deleted key, an unknown
key, a value of the wrong type, a section given as a scalar or a list, an extreme or
non-finite number, bytes that are not UTF-8, a bad ``model =`` file, a bad published figure
and a bad ``--set``. :func:`run_one` runs one through the command line in this process,
bounded in time, and says what happened. Used by tests/test_fuzz.py (a seeded subset in CI,
the full run with ``SIMBATCH_FUZZ_N=600``).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import signal
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tomli_w

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))
BAD_VALUES: list[Any] = ["x", "", True, [1, 2], {"a": 1}, -1, 0, 0.5, -1e308, 1e308, 2**62,
                         10**30, float("nan"), float("inf"), float("-inf"), 1e-300, 1e6, -0.0]
KINDS = ("delete", "unknown", "value", "section", "bytes", "model", "published", "set",
         "case_name")
# the one format: where, then "The 'field' parameter of Owner must ...; got value."
ONE_FORMAT = re.compile(r"^simbatch: error: (?P<where>.+?): The '[^']+' parameter of .+ "
                        r"must .+; got .+\.$")


@dataclass
class Mutant:
    label: str
    data: bytes
    overrides: tuple[str, ...] = ()


class Hang(Exception):
    pass


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = []
    if isinstance(node, dict):
        for key, value in node.items():
            out.append((*path, key))
            out += _leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            if isinstance(value, dict):
                out += _leaves(value, (*path, i))
    return out


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        node = node[part]
    return node


def _absolute_models(node: Any, base: Path) -> Any:
    if isinstance(node, dict):
        return {k: (str((base / v).resolve()) if k == "model" and isinstance(v, str)
                    else _absolute_models(v, base)) for k, v in node.items()}
    if isinstance(node, list):
        return [_absolute_models(v, base) for v in node]
    return node


def _choice(rng: np.random.Generator, items: list[Any]) -> Any:
    return items[int(rng.integers(len(items)))]


def mutant(scenario: Path, rng: np.random.Generator) -> Mutant:
    """One mutated input drawn from ``scenario``."""
    import tomllib

    data = _absolute_models(tomllib.loads(scenario.read_text()), scenario.parent)
    kind = _choice(rng, list(KINDS))
    label = f"{scenario.stem}:{kind}"
    leaves = _leaves(data)
    overrides: tuple[str, ...] = ()
    if kind == "delete":
        path = _choice(rng, leaves)
        del _get(data, path[:-1])[path[-1]]
        label += f":{'.'.join(map(str, path))}"
    elif kind == "unknown":
        tables = [p for p in leaves if isinstance(_get(data, p), dict)] or [()]
        path = _choice(rng, tables)
        _get(data, path)["no_such_key"] = 1
        label += f":{'.'.join(map(str, path))}"
    elif kind == "value":
        path = _choice(rng, [p for p in leaves if not isinstance(_get(data, p), dict)])
        value = _choice(rng, BAD_VALUES)
        _get(data, path[:-1])[path[-1]] = copy.deepcopy(value)
        label += f":{'.'.join(map(str, path))}={value!r}"
    elif kind == "section":
        section = _choice(rng, list(data))
        data[section] = _choice(rng, [5, "text", [1, 2], True])
        label += f":{section}"
    elif kind == "model":
        tables = [p for p in leaves if isinstance(_get(data, p), dict)
                  and p[0] not in ("scenario", "sweep")] or [(next(iter(data)),)]
        path = _choice(rng, tables)
        target = _choice(rng, [str(ROOT / "no-such-model.toml"), str(ROOT / "README.md"),
                               str(ROOT / "models/go-primitives-loopback.toml"), 42,
                               str(ROOT / "scenarios")])
        _get(data, path)["model"] = target
        label += f":{'.'.join(map(str, path))}={target}"
    elif kind == "published":
        cases = data.setdefault("cases", [{"name": "only"}])
        case = _choice(rng, cases)
        case["published"] = _choice(rng, [{"no_such_metric": 1.0}, 3,
                                          {"block_time_s": "fast"},
                                          {"latency_p99_s": float("nan")}])
    elif kind == "case_name":
        cases = data.setdefault("cases", [{"name": "only"}])
        _choice(rng, cases)["name"] = _choice(rng, [3, ["a"], "", cases[0].get("name", "x")])
        if len(cases) == 1:
            cases.append(dict(cases[0]))
    elif kind == "set":
        dotted = [".".join(map(str, p)) for p in leaves
                  if p and p[0] not in ("scenario", "cases", "sweep")
                  and not isinstance(_get(data, p), dict) and len(p) >= 2]
        key = _choice(rng, dotted or ["batcher.size"])
        value = _choice(rng, ["-1", "x", "[1]", "1e400", "nan", "true", "{a=1}", "0", "'s'"])
        overrides = (_choice(rng, [f"{key}={value}", key, "nosuch.field=1", f"{key}=",
                                   "=3", f"{key}==2", *(f"{k}=1" for k in data.get("sweep",
                                                                                  {}))]),)
        label += f":{overrides[0]}"
    text = tomli_w.dumps(data).encode()
    if kind == "bytes":
        at = int(rng.integers(len(text) + 1))
        text = text[:at] + _choice(rng, [b"\xff", b"\xc3\x28", b"\x80\x80", b"\xfe\xff"]) \
            + text[at:]
    return Mutant(label, text, overrides)


def mutants(n: int, seed: int) -> list[Mutant]:
    """``n`` mutants, spread evenly over the shipped scenarios, from ``seed``."""
    rng = np.random.default_rng(seed)
    return [mutant(SCENARIOS[i % len(SCENARIOS)], rng) for i in range(n)]


def _alarm(_signum: int, _frame: Any) -> None:
    raise Hang()


def run_one(m: Mutant, directory: Path, time_limit_s: int = 120,
            max_events: str = "1000000") -> tuple[str, str]:
    """Run ``m`` through ``simbatch run``: ("accepted" | "rejected" | "traceback" | "hang"
    | "bad-json" | "bad-format", detail)."""
    from simbatch.cli import main

    path = directory / "mutant.toml"
    path.write_bytes(m.data)
    args = ["run", str(path), "--replications", "1", "--json", "--max-events", max_events]
    for o in m.overrides:
        args += ["--set", o]
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(time_limit_s)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
    except Hang:
        return "hang", m.label
    except SystemExit as exc:            # argparse refusing an argument
        code = int(exc.code or 0)
    except BaseException:  # noqa: BLE001  (what escaped is what the test reports)
        return "traceback", f"{m.label}\n{traceback.format_exc()}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    if code == 0:
        try:
            doc = json.loads(out.getvalue())
        except ValueError as exc:
            return "bad-json", f"{m.label}: {exc}"
        if not doc.get("cases"):
            return "bad-json", f"{m.label}: no cases"
        return "accepted", m.label
    lines = err.getvalue().strip().splitlines()
    if code != 2 or len(lines) != 1 or not ONE_FORMAT.match(lines[0]) \
            or str(path) not in lines[0]:
        return "bad-format", f"{m.label}: exit {code}: {err.getvalue()!r}"
    return "rejected", m.label
