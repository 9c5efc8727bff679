"""The one number formatter: every number a person reads — a card, the grid, a chart's label
or hover, a report, a CLI table, a verdict's sentence — is written here.

Pure Python (no I/O, no Dash): the models' own words (verdict summaries, binding reasons) use
it, so the lowest layer holds it and ``dashboard.numbers`` builds the histogram-quantile forms
on top of it.

The rules (issue 21, "one unit-aware formatter for every surface"):

* **three significant digits** (``0.7151 → '0.715'``, ``670.2 → '670'``, ``16.003 → '16'``),
  trailing zeros dropped (``12.0 → '12'``);
* **no scientific notation for a human quantity**: from 1,000 up the digits are grouped
  (``8333 → '8,330'``, ``1.2e7 → '12,000,000'``); below 0.001 a unitless value reads
  ``'< 0.001'`` (a probability of 7.7e-28 is "less than one in a thousand", not a string of
  digits); only beyond 10¹⁵ — no count or rate a controller has — does an exponent remain;
* **the unit always visible and scaled to the value**: a duration below 0.1 s in ms, µs or ns
  (client-go's wait buckets are the decades from 10 ns up, so each edge reads as one short
  number: ``9.99e-06 → '10 µs'``), from 2 min in min, from 2 h in h and from 3 days in days
  (the verdicts' habit: "clears in 5 min", not "300 s"); a rate below 0.001/s per hour
  (``2e-05/s → '0.072/h'``);
  a unit that starts with ``/`` is written against the number (``'15.1/s'``), any other after
  a space (``'0.42 s'``, ``'3 cores'``);
* **a share as a percentage**: whole percent from 10 % to 99 %, one decimal below 10 % and
  above 99 % (a queue at 99.7 % is not "100 %"), ``'< 0.1 %'`` for a tiny nonzero share;
* **counts** (an integer number of things: arrivals, samples) exactly, digits grouped;
* a missing or non-finite value reads ``'no data'`` — never 0, never NaN.
"""

from __future__ import annotations

import math

__all__ = [
    "D3_NUMBER",
    "HOVER_X",
    "HOVER_Y",
    "NO_DATA",
    "count_text",
    "duration_text",
    "duration_unit",
    "instant_text",
    "number_text",
    "percent_text",
    "progress_text",
    "shown_value",
    "sig",
]

NO_DATA = "no data"
"""What a missing value reads as (never 0, never NaN)."""

D3_NUMBER = ",.3~r"
"""The same rule for what the browser formats itself (a Plotly hover, an AG Grid cell sorted
on its number): d3-format's three significant digits in decimal notation (``~`` drops
trailing zeros, ``,`` groups thousands: 8333 → '8,330', 16.003 → '16'), never an exponent.
In a hovertemplate write :data:`HOVER_Y` (or :data:`HOVER_X`), with the unit beside it."""

HOVER_X = "%{x:" + D3_NUMBER + "}"
"""A Plotly hovertemplate's x value written by :data:`D3_NUMBER`."""

HOVER_Y = "%{y:" + D3_NUMBER + "}"
"""A Plotly hovertemplate's y value written by :data:`D3_NUMBER`."""

_SMALLEST = 1e-3
"""Below this a unitless value reads '< 0.001': three significant digits of a smaller number
need a fourth zero after the point, which no reader counts correctly."""

_EXPONENT_FROM = 1e15
"""From here on an exponent is the honest form (grouped digits would be 16+ long)."""

_GROUP_FROM = 1e3
"""From here on digits are grouped in thousands ('1,230', '8,330')."""

_SUBSECOND = ((0.1, 1.0, "s"), (1e-3, 1e3, "ms"), (1e-6, 1e6, "µs"), (0.0, 1e9, "ns"))
"""(smallest magnitude, factor, unit) of durations below 2 min: seconds from 0.1 s up
('0.42 s'), then ms, µs and ns, so a value reads with 1–3 digits before the point."""

_MINUTES_FROM_S = 120.0
_HOURS_FROM_S = 7200.0
_DAYS_FROM_S = 3 * 86400.0
"""A duration from 2 min reads in minutes, from 2 h (or a whole number of hours from 1 h:
'1 h', not '60 min') in hours and from 3 days in days ('5 min', '3.5 h', '7 days'): at those
sizes a reader converts seconds in their head anyway."""


def _rounded(value: float, digits: int) -> float:
    """``value`` rounded to ``digits`` significant digits (as a float)."""
    return float(f"{value:.{digits - 1}e}")


def shown_value(value: float, digits: int = 3) -> float:
    """The number :func:`sig` writes, as a float: what an input field is prefilled with, so
    the field shows '14.8', not '14.773333' (and the page computes with what it shows)."""
    return _rounded(value, digits) if math.isfinite(value) and value != 0 else value


def sig(value: float, digits: int = 3) -> str:
    """``digits`` significant digits without an exponent (see the module's rules):
    0.7151 → '0.715', 670.2 → '670', 12.0 → '12', 8333 → '8,330', 4e-4 → '< 0.001'."""
    if not math.isfinite(value):
        return NO_DATA
    if value == 0:
        return "0"
    rounded = _rounded(value, digits)
    magnitude = abs(rounded)
    if magnitude >= _EXPONENT_FROM:
        return f"{value:.{digits - 1}e}"
    if magnitude < _SMALLEST:
        return "< 0.001" if value > 0 else "> -0.001"
    if magnitude >= _GROUP_FROM:
        return f"{rounded:,.0f}"
    decimals = max(0, digits - 1 - math.floor(math.log10(magnitude)))
    text = f"{rounded:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _with_unit(text: str, unit: str) -> str:
    if not unit:
        return text
    return f"{text}{unit}" if unit.startswith("/") else f"{text} {unit}"


def duration_unit(seconds: float, digits: int = 3) -> tuple[float, str]:
    """(factor, unit) a nonzero duration is written in, chosen on its rounded value
    (0.0999999 is '0.1 s'; 9.999999999999999e-06 — a Go-printed bucket edge — is '10 µs')."""
    rounded = abs(_rounded(seconds, digits))
    magnitude = max(abs(seconds), rounded)
    if magnitude >= _DAYS_FROM_S:
        return 1 / 86400, "days"
    if magnitude >= _HOURS_FROM_S or (rounded >= 3600 and rounded % 3600 == 0):
        return 1 / 3600, "h"
    if magnitude >= _MINUTES_FROM_S:
        return 1 / 60, "min"
    for smallest, factor, name in _SUBSECOND:
        if magnitude >= smallest:
            return factor, name
    return _SUBSECOND[-1][1], _SUBSECOND[-1][2]  # pragma: no cover - the ns row has no floor


def duration_text(seconds: float | None, digits: int = 3) -> str:
    """A duration in the unit that fits it: '4.54 ms', '10 µs', '0.42 s', '5 min', '3.5 h'."""
    if seconds is None or not math.isfinite(seconds):
        return NO_DATA
    if seconds == 0:
        return "0 s"
    if abs(seconds) < 1e-9:  # below client-go's smallest bucket edge (10 ns), and any clock
        return "< 1 ns" if seconds > 0 else "> -1 ns"
    factor, name = duration_unit(seconds, digits)
    return f"{sig(seconds * factor, digits)} {name}"  # rounded once, in its unit


def instant_text(t_s: float | None) -> str:
    """A point on a trace's clock, in seconds to the millisecond: '3,600.015 s', '0 s'.

    Not a measured quantity but a position: the key lab's events 15 ms apart an hour in must
    stay apart, so it keeps the digits three significant ones would drop."""
    if t_s is None or not math.isfinite(t_s):
        return NO_DATA
    text = f"{t_s:,.3f}".rstrip("0").rstrip(".")
    return f"{'0' if text in ('-0', '') else text} s"


def number_text(value: float | None, unit: str = "", digits: int = 3) -> str:
    """A measured value with its unit: '1.23 s', '15.1/s', '40 µs', '3 cores', '0.072/h' —
    or 'no data' for a missing or non-finite value. ``unit="s"`` is a duration
    (:func:`duration_text`); ``unit="/s"`` a rate, per hour when below 0.001/s."""
    if value is None or not math.isfinite(value):
        return NO_DATA
    if unit == "s":
        return duration_text(value, digits)
    if unit == "/s" and value != 0 and abs(_rounded(value, digits)) < _SMALLEST:
        return _with_unit(sig(value * 3600, digits), "/h")
    return _with_unit(sig(value, digits), unit)


def percent_text(share: float | None) -> str:
    """A share (0.73) as a percentage: '73 %', '4.2 %', '99.7 %', '< 0.1 %', '0 %'."""
    if share is None or not math.isfinite(share):
        return NO_DATA
    pct = 100 * share
    magnitude = abs(pct)
    if magnitude == 0:
        return "0 %"
    if magnitude < 0.05:
        return "< 0.1 %" if pct > 0 else "> -0.1 %"
    if 99.95 <= magnitude < 100:  # not '100 %' for a share that is not all
        return "> 99.9 %" if pct > 0 else "< -99.9 %"
    whole = 10 <= round(magnitude, 1) < 99 or magnitude >= 999.5
    text = f"{pct:,.0f}" if whole else f"{pct:,.1f}".rstrip("0").rstrip(".")
    return f"{text} %"


def count_text(count: float | None) -> str:
    """A number of things, exactly and grouped: 100482 → '100,482'; a fraction is rounded."""
    if count is None or not math.isfinite(count):
        return NO_DATA
    return f"{round(count):,}"


def progress_text(what: str, done: int, total: int, left_s: float | None = None) -> str:
    """Work in progress, counted, with the time left when known: ('Reading queues', 2500,
    10000, 41.7) → 'Reading queues: 2,500 of 10,000 — about 42 s left'. The estimate keeps
    two significant digits (it is an extrapolation, not a measurement) and is at least 1 s."""
    text = f"{what}: {count_text(done)} of {count_text(total)}"
    if left_s is None or not math.isfinite(left_s) or done >= total:
        return text
    return f"{text} — about {duration_text(max(1.0, left_s), 2)} left"
