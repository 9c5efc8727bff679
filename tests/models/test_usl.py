"""Universal Scalability Law fit on a published data set with published coefficients."""

from __future__ import annotations

import numpy as np
import pytest

from models.contention import fit_usl, usl_peak, usl_throughput
from models.errors import ModelInputError

# SPEC SDM91 benchmark, Sun SPARCcenter 2000 (16 CPUs), from N. J. Gunther, "Guerrilla
# Capacity Planning" (Springer 2007), shipped as data set `specsdm91` in the CRAN package
# `usl` (S. Moeding). Published three-parameter fit (usl 2.x/3.x, tests/summary.Rout.save):
# alpha (σ) = 2.773e-02, beta (κ) = 1.044e-04, gamma = 9.000e+01, R² = 0.9896; fitted values
# (tests/fitted.Rout.save) 90 1078 1541 1850 1879 1822 1646; peak.scalability = 97
# (tests/peak-scalability.Rout.save, 2 significant digits).
SPEC_LOAD = np.array([1, 18, 36, 72, 108, 144, 216], dtype=float)
SPEC_TPUT = np.array([64.9, 995.9, 1652.4, 1853.2, 1828.9, 1775.0, 1702.2])


def test_specsdm91_published_fit() -> None:
    fit = fit_usl(SPEC_LOAD, SPEC_TPUT)
    assert fit.sigma == pytest.approx(2.773e-2, rel=2e-3)
    assert fit.kappa == pytest.approx(1.044e-4, rel=2e-3)
    assert fit.gamma == pytest.approx(90.00, rel=1e-3)
    assert fit.r2 == pytest.approx(0.9896, abs=1e-4)
    fitted = usl_throughput(SPEC_LOAD, fit.gamma, fit.sigma, fit.kappa)
    np.testing.assert_allclose(np.round(fitted), [90, 1078, 1541, 1850, 1879, 1822, 1646])
    assert fit.peak_workers == pytest.approx(97, abs=1)


def test_integer_peak_checks_floor_and_ceil() -> None:
    # σ = 0, κ = 1/12.25 → N* = 3.5: X(3) = 3/(1 + 6/12.25), X(4) = 4/(1 + 12/12.25).
    peak, best, x = usl_peak(1.0, 0.0, 1 / 12.25)
    assert peak == pytest.approx(3.5)
    x3, x4 = 3 / (1 + 6 / 12.25), 4 / (1 + 12 / 12.25)
    assert best == (3 if x3 >= x4 else 4)
    assert x == pytest.approx(max(x3, x4))
    # An asymmetric case where ceil wins: σ = 0, κ = 0.07 → N* ≈ 3.78.
    _, best2, _ = usl_peak(1.0, 0.0, 0.07)
    xs = {n: n / (1 + 0.07 * n * (n - 1)) for n in (3, 4)}
    assert best2 == max(xs, key=lambda n: xs[n]) == 4


def test_kappa_zero_has_no_peak() -> None:
    n = np.arange(1, 33, dtype=float)
    x = 5.0 * n / (1 + 0.1 * (n - 1))  # Amdahl: κ = 0
    fit = fit_usl(n, x)
    assert fit.kappa == pytest.approx(0.0, abs=1e-9)
    assert fit.sigma == pytest.approx(0.1, rel=1e-6)
    assert fit.peak_workers is None
    assert fit.peak_workers_int is None


def test_refuses_too_few_points() -> None:
    with pytest.raises(ModelInputError, match="at least 6"):
        fit_usl(SPEC_LOAD[:5], SPEC_TPUT[:5])


def test_refuses_narrow_load_range() -> None:
    with pytest.raises(ModelInputError, match="span enough load"):
        fit_usl([10, 11, 12, 13, 14, 15], [100, 108, 116, 123, 130, 137])


def test_refuses_bad_values() -> None:
    with pytest.raises(ModelInputError):
        fit_usl([1, 2, 3, 4, 5, 6], [1, 2, 3, float("nan"), 5, 6])
    with pytest.raises(ModelInputError):
        usl_throughput([1, 2], 1.0, 1.5, 0.0)
