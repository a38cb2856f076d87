"""Distribution objects: ``sample(rng, size)`` plus analytic mean and variance where known.

After Ciw's distribution objects, without its global seed: the caller passes a
``numpy.random.Generator``. All values are in the unit the caller chose (seconds for times,
counts for inputs per transaction); the object does not know units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .errors import ConfigError, check_number, fail


class Distribution(Protocol):
    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray: ...

    @property
    def mean(self) -> float: ...

    @property
    def variance(self) -> float: ...


@dataclass(frozen=True, kw_only=True)
class Constant:
    """Always ``value``.

    >>> Constant(value=3.0).sample(np.random.default_rng(0), 2).tolist()
    [3.0, 3.0]
    """

    value: float

    def __post_init__(self) -> None:
        check_number("Constant", "value", self.value)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.full(size, self.value, dtype=float)

    @property
    def mean(self) -> float:
        return self.value

    @property
    def variance(self) -> float:
        return 0.0


@dataclass(frozen=True, kw_only=True)
class LogNormal:
    """Log-normal with the given ``median`` and shape ``sigma`` (std of the log).

    >>> round(LogNormal(median=1.0, sigma=0.0).mean, 6)
    1.0
    """

    median: float
    sigma: float

    def __post_init__(self) -> None:
        check_number("LogNormal", "median", self.median, strict=True)
        check_number("LogNormal", "sigma", self.sigma)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return self.median * np.exp(self.sigma * rng.standard_normal(size))

    @property
    def mean(self) -> float:
        return self.median * math.exp(self.sigma**2 / 2)

    @property
    def variance(self) -> float:
        s2 = self.sigma**2
        return (math.exp(s2) - 1) * self.median**2 * math.exp(s2)


@dataclass(frozen=True, kw_only=True)
class Exponential:
    """Exponential with the given ``mean`` (inter-arrival times of a Poisson process)."""

    mean_value: float

    def __post_init__(self) -> None:
        check_number("Exponential", "mean_value", self.mean_value, strict=True)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.exponential(self.mean_value, size)

    @property
    def mean(self) -> float:
        return self.mean_value

    @property
    def variance(self) -> float:
        return self.mean_value**2


@dataclass(frozen=True, kw_only=True)
class Discrete:
    """Values with probabilities (e.g. inputs per transaction: {1: 0.2, 2: 0.5, 3: 0.3})."""

    values: tuple[float, ...]
    probs: tuple[float, ...]
    _p: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.values) == 0 or len(self.values) != len(self.probs):
            raise fail("Discrete", "probs", "as many probabilities as values (at least one)",
                       list(self.probs))
        for p in self.probs:
            check_number("Discrete", "probs", p)
        total = sum(self.probs)
        if not math.isclose(total, 1.0, rel_tol=1e-6):
            raise fail("Discrete", "probs", "probabilities summing to 1", list(self.probs))
        object.__setattr__(self, "_p", np.asarray(self.probs, dtype=float) / total)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.choice(np.asarray(self.values, dtype=float), size=size, p=self._p)

    @property
    def mean(self) -> float:
        return float(np.dot(self.values, self._p))

    @property
    def variance(self) -> float:
        v = np.asarray(self.values, dtype=float)
        return float(np.dot((v - self.mean) ** 2, self._p))


@dataclass(frozen=True, kw_only=True)
class Empirical:
    """Resample measured values uniformly (bootstrap of a sample)."""

    samples: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.samples) == 0:
            raise fail("Empirical", "samples", "a non-empty list of numbers", [])

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        data = np.asarray(self.samples, dtype=float)
        return data[rng.integers(0, data.size, size)]

    @property
    def mean(self) -> float:
        return float(np.mean(self.samples))

    @property
    def variance(self) -> float:
        return float(np.var(self.samples))


KINDS = ("constant", "lognormal", "exponential", "discrete", "empirical")


def from_spec(spec: Any, owner: str, field_name: str) -> Distribution:
    """Build a distribution from a scenario value: a number means constant; a table names
    ``kind`` and its parameters, e.g. ``{kind = "discrete", values = [1, 3], probs = [.5, .5]}``.
    """
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return Constant(value=spec)
    if not isinstance(spec, dict) or "kind" not in spec:
        raise fail(owner, field_name, "a number or a table with a 'kind' key", spec)
    params = {k: v for k, v in spec.items() if k != "kind"}
    kind = spec["kind"]
    try:
        if kind == "constant":
            return Constant(**params)
        if kind == "lognormal":
            return LogNormal(**params)
        if kind == "exponential":
            return Exponential(mean_value=params.pop("mean"), **params)
        if kind == "discrete":
            return Discrete(values=tuple(params.pop("values")), probs=tuple(params.pop("probs")),
                            **params)
        if kind == "empirical":
            return Empirical(samples=tuple(params.pop("samples")), **params)
    except (TypeError, KeyError) as exc:
        raise fail(owner, field_name, f"valid parameters for a {kind} distribution ({exc})",
                   spec) from None
    except ConfigError as exc:
        raise ConfigError(f"{owner}.{field_name}: {exc}") from None
    raise fail(owner, f"{field_name}.kind", "one of " + ", ".join(map(repr, KINDS)), kind)
