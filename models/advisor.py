"""The advisor: one queue's signals → verdicts ("will more workers help, or only add contention?").

Pure: no I/O, no collectors import. The snapshot is read through the :class:`QueueSignals`
protocol (``collectors.types.QueueSnapshot`` satisfies it structurally); range data come as an
optional :class:`QueueHistory` of numpy arrays for the contention fit and the trend rules.

Every rule names its signal, its threshold and the reason for the threshold; the thresholds
live in :class:`AdvisorThresholds` (field metadata ``signal`` and ``reason``, listed by
:func:`threshold_table`). Metric semantics follow ``workqueue-metrics.md`` §6:

* arrivals λ = rate(workqueue_adds_total): distinct adds after coalescing, *including* the
  controller's own re-adds (retries, requeue_after);
* ``retries_total`` counts every delayed re-add, planned requeues included — it is never read
  as a failure rate; failures come from ``reconcile_errors_total`` / ``result="error"``;
* busy workers B = rate(work_duration_sum) (Little's law), utilization ρ = B / c;
* the API client (``rest_client_*``) is per process: its QPS budget is shared by every
  controller of the process, so the ceiling is process-wide.

Queueing numbers (the wait at a worker count) come from the what-if sweep
(:func:`models.whatif.whatif_tables`, the column form of :func:`models.whatif.whatif_sweep`:
M/M/c, or the finite-key M/M/c//K model when the key count is known), the backlog trend from
:mod:`models.fluid`, the contention curve from :func:`models.contention.fit_usl`.
:func:`advise_many` gives the same verdicts for a whole fleet, with the queueing figures of
every queue computed in a few vectorized calls.

Verdict kinds are stable identifiers (:data:`KINDS`); :func:`advise` returns them ordered by
impact: severity first (critical, warning, info, ok), then the order of :data:`KINDS`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from models.bindings.steps import step_ceiling
from models.contention import UslFit, fit_usl_many, usl_slowdown
from models.errors import ModelInputError
from models.fluid import fluid_summary
from models.histogram import classify_quantile
from models.options import BINDING_WORDS, OPTIONS
from models.queueing import erlang_c
from models.whatif import (
    MAX_WORKERS,
    WhatIfInputs,
    WhatIfRow,
    WhatIfTable,
    whatif_tables,
)

FloatArray = npt.NDArray[np.float64]

KINDS: tuple[str, ...] = (
    "stuck_workers",
    "retry_storm",
    "backlog_growing",
    "contention",
    "add_workers",
    "hot_key",
    "priority_starvation",
    "requeue_misuse",
    "long_passes",
    "over_provisioned",
    "insufficient_data",
    "healthy",
)
"""Stable verdict identifiers, in the tie-break order of impact."""

SEVERITIES: tuple[str, ...] = ("critical", "warning", "info", "ok")
"""Severity levels, most urgent first."""

CORE_FIELDS: tuple[str, ...] = ("arrival_rate_per_s", "service_mean_s", "workers")
"""Without these the capacity rules (add workers, backlog, over-provisioned) cannot run."""


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


class QueueSignals(Protocol):
    """The snapshot fields the advisor reads (``collectors.types.QueueSnapshot`` has them all).

    Rates per second, durations in seconds; ``None`` = not measured, with the reason in
    ``missing[field]``.
    """

    @property
    def queue(self) -> str: ...
    @property
    def arrival_rate_per_s(self) -> float | None: ...
    @property
    def throughput_per_s(self) -> float | None: ...
    @property
    def service_mean_s(self) -> float | None: ...
    @property
    def busy_workers(self) -> float | None: ...
    @property
    def workers(self) -> float | None: ...
    @property
    def utilization(self) -> float | None: ...
    @property
    def depth_mean(self) -> float | None: ...
    @property
    def depth_current(self) -> float | None: ...
    @property
    def depth_while_idle(self) -> float | None: ...
    @property
    def queue_wait_mean_s(self) -> float | None: ...
    @property
    def queue_wait_p95_s(self) -> float | None: ...
    @property
    def work_p50_s(self) -> float | None: ...
    @property
    def work_p99_s(self) -> float | None: ...
    @property
    def retries_per_s(self) -> float | None: ...
    @property
    def errors_per_s(self) -> float | None: ...
    @property
    def reconcile_results_per_s(self) -> Mapping[str, float]: ...
    @property
    def api_calls_per_s(self) -> float | None: ...
    @property
    def api_calls_by_class_per_s(self) -> Mapping[str, float]: ...
    @property
    def throttle_s_per_s(self) -> float | None: ...
    @property
    def unfinished_work_s(self) -> float | None: ...
    @property
    def unfinished_work_growth(self) -> float | None: ...
    @property
    def longest_running_s(self) -> float | None: ...
    @property
    def api_request_s_per_s(self) -> float | None: ...
    @property
    def api_writes_per_s(self) -> float | None: ...
    @property
    def apf_priority_level(self) -> str | None: ...
    @property
    def apf_wait_mean_s(self) -> float | None: ...
    @property
    def apf_rejected_per_s(self) -> float | None: ...
    @property
    def apf_inqueue_mean(self) -> float | None: ...
    @property
    def apf_seats_in_use_mean(self) -> float | None: ...
    @property
    def apf_seat_limit(self) -> float | None: ...
    @property
    def admission_webhook_mean_s(self) -> Mapping[str, float]: ...
    @property
    def apiserver_write_latency_mean_s(self) -> float | None: ...
    @property
    def apiserver_write_sli_mean_s(self) -> float | None: ...
    @property
    def depth_by_priority(self) -> Mapping[str, float]: ...
    @property
    def depth_min_by_priority(self) -> Mapping[str, float]: ...
    @property
    def missing(self) -> Mapping[str, str]: ...


HISTORY_FIELDS: tuple[str, ...] = (
    "arrival_rate_per_s",
    "throughput_per_s",
    "busy_workers",
    "workers",
    "service_mean_s",
    "depth",
    "queue_wait_mean_s",
    "unfinished_work_s",
    "longest_running_s",
    "errors_per_s",
    "retries_per_s",
    "api_calls_per_s",
    "api_409_per_s",
    "api_429_per_s",
    "throttle_s_per_s",
)
"""The series of a :class:`QueueHistory`, each aligned with ``t_s``."""


@dataclass(frozen=True, eq=False)
class QueueHistory:
    """One queue's signals over a time range, aligned on ``t_s`` (unix seconds, increasing).

    Each array has the length of ``t_s``; NaN marks a point that was not measured (this is the
    only place NaN is allowed, and nothing computed from it reaches a verdict as NaN).
    ``depth`` is the mean depth over each point's window; ``api_409_per_s`` and
    ``api_429_per_s`` are the process's conflict and throttled responses.
    """

    t_s: FloatArray
    arrival_rate_per_s: FloatArray
    throughput_per_s: FloatArray
    busy_workers: FloatArray
    workers: FloatArray
    service_mean_s: FloatArray
    depth: FloatArray
    queue_wait_mean_s: FloatArray
    unfinished_work_s: FloatArray
    longest_running_s: FloatArray
    errors_per_s: FloatArray
    retries_per_s: FloatArray
    api_calls_per_s: FloatArray
    api_409_per_s: FloatArray
    api_429_per_s: FloatArray
    throttle_s_per_s: FloatArray

    def __post_init__(self) -> None:
        t = np.asarray(self.t_s, dtype=np.float64)
        if t.ndim != 1:
            raise ModelInputError("history times must be a one-dimensional array.")
        if not np.all(np.isfinite(t)):
            raise ModelInputError("history times must be finite numbers.")
        if t.size > 1 and np.any(np.diff(t) <= 0):
            raise ModelInputError("history times must be strictly increasing.")
        object.__setattr__(self, "t_s", t)
        for name in HISTORY_FIELDS:
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            if arr.shape != t.shape:
                raise ModelInputError(
                    f"history series {name} has {arr.size} points but there are {t.size} times."
                )
            if np.any(np.isinf(arr)):
                raise ModelInputError(f"history series {name} contains an infinite value.")
            object.__setattr__(self, name, arr)

    @classmethod
    def from_columns(cls, t_s: npt.ArrayLike, **columns: npt.ArrayLike) -> QueueHistory:
        """Build from the series that exist; absent series become all-NaN (not measured)."""
        t = np.asarray(t_s, dtype=np.float64)
        unknown = sorted(set(columns) - set(HISTORY_FIELDS))
        if unknown:
            raise ModelInputError(f"unknown history series: {', '.join(unknown)}.")
        values = {
            name: np.asarray(columns[name], dtype=np.float64)
            if name in columns
            else np.full(t.shape, np.nan)
            for name in HISTORY_FIELDS
        }
        return cls(t_s=t, **values)

    @property
    def points(self) -> int:
        return int(self.t_s.size)

    def available(self, name: str) -> int:
        """How many measured (finite) points a series has."""
        return int(np.count_nonzero(np.isfinite(getattr(self, name))))


def histories_from_table(
    t_s: npt.ArrayLike, lengths: npt.ArrayLike, columns: Mapping[str, npt.ArrayLike]
) -> list[QueueHistory]:
    """Many histories from padded 2-D arrays, checked once for all of them.

    Row ``i`` of ``t_s`` (shape (N, L)) and of each column holds history ``i``'s first
    ``lengths[i]`` points (the rest of the row is ignored); absent series are all-NaN. The
    checks are those of :class:`QueueHistory` (finite, strictly increasing times; no infinite
    value), run as a few array operations instead of 16 small ones per history, which is what
    makes 500 histories cost a millisecond instead of tens of them.
    """
    t = np.asarray(t_s, dtype=np.float64)
    n = np.asarray(lengths, dtype=np.int64)
    if t.ndim != 2 or n.shape != t.shape[:1] or np.any(n < 0) or np.any(n > t.shape[1]):
        raise ModelInputError(
            "history tables need times of shape (histories, points) and one length per "
            "history, at most the number of points.")
    unknown = sorted(set(columns) - set(HISTORY_FIELDS))
    if unknown:
        raise ModelInputError(f"unknown history series: {', '.join(unknown)}.")
    used = np.arange(t.shape[1]) < n[:, np.newaxis]
    if not np.all(np.isfinite(t[used])):
        raise ModelInputError("history times must be finite numbers.")
    if t.shape[1] > 1 and np.any((np.diff(t, axis=1) <= 0) & used[:, 1:]):
        raise ModelInputError("history times must be strictly increasing.")
    values: dict[str, FloatArray] = {}
    for name in HISTORY_FIELDS:
        if name not in columns:
            continue
        arr = np.asarray(columns[name], dtype=np.float64)
        if arr.shape != t.shape:
            raise ModelInputError(
                f"history series {name} has shape {arr.shape} but the times have {t.shape}.")
        if np.any(np.isinf(arr[used])):
            raise ModelInputError(f"history series {name} contains an infinite value.")
        values[name] = arr
    out = []
    for i, k in enumerate(n.tolist()):
        h = object.__new__(QueueHistory)  # checked above, for every history at once
        object.__setattr__(h, "t_s", t[i, :k])
        for name in HISTORY_FIELDS:
            col = values.get(name)
            object.__setattr__(h, name, col[i, :k] if col is not None else np.full(k, np.nan))
        out.append(h)
    return out


@dataclass(frozen=True)
class ProcessTotals:
    """Sums over every queue of the process (job/instance or pod) running this queue.

    The API client (``rest_client_*``) and its rate limiter belong to the process, so API
    calls per reconcile, the limiter's share of busy time and the API ceiling are computed
    against these totals, not against one queue's figures."""

    throughput_per_s: float | None = None
    busy_workers: float | None = None
    arrival_rate_per_s: float | None = None
    queues: int = 1

    def __post_init__(self) -> None:
        for name in ("throughput_per_s", "busy_workers", "arrival_rate_per_s"):
            v = getattr(self, name)
            if v is not None and not (math.isfinite(v) and v >= 0):
                raise ModelInputError(f"process {name} must be a non-negative number, got {v!r}.")


# --------------------------------------------------------------------------------------------
# Thresholds
# --------------------------------------------------------------------------------------------


def _th(default: float, signal: str, reason: str) -> Any:
    return field(default=default, metadata={"signal": signal, "reason": reason})


@dataclass(frozen=True)
class AdvisorThresholds:
    """Every threshold the rules use, with the signal it applies to and why it is set there."""

    util_high: float = _th(
        0.8, "offered utilization λ·E[S]/c at the design demand",
        "above 0.8 the M/M/c wait grows like 1/(1 − ρ): a 10 % rise in demand roughly doubles "
        "the queueing delay, so the queue has no headroom left")
    util_target: float = _th(
        0.7, "utilization at the recommended worker count",
        "a recommendation keeps ρ ≤ 0.7 at the design demand so that bursts and a lost pod "
        "do not push the queue back into the steep part of the wait curve")
    util_low_peak: float = _th(
        0.25, "offered utilization at the design demand (peak of the range)",
        "below 25 % busy at the busiest point three quarters of the workers are never used; "
        "above it spare workers are reasonable headroom and not flagged")
    min_workers: float = _th(
        2, "smallest worker count the advisor recommends",
        "with one worker a single slow or hung pass blocks every other key")
    design_quantile: float = _th(
        0.95, "arrival rate over the range",
        "size for the 95th percentile of demand in the range, not the instant of the snapshot, "
        "so a recommendation survives the usual peaks")
    slo_quantile: float = _th(
        0.95, "wait quantile the SLO applies to",
        "a mean-wait target hides the tail; 95 % of items within the SLO is the usual "
        "latency-objective form")
    overload_ratio: float = _th(
        1.0, "λ / (c·μ) for the window",
        "at or above 1 arrivals exceed what c workers can complete: the backlog grows "
        "(fluid model) instead of settling")
    min_history_points: float = _th(
        6, "range points with the needed series",
        "fewer points cannot separate a trend or a scaling curve from noise (the USL fit "
        "itself refuses fewer than 6)")
    usl_efficiency_max: float = _th(
        0.7, "USL efficiency X(c)/(c·γ) = 1/(1 + σ(c−1) + κc(c−1)) from the range fit",
        "below 0.7 more than 30 % of linear scaling is already lost to contention and "
        "coherency at the current worker count, and each added worker gains less")
    usl_r2_min: float = _th(
        0.8, "R² of the USL fit on (busy workers, throughput)",
        "a fit that explains less than 80 % of the variance is not evidence of contention")
    rise_elasticity_min: float = _th(
        0.5, "elasticity of work duration to throughput, d ln(duration) / d ln(throughput), "
        "over the range's points paired at the same instants",
        "independent passes take as long at any load (elasticity 0); a shared resource that "
        "fills up with load (a lock, the API client's token bucket, a database) makes each "
        "pass longer as more complete — a lock near saturation gives about 1, a token bucket "
        "at its ceiling far more. Paired with throughput, not busy workers: busy = throughput "
        "× duration (Little), so duration always correlates with busy workers")
    rise_t_min: float = _th(
        3.0, "t statistic of that elasticity (log-log least squares)",
        "the rise must stand out of the noise: range points overlap by up to a scrape "
        "interval and the load drifts, so the nominal 2 flags noise (seen up to 2.3 on "
        "simulated queues with nothing shared)")
    inflation_span_min: float = _th(
        2.0, "max / min busy workers over the range, for the USL fit",
        "with less spread in concurrency the curve of throughput against busy workers "
        "cannot be told from noise (models.contention.fit_usl refuses under 2× too)")
    usl_extrapolation_max: float = _th(
        2.0, "worker count / most busy workers seen, for the USL efficiency",
        "the fitted curve is read at most 2× beyond the busiest point of the range; further "
        "out it says nothing (at 6 % utilization the fit would judge 16 workers from 1)")
    step_scaling_max: float = _th(
        0.5, "scaling efficiency (X(c₂)/X(c₁) − 1)/(c₂/c₁ − 1) between the two highest "
        "worker counts the range held with every worker busy (models.bindings.steps)",
        "independent workers that are all busy complete c / E[S] items/s, so the throughput "
        "follows the count (efficiency 1); below 0.5 more than half of the added workers' "
        "capacity was lost to something they share — a lock, a pool, an external rate limit")
    step_busy_share_min: float = _th(
        0.9, "median busy workers / c at a worker-count level of the range",
        "a level counts for the step test only when its workers were (nearly) all busy: "
        "below it the demand, not the workers, set the throughput and a flat throughput "
        "says nothing about a limit")
    usl_failure_share_max: float = _th(
        0.1, "errors / reconciles and retries / adds, for the USL fit",
        "failed passes and their delayed re-adds make throughput against busy workers a "
        "measure of the retry policy, not of scaling: the fit is refused above 10 %")
    share_429_min: float = _th(
        0.01, "429 responses / all API calls of the process",
        "the apiserver (APF) answers 429 only when it is rejecting the process's requests; a "
        "sustained 1 % already means the API budget is the bottleneck")
    contention_util_min: float = _th(
        0.1, "busy workers / c of the queue, when the only contention signs are process-wide "
        "(429/409 share, client limiter time)",
        "a queue under 10 % busy is not asking for more workers; the process's API limits are "
        "reported on the queues that are loaded, instead of on every queue of the process")
    share_409_min: float = _th(
        0.05, "409 responses / all API calls of the process",
        "conflicts above 5 % cost a re-read and a retry per write")
    corr_409_min: float = _th(
        0.5, "correlation of the 409 share with busy workers over the range",
        "conflicts are contention only when they rise with concurrency; a constant share "
        "comes from other writers and does not grow with workers")
    apf_seat_util_min: float = _th(
        0.8, "seats in use / the seat limit of the API Priority and Fairness level "
        "(current_executing_seats / current_limit_seats, averaged over the window)",
        "the seats are the level's servers: a request that finds them all taken queues (or is "
        "rejected); past 80 % busy a level of a few seats queues a large share of its "
        "requests (Erlang C), below it the queue wait is a small part of the hold time")
    apf_wait_share_min: float = _th(
        0.1, "API calls per pass × the level's mean APF queue wait / the pass's work time",
        "a tenth of every pass spent queued in the API server is the level, not the "
        "controller, setting the pace; more workers add requests to the same queue")
    webhook_share_min: float = _th(
        0.3, "writes per pass × the slowest admission webhook's mean duration / the pass's "
        "work time",
        "when a third of each pass waits on one webhook, the webhook's latency (and, if it "
        "rises with load, its capacity) decides the throughput; the controller's own work "
        "no longer does")
    starvation_util_min: float = _th(
        0.9, "busy workers / c while the lowest priority's depth stayed above 0 all window",
        "controller-runtime's priority queue always hands out the highest priority first: "
        "low-priority items wait only while every worker is kept busy by higher ones, so a "
        "queue 90 % busy with a low priority never drained is starving it")
    limiter_share_min: float = _th(
        0.1, "client-side rate-limiter seconds / busy-worker seconds",
        "when 10 % of busy time is spent waiting for the process's token bucket, the limiter "
        "(shared by all controllers of the process) caps throughput; more workers wait longer")
    error_share_storm: float = _th(
        0.25, "errors / reconciles (reconcile_errors_total or result=\"error\")",
        "when a quarter of the passes fail, a quarter of the worker time is redone work and "
        "every failure comes back with a growing per-key delay: the load is partly made by "
        "the queue itself, and more workers only retry faster against the failing cause")
    retry_share_storm: float = _th(
        0.5, "retries / adds",
        "retries making up most adds means the queue's load is self-generated (confirms a storm)")
    persist_fraction: float = _th(
        0.8, "share of range points with errors above the storm threshold",
        "the same failure present over most of the range is persistent, not a blip")
    planned_requeue_share: float = _th(
        0.5, "(retries − errors) / adds, or requeue_after / reconciles",
        "more than half of the adds being the controller's own planned re-adds means it polls "
        "instead of reacting to watch events")
    requeue_share: float = _th(
        0.3, "result=\"requeue\" / reconciles",
        "Requeue without an error goes through the per-key rate limiter (5 ms doubling, reset "
        "by Forget): at this share it is a tight loop")
    error_share_quiet: float = _th(
        0.2, "errors / retries, for requeue misuse",
        "retries are 'without errors' when fewer than 20 % of them follow a failure")
    hot_depth_min: float = _th(
        0.5, "mean depth while workers are idle (time averages, without the paired signal)",
        "half a key waiting on average, with a worker free, is a key that cannot start")
    hot_depth_idle_min: float = _th(
        0.1, "depth × [a worker idle] averaged over the instants (depth_while_idle: 81 "
        "points, every 15 s over 20 minutes)",
        "client-go hands a queued key to an idle worker within microseconds, so depth with a "
        "worker free is a key dirty behind its own pass: rare by chance (a key whose event "
        "lands during its own pass, about one scrape in 500), constant for a saturated key "
        "(dirty at 20–70 % of the instants). 0.1 needs 9 of the 81 points — 5 samples of a "
        "30 s target, which chance coincidences do not reach")
    hot_idle_min: float = _th(
        1.0, "idle workers c − B",
        "at least one worker must be idle on average for 'waiting with idle workers'")
    hot_excess: float = _th(
        10.0, "observed depth or wait / the M/M/c prediction at the measured ρ",
        "an order of magnitude above what random arrivals give at this utilization cannot be "
        "explained by load; it is per-key serialization")
    hot_wait_min_s: float = _th(
        0.1, "observed mean queue wait",
        "waits under 100 ms are not worth a verdict even when far above the model")
    hot_util_max: float = _th(
        0.7, "utilization",
        "above 0.7 queueing alone explains waiting; the hot-key rule looks at low utilization")
    long_ratio: float = _th(
        10.0, "work p99 / p50",
        "an exponential pass time gives p99/p50 = ln 100 / ln 2 ≈ 6.6; above 10 the tail is "
        "heavier than random variation — a few passes do far more work")
    long_mean_over_p50: float = _th(
        1.5, "mean work duration (exact: _sum/_count) / work p50",
        "p99 from decade buckets is interpolated anywhere between 1 and 10 s, so the exact mean "
        "must confirm the tail: long passes lift the mean above the median by more than an "
        "exponential's 1/ln 2 ≈ 1.44")
    long_p99_min_s: float = _th(
        1.0, "work p99",
        "sub-second passes are not worth splitting")
    stuck_growth_min: float = _th(
        0.5, "deriv(workqueue_unfinished_work_seconds) (≈ items in flight not completing)",
        "an age that grows by ½ s per second means at least one item has stopped completing")
    stuck_longest_min_s: float = _th(
        60.0, "workqueue_longest_running_processor_seconds",
        "a pass running over a minute is not a slow pass but a hang (or a missing Done)")
    stuck_longest_vs_p99: float = _th(
        10.0, "longest running / max(work p99, mean work)",
        "ten times the normal worst pass is outside the pass-time distribution")
    stuck_slope_min: float = _th(
        0.5, "slope of longest_running_processor over the range (s per s)",
        "the same item still running makes the longest age rise at ~1 s per second")
    demand_cv_max: float = _th(
        0.5, "coefficient of variation of the arrival rate over the range",
        "above 0.5 demand is not stable; a sizing from it is given with lower confidence")

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) \
                    or v < 0:
                raise ModelInputError(
                    f"threshold {f.name} must be a finite non-negative number, got {v!r}."
                )
        for name in ("util_target", "design_quantile", "slo_quantile"):
            v = getattr(self, name)
            if not 0 < v < 1:
                raise ModelInputError(f"threshold {name} must be between 0 and 1, got {v!r}.")
        if self.util_target < 0.01:
            # the sizing sweep runs to ⌈λ·E[S] / util_target⌉ workers: below 1 % that is a
            # hundred times the load in workers, and at 5e-324 it overflows
            raise ModelInputError(
                f"threshold util_target must be at least 0.01, got {self.util_target!r}.")
        for name in _DIVISOR_THRESHOLDS:
            v = getattr(self, name)
            if v <= 0:
                raise ModelInputError(f"threshold {name} must be greater than 0 (the advisor "
                                      f"divides by it), got {v!r}.")
        if self.min_history_points < 2:
            raise ModelInputError("threshold min_history_points must be at least 2 (a trend "
                                  f"needs two points), got {self.min_history_points!r}.")


_DIVISOR_THRESHOLDS: tuple[str, ...] = (
    "util_high", "rise_elasticity_min", "share_429_min", "limiter_share_min",
    "error_share_storm", "planned_requeue_share", "hot_excess", "long_ratio", "util_low_peak",
    "usl_efficiency_max", "share_409_min", "retry_share_storm", "overload_ratio",
    "apf_wait_share_min", "webhook_share_min", "starvation_util_min", "step_busy_share_min")
"""Thresholds the rules divide by (a verdict's strength is the margin over them): 0 is not a
threshold but a division by zero."""


def threshold_table(thresholds: AdvisorThresholds | None = None) -> list[dict[str, Any]]:
    """[{name, value, signal, reason}] for every threshold (for docs and reports)."""
    th = thresholds or AdvisorThresholds()
    return [
        {"name": f.name, "value": getattr(th, f.name), "signal": f.metadata["signal"],
         "reason": f.metadata["reason"]}
        for f in fields(th)
    ]


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """One finding about a queue. ``evidence`` holds the numbers behind it, ``recommendation``
    what to do (``action`` plus figures); neither contains NaN or ±Inf (they become None)."""

    kind: str
    severity: str
    summary: str
    evidence: Mapping[str, Any]
    recommendation: Mapping[str, Any]
    confidence: float
    """0–1: how strongly the data support the verdict (margin over the threshold, history)."""
    headline: str = ""
    """The verdict in one line of plain words ("More workers will help: 4 → 6"); the kind is
    the stable identifier, shown beside it as a tag."""


def headline(kind: str, evidence: Mapping[str, Any], recommendation: Mapping[str, Any]
             ) -> str:
    """One line of plain words for a verdict, from its own numbers."""
    c = evidence.get("workers")
    rec = recommendation.get("workers")
    if kind == "add_workers":
        return f"More workers will help: {c} → {rec}"
    if kind == "backlog_growing":
        tail = f"; more workers: {c} → {rec}" if isinstance(rec, int) else ""
        return f"The backlog is growing: arrivals exceed what the workers complete{tail}"
    if kind == "contention":
        limit = str(evidence.get("binding_limit") or "shared_resource")
        ceiling = recommendation.get("ceiling_reconciles_per_s")
        words = _HEADLINE_LIMITS.get(limit, "something shared binds")
        return (f"More workers will not help: {words}"
                + (f" (ceiling ≈ {ceiling:.3g} reconciles/s)" if isinstance(ceiling, float)
                   else ""))
    if kind == "hot_key":
        return "More workers will not help: one key is processed serially"
    if kind == "retry_storm":
        share = evidence.get("error_share")
        return ("Fix the failures, not the worker count"
                + (f": {100 * share:.0f} % of passes fail" if isinstance(share, float) else ""))
    if kind == "requeue_misuse":
        return "Requeues without errors: the controller polls instead of reacting"
    if kind == "long_passes":
        return "A few passes hold their worker far longer than the rest"
    if kind == "priority_starvation":
        return (f"Low-priority items starve (priority {evidence.get('lowest_priority')}): "
                "higher priorities keep every worker busy")
    if kind == "stuck_workers":
        return "A worker is stuck: a pass never finishes"
    if kind == "over_provisioned":
        return f"Fewer workers would do: {c} → {rec}"
    if kind == "insufficient_data":
        return "Not enough data to size this queue"
    return "Healthy: no change needed"


_HEADLINE_LIMITS: Mapping[str, str] = MappingProxyType({
    "client_limiter": "the API client's rate limiter binds",
    "api_server": "the API server's priority level is saturated (APF queues or rejects "
                  "its requests)",
    "admission_webhook": "an admission webhook on its writes fills up with load",
    "write_conflicts": "write conflicts rise with concurrency",
    "coherency": "throughput falls past a peak worker count",
    "shared_resource": "something the passes share binds (a lock, a pool, a downstream)",
})


def _clean(value: Any) -> Any:
    kind = type(value)  # fast paths for the common exact types; the same results as below
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): _clean(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_clean(v) for v in value)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        v = float(value)
        return v if math.isfinite(v) else None
    return value


def _verdict(kind: str, severity: str, summary: str, evidence: Mapping[str, Any],
             recommendation: Mapping[str, Any], confidence: float) -> Verdict:
    conf = min(max(float(confidence), 0.0), 1.0) if math.isfinite(confidence) else 0.5
    ev, rec = _clean(evidence), _clean(recommendation)
    return Verdict(kind, severity, summary, ev, rec, round(conf, 2), headline(kind, ev, rec))


def _margin_conf(ratio: float, base: float = 0.55) -> float:
    """Confidence from how far a signal is past its threshold (ratio ≥ 1): 0.55 at the
    threshold, +0.15 per doubling, capped at 0.9."""
    if not math.isfinite(ratio) or ratio <= 0:
        return base
    return min(0.9, base + 0.15 * max(math.log2(ratio), 0.0))


def _fmt_s(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "n/a"
    if seconds == 0:
        return "0 s"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.0f} ms"
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    return f"{seconds / 3600:.3g} h"


def _num(value: float | None) -> float | None:
    if value is None:
        return None
    v = float(value)
    return v if math.isfinite(v) else None


# --------------------------------------------------------------------------------------------
# History helpers
# --------------------------------------------------------------------------------------------


def _pairs(history: QueueHistory | None, *names: str) -> tuple[FloatArray, ...] | None:
    """The points where all named series are measured, or None without enough of them."""
    if history is None:
        return None
    cols = [np.asarray(getattr(history, n), dtype=np.float64) for n in names]
    ok = np.isfinite(cols[0])
    for c in cols[1:]:
        ok &= np.isfinite(c)
    if not ok.any():
        return None
    return tuple(c[ok] for c in (history.t_s, *cols))


def _corr(x: FloatArray, y: FloatArray) -> float | None:
    if x.size < 3 or np.ptp(x) <= 0 or np.ptp(y) <= 0:
        return None
    r = float(np.corrcoef(x, y)[0, 1])
    return r if math.isfinite(r) else None


def _slope(t: FloatArray, y: FloatArray) -> float | None:
    if t.size < 3 or np.ptp(t) <= 0:
        return None
    tc = t - t.mean()
    return float(np.sum(tc * (y - y.mean())) / np.sum(tc * tc))


# --------------------------------------------------------------------------------------------
# The advisor
# --------------------------------------------------------------------------------------------


@dataclass
class _Ctx:
    s: QueueSignals
    h: QueueHistory | None
    th: AdvisorThresholds
    slo_s: float
    keys: int | None
    lam: float | None
    svc: float | None
    c: int | None
    lam_design: float | None
    notes: dict[str, str]
    """rule -> why it could not be evaluated."""
    sweeps: dict[float, WhatIfTable] = field(default_factory=dict)
    """Sizing sweeps by arrival rate: filled on first use, or in advance by :func:`advise_many`."""
    mmc: tuple[float, float] | None = None
    """(Wq, Lq) of M/M/c at (λ, μ, c) for the hot-key rule, when computed in advance."""
    usl: UslFit | ModelInputError | None = None
    """The USL fit of the contention rule, when computed in advance (:func:`_prepare`)."""
    usl_points: tuple[FloatArray, FloatArray] | str | None = None
    """:func:`_usl_points`, kept once computed."""


def _steady_points(ctx: _Ctx) -> npt.NDArray[np.bool_]:
    """The range points where failures and delayed re-adds stay under
    ``usl_failure_share_max`` (or are not measured): the points where throughput, busy workers
    and work duration describe the passes rather than the retry policy."""
    h = ctx.h
    assert h is not None
    lim = ctx.th.usl_failure_share_max
    with np.errstate(divide="ignore", invalid="ignore"):
        err = h.errors_per_s / h.throughput_per_s
        re_add = h.retries_per_s / h.arrival_rate_per_s
    out: npt.NDArray[np.bool_] = ~((err >= lim) | (re_add >= lim))
    return out


def _usl_refusal(ctx: _Ctx) -> str | None:
    """Why the USL fit must not be made for this queue (None: it may)."""
    th, s = ctx.th, ctx.s
    errors, recs = _error_rate(s), _num(s.throughput_per_s)
    if errors is not None and recs and errors / recs >= th.usl_failure_share_max:
        return (f"{100 * errors / recs:.0f} % of passes fail: throughput against busy workers "
                "measures the retry policy, not scaling")
    retries, adds = _num(s.retries_per_s), _num(s.arrival_rate_per_s)
    if retries is not None and adds and retries / adds >= th.usl_failure_share_max:
        return (f"{100 * retries / adds:.0f} % of adds are delayed re-adds: throughput against "
                "busy workers measures the requeue policy, not scaling")
    return None


def _usl_points(ctx: _Ctx) -> tuple[FloatArray, FloatArray] | str | None:
    """(busy workers, throughput) points the contention rule fits; a reason it is refused;
    or None without a history. Only points with at least one busy worker on average (below
    it the time average mixes idle time with one pass: USL's N is a number of concurrent
    workers), at least ``min_history_points`` of them, spread over ``inflation_span_min``;
    points with failures or re-adds (:func:`_steady_points`) are left out."""
    if ctx.usl_points is None:
        ctx.usl_points = _usl_points_now(ctx)
    return ctx.usl_points


def _usl_points_now(ctx: _Ctx) -> tuple[FloatArray, FloatArray] | str | None:
    if ctx.h is None:
        return None
    refused = _usl_refusal(ctx)
    if refused is not None:
        return refused
    h = ctx.h
    n, x = h.busy_workers, h.throughput_per_s
    steady = _steady_points(ctx)
    ok = steady & np.isfinite(n) & np.isfinite(x) & (n >= 1.0) & (x > 0)
    n, x = n[ok], x[ok]
    if n.size < ctx.th.min_history_points:
        left_out = int(np.count_nonzero(~steady))
        return (f"only {n.size} range points with at least one busy worker "
                f"(needs {ctx.th.min_history_points:g})"
                + (f"; {left_out} points were left out for failures or re-adds ≥ "
                   f"{100 * ctx.th.usl_failure_share_max:g} %" if left_out else ""))
    if n.max() / n.min() < ctx.th.inflation_span_min:
        return (f"busy workers only spanned {n.min():.2g}…{n.max():.2g} over the range: the "
                "load did not vary enough to trace a scaling curve")
    return n, x


def advise(
    signals: QueueSignals,
    history: QueueHistory | None = None,
    *,
    slo_wait_s: float = 1.0,
    thresholds: AdvisorThresholds | None = None,
    keys: int | None = None,
    process: ProcessTotals | None = None,
    client_qps: float | None = None,
) -> tuple[Verdict, ...]:
    """Verdicts for one queue, ordered by impact (see the module docstring).

    ``slo_wait_s``: the queue-wait objective (the ``slo_quantile`` of waits must be within it).
    ``keys``: distinct keys, when known — the what-if then uses the finite-key model.
    ``process``: totals over all queues of this queue's process (the API budget and limiter
    are shared); without it the queue is taken to be alone in its process.
    ``client_qps``: the client's configured QPS limit, if known, for the API ceiling.
    """
    th = thresholds or AdvisorThresholds()
    _check_options(slo_wait_s, client_qps, keys)
    ctx = _context(signals, history, th, slo_wait_s, keys)
    return _run(ctx, process, client_qps)


def sizing_inputs(
    signals: QueueSignals,
    history: QueueHistory | None = None,
    *,
    slo_wait_s: float = 1.0,
    thresholds: AdvisorThresholds | None = None,
    keys: int | None = None,
) -> WhatIfInputs | None:
    """The what-if inputs the advisor sizes this queue with — λ at the design demand (the
    larger of λ now and the ``design_quantile`` of λ over the history), the measured mean work
    time, the key count when known (finite-key model), the SLO and its quantile, c from 1 to
    max(2c, target + 2, ⌈λ·E[S]⌉ + 8, 16) — so that a what-if of a measured queue sweeps
    exactly what :func:`advise` sized; None when λ, the work time or c was not measured."""
    th = thresholds or AdvisorThresholds()
    _check_options(slo_wait_s, None, keys)
    ctx = _context(signals, history, th, slo_wait_s, keys)
    if ctx.lam is None or ctx.svc is None or ctx.c is None:
        return None
    return _sizing_inputs(ctx, ctx.lam_design if ctx.lam_design is not None else ctx.lam)


@dataclass(frozen=True)
class AdviceRequest:
    """One queue for :func:`advise_many`: the arguments :func:`advise` takes per queue."""

    signals: QueueSignals
    history: QueueHistory | None = None
    keys: int | None = None
    process: ProcessTotals | None = None


@dataclass(frozen=True)
class Assessment:
    """What the advisor found for one queue, beyond its verdicts: what the capacity plan
    (:mod:`models.plan`) is built from, so the plan does not redo the advisor's work."""

    verdicts: tuple[Verdict, ...]
    sizing: WhatIfInputs | None
    """The inputs the queue was sized with (:func:`sizing_inputs`); None without λ, E[S], c."""
    table: WhatIfTable | None
    """The sweep at ``sizing`` (None for a finite-key queue no rule sized, or without inputs)."""
    usl: UslFit | None
    """The USL fit of (busy workers, throughput) over the range, when one was made."""
    notes: Mapping[str, str]
    """rule -> why it could not be evaluated (caveats of the plan)."""


def advise_many(
    requests: Sequence[AdviceRequest],
    *,
    slo_wait_s: float = 1.0,
    thresholds: AdvisorThresholds | None = None,
    client_qps: float | None = None,
) -> list[tuple[Verdict, ...]]:
    """:func:`advise` for many queues: the same verdicts, in the order of ``requests``.

    The queueing figures the rules may need — the sizing sweep at the design demand (and at
    the current demand for an overloaded queue) and the M/M/c wait for the hot-key rule — are
    computed for all queues up front, in a few vectorized calls
    (:func:`models.whatif.whatif_tables`, :func:`models.queueing.erlang_c` over arrays), instead
    of one small sweep per queue and rule. Each element goes through the same arithmetic as in
    :func:`advise`, so the verdicts and their numbers are identical; an input the batch cannot
    take is left to the per-queue path, which raises the same error :func:`advise` would.
    """
    return [a.verdicts for a in assess_many(requests, slo_wait_s=slo_wait_s,
                                            thresholds=thresholds, client_qps=client_qps)]


def assess_many(
    requests: Sequence[AdviceRequest],
    *,
    slo_wait_s: float = 1.0,
    thresholds: AdvisorThresholds | None = None,
    client_qps: float | None = None,
) -> list[Assessment]:
    """:func:`advise_many` with, per queue, the sizing inputs, the sweep, the USL fit and the
    notes the verdicts were made with (:class:`Assessment`)."""
    th = thresholds or AdvisorThresholds()
    _check_options(slo_wait_s, client_qps)
    ctxs: list[_Ctx | ModelInputError] = []
    for r in requests:
        try:
            ctxs.append(_context(r.signals, r.history, th, slo_wait_s, r.keys, design=False))
        except ModelInputError as exc:  # raised in its turn below, as advise would
            ctxs.append(exc)
    ready = [ctx for ctx in ctxs if isinstance(ctx, _Ctx)]
    _design_demands(ready)
    _prepare(ready)
    out = []
    for ctx, r in zip(ctxs, requests, strict=True):
        if isinstance(ctx, ModelInputError):
            raise ctx
        verdicts = _run(ctx, r.process, client_qps)
        sizing: WhatIfInputs | None = None
        table: WhatIfTable | None = None
        if ctx.lam is not None and ctx.svc is not None and ctx.c is not None:
            lam = ctx.lam_design if ctx.lam_design is not None else ctx.lam
            sizing = _sizing_inputs(ctx, lam)
            table = ctx.sweeps.get(lam)
        out.append(Assessment(
            verdicts, sizing, table, ctx.usl if isinstance(ctx.usl, UslFit) else None,
            dict(ctx.notes)))
    return out


def _check_options(slo_wait_s: float, client_qps: float | None, keys: int | None = None
                   ) -> None:
    if not (isinstance(slo_wait_s, int | float) and math.isfinite(slo_wait_s) and slo_wait_s > 0):
        raise ModelInputError(
            f"the wait SLO must be a positive number of seconds, got {slo_wait_s!r}.")
    _check_keys(keys)
    if client_qps is not None and not (math.isfinite(client_qps) and client_qps > 0):
        raise ModelInputError(f"client QPS must be a positive number, got {client_qps!r}.")


def _context(signals: QueueSignals, history: QueueHistory | None, th: AdvisorThresholds,
             slo_wait_s: float, keys: int | None, *, design: bool = True) -> _Ctx:
    _check_keys(keys)
    lam = _num(signals.arrival_rate_per_s)
    svc = _num(signals.service_mean_s)
    c = worker_count(signals.workers)
    ctx = _Ctx(signals, history, th, float(slo_wait_s), keys, lam, svc, c, None, {})
    if lam is not None and lam < 0:
        raise ModelInputError(f"the arrival rate must not be negative, got {lam!r}.")
    if svc is not None and svc <= 0:
        ctx.svc = svc = None
    if design:
        ctx.lam_design = _design_demand(ctx)
    return ctx


def worker_count(workers: float | None) -> int | None:
    """The configured worker count c as a whole number — the one rounding every surface
    uses: the nearest integer, at least 1; None when not measured or below ½ (a gauge that
    reads 0.4 is a scrape artefact or a controller that is not running, not a worker)."""
    w = _num(workers)
    return max(1, round(w)) if w is not None and w >= 0.5 else None


def _check_keys(keys: int | None) -> None:
    if keys is not None and (isinstance(keys, bool) or not isinstance(keys, int) or keys < 1):
        raise ModelInputError(f"the key count must be a whole number of at least 1, got {keys!r}.")


def _prepare(ctxs: Iterable[_Ctx]) -> None:
    """Fill ``ctx.sweeps`` and ``ctx.mmc`` for every queue in a few vectorized calls.

    A superset of what the rules will read (a sweep nobody reads costs a few array elements).
    Left to the per-queue path, which computes them on first use: finite-key sweeps (solved
    one by one anyway, and slow, so only when a rule reads them) and inputs the models would
    reject (so the per-queue path raises as :func:`advise` does)."""
    sweeps: list[tuple[_Ctx, float, WhatIfInputs]] = []
    hot: list[tuple[_Ctx, float, float, int]] = []
    ctxs = list(ctxs)
    fitted = [(ctx, pts) for ctx in ctxs if isinstance(pts := _usl_points(ctx), tuple)]
    for (ctx, _), fit in zip(fitted, fit_usl_many([pts for _, pts in fitted]), strict=True):
        ctx.usl = fit
    for ctx in ctxs:
        lam, svc, c = ctx.lam, ctx.svc, ctx.c
        if lam is None or svc is None or c is None:
            continue
        rates = {ctx.lam_design if ctx.lam_design is not None else lam}
        try:
            capacity = c / svc
            if lam / capacity >= ctx.th.overload_ratio and lam - capacity > 0:
                rates.add(lam)  # the backlog rule sizes at the current demand
        except (OverflowError, ZeroDivisionError):
            pass
        for rate in rates if ctx.keys is None else ():
            try:
                sweeps.append((ctx, rate, _sizing_inputs(ctx, rate)))
            except (ModelInputError, OverflowError, ValueError):
                continue
        if lam > 0 and lam * svc < c and math.isfinite(1.0 / svc):
            hot.append((ctx, lam, 1.0 / svc, c))
    try:
        tables = whatif_tables([inp for _, _, inp in sweeps])
    except ModelInputError:  # rare (absurd inputs): one by one, leaving out those that fail
        tables = []
        for sw in list(sweeps):
            try:
                tables.extend(whatif_tables([sw[2]]))
            except ModelInputError:
                sweeps.remove(sw)
    for (ctx, rate, _), table in zip(sweeps, tables, strict=True):
        ctx.sweeps[rate] = table
    # One Erlang C call per size class of c (the recursion runs to the largest c of a call).
    classes: dict[int, list[tuple[_Ctx, float, float, int]]] = {}
    for h in hot:
        classes.setdefault(h[3].bit_length(), []).append(h)
    for group in classes.values():
        try:
            mmc = erlang_c([h[1] for h in group], [h[2] for h in group], [h[3] for h in group])
        except ModelInputError:
            continue  # left to the per-queue path
        for (ctx, *_), wq, lq in zip(group, mmc.wait_mean_s.tolist(),
                                     mmc.queue_length_mean.tolist(), strict=True):
            ctx.mmc = (float(wq), float(lq))


def _run(ctx: _Ctx, process: ProcessTotals | None, client_qps: float | None) -> tuple[Verdict, ...]:
    signals, lam, svc, c = ctx.s, ctx.lam, ctx.svc, ctx.c
    out: list[Verdict] = []
    stuck = _stuck_workers(ctx)
    storm = _retry_storm(ctx)
    contention = _contention(ctx, process or ProcessTotals(
        _num(signals.throughput_per_s), _num(signals.busy_workers), lam), client_qps)
    hot = _hot_key(ctx, contention)
    long_v = _long_passes(ctx)
    requeue = _requeue_misuse(ctx)
    starved = _priority_starvation(ctx)
    for v in (stuck, storm, contention, hot, starved, long_v, requeue):
        if v is not None:
            out.append(v)

    usable = {"arrival_rate_per_s": lam is not None, "service_mean_s": svc is not None,
              "workers": c is not None}
    core_missing = [f for f in CORE_FIELDS if not usable[f]]
    if core_missing == ["service_mean_s"] and lam == 0:
        core_missing = []  # idle: no passes to time, and nothing to size
    if core_missing:
        out.append(_insufficient(ctx, core_missing))
    elif lam is not None and svc is not None and c is not None:
        backlog = _backlog_growing(ctx, contention)
        if backlog is not None:
            out.append(backlog)
        blockers = [v.kind for v in (storm, contention, hot, stuck) if v is not None]
        add = _add_workers(ctx, blockers, backlog)
        if add is not None:
            out.append(add)
        if not any(v is not None for v in (hot, stuck, long_v, backlog, add)):
            over = _over_provisioned(ctx)
            if over is not None:
                out.append(over)
    if not out:
        out.append(_healthy(ctx))
    rank_sev = {s: i for i, s in enumerate(SEVERITIES)}
    rank_kind = {k: i for i, k in enumerate(KINDS)}
    out.sort(key=lambda v: (rank_sev[v.severity], rank_kind[v.kind]))
    return tuple(out)


def _design_demand(ctx: _Ctx) -> float | None:
    """max(λ now, the design quantile of λ over the range)."""
    if ctx.lam is None:
        return None
    p = _pairs(ctx.h, "arrival_rate_per_s")
    if p is None or p[0].size < ctx.th.min_history_points:
        return ctx.lam
    return max(ctx.lam, float(np.quantile(p[1], ctx.th.design_quantile)))


def _design_demands(ctxs: Sequence[_Ctx]) -> None:
    """:func:`_design_demand` for many queues: one ``np.quantile`` per history length (rows
    of a 2-D array) instead of one call per queue — the same numbers."""
    by_size: dict[int, list[tuple[_Ctx, float, FloatArray]]] = {}
    for ctx in ctxs:
        lam = ctx.lam
        if lam is None:
            continue
        ctx.lam_design = lam
        p = _pairs(ctx.h, "arrival_rate_per_s")
        if p is not None and p[0].size >= ctx.th.min_history_points:
            by_size.setdefault(p[1].size, []).append((ctx, lam, p[1]))
    for group in by_size.values():
        q = group[0][0].th.design_quantile
        rows = np.quantile(np.stack([arr for *_, arr in group]), q, axis=1)
        for (ctx, lam, _), v in zip(group, rows.tolist(), strict=True):
            ctx.lam_design = max(lam, float(v))


def _demand_cv(ctx: _Ctx) -> float | None:
    p = _pairs(ctx.h, "arrival_rate_per_s")
    if p is None or p[0].size < ctx.th.min_history_points or p[1].mean() <= 0:
        return None
    return float(p[1].std() / p[1].mean())


def _error_rate(s: QueueSignals) -> float | None:
    e = _num(s.errors_per_s)
    if e is not None:
        return e
    results = s.reconcile_results_per_s or {}
    if "error" in results:
        return _num(results["error"])
    return None


def _results_total(s: QueueSignals) -> float | None:
    results = s.reconcile_results_per_s or {}
    vals = [_num(v) for v in results.values()]
    good = [v for v in vals if v is not None]
    return sum(good) if good else None


# --- stuck workers ----------------------------------------------------------------------------


def _stuck_workers(ctx: _Ctx) -> Verdict | None:
    s, th = ctx.s, ctx.th
    growth = _num(s.unfinished_work_growth)
    longest = _num(s.longest_running_s)
    if longest is None and growth is None:
        ctx.notes["stuck_workers"] = "needs longest_running_s or unfinished_work_growth"
        return None
    normal = max(_num(s.work_p99_s) or 0.0, ctx.svc or 0.0)
    floor_s = max(th.stuck_longest_min_s, th.stuck_longest_vs_p99 * normal)
    long_enough = longest is not None and longest >= floor_s
    if not long_enough:
        return None  # nothing else can make it stuck (the trend below only confirms)
    slope = None
    p = _pairs(ctx.h, "longest_running_s")
    if p is not None and p[0].size >= th.min_history_points:
        tail = max(int(th.min_history_points), p[0].size // 3)  # the recent third of the range
        slope = _slope(p[0][-tail:], p[1][-tail:])
    growing = growth is not None and growth >= th.stuck_growth_min
    rising = slope is not None and slope >= th.stuck_slope_min
    if not (growing or rising):
        return None
    stuck_items = growth if growth is not None and growth > 0 else None
    conf = _margin_conf((longest or 0.0) / floor_s, 0.6) + (0.1 if growing and rising else 0.0)
    summary = (
        f"A pass has been running for {_fmt_s(longest)} (normal worst pass {_fmt_s(normal)}) "
        "and in-flight work keeps ageing: a worker is stuck — a Get without Done on some return "
        "path, or a call with no timeout."
    )
    return _verdict(
        "stuck_workers", "critical", summary,
        {"longest_running_s": longest, "unfinished_work_s": _num(s.unfinished_work_s),
         "unfinished_work_growth": growth, "stuck_items_estimate": stuck_items,
         "longest_running_slope_s_per_s": slope, "normal_worst_pass_s": normal,
         "threshold_longest_s": floor_s},
        {"action": "fix_stuck_worker",
         "steps": ["pair every Get with Done on all return paths (defer Done)",
                   "put a timeout/context deadline on external calls",
                   "honor context cancellation at shutdown",
                   "restarting the pod frees the worker but does not fix the cause"]},
        conf,
    )


# --- retry storm --------------------------------------------------------------------------


def _retry_storm(ctx: _Ctx) -> Verdict | None:
    s, th = ctx.s, ctx.th
    errors = _error_rate(s)
    recs = _num(s.throughput_per_s)
    if recs is None:
        recs = _results_total(s)
    if errors is None or recs is None:
        ctx.notes["retry_storm"] = "needs errors_per_s (or reconcile results) and throughput_per_s"
        return None
    if recs <= 0:
        return None
    share = errors / recs
    if share < th.error_share_storm:
        return None
    adds = _num(s.arrival_rate_per_s)
    retries = _num(s.retries_per_s)
    retry_share = retries / adds if retries is not None and adds else None
    persist = None
    p = _pairs(ctx.h, "errors_per_s", "throughput_per_s")
    if p is not None and p[0].size >= th.min_history_points:
        ok = p[2] > 0
        if ok.any():
            persist = float(np.mean(p[1][ok] / p[2][ok] >= th.error_share_storm))
    conf = _margin_conf(share / th.error_share_storm)
    if retry_share is not None and retry_share >= th.retry_share_storm:
        conf += 0.05
    if persist is not None and persist >= th.persist_fraction:
        conf += 0.05
    severity = "critical" if share >= 0.8 or (persist or 0) >= th.persist_fraction else "warning"
    lasting = (f"; it has lasted over {100 * persist:.0f} % of the range"
               if persist is not None and persist >= th.persist_fraction else "")
    summary = (
        f"{100 * share:.0f} % of reconciles fail ({errors:.3g}/s){lasting}"
        + (f", and retries make up {100 * retry_share:.0f} % of adds"
           if retry_share is not None else "")
        + ". Fix the cause; more workers would only retry faster against the failing dependency."
    )
    return _verdict(
        "retry_storm", severity, summary,
        {"error_share": share, "errors_per_s": errors, "reconciles_per_s": recs,
         "retries_per_s": retries, "retry_share_of_adds": retry_share,
         "persistent_fraction_of_range": persist},
        {"action": "fix_failure_not_workers",
         "steps": ["find and fix the failing dependency or input (the error message of the "
                   "failing reconciles)",
                   "for non-retriable failures (auth, invalid spec) set a status condition and "
                   "wait for a change instead of retrying forever",
                   "add a global or per-dependency rate limit with jitter so thousands of keys "
                   "do not retry together",
                   "call Forget on success so a later failure starts from the base delay",
                   "do not add workers"]},
        conf,
    )


# --- requeue misuse -----------------------------------------------------------------------


def _requeue_misuse(ctx: _Ctx) -> Verdict | None:
    s, th = ctx.s, ctx.th
    retries = _num(s.retries_per_s)
    adds = _num(s.arrival_rate_per_s)
    errors = _error_rate(s)
    results = {k: v for k, v in (s.reconcile_results_per_s or {}).items() if _num(v) is not None}
    total = sum(results.values()) if results else 0.0
    if retries is None or adds is None or errors is None:
        ctx.notes["requeue_misuse"] = "needs retries_per_s, arrival_rate_per_s and errors_per_s"
        return None
    if adds <= 0 or retries <= 0:
        return None
    quiet = errors / retries < th.error_share_quiet
    planned = max(retries - errors, 0.0) / adds
    ra_share = results.get("requeue_after", 0.0) / total if total > 0 else None
    rq_share = results.get("requeue", 0.0) / total if total > 0 else None
    patterns: list[str] = []
    if ra_share is not None and ra_share >= th.planned_requeue_share:
        patterns.append(
            f"RequeueAfter on {100 * ra_share:.0f} % of passes: the controller polls on a timer "
            "instead of reacting to watch events (watch the dependency, or lengthen the interval)")
    if rq_share is not None and rq_share >= th.requeue_share:
        patterns.append(
            f"Requeue without an error on {100 * rq_share:.0f} % of passes: it goes through the "
            "per-key rate limiter (5 ms doubling, reset by Forget) — a tight requeue loop; use "
            "RequeueAfter with a deliberate delay, or return an error if it is a failure")
    if not patterns and quiet and planned >= th.planned_requeue_share:
        patterns.append(
            f"{100 * planned:.0f} % of adds are rate-limited re-adds without an error "
            "(AddRateLimited used for planned requeues): use AddAfter for a deliberate delay")
    if not patterns or not quiet:
        return None
    strength = max(planned / th.planned_requeue_share,
                   (rq_share or 0.0) / th.requeue_share if th.requeue_share else 0.0)
    summary = (f"Retries without errors: {100 * planned:.0f} % of adds are the controller's own "
               f"requeues. Likely pattern: {patterns[0]}.")
    return _verdict(
        "requeue_misuse", "warning", summary,
        {"retries_per_s": retries, "errors_per_s": errors, "arrival_rate_per_s": adds,
         "planned_requeue_share_of_adds": planned, "requeue_after_share": ra_share,
         "requeue_share": rq_share},
        {"action": "fix_requeue_pattern", "patterns": patterns},
        _margin_conf(strength),
    )


# --- contention ---------------------------------------------------------------------------


def _contention(ctx: _Ctx, proc: ProcessTotals, client_qps: float | None) -> Verdict | None:
    s, th = ctx.s, ctx.th
    reasons: dict[str, str] = {}
    """reason code (what is found) → the reason in words"""
    evidence: dict[str, Any] = {}
    strength = 1.0
    ceiling: float | None = None
    basis: str | None = None
    scope: str | None = None
    useful: int | None = None

    # (a) USL fit on (busy workers, throughput) over the range.
    pts = _usl_points(ctx)
    if isinstance(pts, str):
        evidence["usl_fit"] = f"not fitted: {pts}"
        ctx.notes["contention/usl"] = f"USL fit refused: {pts}"
    elif pts is not None:
        n = pts[0]
        fit = ctx.usl if ctx.usl is not None else fit_usl_many([pts])[0]
        if isinstance(fit, ModelInputError):
            evidence["usl_fit"] = f"not fitted: {fit}"
        else:
            n_top = float(np.max(n))
            c_eval = min(float(ctx.c) if ctx.c is not None else n_top,
                         th.usl_extrapolation_max * n_top)
            eff = 1.0 / float(usl_slowdown(c_eval, fit.sigma, fit.kappa))
            evidence.update(usl_sigma=fit.sigma, usl_kappa=fit.kappa, usl_gamma_per_s=fit.gamma,
                            usl_peak_workers=fit.peak_workers, usl_r2=fit.r2,
                            usl_efficiency_at_c=eff, usl_points=fit.points)
            if fit.r2 >= th.usl_r2_min and eff < th.usl_efficiency_max:
                reasons["usl"] = (
                    f"throughput does not scale with busy workers (USL σ={fit.sigma:.3g}, "
                    f"κ={fit.kappa:.3g}, {100 * eff:.0f} % efficiency at c={c_eval:g}"
                    + (f", peak at N*≈{fit.peak_workers:.1f})" if fit.peak_workers else ")"))
                strength = max(strength, th.usl_efficiency_max / max(eff, 1e-9))
                if fit.peak_throughput is not None and fit.peak_workers_int is not None:
                    ceiling, basis = fit.peak_throughput, "USL peak throughput X(N*)"
                    scope = "queue"
                    useful = fit.peak_workers_int
    # (b) Work duration rising with throughput, at the same instants of the range.
    rise = _duration_rise(ctx)
    if isinstance(rise, str):
        ctx.notes["contention/duration"] = rise
    elif rise is not None:
        elasticity, t_stat, x_lo, x_hi, s_lo, s_hi = rise
        evidence.update(duration_elasticity=elasticity, duration_elasticity_t=t_stat,
                        duration_at_quiet_s=s_lo, duration_at_busy_s=s_hi,
                        throughput_quiet_per_s=x_lo, throughput_busy_per_s=x_hi)
        if elasticity >= th.rise_elasticity_min and t_stat >= th.rise_t_min:
            reasons["duration_rise"] = (
                f"each pass takes longer as more complete: {_fmt_s(s_hi)} at {x_hi:.3g}/s vs "
                f"{_fmt_s(s_lo)} at {x_lo:.3g}/s at the same instants (elasticity "
                f"{elasticity:.2g}, t={t_stat:.1f}) — something shared fills up with load")
            strength = max(strength, elasticity / th.rise_elasticity_min)
        elif x_hi / x_lo < 1.2:
            ctx.notes["contention/duration"] = (
                f"the throughput only varied {x_lo:.3g}…{x_hi:.3g}/s over the range: a shared "
                "resource (lock, API limit) could not be told from independent passes")

    # (c) The worker count rose under load and the throughput did not follow.
    step = _step_reason(ctx, evidence)
    if step is not None:
        reasons["worker_steps"], grade, step_ceiling_per_s = step
        strength = max(strength, grade)
        if ceiling is None or basis == "USL peak throughput X(N*)":
            # measured at a count the queue ran beats the fitted curve's peak
            ceiling, scope = step_ceiling_per_s, "queue"
            basis = (f"throughput with every worker busy at c={evidence['step_workers_high']} "
                     "(the highest worker count of the range)")

    # (d) API throttling and conflicts (process-wide).
    queue_specific = bool(reasons)
    calls = _num(s.api_calls_per_s)
    classes = s.api_calls_by_class_per_s or {}
    if calls is not None and calls > 0:
        s429 = (_num(classes.get("429")) or 0.0) / calls
        s409 = (_num(classes.get("409")) or 0.0) / calls
        evidence.update(api_calls_per_s=calls, share_429=s429, share_409=s409,
                        api_request_s_per_s=_num(s.api_request_s_per_s))
        if s429 >= th.share_429_min:
            reasons["api_429"] = (
                f"{100 * s429:.1f} % of the process's API calls are throttled (429)")
            strength = max(strength, s429 / th.share_429_min)
        if s409 >= th.share_409_min:
            p = _pairs(ctx.h, "busy_workers", "api_409_per_s", "api_calls_per_s")
            r409 = None
            if p is not None and p[0].size >= th.min_history_points:
                good = p[3] > 0
                r409 = _corr(p[1][good], p[2][good] / p[3][good])
            evidence["conflict_busy_corr"] = r409
            if r409 is not None and r409 >= th.corr_409_min:
                reasons["api_409"] = (f"{100 * s409:.1f} % of API calls conflict (409), rising "
                                      "with concurrency")
                strength = max(strength, s409 / th.share_409_min)
    else:
        ctx.notes["contention/api"] = "no API-client request rate (rest_client_requests_total)"
    thr = _num(s.throttle_s_per_s)
    busy = proc.busy_workers if proc.busy_workers is not None else _num(s.busy_workers)
    if thr is not None and busy is not None and busy > 0:
        lim = thr / busy  # the process's limiter seconds per busy-worker second
        evidence["limiter_share_of_busy_time"] = lim
        if lim >= th.limiter_share_min:
            reasons["limiter"] = (f"the process waits {thr:.3g} s per second in the client-side "
                                  f"rate limiter ({100 * lim:.0f} % of its busy-worker time)")
            strength = max(strength, lim / th.limiter_share_min)
    throttled_calls = None
    hist = _limiter_history(ctx, proc)
    if hist is not None:
        share_top, throttled_calls = hist
        evidence["limiter_share_of_busy_time_p90"] = share_top
        if share_top >= th.limiter_share_min and "limiter" not in reasons:
            reasons["limiter"] = (
                f"at the 90th percentile of the range the process waited "
                f"{100 * share_top:.0f} % of its busy-worker time in the client-side rate "
                "limiter")
            strength = max(strength, share_top / th.limiter_share_min)

    px0 = proc.throughput_per_s
    per_pass = (calls / px0) if calls is not None and calls > 0 and px0 else None
    apf = _apf_reason(ctx, per_pass, evidence)
    if apf is not None:
        reasons["apf"], grade = apf
        strength = max(strength, grade)
    hook = _webhook_reason(ctx, proc, evidence, shared="duration_rise" in reasons
                           or "usl" in reasons)
    if hook is not None:
        reasons["webhook"], grade = hook
        strength = max(strength, grade)

    if not reasons:
        return None
    busy_q, c_q = _num(s.busy_workers), ctx.c
    if not queue_specific and busy_q is not None and c_q and busy_q / c_q < th.contention_util_min:
        # Only the process is throttled and this queue barely works: it is not the queue
        # whose worker count is in question. Its busier siblings carry the verdict.
        ctx.notes["contention"] = (
            f"the process is throttled ({'; '.join(reasons.values())}), but this queue is only "
            f"{100 * busy_q / c_q:.0f} % busy")
        return None
    # The API ceiling: QPS ÷ API calls per reconcile, shared by the process's controllers.
    px = proc.throughput_per_s
    if calls is not None and calls > 0 and px is not None and px > 0:
        per_rec = calls / px
        evidence["api_calls_per_reconcile"] = per_rec
        evidence["process_reconciles_per_s"] = px
        evidence["process_queues"] = proc.queues
        evidence["process_arrival_rate_per_s"] = proc.arrival_rate_per_s
        if client_qps is not None:
            api_ceiling = client_qps / per_rec
            basis_api = "configured client QPS ÷ calls per reconcile"
        elif throttled_calls is not None:
            api_ceiling = throttled_calls / per_rec
            basis_api = ("most API calls/s the process made while its client-side limiter "
                         "throttled it (range) ÷ calls per reconcile — the limiter's QPS, "
                         "shared by all controllers of the process")
            evidence["api_qps_estimate"] = throttled_calls
        elif "limiter" in reasons or "api_429" in reasons:
            # throttled now (the client's limiter or the API server's 429s): what it gets
            ok_calls = calls - (_num(classes.get("429")) or 0.0)
            api_ceiling = ok_calls / per_rec
            basis_api = ("API calls/s the process gets while throttled ÷ calls per reconcile "
                         "(shared by all controllers of the process)")
        else:
            api_ceiling, basis_api = None, None
        if api_ceiling is not None and (ceiling is None or api_ceiling < ceiling):
            ceiling, basis, scope = api_ceiling, basis_api, "process"
    evidence["ceiling_reconciles_per_s"] = ceiling
    evidence["ceiling_basis"] = basis
    evidence["ceiling_scope"] = scope
    binding = _binding_limit(reasons, evidence, ctx.c)
    evidence["binding_limit"] = binding
    said = "; ".join(reasons.values())
    summary = (
        f"Adding workers will not help: {BINDING_LIMITS[binding]} binds. "
        + said[:1].upper() + said[1:] + "."
        + (f" Ceiling ≈ {ceiling:.3g} reconciles/s ({basis})." if ceiling is not None else "")
    )
    return _verdict(
        "contention", "warning", summary, evidence,
        {"action": "do_not_add_workers",
         "binding_limit": binding,
         "ceiling_reconciles_per_s": ceiling,
         "workers_max_useful": useful,
         "steps": _CONTENTION_STEPS[binding]},
        _margin_conf(strength) + (0.05 if len(reasons) > 1 else 0.0),
    )


BINDING_LIMITS: Mapping[str, str] = MappingProxyType({
    k: BINDING_WORDS[k] for k in ("client_limiter", "api_server", "admission_webhook",
                                  "write_conflicts", "coherency", "shared_resource")})
"""What the contention verdict can name as the limit, in words (:mod:`models.options`)."""

_CONTENTION_STEPS: Mapping[str, list[str]] = MappingProxyType({
    k: [o.action for o in OPTIONS[k]] for k in BINDING_LIMITS})


def _binding_limit(reasons: Mapping[str, str], evidence: Mapping[str, Any], c: int | None
                   ) -> str:
    """Which limit the contention reasons (by code) point at, most specific first; a
    coherency peak only from a USL fit that was itself a reason."""
    if "limiter" in reasons:
        return "client_limiter"
    if "api_429" in reasons or "apf" in reasons:
        return "api_server"
    if "webhook" in reasons:
        return "admission_webhook"
    if "api_409" in reasons:
        return "write_conflicts"
    peak = evidence.get("usl_peak_workers")
    step = evidence.get("step_scaling_efficiency")
    fell = not isinstance(step, float) or step < 0  # a measured step that did not fall is a
    # plateau (a shared limit), whatever peak the fitted curve puts inside the range
    if "usl" in reasons and isinstance(peak, float) and c is not None and 1 <= peak <= c \
            and fell:
        return "coherency"
    return "shared_resource"


def _step_reason(ctx: _Ctx, evidence: dict[str, Any]) -> tuple[str, float, float] | None:
    """A shared limit read from the range's worker-count steps (:mod:`models.bindings.steps`):
    the reason in words, its strength and the ceiling (items/s)."""
    h, th = ctx.h, ctx.th
    if h is None:
        return None
    found = step_ceiling(h.workers, h.throughput_per_s, h.busy_workers, h.service_mean_s,
                         min_points=int(th.min_history_points),
                         busy_share_min=th.step_busy_share_min, usable=_steady_points(ctx))
    if found is None:
        return None
    evidence.update(step_workers_low=found.workers_low, step_workers_high=found.workers_high,
                    step_throughput_low_per_s=found.throughput_low_per_s,
                    step_throughput_high_per_s=found.throughput_high_per_s,
                    step_scaling_efficiency=found.efficiency)
    if found.efficiency >= th.step_scaling_max:
        return None
    return (f"the worker count rose from {found.workers_low} to {found.workers_high} with every "
            f"worker busy and the throughput only went from {found.throughput_low_per_s:.3g} "
            f"to {found.throughput_high_per_s:.3g}/s ({100 * max(found.efficiency, 0.0):.0f} % "
            "of what independent workers add) — a shared limit sets the pace",
            th.step_scaling_max / max(found.efficiency, 0.05), found.throughput_high_per_s)


def _apf_reason(ctx: _Ctx, calls_per_pass: float | None, evidence: dict[str, Any]
                ) -> tuple[str, float] | None:
    """The API server's priority level binds: its seats are (nearly) all in use — or it
    rejects requests — and this process's passes spend a share of their time queued in it.

    The level's figures are the level's (``apf_*``: every client of the level, blended):
    APF metrics name no client, so the level is the profile's (``workload-low`` for every
    ServiceAccount outside kube-system by default). What ties them to this controller is
    its own pass: calls per pass × the level's mean wait, against the pass's work time
    (apiserver ``pkg/util/flowcontrol``: a request waits in the level's queues for a seat;
    ``queue-full`` / ``time-out`` rejections are the 429s the client then retries after
    Retry-After, inside the pass)."""
    s, th = ctx.s, ctx.th
    limit, used = _num(s.apf_seat_limit), _num(s.apf_seats_in_use_mean)
    wait, rejected = _num(s.apf_wait_mean_s), _num(s.apf_rejected_per_s)
    if limit is None and wait is None and rejected is None:
        return None
    level = s.apf_priority_level
    evidence.update(apf_priority_level=level, apf_seat_limit=limit, apf_seats_in_use=used,
                    apf_wait_mean_s=wait, apf_rejected_per_s=rejected,
                    apf_inqueue_mean=_num(s.apf_inqueue_mean))
    util = used / limit if used is not None and limit else None
    evidence["apf_seat_utilization"] = util
    saturated = (util is not None and util >= th.apf_seat_util_min) or (rejected or 0) > 0
    svc = ctx.svc
    queued = calls_per_pass * wait if calls_per_pass is not None and wait is not None else None
    share = queued / svc if queued is not None and svc else None
    evidence["apf_wait_share_of_pass"] = share
    if not saturated or share is None or queued is None or share < th.apf_wait_share_min:
        if not saturated and util is not None:
            ctx.notes["contention/apf"] = (
                f"the API server's level {level!r} was {100 * util:.3g} % busy (under "
                f"{100 * th.apf_seat_util_min:.0f} %) and rejected nothing: not saturated"
                + (f"; passes spent {100 * share:.0f} % of their time queued in it"
                   if share is not None else ""))
        elif saturated:
            ctx.notes["contention/apf"] = (
                f"the API server's level {level!r} is saturated, but this queue's passes "
                "spend little time queued in it" if share is not None else
                f"the API server's level {level!r} is saturated; this queue's API calls per "
                "pass are not known")
        return None
    rej = f", rejecting {rejected:.3g} requests/s" if rejected else ""
    return (f"the API server's priority level {level!r} is saturated ("
            + (f"{100 * util:.0f} % of its {limit:g} seats in use" if util is not None
               and limit is not None else "its seats are all taken")
            + f"{rej}); each pass waits {_fmt_s(queued)} in its queue "
            f"({100 * share:.0f} % of the pass) — more workers send more requests into the same "
            "queue", share / th.apf_wait_share_min)


def _webhook_reason(ctx: _Ctx, proc: ProcessTotals, evidence: dict[str, Any], shared: bool
                    ) -> tuple[str, float] | None:
    """An admission webhook binds: the slowest webhook's mean admission duration
    (``apiserver_admission_webhook_admission_duration_seconds``) × writes per pass is a
    large share of the pass, and the work time rises with throughput (``shared``: the
    duration-rise or USL reason) — the webhook fills up with load. A slow webhook whose
    latency does not rise with load lengthens each pass but scales with workers: that is a
    note, not a limit (more workers still help)."""
    s, th = ctx.s, ctx.th
    hooks = {k: v for k, v in (s.admission_webhook_mean_s or {}).items()
             if v is not None and math.isfinite(v)}
    writes, px = _num(s.api_writes_per_s), proc.throughput_per_s
    if not hooks or writes is None or not px or not ctx.svc:
        return None
    name, mean = max(hooks.items(), key=lambda kv: kv[1])
    per_pass = writes / px
    share = per_pass * mean / ctx.svc
    evidence.update(admission_webhook=name, admission_webhook_mean_s=mean,
                    api_writes_per_reconcile=per_pass, webhook_share_of_pass=share)
    if share < th.webhook_share_min:
        return None
    # The webhook metric names no resource: the slowest webhook is assumed to guard these
    # writes. The API server's own split checks it where it is scraped: a write's time
    # without webhooks and APF wait (the SLI) must leave room for the webhook.
    lat, sli = _num(s.apiserver_write_latency_mean_s), _num(s.apiserver_write_sli_mean_s)
    if lat is not None and sli is not None:
        evidence["apiserver_write_outside_sli_s"] = lat - sli
        if lat - sli < 0.5 * mean:
            ctx.notes["contention/webhook"] = (
                f"the admission webhook {name!r} takes {_fmt_s(mean)}, but the API server's "
                f"writes spend only {_fmt_s(lat - sli)} outside their SLI time (webhooks and "
                "APF wait): it does not guard most writes")
            return None
    if not shared:
        ctx.notes["contention/webhook"] = (
            f"{100 * share:.0f} % of each pass waits on the admission webhook {name!r} "
            f"({_fmt_s(mean)} per write); its latency did not rise with load, so more workers "
            "still help, and a faster webhook shortens every pass")
        return None
    return (f"{100 * share:.0f} % of each pass waits on the admission webhook {name!r} "
            f"({_fmt_s(mean)} per write, {per_pass:.2g} writes per pass) and the passes get "
            "longer with load: the webhook fills up", share / th.webhook_share_min)


def _duration_rise(ctx: _Ctx) -> tuple[float, float, float, float, float, float] | str | None:
    """Work duration against throughput at the same range points: (the elasticity — slope of
    ln duration on ln throughput by least squares — its t statistic, and the mean throughput
    and duration of the quietest and the busiest fifth of the points); a reason it cannot be
    told; or None without a history."""
    h = ctx.h
    if h is None:
        return None
    x, svc = h.throughput_per_s, h.service_mean_s
    ok = _steady_points(ctx) & np.isfinite(x) & np.isfinite(svc) & (x > 0) & (svc > 0)
    x, svc = x[ok], svc[ok]
    if x.size < max(ctx.th.min_history_points, 10):
        return (f"only {x.size} range points with throughput and work duration (without "
                "failures or re-adds): too few to tell a shared resource from independent "
                "passes")
    order = np.argsort(x, kind="stable")
    k = max(2, x.size // 5)
    lo, hi = order[:k], order[-k:]
    lx, ls = np.log(x), np.log(svc)
    r = _corr(lx, ls)
    if r is None or x.size < 3:
        return "throughput or work duration did not vary over the range"
    elasticity = r * float(ls.std() / lx.std())
    t_stat = r * math.sqrt((x.size - 2) / max(1.0 - r * r, 1e-12))
    return (elasticity, t_stat, float(x[lo].mean()), float(x[hi].mean()),
            float(svc[lo].mean()), float(svc[hi].mean()))


def _limiter_history(ctx: _Ctx, proc: ProcessTotals) -> tuple[float, float | None] | None:
    """From the range, for a queue alone in its process (the limiter and its wait are the
    process's, the busy workers the queue's): the 90th percentile over the points of limiter
    seconds per busy-worker second, and the most non-429 API calls/s at a point where that
    share was at least ``limiter_share_min`` (the token bucket's QPS: a throttled client
    sends at its QPS). None without those series or with several queues in the process."""
    h = ctx.h
    if h is None or proc.queues > 1:
        return None
    thr, busy, calls = h.throttle_s_per_s, h.busy_workers, h.api_calls_per_s
    ok = np.isfinite(thr) & np.isfinite(busy) & np.isfinite(calls) & (busy > 0)
    if np.count_nonzero(ok) < ctx.th.min_history_points:
        return None
    share = thr[ok] / busy[ok]
    sent = calls[ok] - np.nan_to_num(h.api_429_per_s[ok])
    throttled = share >= ctx.th.limiter_share_min
    return (float(np.quantile(share, 0.9)),
            float(sent[throttled].max()) if throttled.any() else None)


# --- hot key -----------------------------------------------------------------------------


def _hot_key(ctx: _Ctx, contention: Verdict | None) -> Verdict | None:
    """Items wait while workers are idle: a key processed serially. With the depth at the
    scrapes where a worker was idle (``depth_while_idle``, paired per scrape) the rule needs
    no averages; without it, mean depth and wait against M/M/c at the mean utilization —
    which a lock or a load peak can also produce (items waiting at the busy instants, workers
    idle at the quiet ones), so that form is not given when contention was found."""
    s, th = ctx.s, ctx.th
    lam, svc, c = ctx.lam, ctx.svc, ctx.c
    dwi = _num(s.depth_while_idle)
    depth = dwi if dwi is not None else _num(s.depth_mean)
    wait = _num(s.queue_wait_mean_s)
    if lam is None or svc is None or c is None or (depth is None and wait is None):
        ctx.notes["hot_key"] = "needs arrival rate, service time, workers and depth or wait"
        return None
    busy = _num(s.busy_workers)
    if busy is None:
        busy = lam * svc
    rho = busy / c
    idle = c - busy
    if dwi is not None:
        if dwi < th.hot_depth_idle_min or lam <= 0:
            return None
    else:
        if contention is not None:
            ctx.notes["hot_key"] = ("not told from the contention found: without "
                                    "depth_while_idle the averages cannot separate them")
            return None
        if rho > th.hot_util_max or idle < th.hot_idle_min or lam <= 0:
            return None
    if lam * svc >= c:
        return None
    wq_pred, lq_pred = ctx.mmc if ctx.mmc is not None else _mmc(lam, svc, c)
    tiny = 1e-9
    depth_x = depth / max(lq_pred, tiny) if depth is not None else None
    wait_x = wait / max(wq_pred, tiny) if wait is not None else None
    # With the paired signal M/M/c is only context: it predicts no depth at all at an instant
    # with a worker free, so the threshold alone decides; the averaged form needs the excess.
    by_depth = depth is not None and (
        depth >= th.hot_depth_idle_min if dwi is not None
        else depth >= th.hot_depth_min and (depth_x or 0) >= th.hot_excess)
    by_wait = (dwi is None and wait is not None and wait >= th.hot_wait_min_s
               and (wait_x or 0) >= th.hot_excess)
    if not (by_depth or by_wait):
        return None
    # "Sustained": share of range points with depth above the threshold and idle workers.
    sustained = None
    p = _pairs(ctx.h, "depth", "busy_workers", "workers")
    if p is not None and p[0].size >= th.min_history_points:
        sustained = float(np.mean((p[1] >= th.hot_depth_min) & (p[3] - p[2] >= th.hot_idle_min)))
    excess = max(depth_x or 0.0, wait_x or 0.0)
    conf = _margin_conf(excess / th.hot_excess) + (
        0.05 if sustained is not None and sustained >= 0.8 else 0.0)
    conflicts = None
    calls = _num(s.api_calls_per_s)
    if calls:
        conflicts = (_num((s.api_calls_by_class_per_s or {}).get("409")) or 0.0) / calls
    summary = (
        (f"Keys wait while workers are free: depth × [a worker idle], paired at each instant "
         f"and averaged, is {depth:.2g} (utilization {100 * rho:.0f} %). client-go hands a "
         "queued key to a free worker at once, so with a worker free only a key dirty behind "
         "its own pass can wait. One key is being processed serially; more workers cannot "
         "help." if dwi is not None else "")
        or f"Items wait with {idle:.1f} of {c} workers idle (utilization {100 * rho:.0f} %): "
        + (f"mean depth {depth:.2g} vs {lq_pred:.2g} predicted" if depth is not None else "")
        + (", " if depth is not None and wait is not None else "")
        + (f"mean wait {_fmt_s(wait)} vs {_fmt_s(wq_pred)} predicted" if wait is not None else "")
        + " by M/M/c. One key is being processed serially; more workers cannot help."
    )
    return _verdict(
        "hot_key", "warning", summary,
        {"depth_mean": _num(s.depth_mean), "depth_while_idle": dwi,
         "depth_predicted": lq_pred, "queue_wait_mean_s": wait,
         "queue_wait_predicted_s": wq_pred, "utilization": rho, "idle_workers": idle,
         "workers": c, "sustained_fraction_of_range": sustained, "share_409": conflicts},
        {"action": "split_hot_key",
         "steps": ["find the key that is always dirty (per-key logs or traces)",
                   "split its work into smaller objects or keys, or make its pass cheaper",
                   "coalescing already merges its events; the pass itself is the bottleneck",
                   "do not add workers: a key is never processed by two workers at once"]},
        conf,
    )


# --- long passes -------------------------------------------------------------------------


def _priority_starvation(ctx: _Ctx) -> Verdict | None:
    """Low-priority items starve: the lowest priority's depth never fell to 0 in the window
    (``min_over_time``) while a higher priority's did (it drains) and the workers were kept
    busy — by the higher priorities, since
    controller-runtime's priority queue (``pkg/controller/priorityqueue``) hands out the
    highest priority first. Only ``workqueue_depth`` carries ``priority``: every wait and
    work figure blends the priorities, so the low items' own wait cannot be read; their
    depth all window long is the evidence."""
    s, th = ctx.s, ctx.th
    lows = {}
    for text, depth in (s.depth_min_by_priority or {}).items():
        try:
            lows[float(text)] = (text, depth)
        except ValueError:
            continue  # exceeded_cardinality_limit and other non-numbers
    if len(lows) < 2 or ctx.c is None:
        return None
    low_p = min(lows)
    low_text, low_min = lows[low_p]
    busy = _num(s.busy_workers)
    if low_min < 1 or busy is None or busy / ctx.c < th.starvation_util_min:
        return None
    if not any(depth == 0 for p, (_, depth) in lows.items() if p > low_p):
        # every priority stayed backlogged: an overload of the whole queue (backlog_growing
        # says so), not the low items passed over while higher ones drain
        return None
    now = dict(s.depth_by_priority or {})
    summary = (f"Items of priority {low_text} waited the whole window (at least "
               f"{low_min:.3g} queued throughout) while the workers were "
               f"{100 * busy / ctx.c:.0f} % busy with higher priorities: the priority queue "
               "serves them only when nothing of higher priority is waiting. The wait "
               "figures blend every priority (only the depth carries one).")
    return _verdict(
        "priority_starvation", "warning", summary,
        {"lowest_priority": low_text, "lowest_priority_min_depth": low_min,
         "depth_by_priority": now, "utilization": busy / ctx.c, "busy_workers": busy,
         "workers": ctx.c},
        {"action": "make_room_for_low_priority",
         "steps": ["size the workers for every priority's demand together (the add-workers "
                   "sizing uses the total arrival rate)",
                   "requeue at a high priority only what is urgent; a priority below the "
                   "default (e.g. -100) is for work that may wait indefinitely",
                   "keep priorities to a few fixed values (controller-runtime caps them at "
                   "25 series)"]},
        _margin_conf(busy / ctx.c / th.starvation_util_min),
    )


def _long_passes(ctx: _Ctx) -> Verdict | None:
    s, th = ctx.s, ctx.th
    p50, p99 = _num(s.work_p50_s), _num(s.work_p99_s)
    if p50 is None or p99 is None:
        ctx.notes["long_passes"] = "needs work p50 and p99"
        return None
    if p50 <= 0 or p99 < th.long_p99_min_s:
        return None
    ratio = p99 / p50
    if ratio < th.long_ratio:
        return None
    mean_ratio = ctx.svc / p50 if ctx.svc is not None else None
    if mean_ratio is not None and mean_ratio < th.long_mean_over_p50:
        return None
    summary = (f"Work p99 is {_fmt_s(p99)}, {ratio:.0f}× the median ({_fmt_s(p50)}): a few "
               "passes do far more work than the rest and hold a worker meanwhile.")
    return _verdict(
        "long_passes", "info" if p99 < ctx.slo_s * 10 else "warning", summary,
        {"work_p50_s": p50, "work_p99_s": p99, "p99_over_p50": ratio,
         "service_mean_s": ctx.svc, "mean_over_p50": mean_ratio,
         "caveat": "quantiles are interpolated within histogram buckets"},
        {"action": "bound_passes",
         "steps": ["break the long pass into bounded actions and requeue (AddAfter) between "
                   "them, re-reading state each time so another update stays correct",
                   "move long external waits out of the worker (poll with RequeueAfter)"]},
        _margin_conf(ratio / th.long_ratio),
    )


# --- capacity rules ----------------------------------------------------------------------


def _mmc(lam: float, svc: float, c: int) -> tuple[float, float]:
    mmc = erlang_c(lam, 1.0 / svc, c)
    return float(mmc.wait_mean_s), float(mmc.queue_length_mean)


def _sizing_inputs(ctx: _Ctx, lam: float) -> WhatIfInputs:
    """The sweep :func:`_sizing` runs at λ: c = 1 .. max(2c, ⌈λ·E[S] / util_target⌉ + 2,
    ⌈λ·E[S]⌉ + 8, 16), with the SLO and the utilization target of the recommendation."""
    _, svc, c = _core(ctx)
    load = lam * svc
    for_target = max(1, math.ceil(load / ctx.th.util_target - 1e-9))
    hi = max(2 * c, for_target + 2, math.ceil(load) + 8, 16)
    return WhatIfInputs(
        arrival_rate_per_s=lam, service_mean_s=svc, keys=ctx.keys,
        workers_min=1, workers_max=min(max(hi, 2), MAX_WORKERS),
        slo_wait_s=ctx.slo_s, slo_quantile=ctx.th.slo_quantile,
        utilization_target=ctx.th.util_target,
    )


def _sweep(ctx: _Ctx, lam: float) -> WhatIfTable:
    table = ctx.sweeps.get(lam)
    if table is None:
        table = ctx.sweeps[lam] = whatif_tables([_sizing_inputs(ctx, lam)])[0]
    return table


def _sizing(ctx: _Ctx, lam: float) -> tuple[int | None, int | None, WhatIfTable]:
    """(smallest c meeting the SLO at λ, recommended c, sweep): the sweep's one worker-count
    rule — the SLO, and utilization ≤ ``util_target`` (:meth:`WhatIfTable.design_workers`)."""
    res = _sweep(ctx, lam)
    meets = np.flatnonzero(res.meets_slo(ctx.th.slo_quantile))
    if meets.size == 0:
        return None, None, res
    slo_c = int(res.workers[meets[0]])
    return slo_c, max(slo_c, res.design_workers() or slo_c), res


def _row_evidence(row: WhatIfRow | None, prefix: str) -> dict[str, Any]:
    if row is None:
        return {}
    return {f"{prefix}wait_mean_s": row.wait_mean_s, f"{prefix}wait_p95_s": row.wait_p95_s,
            f"{prefix}p_wait_over_slo": row.p_wait_over_slo,
            f"{prefix}utilization": row.utilization}


def _core(ctx: _Ctx) -> tuple[float, float, int]:
    if ctx.lam is None or ctx.svc is None or ctx.c is None:
        raise ModelInputError("arrival rate, service time and worker count are needed here.")
    return ctx.lam, ctx.svc, ctx.c


def _backlog_growing(ctx: _Ctx, contention: Verdict | None) -> Verdict | None:
    lam, svc, c = _core(ctx)
    th = ctx.th
    capacity = c / svc
    ratio = lam / capacity
    if ratio < th.overload_ratio or lam - capacity <= 0:
        return None
    q0 = _num(ctx.s.depth_current)
    if q0 is None:
        q0 = _num(ctx.s.depth_mean) or 0.0
    fs = fluid_summary(max(q0, 0.0), lam, capacity)
    growth = fs.growth_per_s
    slo_backlog = ctx.slo_s * capacity  # fluid: a new item waits q / (c·μ)
    t_slo = max(slo_backlog - q0, 0.0) / growth
    t_keys = max(ctx.keys - q0, 0.0) / growth if ctx.keys is not None else None
    ceiling = contention.evidence.get("ceiling_reconciles_per_s") if contention else None
    evidence: dict[str, Any] = {
        "arrival_rate_per_s": lam, "capacity_per_s": capacity, "overload_ratio": ratio,
        "growth_per_s": growth, "depth_now": q0, "time_to_slo_breach_s": t_slo,
        "slo_backlog": slo_backlog, "keys": ctx.keys, "time_to_key_limit_s": t_keys,
        "ceiling_reconciles_per_s": ceiling,
    }
    rec: dict[str, Any]
    if contention is not None:
        # A process-wide (API) ceiling is shared: compare it with the process's demand.
        scope = contention.evidence.get("ceiling_scope")
        demand = contention.evidence.get("process_arrival_rate_per_s") \
            if scope == "process" else lam
        helps = ceiling is not None and demand is not None and ceiling > demand
        evidence["ceiling_scope"] = scope
        evidence["demand_against_ceiling_per_s"] = demand
        action = "add_workers_to_ceiling" if helps else "reduce_demand_or_raise_ceiling"
        rec = {"action": action,
               "note": "more workers help only up to the contention/dependency ceiling"}
    else:
        slo_c, rec_c, res = _sizing(ctx, lam)
        rec = {"action": "add_workers", "workers": rec_c, "workers_for_slo": slo_c,
               **_row_evidence(res.row(rec_c) if rec_c else None, "expected_")}
    limit = (f", reaching the key count ({ctx.keys}) in {_fmt_s(t_keys)}"
             if t_keys is not None else "")
    summary = (
        f"Arrivals ({lam:.3g}/s) exceed capacity ({capacity:.3g}/s with {c} workers): "
        f"the backlog grows by {growth:.3g} keys/s; "
        + (f"waits pass the {_fmt_s(ctx.slo_s)} SLO within {_fmt_s(t_slo)}" if t_slo > 0 else
           f"waits are already above the {_fmt_s(ctx.slo_s)} SLO")
        + f"{limit}."
        + (" Contention caps what more workers can do." if contention is not None else "")
    )
    return _verdict("backlog_growing", "critical", summary, evidence, rec,
                    _margin_conf(ratio / th.overload_ratio * 4))


def _wait_p95_bucket(s: QueueSignals) -> tuple[float, float] | None:
    """(lo, hi] of the histogram bucket the observed queue-wait p95 fell in, when the signals
    carry it (``QueueSnapshot.quantile_bounds``; read with ``getattr`` so that a signals object
    without bounds — a test fake, a quantile Prometheus computed — still satisfies
    :class:`QueueSignals`)."""
    bounds: Mapping[str, tuple[float, float]] = getattr(s, "quantile_bounds", None) or {}
    b = bounds.get("queue_wait_p95_s")
    if b is None or math.isnan(b[0]) or math.isnan(b[1]):
        return None
    return float(b[0]), float(b[1])


def _observed_wait_vs_slo(s: QueueSignals, slo_s: float) -> str | None:
    """``"above"``, ``"within"`` or ``"uncertain"``: the observed queue-wait p95 against the SLO
    as far as its histogram bucket proves it; None when the p95 is not measured.

    The true p95 lies in its bucket ``(lo, hi]`` (:func:`models.histogram.bucket_quantile`).
    A bucket at most ×2 wide is compared by the interpolated value, the number the pages show
    (right within ×2, :func:`models.histogram.classify_quantile`); a wider (decade) bucket or
    the +Inf bucket by its bounds: **above** when ``lo >= SLO`` (every value in the bucket
    exceeds it), **within** when ``hi <= SLO``, **uncertain** when the SLO lies inside the
    bucket or the buckets contradict the mean wait. Without bounds the value is compared as it
    is. Rules act on an observation only when it is proven, in both directions: an observed
    miss needs "above" (with p95 "between 1 s and 10 s" and a 2 s SLO the miss is a guess of the
    interpolation; the model's own SLO test and the utilization rule still apply), and removing
    workers needs "within" (a p95 that may exceed the SLO keeps its workers)."""
    observed = _num(s.queue_wait_p95_s)
    if observed is None:
        return None
    bucket = _wait_p95_bucket(s)
    if bucket is not None:
        lo, hi = bucket
        kind = classify_quantile(lo, hi, q=0.95, mean=_num(s.queue_wait_mean_s)).kind
        if kind != "exact":
            if kind == "unsupported" and not math.isinf(hi):
                return "uncertain"  # the buckets contradict the mean: neither is proof
            return "above" if lo >= slo_s else "within" if hi <= slo_s else "uncertain"
    return "above" if observed > slo_s else "within"


def _add_workers(ctx: _Ctx, blockers: list[str], backlog: Verdict | None) -> Verdict | None:
    lam, svc, c = _core(ctx)
    if blockers:
        return None
    th = ctx.th
    lam_d = ctx.lam_design if ctx.lam_design is not None else lam
    if lam_d <= 0:
        return None
    rho_d = lam_d * svc / c
    slo_c, rec_c, res = _sizing(ctx, lam_d)
    current = res.row(c)
    # The sweep's own SLO test (as for its recommendation), at the current worker count.
    model_miss = current is None or not bool(
        res.meets_slo(th.slo_quantile)[c - int(res.workers[0])]
    )
    observed = _num(ctx.s.queue_wait_p95_s)
    observed_vs_slo = _observed_wait_vs_slo(ctx.s, ctx.slo_s)
    observed_miss = observed_vs_slo == "above"  # proven by the bucket bounds, not guessed
    if not (rho_d >= th.util_high or model_miss or observed_miss):
        return None
    if rec_c is None or rec_c <= c:
        return None
    target = res.row(rec_c)
    cv = _demand_cv(ctx)
    conf = _margin_conf(max(rho_d / th.util_high, 1.0) * (2.0 if model_miss else 1.0))
    if cv is not None and cv > th.demand_cv_max:
        conf -= 0.15
    exp_wait = target.wait_mean_s if target else None
    exp_p95 = target.wait_p95_s if target else None
    why = ("the model misses the SLO at the current count" if model_miss else
           f"utilization {100 * rho_d:.0f} % leaves no headroom")
    summary = (
        f"Add workers: {c} → {rec_c}. Demand {lam_d:.3g}/s × {_fmt_s(svc)} per pass "
        f"keeps {lam_d * svc:.2g} workers busy ({why}); at {rec_c} workers the expected "
        f"wait is {_fmt_s(exp_wait)} (p95 {_fmt_s(exp_p95)}, SLO {_fmt_s(ctx.slo_s)})."
    )
    return _verdict(
        "add_workers", "critical" if model_miss or observed_miss else "warning", summary,
        {"arrival_rate_per_s": lam, "design_arrival_rate_per_s": lam_d,
         "service_mean_s": svc, "workers": c, "utilization_design": rho_d,
         "observed_wait_p95_s": observed, "observed_wait_p95_vs_slo": observed_vs_slo,
         "demand_cv": cv, "model": res.model,
         "slo_wait_s": ctx.slo_s, "slo_quantile": th.slo_quantile, "keys": ctx.keys,
         "caveats": _sizing_caveats(ctx),
         **_row_evidence(current, "current_")},
        {"action": "add_workers", "workers": rec_c, "workers_for_slo": slo_c,
         **_row_evidence(target, "expected_")},
        conf,
    )


def _sizing_caveats(ctx: _Ctx) -> list[str]:
    """What the history could not rule out before workers are added."""
    if ctx.h is None:
        return ["no history was read: a shared resource (a lock, the API client's limiter) "
                "that more workers would only queue on could not be ruled out"]
    note = ctx.notes.get("contention/duration")
    return [note] if note else []


def _over_provisioned(ctx: _Ctx) -> Verdict | None:
    lam, svc, c = _core(ctx)
    th = ctx.th
    lam_d = ctx.lam_design if ctx.lam_design is not None else lam
    rho_d = lam_d * svc / c
    if rho_d > th.util_low_peak:
        return None
    if _observed_wait_vs_slo(ctx.s, ctx.slo_s) in ("above", "uncertain"):
        return None  # never remove workers while the observed p95 may exceed the SLO
    slo_c, sized_c, res = _sizing(ctx, lam_d)
    if slo_c is None or sized_c is None:
        return None
    floor_c = min(int(th.min_workers), c)
    rec = max(sized_c, floor_c)
    if rec >= c:
        return None
    target = res.row(rec)
    summary = (
        f"Over-provisioned: {c} workers for {lam_d * svc:.2g} busy at the design demand "
        f"({100 * rho_d:.0f} %); {rec} workers still meet the {_fmt_s(ctx.slo_s)} SLO "
        f"(expected wait {_fmt_s(target.wait_mean_s if target else None)}, "
        f"p95 {_fmt_s(target.wait_p95_s if target else None)})."
    )
    return _verdict(
        "over_provisioned", "info", summary,
        {"arrival_rate_per_s": lam, "design_arrival_rate_per_s": lam_d,
         "service_mean_s": svc, "workers": c, "utilization_design": rho_d,
         "model": res.model, "slo_wait_s": ctx.slo_s, "keys": ctx.keys},
        {"action": "remove_workers", "workers": rec, "workers_for_slo": slo_c,
         **_row_evidence(target, "expected_")},
        _margin_conf(th.util_low_peak / max(rho_d, 1e-9)),
    )


# --- insufficient data / healthy ---------------------------------------------------------


def _insufficient(ctx: _Ctx, missing_fields: list[str]) -> Verdict:
    reasons = {f: ctx.s.missing.get(f) or ("not a usable value" if f == "service_mean_s"
                                           else "not measured") for f in missing_fields}
    summary = (
        "Not enough data to size this queue: missing "
        + "; ".join(f"{f} ({r})" for f, r in reasons.items()) + "."
    )
    return _verdict(
        "insufficient_data", "warning", summary,
        {"missing": reasons, "rules_not_evaluated": dict(ctx.notes)},
        {"action": "collect_metrics",
         "steps": ["check that workqueue and controller-runtime metrics are scraped for this "
                   "queue (names, label selectors, leader election: only the leader reports)",
                   "set the worker count in the config if no max_concurrent_reconciles metric"]},
        0.9,
    )


def _wait_p95_text(s: QueueSignals, wait: float | None) -> str:
    """The observed p95 as its bucket supports it: the value, or "≤ hi" for a wider bucket."""
    bucket = _wait_p95_bucket(s)
    if bucket is None or classify_quantile(*bucket).kind == "exact":
        return _fmt_s(wait)
    return f"≤ {_fmt_s(bucket[1])}"


def _healthy(ctx: _Ctx) -> Verdict:
    s = ctx.s
    busy = _num(s.busy_workers)
    rho = busy / ctx.c if busy is not None and ctx.c else None
    wait = _num(s.queue_wait_p95_s)
    lam = ctx.lam
    if lam is not None and lam == 0:
        summary = "Idle: no adds in the window; nothing to size."
    else:
        summary = (
            "Healthy: "
            + (f"utilization {100 * rho:.0f} %" if rho is not None else "utilization n/a")
            + (f", wait p95 {_wait_p95_text(s, wait)} within the {_fmt_s(ctx.slo_s)} SLO"
               if _observed_wait_vs_slo(s, ctx.slo_s) == "within" else "")
            + "; no contention, retry, hot-key or stuck-worker signs."
        )
    return _verdict(
        "healthy", "ok", summary,
        {"utilization": rho, "queue_wait_p95_s": wait, "arrival_rate_per_s": lam,
         "workers": ctx.c, "rules_not_evaluated": dict(ctx.notes)},
        {"action": "none"},
        0.6 if ctx.notes else 0.8,
    )
