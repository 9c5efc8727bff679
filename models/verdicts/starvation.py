"""Priority starvation: low-priority items of controller-runtime's priority queue never
reach a worker while higher priorities keep every worker busy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from models.formatting import percent_text, sig
from models.verdicts.context import Ctx
from models.verdicts.verdict import Kind, Verdict, make_verdict, margin_conf, num

__all__ = ["headline", "priority_starvation"]


def priority_starvation(ctx: Ctx, found: Mapping[Kind, Verdict]) -> Verdict | None:
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
    busy = num(s.busy_workers)
    if low_min < 1 or busy is None or busy / ctx.c < th.starvation_util_min:
        return None
    if not any(depth == 0 for p, (_, depth) in lows.items() if p > low_p):
        # every priority stayed backlogged: an overload of the whole queue (backlog_growing
        # says so), not the low items passed over while higher ones drain
        return None
    now = dict(s.depth_by_priority or {})
    summary = (f"Items of priority {low_text} waited the whole window (at least "
               f"{sig(low_min)} queued throughout) while the workers were "
               f"{percent_text(busy / ctx.c)} busy with higher priorities: the priority queue "
               "serves them only when nothing of higher priority is waiting. The wait "
               "figures blend every priority (only the depth carries one).")
    return make_verdict(
        Kind.PRIORITY_STARVATION, "warning", summary,
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
        margin_conf(busy / ctx.c / th.starvation_util_min), headline,
    )


def headline(evidence: Mapping[str, Any], recommendation: Mapping[str, Any]) -> str:
    return (f"Low-priority items starve (priority {evidence.get('lowest_priority')}): "
            "higher priorities keep every worker busy")
