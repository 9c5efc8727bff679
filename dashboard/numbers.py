"""Numbers as text for people: a measured value with its unit, and a histogram quantile with
what its buckets support ("0.42 s", "between 0.1 s and 1 s", "above 1000 s", "no data").

Plain Python (no Dash, no Plotly): the CLI tables, the pages and the reports can all use it.
Every number itself is written by the one formatter, :mod:`models.formatting` (three
significant digits, no exponent, the unit scaled to the value); ``sig`` and ``number_text``
are re-exported from it here.

A quantile read from a histogram is only as precise as the bucket its rank fell in
(:func:`models.histogram.classify_quantile` has the rule and its reasons): a number when the
bucket is at most ×2 wide, a range for a wider (decade) bucket, a lower bound in the +Inf
bucket, and no figure at all when the buckets contradict the measured mean.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Protocol

from models.formatting import NO_DATA, duration_unit, number_text, sig
from models.histogram import QUANTILES, classify_quantile

__all__ = [
    "NO_DATA",
    "number_text",
    "quantile_note",
    "quantile_text",
    "sig",
    "snapshot_quantile_note",
    "snapshot_quantile_text",
]

MEAN_FIELD: Mapping[str, str] = {"queue_wait": "queue_wait_mean_s", "work": "service_mean_s"}
"""The mean beside each histogram's quantiles: ``rate(_sum) / rate(_count)`` of the same
histogram (the work histogram's mean is ``service_mean_s``)."""

_Q_OF: Mapping[str, float] = dict(QUANTILES)


def _rounded(value: float, digits: int) -> float:
    return float(f"{value:.{digits - 1}e}")


def _in_unit(value: float, factor: float, name: str, digits: int) -> str:
    return f"{sig(_rounded(value, digits) * factor, digits)} {name}"


def _range_text(lo: float, hi: float, unit: str, digits: int, compact: bool = False) -> str:
    """'between 0.1 s and 1 s': a duration range in the unit of its upper end when its lower
    end still reads without an exponent there ('between 0.1 ms and 1 ms', 'between 0.01 s and
    0.1 s'), each end in its own unit otherwise. ``compact``: '0.1–1 s' (table cells)."""
    if unit == "s" and lo > 0:
        factor, name = duration_unit(hi, digits)
        if _rounded(lo, digits) * factor >= 1e-3:
            if compact:
                return (f"{sig(_rounded(lo, digits) * factor, digits)}–"
                        f"{_in_unit(hi, factor, name, digits)}")
            return (f"between {_in_unit(lo, factor, name, digits)} and "
                    f"{_in_unit(hi, factor, name, digits)}")
    if compact:
        return f"{number_text(lo, unit, digits)}–{number_text(hi, unit, digits)}"
    return f"between {number_text(lo, unit, digits)} and {number_text(hi, unit, digits)}"


def quantile_text(value: float | None, lo: float | None = None, hi: float | None = None,
                  unit: str = "s", *, q: float | None = None, mean: float | None = None,
                  digits: int = 3, compact: bool = False) -> str:
    """A histogram quantile as far as its bucket ``(lo, hi]`` supports it (``compact``: the
    short forms of table cells, '0.1–1 s', '≤ 10 ns', '> 1000 s', '?').

    * ``value`` missing or not finite: 'no data';
    * no bucket known (``lo``/``hi`` None: the source gave the quantile without buckets): the
      value as it is;
    * the +Inf bucket (``hi`` = +inf): 'above 1000 s' (``lo`` is the highest finite bound);
    * a bucket at most ×2 wide: the value, '0.42 s';
    * wider: 'between 0.1 s and 1 s', or 'at most 10 ns' for the first bucket (lo <= 0);
    * with ``q`` and ``mean``, a bucket the mean contradicts (more than 1 − q of the
      observations above lo needs a mean above (1 − q)·lo): 'unknown (buckets contradict the
      mean)'.
    """
    if value is None or not math.isfinite(value):
        return NO_DATA
    if lo is None or hi is None:
        return number_text(value, unit, digits)
    if math.isnan(lo) or math.isnan(hi):
        return NO_DATA
    cls = classify_quantile(lo, hi, q=q, mean=mean)
    if math.isinf(hi):
        return f"{'>' if compact else 'above'} {number_text(lo, unit, digits)}"
    if cls.kind == "unsupported":
        return "?" if compact else "unknown (buckets contradict the mean)"
    if cls.kind == "exact":
        return number_text(value, unit, digits)
    if lo <= 0:
        return f"{'≤' if compact else 'at most'} {number_text(hi, unit, digits)}"
    return _range_text(lo, hi, unit, digits, compact)


def quantile_note(lo: float | None, hi: float | None, q: float, mean: float | None,
                  what: str = "items") -> str:
    """A sentence for a quantile whose whole bucket lies below the mean (for q > 1 − 1/e), ''
    otherwise: true data, but a reader expects the opposite (see
    :func:`models.histogram.classify_quantile`).

    The share it quotes is a bound, not a guess: the observations at or below the q-quantile
    (a share q, each <= hi) add at most q·hi to the mean, so the rest (a share 1 − q) carry at
    least 1 − q·hi/mean of the total."""
    if lo is None or hi is None or mean is None:
        return ""
    if not classify_quantile(lo, hi, q=q, mean=mean).below_mean:
        return ""
    share = 100 * (1 - q * hi / mean)
    shown = math.floor(share * 10) / 10  # 'at least': round down
    return (f"The p{100 * q:g} is below the mean: the slowest {100 * (1 - q):g} % of the "
            f"{what} make up at least {shown:g} % of the total time (a long tail: most are quick, "
            "a few take far longer).")


class _HasQuantiles(Protocol):
    @property
    def quantile_bounds(self) -> Mapping[str, tuple[float, float]]: ...


def _parts(snap: _HasQuantiles, name: str) -> tuple[float | None, float | None, float | None,
                                                      float | None, float | None]:
    """(value, lo, hi, q, mean) of quantile field ``name`` (e.g. ``queue_wait_p95_s``)."""
    value = getattr(snap, name, None)
    bounds = snap.quantile_bounds.get(name)
    prefix, _, rest = name.rpartition("_p")
    q = _Q_OF.get("p" + rest.removesuffix("_s"))
    mean_field = MEAN_FIELD.get(prefix)
    mean = getattr(snap, mean_field, None) if mean_field else None
    lo, hi = bounds if bounds is not None else (None, None)
    return value, lo, hi, q, mean


def snapshot_quantile_text(snap: _HasQuantiles, name: str, digits: int = 3,
                           compact: bool = False) -> str:
    """:func:`quantile_text` of a :class:`models.measurements.QueueSnapshot` quantile field
    (``queue_wait_p95_s``, ``work_p99_s`` …) with its bucket, its q and its histogram's mean."""
    value, lo, hi, q, mean = _parts(snap, name)
    return quantile_text(value, lo, hi, "s", q=q, mean=mean, digits=digits, compact=compact)


def snapshot_quantile_note(snap: _HasQuantiles, name: str, what: str = "items") -> str:
    """:func:`quantile_note` of a :class:`models.measurements.QueueSnapshot` quantile field."""
    value, lo, hi, q, mean = _parts(snap, name)
    if value is None or q is None:
        return ""
    return quantile_note(lo, hi, q, mean, what)
