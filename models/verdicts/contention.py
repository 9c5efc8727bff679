"""Contention: more workers will not raise throughput, and which limit binds.

The reasons, by code (each named in :mod:`models.bindings` by the limit it points at):
``usl`` (the USL fit's efficiency at c), ``duration_rise`` (work duration rising with
throughput at the same instants), ``worker_steps`` (a count that rose with every worker busy
while the throughput did not follow), ``api_429``, ``api_409``, ``limiter``, ``apf``,
``webhook``, ``cpu`` (the process at its cores, :mod:`models.bindings.cpu`). The binding
limit is the registry's (:func:`models.bindings.registry.contention_limit`), and its words and
steps are that limit's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from models.bindings.client_limiter import LIMITER_HELD_SHARE
from models.bindings.headroom import HEADROOM_BINDS
from models.bindings.registry import contention_limit, get, limits
from models.contention import fit_usl_many, usl_slowdown
from models.errors import ModelInputError
from models.formatting import number_text, percent_text, sig
from models.verdicts.ceilings import ceilings
from models.verdicts.contention_reasons import (
    apf_reason,
    cpu_reason,
    duration_rise,
    limiter_history,
    step_reason,
    usl_points,
    webhook_reason,
)
from models.verdicts.context import Ctx, correlation, paired
from models.verdicts.sizing import observed_wait_vs_slo
from models.verdicts.verdict import Kind, Verdict, fmt_s, make_verdict, margin_conf, num

__all__ = ["NO_CEILING", "contention", "headline"]

NO_CEILING = ("none measured here: no client QPS, throttled API rate, CPU, USL peak or "
              "worker-count step gives one; the plan fits one from how the range's pass times "
              "grew with load, or says it could not")
"""The ceiling basis of a contention verdict that measured no ceiling."""


def contention(ctx: Ctx, found: Mapping[Kind, Verdict]) -> Verdict | None:
    s, th = ctx.s, ctx.th
    proc, client_qps = ctx.process_totals(), ctx.client_qps
    reasons: dict[str, str] = {}
    """reason code (what is found) → the reason in words"""
    evidence: dict[str, Any] = {}
    strength = 1.0
    ceiling: float | None = None
    basis: str | None = None
    scope: str | None = None
    useful: int | None = None

    # (a) USL fit on (busy workers, throughput) over the range.
    pts = usl_points(ctx)
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
                    f"throughput does not scale with busy workers (USL σ={sig(fit.sigma)}, "
                    f"κ={sig(fit.kappa)}, {percent_text(eff)} efficiency at c={c_eval:g}"
                    + (f", peak at N*≈{sig(fit.peak_workers)})" if fit.peak_workers else ")"))
                strength = max(strength, th.usl_efficiency_max / max(eff, 1e-9))
                if fit.peak_throughput is not None and fit.peak_workers_int is not None:
                    ceiling, basis = fit.peak_throughput, USL_PEAK_BASIS
                    scope = "queue"
                    useful = fit.peak_workers_int
    # (b) Work duration rising with throughput, at the same instants of the range.
    rise = duration_rise(ctx)
    if isinstance(rise, str):
        ctx.notes["contention/duration"] = rise
    elif rise is not None:
        elasticity, t_stat, x_lo, x_hi, s_lo, s_hi = rise
        evidence.update(duration_elasticity=elasticity, duration_elasticity_t=t_stat,
                        duration_at_quiet_s=s_lo, duration_at_busy_s=s_hi,
                        throughput_quiet_per_s=x_lo, throughput_busy_per_s=x_hi)
        if elasticity >= th.rise_elasticity_min and t_stat >= th.rise_t_min:
            reasons["duration_rise"] = (
                f"each pass takes longer as more complete: {fmt_s(s_hi)} at "
                f"{number_text(x_hi, '/s')} vs "
                f"{fmt_s(s_lo)} at {number_text(x_lo, '/s')} at the same instants (elasticity "
                f"{sig(elasticity)}, t={sig(t_stat)}) — something shared fills up with load")
            strength = max(strength, elasticity / th.rise_elasticity_min)
        elif x_hi / x_lo < 1.2:
            ctx.notes["contention/duration"] = (
                f"the throughput only varied {sig(x_lo)}…{number_text(x_hi, '/s')} over the "
                "range: a shared resource (lock, API limit) could not be told from independent "
                "passes")

    # (c) The worker count rose under load and the throughput did not follow.
    step = step_reason(ctx, evidence)
    if step is not None:
        reasons["worker_steps"], grade, step_ceiling_per_s = step
        strength = max(strength, grade)
        if ceiling is None or basis == USL_PEAK_BASIS:
            # measured at a count the queue ran beats the fitted curve's peak
            ceiling, scope = step_ceiling_per_s, "queue"
            basis = (f"throughput with every worker busy at c={evidence['step_workers_high']} "
                     "(the highest worker count of the range)")

    # (d) API throttling and conflicts (process-wide).
    queue_specific = bool(reasons)
    calls = num(s.api_calls_per_s)
    classes = s.api_calls_by_class_per_s or {}
    if calls is not None and calls > 0:
        s429 = (num(classes.get("429")) or 0.0) / calls
        s409 = (num(classes.get("409")) or 0.0) / calls
        evidence.update(api_calls_per_s=calls, share_429=s429, share_409=s409,
                        api_request_s_per_s=num(s.api_request_s_per_s))
        if s429 >= th.share_429_min:
            reasons["api_429"] = (
                f"{percent_text(s429)} of the process's API calls are throttled (429)")
            strength = max(strength, s429 / th.share_429_min)
        if s409 >= th.share_409_min:
            p = paired(ctx.h, "busy_workers", "api_409_per_s", "api_calls_per_s")
            r409 = None
            if p is not None and p[0].size >= th.min_history_points:
                good = p[3] > 0
                r409 = correlation(p[1][good], p[2][good] / p[3][good])
            evidence["conflict_busy_corr"] = r409
            if r409 is not None and r409 >= th.corr_409_min:
                reasons["api_409"] = (f"{percent_text(s409)} of API calls conflict (409), rising "
                                      "with concurrency")
                strength = max(strength, s409 / th.share_409_min)
    else:
        ctx.notes["contention/api"] = "no API-client request rate (rest_client_requests_total)"
    thr = num(s.throttle_s_per_s)
    busy = proc.busy_workers if proc.busy_workers is not None else num(s.busy_workers)
    if thr is not None and busy is not None and busy > 0:
        lim = thr / busy  # the process's limiter seconds per busy-worker second
        evidence["limiter_share_of_busy_time"] = lim
        if lim >= th.limiter_share_min:
            reasons["limiter"] = (f"the process waits {number_text(thr, 's')} per second in "
                                  "the client-side "
                                  f"rate limiter ({percent_text(lim)} of its busy-worker time)")
            strength = max(strength, lim / th.limiter_share_min)
    throttled_calls = None
    hist = limiter_history(ctx, proc)
    if hist is not None:
        share_top, throttled_calls = hist
        evidence["limiter_share_of_busy_time_p90"] = share_top
        if share_top >= th.limiter_share_min and "limiter" not in reasons:
            reasons["limiter"] = (
                f"at the 90th percentile of the range the process waited "
                f"{percent_text(share_top)} of its busy-worker time in the client-side rate "
                "limiter")
            strength = max(strength, share_top / th.limiter_share_min)

    cpu = cpu_reason(ctx, proc, evidence, stretching=bool(
        {"duration_rise", "usl", "worker_steps"} & reasons.keys()))
    if cpu is not None:
        reasons["cpu"], grade, cpu_ceiling = cpu
        strength = max(strength, grade)
        if cpu_ceiling is not None and (ceiling is None or cpu_ceiling < ceiling):
            ceiling, scope = cpu_ceiling, "process"
            basis = ("cores available ÷ the process's CPU seconds per pass (shared by every "
                     "controller of the process)")

    px0 = proc.throughput_per_s
    per_pass = (calls / px0) if calls is not None and calls > 0 and px0 else None
    apf = apf_reason(ctx, per_pass, evidence)
    if apf is not None:
        reasons["apf"], grade = apf
        strength = max(strength, grade)
    hook = webhook_reason(ctx, proc, evidence, shared="duration_rise" in reasons
                           or "usl" in reasons)
    if hook is not None:
        reasons["webhook"], grade = hook
        strength = max(strength, grade)

    measured = ceilings(ctx)
    station = next((m for m in measured if m.limit == "shared_resource"
                    and m.ceiling_per_s is not None), None)
    demand = ctx.lam_design if ctx.lam_design is not None else ctx.lam
    busy_max = _busy_max(ctx)
    if busy_max is not None:
        evidence["busy_workers_max"] = busy_max
    if station is not None and demand and station.ceiling_per_s is not None:
        ratio = station.ceiling_per_s / demand
        evidence.update(station_ceiling_per_s=station.ceiling_per_s,
                        station_headroom_ratio=ratio)
        if ratio < HEADROOM_BINDS and "station" not in reasons:
            reasons["station"] = (
                f"the pass times show a shared resource whose ceiling "
                f"({number_text(station.ceiling_per_s, '/s')}) the demand's peaks "
                f"({number_text(demand, '/s')}) reach")
            strength = max(strength, HEADROOM_BINDS / max(ratio, 0.05))
        elif reasons and set(reasons) <= _INFLATION and _keeps_up(ctx, busy_max):
            # the passes share something that fills with load, and the queue keeps up with
            # room to spare: a headroom to state, not a limit that binds
            ctx.notes["contention"] = (
                f"the passes share a resource that fills with load (ceiling ≈ "
                f"{number_text(station.ceiling_per_s, '/s')}, "
                f"{sig(ratio)}× the peak demand of {number_text(demand, '/s')}), and the "
                "queue keeps up: it does not bind")
            return None
    if not reasons:
        return None
    busy_q, c_q = num(s.busy_workers), ctx.c
    if not queue_specific and busy_q is not None and c_q and busy_q / c_q < th.contention_util_min:
        # Only the process is throttled and this queue barely works: it is not the queue
        # whose worker count is in question. Its busier siblings carry the verdict.
        ctx.notes["contention"] = (
            f"the process is throttled ({'; '.join(reasons.values())}), but this queue is only "
            f"{percent_text(busy_q / c_q)} busy")
        return None
    # The API ceiling: QPS ÷ API calls per reconcile, shared by the process's controllers.
    px = proc.throughput_per_s
    if px is not None and px > 0:  # what a process-wide ceiling (API, CPU) is split with
        evidence["process_reconciles_per_s"] = px
        evidence["process_queues"] = proc.queues
        evidence["process_arrival_rate_per_s"] = proc.arrival_rate_per_s
    if calls is not None and calls > 0 and px is not None and px > 0:
        per_rec = calls / px
        evidence["api_calls_per_reconcile"] = per_rec
        if client_qps is not None:
            api_ceiling = client_qps / per_rec
            basis_api = "configured client QPS ÷ calls per reconcile"
        elif throttled_calls is not None:
            api_ceiling = throttled_calls / per_rec
            basis_api = ("most API calls/s the process made while its client-side limiter "
                         "held it (range) ÷ calls per reconcile — the limiter's QPS, "
                         "shared by all controllers of the process")
            evidence["api_qps_estimate"] = throttled_calls
        else:
            # the calls/s the process gets now are its demand's, not a ceiling's, unless it is
            # held at the limit: no number (the limit's measure says what is known)
            api_ceiling, basis_api = None, None
        if api_ceiling is not None and (ceiling is None or api_ceiling < ceiling):
            ceiling, basis, scope = api_ceiling, basis_api, "process"
    binding = contention_limit(reasons, evidence, ctx.c)
    own = next((m for m in measured if m.limit == binding and m.ceiling_per_s is not None),
               None)
    if _keeps_up(ctx, busy_max) and not queue_specific_binds(reasons):
        if own is not None and own.ceiling_per_s is not None and demand \
                and own.ceiling_per_s / demand >= HEADROOM_BINDS:
            # the limit is near, measured above the demand's peaks, and no worker ever waited
            # on it: its headroom is the answer (the CPU at 86 % of a core with 8 workers)
            ctx.notes["contention"] = (
                f"{get(binding).words} is near (ceiling ≈ "
                f"{number_text(own.ceiling_per_s, '/s')}, {sig(own.ceiling_per_s / demand)}× "
                f"the peak demand of {number_text(demand, '/s')}), and the queue keeps up: "
                "it does not bind")
            return None
        held = evidence.get("limiter_share_of_busy_time_p90") or \
            evidence.get("limiter_share_of_busy_time") or 0.0
        if own is None and set(reasons) <= _INFLATION | {"limiter"} \
                and held < LIMITER_HELD_SHARE:
            # the passes stretch with load (or wait in the client's limiter), the ceiling
            # cannot be measured from a load this steady, and no worker ever waited: a
            # verdict here flipped between runs of one mechanism (a 20-QPS bucket at 80 %:
            # contention on 3 seeds of 11, its passes 11–20 % in the limiter; at 90 % they
            # are 68–71 % in it, held: that one binds)
            ctx.notes["contention/duration"] = (
                (f"the passes wait in the client's rate limiter ({percent_text(held)} of "
                 "their busy time at the range's 90th percentile, under the half that holds "
                 "them at its QPS), " if "limiter" in reasons else "")
                + "the pass times rise with load (something the passes share fills up), but "
                "its ceiling could not be told from this range, and the queue keeps up")
            ctx.shared_unmeasured = True
            return None
    if own is not None and (ceiling is None or basis == USL_PEAK_BASIS):
        # the limit's own measure beats no ceiling and the fitted curve's extrapolated peak
        # (already this queue's part of a process-wide ceiling)
        ceiling, basis, scope = own.ceiling_per_s, own.basis, "queue"
    evidence["ceiling_reconciles_per_s"] = ceiling
    evidence["ceiling_basis"] = basis if ceiling is not None else NO_CEILING
    evidence["ceiling_scope"] = scope
    evidence["binding_limit"] = binding
    evidence["observed_wait_p95_vs_slo"] = observed_wait_vs_slo(s, ctx.slo_s)
    said = "; ".join(reasons.values())
    summary = (
        f"Adding workers will not help: {get(binding).words} binds. "
        + said[:1].upper() + said[1:] + "."
        + (f" Ceiling ≈ {sig(ceiling)} reconciles/s ({basis})." if ceiling is not None else "")
    )
    return make_verdict(
        Kind.CONTENTION, "warning", summary, evidence,
        {"action": "do_not_add_workers",
         "binding_limit": binding,
         "ceiling_reconciles_per_s": ceiling,
         "workers_max_useful": useful,
         "steps": [o.action for o in get(binding).options]},
        margin_conf(strength) + (0.05 if len(reasons) > 1 else 0.0), headline,
    )


_INFLATION = frozenset({"usl", "duration_rise"})
"""The reasons that only say the passes stretch with load (a shared resource fills up), not
that it binds: alone, on a queue that keeps up with a measured ceiling above the demand's
peaks, they are headroom, not contention."""

USL_PEAK_BASIS = "USL peak throughput X(N*)"


def queue_specific_binds(reasons: Mapping[str, str]) -> bool:
    """Reasons that say the limit binds now whatever the workers do: the API server throttles
    (429s), writes conflict, a worker-count step did not raise the throughput."""
    return bool({"api_429", "api_409", "worker_steps", "apf", "webhook"} & reasons.keys())


def _busy_max(ctx: Ctx) -> float | None:
    """The most busy workers of the range's points."""
    if ctx.h is None:
        return None
    busy = ctx.h.busy_workers[np.isfinite(ctx.h.busy_workers)]
    return float(busy.max()) if busy.size else None


def _keeps_up(ctx: Ctx, busy_max: float | None) -> bool:
    """The queue never had every worker busy over the range (:attr:`AdvisorThresholds.
    step_busy_share_min` of c): its items never waited for a worker a shared limit held —
    and its measured wait does not break the SLO (five real near-limit queues read
    "healthy" with a p95 wait of 9 s against 1 s: not a queue that keeps up)."""
    return busy_max is not None and ctx.c is not None \
        and busy_max < ctx.th.step_busy_share_min * ctx.c \
        and observed_wait_vs_slo(ctx.s, ctx.slo_s) != "above"


def headline(evidence: Mapping[str, Any], recommendation: Mapping[str, Any]) -> str:
    limit = limits().get(str(evidence.get("binding_limit") or "shared_resource"))
    ceiling = recommendation.get("ceiling_reconciles_per_s")
    words = limit.headline if limit is not None and limit.headline else "something shared binds"
    return (f"More workers will not help: {words}"
            + (f" (ceiling ≈ {sig(ceiling)} reconciles/s)" if isinstance(ceiling, float)
               else ""))
