"""Coherency binds: throughput falls past a peak worker count (USL κ > 0).

Named by the contention reason ``usl`` when the fitted peak N* lies within 1 … c and no
measured worker-count step contradicts it (a step that did not fall is a plateau: a shared
limit, whatever peak the fitted curve puts inside the range). Rows: the USL fitted on the
range, X(N) = γN / (1 + σ(N − 1) + κN(N − 1)) (Gunther, *Guerrilla Capacity Planning*, 2007).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from models.bindings.registry import BindingLimit, Option, register

__all__ = ["LIMIT"]


def _peak_within(reasons: Mapping[str, str], evidence: Mapping[str, Any], c: int | None
                 ) -> bool:
    peak = evidence.get("usl_peak_workers")
    step = evidence.get("step_scaling_efficiency")
    fell = not isinstance(step, float) or step < 0
    return isinstance(peak, float) and c is not None and 1 <= peak <= c and fell


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
))
