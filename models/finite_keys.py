"""Finite-key (coalescing) queue: M/M/c//K, the machine-repairman model.

A client-go workqueue holds at most one waiting entry per key (adding a key that is already
queued is a no-op; a key re-added while being processed is only marked dirty). With K distinct
keys the queue therefore behaves as a *finite-source* queue: a key that is queued or being
processed cannot arrive again, so the arrival rate falls as the backlog grows and the backlog
can never exceed K. Under overload it saturates near K(1 − c·μ/λ) − c waiting keys instead of
growing without bound as M/M/c predicts.

Model (Gross & Harris, *Fundamentals of Queueing Theory*, 4th ed., §2.8 "Finite-source
queues"; Kleinrock vol. 1 §3.8): K keys; each idle key becomes ready at rate θ = λ/K, where
``arrival_rate_per_s`` λ is the total rate if every key were idle; c workers serve at rate μ
each. With n keys in the system (waiting + in service) the birth–death rates are

    λ_n = (K − n)·θ,   μ_n = min(n, c)·μ,   n = 0..K

and p_n ∝ Π_{i<n} λ_i / μ_{i+1}, computed here as a cumulative sum of logarithms and
normalized with log-sum-exp, so K = 100,000 and more is fine. Simplification: a key re-added
while in service (client-go's dirty set) is not modelled; it behaves as "not yet idle".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import gammaincc

from models.errors import ModelInputError
from models.queueing import check_quantile

FloatArray = npt.NDArray[np.float64]

_MAX_CELLS = 8_000_000  # states × worker counts computed in one block


@dataclass(frozen=True)
class FiniteKeysResult:
    """M/M/c//K steady state for each requested worker count (arrays aligned with ``workers``)."""

    keys: int
    arrival_rate_per_s: float
    """λ = K·θ: the total rate at which keys would become ready if all were idle."""
    service_rate_per_s: FloatArray
    """μ per worker, one per worker count (constant unless contention degrades it)."""
    workers: npt.NDArray[np.int64]
    throughput_per_s: FloatArray
    """X = θ·(K − L) = Σ min(n, c)·μ·p_n: keys completed per second."""
    utilization: FloatArray
    """X / (c·μ): the busy fraction of the workers (always < 1)."""
    p_wait: FloatArray
    """Probability that a key becoming ready finds all workers busy (arrival-point view)."""
    wait_mean_s: FloatArray
    """Wq = Lq / X (Little's law)."""
    response_mean_s: FloatArray
    queue_length_mean: FloatArray
    """Lq = Σ max(n − c, 0)·p_n: keys waiting (not in service)."""
    in_system_mean: FloatArray
    """L = Σ n·p_n."""


def _validate(keys: int, lam: float, mu: float) -> None:
    if isinstance(keys, bool) or not isinstance(keys, int | np.integer) or keys < 1:
        raise ModelInputError(f"the key count must be a whole number of at least 1, got {keys!r}.")
    if not (math.isfinite(lam) and lam >= 0):
        raise ModelInputError(f"arrival rate must be a finite non-negative number, got {lam!r}.")
    if not (math.isfinite(mu) and mu > 0):
        raise ModelInputError(f"service rate must be a finite positive number, got {mu!r}.")


def _workers(workers: npt.ArrayLike) -> npt.NDArray[np.int64]:
    raw = np.atleast_1d(np.asarray(workers, dtype=np.float64))
    if raw.ndim != 1 or not np.all(np.isfinite(raw)) or np.any(raw != np.round(raw)):
        raise ModelInputError("worker counts must be whole numbers.")
    if np.any(raw < 1):
        raise ModelInputError("worker count must be at least 1.")
    return raw.astype(np.int64)


def _log_probs(keys: int, lam: float, mu: npt.ArrayLike, c: npt.NDArray[np.int64]) -> FloatArray:
    """log p_n for n = 0..K, one row per worker count (shape (len(c), K+1))."""
    n = np.arange(1, keys + 1, dtype=np.float64)  # the state entered by each birth
    theta = lam / keys
    mu_arr = np.asarray(mu, dtype=np.float64).reshape(-1, 1)
    with np.errstate(divide="ignore"):
        log_birth = np.log((keys - (n - 1)) * theta)  # λ_{n−1}; −inf when λ = 0
    log_death = np.log(np.minimum(n[np.newaxis, :], c[:, np.newaxis]) * mu_arr)
    logp = np.zeros((len(c), keys + 1), dtype=np.float64)
    np.cumsum(log_birth[np.newaxis, :] - log_death, axis=1, out=logp[:, 1:])
    top = logp.max(axis=1, keepdims=True)
    logp -= top + np.log(np.exp(logp - top).sum(axis=1, keepdims=True))
    return logp


def finite_keys(
    keys: int,
    arrival_rate_per_s: float,
    service_rate_per_s: float | npt.ArrayLike,
    workers: npt.ArrayLike,
) -> FiniteKeysResult:
    """M/M/c//K (machine-repairman) for K keys and each worker count in ``workers``.

    ``service_rate_per_s`` may be one rate or one per worker count (the what-if sweep uses
    that for contention-degraded service). All worker counts are solved in one numpy pass.
    """
    mu_in = np.asarray(service_rate_per_s, dtype=np.float64)
    _validate(keys, float(arrival_rate_per_s), float(mu_in.min()) if mu_in.size else 0.0)
    if not np.all(np.isfinite(mu_in)):
        raise ModelInputError("service rate must be finite.")
    keys = int(keys)
    c = _workers(workers)
    mu = np.broadcast_to(mu_in, c.shape).astype(np.float64)
    lam = float(arrival_rate_per_s)
    rows = max(1, _MAX_CELLS // (keys + 1))
    lq = np.empty(c.shape)
    ls = np.empty(c.shape)
    busy = np.empty(c.shape)
    pw = np.empty(c.shape)
    states = np.arange(keys + 1, dtype=np.float64)
    for start in range(0, len(c), rows):
        sl = slice(start, start + rows)
        p = np.exp(_log_probs(keys, lam, mu[sl], c[sl]))
        cc = c[sl, np.newaxis]
        ls[sl] = p @ states
        lq[sl] = (p * np.maximum(states - cc, 0.0)).sum(axis=1)
        busy[sl] = (p * np.minimum(states, cc)).sum(axis=1)  # mean busy workers
        arriving = p * (keys - states)  # arrival-point weights ∝ (K − n)·p_n
        total = arriving.sum(axis=1)
        waiting = (arriving * (states >= cc)).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            pw[sl] = np.where(total > 0, waiting / np.where(total > 0, total, 1.0), 0.0)
    throughput = busy * mu
    with np.errstate(invalid="ignore", divide="ignore"):
        wq = np.where(throughput > 0, lq / np.where(throughput > 0, throughput, 1.0), 0.0)
    return FiniteKeysResult(
        keys=keys,
        arrival_rate_per_s=lam,
        service_rate_per_s=mu,
        workers=c,
        throughput_per_s=throughput,
        utilization=busy / c,
        p_wait=np.clip(pw, 0.0, 1.0),
        wait_mean_s=wq,
        response_mean_s=wq + 1.0 / mu,
        queue_length_mean=lq,
        in_system_mean=ls,
    )


def finite_keys_wait_tail(
    keys: int,
    arrival_rate_per_s: float,
    service_rate_per_s: float | npt.ArrayLike,
    workers: npt.ArrayLike,
    t_s: float,
) -> FloatArray:
    """P(Wq > t) for a key that becomes ready, exact for M/M/c//K under FIFO.

    A key arriving to n ≥ c keys in the system waits for n − c + 1 completions of c busy
    workers, i.e. an Erlang(n − c + 1, c·μ) time; arrivals see state n with probability
    ∝ (K − n)·p_n. So P(Wq > t) = Σ_{n≥c} π_n · Q(n − c + 1, c·μ·t), Q the regularized upper
    incomplete gamma function (Gross & Harris §2.8).
    """
    return _tail(keys, arrival_rate_per_s, service_rate_per_s, workers, np.asarray([t_s]))[:, 0]


def finite_keys_wait_quantile(
    keys: int,
    arrival_rate_per_s: float,
    service_rate_per_s: float | npt.ArrayLike,
    workers: npt.ArrayLike,
    q: float,
) -> FloatArray:
    """The q-quantile of the M/M/c//K wait (0 when P(wait) ≤ 1 − q), by bisection on the
    exact tail of :func:`finite_keys_wait_tail`, all worker counts at once."""
    check_quantile(q)
    c = _workers(workers)
    mu = np.broadcast_to(np.asarray(service_rate_per_s, dtype=np.float64), c.shape)
    target = 1.0 - q
    lo = np.zeros(c.shape)
    # Upper bracket: a key never waits for more than K completions at rate c·μ; K/(c·μ)
    # plus a generous margin for the Erlang tail.
    hi = (keys + 10.0 * math.sqrt(keys) + 50.0) / (c * mu)
    at_zero = _tail(keys, arrival_rate_per_s, mu, c, np.zeros(1))[:, 0]
    for _ in range(60):
        mid = (lo + hi) / 2.0
        over = _tail_rows(keys, arrival_rate_per_s, mu, c, mid) > target
        lo = np.where(over, mid, lo)
        hi = np.where(over, hi, mid)
    return np.where(at_zero > target, hi, 0.0)


def _arrival_weights(
    keys: int, lam: float, mu: npt.ArrayLike, c: npt.NDArray[np.int64]
) -> FloatArray:
    logp = _log_probs(keys, lam, mu, c)
    states = np.arange(keys + 1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        logw = logp + np.log(keys - states)
    top = logw.max(axis=1, keepdims=True)
    w = np.exp(logw - top)
    total = w.sum(axis=1, keepdims=True)
    return np.asarray(w / total, dtype=np.float64)


def _tail_rows(
    keys: int, lam: float, mu: npt.ArrayLike, c: npt.NDArray[np.int64], t: FloatArray
) -> FloatArray:
    """P(Wq > t_i) for row i (worker count c_i at time t_i)."""
    w = _arrival_weights(keys, lam, mu, c)
    mu_arr = np.broadcast_to(np.asarray(mu, dtype=np.float64), c.shape)
    states = np.arange(keys + 1, dtype=np.float64)
    out = np.empty(c.shape)
    for i, ci in enumerate(c.tolist()):
        n = states[ci:]
        weights = w[i, ci:]
        keep = weights > 1e-18  # negligible states do not move the tail
        shape = n[keep] - ci + 1.0
        out[i] = float(np.sum(weights[keep] * gammaincc(shape, ci * mu_arr[i] * t[i])))
    return np.clip(out, 0.0, 1.0)


def _tail(
    keys: int,
    lam: float,
    mu: float | npt.ArrayLike,
    workers: npt.ArrayLike,
    t: FloatArray,
) -> FloatArray:
    mu_arr = np.asarray(mu, dtype=np.float64)
    _validate(keys, float(lam), float(mu_arr.min()))
    c = _workers(workers)
    if np.any(~np.isfinite(t)) or np.any(t < 0):
        raise ModelInputError("the wait threshold must be finite and non-negative.")
    cols = [_tail_rows(int(keys), float(lam), mu_arr, c, np.full(c.shape, ti)) for ti in t]
    return np.stack(cols, axis=1)
