"""Signals the pages and the report derive from collected data, defined once.

Plain Python, no Dash and no Plotly, so the ``report`` command can use it without loading
either. Only bookkeeping lives here (ratios of two measured values on common times); queueing
formulas stay in :mod:`models`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from models.measurements import QueueSnapshot

Series = tuple[Sequence[float], Sequence[float]]
"""(unix seconds, values) of one signal; missing points are absent (never NaN or 0)."""


def ratio(num: float | None, den: float | None) -> float | None:
    """num ÷ den, or None when either is missing, ``den`` is not positive or the result is
    not finite (a missing value is never shown as 0)."""
    if num is None or den is None or not den > 0:
        return None
    out = num / den
    return out if math.isfinite(out) else None


def capacity_per_s(q: QueueSnapshot) -> float | None:
    """c·μ = workers ÷ mean work time (items/s), or None when either is missing."""
    return ratio(q.workers, q.service_mean_s)


def combine(a: Series | None, b: Series | None, op: str = "div") -> Series:
    """Pointwise a ÷ b on the times both series have, where b > 0 (see :func:`ratio`).

    ``op`` must be ``"div"`` (the only operation the pages need)."""
    if op != "div":
        raise ValueError(f"unknown operation {op!r}")
    if a is None or b is None:
        return ([], [])
    right = dict(zip(b[0], b[1], strict=True))
    ts: list[float] = []
    vs: list[float] = []
    for t, x in zip(a[0], a[1], strict=True):
        v = ratio(x, right.get(t))
        if v is not None:
            ts.append(t)
            vs.append(v)
    return ts, vs
