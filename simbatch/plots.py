"""Plots for a scenario's results: latency CDFs, a percentile against a swept axis, and
throughput against cores with a Universal Scalability Law fit beside it.

matplotlib with the Agg backend (files, no display); the CLI's ``--plots DIR`` calls
:func:`save_plots`.
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

_AXIS = re.compile(r"(\w+)=([-\w.]+)")


def cdf_plot(summaries, path: Path) -> Path:
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
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def axis_values(name: str) -> dict[str, str]:
    """``"base n_partitions=64 linger_ms=10"`` -> ``{"n_partitions": "64", ...}``."""
    return dict(_AXIS.findall(name))


def percentile_plot(summaries, x_axis: str, metrics: tuple[str, ...], path: Path) -> Path:
    """Each metric against the swept ``x_axis``, one line per value of the other axes."""
    groups: dict[str, list[tuple[float, dict]]] = {}
    for s in summaries:
        axes = axis_values(s.name)
        if x_axis not in axes:
            continue
        rest = " ".join(f"{k}={v}" for k, v in axes.items() if k != x_axis) or s.name
        groups.setdefault(rest, []).append((float(axes[x_axis]), s.metrics))
    fig, ax = plt.subplots(figsize=(8, 5))
    for label, points in sorted(groups.items()):
        points.sort(key=lambda p: p[0])
        xs = [p[0] for p in points]
        for metric, style in zip(metrics, ("-o", "--s", ":^")):
            ax.plot(xs, [p[1][metric] for p in points], style, label=f"{metric} {label}", ms=3)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(x_axis)
    ax.set_ylabel("seconds")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def scaling_plot(summaries, path: Path) -> tuple[Path, dict]:
    """Throughput against cores, one line per design, with a USL fit beside each (dashed).
    Returns the path and the USL fits by design."""
    from .usl import fit_usl

    groups: dict[str, list[tuple[float, float]]] = {}
    for s in summaries:
        axes = axis_values(s.name)
        if "cores" in axes:
            design = s.name.split(" cores=")[0]
            groups.setdefault(design, []).append((float(axes["cores"]),
                                                  s.metrics["throughput_ops_per_s"]))
    fits = {}
    fig, ax = plt.subplots(figsize=(8, 5))
    for design, points in sorted(groups.items()):
        points.sort()
        n, x = np.array([p[0] for p in points]), np.array([p[1] for p in points])
        ax.plot(n, x / 1e6, "-o", ms=4, label=f"{design} (simbatch)")
        if len(points) >= 3:
            f = fit_usl(n, x)
            fits[design] = f
            grid = np.linspace(n.min(), n.max(), 200)
            ax.plot(grid, f.predict(grid) / 1e6, "--", lw=1,
                    label=f"{design} USL a={f.alpha:.3g} b={f.beta:.2g}")
    ax.set_xlabel("cores")
    ax.set_ylabel("throughput (M ops/s)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path, fits


def save_plots(scenario, summaries, directory: str | Path) -> list[Path]:
    """Write ``<name>-cdf.png`` and, for a sweep over partitions or fan-out,
    ``<name>-percentiles.png``; returns the paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    if scenario.kind == "contention":
        return [scaling_plot(summaries, out / f"{scenario.name}-scaling.png")[0]]
    paths = [cdf_plot(summaries, out / f"{scenario.name}-cdf.png")]
    names = " ".join(s.name for s in summaries)
    for axis, metrics in (("n_partitions", ("latency_p50_s", "latency_p99_s")),
                          ("cap", ("item_latency_p50_s", "item_latency_p99_s"))):
        if f"{axis}=" in names:
            paths.append(percentile_plot(summaries, axis, metrics,
                                         out / f"{scenario.name}-percentiles.png"))
    return paths
