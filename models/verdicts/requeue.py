"""Requeue misuse: retries without errors — the controller's own planned requeues
(RequeueAfter polling, ``Requeue`` without an error through the per-key rate limiter,
AddRateLimited for planned delays).

A polling controller whose requested period is known (the profile's ``poll_periods``) is
also checked for late polls (:mod:`models.bindings.polling`): when the queue wait is a tenth
of the period or more, the verdict names the workers as the limit, makes the demand with the
period restored the queue's design demand (the observed adds are held down by the late polls
themselves) and recommends the sweep's count there — the fewest workers whose mean wait is
back under a tenth of the period, and at least the utilization target's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from models.bindings.polling import OVERRUN_SHARE_MIN, poll_overrun
from models.formatting import percent_text
from models.verdicts.context import Ctx, error_rate
from models.verdicts.sizing import row_evidence, size_at
from models.verdicts.verdict import (
    Kind,
    Severity,
    Verdict,
    fmt_s,
    make_verdict,
    margin_conf,
    num,
)

__all__ = ["headline", "requeue_misuse"]


def requeue_misuse(ctx: Ctx, found: Mapping[Kind, Verdict]) -> Verdict | None:
    s, th = ctx.s, ctx.th
    retries = num(s.retries_per_s)
    adds = num(s.arrival_rate_per_s)
    errors = error_rate(s)
    results = {k: v for k, v in (s.reconcile_results_per_s or {}).items() if num(v) is not None}
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
            f"RequeueAfter on {percent_text(ra_share)} of passes: the controller polls on a timer "
            "instead of reacting to watch events (watch the dependency, or lengthen the interval)")
    if rq_share is not None and rq_share >= th.requeue_share:
        patterns.append(
            f"Requeue without an error on {percent_text(rq_share)} of passes: it goes through the "
            "per-key rate limiter (5 ms doubling, reset by Forget) — a tight requeue loop; use "
            "RequeueAfter with a deliberate delay, or return an error if it is a failure")
    if not patterns and quiet and planned >= th.planned_requeue_share:
        patterns.append(
            f"{percent_text(planned)} of adds are rate-limited re-adds without an error "
            "(AddRateLimited used for planned requeues): use AddAfter for a deliberate delay")
    if not patterns or not quiet:
        return None
    strength = max(planned / th.planned_requeue_share,
                   (rq_share or 0.0) / th.requeue_share if th.requeue_share else 0.0)
    summary = (f"Retries without errors: {percent_text(planned)} of adds are the controller's own "
               f"requeues. Likely pattern: {patterns[0]}.")
    evidence: dict[str, Any] = {
        "retries_per_s": retries, "errors_per_s": errors, "arrival_rate_per_s": adds,
        "planned_requeue_share_of_adds": planned, "requeue_after_share": ra_share,
        "requeue_share": rq_share}
    recommendation: dict[str, Any] = {"action": "fix_requeue_pattern", "patterns": patterns}
    severity: Severity = "warning"
    if ra_share is not None and ra_share >= th.planned_requeue_share:
        blocked = next((k for k in (Kind.CONTENTION, Kind.HOT_KEY, Kind.STUCK_WORKERS)
                        if k in found), None)
        late = _late_polls(ctx, results.get("requeue_after", 0.0), adds, evidence, blocked)
        if late is not None:
            recommendation.update(late)
            severity = "critical"
            summary += (f" The polls come late: every {fmt_s(evidence['poll_requested_s'])} "
                        f"asked, every {fmt_s(evidence['poll_effective_s'])} got; "
                        f"{late['workers']} workers bring the period back.")
    return make_verdict(Kind.REQUEUE_MISUSE, severity, summary, evidence, recommendation,
                        margin_conf(strength), headline)


def _late_polls(ctx: Ctx, polls_per_s: float, adds_per_s: float, evidence: dict[str, Any],
                blocked: Kind | None = None) -> dict[str, Any] | None:
    """The polling check (module docstring): fills ``evidence`` and returns the
    recommendation's worker fields when the polls are late and more workers bring them
    back."""
    period = ctx.poll_period_s
    evidence.update(poll_requested_s=period, poll_effective_s=None, poll_overrun=None,
                    poll_note=None)
    if period is None:
        evidence["poll_note"] = (
            "the requested RequeueAfter period is in no metric: set it in the profile "
            "(profile.poll_periods: {queue: 30s}) to check whether the polls come late")
        return None
    wait = num(ctx.s.queue_wait_mean_s)
    found = poll_overrun(period, polls_per_s, ctx.svc or 0.0, wait if wait is not None
                         else -1.0, adds_per_s)
    if found is None:
        evidence["poll_note"] = "needs the mean work time and the mean queue wait"
        return None
    evidence.update(poll_effective_s=found.effective_s, poll_late_s=found.late_s,
                    poll_wait_share=found.wait_share, poll_keys=found.keys,
                    poll_demand_restored_per_s=found.demand_restored_per_s,
                    poll_overrun=found.overrun)
    if not found.overrun or ctx.c is None or ctx.svc is None:
        return None
    if blocked is not None:
        evidence["poll_note"] = (f"the polls come late, but the {blocked.value} verdict found "
                                 "a limit that is not the worker count: more workers would not "
                                 "bring the period back")
        return None
    lam = found.demand_restored_per_s
    _, _, table = size_at(ctx, lam)
    ok = np.flatnonzero(table.stable & (table.wait_mean_s <= OVERRUN_SHARE_MIN * period))
    if ok.size == 0:
        evidence["poll_note"] = (f"no worker count up to {int(table.workers[-1])} brings the "
                                 "wait under a tenth of the period")
        return None
    restore = int(table.workers[ok[0]])
    rec = max(restore, table.design_workers() or restore)
    if rec <= ctx.c:
        return None
    ctx.lam_design = max(ctx.lam_design or 0.0, lam)  # the demand with the period restored
    evidence.update(binding_limit="workers", workers=ctx.c)
    return {"workers": rec, "workers_for_slo": restore,
            **row_evidence(table.row(rec), "expected_")}


def headline(evidence: Mapping[str, Any], recommendation: Mapping[str, Any]) -> str:
    rec = recommendation.get("workers")
    if isinstance(rec, int) and evidence.get("poll_overrun"):
        return (f"Polls come late (every {fmt_s(evidence.get('poll_effective_s'))} for "
                f"{fmt_s(evidence.get('poll_requested_s'))} asked): more workers "
                f"{evidence.get('workers')} → {rec}")
    return "Requeues without errors: the controller polls instead of reacting"
