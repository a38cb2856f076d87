"""Fit the batch-call service model to measured latencies, one data set at a time, and write
a models/ file.

Input: raw per-call samples in the long format of the recorded Aerospike data
(``../shared/data/aerospike-loopback/batch_read_latency.csv``,
``../shared/data/aerospike-harness-live-2026-11-23/full-grid.csv.gz``, and what
``validate/calibrate_aerospike.py`` writes): columns ``op, batch_size, concurrency,
latency_s``, and ``start_s`` (call order) where the two cost levels are looked for. The
model (:mod:`simbatch.batching.servicecost`, :mod:`simbatch.batching.hostcores`) and the
evidence behind it: ``validate/aerospike_model/FINDINGS.md``.

What is fitted, and on which cells (:func:`fit_service`); every parameter is shared by every
cell of the data set:

* **levels**: every cell of at most 20 keys is split into a low and a high level by a
  two-component normal mixture on log latency (:func:`split_levels`); "slow-level calls" are
  a two-level cell's high level, or all of a one-level cell;
* ``fixed_us``, ``per_record_us``: ``median(n) = fixed + per_record * n`` on the medians of
  the slow-level calls of the concurrency-1 ``batch_read`` cells with ``n <= 2000``
  (``scipy.optimize.least_squares`` on relative residuals). Above 2000 keys the Python
  client's garbage collector adds pauses that grow faster than linearly: reported, not
  fitted;
* ``single_record_us``: the median of the slow-level concurrency-1 ``get`` calls;
* ``[service.tail]``: per region of batch size (small < 32 keys, medium < 317, large; the
  geometric midpoints of the grid's 20|50 and 200|500), ``N_RATIOS`` quantile points of the
  slow-level concurrency-1 calls divided by their cell's slow-level median;
* ``[service.regime]`` ``fast_fixed_us``: the low level of the smallest two-level
  concurrency-1 cell with at least 100 fast calls, less its keys' cost; else the one-key
  cell at concurrency 2 when it ran fast (median under 60 % of the slow line): the value
  for which the model, at that concurrency, gives that cell's median. ``fast_sojourn_ms``:
  time spent in fast calls over the switches from fast to slow seen in concurrency-1 cells
  (the default when none is seen). ``fast_share`` stays 0: an input, not a fit;
* ``[service.machine]``: ``cores`` is given (the machine's vCPUs, 2 on the recorded VMs);
  ``busy_capacity_cores`` and ``wake_us`` are fitted on the medians of the concurrency >= 2
  cells of 2 to 200 keys (Nelder-Mead on the mean absolute log error, common random numbers,
  ``calls`` simulated calls a cell: a median needs fewer than a p99); the client's shares of
  the call's CPU (0.3 of the fixed, 0.4 of the per-key cost) and the share before the call
  (0.3) are assumed: the recorded data do not identify them (any key share from 0.1 to 0.55
  fits as well, FINDINGS.md section 5).

:mod:`simbatch.planning.judge` predicts every cell with the fitted model and judges it.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares, minimize
from scipy.special import logsumexp

from ..batching import ServiceConfig
from ..batching.closedloop import closed_loop
from ..batching.hostcores import MachineConfig
from ..batching.servicecost import REGIONS, RegimeConfig, TailConfig
from ..core.errors import ConfigError

COLUMNS = ("op", "batch_size", "concurrency", "latency_s")
MAX_SIZE = 2000                  # above it the client's GC pauses grow faster than n
LEVEL_MAX_SIZE = 20              # cells where two levels are looked for
REGION_EDGES = (32, 317)         # geometric midpoints of 20|50 and 200|500 keys
N_RATIOS = 200                   # quantile points per region
CONC_FIT_SIZES = (2, 200)        # the concurrent cells the machine is fitted on
# the client's shares of a call's CPU: not identified by the samples, assumed
ASSUMED = MachineConfig(client_fixed_share=0.3, client_key_share=0.4, client_pre_share=0.3,
                        client_lock=True)
MIN_SEPARATION = 3.0             # level means apart, in the wider level's log-sd
MIN_SHARE = 0.02                 # a smaller component is a tail, not a level
FAST_BELOW = 0.6                 # a cell under 60 % of the slow line ran at the fast level


@dataclass(frozen=True)
class ServiceFit:
    """A fitted service model and what it was fitted on."""

    config: ServiceConfig
    max_size: int
    n_samples: int
    notes: dict[str, str] = field(default_factory=dict)


def load_samples(path: str | Path) -> pd.DataFrame:
    """Raw samples from a CSV (``.csv`` or ``.csv.gz``) with the columns ``op, batch_size,
    concurrency, latency_s``."""
    try:
        df = pd.read_csv(path)
    except (OSError, ValueError, UnicodeDecodeError, EOFError) as exc:
        raise ConfigError.parameter("fit-service", "samples", "a readable CSV file",
                                    f"{path} ({exc})") from None
    missing = sorted(set(COLUMNS) - set(df.columns))
    if missing:
        raise ConfigError.parameter("fit-service", "samples", "a CSV with the columns "
                                    + ", ".join(COLUMNS), f"{path} without {missing}")
    reads = df[df.op == "batch_read"]
    if reads.empty or not (reads.concurrency == 1).any():
        raise ConfigError.parameter("fit-service", "samples", "a CSV with batch_read calls "
                                    "at concurrency 1", f"{path}")
    return df


# ---------------------------------------------------------------------- levels
def split_levels(latency_us: np.ndarray, iters: int = 300) -> np.ndarray | None:
    """Which calls of a cell are at its high level (a boolean array in the calls' order),
    or ``None`` if the cell has one level: EM for two normals on log latency; two levels
    when their means are at least ``MIN_SEPARATION`` log-sds apart and the smaller holds at
    least ``MIN_SHARE`` of the calls.

    >>> rng = np.random.default_rng(0)
    >>> high = split_levels(np.r_[rng.normal(17, 1, 500), rng.normal(95, 5, 500)])
    >>> float(high.mean()), bool(high[-1]), split_levels(rng.normal(95, 5, 500)) is None
    (0.5, True, True)
    """
    y = np.log(np.asarray(latency_us, dtype=float))
    mu, sd, w = np.quantile(y, [0.05, 0.95]), np.array([0.05, 0.05]), np.array([0.5, 0.5])
    for _ in range(iters):
        lp = np.log(w) - np.log(sd) - 0.5 * ((y[:, None] - mu) / sd) ** 2
        r = np.exp(lp - logsumexp(lp, axis=1, keepdims=True))
        tot = r.sum(0).clip(1e-9)
        w = (tot / len(y)).clip(1e-6)
        mu = (r * y[:, None]).sum(0) / tot
        sd = np.sqrt((r * (y[:, None] - mu) ** 2).sum(0) / tot).clip(0.01)
    lo, hi = np.argsort(mu)
    if (mu[hi] - mu[lo]) / sd.max() < MIN_SEPARATION or w.min() < MIN_SHARE:
        return None
    high = r[:, hi] > 0.5
    return None if high.all() or not high.any() else high


def _ordered(g: pd.DataFrame) -> pd.DataFrame:
    return g.sort_values("start_s") if "start_s" in g.columns else g


def slow_calls(g: pd.DataFrame) -> np.ndarray:
    """A cell's slow-level latencies (us), in call order."""
    x = _ordered(g).latency_s.to_numpy() * 1e6
    high = split_levels(x) if int(g.batch_size.iloc[0]) <= LEVEL_MAX_SIZE else None
    return x if high is None else x[high]


def region(n: int) -> int:
    """The tail region of a call of ``n`` keys (0 small, 1 medium, 2 large)."""
    return int(np.searchsorted(REGION_EDGES, n, side="right"))


# ---------------------------------------------------------------------- concurrency 1
def _c1(df: pd.DataFrame, op: str = "batch_read", max_size: int = MAX_SIZE) -> pd.DataFrame:
    return df[(df.op == op) & (df.concurrency == 1) & (df.batch_size <= max_size)]


def _line(med: dict[int, float]) -> tuple[float, float]:
    n, y = np.array(list(med), dtype=float), np.array(list(med.values()))
    if len(n) == 1:
        return float(y[0]), 0.0
    res = least_squares(lambda q: (q[0] + q[1] * n) / y - 1.0, x0=[50.0, 3.0],
                        bounds=([0.0, 0.0], [np.inf, np.inf]))
    return float(res.x[0]), float(res.x[1])


def fit_line(df: pd.DataFrame, max_size: int = MAX_SIZE
             ) -> tuple[float, float, dict[int, float]]:
    """``fixed_us, per_record_us`` on the concurrency-1 slow-level medians, and the cells
    that ran at the fast level throughout (their median under ``FAST_BELOW`` times the line
    through the other cells: a cell shorter than the fast regime shows one level, the fast
    one), which the line leaves out: ``{keys: median us}``."""
    med = {int(n): float(np.median(slow_calls(g))) for n, g in _c1(df, max_size=max_size)
           .groupby("batch_size")}
    fast: dict[int, float] = {}
    for n in sorted(k for k in med if k <= LEVEL_MAX_SIZE):
        others = {k: v for k, v in med.items() if k != n and k not in fast}
        if len(others) >= 2:
            fixed, per = _line(others)
            if med[n] < FAST_BELOW * (fixed + per * n):
                fast[n] = med[n]
    fixed, per = _line({k: v for k, v in med.items() if k not in fast})
    return fixed, per, fast


def fit_tails(df: pd.DataFrame, max_size: int = MAX_SIZE, points: int = N_RATIOS,
              fast_cells: dict[int, float] | None = None, line: tuple[float, float] = (0, 0)
              ) -> TailConfig:
    """Quantile points of latency / level median per region of batch size, from each
    concurrency-1 cell's calls at its own level: the slow level, or for a cell that ran fast
    throughout (``fast_cells``, with the slow ``line``) its calls below the geometric
    midpoint of the two levels. A region without a measured cell borrows its nearest
    neighbour's."""
    pooled: list[list[np.ndarray]] = [[] for _ in REGIONS]
    for n, g in _c1(df, max_size=max_size).groupby("batch_size"):
        n = int(n)
        if fast_cells and n in fast_cells:
            x = g.latency_s.to_numpy() * 1e6
            calls = x[x < math.sqrt(fast_cells[n] * (line[0] + line[1] * n))]
        else:
            calls = slow_calls(g)
        pooled[region(n)].append(calls / np.median(calls))
    q = (np.arange(points) + 0.5) / points
    ratios = [tuple(round(float(x), 5) for x in np.quantile(np.concatenate(p), q)) if p
              else None for p in pooled]
    for i in range(len(ratios)):
        if ratios[i] is None:
            near = min((j for j, r in enumerate(ratios) if r is not None),
                       key=lambda j: abs(j - i))
            ratios[i] = ratios[near]
    return TailConfig(edges_keys=REGION_EDGES, ratios=tuple(r for r in ratios if r))


def fit_single(df: pd.DataFrame, slow_one_key_us: float) -> float | None:
    """The single-record path (``get``) at concurrency 1, slow level, microseconds;
    ``None`` without ``get`` calls or when they all ran at the fast level (under
    ``FAST_BELOW`` times ``slow_one_key_us``, the slow line at one key)."""
    gets = _c1(df, "get")
    if gets.empty:
        return None
    median = float(np.median(slow_calls(gets)))
    return round(median, 3) if median >= FAST_BELOW * slow_one_key_us else None


# ---------------------------------------------------------------------- the fast level
def _two_level_c1(df: pd.DataFrame) -> list[tuple[int, pd.DataFrame, np.ndarray]]:
    out = []
    for n, g in _c1(df, max_size=LEVEL_MAX_SIZE).groupby("batch_size"):
        g = _ordered(g)
        high = split_levels(g.latency_s.to_numpy() * 1e6)
        if high is not None:
            out.append((int(n), g, high))
    return out


def fast_sojourn_ms(df: pd.DataFrame) -> float | None:
    """Time in fast calls over the switches from fast to slow (the fast level ending before
    the last tenth of a concurrency-1 cell); ``None`` if no switch is seen."""
    fast_ms, switches = 0.0, 0
    for _, g, high in _two_level_c1(df):
        fast = ~high
        fast_ms += float(g.latency_s.to_numpy()[fast].sum()) * 1e3
        switches += int(np.flatnonzero(fast)[-1] < 0.9 * len(fast))
    return round(fast_ms / switches, 2) if switches else None


def fit_fast_fixed(df: pd.DataFrame, base: ServiceConfig, fast_cells: dict[int, float],
                   calls: int = 300) -> float | None:
    """The fast level's fixed cost, microseconds: the low level of the smallest two-level
    concurrency-1 cell with at least 100 fast calls, else the smallest concurrency-1 cell
    that ran fast throughout (``fast_cells``), less their keys' cost; else the one-key cell
    at concurrency 2 if it ran fast (median under ``FAST_BELOW`` times the slow line): the
    value for which the model, at that concurrency, gives its median."""
    per = base.per_record_us
    lows = [(n, float(np.median(g.latency_s.to_numpy()[~high])) * 1e6 - per * n)
            for n, g, high in _two_level_c1(df) if (~high).sum() >= 100]
    lows += [(n, med - per * n) for n, med in fast_cells.items() if not lows]
    if lows:
        return round(max(min(lows)[1], 0.0), 3)
    one = df[(df.op == "batch_read") & (df.batch_size == 1) & (df.concurrency == 2)]
    if one.empty or one.latency_s.median() * 1e6 >= FAST_BELOW * (base.fixed_us + per):
        return None
    target = float(one.latency_s.median())

    def median_at(fixed_us: float) -> float:
        cfg = replace(base, regime=RegimeConfig(fast_fixed_us=fixed_us, fast_share=1.0))
        return float(np.median(closed_loop(cfg, 1, 2, calls=calls, seed=3)))

    lo, hi = 0.0, base.fixed_us
    for _ in range(14):                          # bisection: the median grows with it
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if median_at(mid) < target else (lo, mid)
    return round((lo + hi) / 2, 3)


# ---------------------------------------------------------------------- the machine
def conc_cells(df: pd.DataFrame, sizes: tuple[int, int] = CONC_FIT_SIZES) -> pd.Series:
    """Measured medians (s) of the concurrent batch_read cells of ``sizes[0]`` to
    ``sizes[1]`` keys, by (batch_size, concurrency)."""
    conc = df[(df.op == "batch_read") & (df.concurrency > 1)
              & df.batch_size.between(*sizes)]
    return conc.groupby(["batch_size", "concurrency"]).latency_s.median()


def _with_machine(base: ServiceConfig, x: np.ndarray) -> ServiceConfig:
    cores = base.machine.cores or 2
    wake_max = max(0.0, base.fixed_us / 2 - 1.0)
    if base.single_record_us is not None:
        wake_max = min(wake_max, max(0.0, base.single_record_us / 2 - 1.0))
    machine = replace(base.machine,
                      busy_capacity_cores=round(float(np.clip(x[0], 1.0, cores)), 4),
                      wake_us=round(float(np.clip(x[1], 0.0, wake_max)), 3))
    return replace(base, machine=machine)


def fit_machine(base: ServiceConfig, df: pd.DataFrame, calls: int = 300,
                maxfev: int = 40) -> ServiceConfig:
    """``busy_capacity_cores`` and ``wake_us`` on the concurrent medians (module docstring);
    ``base`` unchanged when the samples have no concurrent cell to fit on."""
    measured = conc_cells(df)
    if measured.empty:
        return base

    def loss(x) -> float:
        cfg = _with_machine(base, np.asarray(x))
        return float(np.mean([abs(math.log(np.median(closed_loop(
            cfg, int(n), int(c), calls=calls, seed=7)) / m)) for (n, c), m in measured.items()]))

    cores = base.machine.cores or 2
    grid = [(1 + (cores - 1) * a, base.fixed_us * b) for a in (0.25, 0.5, 0.75)
            for b in (0.05, 0.15, 0.3)]
    start = min(grid, key=loss)
    best = minimize(loss, start, method="Nelder-Mead",
                    options={"maxfev": maxfev, "xatol": 0.01, "fatol": 0.001,
                             "initial_simplex": [start, (start[0] + 0.1, start[1]),
                                                 (start[0], start[1] + 4.0)]})
    return _with_machine(base, best.x if best.fun <= loss(start) else np.asarray(start))


# ---------------------------------------------------------------------- the whole fit
def fit_service(df: pd.DataFrame, *, cores: int = 2, max_size: int = MAX_SIZE,
                calls: int = 300) -> ServiceFit:
    """Fit every parameter of the service model to one data set's samples (see the module
    docstring); ``cores``: the vCPUs the client and the server shared.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"op": "batch_read", "batch_size": [1, 1, 10, 10],
    ...                    "concurrency": 1, "latency_s": [6e-5, 6e-5, 9e-5, 9e-5]})
    >>> fit = fit_service(df)
    >>> round(fit.config.fixed_us), round(fit.config.per_record_us, 2)
    (57, 3.33)
    """
    fixed, per, fast_cells = fit_line(df, max_size)
    machine = replace(ASSUMED, cores=cores, busy_capacity_cores=float(cores), wake_us=0.0)
    base = ServiceConfig(fixed_us=round(fixed, 3), per_record_us=round(per, 4),
                         single_record_us=fit_single(df, fixed + per),
                         noise="by_size",
                         tail=fit_tails(df, max_size, fast_cells=fast_cells,
                                        line=(fixed, per)),
                         machine=machine)
    cfg = fit_machine(base, df, calls=calls)
    sojourn = fast_sojourn_ms(df)
    regime = RegimeConfig(fast_fixed_us=fit_fast_fixed(df, cfg, fast_cells),
                          **({"fast_sojourn_ms": sojourn} if sojourn else {}))
    cfg = replace(cfg, regime=regime)
    notes = {"fast_sojourn": "measured" if sojourn else "not identified (no switch from fast "
             "to slow seen at concurrency 1): the default"}
    return ServiceFit(config=cfg, max_size=max_size, n_samples=len(_c1(df, max_size=max_size)),
                      notes=notes)


# ---------------------------------------------------------------------- the models/ file
def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "/").replace('"', "'").replace("\n", "; ") + '"'
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, float):
        text = f"{value:.6g}"
        return text if any(ch in text for ch in ".en") else text + ".0"
    return str(value)


def _table(name: str, obj: object, skip: tuple[str, ...] = ()) -> list[str]:
    values = {k: v for k, v in vars(obj).items() if k not in skip and v is not None}
    return [f"[{name}]"] + [f"{k} = {_toml_value(v)}" for k, v in values.items()] + [""]


def model_toml(fit: ServiceFit, provenance: dict[str, str],
               quality: dict[str, dict[str, object]] | None = None) -> str:
    """The models/ file text: provenance, the judge's verdict by region, then the
    ``[service]`` table and its ``regime``, ``machine`` and ``tail`` tables."""
    cfg = fit.config
    lines = ["# Calibrated batch-read service model; written by simbatch.planning.fit. Do not",
             "# edit by hand: re-run the command in [provenance].command.", "", "[provenance]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in provenance.items()]
    lines += [f'fitted_on = "{_dt.date.today().isoformat()}"',
              f"samples_in_c1_fit = {fit.n_samples}", f"max_size_fitted = {fit.max_size}"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in fit.notes.items()] + [""]
    if quality:
        lines += ["# The judge (simbatch.planning.judge), worst cell per region: measured,",
                  "# predicted, error and what is allowed (concurrency-1 cells with their",
                  "# measured fast-level share; one-key concurrent cells between the regimes)."]
        for name, row in quality.items():
            lines += [f"[fit_quality.{name}]"] + [f"{k} = {_toml_value(v)}"
                                                  for k, v in row.items()] + [""]
    lines += ["[service]", f"fixed_us = {_toml_value(cfg.fixed_us)}",
              f"per_record_us = {_toml_value(cfg.per_record_us)}"]
    if cfg.single_record_us is not None:
        lines.append(f"single_record_us = {_toml_value(cfg.single_record_us)}")
    lines += [f'noise = "{cfg.noise}"', "",
              "# fast_share is an input (0: slow throughout, as long-lived threads run)"]
    lines += _table("service.regime", cfg.regime)
    lines += ["# the client and the server share the machine's cores; the client's shares",
              "# and client_pre_share are assumed (not identified by the samples)"]
    lines += _table("service.machine", cfg.machine)
    lines += ["# latency / median ratios of the concurrency-1 calls, per region of batch size"]
    lines += ["[service.tail]", f"edges_keys = {_toml_value(cfg.tail.edges_keys)}",
              "ratios = ["] + [f"  {_toml_value(r)}," for r in cfg.tail.ratios] + ["]", ""]
    return "\n".join(lines)
