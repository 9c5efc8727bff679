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

and p_n ∝ Π_{i<n} λ_i / μ_{i+1}. Simplification: a key re-added while in service (client-go's
dirty set) is not modelled; it behaves as "not yet idle".

Computation, in memory that does not grow with K (issue 12: the earlier (worker counts × K)
arrays took 22 GB for K = 10,000,000 and 100 worker counts). In log space,
a_n = log p_n − log p_0 = Σ_{i≤n} d_i with d_n = log((K − n + 1)·θ) − log(min(n, c)·μ).
d_n is strictly decreasing in n (K − n + 1 falls, min(n, c) does not), so a is concave and p
unimodal: the mode m is the last n with d_n > 0 (found by bisection), and from it a falls
on both sides. It falls fast: d_n − d_{n+1} ≥ log((K − n + 1)/(K − n)) ≥ 1/K, so
a_{m±j} ≤ a_m − j(j − 1)/(2K). The states are therefore summed outwards from m, in blocks,
until a is :data:`LOG_CUTOFF` (+ log K, for the arrival weights below) under a_m on each
side: at most :func:`window_bound` ≈ 78·√K states (248,000 for K = 10,000,000) whatever λ, μ
and c are, and one worker count at a time. Time is that per worker count, so a computation
is limited to :data:`models.limits.FINITE_KEYS_MAX_CELLS` worst-case states × worker counts.
The states left out each have p_n < e^−750·p_m < 1e-325, below the smallest double, where
exp() of them is 0 anyway, so every sum is the full sum to rounding; their total is below
(K + 1)·1e-325 < 1e-317 for K ≤ :data:`models.limits.FINITE_KEYS_MAX`. The arrival-point
weights π_n ∝ (K − n)·p_n are log-concave too and are kept the same way, from the same states
when those hold them (hence the + log K) or else on their own (their mode can sit far from m
when almost every key is in the system).

The wait tail and its quantiles use the Poisson form of the Erlang survival function,
Q(k, x) = P(Poisson(x) ≤ k − 1), so that P(Wq > t) = Σ_k π'_k Q(k, x) (x = c·μ·t, k = n − c + 1)
is one pass over the kept states with Poisson probabilities computed by Loader's saddle-point
method (C. Loader, "Fast and Accurate Computation of Binomial Probabilities", 2000; R's
``dpois``: ``stirlerr`` and ``bd0``), accurate to about 1e-12 relative even for k near 10^7,
where the regularized incomplete gamma function costs 2.6 µs a call; quantiles solve it by Newton's
method kept inside a bisection bracket. Results agree with the earlier dense computation to
about 1e-12 (the tests check 1e-9 against it and against a linear solve of the generator).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import gammaincc, gammaln

from models.errors import ModelInputError
from models.limits import FINITE_KEYS_MAX, FINITE_KEYS_MAX_CELLS, MAX_WORKERS
from models.queueing import check_quantile

FloatArray = npt.NDArray[np.float64]

LOG_CUTOFF = 750.0
"""States more than this below the mode in log probability are left out: e^−750 ≈ 5e-326 is
below the smallest double (4.9e-324), so they add nothing to any sum."""

TAIL_WEIGHT_MIN = 1e-18
"""Arrival-point weights below this are left out of the wait tail (as they were before): the
tail is a probability, computed to about 1e-18 absolute."""

_BLOCK = 4096
"""First block of states summed on each side of the mode (doubling after each block)."""


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
    if keys > FINITE_KEYS_MAX:
        raise ModelInputError(
            f"at most {FINITE_KEYS_MAX:,} keys are supported by the finite-key model (its time "
            f"grows as the square root of the key count), got {int(keys):,}."
        )
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
    if np.any(raw > MAX_WORKERS):
        raise ModelInputError(f"at most {MAX_WORKERS:,} workers can be modelled, got "
                              f"{raw.max():.6g}.")
    return raw.astype(np.int64)


def window_bound(keys: int) -> int:
    """Most states kept for one worker count: min(K + 1, 2·⌈√(2K·(cutoff + 1))⌉ + 3), from
    a_{m±j} ≤ a_m − j(j − 1)/(2K) with cutoff = LOG_CUTOFF + log K + 1 (module docstring) —
    about 78·√K."""
    cutoff = LOG_CUTOFF + math.log(keys) + 1.0
    return min(keys + 1, 2 * math.ceil(math.sqrt(2.0 * keys * (cutoff + 1.0))) + 3)


def _rates(keys: int, lam: float, mu: float | npt.ArrayLike, workers: npt.ArrayLike
           ) -> tuple[int, float, FloatArray, npt.NDArray[np.int64]]:
    """Checked (K, λ, μ per worker count, worker counts)."""
    mu_in = np.asarray(mu, dtype=np.float64)
    if not np.all(np.isfinite(mu_in)):
        raise ModelInputError("service rate must be finite.")
    _validate(keys, float(lam), float(mu_in.min()) if mu_in.size else 0.0)
    c = _workers(workers)
    per_count = window_bound(int(keys))
    if c.size * per_count > FINITE_KEYS_MAX_CELLS:
        most = max(1, FINITE_KEYS_MAX_CELLS // per_count)
        raise ModelInputError(
            f"the finite-key model with {int(keys):,} keys takes at most {most:,} worker counts "
            f"at once (its limit of {FINITE_KEYS_MAX_CELLS:,} states × worker counts), got "
            f"{c.size:,}; sweep a narrower range."
        )
    try:
        mu_c = np.broadcast_to(mu_in, c.shape).astype(np.float64)
    except ValueError:
        raise ModelInputError("give one service rate, or one per worker count.") from None
    return int(keys), float(lam), mu_c, c


# --- the states of one worker count --------------------------------------------------------------

def _last_positive(f: Callable[[int], float], lo: int, hi: int) -> int:
    """The largest n in lo..hi with f(n) > 0 for a decreasing f, or lo − 1 if there is none
    (bisection: about log2(K) evaluations)."""
    if hi < lo or not f(lo) > 0:
        return lo - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _concave_window(incr: Callable[[FloatArray], FloatArray], mode: int, first: int,
                    last: int, cutoff: float = LOG_CUTOFF) -> tuple[int, FloatArray]:
    """(lo, a): a[i] is the log weight of state lo + i minus the mode's (0 at ``mode``), for
    the states of first..last within ``cutoff`` of the mode. ``incr(n)`` gives
    a_n − a_{n−1} for an array of states n; it is strictly decreasing in n, so a is concave,
    falls on both sides of the mode, and the kept states are one interval. Summed outwards in
    blocks of :data:`_BLOCK`, 2·_BLOCK, … states, stopping at the first block that falls below
    the cutoff: the work and memory are at most about twice the kept states."""
    up: list[FloatArray] = []
    level, n0, size = 0.0, mode + 1, _BLOCK
    while n0 <= last and level >= -cutoff:
        n = np.arange(n0, min(last, n0 + size - 1) + 1, dtype=np.float64)
        a = level + np.cumsum(incr(n))  # a_n for these n
        up.append(a)
        level, n0, size = float(a[-1]), n0 + size, 2 * size
    down: list[FloatArray] = []
    level, n0, size = 0.0, mode, _BLOCK
    while n0 > first and level >= -cutoff:
        n = np.arange(n0, max(first + 1, n0 - size + 1) - 1, -1, dtype=np.float64)
        a = level - np.cumsum(incr(n))  # a_{n−1} = a_n − (a_n − a_{n−1})
        down.append(a)
        level, n0, size = float(a[-1]), n0 - size, 2 * size
    below = np.concatenate(down)[::-1] if down else np.empty(0)
    a = np.concatenate([below, np.zeros(1), *up])
    keep = np.flatnonzero(a >= -cutoff)  # one interval holding the mode
    return mode - below.size + int(keep[0]), a[keep[0] : keep[-1] + 1]


@dataclass(frozen=True)
class _Row:
    """The kept states of one worker count c: p_n for n = lo … (normalized), and the
    arrival-point weights π_n ∝ (K − n)·p_n for n = wlo … (normalized)."""

    c: int
    mu: float
    lo: int
    p: FloatArray
    wlo: int
    w: FloatArray


def _row(keys: int, lam: float, mu: float, c: int) -> _Row:
    if lam == 0:  # nothing ever arrives: every key idle
        one = np.ones(1)
        return _Row(c, mu, 0, one, 0, one)
    log_theta = math.log(lam) - math.log(keys)
    log_mu = math.log(mu)

    log_c = math.log(c)

    def d(n: FloatArray) -> FloatArray:  # log λ_{n−1} − log μ_n = a_n − a_{n−1}
        out: FloatArray = np.log(keys - n + 1.0) + (log_theta - log_mu)
        if n.size and min(n[0], n[-1]) < c:
            out -= np.log(np.minimum(n, float(c)))
        else:  # every n ≥ c: min(n, c) = c
            out -= log_c
        return out

    def e(n: FloatArray) -> FloatArray:  # the same for log((K − n)·p_n), n ≤ K − 1
        out: FloatArray = d(n) + np.log(keys - n) - np.log(keys - n + 1.0)
        return out

    def at(f: Callable[[FloatArray], FloatArray]) -> Callable[[int], float]:
        return lambda n: float(f(np.array([float(n)]))[0])

    mode = max(0, _last_positive(at(d), 1, keys))
    # log K wider than LOG_CUTOFF, so that the window also holds the arrival weights below
    lo, a = _concave_window(d, mode, 0, keys, LOG_CUTOFF + math.log(keys) + 1.0)
    p = np.exp(a)
    p /= p.sum()
    # π_n ∝ (K − n)·p_n from the same states when their window holds π's: log π is concave,
    # so if it is LOG_CUTOFF below its top at both ends (or the ends are 0 and K − 1), the
    # states outside are below that too. Otherwise (mass piled at n = K) π gets its own.
    n = lo + np.arange(a.size, dtype=np.float64)
    with np.errstate(divide="ignore"):
        b = a + np.log(keys - n)  # −inf at n = K
    top = float(b.max())
    if (lo == 0 or b[0] < top - LOG_CUTOFF) and (
            lo + a.size - 1 >= keys - 1 or b[-1] < top - LOG_CUTOFF):
        keep = np.flatnonzero(b >= top - LOG_CUTOFF)
        wlo, b = lo + int(keep[0]), b[keep[0] : keep[-1] + 1] - top
    else:
        wmode = max(0, _last_positive(at(e), 1, keys - 1))
        wlo, b = _concave_window(e, wmode, 0, keys - 1)
    w = np.exp(b)
    w /= w.sum()
    return _Row(c, mu, lo, p, wlo, w)


# --- the Poisson form of the Erlang tail ------------------------------------------------------

_LN_2PI = math.log(2.0 * math.pi)
_S0, _S1, _S2, _S3, _S4 = 1.0 / 12, 1.0 / 360, 1.0 / 1260, 1.0 / 1680, 1.0 / 1188


def _stirlerr(n: FloatArray) -> FloatArray:
    """log(n!) − log(√(2πn)·(n/e)^n) for n ≥ 1 (Loader 2000; R's ``stirlerr``): the
    Stirling series above 15, lgamma below."""
    out = np.empty_like(n)
    small = n <= 15
    ns = n[small]
    out[small] = gammaln(ns + 1.0) - (ns + 0.5) * np.log(ns) + ns - 0.5 * _LN_2PI
    nb = n[~small]
    nn = nb * nb
    out[~small] = (_S0 - (_S1 - (_S2 - (_S3 - _S4 / nn) / nn) / nn) / nn) / nb
    return out


def _bd0(j: FloatArray, x: float) -> FloatArray:
    """j·log(j/x) + x − j without cancellation (Loader 2000; R's ``bd0``): a series in
    v = (j − x)/(j + x) where |j − x| < 0.1·(j + x)."""
    near = np.abs(j - x) < 0.1 * (j + x)
    out: FloatArray = np.empty_like(j)
    far = ~near
    if np.any(far):
        jf = j[far]
        out[far] = jf * np.log(jf / x) + x - jf
    if np.any(near):
        jn = j[near]
        v = (jn - x) / (jn + x)
        total = (jn - x) * v
        term = 2.0 * jn * v
        v2 = v * v
        # terms fall by v² < 0.01 each: stop once v^2k is below 1e-17 (at most 9 terms)
        vmax = float(np.max(np.abs(v)))
        terms = 0 if vmax == 0 else min(9, math.ceil(-8.5 / math.log10(vmax)))
        for k in range(1, terms + 1):
            term = term * v2
            total = total + term / (2 * k + 1)
        out[near] = total
    return out


@dataclass(frozen=True)
class _Tail:
    """P(Wq > t) = G(c·μ·t) for one worker count, G(x) = Σ_k π'_k Q(k, x), k = n − c + 1 over
    the kept arrival states n ≥ c (weights above :data:`TAIL_WEIGHT_MIN`, one interval
    k1 … k1 + len − 1). With Q(k, x) = Σ_{j<k} e^−x x^j / j!:

        G(x) = S·Q(k1, x) + Σ_{j ≥ k1} pois(j; x)·Σ_{k > j} π'_k,   S = Σ_k π'_k = G(0),
        G'(x) = −Σ_k π'_k · pois(k − 1; x)."""

    k1: int
    pk: FloatArray
    suffix: FloatArray
    """suffix[i] = Σ_{k ≥ k1 + i} π'_k."""
    j: FloatArray
    """k1 − 1, k1, … (the Poisson counts needed), as floats."""
    log_scale: FloatArray
    """−stirlerr(j) − ½·log(2πj) for j ≥ 1 (0 for j = 0): log pois(j; x) = this − bd0(j, x)."""

    @property
    def total(self) -> float:
        return float(self.suffix[0]) if self.suffix.size else 0.0

    def value_and_slope(self, x: float) -> tuple[float, float]:
        """(G(x), G'(x)) for x > 0."""
        if not self.suffix.size:
            return 0.0, 0.0
        j = self.j
        log_p = self.log_scale - _bd0(np.maximum(j, 1.0), x)
        pois = np.exp(log_p)
        if j[0] == 0:
            pois[0] = math.exp(-x)
        head = self.total * float(gammaincc(float(self.k1), x))
        value = head + float(np.dot(pois[1:], self.suffix[1:]))
        slope = -float(np.dot(pois, self.pk))
        return min(1.0, max(0.0, value)), slope

    def at(self, x: float) -> float:
        return self.total if x == 0 else self.value_and_slope(x)[0]


def _tail_of(row: _Row) -> _Tail:
    n = row.wlo + np.arange(row.w.size)
    kept = np.flatnonzero((n >= row.c) & (row.w > TAIL_WEIGHT_MIN))
    if not kept.size:
        empty = np.empty(0)
        return _Tail(1, empty, empty, empty, empty)
    pk = row.w[kept[0] : kept[-1] + 1]  # log-concave weights: one interval
    k1 = int(n[kept[0]]) - row.c + 1
    suffix = np.cumsum(pk[::-1])[::-1]
    j = (k1 - 1) + np.arange(pk.size, dtype=np.float64)
    log_scale = np.zeros(pk.size)
    pos = j >= 1
    log_scale[pos] = -_stirlerr(j[pos]) - 0.5 * (_LN_2PI + np.log(j[pos]))
    return _Tail(k1, pk, suffix, j, log_scale)


def _quantile(tail: _Tail, cmu: float, target: float) -> float:
    """The t with P(Wq > t) = target (0 when P(wait) ≤ target): Newton's method on G inside a
    bracket [lo, hi] that every step narrows (a step leaving it is a bisection instead),
    from the Erlang mean of the state where the weights' survival crosses the target."""
    if tail.total <= target:
        return 0.0
    k2 = tail.k1 + tail.pk.size - 1
    lo, hi = 0.0, k2 + 10.0 * math.sqrt(k2) + 50.0
    for _ in range(64):  # G falls like a Poisson tail beyond the last state
        if tail.at(hi) <= target:
            break
        lo, hi = hi, 2.0 * hi
    crossing = int(np.searchsorted(-tail.suffix, -target))  # first k with Σ_{≥k} ≤ target
    x = float(tail.k1 + crossing)
    if not lo < x < hi:
        x = 0.5 * (lo + hi)
    for _ in range(200):
        value, slope = tail.value_and_slope(x)
        g = value - target
        if g == 0:
            break
        if g > 0:
            lo = x
        else:
            hi = x
        nxt = x - g / slope if slope < 0 else math.nan
        if abs(nxt - x) <= 1e-15 * x:  # Newton has converged (also true at nxt == x)
            break
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi)
        if hi - lo <= 1e-15 * hi:
            break
        x = nxt
    return x / cmu


# --- the public functions ------------------------------------------------------------------------

def _moments(row: _Row) -> tuple[float, float, float, float]:
    """(L, Lq, mean busy workers, P(wait)) of one worker count."""
    n = row.lo + np.arange(row.p.size, dtype=np.float64)
    ls = float(row.p @ n)
    lq = float(row.p @ np.maximum(n - row.c, 0.0))
    busy = float(row.p @ np.minimum(n, float(row.c)))
    nw = row.wlo + np.arange(row.w.size)
    return ls, lq, busy, float(row.w[nw >= row.c].sum())


def _result(keys: int, lam: float, mu: FloatArray, c: npt.NDArray[np.int64],
            moments: FloatArray) -> FiniteKeysResult:
    """The result from (L, Lq, busy, P(wait)) per worker count (``moments``, shape (n, 4))."""
    ls, lq, busy, pw = moments.T
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


def finite_keys(
    keys: int,
    arrival_rate_per_s: float,
    service_rate_per_s: float | npt.ArrayLike,
    workers: npt.ArrayLike,
) -> FiniteKeysResult:
    """M/M/c//K (machine-repairman) for K keys and each worker count in ``workers``.

    ``service_rate_per_s`` may be one rate or one per worker count (the what-if sweep uses
    that for contention-degraded service). Each worker count costs O(√K) time and memory
    (see the module docstring)."""
    keys, lam, mu, c = _rates(keys, arrival_rate_per_s, service_rate_per_s, workers)
    moments = np.array([_moments(_row(keys, lam, m, ci))
                        for m, ci in zip(mu.tolist(), c.tolist(), strict=True)])
    return _result(keys, lam, mu, c, moments.reshape(-1, 4))


@dataclass(frozen=True)
class FiniteKeysSweep:
    """:func:`finite_keys` with the wait quantile and the tail at the SLO, from one pass."""

    result: FiniteKeysResult
    wait_quantile_s: FloatArray
    wait_tail: FloatArray | None
    """P(Wq > slo) per worker count; None without an SLO."""


def finite_keys_sweep(
    keys: int,
    arrival_rate_per_s: float,
    service_rate_per_s: float | npt.ArrayLike,
    workers: npt.ArrayLike,
    *,
    quantile: float = 0.95,
    slo_s: float | None = None,
) -> FiniteKeysSweep:
    """The steady state, the ``quantile`` of the wait and P(Wq > ``slo_s``) for each worker
    count, the states of each computed once (the what-if sweep's columns)."""
    check_quantile(quantile)
    if slo_s is not None and not (math.isfinite(slo_s) and slo_s >= 0):
        raise ModelInputError("the wait threshold must be finite and non-negative.")
    keys, lam, mu, c = _rates(keys, arrival_rate_per_s, service_rate_per_s, workers)
    moments = np.empty((c.size, 4))
    quant = np.empty(c.shape)
    over = np.empty(c.shape)
    for i, (m, ci) in enumerate(zip(mu.tolist(), c.tolist(), strict=True)):
        row = _row(keys, lam, m, ci)  # one worker count's states at a time: memory O(√K)
        moments[i] = _moments(row)
        tail = _tail_of(row)
        quant[i] = _quantile(tail, ci * m, 1.0 - quantile)
        if slo_s is not None:
            over[i] = tail.at(ci * m * slo_s)
    return FiniteKeysSweep(_result(keys, lam, mu, c, moments), quant,
                           over if slo_s is not None else None)


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
    incomplete gamma function (Gross & Harris §2.8), summed in its Poisson form (module
    docstring).
    """
    if not (isinstance(t_s, int | float) and math.isfinite(t_s) and t_s >= 0):
        raise ModelInputError("the wait threshold must be finite and non-negative.")
    keys, lam, mu, c = _rates(keys, arrival_rate_per_s, service_rate_per_s, workers)
    out = np.empty(c.shape)
    for i, (m, ci) in enumerate(zip(mu.tolist(), c.tolist(), strict=True)):
        out[i] = _tail_of(_row(keys, lam, m, ci)).at(ci * m * float(t_s))
    return out


def finite_keys_wait_quantile(
    keys: int,
    arrival_rate_per_s: float,
    service_rate_per_s: float | npt.ArrayLike,
    workers: npt.ArrayLike,
    q: float,
) -> FloatArray:
    """The q-quantile of the M/M/c//K wait (0 when P(wait) ≤ 1 − q), solved on the exact tail
    of :func:`finite_keys_wait_tail` for each worker count."""
    check_quantile(q)
    keys, lam, mu, c = _rates(keys, arrival_rate_per_s, service_rate_per_s, workers)
    out = np.empty(c.shape)
    for i, (m, ci) in enumerate(zip(mu.tolist(), c.tolist(), strict=True)):
        out[i] = _quantile(_tail_of(_row(keys, lam, m, ci)), ci * m, 1.0 - q)
    return out
