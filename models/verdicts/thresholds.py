"""Every threshold the verdict rules use, with the signal it applies to and why it is set
there (field metadata ``signal`` and ``reason``, listed by :func:`threshold_table`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

from models.errors import ModelInputError

__all__ = ["AdvisorThresholds", "threshold_table"]


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

