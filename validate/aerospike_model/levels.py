"""Two cost levels in a cell of batch-read calls, and whether they persist from call to call.

A cell's calls (one (op, size, concurrency) of the recorded data sets) are split into a low
and a high level by a two-component normal mixture on log latency (EM); a cell with one
level returns ``None``. Whether the level of a call is independent of the previous call's
(a mixture, as the calibration's pooled-ratio noise assumes) or persists for runs of calls (a
regime) is tested on the level indicator in call order:

* Wald-Wolfowitz runs test: the number of runs against its mean and variance under
  independence (``z`` far below 0: fewer, longer runs than a mixture gives);
* lag-1 autocorrelation of the indicator (0 for a mixture);
* the longest run of each level against the geometric run lengths a mixture predicts
  (probability that a mixture gives a run that long anywhere in the cell);
* the index of dispersion of the high-level count over windows of consecutive calls
  (1 for a mixture, chi-square test).

The split itself is the product's (:func:`simbatch.planning.fit.split_levels`, used by the
fit); these tests are the evidence behind treating the levels as a regime.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from simbatch.planning import fit


@dataclass(frozen=True)
class Levels:
    """The two levels of a cell (microseconds) and each call's level (True = high)."""

    low_us: float
    high_us: float
    high: np.ndarray

    @property
    def share_high(self) -> float:
        return float(self.high.mean())


def split_levels(latency_us: np.ndarray) -> Levels | None:
    """Two levels by EM on log latency (:func:`simbatch.planning.fit.split_levels`), or
    ``None`` if the cell has one.

    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(17, 1, 500), rng.normal(95, 5, 500)]
    >>> lv = split_levels(x)
    >>> round(lv.low_us), round(lv.high_us), lv.share_high
    (17, 95, 0.5)
    """
    x = np.asarray(latency_us, dtype=float)
    high = fit.split_levels(x)
    if high is None:
        return None
    return Levels(low_us=float(np.exp(np.median(np.log(x[~high])))),
                  high_us=float(np.exp(np.median(np.log(x[high])))), high=high)


def runs(indicator: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lengths of the runs of equal values, and each run's value."""
    ind = np.asarray(indicator, dtype=int)
    bounds = np.r_[0, np.flatnonzero(np.diff(ind)) + 1, len(ind)]
    return np.diff(bounds), ind[bounds[:-1]]


def runs_test(indicator: np.ndarray) -> dict[str, float]:
    """Wald-Wolfowitz runs test and lag-1 autocorrelation of a 0/1 sequence in call order.

    >>> runs_test(np.r_[np.zeros(500), np.ones(500)])["z"] < -30
    True
    """
    ind = np.asarray(indicator, dtype=int)
    n, n1 = len(ind), int(ind.sum())
    n0 = n - n1
    lengths, _ = runs(ind)
    expected = 1 + 2 * n0 * n1 / n
    var = 2 * n0 * n1 * (2 * n0 * n1 - n) / (n * n * (n - 1))
    z = (len(lengths) - expected) / np.sqrt(var)
    return {"runs": float(len(lengths)), "expected_runs": float(expected), "z": float(z),
            "p_value": float(2 * stats.norm.sf(abs(z))),
            "lag1": float(np.corrcoef(ind[:-1], ind[1:])[0, 1])}


def longest_run_p(indicator: np.ndarray) -> dict[str, float]:
    """For each level, its longest run and the probability that independent calls (a mixture
    with the measured share) give a run at least that long somewhere in the sequence:
    ``1 - exp(-n (1 - p) p**L)`` (the Poisson approximation of the longest geometric run)."""
    ind = np.asarray(indicator, dtype=int)
    lengths, values = runs(ind)
    out = {}
    for level, name in ((1, "high"), (0, "low")):
        p = float((ind == level).mean())
        longest = int(lengths[values == level].max()) if (values == level).any() else 0
        out[f"longest_{name}"] = float(longest)
        out[f"mean_run_{name}"] = float(lengths[values == level].mean()) if longest else 0.0
        out[f"geometric_mean_run_{name}"] = 1 / (1 - p) if p < 1 else float("inf")
        out[f"p_longest_{name}"] = float(-np.expm1(-len(ind) * (1 - p) * p ** longest))
    return out


def window_dispersion(indicator: np.ndarray, window: int = 50) -> dict[str, float]:
    """Index of dispersion of the high-level count over consecutive windows of calls, with
    the chi-square p-value of 'binomial' (what a mixture gives)."""
    ind = np.asarray(indicator, dtype=int)
    k = len(ind) // window
    counts = ind[: k * window].reshape(k, window).sum(1)
    p = counts.sum() / (k * window)
    if p in (0.0, 1.0):
        return {"dispersion": float("nan"), "p_value": float("nan"), "windows": float(k)}
    stat = ((counts - window * p) ** 2 / (window * p * (1 - p))).sum()
    return {"dispersion": float(stat / (k - 1)), "p_value": float(stats.chi2.sf(stat, k - 1)),
            "windows": float(k)}
