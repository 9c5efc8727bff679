"""A deterministic simulated fleet of controller work queues (the embedded demo's data).

Every queue is in one *regime* (healthy, saturated, API-throttled, retry storm, hot key,
over-provisioned, requeue misuse, long passes) set by :class:`QueueParams`. A queue's worker
count c is constant, or follows ``workers_schedule`` (one count per block of
``workers_block_s``, cycling from 00:00 UTC): the healthy ``deployment`` queue runs 5 and 3
workers in turn every 45 min, 16 cycles a day, so any 2-hour history holds a worker-count
change to check a capacity plan against (:func:`models.change.check_change`). From the
parameters the model computes, on a fixed grid of ``GRID_S`` seconds over one period of
``PERIOD_S`` (a day), the instantaneous *rate* of every counter the real metrics carry
(``workqueue_adds_total``, each histogram bucket, ``controller_runtime_reconcile_total``
per result, ``rest_client_requests_total`` per code/method, ...) and the value of every gauge.

Counters are exact integrals of those rates: the rate is constant inside each grid cell (the
cell's trapezoid average), the prefix integral over one period is tabulated once, and the
value at any time ``t`` is ``n·I(P) + I(k·GRID_S) + r_k·f`` (n whole periods, cell k,
f seconds into the cell). Count-like series are floored to integers (``floor`` keeps them
monotone, and cumulative buckets stay ordered because ``F(le)`` is). So any two readers —
the demo source, the exporter, the OpenMetrics backfill — see the very same numbers, and a
PromQL ``rate(x[w])`` over samples at ``at−w`` and ``at`` is exactly ``(C(at)−C(at−w))/w``.

The rates are mutually consistent the way client-go's metrics are (quasi-static steady
state at each instant, the wave is slow compared with the waits):

* adds = distinct adds = throughput X (a stable queue completes what it admits);
* busy workers B = Σ X_j·E[S_j] = rate of ``work_duration_seconds_sum`` < c;
* queue wait: G/G/c via Allen–Cunneen (``models.queueing.ggc_wait``) — with probability
  C (Erlang C) an item waits an exponential time of mean Wq/C, otherwise ~20 µs (the wake-up);
* everything that depends on c (utilization, the wait, its histogram, P(wait), the depth,
  the 429 share) uses the count of each grid cell at both of the cell's ends, so a change of
  c is a step at a cell boundary (rates and gauges alike); :meth:`Fleet.workers` is that
  cell's count, the value of ``controller_runtime_max_concurrent_reconciles``;
* depth = λ·W (Little's law), unfinished work = Σ X_j·E[S_j²]/2 (mean age of the in-flight
  items summed over them: renewal theory), active workers = B;
* retries = X·(error + requeue + requeue_after fractions) (every AddAfter, planned or not),
  errors ≤ reconciles;
* contention (USL, Gunther 2007): E[S](N) = s0·(1 + σ(N−1) + κN(N−1)) with N busy workers,
  so throughput vs busy workers follows X(N) = N / E[S](N) exactly; the time above s0 is
  spent in the client-side rate limiter (``rest_client_rate_limiter_duration_seconds``).

The ``t`` used everywhere is unix seconds; the model starts at ``EPOCH_S`` (2020-01-01).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from models.queueing import ggc_wait

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

EPOCH_S = 1_577_836_800.0
"""2020-01-01T00:00:00Z: counters are 0 here (times before it are rejected)."""
PERIOD_S = 86_400.0
"""The demand pattern repeats daily (peak at 14:00 UTC); noise harmonics divide the day."""
GRID_S = 60.0
"""Rates are constant within each grid cell; gauges are linear within each cell."""
CELLS = int(PERIOD_S / GRID_S)


def go_exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """client-go / prometheus ``ExponentialBuckets``: repeated multiplication in float64, so
    the bounds are the very floats Go prints (``9.999999999999999e-06`` and the like)."""
    out = [start]
    for _ in range(count - 1):
        out.append(out[-1] * factor)
    return tuple(out)


def go_float(value: float) -> str:
    """A float as Go's ``strconv.FormatFloat(v, 'g', -1, 64)`` prints it (what client_golang
    writes for ``le``): shortest round-trip digits, exponent form below 1e-4 or from 1e6 on,
    no trailing ``.0`` — ``1``, ``0.005``, ``9.999999999999999e-06``, ``1e+06``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exp_text = repr(abs(value)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    exp = (int(exp_text) if exp_text else 0) + len(whole.lstrip("0") or "") - 1
    if not whole.strip("0"):  # 0.00123 -> leading zeros of the fraction
        exp = (int(exp_text) if exp_text else 0) - (len(frac) - len(frac.lstrip("0"))) - 1
    digits = digits.rstrip("0") or "0"
    if exp < -4 or exp >= 6:
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp < 0:
        return f"{sign}0.{'0' * (-exp - 1)}{digits}"
    if len(digits) <= exp + 1:
        return sign + digits + "0" * (exp + 1 - len(digits))
    return f"{sign}{digits[: exp + 1]}.{digits[exp + 1 :]}"


WORKQUEUE_BUCKETS = go_exponential_buckets(10e-9, 10, 10)
"""``workqueue_{queue,work}_duration_seconds``: 1e-8 … 10 s (client-go/component-base layout)."""
RECONCILE_BUCKETS: tuple[float, ...] = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
    40, 50, 60,
)
"""``controller_runtime_reconcile_time_seconds`` (controller-runtime v0.14 … v0.24)."""
LIMITER_BUCKETS: tuple[float, ...] = (0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60)
"""``rest_client_rate_limiter_duration_seconds`` (component-base restclient metrics)."""

RESULTS = ("success", "error", "requeue", "requeue_after")
API_SERIES: tuple[tuple[str, str], ...] = (
    ("200", "GET"),
    ("200", "PATCH"),
    ("201", "POST"),
    ("404", "GET"),
    ("409", "PUT"),
    ("429", "GET"),
    ("500", "GET"),
)
"""(code, method) of the ``rest_client_requests_total`` series each process exposes."""
API_HOST = "10.96.0.1:443"
EXTERNAL_RESULTS = ("success", "error")

WAIT_FLOOR_S = 2e-5
"""Wake-up time of an item that finds an idle worker (what the fastest bucket sees)."""


# --- signal layout ------------------------------------------------------------------------

def _layout() -> tuple[dict[str, int], list[bool]]:
    names: list[str] = ["adds", "retries", "errors"]
    names += [f"result:{r}" for r in RESULTS]
    for hist, n in (("qd", len(WORKQUEUE_BUCKETS)), ("wd", len(WORKQUEUE_BUCKETS)),
                    ("rt", len(RECONCILE_BUCKETS)), ("lim", len(LIMITER_BUCKETS))):
        names += [f"{hist}:b{i}" for i in range(n)] + [f"{hist}:count", f"{hist}:sum"]
    names += [f"api:{code}:{method}" for code, method in API_SERIES]
    names += [f"ext:{r}" for r in EXTERNAL_RESULTS]
    index = {n: i for i, n in enumerate(names)}
    integral = [not n.endswith(":sum") for n in names]
    return index, integral


SIGNALS, _INTEGRAL = _layout()
"""Counter name -> row of the tables. ``*:sum`` rows are seconds; all others are counts."""
INTEGER_SIGNAL = np.array(_INTEGRAL, dtype=bool)
GAUGES = {
    "depth": 0,
    "depth_low_priority": 1,
    "active_workers": 2,
    "unfinished_work_s": 3,
    "longest_running_s": 4,
}


def hist_rows(prefix: str) -> tuple[list[int], int, int]:
    """Rows of a histogram's finite buckets, its count (the +Inf bucket) and its sum."""
    buckets = sorted(
        (i for n, i in SIGNALS.items() if n.startswith(prefix + ":b")),
    )
    return buckets, SIGNALS[prefix + ":count"], SIGNALS[prefix + ":sum"]


# --- parameters -----------------------------------------------------------------------------

@dataclass(frozen=True)
class QueueParams:
    """One queue's regime. Rates per second, times in seconds."""

    regime: str
    controller: str
    pod: str
    """The process running the controller: API-client metrics are per process."""
    workers: int
    arrival_rate_per_s: float
    """Mean distinct-add rate of the ordinary traffic (the daily mean)."""
    service_mean_s: float
    """E[S] of a successful pass (for USL queues: s0, the time with no contention)."""
    service_cv: float = 0.6
    daily_amplitude: float = 0.2
    noise_amplitude: float = 0.04
    error_fraction: float = 0.0
    error_service_mean_s: float | None = None
    error_service_cv: float = 0.3
    requeue_fraction: float = 0.0
    requeue_after_fraction: float = 0.0
    usl_sigma: float = 0.0
    usl_kappa: float = 0.0
    hot_key_pass_s: float = 0.0
    """> 0: one key is always dirty; every pass of it takes this long (serial per key)."""
    hot_key_event_rate_per_s: float = 20.0
    api_calls_per_reconcile: float = 2.0
    api_shares: tuple[tuple[str, str, float], ...] = (
        ("200", "GET", 0.55), ("200", "PATCH", 0.38), ("201", "POST", 0.03),
        ("404", "GET", 0.02), ("409", "PUT", 0.015), ("500", "GET", 0.005),
    )
    throttled_429_share: float = 0.0
    """Extra 429 share of API calls at full limiter pressure (scaled by (B/c)²)."""
    client_limiter: bool = False
    """The process exposes rest_client_rate_limiter_duration_seconds (component-base client)."""
    external_effects: bool = False
    """The controller writes to an external API with its own metric (success/error)."""
    low_priority_share: float = 0.0
    """Share of the depth at priority -100 (controller-runtime priority queue)."""
    workers_schedule: tuple[int, ...] = ()
    """Worker count of each block of ``workers_block_s`` seconds, cycling from 00:00 UTC of
    the model's day (the controller restarts with the next count at each block boundary);
    empty = always ``workers``. With a schedule, ``workers`` is its largest count."""
    workers_block_s: float = 2700.0
    """Length of one block of ``workers_schedule``: a whole number of grid cells, and the
    cycle (blocks × length) divides the period, so the schedule repeats every day alike."""
    description: str = ""
    advisor_expectation: str = ""

    def __post_init__(self) -> None:
        if not self.workers_schedule:
            return
        if any(not isinstance(c, int) or c < 1 for c in self.workers_schedule):
            raise ValueError(f"{self.controller}: worker counts must be integers >= 1, "
                             f"got {self.workers_schedule}")
        if self.workers != max(self.workers_schedule):
            raise ValueError(f"{self.controller}: workers ({self.workers}) must be the largest "
                             f"count of workers_schedule {self.workers_schedule}")
        cells = self.workers_block_s / GRID_S
        if not (cells >= 1 and cells == round(cells)):
            raise ValueError(f"{self.controller}: workers_block_s ({self.workers_block_s:g}) "
                             f"must be a whole number of {GRID_S:g} s cells")
        if CELLS % (round(cells) * len(self.workers_schedule)):
            raise ValueError(f"{self.controller}: the worker cycle "
                             f"({len(self.workers_schedule)} × {self.workers_block_s:g} s) "
                             f"must divide the {PERIOD_S:g} s period")

    def cell_workers(self) -> IntArray:
        """The worker count c in force in each of the CELLS grid cells of one period."""
        if not self.workers_schedule:
            return np.full(CELLS, self.workers, dtype=np.int64)
        block = np.arange(CELLS) // round(self.workers_block_s / GRID_S)
        counts = np.asarray(self.workers_schedule, dtype=np.int64)
        return np.asarray(counts[block % counts.size], dtype=np.int64)

    @property
    def uses_usl(self) -> bool:
        return self.usl_sigma > 0 or self.usl_kappa > 0

    def usl_peak(self) -> tuple[float, float]:
        """(N*, X(N*)): the busy-worker count of the USL's maximum and that throughput."""
        n_star = math.sqrt((1 - self.usl_sigma) / self.usl_kappa) if self.usl_kappa > 0 else 1e9
        return n_star, n_star / self.usl_service_s(n_star)

    def usl_service_s(self, busy: float) -> float:
        s, k = self.usl_sigma, self.usl_kappa
        return self.service_mean_s * (1 + s * (busy - 1) + k * busy * (busy - 1))


DEMO_QUEUES: tuple[QueueParams, ...] = (
    QueueParams(
        regime="healthy", controller="deployment", pod="apps-controller-manager-0",
        workers=5, arrival_rate_per_s=8.0, service_mean_s=0.2, service_cv=0.6,
        requeue_after_fraction=0.05, error_fraction=0.005, api_calls_per_reconcile=3.0,
        client_limiter=True, workers_schedule=(5, 3), workers_block_s=2700.0,
        description="5 and 3 workers in turn every 45 min (from 00:00 UTC, 5 first): "
        "ρ ≈ 0.3 at 5 with waits of µs to ms, ρ ≈ 0.5 at 3 with waits of tens of ms; "
        "a few planned requeues",
        advisor_expectation="healthy",
    ),
    QueueParams(
        regime="saturated", controller="replicaset", pod="apps-controller-manager-0",
        workers=4, arrival_rate_per_s=14.4, service_mean_s=0.25, service_cv=1.0,
        daily_amplitude=0.05, noise_amplitude=0.015, error_fraction=0.01,
        api_calls_per_reconcile=2.5, client_limiter=True, low_priority_share=0.1,
        description="λ close to c·μ (ρ 0.84–0.96): the wait is queueing, not work",
        advisor_expectation="add_workers",
    ),
    QueueParams(
        regime="api_throttled", controller="certificate", pod="cert-manager-0",
        workers=6, arrival_rate_per_s=8.5, service_mean_s=0.25, service_cv=0.4,
        daily_amplitude=0.35, noise_amplitude=0.03, usl_sigma=0.08, usl_kappa=0.015,
        api_calls_per_reconcile=5.0, throttled_429_share=0.12, client_limiter=True,
        error_fraction=0.02,
        description="client-side limiter and 429s: busy workers rise, throughput flattens "
        "(USL σ=0.08, κ=0.015)",
        advisor_expectation="contention",
    ),
    QueueParams(
        regime="retry_storm", controller="dnsrecord", pod="external-dns-0",
        workers=4, arrival_rate_per_s=3.0, service_mean_s=0.3, service_cv=0.5,
        error_fraction=0.85, error_service_mean_s=0.7, requeue_after_fraction=0.02,
        api_calls_per_reconcile=2.0, external_effects=True,
        description="the DNS provider fails: 85 % of reconciles error, retries ≈ adds",
        advisor_expectation="retry_storm",
    ),
    QueueParams(
        regime="hot_key", controller="ingress", pod="ingress-controller-0",
        workers=5, arrival_rate_per_s=2.0, service_mean_s=0.05, service_cv=0.6,
        hot_key_pass_s=5.0, api_calls_per_reconcile=2.0,
        api_shares=(("200", "GET", 0.5), ("200", "PATCH", 0.3), ("409", "PUT", 0.18),
                    ("500", "GET", 0.02)),
        description="one key always dirty with 5 s passes: depth ≈ 1 with 4 idle workers",
        advisor_expectation="hot_key",
    ),
    QueueParams(
        regime="over_provisioned", controller="secret", pod="core-controller-0",
        workers=20, arrival_rate_per_s=3.0, service_mean_s=0.08, service_cv=0.5,
        api_calls_per_reconcile=1.0,
        description="20 workers for a load of 0.24 busy workers (ρ ≈ 1 %)",
        advisor_expectation="over_provisioned",
    ),
    QueueParams(
        regime="requeue_misuse", controller="cronjob", pod="apps-controller-manager-0",
        workers=5, arrival_rate_per_s=10.0, service_mean_s=0.03, service_cv=0.5,
        requeue_after_fraction=0.9, api_calls_per_reconcile=1.0, client_limiter=True,
        description="RequeueAfter on 90 % of passes: retries without errors",
        advisor_expectation="requeue_misuse",
    ),
    QueueParams(
        regime="long_passes", controller="volumesnapshot", pod="core-controller-0",
        workers=4, arrival_rate_per_s=0.4, service_mean_s=2.0, service_cv=2.5,
        api_calls_per_reconcile=4.0,
        description="heavy-tailed passes: work p99 ≈ 25× the median",
        advisor_expectation="long_passes",
    ),
)
"""The named demo fleet, one queue per regime, controller-runtime controller names."""

REGIMES: tuple[str, ...] = tuple(p.regime for p in DEMO_QUEUES)


@dataclass(frozen=True)
class QueueSpec:
    name: str
    params: QueueParams
    phase_cells: int = 0
    """Shift of the daily pattern, in grid cells (varies the large benchmark fleet)."""
    variant: int = 0


# --- the model at grid points -----------------------------------------------------------

def _wave(p: QueueParams, rng: np.random.Generator, tau: FloatArray) -> FloatArray:
    """1 + daily sine (peak 14:00 UTC) + a few seeded harmonics (15 min … 1 h periods)."""
    phase = 2 * math.pi * 14 / 24 - math.pi / 2
    w = 1 + p.daily_amplitude * np.sin(2 * math.pi * tau / PERIOD_S - phase)
    harmonics = rng.choice(np.arange(24, 97), size=5, replace=False)
    weights = rng.dirichlet(np.ones(5)) * p.noise_amplitude
    phases = rng.uniform(0, 2 * math.pi, size=5)
    for h, a, ph in zip(harmonics, weights, phases, strict=True):
        w = w + a * np.sin(2 * math.pi * h * tau / PERIOD_S + ph)
    return np.asarray(w, dtype=np.float64)


def _lognormal_cdf(x: float | FloatArray, mean: FloatArray, cv: float) -> FloatArray:
    from scipy.special import ndtr  # here, not at the top: scipy.special takes 0.25 s to import

    s2 = math.log1p(cv * cv)
    mu = np.log(mean) - s2 / 2
    return np.asarray(ndtr((np.log(x) - mu) / math.sqrt(s2)), dtype=np.float64)


@dataclass
class _Component:
    """A share of the completions (rate per s) with its time distribution."""

    rate: FloatArray
    mean: FloatArray
    cv: float = 0.0
    kind: str = "lognormal"  # or "exponential"

    def cdf(self, le: float) -> FloatArray:
        if self.kind == "exponential":
            return np.asarray(-np.expm1(-le / self.mean), dtype=np.float64)
        return _lognormal_cdf(le, self.mean, self.cv)

    @property
    def second_moment(self) -> FloatArray:
        cv2 = 1.0 if self.kind == "exponential" else self.cv**2
        return np.asarray(self.mean**2 * (1 + cv2), dtype=np.float64)


def _histogram_rates(
    rates: FloatArray, prefix: str, buckets: Sequence[float], comps: Sequence[_Component]
) -> None:
    rows, count_row, sum_row = hist_rows(prefix)
    for row, le in zip(rows, buckets, strict=True):
        rates[row] = sum((c.rate * c.cdf(le) for c in comps), np.zeros_like(rates[row]))
    rates[count_row] = sum((c.rate for c in comps), np.zeros_like(rates[count_row]))
    rates[sum_row] = sum((c.rate * c.mean for c in comps), np.zeros_like(rates[sum_row]))


def usl_busy_workers(
    throughput_per_s: FloatArray, s0: float, sigma: float, kappa: float
) -> FloatArray:
    """Busy workers N on the rising branch of the USL for a throughput X:
    N = X·s0·(1 + σ(N−1) + κN(N−1)) ⇔ X s0 κ N² + (X s0 (σ−κ) − 1) N + X s0 (1−σ) = 0,
    smaller root in the cancellation-free form 2c/(−b + √(b² − 4ac))."""
    a = throughput_per_s * s0
    qa, qb, qc = a * kappa, a * (sigma - kappa) - 1, a * (1 - sigma)
    disc = qb * qb - 4 * qa * qc
    if np.any(disc < 0):
        raise ValueError("demand exceeds the USL peak throughput")
    return np.asarray(2 * qc / (-qb + np.sqrt(disc)), dtype=np.float64)


@dataclass(frozen=True)
class ModelTables:
    """One queue's model over one period: what :class:`Fleet` tabulates."""

    cell_rates: FloatArray
    """[signal, cell]: each counter's constant rate in each of the CELLS cells."""
    gauge_start: FloatArray
    """[gauge, cell]: each gauge at the start of the cell …"""
    gauge_end: FloatArray
    """… and at its end (the cell's own worker count at both ends: a gauge that depends on c
    steps at a worker-count change, and is linear inside a cell)."""
    workers: IntArray
    """[cell]: the worker count in force."""


def model_rates(p: QueueParams, seed: int, variant: int) -> ModelTables:
    """The model at the CELLS + 1 grid points of one period (the last point equals the
    first), each cell's rate the trapezoid average of its two ends.

    Both ends of a cell are evaluated with the cell's worker count c (``workers_schedule``):
    at a point where c changes, the cell before it sees the old count there, the cell after
    it the new one, so every c-dependent figure (utilization, the G/G/c wait and its
    histogram, P(wait), Little's depth) follows the count cell by cell. With one constant
    count both evaluations are the same and this is the plain trapezoid rule."""
    rng = np.random.default_rng([seed, variant, 7919])
    tau = np.arange(CELLS + 1, dtype=np.float64) * GRID_S
    wave = _wave(p, rng, tau)
    wave[-1] = wave[0]
    lam = p.arrival_rate_per_s * wave
    c_cell = p.cell_workers()
    c_start = np.append(c_cell, c_cell[0])  # the count of the cell starting at each point
    rates, gauges = _point_model(p, lam, c_start)
    if p.workers_schedule:
        c_end = np.insert(c_cell, 0, c_cell[-1])  # ... and of the cell ending there
        rates_end, gauges_end = _point_model(p, lam, c_end)
    else:
        rates_end, gauges_end = rates, gauges
    return ModelTables(
        cell_rates=(rates[:, :-1] + rates_end[:, 1:]) / 2,
        gauge_start=gauges[:, :-1], gauge_end=gauges_end[:, 1:], workers=c_cell)


def _point_model(
    p: QueueParams, lam: FloatArray, c: IntArray
) -> tuple[FloatArray, FloatArray]:
    """(counter rates [signal, point], gauges [gauge, point]) at grid points of demand
    ``lam`` with ``c`` workers at each point."""
    rates = np.zeros((len(SIGNALS), CELLS + 1))
    gauges = np.zeros((len(GAUGES), CELLS + 1))

    work: list[_Component]
    if p.hot_key_pass_s > 0:
        hot_rate = np.full_like(lam, 1.0 / p.hot_key_pass_s)
        work = [_Component(lam, np.full_like(lam, p.service_mean_s), p.service_cv),
                _Component(hot_rate, np.full_like(lam, p.hot_key_pass_s), 0.05)]
    elif p.uses_usl:
        busy = usl_busy_workers(lam, p.service_mean_s, p.usl_sigma, p.usl_kappa)
        work = [_Component(lam, busy / lam, p.service_cv)]
    else:
        e = p.error_fraction if p.error_service_mean_s is not None else 0.0
        err_mean = p.error_service_mean_s or p.service_mean_s
        work = [_Component(lam * (1 - e), np.full_like(lam, p.service_mean_s), p.service_cv)]
        if e > 0:
            work.append(_Component(lam * e, np.full_like(lam, err_mean), p.error_service_cv))
    x = sum((c.rate for c in work), np.zeros_like(lam))
    busy_total = sum((c.rate * c.mean for c in work), np.zeros_like(lam))
    full = busy_total >= c
    if np.any(full):
        raise ValueError(f"{p.controller}: busy workers reach c = {int(c[full].min())}")

    # Queue wait. The ordinary traffic is G/G/c (Allen–Cunneen) on the workers the hot key
    # leaves free; the hot key waits for its own previous pass (minus the first event's delay).
    ordinary = work[:1] if p.hot_key_pass_s > 0 else work
    lam_o = sum((c.rate for c in ordinary), np.zeros_like(lam))
    busy_o = sum((c.rate * c.mean for c in ordinary), np.zeros_like(lam))
    s_mean = busy_o / lam_o
    s_cv2 = sum((c.rate * c.second_moment for c in ordinary), np.zeros_like(lam)) / lam_o
    s_cv2 = s_cv2 / s_mean**2 - 1
    servers = c - (1 if p.hot_key_pass_s > 0 else 0)
    g = ggc_wait(lam_o, s_mean, servers, 1.0, s_cv2)
    p_wait = np.clip(np.asarray(g.p_wait, dtype=np.float64), 1e-9, 1.0)
    wq = np.asarray(g.wait_mean_s, dtype=np.float64)
    wait = [
        _Component(lam_o * (1 - p_wait), np.full_like(lam, WAIT_FLOOR_S), 0.8),
        _Component(lam_o * p_wait, np.maximum(wq / p_wait, 1e-7), kind="exponential"),
    ]
    if p.hot_key_pass_s > 0:
        hot_wait = p.hot_key_pass_s - 1.0 / p.hot_key_event_rate_per_s
        wait.append(_Component(work[1].rate, np.full_like(lam, hot_wait), 0.05))
    _histogram_rates(rates, "qd", WORKQUEUE_BUCKETS, wait)
    _histogram_rates(rates, "wd", WORKQUEUE_BUCKETS, work)
    _histogram_rates(rates, "rt", RECONCILE_BUCKETS, work)

    e, rq, ra = p.error_fraction, p.requeue_fraction, p.requeue_after_fraction
    rates[SIGNALS["adds"]] = x
    rates[SIGNALS["retries"]] = x * (e + rq + ra)
    rates[SIGNALS["errors"]] = x * e
    for result, share in zip(RESULTS, (1 - e - rq - ra, e, rq, ra), strict=True):
        rates[SIGNALS[f"result:{result}"]] = x * share

    calls = x * p.api_calls_per_reconcile
    utilization = busy_total / c
    share_429 = p.throttled_429_share * np.minimum(utilization / 0.7, 1.0) ** 2
    base = {(code, method): share for code, method, share in p.api_shares}
    total_base = sum(base.values())
    for code, method in API_SERIES:
        series_share = base.get((code, method), 0.0) / total_base * (1 - share_429)
        if code == "429":
            series_share = series_share + share_429
        rates[SIGNALS[f"api:{code}:{method}"]] = calls * series_share
    if p.client_limiter:
        # Seconds in the limiter per reconcile: USL excess over s0, else a negligible wait.
        per_rec = (busy_total / x - p.service_mean_s) if p.uses_usl else np.full_like(x, 2e-4)
        per_call = np.maximum(per_rec / p.api_calls_per_reconcile, 1e-5)
        p_wait_lim = np.clip(per_call / 0.05, 0.0, 0.9)
        fast = np.full_like(x, 3e-4)
        slow_mean = np.where(
            p_wait_lim > 0, (per_call - (1 - p_wait_lim) * fast) / np.maximum(p_wait_lim, 1e-9), 1.0
        )
        slow = p_wait_lim * calls
        lim = [_Component(calls * (1 - p_wait_lim), fast, 0.5),
               _Component(slow, np.maximum(slow_mean, 1e-6), kind="exponential")]
        _histogram_rates(rates, "lim", LIMITER_BUCKETS, lim)
    if p.external_effects:
        rates[SIGNALS["ext:success"]] = x * (1 - e)
        rates[SIGNALS["ext:error"]] = x * e

    wait_total = sum((c.rate * c.mean for c in wait), np.zeros_like(lam))  # λ·W (Little)
    gauges[GAUGES["depth"]] = wait_total * (1 - p.low_priority_share)
    gauges[GAUGES["depth_low_priority"]] = wait_total * p.low_priority_share
    gauges[GAUGES["active_workers"]] = busy_total
    unfinished = sum((c.rate * c.second_moment / 2 for c in work), np.zeros_like(lam))
    gauges[GAUGES["unfinished_work_s"]] = unfinished
    mean_age = unfinished / np.maximum(busy_total, 1e-12)
    gauges[GAUGES["longest_running_s"]] = mean_age * (1 + np.log1p(busy_total))
    return rates, gauges


# --- the fleet ------------------------------------------------------------------------------

class Fleet:
    """A set of queues with tabulated rates; counters and gauges at any time, vectorized.

    Queues sharing a ``variant`` share tables (the 500-queue benchmark fleet has a few dozen
    parameter variants, each shifted in time by ``phase_cells``).
    """

    def __init__(self, specs: Sequence[QueueSpec], seed: int = 0) -> None:
        if not specs:
            raise ValueError("a fleet needs at least one queue")
        self.specs = tuple(specs)
        self.seed = seed
        self.names = tuple(s.name for s in specs)
        by_variant: dict[int, QueueParams] = {}
        for s in specs:
            by_variant.setdefault(s.variant, s.params)
        variants = sorted(by_variant)
        pos = {v: i for i, v in enumerate(variants)}
        n_sig = len(SIGNALS)
        self._prefix = np.empty((len(variants), n_sig, CELLS + 1))
        self._cell_rate = np.empty((len(variants), n_sig, CELLS))
        self._gauge_start = np.empty((len(variants), len(GAUGES), CELLS))
        self._gauge_end = np.empty((len(variants), len(GAUGES), CELLS))
        self._workers = np.empty((len(variants), CELLS), dtype=np.int64)
        for v in variants:
            m = model_rates(by_variant[v], seed, v)
            self._cell_rate[pos[v]] = m.cell_rates
            self._prefix[pos[v], :, 0] = 0.0
            self._prefix[pos[v], :, 1:] = np.cumsum(m.cell_rates * GRID_S, axis=1)
            self._gauge_start[pos[v]] = m.gauge_start
            self._gauge_end[pos[v]] = m.gauge_end
            self._workers[pos[v]] = m.workers
        self._variant = np.array([pos[s.variant] for s in specs], dtype=np.int64)
        self._phase = np.array([s.phase_cells for s in specs], dtype=np.float64) * GRID_S
        pods = sorted({s.params.pod for s in specs})
        self.pods = tuple(pods)
        self.pod_index = np.array([pods.index(s.params.pod) for s in specs], dtype=np.int64)

    def __len__(self) -> int:
        return len(self.specs)

    def _locate(
        self, times: FloatArray, select: IntArray
    ) -> tuple[FloatArray, IntArray, FloatArray]:
        t = np.asarray(times, dtype=np.float64)
        if np.any(~np.isfinite(t)) or np.any(t < EPOCH_S):
            raise ValueError("the demo data start at 2020-01-01T00:00:00Z (unix 1577836800)")
        tau = (t[None, :] - EPOCH_S) + self._phase[select][:, None]  # (queues, times)
        periods = np.floor(tau / PERIOD_S)
        x = tau - periods * PERIOD_S
        cell = np.minimum(np.floor(x / GRID_S), CELLS - 1).astype(np.int64)
        frac = x - cell * GRID_S
        return periods, cell, frac

    def _select(self, select: npt.ArrayLike | None) -> IntArray:
        if select is None:
            return np.arange(len(self.specs), dtype=np.int64)
        return np.asarray(select, dtype=np.int64)

    def counters(
        self,
        times: npt.ArrayLike,
        rows: Sequence[int] | None = None,
        select: npt.ArrayLike | None = None,
    ) -> FloatArray:
        """Counter values [queue, signal, time] (counts floored to integers); ``select``
        picks queues by position."""
        t = np.atleast_1d(np.asarray(times, dtype=np.float64))
        sel = self._select(select)
        periods, cell, frac = self._locate(t, sel)
        sig = np.arange(len(SIGNALS)) if rows is None else np.asarray(rows, dtype=np.int64)
        v = self._variant[sel][:, None, None]
        s = sig[None, :, None]
        k = cell[:, None, :]
        value = (
            periods[:, None, :] * self._prefix[v, s, CELLS]
            + self._prefix[v, s, k]
            + self._cell_rate[v, s, k] * frac[:, None, :]
        )
        integer = INTEGER_SIGNAL[sig][None, :, None]
        return np.asarray(np.where(integer, np.floor(value), value), dtype=np.float64)

    def gauges(self, times: npt.ArrayLike, select: npt.ArrayLike | None = None) -> FloatArray:
        """Gauge values [queue, gauge, time], linear inside each grid cell (a gauge that
        depends on the worker count steps where the count changes, at the cell's start)."""
        t = np.atleast_1d(np.asarray(times, dtype=np.float64))
        sel = self._select(select)
        _, cell, frac = self._locate(t, sel)
        v = self._variant[sel][:, None, None]
        g = np.arange(len(GAUGES))[None, :, None]
        k = cell[:, None, :]
        w = (frac / GRID_S)[:, None, :]
        lo = self._gauge_start[v, g, k]
        hi = self._gauge_end[v, g, k]
        return np.asarray(lo + (hi - lo) * w, dtype=np.float64)

    def workers(self, times: npt.ArrayLike, select: npt.ArrayLike | None = None) -> FloatArray:
        """The configured worker count [queue, time] (``max_concurrent_reconciles``): the
        count of the grid cell holding each time, so a change shows from its boundary on."""
        t = np.atleast_1d(np.asarray(times, dtype=np.float64))
        sel = self._select(select)
        _, cell, _ = self._locate(t, sel)
        return np.asarray(self._workers[self._variant[sel][:, None], cell], dtype=np.float64)

    def instant_rates(self, times: npt.ArrayLike) -> FloatArray:
        """The rate in force at each time [queue, signal, time] (the cell's constant rate)."""
        t = np.atleast_1d(np.asarray(times, dtype=np.float64))
        _, cell, _ = self._locate(t, self._select(None))
        v = self._variant[:, None, None]
        s = np.arange(len(SIGNALS))[None, :, None]
        return np.asarray(self._cell_rate[v, s, cell[:, None, :]], dtype=np.float64)


def demo_specs(scenario: str = "all") -> list[QueueSpec]:
    """The named fleet, or the one queue of a regime / controller name."""
    chosen = [
        p for p in DEMO_QUEUES if scenario in ("all", p.regime, p.controller)
    ]
    if not chosen:
        known = ", ".join(("all", *REGIMES, *(p.controller for p in DEMO_QUEUES)))
        raise ValueError(f"unknown demo scenario {scenario!r} (choose one of: {known})")
    return [QueueSpec(p.controller, p, 0, i) for i, p in enumerate(DEMO_QUEUES) if p in chosen]


def large_fleet_specs(queues: int, seed: int = 0, scenario: str = "all",
                      variants: int = 48) -> list[QueueSpec]:
    """``queues`` queues cycling through the regimes with varied parameters: worker count
    ×1–3 with demand scaled to keep the regime's utilization (a ``workers_schedule`` is
    scaled alike, count by count, so ρ at each count is kept too), service time ×0.7–1.4,
    demand ×0.9–1.0 of that, and a random shift of the daily pattern (the schedule's
    blocks shift with it). Names like ``replicaset-007``.
    Queues share ``variants`` parameter sets (tables), so memory stays bounded."""
    if queues < 1:
        raise ValueError(f"the demo fleet needs at least 1 queue, got {queues}")
    base = [s.params for s in demo_specs(scenario)]
    rng = np.random.default_rng([seed, 104729])
    n_var = min(queues, max(variants, len(base)))
    params: list[QueueParams] = []
    for i in range(n_var):
        p = base[i % len(base)]
        if i < len(base):
            params.append(p)
            continue
        s_f = float(rng.uniform(0.7, 1.4))
        u = float(rng.uniform(0.9, 1.0))
        mult = 1 if (p.uses_usl or p.hot_key_pass_s > 0) else int(rng.integers(1, 4))
        params.append(replace(
            p,
            workers=p.workers * mult,
            workers_schedule=tuple(c * mult for c in p.workers_schedule),
            arrival_rate_per_s=p.arrival_rate_per_s * mult / s_f * u,
            service_mean_s=p.service_mean_s * s_f,
            error_service_mean_s=None if p.error_service_mean_s is None
            else p.error_service_mean_s * s_f,
            hot_key_pass_s=p.hot_key_pass_s * s_f,
        ))
    specs = []
    width = max(3, len(str(queues - 1)))
    for i in range(queues):
        v = i % n_var
        p = params[v]
        phase = int(rng.integers(0, CELLS)) if i >= n_var or v >= len(base) else 0
        pod = f"{p.controller}-{i:0{width}d}-controller-0"
        specs.append(QueueSpec(f"{p.controller}-{i:0{width}d}", replace(p, pod=pod), phase, v))
    return specs
