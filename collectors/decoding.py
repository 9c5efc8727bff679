"""Decoding Prometheus answers into the rows and matrices of :mod:`models.signals`: series
placed on the read's time grid, instant bucket samples grouped by bucket layout, duplicate
series found and refused (the warning names them), dropped series noted."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence

import numpy as np

from collectors.prom_client import RangeResult, RangeSeries, Sample
from models.signals import Histogram

__all__ = [
    "DUPLICATE_REASON",
    "duplicate_keys",
    "instant_histograms",
    "instant_rows",
    "nan_if_none",
    "note_dropped",
    "place_series",
    "scatter_series",
    "warn_duplicates",
]


def duplicate_keys(keys: Iterable[str]) -> set[str]:
    """The keys that occur more than once ('' — series without the key label — excluded)."""
    return {k for k, n in Counter(keys).items() if n > 1 and k}


DUPLICATE_REASON = ("Prometheus returned more than one {metric} series with {label}={q!r} "
                     "and the same labels: left out rather than summed or picked")


def warn_duplicates(signal: str, label: str, keys: Collection[str], warnings: list[str]
                     ) -> None:
    """One warning per answer with duplicated series (a federation or a proxy that merged two
    answers returns the same series twice)."""
    if not keys:
        return
    shown = ", ".join(f"{label}={k!r}" for k in sorted(keys)[:3])
    more = f" and {len(keys) - 3} more" if len(keys) > 3 else ""
    note = (f"{signal}: Prometheus returned the same series more than once ({shown}{more}); "
            "their values are left out, not summed or picked (two Prometheus servers "
            "federated or merged by a proxy?)")
    if note not in warnings:
        warnings.append(note)


def nan_if_none(value: float | None) -> float:
    return math.nan if value is None else float(value)


def instant_histograms(per_queue: Mapping[str, list[tuple[float, float]]], rows: Mapping[str, int]
             ) -> list[Histogram]:
    """Instant bucket samples grouped by bucket layout (one :class:`Histogram` per ``le`` set)."""
    groups: dict[tuple[float, ...], list[tuple[int, list[float]]]] = defaultdict(list)
    for q, pairs in per_queue.items():
        i = rows.get(q)
        if i is None or not pairs:
            continue
        pairs = sorted(pairs)
        groups[tuple(le for le, _ in pairs)].append((i, [c for _, c in pairs]))
    out = []
    for bounds, members in groups.items():
        counts = np.array([c for _, c in members], dtype=np.float64)[:, None, :]
        out.append(Histogram(np.array(bounds), counts,
                             np.array([i for i, _ in members], dtype=np.int64)))
    return out


def note_dropped(signal: str, res: RangeResult, warnings: list[str]) -> None:
    for dropped in res.dropped:
        for kind, n in dropped.items():
            note = f"{signal}: {n} {kind} point(s) left out"
            if note not in warnings:
                warnings.append(note)


def instant_rows(samples: Sequence[Sample]) -> list[tuple[Mapping[str, str], np.ndarray]]:
    return [(smp.labels, np.array([math.nan if smp.value is None else smp.value]))
            for smp in samples]


def _columns(res: RangeResult, t: np.ndarray, step: float) -> np.ndarray:
    """Grid column of every point of an answer."""
    if len(t) == 0:
        return np.empty(0, dtype=np.int64)
    return np.asarray(np.rint((res.t - t[0]) / step), dtype=np.int64)


def scatter_series(out: np.ndarray, res: RangeResult, series_row: np.ndarray, t: np.ndarray,
             step: float, series_col: np.ndarray | None = None) -> None:
    """Every point of an answer into ``out[row, col]`` (``out[row, extra, col]`` with
    ``series_col``); a series whose row is −1 is skipped."""
    if len(res.v) == 0 or len(series_row) == 0:
        return
    r = series_row[res.row]
    c = _columns(res, t, step)
    ok = (r >= 0) & (c >= 0) & (c < len(t))
    if series_col is None:
        out[r[ok], c[ok]] = res.v[ok]
    else:
        out[r[ok], series_col[res.row][ok], c[ok]] = res.v[ok]


def place_series(out: np.ndarray, row: int, s: RangeSeries, t: np.ndarray, step: float) -> None:
    """One range series into row ``row`` of ``out`` (columns: the read's grid ``t``)."""
    if len(s.t):
        idx = np.rint((s.t - t[0]) / step).astype(np.int64)
        ok = (idx >= 0) & (idx < len(t))
        out[row, idx[ok]] = s.v[ok]
