"""Run the advisor over a source: one snapshot + one range read for the whole fleet.

:func:`advise_fleet` is what the ``advise`` command and the what-if page call. It reads the
source exactly twice (``snapshot`` and ``range`` for all queues), however many queues there
are, then runs the advisor over all queues at once (:func:`models.advisor.advise_many`,
the verdicts of :func:`models.advisor.advise` per queue). :func:`advise_data` does the same from
a snapshot and range read the caller already has: the overview badges share the sparklines'
range read and the queue page's verdict card shares its charts' read.
:func:`history_from_range` turns the long-format :class:`collectors.types.RangeData` frame into
the advisor's :class:`models.advisor.QueueHistory`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from collectors.errors import ConfigError
from collectors.types import QueueSnapshot, RangeData, Snapshot, Source
from models.advisor import (
    HISTORY_FIELDS,
    AdviceRequest,
    AdvisorThresholds,
    ProcessTotals,
    QueueHistory,
    Verdict,
    advise_many,
    histories_from_table,
)
from models.errors import ModelInputError

RANGE_POINTS = 120
"""Points per queue the range read asks for (step = range / 120, at least MIN_STEP_S)."""
MIN_STEP_S = 15.0

DASHBOARD_RANGE_S = 3600.0
"""History the dashboard pages give the advisor: the last hour...
"""
DASHBOARD_STEP_S = 150.0
"""...at one point per 150 s (25 points) — the overview's sparkline read, so one range call
serves both the sparklines and the advisor."""

PROCESS_LABELS: tuple[str, ...] = ("job", "instance", "pod", "namespace")
"""Labels that identify the process running a queue: its API budget is shared with the other
queues of the same process, so their throughputs are summed for API calls per reconcile."""

# QueueHistory series -> RangeData signal names, first present wins.
_SIGNALS: Mapping[str, tuple[str, ...]] = {
    **{name: (name,) for name in HISTORY_FIELDS},
    "depth": ("depth_mean", "depth_current"),
    "errors_per_s": ("errors_per_s", "reconcile_results_per_s.error"),
    "api_409_per_s": ("api_calls_by_class_per_s.409",),
    "api_429_per_s": ("api_calls_by_class_per_s.429",),
}

_WANTED_SIGNALS: frozenset[str] = frozenset(s for c in _SIGNALS.values() for s in c)


def history_from_range(range_data: RangeData, queue: str) -> QueueHistory:
    """One queue's series of a range read, aligned on the union of their times.

    A point a series does not have is NaN in the history (the advisor skips it)."""
    return histories_from_frame(range_data.frame, [queue]).get(
        queue, QueueHistory.from_columns(np.empty(0)))


def histories_from_frame(frame: pd.DataFrame, queues: Sequence[str] | None = None
                         ) -> dict[str, QueueHistory]:
    """Every queue's history from a long-format range frame, in one pass over the frame.

    Equivalent to, for each queue: take its rows of the wanted signals, align them on the union
    of their times, and for each history series use the first of its candidate signals the
    queue has (infinite values become NaN). Done with array operations over all rows at once:
    queue and signal names are hashed once per *run* of equal consecutive names (a range read
    comes grouped by series), times are coded once, and every value is scattered into one
    (series, queue, point) table; :func:`models.advisor.histories_from_table` then checks and
    wraps the rows. 500 queues cost a few tens of milliseconds."""
    if len(frame) == 0:
        return {}
    q_codes, q_names = run_codes(frame["queue"].to_numpy(dtype=object))
    s_codes, s_names = run_codes(frame["signal"].to_numpy(dtype=object))
    # Keep the rows of the wanted signals (and queues).
    wanted_sig = [str(name) for name in s_names if str(name) in _WANTED_SIGNALS]
    sig_slot = np.full(len(s_names), -1, dtype=np.int64)
    for k, name in enumerate(wanted_sig):
        sig_slot[s_names.get_loc(name)] = k
    keep_q = np.ones(len(q_names), dtype=bool) if queues is None else \
        np.asarray(q_names.isin(list(queues)), dtype=bool)
    slot = np.where(s_codes >= 0, sig_slot[s_codes], -1)
    rows = (slot >= 0) & (q_codes >= 0) & keep_q[q_codes]  # code −1: a missing name
    if not rows.any():
        return {}
    slot = slot[rows]
    q_all = q_codes[rows]
    t_all = frame["t"].to_numpy(dtype=np.float64)[rows]
    if not np.all(np.isfinite(t_all)):
        raise ModelInputError("history times must be finite numbers.")
    v_all = frame["value"].to_numpy(dtype=np.float64)[rows]
    v_all = np.where(np.isfinite(v_all), v_all, np.nan)
    # Queues present, renumbered 0..Q-1 in order of first appearance.
    used_q = np.flatnonzero(np.bincount(q_all, minlength=len(q_names)))
    q_new = np.full(len(q_names), -1, dtype=np.int64)
    q_new[used_q] = np.arange(used_q.size)
    q_all = q_new[q_all]
    n_q = used_q.size
    # Each queue's time grid = the sorted union of its times: a row's point index is the
    # rank of its time within its queue.
    t_codes, t_uniq = pd.factorize(t_all, sort=True)
    n_t = len(t_uniq)
    if n_q * n_t <= _DENSE_CELLS_MAX:
        present = np.zeros((n_q, n_t), dtype=bool)
        present[q_all, t_codes] = True
        lengths = present.sum(axis=1)
        rank = np.cumsum(present, axis=1) - 1
        point = rank[q_all, t_codes]
    else:  # many distinct times: rank the (queue, time) pairs by sorting them instead
        pairs, pair_of_row = np.unique(q_all * n_t + t_codes, return_inverse=True)
        pair_q = pairs // n_t
        first = np.searchsorted(pair_q, np.arange(n_q))
        lengths = np.diff(np.append(first, pairs.size))
        point = pair_of_row - first[q_all]
    width = int(lengths.max())
    times = np.full((n_q, width), np.nan)
    times[q_all, point] = np.asarray(t_uniq, dtype=np.float64)[t_codes]
    table = np.full((len(wanted_sig), n_q, width), np.nan)
    table[slot, q_all, point] = v_all
    has = np.zeros((n_q, len(wanted_sig)), dtype=bool)
    has[q_all, slot] = True
    columns: dict[str, np.ndarray] = {}
    for field_name, candidates in _SIGNALS.items():
        col: np.ndarray | None = None
        for sig in reversed(candidates):  # the first candidate a queue has wins
            if sig not in wanted_sig:
                continue
            k = wanted_sig.index(sig)
            if col is None:
                col = np.full((n_q, width), np.nan)
            col[has[:, k]] = table[k][has[:, k]]
        if col is not None:
            columns[field_name] = col
    built = histories_from_table(times, lengths, columns)
    return {str(q_names[q]): h for q, h in zip(used_q.tolist(), built, strict=True)}


_DENSE_CELLS_MAX = 4_000_000
"""Above this many (queue, distinct time) cells the point ranks are found by sorting."""


def run_codes(values: np.ndarray) -> tuple[np.ndarray, pd.Index]:
    """(codes, uniques) like ``pd.factorize`` of an object array, hashing only the first
    value of each run of equal consecutive values: a range frame repeats each queue and
    signal name many times in a row, and hashing 400,000 Python strings costs tens of ms."""
    if values.size == 0:
        return np.empty(0, dtype=np.int64), pd.Index([])
    heads = np.flatnonzero(values[1:] != values[:-1]) + 1
    starts = np.concatenate(([0], heads))
    codes, uniques = pd.factorize(values[starts])
    return np.repeat(codes.astype(np.int64), np.diff(np.append(starts, values.size))), \
        pd.Index(uniques)


@dataclass(frozen=True)
class QueueAdvice:
    queue: str
    verdicts: tuple[Verdict, ...]
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FleetAdvice:
    at: float
    window_s: float
    range_s: float | None
    source: str
    slo_wait_s: float
    queues: tuple[QueueAdvice, ...]
    warnings: tuple[str, ...] = ()

    def payload(self) -> dict[str, Any]:
        """The documented JSON shape of ``queuelens advise --format json``."""
        return {
            "at": self.at,
            "window_s": self.window_s,
            "range_s": self.range_s,
            "source": self.source,
            "slo_wait_s": self.slo_wait_s,
            "queues": [
                {
                    "queue": qa.queue,
                    "verdicts": [
                        {"kind": v.kind, "severity": v.severity, "summary": v.summary,
                         "confidence": v.confidence, "evidence": dict(v.evidence),
                         "recommendation": dict(v.recommendation)}
                        for v in qa.verdicts
                    ],
                }
                for qa in self.queues
            ],
            "warnings": list(self.warnings),
        }


def process_key(q: QueueSnapshot) -> tuple[tuple[str, str], ...] | None:
    """The process labels of a queue, or None when none are known."""
    key = tuple((lb, q.labels[lb]) for lb in PROCESS_LABELS if q.labels.get(lb))
    return key or None


def process_totals(
    queues: Sequence[QueueSnapshot],
) -> dict[tuple[tuple[str, str], ...], ProcessTotals]:
    """Throughput, busy workers and arrivals summed per process over the whole snapshot (the
    API budget and the client-side limiter belong to the process). A sum is None when any
    queue of the process lacks the figure."""
    groups: dict[tuple[tuple[str, str], ...], list[QueueSnapshot]] = defaultdict(list)
    for q in queues:
        pk = process_key(q)
        if pk is not None:
            groups[pk].append(q)

    def total(qs: list[QueueSnapshot], name: str) -> float | None:
        vals = [getattr(q, name) for q in qs]
        return None if any(v is None for v in vals) else float(sum(vals))

    return {
        pk: ProcessTotals(total(qs, "throughput_per_s"), total(qs, "busy_workers"),
                          total(qs, "arrival_rate_per_s"), len(qs))
        for pk, qs in groups.items()
    }


def advise_fleet(
    source: Source,
    at: float,
    window_s: float,
    range_s: float | None,
    slo_wait_s: float,
    queue: str | None = None,
    *,
    thresholds: AdvisorThresholds | None = None,
    keys: Mapping[str, int] | None = None,
) -> FleetAdvice:
    """Verdicts for every queue (or the one named): one ``snapshot`` and, when ``range_s`` is
    given, one ``range`` call over ``[at − range_s, at]`` for all the queues."""
    for name, val in (("time", at), ("window", window_s)):
        if not math.isfinite(val):
            raise ConfigError(f"The {name} must be a finite number, got {val!r}.")
    if range_s is not None and not (math.isfinite(range_s) and range_s > 0):
        raise ConfigError(f"The range must be a positive duration, got {range_s!r}.")
    snap = source.snapshot(at, window_s)
    rng: RangeData | None = None
    if range_s is not None and (queue is None or any(q.queue == queue for q in snap.queues)):
        step = max(range_s / RANGE_POINTS, MIN_STEP_S)
        rng = source.range(at - range_s, at, step, [queue] if queue is not None else None)
    return advise_data(snap, rng, range_s=range_s, slo_wait_s=slo_wait_s, queue=queue,
                       thresholds=thresholds, keys=keys)


def advise_data(
    snap: Snapshot,
    rng: RangeData | None,
    *,
    range_s: float | None,
    slo_wait_s: float,
    queue: str | None = None,
    thresholds: AdvisorThresholds | None = None,
    keys: Mapping[str, int] | None = None,
) -> FleetAdvice:
    """Verdicts from a snapshot and a range read the caller already has (no source calls).

    The dashboard pages use this to share one range read between their charts and the
    advisor (the overview's sparklines, the queue page's history). ``rng`` may cover more
    queues than the one named; ``range_s`` is only reported back."""
    chosen: Sequence[QueueSnapshot] = list(snap.queues)
    if queue is not None:
        chosen = [q for q in snap.queues if q.queue == queue]
        if not chosen:
            known = ", ".join(sorted(q.queue for q in snap.queues)[:20]) or "none"
            raise ConfigError(f"No queue named {queue!r} at that time (queues: {known}).")
    warnings = list(snap.warnings)
    histories: dict[str, QueueHistory] = {}
    if rng is not None and chosen:
        warnings += [w for w in rng.warnings if w not in warnings]
        histories = histories_from_frame(rng.frame, [queue] if queue is not None else None)
    totals = process_totals(snap.queues)
    requests = []
    for q in chosen:
        pk = process_key(q)
        requests.append(AdviceRequest(
            q, histories.get(q.queue), keys=(keys or {}).get(q.queue),
            process=totals.get(pk) if pk is not None else None,
        ))
    # One batched call: the queueing models run vectorized over all queues at once.
    verdicts = advise_many(requests, slo_wait_s=slo_wait_s, thresholds=thresholds)
    out = [QueueAdvice(q.queue, v, dict(q.labels))
           for q, v in zip(chosen, verdicts, strict=True)]
    return FleetAdvice(
        at=snap.at, window_s=snap.window_s, range_s=range_s, source=snap.source,
        slo_wait_s=slo_wait_s, queues=tuple(out), warnings=tuple(warnings),
    )


def recommended_workers(verdicts: Sequence[Verdict]) -> tuple[int, Verdict] | None:
    """The worker count the advisor recommends — the ``workers`` of the first verdict (in the
    advisor's impact order) whose recommendation names one — and that verdict; else None."""
    for v in verdicts:
        c = v.recommendation.get("workers")
        if isinstance(c, int) and not isinstance(c, bool) and c >= 1:
            return c, v
    return None
