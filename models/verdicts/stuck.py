"""Stuck workers: a pass never finishes — a Get without Done on some return path, or a call
with no timeout (``workqueue_longest_running_processor_seconds``,
``deriv(workqueue_unfinished_work_seconds)``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from models.verdicts.context import Ctx, paired, trend_slope
from models.verdicts.verdict import Kind, Verdict, fmt_s, make_verdict, margin_conf, num

__all__ = ["headline", "stuck_workers"]


def stuck_workers(ctx: Ctx, found: Mapping[Kind, Verdict]) -> Verdict | None:
    s, th = ctx.s, ctx.th
    growth = num(s.unfinished_work_growth)
    longest = num(s.longest_running_s)
    if longest is None and growth is None:
        ctx.notes["stuck_workers"] = "needs longest_running_s or unfinished_work_growth"
        return None
    normal = max(num(s.work_p99_s) or 0.0, ctx.svc or 0.0)
    floor_s = max(th.stuck_longest_min_s, th.stuck_longest_vs_p99 * normal)
    long_enough = longest is not None and longest >= floor_s
    if not long_enough:
        return None  # nothing else can make it stuck (the trend below only confirms)
    slope = None
    p = paired(ctx.h, "longest_running_s")
    if p is not None and p[0].size >= th.min_history_points:
        tail = max(int(th.min_history_points), p[0].size // 3)  # the recent third of the range
        slope = trend_slope(p[0][-tail:], p[1][-tail:])
    growing = growth is not None and growth >= th.stuck_growth_min
    rising = slope is not None and slope >= th.stuck_slope_min
    if not (growing or rising):
        return None
    stuck_items = growth if growth is not None and growth > 0 else None
    conf = margin_conf((longest or 0.0) / floor_s, 0.6) + (0.1 if growing and rising else 0.0)
    summary = (
        f"A pass has been running for {fmt_s(longest)} (normal worst pass {fmt_s(normal)}) "
        "and in-flight work keeps ageing: a worker is stuck — a Get without Done on some return "
        "path, or a call with no timeout."
    )
    return make_verdict(
        Kind.STUCK_WORKERS, "critical", summary,
        {"longest_running_s": longest, "unfinished_work_s": num(s.unfinished_work_s),
         "unfinished_work_growth": growth, "stuck_items_estimate": stuck_items,
         "longest_running_slope_s_per_s": slope, "normal_worst_pass_s": normal,
         "threshold_longest_s": floor_s},
        {"action": "fix_stuck_worker",
         "steps": ["pair every Get with Done on all return paths (defer Done)",
                   "put a timeout/context deadline on external calls",
                   "honor context cancellation at shutdown",
                   "restarting the pod frees the worker but does not fix the cause"]},
        conf, headline,
    )


def headline(evidence: Mapping[str, Any], recommendation: Mapping[str, Any]) -> str:
    return "A worker is stuck: a pass never finishes"
