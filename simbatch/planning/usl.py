"""Universal Scalability Law fit (Gunther): X(N) = gamma N / (1 + alpha (N-1) + beta N (N-1)).

Non-linear least squares with ``gamma`` free (as R's ``usl`` package does), by
``scipy.optimize.curve_fit`` with alpha, beta >= 0. The USL is a curve, not a mechanism: it is
fitted here beside simbatch's contention model so results can be compared with the tools
users know (R's usl package; N. J. Gunther, Guerrilla Capacity Planning). Oracle: the
``specsdm91`` data set gives alpha 0.02773, beta 1.044e-4, gamma 90.0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import curve_fit

from ..core.errors import ConfigError


def usl(n, alpha: float, beta: float, gamma: float):
    """Throughput at concurrency ``n``."""
    n = np.asarray(n, dtype=float)
    return gamma * n / (1 + alpha * (n - 1) + beta * n * (n - 1))


@dataclass(frozen=True)
class USLFit:
    alpha: float
    beta: float
    gamma: float

    def predict(self, n) -> np.ndarray:
        return usl(n, self.alpha, self.beta, self.gamma)

    @property
    def peak_n(self) -> float:
        """Concurrency of peak throughput, sqrt((1 - alpha) / beta)."""
        return math.sqrt((1 - self.alpha) / self.beta) if self.beta > 0 else math.inf


def fit_usl(n, throughput) -> USLFit:
    """Fit the USL to measured (concurrency, throughput) points.

    Examples
    --------
    >>> load = [1, 18, 36, 72, 108, 144, 216]
    >>> x = [64.9, 995.9, 1652.4, 1853.2, 1828.9, 1775.0, 1702.2]
    >>> f = fit_usl(load, x)
    >>> round(f.alpha, 4), round(f.beta * 1e4, 3), round(f.gamma, 1)
    (0.0277, 1.044, 90.0)
    """
    n = np.asarray(n, dtype=float)
    x = np.asarray(throughput, dtype=float)
    if n.size < 3 or n.size != x.size or (n <= 0).any() or (x <= 0).any():
        raise ConfigError("The 'n' and 'throughput' parameters of fit_usl must be equal-length "
                          f"lists of at least 3 positive numbers; got {n.tolist()} and "
                          f"{x.tolist()}.")
    gamma0 = float(x[np.argmin(n)] / n.min())
    popt, _ = curve_fit(usl, n, x, p0=[0.01, 1e-4, gamma0],
                        bounds=([0, 0, 0], [1, 1, np.inf]), maxfev=20000)
    return USLFit(alpha=float(popt[0]), beta=float(popt[1]), gamma=float(popt[2]))
