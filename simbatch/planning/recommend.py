"""The capacity planner: from a question (:mod:`simbatch.planning.question`) to a
recommendation a user pastes into a pull request.

:func:`recommend` searches the question's knobs on the model (:mod:`.search`) and returns a
:class:`Recommendation`: every candidate evaluated (``.table``), the chosen configuration
(``.best``) beside the one in use today, the next best, which constraint binds, how far the
answer moves when the workload moves, the models used with their provenance, and the exact
command; ``.markdown()``, ``.plot(path)`` and ``.document()`` (JSON) report it. When no
candidate meets the constraints, it says which constraint fails and gives the closest
configuration instead.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.results import param_columns
from ..core.work import Bounds
from .executors import Executor
from .question import Question, load_question
from .report import is_time, number, time_unit
from .search import Candidate, Progress, Search, constraint_slack


@dataclass
class Binding:
    """A constraint at the recommendation: its value there, its slack (relative), and
    whether it binds (a candidate with a better objective breaks it)."""

    constraint: str
    value: float
    slack: float
    binds: bool


@dataclass
class Recommendation:
    """What :func:`recommend` found (see the module docstring)."""

    question: Question
    candidates: list[Candidate]
    table: pd.DataFrame
    best: Candidate | None
    closest: Candidate | None
    current: Candidate | None
    alternatives: list[Candidate]
    bindings: list[Binding]
    told_apart: bool
    replications: int
    sensitivity: dict[float, Candidate | None] = field(default_factory=dict)
    compared: dict[str, Candidate] = field(default_factory=dict)
    command: str = ""
    runs: int = 0

    @property
    def feasible(self) -> bool:
        return self.best is not None

    @property
    def chosen(self) -> Candidate:
        """The recommendation, or the closest configuration when none is feasible."""
        chosen = self.best or self.closest
        assert chosen is not None, "a search evaluates at least one candidate"
        return chosen

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.chosen.params)

    # ------------------------------------------------------------ report
    def _fmt(self, metric: str, value: float, ci: float | None = None) -> str:
        if value is None or not math.isfinite(value):
            return "-"
        unit, scale = "", 1.0
        if is_time(metric):
            unit, scale = time_unit([value])
            unit = " " + unit
        text = number(value * scale)
        if ci:
            text += f" ± {number(ci * scale)}"
        return text + unit

    def _row(self, name: str, cand: Candidate) -> str:
        q = self.question
        o = q.objective
        cols = [name, ", ".join(f"{k} = {v}" for k, v in cand.params.items())]
        cols.append(self._fmt(o.metric, cand.objective(o), cand.objective_ci(o)))
        for metric in self._report_metrics():
            ci = cand.summary.ci95.get(metric) if cand.summary else None
            cols.append(self._fmt(metric, cand.value(metric), ci))
        cols.append("yes" if all(c.holds(cand.value(c.name)) for c in q.metric_constraints)
                    else "no")
        return "| " + " | ".join(cols) + " |"

    def _report_metrics(self) -> list[str]:
        q = self.question
        chosen = q.settings.report
        if chosen is None:
            chosen = getattr(q.scenario.engine, "report_metrics", ())
        wanted = [m for m in chosen if m != q.objective.metric]
        return wanted + [c.name for c in self.question.metric_constraints
                         if c.name not in wanted and c.name != self.question.objective.metric]

    def markdown(self) -> str:
        """The report, Markdown, ready for a pull request."""
        from .. import __version__

        q = self.question
        o = q.objective
        lines = [f"### {q.name}: {q.settings.description}".rstrip(": "), ""]
        goal = f"{o.goal} the {o.statistic} of `{o.metric}` over replications"
        cons = ", ".join(f"`{c}`" for c in q.constraints) or "none"
        lines += [f"Goal: {goal}; constraints: {cons}.", ""]
        if self.feasible:
            lines.append("**Recommended:** " + ", ".join(
                f"`{k} = {v}`" for k, v in self.chosen.params.items()) + ".")
        else:
            failing = [b.constraint for b in self.bindings if b.slack < 0]
            lines.append("**No configuration meets the constraints** (" + ", ".join(
                f"`{c}`" for c in failing) + " fails everywhere). The closest: " + ", ".join(
                f"`{k} = {v}`" for k, v in self.chosen.params.items()) + ".")
        lines.append("")
        head = ["", "configuration", f"{o.metric} ({o.statistic})", *self._report_metrics(),
                "meets constraints"]
        lines += ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 3)
                  + "---|"]
        lines.append(self._row("recommended" if self.feasible else "closest", self.chosen))
        if self.current is not None:
            lines.append(self._row("today", self.current))
        for i, alt in enumerate(self.alternatives, 1):
            lines.append(self._row(f"alternative {i}", alt))
        for name, cand in self.compared.items():
            lines.append(self._row(f"case `{name}` there", cand))
        lines.append("")
        lines.append("Values: mean (or pooled percentile) ± 95 % interval over "
                     f"{self.replications} replication{'s' if self.replications > 1 else ''}"
                     " on common random numbers.")
        if self.feasible and self.alternatives:
            diff = self.chosen.objective(o) - self.alternatives[0].objective(o)
            rel = abs(diff) / abs(self.alternatives[0].objective(o) or 1.0)
            lines.append(f"The recommendation is told apart from the next best at 95 % "
                         f"({self._fmt(o.metric, abs(diff))} better, {rel:.1%})."
                         if self.told_apart else
                         "**The best two are not told apart at 95 %** (after "
                         f"{self.replications} replications): either is as good on this "
                         "model.")
        binding = [b for b in self.bindings if b.binds]
        if self.bindings:
            lines.append("")
            lines.append("Constraints at the recommendation: " + "; ".join(
                f"`{b.constraint}`: {self._fmt(b.constraint.split()[0], b.value)} "
                f"({'binds' if b.binds else 'slack'} {b.slack:+.0%})"
                for b in self.bindings) + ".")
            if binding:
                lines.append("Binding: " + ", ".join(f"`{b.constraint}`" for b in binding)
                             + " (a better objective breaks it).")
        if self.sensitivity:
            lines += ["", "If the workload moves: " + "; ".join(
                f"x{factor:g}: " + (", ".join(f"`{k} = {v}`" for k, v in c.params.items())
                                     + f" ({self._fmt(o.metric, c.objective(o))})"
                                     if c is not None else "nothing meets the constraints")
                for factor, c in self.sensitivity.items()) + "."]
        lines += ["", "Assumptions: the base scenario `"
                  + os.path.relpath(q.scenario.path) + "`"
                  + (f" (case `{q.base}`)" if q.settings.case else "") + "; models: "
                  + (", ".join(f"`{os.path.relpath(m)}` ({_provenance(p)})"
                               for m, p in q.scenario.models.items()) or "none") + "."]
        lines.append(f"simbatch {__version__}; {len(self.table)} configurations, "
                     f"{self.runs} runs. Reproduce: `{self.command}`")
        return "\n".join(lines) + "\n"

    def document(self) -> dict[str, Any]:
        """The report as a JSON-ready document (non-finite numbers as null)."""
        from .. import __version__
        from .report import _clean

        q = self.question
        o = q.objective

        def cand(c: Candidate | None) -> Any:
            if c is None:
                return None
            return {"params": c.params, "objective": c.objective(o),
                    "objective_ci95": c.objective_ci(o),
                    "metrics": c.summary.metrics if c.summary else {},
                    "ci95": c.summary.ci95 if c.summary else {},
                    "replications": len(c.records)}

        return _clean({
            "simbatch": __version__, "command": self.command, "question": q.name,
            "file": str(q.path), "objective": {"metric": o.metric, "goal": o.goal,
                                               "statistic": o.statistic},
            "constraints": [str(c) for c in q.constraints], "feasible": self.feasible,
            "recommended": cand(self.best), "closest": cand(self.closest),
            "current": cand(self.current),
            "alternatives": [cand(a) for a in self.alternatives],
            "told_apart": self.told_apart, "replications": self.replications,
            "constraints_at_recommendation": [b.__dict__ for b in self.bindings],
            "sensitivity": {str(f): cand(c) for f, c in self.sensitivity.items()},
            "compared": {name: cand(c) for name, c in self.compared.items()},
            "models": q.scenario.models, "candidates": self.table.to_dict(orient="records")})

    def plot(self, path: str | Path) -> Path:
        """The objective against the main knob (PNG), with the constraint and the
        recommendation; a Pareto front when the question has two objectives."""
        from .plots import recommendation_plot

        return recommendation_plot(self, Path(path)).path


def _provenance(p: dict[str, Any]) -> str:
    keys = ("system", "broker", "client", "measured_on", "fitted_on")
    return "; ".join(f"{k}: {p[k]}" for k in keys if k in p) or "no provenance"


def _table(search: Search) -> pd.DataFrame:
    q = search.q
    o = q.objective
    cols = param_columns(list(q.knobs))
    rows = []
    for cand in search.evaluated.values():
        row: dict[str, Any] = {"case": cand.label}
        row.update({cols[k]: v for k, v in cand.params.items()})
        row["objective"] = cand.objective(o)
        row["objective_ci95"] = cand.objective_ci(o)
        row["replications"] = len(cand.records)
        for c in q.metric_constraints:
            row[c.name] = cand.value(c.name)
        row["feasible"] = search.feasible(cand)
        row["violation"] = search.violation(cand)
        rows.append(row)
    return pd.DataFrame(rows)


def _bindings(search: Search, best: Candidate) -> list[Binding]:
    o = search.q.objective
    sign = 1.0 if o.goal == "minimize" else -1.0
    better = [c for c in search.evaluated.values()
              if sign * c.objective(o) < sign * best.objective(o)]
    out = []
    for c in search.q.metric_constraints:
        value = best.value(c.name)
        binds = any(not c.holds(b.value(c.name)) for b in better)
        out.append(Binding(str(c), value, constraint_slack(c, value), binds))
    return out


def _nearby(search: Search, chosen: Candidate, leaders: int = 3, span: int = 1
            ) -> list[dict[str, Any]]:
    """The leading candidates (feasible or closest), and the recommendation's neighbours
    along each knob (``span`` each side, in the knob's own order)."""
    o = search.q.objective
    sign = 1.0 if o.goal == "minimize" else -1.0
    pool = sorted(search.evaluated.values(),
                  key=lambda c: (search.violation(c), sign * c.objective(o)))
    out = [c.params for c in pool[:leaders]]
    for k, knob in search.q.knobs.items():
        values = sorted({c.params[k] for c in search.evaluated.values()}, key=_order)
        i = values.index(chosen.params[k])
        for v in values[max(0, i - span):i + span + 1]:
            out.append({**chosen.params, k: v})
    return list({repr(sorted(p.items())): p for p in out}.values())


def _order(value: Any) -> Any:
    return (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value))


def recommend(question: Question | str | Path, *, executor: Executor | None = None,
              progress: Progress | None = None, bounds: Bounds | None = None,
              seed: int | None = None, command: str = "") -> Recommendation:
    """Answer a question: search its knobs on the model and recommend a configuration.

    Examples
    --------
    >>> r = recommend("questions/a-fanout-cap.toml")      # doctest: +SKIP
    >>> r.params, r.told_apart                            # doctest: +SKIP
    ({'workload.cap': 64}, True)
    """
    q = question if isinstance(question, Question) else load_question(question)
    q.scenario.layers = {k: v for k, v in q.scenario.layers.items()
                         if not k.startswith("check ")}
    search = Search(q, executor=executor, progress=progress, bounds=bounds, seed=seed)
    search.run()
    told_apart, reps = search.separate()
    ranked = search.ranked()
    best = ranked[0] if ranked else None
    closest = None
    if best is None:
        closest = min(search.evaluated.values(), key=search.violation)
    current = None
    if q.current:
        current = search.evaluate([{k: q.current.get(k) for k in q.knobs
                                    if k in q.current}], reps or q.settings.replications)[0]
    chosen = best or closest
    assert chosen is not None
    sensitivity: dict[float, Candidate | None] = {}
    # the answer under a moved workload: the leading candidates and those next to the
    # recommendation along each knob, run again with the load scaled
    nearby = _nearby(search, chosen)
    for factor in q.settings.sensitivity:
        scaled = Search(q, executor=executor, bounds=bounds, seed=search.seed,
                        scale=q.scenario.engine.scaled_load(chosen.case, factor))
        scaled.evaluate(nearby, q.settings.replications)
        top = scaled.ranked()
        sensitivity[factor] = top[0] if top else None
        search.runs_done += scaled.runs_done
    compared = {}
    for name in q.settings.compare:
        other = Search(q, executor=executor, bounds=bounds, seed=search.seed, base=name)
        compared[name] = other.evaluate([chosen.params], reps or q.settings.replications)[0]
        search.runs_done += other.runs_done
    return Recommendation(
        question=q, candidates=list(search.evaluated.values()), table=_table(search),
        best=best, closest=closest, current=current, compared=compared,
        alternatives=[c for c in ranked[1:]
                      if current is None or c.params != current.params][:3],
        bindings=_bindings(search, chosen), told_apart=told_apart, replications=reps,
        sensitivity=sensitivity, command=command, runs=search.runs_done)
