"""Distribution objects: ``sample(rng, size)`` plus analytic mean and variance where known.

After Ciw's distribution objects, without its global seed: the caller passes a
``numpy.random.Generator``. Values are in the unit the caller chose (seconds for times,
counts for inputs per transaction); the object does not know units.

In a scenario file a distribution is a number (a constant) or a table naming its ``kind``::

    inputs_per_tx = 3
    inputs_per_tx = { kind = "discrete", values = [2, 3], probs = [0.5, 0.5] }
"""

from __future__ import annotations

import math
from typing import Annotated, Literal, Union

import numpy as np

from .config import Float, NonNeg, PosFloat, Rule, Tag, at, config, kind_tag


@config
class Constant:
    """Always ``value``.

    >>> Constant(value=3.0).sample(np.random.default_rng(0), 2).tolist()
    [3.0, 3.0]
    """

    kind: Literal["constant"] = "constant"
    value: NonNeg = 0.0

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.full(size, self.value, dtype=float)

    @property
    def mean(self) -> float:
        return self.value

    @property
    def variance(self) -> float:
        return 0.0


@config
class LogNormal:
    """Log-normal with the given ``median`` and shape ``sigma`` (std of the log).

    >>> round(LogNormal(median=1.0, sigma=0.0).mean, 6)
    1.0
    """

    kind: Literal["lognormal"] = "lognormal"
    median: PosFloat = 1.0
    sigma: Annotated[Float, at.Ge(0), at.Le(10)] = 0.5

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return self.median * np.exp(self.sigma * rng.standard_normal(size))

    @property
    def mean(self) -> float:
        return self.median * math.exp(self.sigma**2 / 2)

    @property
    def variance(self) -> float:
        s2 = self.sigma**2
        return (math.exp(s2) - 1) * self.median**2 * math.exp(s2)


@config
class Exponential:
    """Exponential with mean ``scale`` (numpy's name): the gaps of a Poisson process."""

    kind: Literal["exponential"] = "exponential"
    scale: PosFloat = 1.0

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.exponential(self.scale, size)

    @property
    def mean(self) -> float:
        return self.scale

    @property
    def variance(self) -> float:
        return self.scale**2


@config
class Discrete:
    """Values with probabilities (e.g. inputs per transaction: values [1, 2, 3], probs
    [0.2, 0.5, 0.3])."""

    kind: Literal["discrete"] = "discrete"
    values: tuple[NonNeg, ...] = (1.0,)
    probs: tuple[NonNeg, ...] = (1.0,)
    RULES = (
        Rule("probs", "as many probabilities as values (at least one)",
             lambda d: 0 < len(d.values) == len(d.probs)),
        Rule("probs", "probabilities summing to 1", lambda d: math.isclose(sum(d.probs), 1.0,
                                                                            rel_tol=1e-6)),
    )

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        p = np.asarray(self.probs, dtype=float)
        return rng.choice(np.asarray(self.values, dtype=float), size=size, p=p / p.sum())

    @property
    def mean(self) -> float:
        return float(np.dot(self.values, self.probs) / sum(self.probs))

    @property
    def variance(self) -> float:
        v, p = np.asarray(self.values, dtype=float), np.asarray(self.probs, dtype=float)
        return float(np.dot((v - self.mean) ** 2, p / p.sum()))


@config
class Empirical:
    """Resample measured values uniformly (bootstrap of a sample)."""

    kind: Literal["empirical"] = "empirical"
    samples: tuple[NonNeg, ...] = (1.0,)
    RULES = (Rule("samples", "a non-empty list of numbers", lambda d: len(d.samples) > 0),)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        data = np.asarray(self.samples, dtype=float)
        return data[rng.integers(0, data.size, size)]

    @property
    def mean(self) -> float:
        return float(np.mean(self.samples))

    @property
    def variance(self) -> float:
        return float(np.var(self.samples))


Distribution = Annotated[
    Union[Annotated[Constant, Tag("constant")], Annotated[LogNormal, Tag("lognormal")],
          Annotated[Exponential, Tag("exponential")], Annotated[Discrete, Tag("discrete")],
          Annotated[Empirical, Tag("empirical")]],
    kind_tag("constant")]
"""Any of the distributions, chosen in a table by its ``kind``."""

Quantity = Union[NonNeg, Distribution]
"""A number (a constant) or a distribution table: how a scenario gives a random quantity."""


def as_distribution(value: float | Constant | LogNormal | Exponential | Discrete | Empirical
                    ) -> Constant | LogNormal | Exponential | Discrete | Empirical:
    """A :data:`Quantity` as a distribution object (a number becomes a :class:`Constant`)."""
    if isinstance(value, (int, float)):
        return Constant(value=float(value))
    return value
