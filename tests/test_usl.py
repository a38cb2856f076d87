"""The USL fitter reproduces R's usl coefficients on specsdm91 within 1 %."""

from __future__ import annotations

import pytest

from simbatch.core.errors import ConfigError
from simbatch.planning.usl import fit_usl

LOAD = [1, 18, 36, 72, 108, 144, 216]
THROUGHPUT = [64.9, 995.9, 1652.4, 1853.2, 1828.9, 1775.0, 1702.2]


def test_specsdm91_coefficients():
    f = fit_usl(LOAD, THROUGHPUT)
    assert f.alpha == pytest.approx(0.0277, rel=0.01)
    assert f.beta == pytest.approx(1.044e-4, rel=0.01)
    assert f.gamma == pytest.approx(90.0, rel=0.01)
    assert f.peak_n == pytest.approx(96.5, rel=0.01)


def test_bad_points_are_refused():
    with pytest.raises(ConfigError, match="fit_usl"):
        fit_usl([1, 2], [1.0, 2.0])
