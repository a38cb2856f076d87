"""What one batch call costs: two cost levels kept as a persistent regime, the cost per key,
and the tail by batch size (``[service.regime]``, ``[service.tail]``).

Modelled on Aerospike 8.1 batch reads (``BatchOperate`` / the Python client's
``batch_read``) measured on a 2-vCPU VM that the client and the server share
(``../shared/data/aerospike-loopback`` and ``../shared/data/aerospike-harness-live-2026-11-23``;
the evidence is in ``validate/aerospike_model/FINDINGS.md``):

* **Slow level**: a call of ``n`` keys has the concurrency-1 median ``fixed_us +
  per_record_us * n`` (``[service]``). It is the level long-lived threads run at.
* **Fast level**: the same call costs ``fast_fixed_us + per_record_us * n`` and pays no
  wake-up of an idle core (:mod:`simbatch.batching.hostcores`). On the recorded VMs the
  one-key call took ~17-26 us at the fast level and ~60-95 us at the slow one.
* **A regime, not a mixture**: in call order the level persists for runs of calls (the live
  one-key cell: 31 runs where independent calls give 949, z = -43; the fast level ends once,
  ~23 ms into the cell, and does not come back). So the level is a state of the service
  that lasts in time: a two-state process with exponential sojourns, mean
  ``fast_sojourn_ms`` in the fast state and ``fast_sojourn_ms * (1 - s) / s`` in the slow
  one, ``s = fast_share`` the long-run share of time spent fast. Which state a process is in
  was not a function of batch size or concurrency (the same cell ran fast in seven fresh
  processes and slow in three), so ``fast_share`` is an **input**: 0 (the default, slow
  throughout) for a long-lived service; the calibration's judge takes it from each
  measured cell. A per-call mixture would average away the spread between runs that
  persistence makes.
* **Tail by batch size** (``noise = "by_size"``): one factor per call, drawn from the
  measured ratios latency / cell median of the concurrency-1 calls of its region of batch
  size (``[service.tail]``: ``edges_keys`` between regions, ``ratios`` one list per region),
  applied to the whole call. Ratios pooled across sizes let the two-level small cells widen
  every large cell's tail (31.6 ms predicted against 5.9 ms measured at 1,000 keys).

Simplifications: the fast level is taken parallel to the slow one (the low levels of live
5- and 10-key cells sit 10-20 us above that line, in at most 12 % of their calls); what
switches the regime (thread placement on the vCPUs is the likely cause) is not modelled,
only how long each state lasts.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated

import numpy as np

from ..core.config import NONE_WORD, Float, NonNeg, PosFloat, PosInt, Rule, at, config

if TYPE_CHECKING:
    from .service import ServiceConfig

Share = Annotated[Float, at.Ge(0), at.Le(1)]
REGIONS = ("small", "medium", "large")


@config
class RegimeConfig:
    """The fast cost level and how much of the time the service spends in it
    (``[service.regime]``).

    Parameters
    ----------
    fast_fixed_us : float or None
        Fixed cost of a call at the fast level, microseconds (the per-key cost is
        ``per_record_us`` at both levels); ``None`` = no fast level seen.
    fast_share : float
        Long-run share of time in the fast regime, 0 to 1: an input, not a fit (0 = slow
        throughout, the state of long-lived threads).
    fast_sojourn_ms : float
        Mean time the fast regime lasts once entered, milliseconds.

    Examples
    --------
    >>> RegimeConfig(fast_fixed_us=17.5, fast_share=0.5).slow_sojourn_ms
    25.0
    """

    fast_fixed_us: Annotated[NonNeg | None, NONE_WORD] = None
    fast_share: Share = 0.0
    fast_sojourn_ms: PosFloat = 25.0
    RULES = (Rule("fast_share", "0 unless fast_fixed_us is set",
                  lambda c: c.fast_share == 0 or c.fast_fixed_us is not None),)

    @property
    def slow_sojourn_ms(self) -> float:
        """Mean time the slow regime lasts, milliseconds (infinite when never fast)."""
        s = self.fast_share
        return math.inf if s == 0 else self.fast_sojourn_ms * (1 - s) / s


@config
class TailConfig:
    """Measured latency / median ratios of the calls in each region of batch size
    (``[service.tail]``; used when ``noise = "by_size"``).

    Parameters
    ----------
    edges_keys : tuple of int
        Region boundaries in keys: a call of ``n`` keys is in region ``i`` when ``n`` is at
        least ``edges_keys[i - 1]`` and below ``edges_keys[i]``.
    ratios : tuple of tuple of float
        One list of ratios per region (``len(edges_keys) + 1`` lists), each a set of
        equally likely values (quantile points).

    Examples
    --------
    >>> TailConfig(edges_keys=(32,), ratios=((0.9, 1.0, 1.3), (1.0,))).region(50)
    1
    """

    edges_keys: tuple[PosInt, ...] = (32, 317)
    ratios: tuple[tuple[Annotated[Float, at.Gt(0)], ...], ...] = ()
    RULES = (
        Rule("edges_keys", "increasing", lambda c: list(c.edges_keys) == sorted(
            set(c.edges_keys))),
        Rule("ratios", "empty or one non-empty list per region (len(edges_keys) + 1)",
             lambda c: not c.ratios or (len(c.ratios) == len(c.edges_keys) + 1
                                        and all(c.ratios))),
    )

    def region(self, n: int) -> int:
        """The region of a call of ``n`` keys."""
        return int(np.searchsorted(self.edges_keys, n, side="right"))


def noise_samples(config: ServiceConfig, rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` multiplicative factors of the size-independent noises (constant, lognormal,
    empirical)."""
    if config.noise == "lognormal":
        return np.exp(config.sigma * rng.standard_normal(size))
    if config.noise == "empirical":
        data = np.asarray(config.ratios, dtype=float)
        return data[rng.integers(0, data.size, size)]
    return np.ones(size)


class Regime:
    """The service's cost level over time: fast or slow, each state lasting an exponential
    time (see the module docstring). Draws only when ``0 < fast_share < 1``."""

    def __init__(self, config: RegimeConfig, rng: np.random.Generator | None) -> None:
        s = config.fast_share
        self.fast = s == 1.0
        self._until = math.inf
        self._rng = rng
        if 0.0 < s < 1.0 and rng is not None:
            self._mean_s = (config.slow_sojourn_ms / 1e3, config.fast_sojourn_ms / 1e3)
            self.fast = bool(rng.random() < s)
            self._until = self._sojourn()

    def _sojourn(self) -> float:
        assert self._rng is not None
        return float(self._rng.exponential(self._mean_s[self.fast]))

    def fast_at(self, now: float) -> bool:
        """The state at ``now`` (calls must ask in time order)."""
        while now >= self._until:
            self.fast = not self.fast
            self._until += self._sojourn()
        return self.fast


class CallCost:
    """Costs of one call from a :class:`~simbatch.batching.service.ServiceConfig`: the
    regime, the tail factor and, per call, its CPU parts.

    The concurrency-1 latency of a call at the slow level is ``fixed_us + per_record_us *
    n`` (or ``single_record_us`` for one record when set); on a shared machine two wake-ups
    of ``wake_us`` are part of it (the call's CPU is the rest), at the fast level there are
    none.
    """

    CHUNK = 4096

    def __init__(self, config: ServiceConfig, rng: np.random.Generator, wake_us: float = 0.0
                 ) -> None:
        self.config = config
        self.rng = rng
        self.wake_us = wake_us
        self._by_size = config.noise == "by_size"
        self._constant = config.noise == "constant"
        self._draws: list[float] = []
        self._tails = [np.asarray(r, dtype=float) for r in config.tail.ratios]
        needs_child = 0.0 < config.regime.fast_share < 1.0
        # the regime draws from its own child stream, so adding it changes no other draw
        self.regime = Regime(config.regime, rng.spawn(1)[0] if needs_child else None)

    def factor(self, n: int) -> float:
        """The tail factor of one call of ``n`` keys (median 1)."""
        if self._constant:
            return 1.0
        if not self._draws:
            self._draws = (self.rng.random(self.CHUNK) if self._by_size else
                           noise_samples(self.config, self.rng, self.CHUNK)).tolist()
        draw = self._draws.pop()
        if not self._by_size:
            return draw
        tail = self._tails[self.config.tail.region(n)]
        return float(tail[int(draw * tail.size)])

    def parts_us(self, n: int, fast: bool, single_path: bool = True
                 ) -> tuple[float, float, float]:
        """(fixed CPU, per-key CPU for ``n`` keys, wake-up per hand-off), microseconds;
        ``single_path``: a call of one record takes the single-record path when
        ``single_record_us`` is set."""
        c = self.config
        keys = c.per_record_us * n
        if fast:
            return float(c.regime.fast_fixed_us or 0.0), keys, 0.0
        fixed = c.fixed_us
        if single_path and n == 1 and c.single_record_us is not None:
            fixed, keys = c.single_record_us, 0.0
        return fixed - 2 * self.wake_us, keys, self.wake_us

    def latency_us(self, n: int, fast: bool, single_path: bool = True) -> float:
        """The concurrency-1 median latency of a call of ``n`` keys, microseconds."""
        fixed, keys, wake = self.parts_us(n, fast, single_path)
        return fixed + keys + 2 * wake
