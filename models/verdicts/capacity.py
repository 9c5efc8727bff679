"""The capacity rules: the backlog grows (arrivals exceed what c workers complete), add
workers (utilization is high and the wait is queueing), over-provisioned (most workers are
never used). They run only with λ, E[S] and c; the backlog trend comes from
:mod:`models.fluid`, the worker counts from the sizing sweep (:mod:`models.verdicts.sizing`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from models.fluid import fluid_summary
from models.formatting import number_text, percent_text, sig
from models.verdicts.context import Ctx, core_inputs, demand_cv
from models.verdicts.sizing import observed_wait_vs_slo, row_evidence, size_at
from models.verdicts.verdict import Kind, Verdict, fmt_s, make_verdict, margin_conf, num

__all__ = [
    "add_workers",
    "add_workers_headline",
    "backlog_growing",
    "backlog_headline",
    "fewer_floor",
    "over_provisioned",
    "over_provisioned_headline",
]


def fewer_floor(sized: int, current: int, min_workers: float) -> int:
    """The count a change to fewer workers goes to: the sized count, never below
    min(``min_workers``, the current count) — one worker is no redundancy against a stuck
    pass, and a queue already under the floor is not raised by a change to fewer."""
    return max(sized, min(int(min_workers), current))


def backlog_growing(ctx: Ctx, found: Mapping[Kind, Verdict]) -> Verdict | None:
    contention = found.get(Kind.CONTENTION)
    polls = found.get(Kind.REQUEUE_MISUSE)
    if polls is not None and "workers" in polls.recommendation:
        # a closed loop of polls: the backlog is bounded by the keys, the polls come late
        return None
    lam, svc, c = core_inputs(ctx)
    th = ctx.th
    capacity = c / svc
    ratio = lam / capacity
    if ratio < th.overload_ratio or lam - capacity <= 0:
        return None
    q0 = num(ctx.s.depth_current)
    if q0 is None:
        q0 = num(ctx.s.depth_mean) or 0.0
    fs = fluid_summary(max(q0, 0.0), lam, capacity)
    growth = fs.growth_per_s
    slo_backlog = ctx.slo_s * capacity  # fluid: a new item waits q / (c·μ)
    t_slo = max(slo_backlog - q0, 0.0) / growth
    t_keys = max(ctx.keys - q0, 0.0) / growth if ctx.keys is not None else None
    ceiling = contention.evidence.get("ceiling_reconciles_per_s") if contention else None
    evidence: dict[str, Any] = {
        "arrival_rate_per_s": lam, "workers": c, "capacity_per_s": capacity,
        "overload_ratio": ratio, "growth_per_s": growth, "depth_now": q0,
        "time_to_slo_breach_s": t_slo,
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
        slo_c, rec_c, res = size_at(ctx, lam)
        rec = {"action": "add_workers", "workers": rec_c, "workers_for_slo": slo_c,
               **row_evidence(res.row(rec_c) if rec_c else None, "expected_")}
    limit = (f", reaching the key count ({ctx.keys}) in {fmt_s(t_keys)}"
             if t_keys is not None else "")
    summary = (
        f"Arrivals ({number_text(lam, '/s')}) exceed capacity "
        f"({number_text(capacity, '/s')} with {c} workers): "
        f"the backlog grows by {sig(growth)} keys/s; "
        + (f"waits pass the {fmt_s(ctx.slo_s)} SLO within {fmt_s(t_slo)}" if t_slo > 0 else
           f"waits are already above the {fmt_s(ctx.slo_s)} SLO")
        + f"{limit}."
        + (" Contention caps what more workers can do." if contention is not None else "")
    )
    return make_verdict(Kind.BACKLOG_GROWING, "critical", summary, evidence, rec,
                    margin_conf(ratio / th.overload_ratio * 4), backlog_headline)


def add_workers(ctx: Ctx, found: Mapping[Kind, Verdict]) -> Verdict | None:
    lam, svc, c = core_inputs(ctx)
    polls = found.get(Kind.REQUEUE_MISUSE)
    if polls is not None and "workers" in polls.recommendation:
        return None  # late polls: their verdict sizes the queue at the restored period
    th = ctx.th
    lam_d = ctx.lam_design if ctx.lam_design is not None else lam
    if lam_d <= 0:
        return None
    rho_d = lam_d * svc / c
    slo_c, rec_c, res = size_at(ctx, lam_d)
    current = res.row(c)
    # The sweep's own SLO test (as for its recommendation), at the current worker count.
    model_miss = current is None or not bool(
        res.meets_slo(th.slo_quantile)[c - int(res.workers[0])]
    )
    observed = num(ctx.s.queue_wait_p95_s)
    observed_vs_slo = observed_wait_vs_slo(ctx.s, ctx.slo_s)
    observed_miss = observed_vs_slo == "above"  # proven by the bucket bounds, not guessed
    if not (rho_d >= th.util_high or model_miss or observed_miss):
        return None
    if rec_c is None or rec_c <= c:
        return None
    target = res.row(rec_c)
    cv = demand_cv(ctx)
    conf = margin_conf(max(rho_d / th.util_high, 1.0) * (2.0 if model_miss else 1.0))
    if cv is not None and cv > th.demand_cv_max:
        conf -= 0.15
    exp_wait = target.wait_mean_s if target else None
    exp_p95 = target.wait_p95_s if target else None
    why = ("the model misses the SLO at the current count" if model_miss else
           f"utilization {percent_text(rho_d)} leaves no headroom")
    summary = (
        f"Add workers: {c} → {rec_c}. Demand {number_text(lam_d, '/s')} × {fmt_s(svc)} per pass "
        f"keeps {sig(lam_d * svc)} workers busy ({why}); at {rec_c} workers the expected "
        f"wait is {fmt_s(exp_wait)} (p95 {fmt_s(exp_p95)}, SLO {fmt_s(ctx.slo_s)})."
    )
    return make_verdict(
        Kind.ADD_WORKERS, "critical" if model_miss or observed_miss else "warning", summary,
        {"arrival_rate_per_s": lam, "design_arrival_rate_per_s": lam_d,
         "service_mean_s": svc, "workers": c, "utilization_design": rho_d,
         "observed_wait_p95_s": observed, "observed_wait_p95_vs_slo": observed_vs_slo,
         "demand_cv": cv, "model": res.model,
         "slo_wait_s": ctx.slo_s, "slo_quantile": th.slo_quantile, "keys": ctx.keys,
         "caveats": sizing_caveats(ctx),
         **row_evidence(current, "current_")},
        {"action": "add_workers", "workers": rec_c, "workers_for_slo": slo_c,
         **row_evidence(target, "expected_")},
        conf, add_workers_headline,
    )


def sizing_caveats(ctx: Ctx) -> list[str]:
    """What the history could not rule out before workers are added."""
    if ctx.h is None:
        return ["no history was read: a shared resource (a lock, the API client's limiter) "
                "that more workers would only queue on could not be ruled out"]
    note = ctx.notes.get("contention/duration")
    return [note] if note else []


def over_provisioned(ctx: Ctx, found: Mapping[Kind, Verdict]) -> Verdict | None:
    lam, svc, c = core_inputs(ctx)
    th = ctx.th
    lam_d = ctx.lam_design if ctx.lam_design is not None else lam
    rho_d = lam_d * svc / c
    if rho_d > th.util_low_peak:
        return None
    if observed_wait_vs_slo(ctx.s, ctx.slo_s) in ("above", "uncertain"):
        return None  # never remove workers while the observed p95 may exceed the SLO
    slo_c, sized_c, res = size_at(ctx, lam_d)
    if slo_c is None or sized_c is None:
        return None
    rec = fewer_floor(sized_c, c, th.min_workers)
    if rec >= c:
        return None
    target = res.row(rec)
    summary = (
        f"Over-provisioned: {c} workers for {sig(lam_d * svc)} busy at the design demand "
        f"({percent_text(rho_d)}); {rec} workers still meet the {fmt_s(ctx.slo_s)} SLO "
        f"(expected wait {fmt_s(target.wait_mean_s if target else None)}, "
        f"p95 {fmt_s(target.wait_p95_s if target else None)})."
    )
    return make_verdict(
        Kind.OVER_PROVISIONED, "info", summary,
        {"arrival_rate_per_s": lam, "design_arrival_rate_per_s": lam_d,
         "service_mean_s": svc, "workers": c, "utilization_design": rho_d,
         "model": res.model, "slo_wait_s": ctx.slo_s, "keys": ctx.keys},
        {"action": "remove_workers", "workers": rec, "workers_for_slo": slo_c,
         **row_evidence(target, "expected_")},
        margin_conf(th.util_low_peak / max(rho_d, 1e-9)), over_provisioned_headline,
    )


def backlog_headline(evidence: Mapping[str, Any], recommendation: Mapping[str, Any]) -> str:
    c, rec = evidence.get("workers"), recommendation.get("workers")
    tail = f"; more workers: {c} → {rec}" if isinstance(rec, int) else ""
    return f"The backlog is growing: arrivals exceed what the workers complete{tail}"


def add_workers_headline(evidence: Mapping[str, Any], recommendation: Mapping[str, Any]) -> str:
    return f"More workers will help: {evidence.get('workers')} → {recommendation.get('workers')}"


def over_provisioned_headline(evidence: Mapping[str, Any], recommendation: Mapping[str, Any]
                              ) -> str:
    return f"Fewer workers would do: {evidence.get('workers')} → {recommendation.get('workers')}"
