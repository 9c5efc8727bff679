"""models.verdicts.context.least_squares (Pearson's r and the slope the contention rule's
duration rise reads) and trend_slope (the stuck rule's) against scipy's own regression, an
independent implementation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from models.verdicts.context import correlation, least_squares, trend_slope

# tenths: the scale of rates and log durations (a spread near the float underflow has no fit)
_values = st.lists(st.integers(-10_000, 10_000).map(lambda i: i / 10), min_size=3, max_size=200)


@settings(max_examples=200, deadline=None)
@given(_values, st.integers(0, 2**32 - 1))
def test_r_and_slope_are_scipys(x: list[float], seed: int) -> None:
    xs = np.array(x)
    ys = 0.3 * xs + np.random.default_rng(seed).normal(0.0, 5.0, xs.size)
    fit = least_squares(xs, ys)
    if np.ptp(xs) <= 0:
        assert fit is None
        return
    ref = stats.linregress(xs, ys)
    assert fit is not None
    assert fit[0] == pytest.approx(ref.rvalue, abs=1e-9)
    assert fit[1] == pytest.approx(ref.slope, rel=1e-9, abs=1e-12)
    assert -1.0 <= fit[0] <= 1.0
    slope = trend_slope(xs, ys)  # the stuck rule's trend: the same slope
    assert slope is not None
    assert slope == pytest.approx(ref.slope, rel=1e-9, abs=1e-12)


def test_a_constant_or_short_series_has_no_fit() -> None:
    assert least_squares(np.array([1.0, 2.0]), np.array([1.0, 3.0])) is None
    assert least_squares(np.array([1.0, 2.0, 3.0]), np.full(3, 0.1)) is None
    assert correlation(np.full(5, 2.0), np.arange(5.0)) is None
    assert trend_slope(np.arange(4.0), np.full(4, 7.0)) == 0.0  # a flat trend is a slope
    assert trend_slope(np.full(4, 1.0), np.arange(4.0)) is None  # one instant


def test_a_line_correlates_exactly() -> None:
    x = np.linspace(0.0, 1.0, 50)
    assert correlation(x, 4.0 - 2.0 * x) == -1.0
    fit = least_squares(np.log(x[1:]), 0.5 * np.log(x[1:]) + 1.0)  # elasticity 0.5
    assert fit is not None
    assert fit[1] == pytest.approx(0.5, rel=1e-12)
