"""Numbers as text for people: a measured value with its unit, and a histogram quantile with
what its buckets support ("0.42 s", "between 0.1 s and 1 s", "above 1000 s", "no data").

Plain Python (no Dash, no Plotly): the CLI tables, the pages and the reports can all use it.
The significant-digit rule is the queue page's (``dashboard.pages.queue.fmt``): 3 significant
digits without an exponent for 0.001 <= |v| < 1e6. Durations below 0.1 s are written in ms, µs
or ns instead ("4.54 ms", "10 µs", not "1.00e-05 s"): client-go's queue-wait buckets are the
decades from 10 ns up, and each edge must read as one short number.

A quantile read from a histogram is only as precise as the bucket its rank fell in
(:func:`models.histogram.classify_quantile` has the rule and its reasons): a number when the
bucket is at most ×2 wide, a range for a wider (decade) bucket, a lower bound in the +Inf
bucket, and no figure at all when the buckets contradict the measured mean.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Protocol

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

NO_DATA = "no data"
"""What a missing value reads as (never 0, never NaN)."""

MEAN_FIELD: Mapping[str, str] = {"queue_wait": "queue_wait_mean_s", "work": "service_mean_s"}
"""The mean beside each histogram's quantiles: ``rate(_sum) / rate(_count)`` of the same
histogram (the work histogram's mean is ``service_mean_s``)."""

_Q_OF: Mapping[str, float] = dict(QUANTILES)

_DURATION_UNITS = ((0.1, 1.0, "s"), (1e-3, 1e3, "ms"), (1e-6, 1e6, "µs"), (0.0, 1e9, "ns"))
"""(smallest magnitude, factor, unit) for durations: seconds from 0.1 s up ('0.42 s'), then
ms, µs and ns, so a value reads with 1–3 digits before the point."""


def sig(value: float, digits: int = 3) -> str:
    """``digits`` significant digits, no exponent for 0.001 <= |v| < 1e6 (0.7151 -> '0.715',
    670.2 -> '670', 12.0 -> '12'), exponent form outside ('4.04e-04')."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1e6 or magnitude < 1e-3:
        return f"{value:.{digits - 1}e}"
    decimals = max(0, digits - 1 - math.floor(math.log10(magnitude)))
    rounded = round(value, decimals)
    if rounded == 0:
        return "0"
    text = f"{rounded:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def number_text(value: float | None, unit: str = "", digits: int = 3) -> str:
    """'1.23 s', '0.5 /s', '40 µs' — or 'no data' for a missing or non-finite value.

    A duration (``unit="s"``) below 1 ms is written in µs (below 1 µs in ns), so 9.99…e-06
    (a Go-printed bucket edge) reads '10 µs'."""
    if value is None or not math.isfinite(value):
        return NO_DATA
    if unit == "s" and value != 0:
        factor, name = _duration_unit(value, digits)
        return _in_unit(value, factor, name, digits)
    text = sig(value, digits)
    return f"{text} {unit}".rstrip() if unit else text


def _rounded(value: float, digits: int) -> float:
    return float(f"{value:.{digits - 1}e}")


def _duration_unit(value: float, digits: int) -> tuple[float, str]:
    """(factor, unit) of a nonzero duration, chosen on its rounded value (0.0999999 is
    '0.1 s', 9.999999999999999e-06 — a Go-printed bucket edge — is '10 µs')."""
    magnitude = abs(_rounded(value, digits))
    for smallest, factor, name in _DURATION_UNITS:
        if magnitude >= smallest:
            return factor, name
    return _DURATION_UNITS[-1][1], _DURATION_UNITS[-1][2]


def _in_unit(value: float, factor: float, name: str, digits: int) -> str:
    return f"{sig(_rounded(value, digits) * factor, digits)} {name}"


def _range_text(lo: float, hi: float, unit: str, digits: int, compact: bool = False) -> str:
    """'between 0.1 s and 1 s': a duration range in the unit of its upper end when its lower
    end still reads without an exponent there ('between 0.1 ms and 1 ms', 'between 0.01 s and
    0.1 s'), each end in its own unit otherwise. ``compact``: '0.1–1 s' (table cells)."""
    if unit == "s" and lo > 0:
        factor, name = _duration_unit(hi, digits)
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
    """:func:`quantile_text` of a :class:`collectors.types.QueueSnapshot` quantile field
    (``queue_wait_p95_s``, ``work_p99_s`` …) with its bucket, its q and its histogram's mean."""
    value, lo, hi, q, mean = _parts(snap, name)
    return quantile_text(value, lo, hi, "s", q=q, mean=mean, digits=digits, compact=compact)


def snapshot_quantile_note(snap: _HasQuantiles, name: str, what: str = "items") -> str:
    """:func:`quantile_note` of a :class:`collectors.types.QueueSnapshot` quantile field."""
    value, lo, hi, q, mean = _parts(snap, name)
    if value is None or q is None:
        return ""
    return quantile_note(lo, hi, q, mean, what)
