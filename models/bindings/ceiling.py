"""Throughput, wait and pass time of a queue whose passes share one limited resource.

The rows model of every binding limit that has a measured ceiling X* in items/s — a lock, a
connection pool, a downstream or external rate limit, the API client's token bucket, the API
server's priority level, an admission webhook, the controller's CPU. More workers raise the
throughput only until the shared resource is saturated; past that they queue on it, and each
pass takes longer. A plain M/M/c sweep misses this and promises c·μ: on real client-go queues
it was 2× off at a count the history never ran (issue 20).

**The workers and the resource, as a closed network.** A pass spends ``delay_s`` Z on its own
work (the part no other pass waits for) and visits one shared station of service demand
D = 1 / X*. A station of k servers each held for a time H (a pool of k connections, k CPU
cores) is replaced by one server of demand H / k plus a pure delay H·(k − 1) / k (Seidmann,
Schweitzer and Shalev-Oren, "Computerized closed queueing network models of flexible
manufacturing systems", *Large Scale Systems* 12, 1987); since X* = k / H that is D = 1 / X*
and a delay folded into Z, so the model needs only the ceiling and the pass time without
waiting S₀: Z = max(S₀ − 1/X*, 0). With n passes in flight, mean-value analysis gives the
throughput X(n) (Reiser and Lavenberg, "Mean-value analysis of closed multichain queuing
networks", *J. ACM* 27, 1980; Lazowska et al., *Quantitative System Performance*, 1984,
§6.4): Q(0) = 0, R(n) = D·(1 + Q(n − 1) − U(n − 1)·(1 − cs²)/2), X(n) = n / (Z + R(n)),
Q(n) = X(n)·R(n), U(n) = X(n)·D — exact for an exponential station (cs² = 1); for another
cs² the arriving pass finds the one in service half-way through its residual life (Reiser's
approximation: a rate limiter that spaces its grants evenly, a token bucket, has cs² = 0;
the approximation can overshoot X* at a few passes in flight, so X(n) is capped at X*).
X(n) rises to X* and never past it.

**The work queue in front of it: a flow-equivalent server** (Chandy, Herzog and Woo,
"Parametric analysis of queuing networks", *IBM J. Res. Dev.* 19, 1975). With c workers and
Poisson arrivals at λ, the number of items in the system (queued or in a pass) is a
birth-death chain with birth rate λ and death rate X(min(n, c)): π(n) ∝ Π_{k ≤ n} λ / X(k)
for n ≤ c, then geometric with ratio r = λ / X(c). It is stable exactly when λ < X(c); then
the mean number queued is π(c)·r / (1 − r)², an arriving item waits with probability
P(n ≥ c) (PASTA) and, once c passes are in flight, for completions at the constant rate X(c):
P(wait > t) = P(n ≥ c)·exp(−(X(c) − λ)·t), the same atom-and-exponential form as Erlang C's.
The pass time is the response time minus the queue wait (Little). At λ ≥ X(c) the row says
the backlog grows: the throughput is X(c) and there is no finite wait.

Checked in ``tests/models/test_bindings_ceiling.py`` against closed forms (one worker and a
pure delay: M/M/1; no shared resource: Erlang C) and against the simulated mechanism (a lock,
a token bucket on a dependency) at worker counts the model was not fitted on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models.errors import ModelInputError
from models.limits import MAX_WORKERS

__all__ = ["CeilingModel", "StationFit", "closed_throughput", "fit_station"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def closed_throughput(workers_max: int, delay_s: float, demand_s: float,
                      station_cv2: float = 1.0) -> FloatArray:
    """X(n) for n = 1 … ``workers_max`` of the closed network above (MVA), items/s."""
    if workers_max < 1:
        raise ModelInputError(f"the worker count must be at least 1, got {workers_max!r}.")
    if workers_max > MAX_WORKERS:  # the analysis runs one step per worker
        raise ModelInputError(f"at most {MAX_WORKERS:,} workers can be modelled, got "
                              f"{workers_max!r}.")
    xs = _mva(workers_max, np.array([delay_s]), np.array([demand_s]), station_cv2)
    out: FloatArray = xs[1:, 0]
    return out


def _mva(workers_max: int, delay_s: FloatArray, demand_s: FloatArray, station_cv2: float
         ) -> FloatArray:
    """The mean-value analysis of the module docstring for many candidate networks at once:
    row n, column j is X(n) of candidate j (row 0 is 0)."""
    xs = np.zeros((workers_max + 1, demand_s.size))
    q = np.zeros(demand_s.size)
    u = np.zeros(demand_s.size)
    residual = (1.0 - station_cv2) / 2.0
    for n in range(1, workers_max + 1):
        res = demand_s * (1.0 + q - u * residual)
        thr = np.minimum(n / (delay_s + res), 1.0 / demand_s)  # Reiser's cs² < 1 can pass X*
        q, u = thr * res, thr * demand_s
        xs[n] = thr
    return xs


@dataclass(frozen=True)
class CeilingModel:
    """One queue's passes against a shared resource of ceiling ``ceiling_per_s`` (module
    docstring). ``service_free_s`` is S₀, the pass time without waiting for the resource;
    ``station_cv2`` the squared coefficient of variation of its service (1: held for an
    exponential time; 0: a rate limiter)."""

    ceiling_per_s: float
    service_free_s: float
    station_cv2: float = 1.0

    def __post_init__(self) -> None:
        for name, value in (("ceiling", self.ceiling_per_s),
                            ("pass time without waiting", self.service_free_s)):
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not math.isfinite(value) or value <= 0:
                raise ModelInputError(f"the {name} must be a positive number, got {value!r}.")
        if not (isinstance(self.station_cv2, int | float) and 0 <= self.station_cv2 <= 1):
            raise ModelInputError(
                f"the shared resource's cv² must be between 0 and 1, got {self.station_cv2!r}.")

    @property
    def demand_s(self) -> float:
        """D = 1 / X*: the station's service demand per pass."""
        return 1.0 / self.ceiling_per_s

    @property
    def delay_s(self) -> float:
        """Z = max(S₀ − D, 0): the part of a pass no other pass waits for."""
        return max(self.service_free_s - self.demand_s, 0.0)

    def saturated_throughput(self, workers: IntArray) -> FloatArray:
        """X(c): the throughput with every one of c workers busy."""
        c = np.asarray(workers, dtype=np.int64)
        if c.size == 0:
            return np.empty(0)
        x = closed_throughput(int(c.max()), self.delay_s, self.demand_s, self.station_cv2)
        out: FloatArray = x[c - 1]
        return out

    def columns(self, arrival_rate_per_s: float, workers: IntArray) -> dict[str, FloatArray]:
        """Per worker count (the flow-equivalent server of the module docstring):
        ``stable``, ``throughput_per_s``, ``utilization`` (busy workers / c; λ / X(c) when
        unstable), ``p_wait``, ``wait_mean_s``, ``response_mean_s``, ``pass_mean_s`` and the
        tail decay ``decay_per_s`` = X(c) − λ (NaN where unstable)."""
        lam = float(arrival_rate_per_s)
        c = np.asarray(workers, dtype=np.int64)
        if c.size == 0 or int(c.min()) < 1:
            raise ModelInputError("the worker counts must be at least 1.")
        x = closed_throughput(int(c.max()), self.delay_s, self.demand_s, self.station_cv2)
        xc = x[c - 1]
        stable = lam < xc
        nan = np.full(c.shape, np.nan)
        if lam <= 0:
            one = self.delay_s + self.demand_s
            zero = np.zeros(c.shape)
            return {"stable": np.ones(c.shape), "throughput_per_s": zero, "utilization": zero,
                    "p_wait": zero, "wait_mean_s": zero, "response_mean_s": np.full(c.shape, one),
                    "pass_mean_s": np.full(c.shape, one), "decay_per_s": np.full(c.shape, np.inf)}
        # log π(n) = Σ_{k ≤ n} log(λ / X(k)), n = 0 … c_max, normalised by its largest value
        logpi = np.concatenate(([0.0], np.cumsum(np.log(lam / x))))
        pi = np.exp(logpi - logpi.max())
        n = np.arange(pi.size, dtype=np.float64)
        head = np.cumsum(pi)[c]                  # Σ_{n ≤ c} π(n)
        head_n = np.cumsum(n * pi)[c]            # Σ_{n ≤ c} n·π(n)
        pic = pi[c]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = np.where(stable, lam / xc, np.nan)
            tail = pic * r / (1.0 - r)            # Σ_{n > c} π(n)
            total = head + tail
            queued = pic * r / (1.0 - r) ** 2 / total
            in_system = (head_n + pic * (c * r / (1.0 - r) + r / (1.0 - r) ** 2)) / total
            p_wait = (pic + tail) / total
            wait = queued / lam
            response = in_system / lam
            passes = response - wait
            busy = in_system - queued
        closed = c / xc
        return {
            "stable": stable.astype(np.float64),
            "throughput_per_s": np.where(stable, lam, xc),
            "utilization": np.where(stable, busy / c, lam / xc),
            "p_wait": np.where(stable, p_wait, nan),
            "wait_mean_s": np.where(stable, wait, np.inf),
            "response_mean_s": np.where(stable, response, np.inf),
            "pass_mean_s": np.where(stable, passes, closed),
            "decay_per_s": np.where(stable, xc - lam, nan),
        }


FIT_GRID = 24
"""Candidates per parameter of :func:`fit_station` (the pass time without waiting S₀ and the
demand D), geometric, on a coarse grid and then on a fine one spanning the coarse best's
neighbours."""

FIT_POINTS_MAX = 60
"""Points of a range the fit reads at most (evenly spaced): 60 points of a 2 h range at a
60 s step leave one every two minutes, more than the fit's two parameters need."""

FIT_WORKERS_MAX = 1_000
"""Most workers a fitted point may have: each candidate network is evaluated up to c states
per point (0.49 s a queue at c = 1,000; 7.1 s and 218 MB at 10,000)."""

FIT_CELLS_MAX = 2_000_000
"""Points × states × candidates evaluated at once (16 MB of float64): larger worker counts are
evaluated in slices."""

FIT_SPREAD_MIN = 1.3
"""The 90th / 10th percentile of throughput among the points: with less spread the pass
times come from one operating point plus noise, which many pairs (S₀, D) explain equally
well (seen on a lock and a webhook at constant load, whose 75 s windows vary by ±10 %: the
fit then said 18.9 and 25.3/s for 16.7 and 20/s)."""

FIT_DEMAND_SPAN = 1e-3
"""The smallest demand searched, as a share of the largest the points allow (1 / X_max): a
station that small is never busy at the points, so the model is the constant pass time —
the nested alternative the F test compares with."""

STATION_VISIBLE_MIN = 0.25
"""The fitted resource's utilization X_max·D at the busiest point below which no ceiling is
named: a resource under a quarter busy at the busiest point adds under a third of its
demand to the pass (M/M/1: ρ / (1 − ρ)), a rise the points cannot place — the fit then
says only how low a ceiling it rules out (:attr:`StationFit.lo_per_s`)."""

STATION_LEVEL = 0.9
"""The confidence of :func:`fit_station`'s interval and the level of its F test: the
ceiling's range on a card is the 90 % profile-likelihood interval (the ceilings whose best
fit is not worse than the F test at this level allows), and a station is only *shown* by the
points when it explains their pass times better than a constant at this level."""


@dataclass(frozen=True)
class StationFit:
    """What a history's pass times say about one shared resource (:func:`fit_station`)."""

    ceiling_per_s: float | None
    """X* = 1 / D of the best fit; None when the best fit puts no visible station in the
    points (the pass times are as flat as a constant explains them)."""
    lo_per_s: float
    """The lowest ceiling of the interval: the points rule out a ceiling below it."""
    hi_per_s: float | None
    """The highest ceiling of the interval; None when the points allow no station at all."""
    free_s: float
    """S₀ of the best fit: the pass time without waiting for the resource."""
    f_stat: float
    """F = (SSE₀ − SSE₁) / (SSE₁ / (n − 2)) of the station model against a constant pass
    time (SSE of the log pass times)."""
    points: int
    shown: bool
    """The station explains the pass times better than a constant at :data:`STATION_LEVEL`
    (F above its critical value) and is visible (:data:`STATION_VISIBLE_MIN`): the fit
    names a ceiling."""
    at_edge: bool = False
    """The best ceiling is the highest throughput the points reached (within 1 %): the
    points show the ceiling is at least that high, not where it is."""


def _fes_pass_s(lam: FloatArray, c: int, log_x_cum: FloatArray, xs: FloatArray
                ) -> FloatArray:
    """The flow-equivalent server's mean pass time for points at demands ``lam`` (P,) with c
    workers, for every candidate network (columns of ``xs``, X(k) in row k; ``log_x_cum`` its
    running Σ log X): shape (P, candidates); c / X(c) where λ ≥ X(c)."""
    k = np.arange(c + 1, dtype=np.float64)
    # log π(n) = n·log λ − Σ_{j ≤ n} log X(j), for every point and candidate at once
    logpi = k[None, :, None] * np.log(lam)[:, None, None] - log_x_cum[None, :c + 1, :]
    pi = np.exp(logpi - logpi.max(axis=1, keepdims=True))
    head, head_n, pic = pi.sum(axis=1), (k[None, :, None] * pi).sum(axis=1), pi[:, c, :]
    xc = xs[c][None, :]
    lam2 = lam[:, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = np.where(lam2 < xc, lam2 / xc, np.nan)
        tail = pic * r / (1.0 - r)
        queued = pic * r / (1.0 - r) ** 2
        in_system = head_n + pic * (c * r / (1.0 - r) + r / (1.0 - r) ** 2)
        passes = (in_system - queued) / (head + tail) / lam2
    out: FloatArray = np.where(lam2 < xc, passes, c / xc)
    return out


def _fit_errors(x: FloatArray, s: FloatArray, w: IntArray, free: FloatArray,
                demand: FloatArray, station_cv2: float) -> FloatArray:
    """Σ (log measured pass − log model pass)² over the points, for each candidate
    (S₀ = ``free``, D = ``demand``)."""
    xs = _mva(int(w.max()), np.maximum(free - demand, 0.0), demand, station_cv2)
    log_x_cum = np.vstack((np.zeros((1, demand.size)), np.cumsum(np.log(xs[1:]), axis=0)))
    err = np.zeros(demand.size)
    for c in np.unique(w).tolist():
        idx = np.flatnonzero(w == c)
        per = max(1, FIT_CELLS_MAX // ((c + 1) * demand.size))
        for start in range(0, idx.size, per):
            part = idx[start:start + per]
            pred = _fes_pass_s(x[part], int(c), log_x_cum, xs)
            err += np.sum((np.log(s[part])[:, None] - np.log(pred)) ** 2, axis=0)
    return err


def fit_station(throughput_per_s: FloatArray, service_mean_s: FloatArray,
                workers: FloatArray, station_cv2: float = 1.0) -> StationFit | None:
    """The shared resource that best explains a history's pass times, with its range; None
    when the points cannot tell (fewer than 6, too little spread in throughput, or more
    workers than :data:`FIT_WORKERS_MAX`).

    Each point is the model above at its own demand (its throughput) and worker count: its
    pass time is the flow-equivalent server's, from the mean-value analysis of the candidate
    network (Z = S₀ − D). A shared resource makes the pass longer as the load grows —
    including at points with under one busy worker on average, whose passes still overlap
    (the birth-death chain counts them). The candidates (S₀, D) run from a station that is
    never busy (D = :data:`FIT_DEMAND_SPAN` / X_max: a constant pass time, the nested model)
    to the largest demand the points allow (X ≤ 1/D), S₀ from a fifth of the shortest pass
    to the longest; least squares on the log pass times, a coarse grid then a fine one.

    The ceiling's interval is the profile likelihood's: every D whose best S₀ leaves the sum
    of squares within F(1, n − 2; :data:`STATION_LEVEL`) / (n − 2) of the best. The F test
    against the constant pass time (SSE₀ of log s about its mean) says whether the points
    show a station at all (:attr:`StationFit.shown`)."""
    x = np.asarray(throughput_per_s, dtype=np.float64)
    s = np.asarray(service_mean_s, dtype=np.float64)
    w = np.rint(np.asarray(workers, dtype=np.float64))
    ok = (np.isfinite(x) & np.isfinite(s) & np.isfinite(w) & (x > 0) & (s > 0) & (w >= 1)
          & (w <= 10_000))
    if np.count_nonzero(ok) < 6:
        return None
    x, s, w = x[ok], s[ok], w[ok].astype(np.int64)
    if int(w.max()) > FIT_WORKERS_MAX:
        return None  # the states per candidate grow with c: refused, not truncated
    lo_x, hi_x = np.quantile(x, [0.1, 0.9]).tolist()
    if hi_x < FIT_SPREAD_MIN * lo_x:  # the middle 80 %: not one odd point at the range's edge
        return None
    if x.size > FIT_POINTS_MAX:  # evenly over the range: the fit's cost is per point
        keep = np.linspace(0, x.size - 1, FIT_POINTS_MAX).round().astype(np.int64)
        x, s, w = x[keep], s[keep], w[keep]
    n = x.size
    log_s = np.log(s)
    sse0 = float(np.sum((log_s - log_s.mean()) ** 2))
    x_max, s_min, s_max = float(x.max()), float(s.min()), float(s.max())
    d_max = 1.0 / x_max
    # coarse grid over (S₀, D / min(S₀, D_max)), then a fine one around its best cell
    g_free = np.geomspace(0.2 * s_min, s_max, FIT_GRID)
    g_frac = np.geomspace(FIT_DEMAND_SPAN, 1.0, FIT_GRID)
    free, frac = np.repeat(g_free, FIT_GRID), np.tile(g_frac, FIT_GRID)
    demand = np.minimum(free, d_max) * frac
    err = _fit_errors(x, s, w, free, demand, station_cv2)
    i, j = divmod(int(np.argmin(err)), FIT_GRID)
    f_lo, f_hi = g_free[max(i - 1, 0)], g_free[min(i + 1, FIT_GRID - 1)]
    r_lo, r_hi = g_frac[max(j - 1, 0)], g_frac[min(j + 1, FIT_GRID - 1)]
    free2 = np.repeat(np.geomspace(f_lo, f_hi, FIT_GRID), FIT_GRID)
    frac2 = np.tile(np.geomspace(r_lo, r_hi, FIT_GRID), FIT_GRID)
    demand2 = np.minimum(free2, d_max) * frac2
    err2 = _fit_errors(x, s, w, free2, demand2, station_cv2)
    best = int(np.argmin(err2))
    sse1, d_best, free_best = float(err2[best]), float(demand2[best]), float(free2[best])
    f_crit = _f_critical(n - 2)
    resid = max(sse1, 1e-12 * max(sse0, 1e-12))
    f_stat = (sse0 - sse1) / (resid / (n - 2))
    # the profile over D: every candidate of both grids, the best S₀ for each D kept
    cand_d = np.concatenate((demand, demand2))
    cand_e = np.concatenate((err, err2))
    inside = cand_e <= resid * (1.0 + f_crit / (n - 2))
    lo = 1.0 / float(cand_d[inside].max())
    smallest = float(cand_d[inside].min())
    unbounded = smallest <= FIT_DEMAND_SPAN * d_max * 1.0001 \
        or x_max * smallest < STATION_VISIBLE_MIN
    hi = None if unbounded else 1.0 / smallest
    visible = x_max * d_best >= STATION_VISIBLE_MIN
    ceiling = 1.0 / d_best if visible else None
    shown = visible and f_stat >= f_crit
    edge = ceiling is not None and ceiling <= 1.01 * x_max
    return StationFit(ceiling, min(lo, ceiling) if ceiling is not None else lo, hi,
                      free_best, f_stat, n, shown, edge)


def _f_critical(dof: int) -> float:
    """F(1, dof) at :data:`STATION_LEVEL` (scipy.special, imported here: 0.25 s)."""
    from scipy.special import fdtri

    return float(fdtri(1.0, max(dof, 1), STATION_LEVEL))
