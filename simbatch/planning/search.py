"""The planner's search: a coarse pass, refinement where it matters, then enough
replications to tell the best apart.

1. **Coarse pass.** Every combination of the knobs' coarse values (a list's values, a
   range's ``points``), less those a knob constraint excludes; beyond ``budget``
   combinations, a seeded sample of them (the current configuration always in).
2. **Refinement** (range knobs only, ``refine_rounds`` rounds): midpoints between each of
   the best feasible candidates and its neighbours along every range knob, and between
   neighbours where a constraint starts or stops holding (where the objective and the
   constraints change).
3. **Separation.** The best feasible candidate and every candidate whose objective is not
   told apart from it get more replications (doubling, up to ``max_replications``), on
   common random numbers (replication r of every candidate runs with the same seed), until
   the best differs from the runner-up at 95 % (a paired interval: Student-t of the
   per-replication differences for the mean, a paired bootstrap for a median or a
   percentile), or the budget is spent, and the report says which.

Every candidate's runs go through an executor (:mod:`simbatch.planning.executors`), so a
search is the same on one core, many, or a Dask cluster.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.results import RunRecord, Summary, summarize
from ..core.streams import replication_seed
from ..core.work import Bounds
from .executors import Executor, SerialExecutor, Task
from .question import Constraint, Objective, Question
from .sweep import check_scenario_work

Progress = Callable[[int, int], None]


def statistic(values: np.ndarray, name: str) -> float:
    """A statistic of per-replication values: mean, median, or an upper percentile."""
    values = np.asarray(values, dtype=float)
    if name == "mean":
        return float(values.mean())
    q = 0.5 if name == "median" else float(name[1:]) / 100
    return float(np.quantile(values, q))


def interval(values: np.ndarray, name: str, seed: int = 0) -> float:
    """Half-width of the 95 % interval of the statistic (Student-t for the mean, a seeded
    bootstrap otherwise; 0 with one value or none spread)."""
    from scipy import stats

    values = np.asarray(values, dtype=float)
    if values.size < 2 or np.ptp(values) <= 1e-12 * max(1.0, float(np.abs(values).max())):
        return 0.0
    if name == "mean":
        return float(stats.t.ppf(0.975, values.size - 1) * values.std(ddof=1)
                     / math.sqrt(values.size))
    rng = np.random.default_rng(seed)
    boot = [statistic(values[rng.integers(0, values.size, values.size)], name)
            for _ in range(1000)]
    lo, hi = np.quantile(boot, [0.025, 0.975])
    return float((hi - lo) / 2)


def paired_difference(a: np.ndarray, b: np.ndarray, name: str, seed: int = 0
                      ) -> tuple[float, float]:
    """(difference of the statistic, half-width of its 95 % interval) for two candidates
    run on the same seeds (replication r of one paired with replication r of the other)."""
    from scipy import stats

    n = min(a.size, b.size)
    a, b = np.asarray(a[:n], dtype=float), np.asarray(b[:n], dtype=float)
    diff = statistic(a, name) - statistic(b, name)
    d = a - b
    if n < 2 or np.ptp(d) <= 1e-12 * max(1.0, float(np.abs(d).max())):
        return diff, 0.0
    if name == "mean":
        return diff, float(stats.t.ppf(0.975, n - 1) * d.std(ddof=1) / math.sqrt(n))
    rng = np.random.default_rng(seed)
    boot = []
    for _ in range(1000):
        idx = rng.integers(0, n, n)
        boot.append(statistic(a[idx], name) - statistic(b[idx], name))
    lo, hi = np.quantile(boot, [0.025, 0.975])
    return diff, float((hi - lo) / 2)


@dataclass
class Candidate:
    """One configuration of the knobs and what its runs gave."""

    params: dict[str, Any]
    label: str
    case: Any = None
    records: list[RunRecord] = field(default_factory=list)
    summary: Summary | None = None

    def values(self, metric: str) -> np.ndarray:
        """Per replication: a metric's value, or a knob's (the same every time)."""
        if metric in self.params:
            return np.full(len(self.records), float(self.params[metric]))
        return np.array([r.metrics[metric] for r in self.records], dtype=float)

    def value(self, metric: str) -> float:
        """A metric as the scenario reports it (pooled latency percentiles, else mean),
        or a knob's value."""
        if metric in self.params:
            return float(self.params[metric])
        return float(self.summary.metrics[metric]) if self.summary else math.nan

    def objective(self, o: Objective) -> float:
        return statistic(self.values(o.metric), o.statistic)

    def objective_ci(self, o: Objective) -> float:
        return interval(self.values(o.metric), o.statistic)


def key(params: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(sorted((k, repr(v)) for k, v in params.items()))


class Search:
    """Evaluates candidates of a question (see the module docstring)."""

    def __init__(self, question: Question, *, executor: Executor | None = None,
                 progress: Progress | None = None, bounds: Bounds | None = None,
                 seed: int | None = None, scale: dict[str, Any] | None = None,
                 base: str | None = None) -> None:
        self.q = question
        self.base = base or question.base
        self.executor = executor or SerialExecutor()
        self.progress = progress
        self.bounds = bounds or Bounds()
        self.seed = question.settings.seed if seed is None else seed
        self.scale = dict(scale or {})       # workload parameters set on every candidate
        self.evaluated: dict[tuple[Any, ...], Candidate] = {}
        self.runs_done = 0

    # ------------------------------------------------------------ evaluation
    def _label(self, params: dict[str, Any]) -> str:
        from ..core.results import param_columns

        cols = param_columns(list(self.q.knobs))
        return " ".join(f"{cols[k]}={params[k]}" for k in self.q.knobs if k in params)

    def evaluate(self, params_list: list[dict[str, Any]], replications: int
                 ) -> list[Candidate]:
        """Run every candidate to ``replications`` (runs already done are kept)."""
        scenario, engine = self.q.scenario, self.q.scenario.engine
        tasks, owners = [], []
        candidates = []
        for params in params_list:
            cand = self.evaluated.get(key(params))
            if cand is None:
                label = self._label(params)
                case = scenario.derive(self.base, {**params, **self.scale},
                                       f"{self.base} {label}" if self.base != self.q.base
                                       else label, f"{self.q.path} [knobs]")
                cand = Candidate(params=dict(params), label=label, case=case)
                self.evaluated[key(params)] = cand
            candidates.append(cand)
            for r in range(len(cand.records), replications):
                tasks.append(Task(engine.kind, cand.case, replication_seed(self.seed, r), r,
                                  self.bounds))
                owners.append(cand)
        if tasks:
            self._check_work(candidates, replications)
            done0 = self.runs_done

            def progress(done: int, total: int) -> None:
                if self.progress is not None:
                    self.progress(done0 + done, done0 + total)
            records = self.executor.run(tasks, progress)
            self.runs_done += len(tasks)
            for cand, rec in zip(owners, records):
                cand.records.append(rec)
            for cand in {id(c): c for c in owners}.values():
                cand.records.sort(key=lambda r: r.replication)
                cand.summary = summarize(engine, cand.label, cand.records, cand.params)
        return candidates

    def _check_work(self, candidates: list[Candidate], replications: int) -> None:
        scenario = self.q.scenario
        original = scenario.cases
        scenario.cases = [c.case for c in candidates]
        try:
            check_scenario_work(scenario, replications, self.bounds)
        finally:
            scenario.cases = original

    # ------------------------------------------------------------ feasibility
    def feasible(self, cand: Candidate) -> bool:
        return all(c.holds(cand.value(c.name)) for c in self.q.metric_constraints)

    def violation(self, cand: Candidate) -> float:
        return sum(c.violation(cand.value(c.name)) for c in self.q.metric_constraints)

    def _allowed(self, params: dict[str, Any]) -> bool:
        return all(c.holds(float(params[c.name])) for c in self.q.knob_constraints)

    def ranked(self) -> list[Candidate]:
        """Feasible candidates, best objective first (ties: the order of the grid)."""
        o = self.q.objective
        sign = 1.0 if o.goal == "minimize" else -1.0
        feasible = [c for c in self.evaluated.values() if self.feasible(c)]
        return sorted(feasible, key=lambda c: sign * c.objective(o))

    # ------------------------------------------------------------ the three steps
    def grid(self) -> list[dict[str, Any]]:
        keys = list(self.q.knobs)
        combos = [dict(zip(keys, values)) for values in
                  itertools.product(*[self.q.knobs[k].grid() for k in keys])]
        combos = [c for c in combos if self._allowed(c)]
        budget = self.q.settings.budget
        if len(combos) > budget:
            rng = np.random.default_rng(self.seed)
            keep = set(rng.choice(len(combos), budget, replace=False).tolist())
            current = {k: v for k, v in self.q.current.items() if k in self.q.knobs}
            combos = [c for i, c in enumerate(combos) if i in keep or c == current]
        return combos

    def coarse(self) -> list[Candidate]:
        return self.evaluate(self.grid(), self.q.settings.replications)

    def refine(self) -> None:
        ranges = [k for k, knob in self.q.knobs.items() if knob.is_range]
        for _ in range(self.q.settings.refine_rounds if ranges else 0):
            new: list[dict[str, Any]] = []
            seeds = self.ranked()[:3] + self._boundaries(ranges)
            for cand in seeds:
                for k in ranges:
                    new += self._midpoints(cand, k)
            new = [p for p in new if key(p) not in self.evaluated and self._allowed(p)]
            unique = list({key(p): p for p in new}.values())
            if not unique:
                return
            self.evaluate(unique, self.q.settings.replications)

    def _values_along(self, cand: Candidate, k: str) -> list[Any]:
        others = {kk: v for kk, v in cand.params.items() if kk != k}
        return sorted({c.params[k] for c in self.evaluated.values()
                       if {kk: v for kk, v in c.params.items() if kk != k} == others})

    def _midpoints(self, cand: Candidate, k: str) -> list[dict[str, Any]]:
        knob = self.q.knobs[k]
        along = self._values_along(cand, k)
        i = along.index(cand.params[k])
        out = []
        for j in (i - 1, i + 1):
            if 0 <= j < len(along):
                a, b = float(along[i]), float(along[j])
                mid = math.sqrt(a * b) if knob.scale == "log" and a > 0 and b > 0 \
                    else (a + b) / 2
                value = knob.snap([mid])[0]
                if value not in (along[i], along[j]):
                    out.append({**cand.params, k: value})
        return out

    def _boundaries(self, ranges: list[str]) -> list[Candidate]:
        out = []
        for cand in self.evaluated.values():
            for k in ranges:
                along = self._values_along(cand, k)
                i = along.index(cand.params[k])
                if i + 1 < len(along):
                    other = self.evaluated.get(key({**cand.params, k: along[i + 1]}))
                    if other is not None and self.feasible(other) != self.feasible(cand):
                        out.append(cand)
        return out

    def separate(self) -> tuple[bool, int]:
        """More replications for the best and those not told apart from it; returns
        (told apart, replications of the best)."""
        o = self.q.objective
        reps = self.q.settings.replications
        while True:
            ranked = self.ranked()
            if len(ranked) < 2:
                return True, len(ranked[0].records) if ranked else 0
            best = ranked[0]
            close = [c for c in ranked[1:] if not self._apart(best, c, o)]
            if not close:
                return True, len(best.records)
            if reps >= self.q.settings.max_replications:
                return False, len(best.records)
            reps = min(2 * reps, self.q.settings.max_replications)
            self.evaluate([best.params] + [c.params for c in close[:4]], reps)

    def _apart(self, a: Candidate, b: Candidate, o: Objective) -> bool:
        diff, half = paired_difference(a.values(o.metric), b.values(o.metric), o.statistic,
                                       self.seed)
        return abs(diff) > half and diff != 0.0

    def run(self) -> None:
        self.coarse()
        self.refine()


def constraint_slack(c: Constraint, value: float) -> float:
    """How far inside its constraint a value is, relative to the bound (negative outside)."""
    scale = abs(c.bound) or 1.0
    return (c.bound - value) / scale if c.op in ("<=", "<") else (value - c.bound) / scale
