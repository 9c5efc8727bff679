"""A ceiling read from the history's worker-count steps.

A worker-count step under load is the most informative history a queue can have: with every
worker busy, c independent workers complete c / E[S] items/s, so throughput follows the count
(Little's law: busy = throughput × work time, and the work time of independent passes does not
depend on the load). When the count rose, every worker stayed busy and the throughput did
*not* follow, something the passes share set the pace — a lock, a connection pool, a
downstream or external rate limit the API-client metrics never see. That throughput is the
ceiling; more workers only lengthen each pass.

The test (:func:`step_ceiling`): group the history's points by their (rounded) worker count;
keep the levels held for at least ``min_points`` points whose median busy workers are at least
``busy_share_min`` of the count (saturated: the queue, not the demand, set the throughput);
compare the two highest saturated levels c₁ < c₂ by the scaling efficiency

    e = (X(c₂) / X(c₁) − 1) / (c₂ / c₁ − 1)

(1 for independent workers, 0 for a flat ceiling, negative past a coherency peak), with X the
level's median throughput (medians: a point whose rate window straddles the step is an outlier
of its level, not a shift of it). A limit binds when e is below ``scaling_max``; the ceiling is
the throughput at c₂.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["StepCeiling", "step_ceiling"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class StepCeiling:
    """Two saturated worker-count levels of the history and how throughput scaled between."""

    workers_low: int
    workers_high: int
    throughput_low_per_s: float
    throughput_high_per_s: float
    service_low_s: float | None
    """Median work time at the lower count (None where not measured)."""
    efficiency: float
    """e of the module docstring."""
    points_low: int
    points_high: int
    levels: int
    """How many saturated levels the history held."""


def step_ceiling(workers: FloatArray, throughput_per_s: FloatArray, busy_workers: FloatArray,
                 service_mean_s: FloatArray, *, min_points: int, busy_share_min: float,
                 usable: npt.NDArray[np.bool_] | None = None) -> StepCeiling | None:
    """The two highest saturated worker-count levels and their scaling (module docstring), or
    None when the history holds fewer than two such levels. ``usable`` masks points out (e.g.
    those dominated by failures and retries)."""
    w = np.asarray(workers, dtype=np.float64)
    x = np.asarray(throughput_per_s, dtype=np.float64)
    b = np.asarray(busy_workers, dtype=np.float64)
    s = np.asarray(service_mean_s, dtype=np.float64)
    ok = np.isfinite(w) & np.isfinite(x) & np.isfinite(b) & (w >= 0.5) & (x > 0)
    if usable is not None:
        ok &= usable
    if np.count_nonzero(ok) < 2 * min_points:
        return None
    counts = np.rint(w[ok]).astype(np.int64)
    xs, bs, ss = x[ok], b[ok], s[ok]
    whole = counts >= 1  # np.rint(0.5) is 0: not a worker count
    counts, xs, bs, ss = counts[whole], xs[whole], bs[whole], ss[whole]
    present = np.unique(counts)
    if present.size < 2:  # one worker count over the whole range (most queues): no step
        return None
    levels: list[tuple[int, float, float | None, int]] = []
    for c in present.tolist():
        sel = counts == c
        n = int(np.count_nonzero(sel))
        if n < min_points or float(np.median(bs[sel])) < busy_share_min * c:
            continue
        svc = ss[sel][np.isfinite(ss[sel])]
        levels.append((int(c), float(np.median(xs[sel])),
                       float(np.median(svc)) if svc.size else None, n))
    if len(levels) < 2:
        return None
    (c1, x1, s1, n1), (c2, x2, _, n2) = levels[-2], levels[-1]
    eff = (x2 / x1 - 1.0) / (c2 / c1 - 1.0)
    if not math.isfinite(eff):
        return None
    return StepCeiling(c1, c2, x1, x2, s1, eff, n1, n2, len(levels))
