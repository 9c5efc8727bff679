"""Headroom: how far a queue's demand can grow before each limit binds.

For every limit whose ceiling X* was measured (:mod:`models.bindings.measured`, each limit's
own measure in its module), the headroom is X* ÷ the peak demand the plan sizes for (the
design demand: the larger of λ now and the 95th percentile of λ over the range), with the
ceiling's range divided likewise: "demand can grow 2.4× (2.1–2.8×) before the API client's
limiter binds at 15.6/s". The smallest is the queue's headroom, named by its limit. A ratio
under 1 is a limit the demand's peaks already reach; :data:`HEADROOM_BINDS` is where the
contention rule says so.

The share of time a limit binds is the limit's own where its signal tells (a process at its
cores); else the share of the range's points whose demand reached the ceiling.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from models.bindings.measured import CeilingInputs, MeasuredCeiling
from models.bindings.registry import limits
from models.formatting import number_text, percent_text, sig

__all__ = ["HEADROOM_BINDS", "Headroom", "headroom_text", "headrooms", "measure_all"]

HEADROOM_BINDS = 1.1
"""Ceiling ÷ peak demand under which a limit binds at the demand's peaks: within 10 % of a
ceiling a shared resource's queue is so long that every worker waits on it (a lock at 90 %
busy queues nine passes on average, M/M/1), and 10 % is about the spread of the measured
ceilings around the mechanism's on the recordings and the regime matrix (issue 35)."""


@dataclass(frozen=True)
class Headroom:
    """One limit's headroom for one queue (module docstring)."""

    limit: str
    ratio: float
    """Ceiling ÷ peak demand."""
    ratio_lo: float | None
    ratio_hi: float | None
    ceiling_per_s: float
    demand_per_s: float
    """The peak demand it is compared with."""
    binds_share: float | None
    """The share of the range's points at which the limit was at its ceiling."""
    basis: str
    """How the ceiling was measured."""

    @property
    def binds(self) -> bool:
        """The demand's peaks reach the ceiling (:data:`HEADROOM_BINDS`)."""
        return self.ratio < HEADROOM_BINDS

    def payload(self) -> dict[str, object]:
        return {"limit": self.limit, "ratio": self.ratio, "ratio_lo": self.ratio_lo,
                "ratio_hi": self.ratio_hi, "ceiling_per_s": self.ceiling_per_s,
                "demand_per_s": self.demand_per_s, "binds_share": self.binds_share,
                "basis": self.basis}


def measure_all(inputs: CeilingInputs) -> tuple[MeasuredCeiling, ...]:
    """Every registered limit's measure on one queue, in the order of registration (the
    limits that show nothing for it left out)."""
    out = []
    for lim in limits().values():
        if lim.measure is None:
            continue
        try:
            found = lim.measure(inputs)
        except (ValueError, ArithmeticError):
            continue  # figures this limit's arithmetic cannot take (1e308/s): not measured
        if found is not None:
            out.append(found)
    return tuple(out)


def headrooms(ceilings: Sequence[MeasuredCeiling], demand_peak_per_s: float | None,
              arrival_rate_per_s: np.ndarray | None = None) -> tuple[Headroom, ...]:
    """The headroom to each measured ceiling, smallest first (module docstring);
    ``arrival_rate_per_s``: the range's demand, for the share of its points at a ceiling."""
    if demand_peak_per_s is None or not math.isfinite(demand_peak_per_s) \
            or demand_peak_per_s <= 0:
        return ()
    ceilings = _explained(ceilings)
    lam = None
    if arrival_rate_per_s is not None:
        lam = arrival_rate_per_s[np.isfinite(arrival_rate_per_s)]
    out = []
    for m in ceilings:
        if m.ceiling_per_s is None:
            continue
        share = m.binds_share
        if share is None and lam is not None and lam.size:
            share = float(np.mean(lam >= m.ceiling_per_s))
        d = demand_peak_per_s
        out.append(Headroom(
            m.limit, m.ceiling_per_s / d,
            m.lo_per_s / d if m.lo_per_s is not None else None,
            m.hi_per_s / d if m.hi_per_s is not None else None,
            m.ceiling_per_s, d, share, m.basis))
    return tuple(sorted(out, key=lambda h: h.ratio))


def _explained(ceilings: Sequence[MeasuredCeiling]) -> list[MeasuredCeiling]:
    """The ceilings without the anonymous shared station of the pass times when a named
    limit with a ceiling at or under the station's range explains the same stretching (a
    token bucket or a core also make the passes longer with load: one mechanism, one
    name)."""
    station = next((m for m in ceilings if m.limit == "shared_resource"
                    and m.ceiling_per_s is not None), None)
    if station is None or station.ceiling_per_s is None:
        return list(ceilings)
    top = station.hi_per_s if station.hi_per_s is not None else station.ceiling_per_s
    named = any(m.ceiling_per_s is not None and m.limit not in ("shared_resource", "workers")
                and limits()[m.limit].rows == "ceiling" and m.ceiling_per_s <= 1.1 * top
                for m in ceilings)
    return [m for m in ceilings if not (named and m is station)]


def _owner(label: str) -> str:
    return f"the {label}'" if label.endswith("s") else f"the {label}'s"


def headroom_text(h: Headroom) -> str:
    """One headroom in words: "demand can grow 2.4× (2.1–2.8×) before the API client
    limiter binds at 15.6/s"; within :data:`HEADROOM_BINDS`, "the demand's peaks (…) reach
    within 10 % of …"; under 1, "the demand's peaks (…) are over …"."""
    label = limits()[h.limit].label.split(" (")[0]
    rng = ""
    if h.ratio_lo is not None and h.ratio_hi is not None:
        rng = f" ({sig(h.ratio_lo)}–{sig(h.ratio_hi)}×)"
    elif h.ratio_lo is not None and h.ratio_lo < h.ratio:
        rng = f" (at least {sig(h.ratio_lo)}×)"
    at = number_text(h.ceiling_per_s, "/s")
    peaks = f"the demand's peaks ({number_text(h.demand_per_s, '/s')})"
    share = (f", at it {percent_text(h.binds_share)} of the time" if h.binds_share else "")
    if h.ratio < 1:
        return f"{peaks} are over {_owner(label)} ceiling of {at}{share}"
    if h.binds:
        return (f"{peaks} come within {percent_text(HEADROOM_BINDS - 1)} of "
                f"{_owner(label)} ceiling of {at}{share}")
    verb = "bind" if label.endswith("s") else "binds"
    return f"demand can grow {sig(h.ratio)}×{rng} before the {label} {verb} at {at}"
