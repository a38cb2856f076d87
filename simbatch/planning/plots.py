"""Plots a user can paste: latency CDFs, a metric against a swept parameter, throughput
against cores with a USL fit, and a recommendation's objective against its main knob.

Series come from each case's parameters (never from its label): the points of one series
share every parameter but the one on the x axis, are drawn as a line in ascending x, with
their 95 % intervals as bars. Every plot has a title, SI-prefixed units (ms, us, M ops/s)
and its legend outside the data. matplotlib with the Agg backend (files, no display). The
command line's ``--plots DIR`` calls :func:`save_plots`, which draws the plots the
scenario's engine declares (:class:`simbatch.core.engine.PlotSpec`); each plotting function
returns the figure's data (:class:`PlotData`) as well, so a test can check what was drawn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import EngFormatter  # noqa: E402

from ..core.results import Summary, param_columns  # noqa: E402
from .usl import USLFit, fit_usl  # noqa: E402

MAX_LINES = 8          # lines per panel before a plot splits into panels


@dataclass
class PlotData:
    """What a plot drew: per panel, per series, its points (x, y, half-width)."""

    path: Path
    title: str
    series: dict[str, dict[str, list[tuple[float, float, float]]]] = field(
        default_factory=dict)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def series(summaries: list[Summary], x_key: str) -> dict[str, list[tuple[float, Summary]]]:
    """Points ``(x, summary)`` grouped by every parameter but ``x_key``, x ascending."""
    keys = list(dict.fromkeys(k for s in summaries for k in s.params if k != x_key))
    columns = param_columns(keys)
    groups: dict[str, list[tuple[float, Summary]]] = {}
    for s in summaries:
        x = _number(s.params.get(x_key))
        if x is None:
            continue
        label = ", ".join(f"{columns[k]}={s.params[k]}" for k in keys if k in s.params)
        groups.setdefault(label or "all", []).append((x, s))
    return {label: sorted(points, key=lambda p: p[0]) for label, points in groups.items()}


def _unit(metric: str) -> str:
    if metric.endswith("_per_s"):
        return "/s"
    return "s" if metric.endswith("_s") else ""


def _finish(fig: Any, axes: list[Any], title: str, path: Path) -> None:
    fig.suptitle(title, fontsize=11)
    for ax in axes:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                      borderaxespad=0.0)
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def _log_if_spread(ax: Any, xs: list[float], axis: str = "x") -> None:
    xs = [x for x in xs if x > 0]
    if xs and max(xs) / min(xs) >= 20:
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log")


def cdf_plot(summaries: list[Summary], path: Path, title: str = "") -> PlotData:
    """Empirical CDF of each case's pooled latency samples (log time axis); more than
    ``MAX_LINES`` cases are split into panels by their first varied parameter."""
    cases = [s for s in summaries if s.samples is not None and len(s.samples)]
    panels = _panels(cases)
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 3.2 * len(panels)), squeeze=False)
    data = PlotData(path, title)
    for ax, (panel, members) in zip(axes[:, 0], panels.items()):
        drawn: dict[str, list[tuple[float, float, float]]] = {}
        for s in members:
            x = np.sort(np.maximum(s.samples, 1e-7))  # type: ignore[arg-type]
            y = np.arange(1, x.size + 1) / x.size
            ax.plot(x, y, lw=1.2, label=s.name)
            drawn[s.name] = [(float(a), float(b), 0.0) for a, b in zip(x[::max(1, x.size // 50)],
                                                                       y[::max(1, x.size // 50)])]
        data.series[panel] = drawn
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(EngFormatter(unit="s"))
        ax.set_xlabel("latency")
        ax.set_ylabel("fraction")
        ax.set_title(panel, fontsize=9)
    _finish(fig, list(axes[:, 0]), title or "latency CDF", path)
    return data


def _panels(summaries: list[Summary]) -> dict[str, list[Summary]]:
    if len(summaries) <= MAX_LINES:
        return {"": summaries}
    varied = [k for k in dict.fromkeys(k for s in summaries for k in s.params)
              if len({repr(s.params.get(k)) for s in summaries}) > 1]
    if not varied:
        return {"": summaries[:MAX_LINES]}
    first = varied[0]
    col = param_columns(varied)[first]
    out: dict[str, list[Summary]] = {}
    for s in summaries:
        out.setdefault(f"{col}={s.params.get(first)}", []).append(s)
    return out


def percentile_plot(summaries: list[Summary], x_key: str, metrics: tuple[str, ...],
                    path: Path, title: str = "") -> PlotData:
    """Each metric against the swept ``x_key`` (one panel per metric), one line per value
    of the other parameters, with 95 % interval bars."""
    groups = series(summaries, x_key)
    fig, axes = plt.subplots(len(metrics), 1, figsize=(9, 3.4 * len(metrics)), squeeze=False)
    data = PlotData(path, title)
    xs_all = [x for points in groups.values() for x, _ in points]
    for ax, metric in zip(axes[:, 0], metrics):
        drawn = {}
        for label, points in groups.items():
            pts = [(x, s.metrics[metric], s.ci95.get(metric, 0.0)) for x, s in points]
            ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts],
                        marker="o", ms=3, lw=1.2, capsize=2, label=label)
            drawn[label] = pts
        data.series[metric] = drawn
        _log_if_spread(ax, xs_all)
        ys = [p[1] for pts in drawn.values() for p in pts]
        _log_if_spread(ax, ys, "y")
        ax.yaxis.set_major_formatter(EngFormatter(unit=_unit(metric)))
        ax.set_xlabel(x_key)
        ax.set_ylabel(metric)
    _finish(fig, list(axes[:, 0]), title or f"{', '.join(metrics)} against {x_key}", path)
    return data


def scaling_plot(summaries: list[Summary], path: Path, x_key: str = "cpu.cores",
                 metric: str = "throughput_ops_per_s", title: str = ""
                 ) -> tuple[PlotData, dict[str, USLFit]]:
    """``metric`` against ``x_key`` (cores), one line per series, with a USL fit beside
    each (dashed). Returns the plot's data and the USL fits by series."""
    fits: dict[str, USLFit] = {}
    fig, ax = plt.subplots(figsize=(9, 5))
    data = PlotData(path, title)
    drawn = {}
    for label, points in series(summaries, x_key).items():
        pts = [(x, s.metrics[metric], s.ci95.get(metric, 0.0)) for x, s in points]
        n = np.array([p[0] for p in pts])
        x = np.array([p[1] for p in pts])
        line = ax.errorbar(n, x, yerr=[p[2] for p in pts], marker="o", ms=4, capsize=2,
                           label=f"{label} (simbatch)")
        drawn[label] = pts
        if len(points) >= 3:
            f = fit_usl(n, x)
            fits[label] = f
            grid = np.linspace(n.min(), n.max(), 200)
            ax.plot(grid, f.predict(grid), "--", lw=1, color=line[0].get_color(),
                    label=f"{label} USL a={f.alpha:.3g} b={f.beta:.2g} peak N={f.peak_n:.0f}")
    data.series[metric] = drawn
    ax.yaxis.set_major_formatter(EngFormatter(unit="ops/s"))
    ax.set_xlabel(x_key)
    ax.set_ylabel(metric)
    _finish(fig, [ax], title or f"{metric} against {x_key}", path)
    return data, fits


def save_plots(scenario: Any, summaries: list[Summary], directory: str | Path) -> list[Path]:
    """Draw the plots the scenario's engine declares into ``directory``: a latency CDF
    where runs have latencies, and a plot against a parameter the cases vary; returns
    the paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    title = f"{scenario.name}: {scenario.description}".rstrip(": ")
    varied = {k for k in {k for s in summaries for k in s.params}
              if len({repr(s.params.get(k)) for s in summaries}) > 1}
    paths = []
    for spec in scenario.engine.plots:
        if spec.kind == "cdf" and any(s.samples is not None for s in summaries):
            paths.append(cdf_plot(summaries, out / f"{scenario.name}-cdf.png", title).path)
        elif spec.kind == "percentiles" and spec.x in varied:
            paths.append(percentile_plot(summaries, spec.x, spec.metrics,
                                         out / f"{scenario.name}-percentiles.png",
                                         title).path)
        elif spec.kind == "scaling" and spec.x in varied:
            paths.append(scaling_plot(summaries, out / f"{scenario.name}-scaling.png",
                                      spec.x, spec.metrics[0], title)[0].path)
    return paths


# ---------------------------------------------------------------- recommendations
def _main_knob(rec: Any) -> str:
    knobs = rec.question.knobs
    numeric = [k for k in knobs if all(_number(v) is not None for v in
                                       rec.table[param_columns(list(knobs))[k]])]
    pool = numeric or list(knobs)
    cols = param_columns(list(knobs))
    return max(pool, key=lambda k: rec.table[cols[k]].nunique())


def recommendation_plot(rec: Any, path: Path) -> PlotData:
    """The objective against the main knob, one line per setting of the other knobs, with
    interval bands; each metric constraint in a panel below with its bound; the
    recommendation marked. With two objectives, the Pareto front of the feasible
    configurations instead."""
    q = rec.question
    if len(q.objectives) == 2:
        return _pareto_plot(rec, path)
    o = q.objective
    x_key = _main_knob(rec)
    cands = list(rec.candidates)
    others = [k for k in q.knobs if k != x_key]
    cols = param_columns(list(q.knobs))
    # the objective's panel (unless it is the knob itself), then each metric constraint's
    panels = ([("objective", o.metric)] if o.metric not in q.knobs else []) + [
        (str(c), c.name) for c in q.metric_constraints if c.name != o.metric]
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 3.4 * len(panels)), squeeze=False)
    data = PlotData(path, f"{q.name}: {q.settings.description}".rstrip(": "))
    chosen = rec.chosen
    groups: dict[str, list[Any]] = {}
    for c in cands:
        label = ", ".join(f"{cols[k]}={c.params[k]}" for k in others) or "all"
        groups.setdefault(label, []).append(c)
    best_group = ", ".join(f"{cols[k]}={chosen.params[k]}" for k in others) or "all"
    order = sorted(groups, key=lambda g: g != best_group)[:MAX_LINES]
    numeric_x = all(_number(c.params[x_key]) is not None for c in cands)
    for ax, (panel, metric) in zip(axes[:, 0], panels):
        drawn = {}
        for label in order:
            members = groups[label]
            if numeric_x:
                members = sorted(members, key=lambda c: float(c.params[x_key]))
            xs = [c.params[x_key] if numeric_x else str(c.params[x_key]) for c in members]
            if metric == o.metric and panel == "objective":
                ys = [c.objective(o) for c in members]
                ci = [c.objective_ci(o) for c in members]
            else:
                ys = [c.value(metric) for c in members]
                ci = [c.summary.ci95.get(metric, 0.0) if c.summary else 0.0 for c in members]
            style = {"lw": 2.0} if label == best_group else {"lw": 1.0, "alpha": 0.6}
            line = ax.plot(xs, ys, marker="o", ms=3, label=label, **style)
            if numeric_x:
                ax.fill_between(xs, np.subtract(ys, ci), np.add(ys, ci), alpha=0.15,
                                color=line[0].get_color())
            drawn[label] = [(float(x) if numeric_x else i, float(y), float(h))
                            for i, (x, y, h) in enumerate(zip(xs, ys, ci))]
        for c in q.metric_constraints:
            if c.name == metric:
                ax.axhline(c.bound, color="red", ls="--", lw=1, label=f"constraint {c}")
        at = chosen.objective(o) if panel == "objective" else chosen.value(metric)
        ax.plot([chosen.params[x_key] if numeric_x else str(chosen.params[x_key])], [at],
                marker="*", ms=16, color="gold", mec="black", ls="none",
                label="recommended" if rec.feasible else "closest")
        data.series[panel] = drawn
        if numeric_x:
            _log_if_spread(ax, [float(c.params[x_key]) for c in cands])
        _log_if_spread(ax, [p[1] for pts in drawn.values() for p in pts], "y")
        ax.yaxis.set_major_formatter(EngFormatter(unit=_unit(metric)))
        ax.set_xlabel(x_key)
        ax.set_ylabel(f"{metric} ({o.statistic})" if panel == "objective" else metric)
    _finish(fig, list(axes[:, 0]), data.title, path)
    return data


def _pareto_plot(rec: Any, path: Path) -> PlotData:
    q = rec.question
    o1, o2 = q.objectives
    cands = [c for c in rec.candidates
             if all(k.holds(c.value(k.name)) for k in q.metric_constraints)]
    pts = [(c.objective(o1), c.objective(o2), c) for c in cands]
    s1 = 1 if o1.goal == "minimize" else -1
    s2 = 1 if o2.goal == "minimize" else -1
    front = [p for p in pts if not any(
        s1 * r[0] <= s1 * p[0] and s2 * r[1] <= s2 * p[1] and (r[0], r[1]) != (p[0], p[1])
        for r in pts)]
    front.sort(key=lambda p: p[0])
    fig, ax = plt.subplots(figsize=(9, 5))
    ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=12, alpha=0.5,
               label="configurations meeting the constraints")
    ax.plot([p[0] for p in front], [p[1] for p in front], "-o", color="black", ms=4,
            label="Pareto front")
    ax.plot([rec.chosen.objective(o1)], [rec.chosen.objective(o2)], marker="*", ms=16,
            color="gold", mec="black", ls="none", label="recommended")
    ax.xaxis.set_major_formatter(EngFormatter(unit=_unit(o1.metric)))
    ax.yaxis.set_major_formatter(EngFormatter(unit=_unit(o2.metric)))
    ax.set_xlabel(f"{o1.metric} ({o1.statistic}, {o1.goal})")
    ax.set_ylabel(f"{o2.metric} ({o2.statistic}, {o2.goal})")
    data = PlotData(path, f"{q.name}: Pareto front")
    data.series["pareto"] = {"front": [(p[0], p[1], 0.0) for p in front]}
    _finish(fig, [ax], data.title, path)
    return data
