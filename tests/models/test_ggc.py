"""G/G/c Allen–Cunneen: exact at M/M/c, and Kingman = Pollaczek–Khinchine for M/G/1."""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.errors import ModelInputError
from models.queueing import erlang_c, ggc_wait


def test_exact_for_mmc_when_cv2_are_one() -> None:
    g = ggc_wait(7.0, 0.5, np.arange(4, 10), 1.0, 1.0)
    m = erlang_c(7.0, 2.0, np.arange(4, 10))
    np.testing.assert_allclose(g.wait_mean_s, m.wait_mean_s, rtol=1e-12)
    np.testing.assert_allclose(g.in_system_mean, m.in_system_mean, rtol=1e-12)
    # And against the textbook Erlang C sum, independently of the code: A = λ·E[S] = 3.5.
    a = 3.5
    for i, c in enumerate(range(4, 10)):
        top = a**c / math.factorial(c) * c / (c - a)
        pc = top / (sum(a**k / math.factorial(k) for k in range(c)) + top)
        wq = pc / (c * 2.0 - 7.0)  # C / (c·μ − λ)
        assert g.wait_mean_s[i] == pytest.approx(wq, rel=1e-10)
        assert g.in_system_mean[i] == pytest.approx(7.0 * (wq + 0.5), rel=1e-10)


@pytest.mark.parametrize("cs2", [0.0, 0.5, 2.0, 4.0])
def test_kingman_single_server_is_pollaczek_khinchine(cs2: float) -> None:
    # For Poisson arrivals (ca² = 1) and one server, Kingman's formula is the exact
    # Pollaczek–Khinchine mean: Wq = λ·E[S²] / (2(1 − ρ)), E[S²] = (1 + cs²)·E[S]².
    lam, s = 0.8, 1.0
    rho = lam * s
    pk = lam * (1.0 + cs2) * s * s / (2.0 * (1.0 - rho))
    g = ggc_wait(lam, s, 1, 1.0, cs2)
    assert float(g.wait_mean_s) == pytest.approx(pk, rel=1e-12)


def test_variability_scales_wait() -> None:
    base = ggc_wait(3.0, 1.0, 4, 1.0, 1.0)
    bursty = ggc_wait(3.0, 1.0, 4, 3.0, 1.0)
    assert float(bursty.wait_mean_s) == pytest.approx(2.0 * float(base.wait_mean_s))


def test_unstable_and_bad_input() -> None:
    g = ggc_wait(5.0, 1.0, [2, 5], 2.0, 2.0)
    assert not g.stable.any()
    assert np.all(np.isposinf(g.wait_mean_s))
    with pytest.raises(ModelInputError):
        ggc_wait(1.0, 1.0, 2, -0.1, 1.0)
    with pytest.raises(ModelInputError):
        ggc_wait(1.0, 0.0, 2, 1.0, 1.0)
