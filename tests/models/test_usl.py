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


def test_batched_fit_is_at_least_as_good_as_curve_fit() -> None:
    """fit_usl_many (one batched projected Levenberg–Marquardt) against scipy's curve_fit
    (trust-region reflective), an independent solver of the same bounded problem."""
    import warnings

    from scipy.optimize import curve_fit

    from models.contention import fit_usl_many

    rng = np.random.default_rng(7)
    data = []
    for _ in range(60):
        g = rng.uniform(0.5, 100)
        s = rng.choice([0.0, rng.uniform(0, 0.3)])
        k = rng.choice([0.0, 10 ** rng.uniform(-5, -1)])
        n = np.sort(np.r_[rng.uniform(0.5, rng.uniform(2, 30), int(rng.integers(6, 80))), 40.0])
        noise = rng.choice([0.001, 0.05, 0.2])
        x = np.abs(usl_throughput(n, g, s, k) * (1 + rng.normal(0, noise, n.size))) + 1e-6
        data.append((n, x))
    fits = fit_usl_many(data)
    for (n, x), fit in zip(data, fits, strict=True):
        assert not isinstance(fit, ModelInputError)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p, _ = curve_fit(lambda nn, g, s, k: usl_throughput(nn, g, s, k), n, x,
                             p0=(x[0] / n[0], 0.01, 1e-4),
                             bounds=((0, 0, 0), (np.inf, 1, 1)), maxfev=20_000)
        ref = np.sum((x - usl_throughput(n, *p)) ** 2)
        ours = np.sum((x - usl_throughput(n, fit.gamma, fit.sigma, fit.kappa)) ** 2)
        assert ours <= ref * (1 + 1e-9) + 1e-300
        assert 0 <= fit.sigma <= 1
        assert 0 <= fit.kappa <= 1
        assert fit.gamma > 0


def test_batched_fit_returns_the_refusal_of_a_bad_set() -> None:
    from models.contention import fit_usl_many

    good = fit_usl_many([(SPEC_LOAD, SPEC_TPUT), (SPEC_LOAD[:3], SPEC_TPUT[:3])])
    assert not isinstance(good[0], ModelInputError)
    assert good[0].sigma == pytest.approx(2.773e-2, rel=2e-3)
    assert isinstance(good[1], ModelInputError)
    assert "at least 6" in str(good[1])
