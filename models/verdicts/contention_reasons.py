"""The contention rule's reasons that need more than a share over a threshold: the
worker-count steps of the range, the API server's priority level, an admission webhook, the
work duration rising with throughput and the client limiter over the range; and the
(busy workers, throughput) points of the USL fit, or why it is refused."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from models.bindings.client_limiter import LIMITER_HELD_SHARE
from models.bindings.cpu import CPU_BUSY_SHARE_MIN, cores_available, cpu_finding, cpu_peaks
from models.bindings.steps import step_ceiling
from models.formatting import number_text, percent_text, sig
from models.verdicts.context import Ctx, error_rate, least_squares, steady_points
from models.verdicts.inputs import FloatArray, ProcessTotals
from models.verdicts.verdict import fmt_s, num

__all__ = [
    "apf_reason",
    "cpu_reason",
    "duration_rise",
    "limiter_history",
    "step_reason",
    "usl_points",
    "webhook_reason",
]


def usl_refusal(ctx: Ctx) -> str | None:
    """Why the USL fit must not be made for this queue (None: it may)."""
    th, s = ctx.th, ctx.s
    errors, recs = error_rate(s), num(s.throughput_per_s)
    if errors is not None and recs and errors / recs >= th.usl_failure_share_max:
        return (f"{percent_text(errors / recs)} of passes fail: throughput against busy workers "
                "measures the retry policy, not scaling")
    retries, adds = num(s.retries_per_s), num(s.arrival_rate_per_s)
    if retries is not None and adds and retries / adds >= th.usl_failure_share_max:
        return (f"{percent_text(retries / adds)} of adds are delayed re-adds: throughput against "
                "busy workers measures the requeue policy, not scaling")
    return None


def usl_points(ctx: Ctx) -> tuple[FloatArray, FloatArray] | str | None:
    """(busy workers, throughput) points the contention rule fits; a reason it is refused;
    or None without a history. Only points with at least one busy worker on average (below
    it the time average mixes idle time with one pass: USL's N is a number of concurrent
    workers), at least ``min_history_points`` of them, spread over ``inflation_span_min``;
    points with failures or re-adds (:func:`steady_points`) are left out."""
    if ctx.usl_points is None:
        ctx.usl_points = usl_points_now(ctx)
    return ctx.usl_points


def usl_points_now(ctx: Ctx) -> tuple[FloatArray, FloatArray] | str | None:
    if ctx.h is None:
        return None
    refused = usl_refusal(ctx)
    if refused is not None:
        return refused
    h = ctx.h
    n, x = h.busy_workers, h.throughput_per_s
    steady = steady_points(ctx)
    ok = steady & np.isfinite(n) & np.isfinite(x) & (n >= 1.0) & (x > 0)
    n, x = n[ok], x[ok]
    if n.size < ctx.th.min_history_points:
        left_out = int(np.count_nonzero(~steady))
        return (f"only {n.size} range points with at least one busy worker "
                f"(needs {ctx.th.min_history_points:g})"
                + (f"; {left_out} points were left out for failures or re-adds ≥ "
                   f"{100 * ctx.th.usl_failure_share_max:g} %" if left_out else ""))
    if n.max() / n.min() < ctx.th.inflation_span_min:
        return (f"busy workers only spanned {sig(n.min())}…{sig(n.max())} over the range: the "
                "load did not vary enough to trace a scaling curve")
    return n, x


def step_reason(ctx: Ctx, evidence: dict[str, Any]) -> tuple[str, float, float] | None:
    """A shared limit read from the range's worker-count steps (:mod:`models.bindings.steps`):
    the reason in words, its strength and the ceiling (items/s)."""
    h, th = ctx.h, ctx.th
    if h is None:
        return None
    # Points with failures are left out (the retry policy, not the passes, sets their pace);
    # planned re-adds without errors are not: a polling loop's throughput at each count is
    # still what the workers and the shared limit allow.
    with np.errstate(divide="ignore", invalid="ignore"):
        failing = h.errors_per_s / h.throughput_per_s >= th.usl_failure_share_max
    found = step_ceiling(h.workers, h.throughput_per_s, h.busy_workers, h.service_mean_s,
                         min_points=int(th.min_history_points),
                         busy_share_min=th.step_busy_share_min, usable=~failing)
    if found is None:
        return None
    evidence.update(step_workers_low=found.workers_low, step_workers_high=found.workers_high,
                    step_throughput_low_per_s=found.throughput_low_per_s,
                    step_throughput_high_per_s=found.throughput_high_per_s,
                    step_scaling_efficiency=found.efficiency)
    if found.efficiency >= th.step_scaling_max:
        return None
    return (f"the worker count rose from {found.workers_low} to {found.workers_high} with every "
            f"worker busy and the throughput only went from {sig(found.throughput_low_per_s)} "
            f"to {number_text(found.throughput_high_per_s, '/s')} "
            f"({percent_text(max(found.efficiency, 0.0))} "
            "of what independent workers add) — a shared limit sets the pace",
            th.step_scaling_max / max(found.efficiency, 0.05), found.throughput_high_per_s)


def apf_reason(ctx: Ctx, calls_per_pass: float | None, evidence: dict[str, Any]
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
    limit, used = num(s.apf_seat_limit), num(s.apf_seats_in_use_mean)
    wait, rejected = num(s.apf_wait_mean_s), num(s.apf_rejected_per_s)
    if limit is None and wait is None and rejected is None:
        return None
    level = s.apf_priority_level
    evidence.update(apf_priority_level=level, apf_seat_limit=limit, apf_seats_in_use=used,
                    apf_wait_mean_s=wait, apf_rejected_per_s=rejected,
                    apf_inqueue_mean=num(s.apf_inqueue_mean))
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
                f"the API server's level {level!r} was {percent_text(util)} busy (under "
                f"{percent_text(th.apf_seat_util_min)}) and rejected nothing: not saturated"
                + (f"; passes spent {percent_text(share)} of their time queued in it"
                   if share is not None else ""))
        elif saturated:
            ctx.notes["contention/apf"] = (
                f"the API server's level {level!r} is saturated, but this queue's passes "
                "spend little time queued in it" if share is not None else
                f"the API server's level {level!r} is saturated; this queue's API calls per "
                "pass are not known")
        return None
    rej = f", rejecting {sig(rejected)} requests/s" if rejected else ""
    return (f"the API server's priority level {level!r} is saturated ("
            + (f"{percent_text(util)} of its {limit:g} seats in use" if util is not None
               and limit is not None else "its seats are all taken")
            + f"{rej}); each pass waits {fmt_s(queued)} in its queue "
            f"({percent_text(share)} of the pass) — more workers send more requests into the same "
            "queue", share / th.apf_wait_share_min)


def webhook_reason(ctx: Ctx, proc: ProcessTotals, evidence: dict[str, Any], shared: bool
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
    writes, px = num(s.api_writes_per_s), proc.throughput_per_s
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
    lat, sli = num(s.apiserver_write_latency_mean_s), num(s.apiserver_write_sli_mean_s)
    if lat is not None and sli is not None:
        evidence["apiserver_write_outside_sli_s"] = lat - sli
        if lat - sli < 0.5 * mean:
            ctx.notes["contention/webhook"] = (
                f"the admission webhook {name!r} takes {fmt_s(mean)}, but the API server's "
                f"writes spend only {fmt_s(lat - sli)} outside their SLI time (webhooks and "
                "APF wait): it does not guard most writes")
            return None
    if not shared:
        ctx.notes["contention/webhook"] = (
            f"{percent_text(share)} of each pass waits on the admission webhook {name!r} "
            f"({fmt_s(mean)} per write); its latency did not rise with load, so more workers "
            "still help, and a faster webhook shortens every pass")
        return None
    return (f"{percent_text(share)} of each pass waits on the admission webhook {name!r} "
            f"({fmt_s(mean)} per write, {sig(per_pass)} writes per pass) and the passes get "
            "longer with load: the webhook fills up", share / th.webhook_share_min)


def duration_rise(ctx: Ctx) -> tuple[float, float, float, float, float, float] | str | None:
    """Work duration against throughput at the same range points: (the elasticity — slope of
    ln duration on ln throughput by least squares — its t statistic, and the mean throughput
    and duration of the quietest and the busiest fifth of the points); a reason it cannot be
    told; or None without a history. Computed once per queue (kept on the context: the
    contention rule, the ceilings' inputs and the station's gate all read it)."""
    if ctx.rise is None:
        ctx.rise = (_duration_rise(ctx),)
    return ctx.rise[0]


def _duration_rise(ctx: Ctx) -> tuple[float, float, float, float, float, float] | str | None:
    h = ctx.h
    if h is None:
        return None
    x, svc = h.throughput_per_s, h.service_mean_s
    ok = steady_points(ctx) & np.isfinite(x) & np.isfinite(svc) & (x > 0) & (svc > 0)
    x, svc = x[ok], svc[ok]
    if x.size < max(ctx.th.min_history_points, 10):
        return (f"only {x.size} range points with throughput and work duration (without "
                "failures or re-adds): too few to tell a shared resource from independent "
                "passes")
    order = np.argsort(x, kind="stable")
    k = max(2, x.size // 5)
    lo, hi = order[:k], order[-k:]
    fit = least_squares(np.log(x), np.log(svc))
    if fit is None:
        return "throughput or work duration did not vary over the range"
    r, elasticity = fit
    t_stat = r * math.sqrt((x.size - 2) / max(1.0 - r * r, 1e-12))
    return (elasticity, t_stat, float(x[lo].mean()), float(x[hi].mean()),
            float(svc[lo].mean()), float(svc[hi].mean()))


def limiter_history(ctx: Ctx, proc: ProcessTotals) -> tuple[float, float | None] | None:
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
    # held at its QPS: the passes wait in the limiter AND the queue is behind it (every
    # worker busy, items waiting) — a queue that keeps up sends what its demand asks, not the
    # QPS (a 20-QPS bucket at 85 % load read 17 calls/s "held": its demand, a circular
    # ceiling)
    held = (share >= LIMITER_HELD_SHARE) & h.saturated()[ok]
    return (float(np.quantile(share, 0.9)),
            float(sent[held].max()) if held.any() else None)


def cpu_reason(ctx: Ctx, proc: ProcessTotals, evidence: dict[str, Any], stretching: bool
               ) -> tuple[str, float, float | None] | None:
    """The process's CPU binds (:func:`models.bindings.cpu.cpu_finding`, judged at the
    range's peaks where the range has the CPU): the reason in words, its strength and the
    process's ceiling (passes/s, None without its throughput).
    The CPU fields are read with ``getattr``: a signals object without them (a source that
    does not read them) has no CPU figures."""
    s = ctx.s
    gomaxprocs = num(getattr(s, "cpu_gomaxprocs", None))
    limit = num(getattr(s, "cpu_limit_cores", None))
    peaks = None
    if ctx.h is not None:
        x, px = num(s.throughput_per_s), proc.throughput_per_s
        share = min(x / px, 1.0) if x is not None and px and x > 0 else 1.0
        peaks = cpu_peaks(ctx.h.cpu_used_cores, ctx.h.throughput_per_s / share,
                          cores_available(gomaxprocs, limit), int(ctx.th.min_history_points))
    found = cpu_finding(num(getattr(s, "cpu_used_cores", None)), gomaxprocs, limit,
                        num(getattr(s, "cpu_throttled_share", None)),
                        num(getattr(s, "cpu_sched_latency_mean_s", None)),
                        proc.throughput_per_s, stretching=stretching, peaks=peaks)
    if found is None:
        return None
    evidence.update(cpu_cores_used=found.cores_used, cpu_cores_available=found.cores_available,
                    cpu_busy_share=found.busy_share, cpu_throttled_share=found.throttled_share,
                    cpu_s_per_pass=found.cpu_s_per_pass,
                    cpu_sched_latency_mean_s=found.sched_latency_mean_s)
    if not found.binds:
        ctx.notes["contention/cpu"] = found.reason
        return None
    grade = (found.busy_share or 0.0) / CPU_BUSY_SHARE_MIN
    return found.reason, max(grade, 1.0), found.ceiling_per_s
