"""Histogram quantiles from cumulative bucket counts: the one implementation queuelens uses.

Both the Prometheus source (bucket rates fetched with ``sum by (name, le) (rate(..._bucket))``)
and the embedded demo (bucket increases of the simulated fleet) compute their p50/p95/p99 here,
through :func:`models.signals.derive`, so the two sources cannot drift apart. Pure numpy: any
number of rows (queues × times) in one call.

:func:`bucket_quantile` gives PromQL's number *and* the bucket ``(lo, hi]`` the rank fell in;
:func:`classify_quantile` says how much of that number the buckets support (a value, a range
or nothing: the rule and its reasons are in its docstring). client-go's workqueue histograms
have decade buckets (controller-runtime: 1e-8 … 1000 s; component-base: 1e-8 … 10 s), so a
linearly interpolated quantile inside one of them is a guess within a factor 10.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from models.formatting import sig

__all__ = [
    "EXACT_RATIO",
    "QUANTILES",
    "QuantileClass",
    "QuantileKind",
    "QuantileResult",
    "bucket_quantile",
    "classify_quantile",
    "parse_le",
]

QUANTILES = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
"""The quantiles every source reports, as (field suffix, q)."""

EXACT_RATIO = 2.0
"""A quantile whose bucket has ``hi / lo`` at most this is shown as a number; a wider bucket
as a range. Both the true quantile and PromQL's interpolated value lie in ``(lo, hi]``, so their
ratio is within ``(lo/hi, hi/lo)``: at ×2 the number is right within a factor 2, which is as
coarse as a single figure can be and still be compared with an SLO or another queue; a decade
bucket (×10) would let a "0.5 s" mean anything from 0.1 s to 1 s."""

QuantileKind = Literal["exact", "range", "unsupported"]
"""``exact``: the interpolated value, good within ×:data:`EXACT_RATIO`; ``range``: only
``(lo, hi]`` is known; ``unsupported``: the buckets give no two-sided statement (the +Inf
bucket: only ``> lo``) or contradict the measured mean."""

_LOG_CONCAVE_Q = 1.0 - 1.0 / math.e
"""Above this q, the q-quantile of a log-concave distribution is at least its mean (see
:func:`classify_quantile`)."""


@dataclass(frozen=True)
class QuantileResult:
    values: np.ndarray
    """One value per row; NaN where undefined (see ``reason``)."""
    lower_bound: np.ndarray
    """True where the quantile fell in the +Inf bucket: the value is the highest finite
    bound, a lower bound of the true quantile."""
    bucket_lo: np.ndarray
    """Lower bound of the bucket the rank fell in, per row: the previous ``le``; 0 for the
    first bucket (PromQL interpolates it from 0), −inf when that first bound is <= 0 (PromQL
    returns the bound itself); NaN where ``values`` is NaN."""
    bucket_hi: np.ndarray
    """Upper bound (the ``le``) of that bucket: +inf for the +Inf bucket; NaN where ``values``
    is NaN. The true quantile lies in ``(bucket_lo, bucket_hi]``."""
    reason: str | None = None


def bucket_quantile(q: float, bounds: Sequence[float], counts: npt.ArrayLike) -> QuantileResult:
    """The q-quantile of cumulative bucket counts, as PromQL ``histogram_quantile`` does, and the
    bucket it fell in.

    ``bounds``: the ``le`` values as floats (any order, duplicates allowed: they are merged;
    one of them must be +Inf). ``counts``: shape (rows, len(bounds)), e.g. one row per time
    step or per queue; NaN = bucket absent.

    Algorithm (prometheus/promql/quantile.go ``bucketQuantile``, v2.x): sort by bound, merge
    equal bounds, force the counts monotonic, rank = q·count(+Inf); find the first bucket whose
    count reaches the rank and interpolate linearly inside it (from 0 for the first bucket,
    unless its bound is <= 0, which is returned as is); a rank in the +Inf bucket returns the
    highest finite bound; NaN when there are no observations.

    The bucket found is ``(bucket_lo, bucket_hi]``: the count up to ``bucket_lo`` is below the
    rank and the count up to ``bucket_hi`` reaches it, so the true quantile
    ``inf{x : F(x) >= q}`` lies in it whatever the distribution — the interpolated value is one
    guess inside it.
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
        return QuantileResult(nan, no, nan, nan, "the histogram has no +Inf bucket")
    uniq, inverse = np.unique(b, return_inverse=True)
    if len(uniq) < 2:
        return QuantileResult(nan, no, nan, nan, "the histogram has fewer than two buckets")
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
    first_at_or_below_zero = (idx == 0) & (uniq[0] <= 0)
    value = np.where(first_at_or_below_zero, uniq[0], value)
    value = np.where(total > 0, value, np.nan)
    defined = np.isfinite(value)
    bucket_lo = np.where(defined, np.where(first_at_or_below_zero, -np.inf, lower), np.nan)
    bucket_hi = np.where(defined, upper, np.nan)
    return QuantileResult(value, in_inf & (total > 0), bucket_lo, bucket_hi,
                          None if (total > 0).all() else "no observations in the window")


@dataclass(frozen=True)
class QuantileClass:
    """What the buckets support of one quantile (:func:`classify_quantile`)."""

    kind: QuantileKind
    reason: str
    """One sentence: why this kind."""
    below_mean: bool = False
    """The whole bucket lies below the mean (``hi < mean``) for a q above 1 − 1/e: the
    observations above the quantile (a share 1 − q) carry at least 1 − q·hi/mean of the total
    (those below add at most q·hi to the mean). True data, not an error — it says the
    distribution is not log-concave (not exponential-like), so the mean and this quantile tell
    different stories and both should be read."""


def classify_quantile(lo: float, hi: float, *, q: float | None = None,
                      mean: float | None = None) -> QuantileClass:
    """How much of a histogram quantile whose rank fell in the bucket ``(lo, hi]`` is known.

    The rule, for observations >= 0 (durations), in this order:

    1. **unsupported** when ``hi`` is +inf (the rank fell in the +Inf bucket): the quantile is
       above ``lo``, the highest finite bound, and nothing bounds it from above; PromQL's value
       (``lo``) is a lower bound only.
    2. **unsupported** when ``q`` and the measured ``mean`` are given and
       ``mean <= (1 − q)·lo``. The rank lies above the count up to ``lo``, so more than a share
       1 − q of the observations exceed ``lo``, and since none is negative the mean is
       above (1 − q)·lo (Markov's inequality, P(X > lo) <= E[X]/lo, read the other way). A
       smaller mean contradicts the buckets: the ``_sum`` and ``_bucket`` series disagree (other
       series summed, a reset in one of them), and neither figure can be trusted.
    3. **exact** when ``0 < lo`` and ``hi <= EXACT_RATIO·lo`` (+1e-9 relative, for ``le``
       labels printed by Go such as ``9.999999999999999e-06``): the interpolated value is within
       a factor :data:`EXACT_RATIO` of the true quantile, both being in ``(lo, hi]``.
    4. **range** otherwise: a decade bucket, or the first bucket ``(0, hi]`` (the quantile is
       at most ``hi``, its ratio unbounded). Where inside the bucket the quantile lies is not
       known: linear interpolation assumes the observations spread evenly over the bucket,
       which a decade bucket of queue waits (most of them near its lower end) does not do.

    Not a rule: a bucket wholly *below* the mean (``hi < mean``). For a q ≥ 0.5 that looks
    impossible but is not: a nonnegative distribution can put its q-quantile arbitrarily far
    below its mean when the top 1 − q of the observations carry the total. Queue waits do it
    routinely: M/M/c with P(wait) = C < 1 − q has a q-quantile of 0 and a mean wait of
    C/(cμ − λ) > 0; the demo's ``volumesnapshot`` queue picks 98.6 % of its items up within
    1 ms while 1.4 % wait 0.1–10 s behind a long pass, so its p95 is at most 100 µs and its
    mean 41 ms — the buckets prove both. Even a non-increasing density allows it (X = U·Y with
    U uniform on (0, 1) and Y = ε with probability 0.96, 100 ε otherwise: p95 <= ε, mean
    2.48 ε). What does hold is for a *log-concave* density: P(X >= E[X]) >= 1/e (Grünbaum's
    inequality in one dimension; the exponential attains it), hence the q-quantile is at least
    the mean for every q > 1 − 1/e ≈ 0.63. So a p95 bucket below the mean is reported
    (``below_mean``): the waits are not exponential-like and a small share of items carries
    most of the wait. Hiding that quantile would hide a measured fact.

    ``lo``/``hi`` NaN (no observations) is **unsupported** too.
    """
    if math.isnan(lo) or math.isnan(hi):
        return QuantileClass("unsupported", "no observations: there is no bucket")
    if math.isinf(hi):
        return QuantileClass(
            "unsupported", f"the rank fell in the +Inf bucket: the quantile is above {lo:g}, "
                           "the highest finite bucket bound, and nothing bounds it from above")
    has_mean = q is not None and mean is not None and math.isfinite(mean)
    if has_mean and q is not None and mean is not None and lo > 0 and \
            mean <= (1.0 - q) * lo * (1.0 - 1e-9):
        return QuantileClass(
            "unsupported", f"the buckets put more than {100 * (1 - q):g} % of the observations "
                           f"above {lo:g}, which needs a mean above {(1 - q) * lo:g}; the "
                           f"measured mean {mean:g} contradicts them (_sum and _bucket disagree)")
    below = bool(has_mean and q is not None and mean is not None and q > _LOG_CONCAVE_Q
                 and hi < mean)
    if lo > 0 and hi <= EXACT_RATIO * lo * (1.0 + 1e-9):
        return QuantileClass("exact", f"the bucket ({lo:g}, {hi:g}] is at most "
                                      f"×{EXACT_RATIO:g} wide", below)
    if lo <= 0:
        return QuantileClass("range", f"the first bucket: the quantile is at most {hi:g}", below)
    return QuantileClass("range", f"the bucket ({lo:g}, {hi:g}] is ×{sig(hi / lo)} wide: "
                                  "where the quantile lies inside it is not known", below)


def parse_le(text: str) -> float | None:
    """An ``le`` label value as a float (``+Inf`` included), None when it is not a number:
    ``"1"`` and ``"1.0"`` are the same bound (Prometheus 2 stores the text as written)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value
