"""Histogram quantiles from cumulative bucket counts: the one implementation queuelens uses.

Both the Prometheus source (bucket rates fetched with ``sum by (name, le) (rate(..._bucket))``)
and the embedded demo (bucket increases of the simulated fleet) compute their p50/p95/p99 here,
through :func:`models.signals.derive`, so the two sources cannot drift apart. Pure numpy: any
number of rows (queues × times) in one call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["QUANTILES", "QuantileResult", "bucket_quantile"]

QUANTILES = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
"""The quantiles every source reports, as (field suffix, q)."""


@dataclass(frozen=True)
class QuantileResult:
    values: np.ndarray
    """One value per row; NaN where undefined (see ``reason``)."""
    lower_bound: np.ndarray
    """True where the quantile fell in the +Inf bucket: the value is the highest finite
    bound, a lower bound of the true quantile."""
    reason: str | None = None


def bucket_quantile(q: float, bounds: Sequence[float], counts: npt.ArrayLike) -> QuantileResult:
    """The q-quantile of cumulative bucket counts, as PromQL ``histogram_quantile`` does.

    ``bounds``: the ``le`` values as floats (any order, duplicates allowed: they are merged;
    one of them must be +Inf). ``counts``: shape (rows, len(bounds)), e.g. one row per time
    step or per queue; NaN = bucket absent.

    Algorithm (prometheus/promql/quantile.go ``bucketQuantile``, v2.x): sort by bound, merge
    equal bounds, force the counts monotonic, rank = q·count(+Inf); find the first bucket whose
    count reaches the rank and interpolate linearly inside it (from 0 for the first bucket,
    unless its bound is <= 0, which is returned as is); a rank in the +Inf bucket returns the
    highest finite bound; NaN when there are no observations.
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"a quantile must be in [0, 1], got {q!r}")
    counts = np.atleast_2d(np.asarray(counts, dtype=float))
    b = np.asarray(bounds, dtype=float)
    if counts.shape[-1] != len(b):
        raise ValueError(f"{len(b)} bucket bounds but {counts.shape[-1]} counts per row")
    rows = counts.shape[0]
    nan = np.full(rows, np.nan)
    no = np.zeros(rows, dtype=bool)
    if not math.isinf(b.max(initial=-math.inf)) or b.max() < 0:
        return QuantileResult(nan, no, "the histogram has no +Inf bucket")
    uniq, inverse = np.unique(b, return_inverse=True)
    if len(uniq) < 2:
        return QuantileResult(nan, no, "the histogram has fewer than two buckets")
    clean = np.nan_to_num(counts, nan=0.0)
    if len(uniq) == len(b):  # the usual case: a column permutation, no merging needed
        merged = np.empty_like(clean)
        merged[:, inverse] = clean
    else:
        merged = np.zeros((rows, len(uniq)))
        np.add.at(merged.T, inverse, clean.T)
    merged = np.maximum.accumulate(merged, axis=1)
    total = merged[:, -1]
    rank = q * total
    finite = merged[:, :-1]
    reached = finite >= rank[:, None]
    idx = np.where(reached.any(axis=1), reached.argmax(axis=1), len(uniq) - 1)
    upper = uniq[idx]
    lower = np.where(idx > 0, uniq[np.maximum(idx - 1, 0)], 0.0)
    prev = np.where(idx > 0, np.take_along_axis(merged, np.maximum(idx - 1, 0)[:, None], 1)[:, 0],
                    0.0)
    cur = np.take_along_axis(merged, idx[:, None], 1)[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        value = lower + (upper - lower) * (rank - prev) / (cur - prev)
    in_inf = idx == len(uniq) - 1
    value = np.where(in_inf, uniq[-2], value)
    value = np.where((idx == 0) & (uniq[0] <= 0), uniq[0], value)
    value = np.where(total > 0, value, np.nan)
    return QuantileResult(value, in_inf & (total > 0),
                          None if (total > 0).all() else "no observations in the window")
