"""Random streams: one seed per run, one named generator per random source.

A replication's seed is derived from the experiment's seed and the replication's index
(:func:`replication_seed`), and recorded with the run, so ``simulate(case, seed=row.seed)``
reproduces any replication on its own. Within a run, each random source (the workload's
inputs, the arrivals, the service noise, ...) draws from its own ``numpy.random.Generator``,
keyed by the source's name (:func:`streams`): two configurations run with the same seed see
the same draws from every source they share (common random numbers), and adding a source to
an engine does not change the draws of the others.
"""

from __future__ import annotations

import zlib

import numpy as np

from .errors import check_int

SEED_BITS = 53          # seeds stay exact in JSON and in a float column


def replication_seed(seed: int, replication: int) -> int:
    """The seed of replication ``replication`` of an experiment seeded ``seed``.

    >>> replication_seed(1, 0) == replication_seed(1, 0) != replication_seed(1, 1)
    True
    """
    check_int("replication_seed", "seed", seed)
    check_int("replication_seed", "replication", replication)
    state = np.random.SeedSequence(seed, spawn_key=(replication,)).generate_state(1, np.uint64)
    return int(state[0]) >> (64 - SEED_BITS)


def streams(seed: int, names: tuple[str, ...]) -> dict[str, np.random.Generator]:
    """One independent generator per name, derived from ``seed`` and the name alone.

    >>> a = streams(7, ("arrivals", "service"))["service"].random()
    >>> b = streams(7, ("service",))["service"].random()
    >>> a == b
    True
    """
    check_int("streams", "seed", seed)
    return {name: np.random.default_rng(
                np.random.SeedSequence(seed, spawn_key=(zlib.crc32(name.encode()),)))
            for name in names}
