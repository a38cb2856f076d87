"""Question files (TOML, under ``questions/``): what to decide, over which knobs, toward
which objective, under which constraints.

Layout::

    [question]
    name = "fanout-cap"
    description = "..."
    scenario = "../scenarios/r1-decorate-fanout.toml"   # the base: its sections ...
    case = "cap=16"                                     # ... and, optionally, one case's
    replications = 3             # per candidate in the search
    max_replications = 15        # to tell the best two apart
    seed = 1
    budget = 200                 # candidates in the coarse pass at most
    sensitivity = [0.5, 1.5]     # the workload scaled by these: how far the answer moves
    constraints = ["block_time_s <= 0.050", "workload.cap <= 1024"]
    compare = ["new"]            # other cases of the scenario, run at the recommendation
    report = ["latency_p99_s"]   # metrics to show (default: the engine's p50, p99, throughput)

    [objective]                  # or [[objective]] twice: the second draws a Pareto front
    metric = "block_time_s"
    goal = "minimize"            # or "maximize"
    statistic = "mean"           # over replications: "mean", "median", "p90", "p95", "p99"

    [knobs]                      # "section.field" = a list of values or a range
    "workload.cap" = { values = [1, 4, 16, 64, 256, 1024] }
    "batcher.timeout_ms" = { min = 1, max = 50, scale = "log", points = 6 }

    [current]                    # the configuration in use today (optional)
    "workload.cap" = 16

    [workload]                   # sections: override the base scenario's, as in a scenario
    n_transactions = 3000

A constraint is ``name op number``, ``op`` one of ``<=``, ``<``, ``>=``, ``>``; ``name`` is a
metric of the engine (checked on each candidate) or a knob (it limits the search space). An
objective's ``metric`` may also be a numeric knob: "the smallest fan-out cap that keeps the
block under 50 ms" minimises ``workload.cap`` under ``block_time_s <= 0.050``.
Everything is checked before anything runs, in the one error format, naming the question
file.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np

from ..core.config import Bool, Float, Int, PosInt, Rule, Str, at, config
from ..core.errors import ConfigError
from .scenario import (
    Scenario,
    load_scenario,
    parse_override,
    read_toml,
    scenario_from_data,
)

STATISTICS = ("mean", "median", "p90", "p95", "p99")
_CONSTRAINT = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(<=|>=|<|>)\s*(\S+)\s*$")

Value = Annotated[Int | Float | Bool | Str, "a knob value"]


@config
class Objective:
    """What to optimise: a metric, its direction, and its statistic over replications."""

    metric: Str = "block_time_s"
    goal: Literal["minimize", "maximize"] = "minimize"
    statistic: Literal["mean", "median", "p90", "p95", "p99"] = "mean"


@config
class Knob:
    """A knob's values: a list (``values``), or a range (``min``, ``max``) sampled at
    ``points`` points on a ``linear`` or ``log`` scale (whole numbers with ``integer``)."""

    values: tuple[Value, ...] = ()
    min: Float | None = None
    max: Float | None = None
    scale: Literal["linear", "log"] = "linear"
    points: Annotated[Int, at.Ge(2), at.Le(64)] = 5
    integer: Bool = False
    RULES = (
        Rule("values", "a non-empty list, or empty with min and max set",
             lambda k: bool(k.values) != (k.min is not None and k.max is not None)),
        Rule("max", "> min", lambda k: k.min is None or k.max is None or k.max > k.min),
        Rule("min", "> 0 with scale = 'log'",
             lambda k: k.scale != "log" or k.min is None or k.min > 0),
    )

    @property
    def is_range(self) -> bool:
        return not self.values

    def grid(self) -> list[Any]:
        """The knob's coarse values, ascending for a range."""
        if self.values:
            return list(self.values)
        lo, hi = float(self.min or 0.0), float(self.max or 0.0)
        points = (np.geomspace(lo, hi, self.points) if self.scale == "log"
                  else np.linspace(lo, hi, self.points))
        return self.snap(points.tolist())

    def snap(self, values: list[float]) -> list[Any]:
        """Values on the knob: rounded to whole numbers for an integer knob, deduplicated."""
        out: list[Any] = []
        for v in values:
            v = int(round(v)) if self.integer else float(round(v, 9))
            if v not in out:
                out.append(v)
        return out


@config
class QuestionSettings:
    """The ``[question]`` table."""

    name: Str | None = None
    description: Str = ""
    scenario: Str | None = None
    case: Str | None = None
    replications: Annotated[PosInt, at.Le(100)] = 3
    max_replications: Annotated[PosInt, at.Le(200)] = 15
    seed: Annotated[Int, at.Ge(0)] = 1
    budget: Annotated[PosInt, at.Le(5000)] = 200
    refine_rounds: Annotated[Int, at.Ge(0), at.Le(16)] = 10
    sensitivity: tuple[Annotated[Float, at.Gt(0), at.Le(100)], ...] = (0.5, 1.5)
    constraints: tuple[Str, ...] = ()
    compare: tuple[Str, ...] = ()
    report: tuple[Str, ...] | None = None
    kind: Str = "batcher"
    RULES = (Rule("max_replications", ">= replications",
                  lambda q: q.max_replications >= q.replications),)


@dataclass(frozen=True)
class Constraint:
    """``name op bound``: a metric (checked on results) or a knob (limits the space)."""

    name: str
    op: str
    bound: float

    def holds(self, value: float) -> bool:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return False
        return {"<=": value <= self.bound, "<": value < self.bound,
                ">=": value >= self.bound, ">": value > self.bound}[self.op]

    def violation(self, value: float) -> float:
        """How far ``value`` is outside the constraint, relative to the bound (0 inside)."""
        if self.holds(value):
            return 0.0
        scale = abs(self.bound) or 1.0
        return abs(value - self.bound) / scale

    def __str__(self) -> str:
        return f"{self.name} {self.op} {self.bound:g}"


@dataclass
class Question:
    """A loaded question: its base scenario (with the question's sections merged), knobs,
    objectives, constraints and settings."""

    path: Path
    settings: QuestionSettings
    scenario: Scenario
    base: str
    knobs: dict[str, Knob]
    objectives: list[Objective]
    constraints: list[Constraint]
    current: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.settings.name or self.path.stem

    @property
    def objective(self) -> Objective:
        return self.objectives[0]

    @property
    def metric_constraints(self) -> list[Constraint]:
        return [c for c in self.constraints if c.name not in self.knobs]

    @property
    def knob_constraints(self) -> list[Constraint]:
        return [c for c in self.constraints if c.name in self.knobs]


def _constraint(text: str, where: str) -> Constraint:
    match = _CONSTRAINT.match(text)
    number = None
    if match:
        try:
            number = float(match.group(3))
        except ValueError:
            number = None
    if not match or number is None or not math.isfinite(number):
        raise ConfigError.parameter("QuestionSettings", "constraints",
                                    "a list of 'name op number' (op: <=, <, >=, >)",
                                    text).at(where)
    return Constraint(match.group(1), match.group(2), number)


def _table(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError.parameter("the question", key, "a table", value).at(
            f"{path}: [{key}]")
    return value


def _build(cls: type, raw: Any, where: str) -> Any:
    if not isinstance(raw, dict):
        raise ConfigError.parameter("the question", where.rsplit("[", 1)[-1].rstrip("]"),
                                    "a table", raw).at(where)
    try:
        return cls(**raw)
    except ConfigError as exc:
        key = ".".join(exc.path)
        raise exc.at(f"{where} {key}" if key else where) from None


QUESTION_KEYS = ("question", "objective", "knobs", "current")


def load_question(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> Question:
    """Read and check a question file (see the module docstring); ``overrides``
    (``"section.field=value"``, as ``simbatch run --set``) change the base after the
    question's own sections.

    Examples
    --------
    >>> q = load_question("questions/a-fanout-cap.toml")
    >>> q.objective.metric, list(q.knobs)
    ('workload.cap', ['workload.cap'])
    """
    path = Path(path)
    data = read_toml(path, "question")
    settings = _build(QuestionSettings, _table(data, "question", path), f"{path}: [question]")
    sections = {k: v for k, v in data.items() if k not in QUESTION_KEYS}
    if settings.scenario is not None:
        scenario = load_scenario(path.parent / settings.scenario)
    else:                                   # the question is its own scenario: its sections
        scenario = _inline_scenario(path, settings, sections)
        sections = {}
    for key, value in sections.items():
        if key not in _section_names(scenario):
            raise ConfigError.parameter(
                "the question", key, "one of its tables (" + ", ".join(
                    (*QUESTION_KEYS, *_section_names(scenario))) + ")",
                "a table" if isinstance(value, dict) else value).at(f"{path}: [{key}]")
    scenario.merge(sections, str(path), path.parent)
    for text in overrides:
        try:
            dotted, value = parse_override(text)
        except ConfigError as exc:
            raise exc.at(f"{path}: --set") from None
        table: dict[str, Any] = {}
        node = table
        parts = dotted.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
        if parts[0] not in _section_names(scenario):
            raise ConfigError.parameter("--set", dotted, "section.field with a section of "
                                        + ", ".join(_section_names(scenario)), dotted).at(
                f"{path}: --set")
        scenario.merge(table, f"{path} --set {text}", Path.cwd())
    base = settings.case or scenario.cases[0].name
    if base not in scenario.layers:
        raise ConfigError.parameter("QuestionSettings", "case", "the name of one of the "
                                    "scenario's cases (" + ", ".join(scenario.layers) + ")",
                                    base).at(f"{path}: [question] case")
    raw_objective = data.get("objective", {})
    raw_objectives = raw_objective if isinstance(raw_objective, list) else [raw_objective]
    if not 1 <= len(raw_objectives) <= 2:
        raise ConfigError.parameter("the question", "objective", "one [objective] table, or "
                                    "two [[objective]] tables", len(raw_objectives)).at(
            f"{path}: [objective]")
    objectives = [_build(Objective, o, f"{path}: [objective]") for o in raw_objectives]
    knobs = {}
    for key, raw in _table(data, "knobs", path).items():
        knobs[key] = _build(Knob, raw, f"{path}: [knobs] {key}")
    for o in objectives:
        if o.metric not in scenario.engine.metrics and not (
                o.metric in knobs and all(isinstance(v, (int, float)) and not isinstance(
                    v, bool) for v in knobs[o.metric].grid())):
            raise ConfigError.parameter("Objective", "metric", f"a metric of a "
                                        f"{scenario.kind!r} case (" + ", ".join(
                                            scenario.engine.metrics) + ") or a numeric knob",
                                        o.metric).at(f"{path}: [objective] metric")
    if not knobs:
        raise ConfigError.parameter("the question", "knobs", "at least one knob",
                                    {}).at(f"{path}: [knobs]")
    where = f"{path}: [question] constraints"
    constraints = [_constraint(c, where) for c in settings.constraints]
    for c in constraints:
        if c.name not in knobs and c.name not in scenario.engine.metrics:
            raise ConfigError.parameter("QuestionSettings", "constraints", "constraints on "
                                        "the question's knobs or on metrics of the engine",
                                        c.name).at(where)
    current = _table(data, "current", path)
    question = Question(path=path, settings=settings, scenario=scenario, base=base,
                        knobs=knobs, objectives=objectives, constraints=constraints,
                        current=current)
    # every knob value and the current configuration must make a valid case
    for key, knob in knobs.items():
        for value in knob.grid():
            try:
                scenario.derive(base, {key: value}, f"check {key}={value}",
                                f"{path} [knobs] {key!r}", keep=False)
            except ConfigError as refused:
                if not (knob.is_range and not knob.integer and float(value).is_integer()):
                    raise
                try:                # would the whole number do? then say what to set
                    scenario.derive(base, {key: int(value)}, f"check {key}={value}",
                                    f"{path} [knobs] {key!r}", keep=False)
                except ConfigError:
                    raise refused from None
                raise ConfigError.parameter("Knob", "integer", f"true: {key} takes whole "
                                            "numbers, and a range's points are decimal "
                                            "otherwise", False).at(
                    f"{path}: [knobs] {key}") from None
    if current:
        scenario.derive(base, current, "current", f"{path} [current]", keep=False)
    for metric in settings.report or ():
        if metric not in scenario.engine.metrics:
            raise ConfigError.parameter("QuestionSettings", "report", "metrics of a "
                                        f"{scenario.kind!r} case", metric).at(
                f"{path}: [question] report")
    for name in settings.compare:
        if name not in scenario.layers:
            raise ConfigError.parameter("QuestionSettings", "compare", "names of the "
                                        "scenario's cases (" + ", ".join(scenario.layers)
                                        + ")", name).at(f"{path}: [question] compare")
    return question


def _section_names(scenario: Scenario) -> list[str]:
    from ..core.engine import sections

    return list(sections(scenario.engine))


def _inline_scenario(path: Path, settings: QuestionSettings,
                     sections: dict[str, Any]) -> Scenario:
    """A question without a base file: its own sections make the scenario."""
    meta = {"name": settings.name or path.stem, "kind": settings.kind}
    return scenario_from_data({"scenario": meta, **sections}, path)
