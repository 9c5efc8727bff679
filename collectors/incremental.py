"""Read only what is new of a range read (issue 22): a refresh of the same view asks the source
for the steps after the last read's end (plus an overlap), appends them and drops the columns
that fell out of the range.

Every refresh of a view re-read its whole range — at 10,000 queues, 2 h at 60 s, about
120 points × ~20 series × 10,000 queues — to add one step. The query-frontend caches of Thanos
and Cortex, and Grafana's incremental querying, read the new steps only; this does the same,
one level up, on the matrices :class:`models.measurements.RangeData` holds.

Why the columns of two reads agree: a range query is evaluated at ``start + k·step``; with
``start`` and ``end`` on multiples of the step (:func:`step_grid`) two reads of the same
length share every column they both cover, and a column's value depends only on the samples
at or before its time (``rate(x[w])`` at ``t`` reads ``(t − w, t]``). So the merge equals a
fresh full read — except where the past changed, which the overlap catches:

* the newest :data:`REPLACED_STEPS` columns of the last read are read again and replaced: a
  sample scraped just before the last read's end may have arrived after it (late samples);
* the :data:`COMPARED_STEPS` columns before them are read again and compared with the last
  read (NaN where NaN, values within :data:`TOLERANCE`); any difference — a rewritten past
  (a backfill, an out-of-order sample), a rate window that changed with a newly learnt scrape
  interval, a queue that moved to another process — means the kept columns may be wrong too,
  and the whole range is read again.

A full read also happens on the first read, when the length or the step changes, when a
queue or a signal appears that the last read did not have, when the new end is before the last
one, and when the last read is older than its range (nothing of it would be kept). Each read
says which it was, and why, in the debug log (logger ``collectors.incremental``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from models.measurements import RangeData

__all__ = [
    "COMPARED_STEPS",
    "MAX_STEP_S",
    "REPLACED_STEPS",
    "TOLERANCE",
    "Extension",
    "extend",
    "step_grid",
]

log = logging.getLogger(__name__)

REPLACED_STEPS = 2
"""The newest columns of the last read that are read again and replaced: its last one is on
the step after the end it was asked for (the grid rounds the end up, as
:func:`collectors.prom_client.plan_range` does for every read, so cached and direct reads
agree), and the one before may still have been missing a sample scraped just before the read
(late samples reach Prometheus up to a scrape interval after their timestamp, and the step is
at least the scrape interval)."""
COMPARED_STEPS = 1
"""The columns before those, read again and compared: a difference means the past changed."""
TOLERANCE = 1e-9
"""Relative agreement of a compared column (the same query over the same samples: only the
float summation order may differ)."""
MAX_STEP_S = 60.0
"""The longest step read incrementally: the range's end is put on a multiple of the step, so
its newest point is up to one step old — a minute at most; the longer steps of the 24 h and
7 d views are read whole, as before."""


@dataclass(frozen=True)
class Extension:
    """A range read and how it was made: ``mode`` 'full' or 'delta', ``reason`` in words."""

    data: RangeData
    mode: str
    reason: str


def step_grid(start: float, end: float, step_s: float) -> tuple[float, float] | None:
    """(start, end) put on multiples of ``step_s`` as every range read is
    (:func:`collectors.prom_client.plan_range`: the start rounded down, the end up, so a cached
    read has the columns a direct one has), or None when the read is not one to extend: a
    step over :data:`MAX_STEP_S` or not a whole number of seconds (Prometheus evaluates at
    ``start + k·step``; a fractional step would not land on the same instants twice)."""
    if not (0 < step_s <= MAX_STEP_S) or step_s != math.floor(step_s) or end < start:
        return None
    return math.floor(start / step_s) * step_s, math.ceil(end / step_s) * step_s


def _agree(old: np.ndarray, new: np.ndarray) -> bool:
    """The same NaN pattern, and the values within :data:`TOLERANCE` (relative, at least
    absolute for values near 0)."""
    old_nan, new_nan = np.isnan(old), np.isnan(new)
    if not np.array_equal(old_nan, new_nan):
        return False
    both = ~old_nan
    diff = np.abs(old[both] - new[both])
    return bool(np.all(diff <= TOLERANCE * np.maximum(1.0, np.abs(old[both]))))


def _full(read: Callable[[float, float], RangeData], a: float, b: float,
          reason: str) -> Extension:
    log.debug("range [%s, %s]: full read (%s)", a, b, reason)
    return Extension(read(a, b), "full", reason)


def extend(prev: RangeData | None, read: Callable[[float, float], RangeData], a: float,
           b: float, step_s: float) -> Extension:
    """The range [a, b] at ``step_s`` (on the step grid, :func:`step_grid`), from the last
    read ``prev`` of the same view (same length, step, queues and signals asked for) and a read
    of only the new steps; ``read(start, end)`` asks the source. See the module docstring for
    when it falls back to a full read."""
    if prev is None:
        return _full(read, a, b, "first read")
    # the same view: the same step, and a length within a step of the last (the grid's
    # rounding adds a column when the asked end is between two steps)
    if prev.step_s != step_s or abs((b - a) - (prev.end - prev.start)) > step_s * 1.001:
        return _full(read, a, b, "the range or the step changed")
    if b < prev.end or a < prev.start:
        return _full(read, a, b, "the range is not after the last read's")
    overlap = REPLACED_STEPS + COMPARED_STEPS
    delta_start = prev.end - (overlap - 1) * step_s  # prev.end is the last read's last column
    if delta_start <= a or len(prev.t) < overlap:
        return _full(read, a, b, "the last read is older than its range")
    # b == prev.end (a refresh within the same step) reads the overlap alone: its replaced
    # columns may have gained late samples since
    delta = read(delta_start, b)
    if not set(delta.queues) <= set(prev.queues) or not set(delta.signals) <= set(prev.signals):
        return _full(read, a, b, "a queue or a signal is new")
    if delta.step_s != step_s or len(delta.t) == 0 or delta.t[0] != delta_start:
        return _full(read, a, b, "the source did not answer on the step grid")
    # a queue or a signal the short read lacks (quiet over the last steps: a source leaves out
    # what has no point) is NaN there, on the last read's rows
    where = np.array([prev.index(q) for q in delta.queues], dtype=np.int64)
    half = step_s / 2
    compared_t = prev.t[(prev.t > delta_start - half)
                        & (prev.t < prev.end - REPLACED_STEPS * step_s + half)]
    old_cols = np.searchsorted(prev.t, compared_t)
    new_cols = np.searchsorted(delta.t, compared_t)
    keep = (prev.t >= a) & (prev.t < delta_start)
    n = len(prev.queues)
    signals: dict[str, np.ndarray] = {}
    for name, before in prev.signals.items():
        fresh = np.full((n, len(delta.t)), np.nan)
        got = delta.signals.get(name)
        if got is not None:
            fresh[where] = got
        if not _agree(before[:, old_cols], fresh[:, new_cols]):
            return _full(read, a, b, f"the past changed in the overlap ({name})")
        merged = np.concatenate([before[:, keep], fresh], axis=1)
        if np.isfinite(merged).any():  # a signal with no point left is left out, as a read does
            signals[name] = merged
    t = np.concatenate([prev.t[keep], delta.t])
    gap = _merged_gap(prev, delta, where, keep)
    # a queue that has left the range (no point in any signal, not in the short read) goes
    alive = np.zeros(n, dtype=bool)
    alive[where] = True
    for m in signals.values():
        alive |= np.isfinite(m).any(axis=1)
    queues = tuple(q for q, ok in zip(prev.queues, alive, strict=True) if ok)
    if not alive.all():
        signals = {name: m[alive] for name, m in signals.items()}
        gap = gap[alive] if gap is not None else None
    notes = tuple(dict.fromkeys((*prev.notes, *delta.notes)))
    log.debug("range [%s, %s]: %d new step(s) read, %d kept", a, b,
              len(delta.t) - overlap, int(keep.sum()))
    data = RangeData(start=a, end=b, step_s=step_s, source=delta.source, queues=queues,
                     t=t, signals=signals, notes=notes,
                     gap=gap if gap is not None and gap.any() else None)
    return Extension(data, "delta", f"{len(delta.t) - overlap} new step(s)")


def _merged_gap(prev: RangeData, delta: RangeData, where: np.ndarray,
                keep: np.ndarray) -> np.ndarray | None:
    """The scrape-gap mask of the merged read: the last read's kept columns, then the short
    read's on its queues' rows (a queue it lacks has no point there, so no dropped one)."""
    if prev.gap is None and delta.gap is None:
        return None
    n = len(prev.queues)
    before = prev.gap[:, keep] if prev.gap is not None else np.zeros((n, int(keep.sum())), bool)
    fresh = np.zeros((n, len(delta.t)), dtype=bool)
    if delta.gap is not None:
        fresh[where] = delta.gap
    return np.concatenate([before, fresh], axis=1)
