"""Run every case of a scenario, replicated, and compare it with the published figures.

Replication ``r`` of a case runs with ``replication_seed(seed, r)`` (recorded in the
summary's ``runs``); the same seed gives every case the same random numbers (common random
numbers). Before anything runs, each case's work is estimated and a scenario beyond the
bounds is refused (:mod:`simbatch.core.work`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from ..core.errors import ConfigError, check_int
from ..core.results import Summary, cases_table, runs_table, summarize
from ..core.streams import replication_seed
from ..core.work import Bounds, check_total, check_work
from .executors import Executor, SerialExecutor, Task
from .scenario import Scenario


@dataclass(frozen=True)
class Comparison:
    """One published figure beside its prediction."""

    case: str
    metric: str
    predicted: float
    published: float
    allowed: float

    @property
    def error_rel(self) -> float:
        return (self.predicted - self.published) / self.published if self.published else 0.0

    @property
    def ok(self) -> bool:
        return abs(self.predicted - self.published) <= self.allowed


def check_scenario_work(scenario: Scenario, replications: int, bounds: Bounds) -> None:
    """Refuse, before anything runs, a scenario whose runs exceed ``bounds``."""
    total = 0.0
    for case in scenario.cases:
        try:
            total += check_work(case.name, scenario.engine.work(case), replications, bounds)
        except ConfigError as exc:
            raise scenario.locate(exc, case.name) from None
    try:
        check_total(total, bounds, replications)
    except ConfigError as exc:
        raise exc.at(f"{scenario.path}: [scenario] replications") from None


def run_scenario(scenario: Scenario, *, replications: int | None = None,
                 seed: int | None = None, bounds: Bounds | None = None,
                 executor: Executor | None = None,
                 progress: Callable[[int, int], None] | None = None) -> list[Summary]:
    """Simulate every case ``replications`` times (default: the file's) and summarize.

    ``executor`` runs the replications (default: in this process; see
    :mod:`simbatch.planning.executors`): every executor gives the same summaries.
    ``progress(done, total)`` is called as runs finish (the command line draws a bar).

    Examples
    --------
    >>> from simbatch.planning.scenario import load_scenario
    >>> sc = load_scenario("scenarios/r1-decorate-fanout.toml")
    >>> [round(s.metrics["block_time_s"], 2) for s in run_scenario(sc, replications=1)]
    [10.68, 10.68, 2.67, 0.67, 0.02]
    """
    reps = scenario.replications if replications is None else replications
    base_seed = scenario.seed if seed is None else seed
    check_int("run_scenario", "replications", reps, minimum=1)
    check_int("run_scenario", "seed", base_seed)
    bounds = bounds or Bounds()
    check_scenario_work(scenario, reps, bounds)
    engine = scenario.engine
    seeds = [replication_seed(base_seed, r) for r in range(reps)]
    tasks = [Task(engine.kind, case, seeds[r], r, bounds)
             for case in scenario.cases for r in range(reps)]
    try:
        records = (executor or SerialExecutor()).run(tasks, progress)
    except ConfigError as exc:
        if exc.owner == "simbatch":       # the command line's (--scheduler), not the file's
            raise
        raise scenario.locate(exc, _case_of(exc, scenario)) from None
    out = []
    for i, case in enumerate(scenario.cases):
        summary = summarize(engine, case.name, records[i * reps:(i + 1) * reps], case.params)
        summary.published = scenario.published.get(case.name, {})
        out.append(summary)
    return out


def _case_of(error: ConfigError, scenario: Scenario) -> str:
    """The case a run's error came from (its origins locate the value); the first case
    whose parameters hold the value, else the first case."""
    for case in scenario.cases:
        if case.params.get(".".join(error.path)) == error.value:
            return str(case.name)
    return str(scenario.cases[0].name) if scenario.cases else ""


def compare(scenario: Scenario, summaries: list[Summary]) -> list[Comparison]:
    """Every published figure of the scenario beside its predicted value."""
    return [Comparison(s.name, metric, s.metrics[metric], figure,
                       scenario.tolerance.allowed(figure))
            for s in summaries for metric, figure in s.published.items()]


def tables(scenario: Scenario, summaries: list[Summary]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The tidy cases table and runs table of a scenario's results."""
    return (cases_table(summaries, scenario=scenario.name,
                        allowed=scenario.tolerance.allowed),
            runs_table(summaries, scenario=scenario.name))
