"""Plots of a scenario's results: latency CDFs, metrics against a swept parameter, and
throughput against cores with a Universal Scalability Law fit beside it.

Series come from each case's parameters (never from its label): the points of one series
share every parameter but the one on the x axis. matplotlib with the Agg backend (files, no
display); the command line's ``--plots DIR`` calls :func:`save_plots`, which draws the plots
the scenario's engine declares (:class:`simbatch.core.engine.PlotSpec`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..core.results import Summary, param_columns  # noqa: E402
from .usl import USLFit, fit_usl  # noqa: E402


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


def cdf_plot(summaries: list[Summary], path: Path, title: str = "") -> Path:
    """Empirical CDF of each case's pooled latency samples (log time axis)."""
    fig, ax = plt.subplots(figsize=(8, 5))
    for s in summaries:
        if s.samples is None or not len(s.samples):
            continue
        x = np.sort(s.samples)
        ax.plot(np.maximum(x, 1e-6), np.arange(1, x.size + 1) / x.size, label=s.name, lw=1.2)
    ax.set_xscale("log")
    ax.set_xlabel("latency (s)")
    ax.set_ylabel("fraction of messages / items")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def percentile_plot(summaries: list[Summary], x_key: str, metrics: tuple[str, ...],
                    path: Path, title: str = "") -> Path:
    """Each metric against the swept ``x_key``, one line per value of the other parameters."""
    fig, ax = plt.subplots(figsize=(8, 5))
    for label, points in series(summaries, x_key).items():
        xs = [p[0] for p in points]
        for metric, style in zip(metrics, ("-o", "--s", ":^")):
            ax.plot(xs, [p[1].metrics[metric] for p in points], style, ms=3,
                    label=f"{metric} {label}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(x_key)
    ax.set_ylabel("seconds")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def scaling_plot(summaries: list[Summary], path: Path, x_key: str = "cpu.cores",
                 metric: str = "throughput_ops_per_s", title: str = ""
                 ) -> tuple[Path, dict[str, USLFit]]:
    """``metric`` against ``x_key`` (cores), one line per series, with a USL fit beside
    each (dashed). Returns the path and the USL fits by series."""
    fits: dict[str, USLFit] = {}
    fig, ax = plt.subplots(figsize=(8, 5))
    for label, points in series(summaries, x_key).items():
        n = np.array([p[0] for p in points])
        x = np.array([p[1].metrics[metric] for p in points])
        ax.plot(n, x / 1e6, "-o", ms=4, label=f"{label} (simbatch)")
        if len(points) >= 3:
            f = fit_usl(n, x)
            fits[label] = f
            grid = np.linspace(n.min(), n.max(), 200)
            ax.plot(grid, f.predict(grid) / 1e6, "--", lw=1,
                    label=f"{label} USL a={f.alpha:.3g} b={f.beta:.2g}")
    ax.set_xlabel(x_key)
    ax.set_ylabel("throughput (M ops/s)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path, fits


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
            paths.append(cdf_plot(summaries, out / f"{scenario.name}-cdf.png", title))
        elif spec.kind == "percentiles" and spec.x in varied:
            paths.append(percentile_plot(summaries, spec.x, spec.metrics,
                                         out / f"{scenario.name}-percentiles.png", title))
        elif spec.kind == "scaling" and spec.x in varied:
            paths.append(scaling_plot(summaries, out / f"{scenario.name}-scaling.png",
                                      spec.x, spec.metrics[0], title)[0])
    return paths
