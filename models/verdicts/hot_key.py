"""Hot key: items wait while workers are idle — one key processed serially (a workqueue
never runs a key on two workers)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from models.formatting import number_text, percent_text, sig
from models.verdicts.context import Ctx, paired
from models.verdicts.sizing import mmc_wait
from models.verdicts.verdict import Kind, Verdict, fmt_s, make_verdict, margin_conf, num

__all__ = ["headline", "hot_key"]


def hot_key(ctx: Ctx, found: Mapping[Kind, Verdict]) -> Verdict | None:
    """Items wait while workers are idle: a key processed serially. With the depth at the
    scrapes where a worker was idle (``depth_while_idle``, paired per scrape) the rule needs
    no averages; without it, mean depth and wait against M/M/c at the mean utilization —
    which a lock or a load peak can also produce (items waiting at the busy instants, workers
    idle at the quiet ones), so that form is not given when contention was found."""
    s, th = ctx.s, ctx.th
    contention = found.get(Kind.CONTENTION)
    lam, svc, c = ctx.lam, ctx.svc, ctx.c
    dwi = num(s.depth_while_idle)
    depth = dwi if dwi is not None else num(s.depth_mean)
    wait = num(s.queue_wait_mean_s)
    if lam is None or svc is None or c is None or (depth is None and wait is None):
        ctx.notes["hot_key"] = "needs arrival rate, service time, workers and depth or wait"
        return None
    busy = num(s.busy_workers)
    if busy is None:
        busy = lam * svc
    rho = busy / c
    idle = c - busy
    if dwi is not None:
        if dwi < th.hot_depth_idle_min or lam <= 0:
            return None
    else:
        if contention is not None:
            ctx.notes["hot_key"] = ("not told from the contention found: without "
                                    "depth_while_idle the averages cannot separate them")
            return None
        if rho > th.hot_util_max or idle < th.hot_idle_min or lam <= 0:
            return None
    if lam * svc >= c:
        return None
    wq_pred, lq_pred = ctx.mmc if ctx.mmc is not None else mmc_wait(lam, svc, c)
    tiny = 1e-9
    depth_x = depth / max(lq_pred, tiny) if depth is not None else None
    wait_x = wait / max(wq_pred, tiny) if wait is not None else None
    # With the paired signal M/M/c is only context: it predicts no depth at all at an instant
    # with a worker free, so the threshold alone decides; the averaged form needs the excess.
    by_depth = depth is not None and (
        depth >= th.hot_depth_idle_min if dwi is not None
        else depth >= th.hot_depth_min and (depth_x or 0) >= th.hot_excess)
    by_wait = (dwi is None and wait is not None and wait >= th.hot_wait_min_s
               and (wait_x or 0) >= th.hot_excess)
    if not (by_depth or by_wait):
        return None
    # "Sustained": share of range points with depth above the threshold and idle workers.
    sustained = None
    p = paired(ctx.h, "depth", "busy_workers", "workers")
    if p is not None and p[0].size >= th.min_history_points:
        sustained = float(np.mean((p[1] >= th.hot_depth_min) & (p[3] - p[2] >= th.hot_idle_min)))
    excess = max(depth_x or 0.0, wait_x or 0.0)
    conf = margin_conf(excess / th.hot_excess) + (
        0.05 if sustained is not None and sustained >= 0.8 else 0.0)
    conflicts = None
    calls = num(s.api_calls_per_s)
    if calls:
        conflicts = (num((s.api_calls_by_class_per_s or {}).get("409")) or 0.0) / calls
    summary = (
        (f"Keys wait while workers are free: depth × [a worker idle], paired at each instant "
         f"and averaged, is {number_text(depth)} (utilization {percent_text(rho)}). client-go "
         "hands a "
         "queued key to a free worker at once, so with a worker free only a key dirty behind "
         "its own pass can wait. One key is being processed serially; more workers cannot "
         "help." if dwi is not None else "")
        or f"Items wait with {sig(idle)} of {c} workers idle (utilization {percent_text(rho)}): "
        + (f"mean depth {sig(depth)} vs {sig(lq_pred)} predicted" if depth is not None else "")
        + (", " if depth is not None and wait is not None else "")
        + (f"mean wait {fmt_s(wait)} vs {fmt_s(wq_pred)} predicted" if wait is not None else "")
        + " by M/M/c. One key is being processed serially; more workers cannot help."
    )
    return make_verdict(
        Kind.HOT_KEY, "warning", summary,
        {"depth_mean": num(s.depth_mean), "depth_while_idle": dwi,
         "depth_predicted": lq_pred, "queue_wait_mean_s": wait,
         "queue_wait_predicted_s": wq_pred, "utilization": rho, "idle_workers": idle,
         "workers": c, "sustained_fraction_of_range": sustained, "share_409": conflicts},
        {"action": "split_hot_key",
         "steps": ["find the key that is always dirty (per-key logs or traces)",
                   "split its work into smaller objects or keys, or make its pass cheaper",
                   "coalescing already merges its events; the pass itself is the bottleneck",
                   "do not add workers: a key is never processed by two workers at once"]},
        conf, headline,
    )


def headline(evidence: Mapping[str, Any], recommendation: Mapping[str, Any]) -> str:
    return "More workers will not help: one key is processed serially"
