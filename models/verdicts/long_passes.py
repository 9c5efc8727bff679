"""Long passes: a few passes do far more work than the rest and hold a worker meanwhile
(work p99 / p50, confirmed by the exact mean from ``_sum / _count``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from models.verdicts.context import Ctx
from models.verdicts.verdict import Kind, Verdict, fmt_s, make_verdict, margin_conf, num

__all__ = ["headline", "long_passes"]


def long_passes(ctx: Ctx, found: Mapping[Kind, Verdict]) -> Verdict | None:
    s, th = ctx.s, ctx.th
    p50, p99 = num(s.work_p50_s), num(s.work_p99_s)
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
    summary = (f"Work p99 is {fmt_s(p99)}, {ratio:.0f}× the median ({fmt_s(p50)}): a few "
               "passes do far more work than the rest and hold a worker meanwhile.")
    return make_verdict(
        Kind.LONG_PASSES, "info" if p99 < ctx.slo_s * 10 else "warning", summary,
        {"work_p50_s": p50, "work_p99_s": p99, "p99_over_p50": ratio,
         "service_mean_s": ctx.svc, "mean_over_p50": mean_ratio,
         "caveat": "quantiles are interpolated within histogram buckets"},
        {"action": "bound_passes",
         "steps": ["break the long pass into bounded actions and requeue (AddAfter) between "
                   "them, re-reading state each time so another update stays correct",
                   "move long external waits out of the worker (poll with RequeueAfter)"]},
        margin_conf(ratio / th.long_ratio), headline,
    )


def headline(evidence: Mapping[str, Any], recommendation: Mapping[str, Any]) -> str:
    return "A few passes hold their worker far longer than the rest"
