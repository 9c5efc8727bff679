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
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

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


def _check_points(workers: npt.ArrayLike, throughput: npt.ArrayLike
                  ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
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
    return n[order], x[order]


def fit_usl(workers: npt.ArrayLike, throughput: npt.ArrayLike) -> UslFit:
    """Fit γ, σ, κ by non-linear least squares with bounds γ > 0, σ, κ ∈ [0, 1] (the
    three-parameter regression of the R package ``usl``); :func:`fit_usl_many` for one data set.

    Refuses (ModelInputError) fewer than 6 points, points whose largest worker count is less
    than twice the smallest (too little load range to separate σ from κ), and non-positive or
    non-finite values.
    """
    out = fit_usl_many([(workers, throughput)])[0]
    if isinstance(out, ModelInputError):
        raise out
    return out


_LM_ITERATIONS = 300
_LM_TOL = 1e-13
"""Relative cost change below which a fit has converged (a few ulps of the cost)."""


def fit_usl_many(
    data: Sequence[tuple[npt.ArrayLike, npt.ArrayLike]],
) -> list[UslFit | ModelInputError]:
    """:func:`fit_usl` for many data sets at once: one result per (workers, throughput) pair,
    a :class:`ModelInputError` (returned, not raised) for a data set that cannot be fitted.

    The minimisation of Σ (X_i − γN_i / D_i)², D = 1 + σ(N − 1) + κN(N − 1), runs for all data
    sets together: a projected Levenberg–Marquardt iteration (Marquardt's diagonal scaling,
    analytic Jacobian ∂X/∂γ = N/D, ∂X/∂σ = −γN(N − 1)/D², ∂X/∂κ = −γN²(N − 1)/D²) with an
    active set for parameters held at a bound, on padded (sets × points) arrays, solving one
    3 × 3 system per set and step with ``numpy.linalg.solve``. It starts from two points —
    the linearised fit N/X = 1/γ + (σ/γ)(N − 1) + (κ/γ)N(N − 1) (Gunther 2007, §5.6) clipped
    into the bounds, and (X₁/N₁, 0.01, 1e-4) — and keeps the lower cost of the two. Cost per
    data set is a few array operations instead of a ``scipy.optimize.curve_fit`` call
    (≈ 10 ms each), which is what lets the advisor fit 10,000 queues.
    """
    results: list[UslFit | ModelInputError | None] = [None] * len(data)
    rows: list[tuple[int, npt.NDArray[np.float64], npt.NDArray[np.float64]]] = []
    for i, (w, t) in enumerate(data):
        try:
            n, x = _check_points(w, t)
        except ModelInputError as exc:
            results[i] = exc
            continue
        rows.append((i, n, x))
    if rows:
        width = max(len(n) for _, n, _ in rows)
        nn = np.ones((len(rows), width))
        xx = np.zeros((len(rows), width))
        mask = np.zeros((len(rows), width), dtype=bool)
        for r, (_, n, x) in enumerate(rows):
            nn[r, : len(n)], xx[r, : len(n)], mask[r, : len(n)] = n, x, True
        best, cost = None, None
        for start in (_linear_start(nn, xx, mask), _default_start(nn, xx)):
            p, c = _lm(nn, xx, mask, start)
            if best is None or cost is None:
                best, cost = p, c
            else:
                better = c < cost
                best = np.where(better[:, None], p, best)
                cost = np.where(better, c, cost)
        assert best is not None
        for r, (i, n, x) in enumerate(rows):
            gamma, sigma, kappa = (float(v) for v in best[r])
            if not all(math.isfinite(v) for v in (gamma, sigma, kappa)) or gamma <= 0:
                results[i] = ModelInputError("the USL fit did not converge on these points.")
                continue
            if kappa < 1e-12:
                kappa = 0.0
            residual = x - _usl(n, gamma, sigma, kappa)
            total = float(np.sum((x - x.mean()) ** 2))
            r2 = 1.0 - float(np.sum(residual**2)) / total if total > 0 else 1.0
            peak, peak_int, peak_x = usl_peak(gamma, sigma, kappa)
            results[i] = UslFit(gamma, sigma, kappa, peak, peak_int, peak_x, r2, int(n.size))
    return [r if r is not None else ModelInputError("no data") for r in results]


_LOWER = np.array([0.0, 0.0, 0.0])
_UPPER = np.array([np.inf, 1.0, 1.0])


def _default_start(n: npt.NDArray[np.float64], x: npt.NDArray[np.float64]
                   ) -> npt.NDArray[np.float64]:
    out = np.empty((n.shape[0], 3))
    out[:, 0] = x[:, 0] / n[:, 0]
    out[:, 1] = 0.01
    out[:, 2] = 1e-4
    return out


def _linear_start(n: npt.NDArray[np.float64], x: npt.NDArray[np.float64],
                  mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
    """Least squares of N/X on (1, N − 1, N(N − 1)), per set; clipped into the bounds."""
    a = np.stack([np.ones_like(n), n - 1.0, n * (n - 1.0)], axis=-1) * mask[..., None]
    y = np.where(mask, n / np.where(mask, x, 1.0), 0.0)
    ata = np.einsum("qli,qlj->qij", a, a) + 1e-300 * np.eye(3)
    aty = np.einsum("qli,ql->qi", a, y)
    try:
        coef = np.linalg.solve(ata, aty[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return _default_start(n, x)
    inv_a = np.where(coef[:, 0] > 0, coef[:, 0], np.nan)
    out = np.stack([1.0 / inv_a, coef[:, 1] / inv_a, coef[:, 2] / inv_a], axis=-1)
    fallback = _default_start(n, x)
    out = np.where(np.isfinite(out), out, fallback)
    return np.clip(out, _LOWER + np.array([1e-300, 0.0, 0.0]), _UPPER)


def _model(n: npt.NDArray[np.float64], p: npt.NDArray[np.float64]
           ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(X, Jacobian (sets, points, 3)) of the USL at parameters ``p`` (sets, 3)."""
    g, s, k = p[:, 0:1], p[:, 1:2], p[:, 2:3]
    nm1 = n - 1.0
    d = 1.0 + s * nm1 + k * n * nm1
    f = g * n / d
    jac = np.empty((*n.shape, 3))
    jac[..., 0] = n / d
    jac[..., 1] = -f * nm1 / d
    jac[..., 2] = -f * n * nm1 / d
    return f, jac


def _lm(n: npt.NDArray[np.float64], x: npt.NDArray[np.float64], mask: npt.NDArray[np.bool_],
        p0: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Projected Levenberg–Marquardt over all sets at once; returns (parameters, cost)."""
    p = p0.copy()
    lam = np.full(p.shape[0], 1e-3)
    eye = np.eye(3)

    cost = _cost(n, x, mask, p)
    live = np.isfinite(cost)
    for _ in range(_LM_ITERATIONS):
        if not live.any():
            break
        idx = np.flatnonzero(live)
        pl = p[idx]
        f, jac = _model(n[idx], pl)
        m = mask[idx]
        r = np.where(m, x[idx] - f, 0.0)
        jac = jac * m[..., None]
        a = np.einsum("qli,qlj->qij", jac, jac)
        g = np.einsum("qli,ql->qi", jac, r)  # descent direction of ½|r|²
        # Active set: a parameter on a bound whose descent direction points outside stays.
        active = ((pl <= _LOWER) & (g < 0)) | ((pl >= _UPPER) & (g > 0))
        diag = np.maximum(np.diagonal(a, axis1=1, axis2=2), 1e-300)
        lhs = a + (lam[idx, None] * diag)[:, :, None] * eye
        keep = ~active
        lhs = lhs * keep[:, :, None] * keep[:, None, :] + eye * active[:, :, None]
        rhs = np.where(active, 0.0, g)
        try:
            step = np.linalg.solve(lhs, rhs[..., None])[..., 0]
        except np.linalg.LinAlgError:
            step = rhs / np.maximum(diag, 1e-300)
        trial = np.clip(pl + step, _LOWER, _UPPER)
        trial[:, 0] = np.maximum(trial[:, 0], 1e-300)
        c_new = _cost(n[idx], x[idx], m, trial)
        better = np.isfinite(c_new) & (c_new <= cost[idx])
        gain = (cost[idx] - c_new) / np.maximum(cost[idx], 1e-300)
        p[idx[better]] = trial[better]
        done = better & (gain <= _LM_TOL)
        cost[idx[better]] = c_new[better]
        lam[idx] = np.where(better, np.maximum(lam[idx] / 3.0, 1e-12), lam[idx] * 4.0)
        stuck = ~better & (lam[idx] > 1e12)
        live[idx[done | stuck]] = False
    return p, cost


def _cost(n: npt.NDArray[np.float64], x: npt.NDArray[np.float64],
                 mask: npt.NDArray[np.bool_], p: npt.NDArray[np.float64]
                 ) -> npt.NDArray[np.float64]:
    f, _ = _model(n, p)
    r = np.where(mask, x - f, 0.0)
    return np.asarray(0.5 * np.einsum("ql,ql->q", r, r), dtype=np.float64)


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
