"""Requeue misuse: retries without errors — the controller's own planned requeues
(RequeueAfter polling, ``Requeue`` without an error through the per-key rate limiter,
AddRateLimited for planned delays)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from models.verdicts.context import Ctx, error_rate
from models.verdicts.verdict import Kind, Verdict, make_verdict, margin_conf, num

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
    return make_verdict(
        Kind.REQUEUE_MISUSE, "warning", summary,
        {"retries_per_s": retries, "errors_per_s": errors, "arrival_rate_per_s": adds,
         "planned_requeue_share_of_adds": planned, "requeue_after_share": ra_share,
         "requeue_share": rq_share},
        {"action": "fix_requeue_pattern", "patterns": patterns},
        margin_conf(strength), headline,
    )


def headline(evidence: Mapping[str, Any], recommendation: Mapping[str, Any]) -> str:
    return "Requeues without errors: the controller polls instead of reacting"
