"""Contention and coherency: the Universal Scalability Law (USL).

    X(N) = γ·N / (1 + σ·(N − 1) + κ·N·(N − 1))

N workers (or concurrent clients), γ the throughput of one, σ ∈ [0, 1] the contention
(serialized fraction, Amdahl) and κ ∈ [0, 1] the coherency cost (pairwise exchange, e.g. API
conflicts, lock hand-offs, cache invalidation). With κ > 0 throughput peaks at

    N* = sqrt((1 − σ) / κ)

and falls beyond it ("retrograde" scaling), so adding workers can lower throughput. Source:
N. J. Gunther, *Guerrilla Capacity Planning*, Springer 2007, ch. 4–5; the fit follows the
three-parameter non-linear regression of the R package ``usl`` (S. Moeding, CRAN).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.optimize import OptimizeWarning, curve_fit

from models.errors import ModelInputError

MIN_POINTS = 6
MIN_LOAD_SPAN = 2.0  # max workers / min workers


@dataclass(frozen=True)
class UslFit:
    """A fitted USL curve."""

    gamma: float
    """Throughput of a single worker (units of the input throughput, e.g. items/s)."""
    sigma: float
    kappa: float
    peak_workers: float | None
    """N* = sqrt((1 − σ)/κ); None when κ = 0 (no peak: throughput rises forever)."""
    peak_workers_int: int | None
    """The integer worker count with the highest modelled throughput (floor or ceil of N*)."""
    peak_throughput: float | None
    r2: float
    """Coefficient of determination of the fit on the input points."""
    points: int


def usl_throughput(
    workers: npt.ArrayLike, gamma: float, sigma: float, kappa: float
) -> npt.NDArray[np.float64]:
    """X(N) = γN / (1 + σ(N − 1) + κN(N − 1)), vectorized over ``workers``."""
    n = np.asarray(workers, dtype=np.float64)
    for name, value in (("gamma", gamma), ("sigma", sigma), ("kappa", kappa)):
        if not math.isfinite(value) or value < 0:
            raise ModelInputError(f"{name} must be a finite non-negative number, got {value!r}.")
    if sigma > 1 or kappa > 1:
        raise ModelInputError("sigma and kappa must lie between 0 and 1.")
    if np.any(~np.isfinite(n)) or np.any(n <= 0):
        raise ModelInputError("worker counts must be positive.")
    return np.asarray(_usl(n, gamma, sigma, kappa), dtype=np.float64)


def usl_slowdown(workers: npt.ArrayLike, sigma: float, kappa: float) -> npt.NDArray[np.float64]:
    """1 + σ(N − 1) + κN(N − 1): how much slower each worker is at N workers than alone."""
    n = np.asarray(workers, dtype=np.float64)
    return np.asarray(1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0), dtype=np.float64)


def _usl(
    n: npt.NDArray[np.float64], gamma: float, sigma: float, kappa: float
) -> npt.NDArray[np.float64]:
    return np.asarray(gamma * n / usl_slowdown(n, sigma, kappa), dtype=np.float64)


def fit_usl(workers: npt.ArrayLike, throughput: npt.ArrayLike) -> UslFit:
    """Fit γ, σ, κ by non-linear least squares (``scipy.optimize.curve_fit``, trust-region
    reflective with bounds γ > 0, σ, κ ∈ [0, 1]).

    Refuses (ModelInputError) fewer than 6 points, points whose largest worker count is less
    than twice the smallest (too little load range to separate σ from κ), and non-positive or
    non-finite values.
    """
    n = np.asarray(workers, dtype=np.float64).ravel()
    x = np.asarray(throughput, dtype=np.float64).ravel()
    if n.shape != x.shape:
        raise ModelInputError("workers and throughput must have the same number of points.")
    if n.size < MIN_POINTS:
        raise ModelInputError(
            f"a USL fit needs at least {MIN_POINTS} (workers, throughput) points, got {n.size}."
        )
    if not (np.all(np.isfinite(n)) and np.all(np.isfinite(x))):
        raise ModelInputError("workers and throughput must be finite numbers.")
    if np.any(n <= 0) or np.any(x <= 0):
        raise ModelInputError("workers and throughput must be positive.")
    if n.max() < MIN_LOAD_SPAN * n.min():
        raise ModelInputError(
            f"the points do not span enough load for a USL fit: the largest worker count "
            f"({n.max():g}) must be at least {MIN_LOAD_SPAN:g}× the smallest ({n.min():g})."
        )
    order = np.argsort(n)
    n, x = n[order], x[order]
    gamma0 = float(x[0] / n[0])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizeWarning)
            params, _ = curve_fit(
                lambda nn, g, s, k: _usl(nn, g, s, k),
                n,
                x,
                p0=(gamma0, 0.01, 1e-4),
                bounds=((0.0, 0.0, 0.0), (np.inf, 1.0, 1.0)),
                maxfev=20_000,
            )
    except (RuntimeError, ValueError) as exc:
        raise ModelInputError(f"the USL fit did not converge on these points ({exc}).") from None
    gamma, sigma, kappa = (float(v) for v in params)
    if kappa < 1e-12:
        kappa = 0.0
    residual = x - _usl(n, gamma, sigma, kappa)
    total = float(np.sum((x - x.mean()) ** 2))
    r2 = 1.0 - float(np.sum(residual**2)) / total if total > 0 else 1.0
    peak, peak_int, peak_x = usl_peak(gamma, sigma, kappa)
    return UslFit(gamma, sigma, kappa, peak, peak_int, peak_x, r2, int(n.size))


def usl_peak(
    gamma: float, sigma: float, kappa: float
) -> tuple[float | None, int | None, float | None]:
    """(N*, the best integer N, X at that N). N* = sqrt((1 − σ)/κ); the integer optimum is
    whichever of floor(N*) and ceil(N*) (at least 1) gives the larger X. (None, None, None)
    when κ = 0, where throughput keeps rising (Amdahl's law)."""
    if kappa <= 0:
        return None, None, None
    peak = math.sqrt(max(1.0 - sigma, 0.0) / kappa)
    candidates = sorted({max(1, math.floor(peak)), max(1, math.ceil(peak))})
    values = [float(_usl(np.asarray(float(c)), gamma, sigma, kappa)) for c in candidates]
    best = max(range(len(candidates)), key=lambda i: values[i])
    return peak, candidates[best], values[best]
