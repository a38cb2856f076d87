"""Reports of a scenario's results: a Markdown table for reading and a JSON document.

Numbers are formatted for reading: each time column in one unit chosen for the column
(s, ms or us, named in the header), shares as percentages, large counts with an SI prefix,
four significant digits, and a spread that is zero shown as 0. The JSON document carries the
same results with the simbatch version, the models used (with their provenance) and the
exact command; a value that is not finite is written as null, never as ``Infinity``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from ..core.results import Summary
from .scenario import Scenario
from .sweep import compare

_SI = ((1e12, 1e12, "T"), (1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k"))


def time_unit(values: Sequence[float]) -> tuple[str, float]:
    """The unit a column of seconds reads best in, and its scale.

    >>> time_unit([0.0021, 0.0185])
    ('ms', 1000.0)
    """
    finite = [abs(v) for v in values if v is not None and math.isfinite(v) and v != 0]
    top = max(finite, default=1.0)
    if top >= 1:
        return "s", 1.0
    if top >= 1e-3:
        return "ms", 1e3
    if top >= 1e-6:
        return "us", 1e6
    return "ns", 1e9


def number(value: float | None) -> str:
    """Four significant digits, an SI prefix from ten thousand, '-' for no value.

    >>> [number(v) for v in (0.0, 1.351e-15, 12.5, 213456.0, float("nan"))]
    ['0', '1.351e-15', '12.5', '213.5k', '-']
    """
    if value is None or not math.isfinite(value):
        return "-"
    if value == 0:
        return "0"
    for threshold, scale, prefix in _SI:
        if abs(value) >= threshold:
            return f"{value / scale:.4g}{prefix}"
    return f"{value:.4g}"


def is_time(metric: str) -> bool:
    """A metric in seconds (``block_time_s``), not a rate (``throughput_items_per_s``)."""
    return metric.endswith("_s") and not metric.endswith("_per_s")


def _scaled(metric: str, values: list[float | None]) -> tuple[str, list[str]]:
    """The unit a metric's column shows (``""`` for none) and its formatted values."""
    unit, scale = "", 1.0
    if is_time(metric):
        unit, scale = time_unit([v for v in values if v is not None])
    elif "share" in metric:
        unit, scale = "%", 100.0
    return unit, [number(v * scale if v is not None else None) for v in values]


def _column(metric: str, values: list[float | None]) -> tuple[str, list[str]]:
    unit, cells = _scaled(metric, values)
    name = metric[:-2] if is_time(metric) else metric
    return (f"{name} ({unit})" if unit else metric), cells


def markdown(scenario: Scenario, summaries: list[Summary]) -> str:
    """Predicted beside published (where the scenario publishes figures), then each case's
    headline metrics."""
    lines = [f"# {scenario.name}: {scenario.description}".rstrip(": "), ""]
    rows = compare(scenario, summaries)
    if rows:
        lines += ["| case | metric | predicted | ±95% | published | error | within |",
                  "|---|---|---:|---:|---:|---:|---|"]
        ci = {s.name: s.ci95 for s in summaries}
        for r in rows:
            unit, cells = _scaled(r.metric, [r.predicted, ci[r.case].get(r.metric, math.nan),
                                             r.published])
            lines.append(f"| {r.case} | {r.metric}{f' ({unit})' if unit else ''} | {cells[0]} | "
                         f"{cells[1]} | {cells[2]} | {r.error_rel:+.1%} | "
                         f"{'yes' if r.ok else 'NO'} |")
        lines.append("")
    headline = scenario.engine.headline_for(summaries)
    columns = [_column(m, [s.metrics.get(m) for s in summaries]) for m in headline]
    lines.append("| case | " + " | ".join(head for head, _ in columns) + " |")
    lines.append("|---|" + "---:|" * len(columns))
    for i, s in enumerate(summaries):
        lines.append(f"| {s.name} | " + " | ".join(cells[i] for _, cells in columns) + " |")
    return "\n".join(lines)


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and callable(value.item):      # numpy scalars
        return _clean(value.item())
    return value


def document(scenario: Scenario, summaries: list[Summary], *, command: str = "",
             replications: int | None = None, seed: int | None = None) -> dict[str, Any]:
    """The JSON document of a scenario's results (see the module docstring)."""
    from .. import __version__

    comparisons = {(r.case, r.metric): r for r in compare(scenario, summaries)}
    return _clean({
        "simbatch": __version__, "command": command, "scenario": scenario.name,
        "kind": scenario.kind, "file": str(scenario.path),
        "replications": scenario.replications if replications is None else replications,
        "seed": scenario.seed if seed is None else seed,
        "models": scenario.models,
        "cases": [{"name": s.name, "params": s.params, "metrics": s.metrics, "ci95": s.ci95,
                   "published": s.published,
                   "error": {m: comparisons[(s.name, m)].error_rel for m in s.published},
                   "within": {m: comparisons[(s.name, m)].ok for m in s.published},
                   "runs": s.runs.to_dict(orient="records")}
                  for s in summaries]})


def to_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, allow_nan=False)
