"""The queueing figures the capacity rules size with: the what-if sweep at a demand, the
M/M/c wait, and the observed wait against the SLO as far as its histogram bucket proves it.

Queueing numbers (the wait at a worker count) come from the what-if sweep
(:func:`models.whatif.whatif_tables`, the column form of :func:`models.whatif.whatif_sweep`:
M/M/c, or the finite-key M/M/c//K model when the key count is known).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from models.histogram import classify_quantile
from models.limits import MAX_WORKERS
from models.measurements import QueueSnapshot
from models.queueing import erlang_c
from models.verdicts.context import Ctx, core_inputs
from models.verdicts.verdict import fmt_s, num
from models.whatif import WhatIfInputs, WhatIfRow, WhatIfTable, whatif_tables

__all__ = [
    "mmc_wait",
    "observed_wait_vs_slo",
    "row_evidence",
    "size_at",
    "sweep_at",
    "sweep_inputs",
    "wait_p95_bucket",
    "wait_p95_text",
]


def mmc_wait(lam: float, svc: float, c: int) -> tuple[float, float]:
    """(mean wait Wq, mean queue length Lq) of M/M/c at λ, μ = 1 / E[S], c (Erlang C:
    :func:`models.queueing.erlang_c`)."""
    mmc = erlang_c(lam, 1.0 / svc, c)
    return float(mmc.wait_mean_s), float(mmc.queue_length_mean)


def sweep_inputs(ctx: Ctx, lam: float) -> WhatIfInputs:
    """The sweep :func:`size_at` runs at λ: c = 1 .. max(2c, ⌈λ·E[S] / util_target⌉ + 2,
    ⌈λ·E[S]⌉ + 8, 16), with the SLO and the utilization target of the recommendation."""
    _, svc, c = core_inputs(ctx)
    load = lam * svc
    for_target = max(1, math.ceil(load / ctx.th.util_target - 1e-9))
    hi = max(2 * c, for_target + 2, math.ceil(load) + 8, 16)
    return WhatIfInputs(
        arrival_rate_per_s=lam, service_mean_s=svc, keys=ctx.keys,
        workers_min=1, workers_max=min(max(hi, 2), MAX_WORKERS),
        slo_wait_s=ctx.slo_s, slo_quantile=ctx.th.slo_quantile,
        utilization_target=ctx.th.util_target,
    )


def sweep_at(ctx: Ctx, lam: float) -> WhatIfTable:
    table = ctx.sweeps.get(lam)
    if table is None:
        table = ctx.sweeps[lam] = whatif_tables([sweep_inputs(ctx, lam)])[0]
    return table


def size_at(ctx: Ctx, lam: float) -> tuple[int | None, int | None, WhatIfTable]:
    """(smallest c meeting the SLO at λ, recommended c, sweep): the sweep's one worker-count
    rule — the SLO, and utilization ≤ ``util_target`` (:meth:`WhatIfTable.design_workers`)."""
    res = sweep_at(ctx, lam)
    meets = np.flatnonzero(res.meets_slo(ctx.th.slo_quantile))
    if meets.size == 0:
        return None, None, res
    slo_c = int(res.workers[meets[0]])
    return slo_c, max(slo_c, res.design_workers() or slo_c), res


def row_evidence(row: WhatIfRow | None, prefix: str) -> dict[str, Any]:
    if row is None:
        return {}
    return {f"{prefix}wait_mean_s": row.wait_mean_s, f"{prefix}wait_p95_s": row.wait_p95_s,
            f"{prefix}p_wait_over_slo": row.p_wait_over_slo,
            f"{prefix}utilization": row.utilization}


def wait_p95_bucket(s: QueueSnapshot) -> tuple[float, float] | None:
    """(lo, hi] of the histogram bucket the observed queue-wait p95 fell in, when the signals
    carry it (``QueueSnapshot.quantile_bounds``; read with ``getattr`` so that a signals object
    without bounds — a test fake, a quantile Prometheus computed — still satisfies
    :class:`~models.measurements.QueueSnapshot`)."""
    bounds: Mapping[str, tuple[float, float]] = getattr(s, "quantile_bounds", None) or {}
    b = bounds.get("queue_wait_p95_s")
    if b is None or math.isnan(b[0]) or math.isnan(b[1]):
        return None
    return float(b[0]), float(b[1])


def observed_wait_vs_slo(s: QueueSnapshot, slo_s: float) -> str | None:
    """``"above"``, ``"within"`` or ``"uncertain"``: the observed queue-wait p95 against the SLO
    as far as its histogram bucket proves it; None when the p95 is not measured.

    The true p95 lies in its bucket ``(lo, hi]`` (:func:`models.histogram.bucket_quantile`).
    A bucket at most ×2 wide is compared by the interpolated value, the number the pages show
    (right within ×2, :func:`models.histogram.classify_quantile`); a wider (decade) bucket or
    the +Inf bucket by its bounds: **above** when ``lo >= SLO`` (every value in the bucket
    exceeds it), **within** when ``hi <= SLO``, **uncertain** when the SLO lies inside the
    bucket or the buckets contradict the mean wait. Without bounds the value is compared as it
    is. Rules act on an observation only when it is proven, in both directions: an observed
    miss needs "above" (with p95 "between 1 s and 10 s" and a 2 s SLO the miss is a guess of the
    interpolation; the model's own SLO test and the utilization rule still apply), and removing
    workers needs "within" (a p95 that may exceed the SLO keeps its workers)."""
    observed = num(s.queue_wait_p95_s)
    if observed is None:
        return None
    bucket = wait_p95_bucket(s)
    if bucket is not None:
        lo, hi = bucket
        kind = classify_quantile(lo, hi, q=0.95, mean=num(s.queue_wait_mean_s)).kind
        if kind != "exact":
            if kind == "unsupported" and not math.isinf(hi):
                return "uncertain"  # the buckets contradict the mean: neither is proof
            return "above" if lo >= slo_s else "within" if hi <= slo_s else "uncertain"
    return "above" if observed > slo_s else "within"


def wait_p95_text(s: QueueSnapshot, wait: float | None) -> str:
    """The observed p95 as its bucket supports it: the value, or "≤ hi" for a wider bucket."""
    bucket = wait_p95_bucket(s)
    if bucket is None or classify_quantile(*bucket).kind == "exact":
        return fmt_s(wait)
    return f"≤ {fmt_s(bucket[1])}"
