"""Coherency binds: throughput falls past a peak worker count (USL κ > 0).

Named by the contention reason ``usl`` when the fitted peak N* lies within 1 … c, the range
had every worker busy at c ≥ N* (on a queue that keeps up, the throughput is the demand's
and pass times that grow with load trace a curve whose "peak" is where the demand turned —
a pool's plateau read as a fall, issue 35's pool-a) and no measured worker-count
step contradicts it (a step that did not fall is a plateau: a shared limit, whatever peak
the fitted curve puts inside the range). Ceiling: the fitted curve's X(N*) under the same
conditions. Rows: the USL fitted on the
range, X(N) = γN / (1 + σ(N − 1) + κN(N − 1)) (Gunther, *Guerrilla Capacity Planning*, 2007).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from models.bindings.measured import CeilingInputs, MeasuredCeiling
from models.bindings.registry import BindingLimit, Option, register
from models.formatting import sig

__all__ = ["LIMIT"]


SATURATED_SHARE = 0.9
"""Busy workers ÷ c from which a point is saturated (every worker busy): only there is the
throughput the workers', not the demand's (the contention rule's step threshold, 0.9, too)."""


def saturated_past(peak: float, reached: float, c: int | None) -> bool:
    """Whether the range shows throughput past a fitted peak N*: its busiest point had
    every worker busy (a queue that keeps up completes its demand, and a curve through its
    points falls only where the demand did) with c at or past N*."""
    return c is not None and peak <= c and reached >= SATURATED_SHARE * c


def _peak_within(reasons: Mapping[str, str], evidence: Mapping[str, Any], c: int | None
                 ) -> bool:
    peak = evidence.get("usl_peak_workers")
    step = evidence.get("step_scaling_efficiency")
    reached = evidence.get("busy_workers_max")
    fell = not isinstance(step, float) or step < 0
    past = not isinstance(reached, float) or (isinstance(peak, float)
                                              and saturated_past(peak, reached, c))
    return isinstance(peak, float) and c is not None and 1 <= peak <= c and fell and past


def _measure(i: CeilingInputs) -> MeasuredCeiling | None:
    fit, h = i.usl, i.history
    if fit is None or fit.peak_workers is None or fit.peak_throughput is None or h is None:
        return None
    busy = h.busy_workers[np.isfinite(h.busy_workers)]
    if busy.size == 0:
        return None
    reached = float(busy.max())
    if not saturated_past(fit.peak_workers, reached, i.workers):
        return MeasuredCeiling(
            "coherency", None, None, None,
            f"the fitted scaling curve peaks at N*≈{sig(fit.peak_workers)} busy workers, but "
            f"no point of the range had every worker busy past it (at most {sig(reached)} "
            "busy): the throughput there was the demand's, not a fall")
    return MeasuredCeiling(
        "coherency", fit.peak_throughput, None, None,
        f"the peak X(N*) of the scaling curve fitted on the range, at N*≈"
        f"{sig(fit.peak_workers)} busy workers (the range reached {sig(reached)}, every "
        "worker busy)")


LIMIT = register(BindingLimit(
    name="coherency",
    words="coherency (throughput falls past a peak worker count)",
    label="coherency (past the peak)",
    options=(
        Option("do not run more workers than the peak worker count",
               "none: past the peak every added worker lowers throughput"),
        Option("find what the workers coordinate on (a shared cache lock, a global map) and "
               "split it",
               "a code change; it moves the peak"),
    ),
    rows="usl",
    headline="throughput falls past a peak worker count",
    reasons=frozenset({"usl"}),
    confirm=_peak_within,
    precedence=50,
    knobs=("workers",),
    measure=_measure,
))
