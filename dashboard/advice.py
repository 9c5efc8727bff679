"""Run the advisor over a source: one snapshot + one range read for the whole fleet.

:func:`advise_fleet` is what every surface calls, with the one
:class:`models.settings.AnalysisSettings`. It reads the source exactly twice (``snapshot``
and ``range`` over the settings' range and step, for all queues), however many queues there
are, then runs the advisor over all queues at once (:func:`models.advisor.assess_many`) and
builds each queue's capacity plan (:func:`models.plan.plan_many`) — the one answer the
overview, the queue page, the what-if page, ``advise``, ``whatif`` and the reports show.
:func:`advise_data` does the same from a snapshot and range read the caller already has (the
overview's sparklines share the advisor's range read).
:func:`histories_from_range` turns the matrices of a :class:`models.measurements.RangeData` into
the advisor's :class:`models.advisor.QueueHistory` objects.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from collectors.errors import ConfigError
from collectors.types import Source
from models.advisor import (
    HISTORY_FIELDS,
    AdviceRequest,
    ProcessTotals,
    QueueHistory,
    Verdict,
    assess_many,
    histories_from_table,
    worker_count,
)
from models.measurements import QueueSnapshot, RangeData, Snapshot
from models.plan import CapacityPlan, PlanRequest, plan_many
from models.settings import AnalysisSettings
from models.verdicts.screen import usable
from models.whatif import WhatIfInputs, WhatIfResult, whatif_sweep

# QueueHistory series -> RangeData signal names, first present wins.
_SIGNALS: Mapping[str, tuple[str, ...]] = {
    **{name: (name,) for name in HISTORY_FIELDS},
    "depth": ("depth_mean", "depth_current"),
    "errors_per_s": ("errors_per_s", "reconcile_results_per_s.error"),
    "api_409_per_s": ("api_calls_by_class_per_s.409",),
    "api_429_per_s": ("api_calls_by_class_per_s.429",),
}

_WANTED_SIGNALS: frozenset[str] = frozenset(s for c in _SIGNALS.values() for s in c)
HISTORY_SIGNALS: frozenset[str] = _WANTED_SIGNALS
"""The range signals the advisor's histories are built from: what a range read for advice
asks the source for (no histogram: the heaviest answers are not needed)."""


def history_from_range(range_data: RangeData, queue: str) -> QueueHistory:
    """One queue's series of a range read, aligned on the union of their times.

    A point a series does not have is NaN in the history (the advisor skips it)."""
    return histories_from_range(range_data, [queue]).get(
        queue, QueueHistory.from_columns(np.empty(0)))


def histories_from_range(range_data: RangeData, queues: Sequence[str] | None = None
                         ) -> dict[str, QueueHistory]:
    """Every queue's history from a range read's matrices, in a few array operations.

    For each queue: its points are the grid times where any wanted signal has a value (the
    union of their times), and each history series is the first of its candidate signals the
    queue has (infinite values become NaN). Queues with no wanted point get no history.
    :func:`models.advisor.histories_from_table` then checks and wraps the rows."""
    rows = np.arange(len(range_data.queues)) if queues is None else np.array(
        [i for i in (range_data.index(q) for q in queues) if i is not None], dtype=np.int64)
    wanted = [s for s in range_data.signal_names if s in _WANTED_SIGNALS]
    if rows.size == 0 or not wanted or len(range_data.t) == 0:
        return {}
    mats = {s: range_data.signals[s][rows] for s in wanted}
    present = np.zeros(mats[wanted[0]].shape, dtype=bool)
    for m in mats.values():
        present |= ~np.isnan(m)
    lengths = present.sum(axis=1)
    keep = lengths > 0
    if not keep.any():
        return {}
    present, lengths, rows = present[keep], lengths[keep], rows[keep]
    mats = {s: m[keep] for s, m in mats.items()}
    width = int(lengths.max())
    q_idx, t_idx = np.nonzero(present)
    point = (np.cumsum(present, axis=1) - 1)[q_idx, t_idx]
    times = np.full((rows.size, width), np.nan)
    times[q_idx, point] = range_data.t[t_idx]
    columns: dict[str, np.ndarray] = {}
    for field_name, candidates in _SIGNALS.items():
        col: np.ndarray | None = None
        for sig in reversed(candidates):  # the first candidate a queue has wins
            if sig not in mats:
                continue
            m = mats[sig]
            has = ~np.isnan(m).all(axis=1)
            if not has.any():
                continue
            if col is None:
                col = np.full((rows.size, width), np.nan)
            vals = np.full((rows.size, width), np.nan)
            vals[q_idx, point] = m[q_idx, t_idx]
            col[has] = vals[has]
        if col is not None:
            columns[field_name] = np.where(np.isfinite(col), col, np.nan)
    built = histories_from_table(times, lengths, columns)
    names = [range_data.queues[i] for i in rows.tolist()]
    return dict(zip(names, built, strict=True))


@dataclass(frozen=True)
class QueueAdvice:
    queue: str
    verdicts: tuple[Verdict, ...]
    labels: Mapping[str, str] = field(default_factory=dict)
    plan: CapacityPlan | None = None
    """The queue's capacity plan (:mod:`models.plan`): what every surface shows."""
    snapshot: QueueSnapshot | None = None
    """What was measured for the queue (the plan's inputs)."""


@dataclass(frozen=True)
class FleetAdvice:
    at: float
    window_s: float
    range_s: float | None
    source: str
    slo_wait_s: float
    queues: tuple[QueueAdvice, ...]
    warnings: tuple[str, ...] = ()
    settings: AnalysisSettings = field(default_factory=AnalysisSettings)
    history: bool = True
    """Whether a history was read (False: ``--range`` was turned off or could not be read)."""

    def describe(self) -> str:
        """What the advice was computed from, in one phrase (pages and reports state it)."""
        text = self.settings.describe()
        if not self.history:
            text = text.split(", ", 1)[-1] + " (no history: the snapshot only)"
        return f"{text}; {self.source}"

    def plan(self, queue: str) -> CapacityPlan | None:
        return next((qa.plan for qa in self.queues if qa.queue == queue), None)

    def payload(self) -> dict[str, Any]:
        """The documented JSON shape of ``queuelens advise --format json``."""
        return {
            "at": self.at,
            "window_s": self.window_s,
            "range_s": self.range_s,
            "source": self.source,
            "slo_wait_s": self.slo_wait_s,
            "settings": self.settings.payload(),
            "queues": [
                {
                    "queue": qa.queue,
                    "plan": qa.plan.payload() if qa.plan is not None else None,
                    "verdicts": [verdict_payload(v) for v in qa.verdicts],
                }
                for qa in self.queues
            ],
            "warnings": list(self.warnings),
        }


def verdict_payload(v: Verdict) -> dict[str, Any]:
    """A verdict as JSON (``advise``, ``whatif``, the JSON report): every field, SI units."""
    return {"kind": v.kind, "severity": v.severity, "headline": v.headline,
            "summary": v.summary, "confidence": v.confidence, "evidence": dict(v.evidence),
            "recommendation": dict(v.recommendation)}


def process_key(q: QueueSnapshot) -> str | None:
    """The process running a queue, as the collector identified it (the profile's process
    labels are the one definition), or None when it is not known. Its API budget is shared
    with the other queues of the same process, so their demand is summed."""
    return q.process


def process_totals(
    queues: Sequence[QueueSnapshot],
) -> dict[str, ProcessTotals]:
    """Throughput, busy workers and arrivals summed per process over the whole snapshot (the
    API budget and the client-side limiter belong to the process). A sum is None when any
    queue of the process lacks the figure."""
    groups: dict[str, list[QueueSnapshot]] = defaultdict(list)
    for q in queues:
        pk = process_key(q)
        if pk is not None:
            groups[pk].append(q)

    def total(qs: list[QueueSnapshot], name: str) -> float | None:
        # a figure no queue can have (a negative rate) is one not measured: the process's
        # sum is then unknown, for this process alone (models.verdicts.screen)
        vals = [usable(getattr(q, name), name) for q in qs]
        return None if any(v is None for v in vals) else float(sum(v or 0.0 for v in vals))

    return {
        pk: ProcessTotals(total(qs, "throughput_per_s"), total(qs, "busy_workers"),
                          total(qs, "arrival_rate_per_s"), len(qs))
        for pk, qs in groups.items()
    }


@dataclass(frozen=True)
class QueueWhatIf:
    """The what-if of one measured queue: its plan and the sweep over the worker range asked
    for, from one snapshot and one range read."""

    advice: FleetAdvice
    queue: QueueSnapshot
    plan: CapacityPlan | None
    inputs: WhatIfInputs | None
    """The plan's sizing inputs, the worker range replaced by the one asked for; None when
    λ, the work time or c was not measured."""
    result: WhatIfResult | None


def queue_whatif(
    source: Source,
    at: float,
    settings: AnalysisSettings,
    queue: str,
    *,
    keys: int | None = None,
    workers: tuple[int, int] | None = None,
    history: bool = True,
) -> QueueWhatIf:
    """:func:`advise_fleet` for ``queue`` plus the what-if sweep over ``workers`` (default:
    the plan's own range) with the inputs the plan sized the queue with."""
    advice = advise_fleet(source, at, settings, queue, keys={queue: keys} if keys else None,
                          history=history)
    measured = advice.queues[0].snapshot
    assert measured is not None
    plan = advice.queues[0].plan
    inputs = plan.sizing if plan is not None else None
    result = None
    if inputs is not None:
        if workers is not None:
            inputs = replace(inputs, workers_min=workers[0], workers_max=workers[1])
        result = whatif_sweep(inputs)
    return QueueWhatIf(advice, measured, plan, inputs, result)


def source_framework(source: Source | None) -> str | None:
    """``controller-runtime`` or ``component-base``: the profile a Prometheus source reads
    with (the knob of a plan depends on it); None for a source without a profile."""
    profile = getattr(source, "profile", None)
    name = getattr(profile, "name", None)
    return name if isinstance(name, str) else None


def _read(source: Source, at: float, settings: AnalysisSettings, queue: str | None,
          history: bool = True) -> tuple[Snapshot, RangeData | None]:
    """The snapshot and the advisor's range read (:data:`HISTORY_SIGNALS`) of one advice."""
    if not math.isfinite(at):
        raise ConfigError(f"The time must be a finite number, got {at!r}.")
    snap = source.snapshot(at, settings.window_s)
    rng: RangeData | None = None
    if history and (queue is None or any(q.queue == queue for q in snap.queues)):
        rng = source.range(at - settings.range_s, at, settings.step_s,
                           [queue] if queue is not None else None, HISTORY_SIGNALS)
    return snap, rng


def advise_fleet(
    source: Source,
    at: float,
    settings: AnalysisSettings,
    queue: str | None = None,
    *,
    keys: Mapping[str, int] | None = None,
    history: bool = True,
) -> FleetAdvice:
    """Plans and verdicts for every queue (or the one named): one ``snapshot`` and, unless
    ``history`` is False, one ``range`` call over the settings' range for all the queues."""
    snap, rng = _read(source, at, settings, queue, history)
    return advise_data(snap, rng, settings, queue=queue, keys=keys,
                       framework=source_framework(source),
                       poll_periods=source_poll_periods(source))


def source_poll_periods(source: Source) -> Mapping[str, float]:
    """The ``RequeueAfter`` periods the source's profile was configured with (``{}``: none,
    or a source without a profile)."""
    periods = getattr(getattr(source, "profile", None), "poll_periods", None)
    return periods if isinstance(periods, Mapping) else {}


def advise_data(
    snap: Snapshot,
    rng: RangeData | None,
    settings: AnalysisSettings,
    *,
    queue: str | None = None,
    keys: Mapping[str, int] | None = None,
    framework: str | None = None,
    poll_periods: Mapping[str, float] | None = None,
) -> FleetAdvice:
    """Plans and verdicts from a snapshot and a range read the caller already has (no source
    calls). ``poll_periods``: the profile's requested ``RequeueAfter`` periods by queue.
    ``rng`` should be read with the settings' range and step (:func:`advice_range`):
    that is what makes every surface give the same answer. It may cover more queues than
    the one named."""
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
        histories = histories_from_range(rng, [queue] if queue is not None else None)
    totals = process_totals(snap.queues)
    requests = []
    for q in chosen:
        pk = process_key(q)
        requests.append(AdviceRequest(
            q, histories.get(q.queue), keys=(keys or {}).get(q.queue),
            process=totals.get(pk) if pk is not None else None,
            poll_period_s=(poll_periods or {}).get(q.queue),
        ))
    # One batched call: the queueing models run vectorized over all queues at once.
    assessments = assess_many(requests, slo_wait_s=settings.slo_wait_s,
                              thresholds=settings.thresholds)
    # The plans are built from what the advisor computed with: the figures without the
    # impossible and implausible values it left out (models.verdicts.screen), which the
    # warnings name, each once.
    for a in assessments:
        warnings += [p for p in a.problems if p not in warnings]
    used = [a.signals or q for q, a in zip(chosen, assessments, strict=True)]
    plans = plan_many([
        PlanRequest(q.queue, a, a.history if a.signals is not None else histories.get(q.queue),
                    worker_count(u.workers), u.arrival_rate_per_s, framework,
                    _one(q.labels.get("namespace")),
                    _one(q.labels.get("job")) or _one(q.labels.get("pod")),
                    throughput_now_per_s=u.throughput_per_s)
        for q, u, a in zip(chosen, used, assessments, strict=True)], settings)
    out = [QueueAdvice(q.queue, a.verdicts, dict(q.labels), p, q)
           for q, a, p in zip(chosen, assessments, plans, strict=True)]
    return FleetAdvice(
        at=snap.at, window_s=snap.window_s, range_s=settings.range_s if rng is not None
        else None, source=snap.source, slo_wait_s=settings.slo_wait_s, queues=tuple(out),
        warnings=tuple(warnings), settings=settings, history=rng is not None,
    )


def _one(value: str | None) -> str | None:
    """A label value that names one thing (a queue run by several processes joins their
    values with commas: no single ServiceAccount then)."""
    return value if value and "," not in value else None
