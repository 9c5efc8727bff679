"""The verdicts of last resort: not enough data to size the queue, and healthy (nothing
else was found)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from models.bindings.headroom import headroom_text
from models.bindings.registry import limits
from models.formatting import percent_text, sig
from models.verdicts.ceilings import queue_headroom
from models.verdicts.context import Ctx
from models.verdicts.inputs import CORE_FIELDS
from models.verdicts.sizing import observed_wait_vs_slo, wait_p95_text
from models.verdicts.verdict import Kind, Verdict, fmt_s, make_verdict, num

__all__ = ["core_missing", "healthy", "healthy_headline", "insufficient",
           "insufficient_headline", "unusable"]


def core_missing(ctx: Ctx) -> list[str]:
    """The :data:`~models.verdicts.inputs.CORE_FIELDS` without a usable value (an idle queue —
    no adds — needs no work time: nothing to size)."""
    usable = {"arrival_rate_per_s": ctx.lam is not None, "service_mean_s": ctx.svc is not None,
              "workers": ctx.c is not None}
    missing = [f for f in CORE_FIELDS if not usable[f]]
    if missing == ["service_mean_s"] and ctx.lam == 0:
        return []  # idle: no passes to time, and nothing to size
    return missing


def insufficient(ctx: Ctx, found: Mapping[Kind, Verdict]) -> Verdict | None:
    missing_fields = core_missing(ctx)
    if not missing_fields:
        return None
    reasons = {f: ctx.s.missing.get(f) or ("not a usable value" if f == "service_mean_s"
                                           else "not measured") for f in missing_fields}
    summary = (
        "Not enough data to size this queue: missing "
        + "; ".join(f"{f} ({r})" for f, r in reasons.items()) + "."
    )
    return make_verdict(
        Kind.INSUFFICIENT_DATA, "warning", summary,
        {"missing": reasons, "rules_not_evaluated": dict(ctx.notes)},
        {"action": "collect_metrics",
         "steps": ["check that workqueue and controller-runtime metrics are scraped for this "
                   "queue (names, label selectors, leader election: only the leader reports)",
                   "set the worker count in the config if no max_concurrent_reconciles metric"]},
        0.9, insufficient_headline,
    )


def healthy(ctx: Ctx, found: Mapping[Kind, Verdict]) -> Verdict | None:
    s = ctx.s
    busy = num(s.busy_workers)
    rho = busy / ctx.c if busy is not None and ctx.c else None
    wait = num(s.queue_wait_p95_s)
    lam = ctx.lam
    least = None
    if lam is not None and lam == 0:
        summary = "Idle: no adds in the window; nothing to size."
    else:
        room = queue_headroom(ctx)
        least = room[0] if room else None
        summary = (
            "Healthy: "
            + (f"utilization {percent_text(rho)}" if rho is not None else "utilization n/a")
            + (f", wait p95 {wait_p95_text(s, wait)} within the {fmt_s(ctx.slo_s)} SLO"
               if observed_wait_vs_slo(s, ctx.slo_s) == "within" else "")
            + "; no contention, retry, hot-key or stuck-worker signs"
            + (f"; {headroom_text(least)}." if least is not None else ".")
        )
    return make_verdict(
        Kind.HEALTHY, "ok", summary,
        {"utilization": rho, "queue_wait_p95_s": wait, "arrival_rate_per_s": lam,
         "workers": ctx.c, "rules_not_evaluated": dict(ctx.notes),
         "headroom_ratio": least.ratio if least is not None else None,
         "headroom_limit": least.limit if least is not None else None,
         "shared_unmeasured": ctx.shared_unmeasured},
        {"action": "none"},
        0.6 if ctx.notes else 0.8, healthy_headline,
    )


def insufficient_headline(evidence: Mapping[str, Any], recommendation: Mapping[str, Any]
                          ) -> str:
    return "Not enough data to size this queue"


def healthy_headline(evidence: Mapping[str, Any], recommendation: Mapping[str, Any]) -> str:
    ratio, limit = evidence.get("headroom_ratio"), evidence.get("headroom_limit")
    if isinstance(ratio, float) and isinstance(limit, str) and limit in limits():
        label = limits()[limit].label.split(" (")[0]
        if evidence.get("shared_unmeasured"):
            # a limit nearer than this one may be there: the figure is an upper bound
            return (f"Healthy: headroom at most {sig(ratio)}× (to the {label}); something the "
                    "passes share fills with load, its ceiling not measured")
        return f"Healthy: headroom {sig(ratio)}× to the {label}"
    return "Healthy: no change needed"


def unusable(reason: str, problems: tuple[str, ...] = ()) -> Verdict:
    """The one verdict of a queue whose figures the models could not compute with (an error
    of one queue's arithmetic, never the fleet's): not enough usable data, and why."""
    return make_verdict(
        Kind.INSUFFICIENT_DATA, "warning",
        f"Not enough usable data to evaluate this queue: {reason.rstrip('.')}.",
        {"missing": {}, "error": reason, "problems": list(problems)},
        {"action": "collect_metrics",
         "steps": ["check the queue's series (and the config's values for it): the figures "
                   "named above cannot be computed with"]},
        0.9, insufficient_headline,
    )
