"""What a map operation costs against the map's size and the hashes put into one table per visit.

teranode's transaction map is 1024 dolthub/swiss tables, one per bucket. A fully random insert
or probe (every operation to a random bucket) costs more the larger the map: more of its
cache lines and pages miss the caches and the TLB. ``MapCosts.put_at`` / ``probe_at`` give that
cost (``put_ns`` at ``reference_entries``, ``*_per_doubling`` more for every doubling beyond).

An insert rarely comes alone: ``PutMultiBucket`` puts a whole **bucket slice** (one subtree's
hashes for one bucket) under one lock. Measured on the scale suite of ``validate/gobench``
(``models/go-scale-loopback.toml``: ``[slice_size]``, ``[production_*]``), the cost per hash falls
with the hashes per visit ``s``, whatever the table's size (10k to 62k entries per table gave
the same cost at ``s = 1000``): part of a random insert's cost is paid once per visit to a
table (its header, the first lines it touches), and the longer the visit, the more of the
table's lines and page translations are already at hand and the more of the independent
misses the core overlaps. The law the scale suite fits (``[memory]``; ``a = visit_share``)::

    put(s) = put_at(entries) * (a / s + (1 - a) * (1 + s / slice_reuse_hashes)
                                                 ** -slice_reuse_exponent)

Simplifications: the law is empirical (fitted on one x86 VM, taken to be a property of the
cache hierarchy that carries to other machines); probes are always random (``s = 1``); memory
bandwidth shared by all cores is not modelled (no measurement of it for a many-core machine).
"""

from __future__ import annotations

from typing import Annotated

import numpy as np

from ..core.config import NONE_WORD, Float, NonNeg, PosFloat, at, config


@config
class MemoryConfig:
    """The hashes-per-visit law, ``[memory]`` (from ``models/go-scale-loopback.toml``).

    ``slice_reuse_hashes`` is ``None`` (``"none"`` in TOML) to switch the law off: every insert
    then costs the random insert's cost.

    Examples
    --------
    >>> m = MemoryConfig(slice_reuse_hashes=200.0, slice_reuse_exponent=0.4, visit_share=0.2)
    >>> round(m.reuse_factor(1), 3), round(m.reuse_factor(1000), 3)
    (0.998, 0.391)
    >>> MemoryConfig().reuse_factor(1000)
    1.0
    """

    slice_reuse_hashes: Annotated[PosFloat | None, NONE_WORD] = None
    slice_reuse_exponent: NonNeg = 0.0
    visit_share: Annotated[Float, at.Ge(0), at.Lt(1)] = 0.0

    def reuse_factor(self, hashes: float) -> float:
        """Cost of an insert in a visit of ``hashes`` hashes, relative to a random insert."""
        return float(self.slice_put_ns(np.array([max(hashes, 1.0)]), 1.0)[0] / max(hashes, 1.0))

    def slice_put_ns(self, hashes: np.ndarray, put_ns: float) -> np.ndarray:
        """ns to put each slice (vectorised): ``hashes * put_ns * reuse_factor(hashes)``;
        an empty slice costs nothing."""
        h = np.asarray(hashes, dtype=float)
        if self.slice_reuse_hashes is None:
            return h * put_ns
        a = self.visit_share
        rest = (1.0 + h / self.slice_reuse_hashes) ** -self.slice_reuse_exponent
        return put_ns * (a * (h > 0) + (1 - a) * h * rest)
