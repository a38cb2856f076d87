"""Run every case of a scenario (named cases times sweep axes) and compare with figures."""

from __future__ import annotations

from dataclasses import dataclass

from .results import Summary, summarize
from .scenario import Scenario
from .simulation import replicate


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


def run_scenario(scenario: Scenario, *, replications: int | None = None,
                 seed: int | None = None) -> list[Summary]:
    """Simulate every case ``replications`` times (default: the file's) and summarize.

    Examples
    --------
    >>> from simbatch.scenario import load_scenario
    >>> sc = load_scenario("scenarios/r1-decorate-fanout.toml")   # doctest: +SKIP
    >>> [round(s.metrics["block_time_s"], 2) for s in run_scenario(sc)]  # doctest: +SKIP
    [10.68, 10.68, 2.67, 0.67, 0.02]
    """
    reps = scenario.replications if replications is None else replications
    base_seed = scenario.seed if seed is None else seed
    out = []
    for case in scenario.cases:
        if scenario.kind == "kafka":
            from .kafka_sim import summarize_kafka
            summary = summarize_kafka(case, reps, base_seed)
        elif scenario.kind == "contention":
            from .bucketmap import summarize_contention
            summary = summarize_contention(case, reps, base_seed)
        else:
            summary = summarize(case.name, replicate(case, reps, base_seed,
                                                     scenario=scenario.name))
        summary.published = {case.name: scenario.published.get(case.name, {})}
        out.append(summary)
    return out


def compare(scenario: Scenario, summaries: list[Summary]) -> list[Comparison]:
    """Every published figure of the scenario beside its predicted value."""
    rows = []
    for summary in summaries:
        for metric, figure in scenario.published.get(summary.name, {}).items():
            rows.append(Comparison(summary.name, metric, summary.metrics[metric], figure,
                                   scenario.tolerance.allowed(figure)))
    return rows
