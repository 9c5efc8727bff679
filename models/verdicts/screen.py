"""Impossible and implausible measurements, found before any model runs on them.

A queue's figures come from Prometheus or the config, and either can hold a value no
controller has: a worker count of −1 or 10¹² (``controller_runtime_max_concurrent_reconciles``
is a gauge anyone can set; ``profile.workers`` a number anyone can type), a depth of −5, a
negative rate (a recording rule or an adapter that subtracts). Computed with, a negative rate
stopped the whole fleet's advice with an error naming no queue, and a worker count of 10⁷
kept the Erlang recursion busy for 42.5 s (10¹² for ever) to conclude that one key was
processed serially on a queue 0.01 % busy.

:func:`screen` finds them, one queue at a time, and returns the queue's figures without them:

* **impossible** — a negative value of a count, a rate, a duration or a share (every
  :class:`~models.measurements.QueueSnapshot` figure except ``unfinished_work_growth``, a
  derivative that falls when work completes): dropped;
* **implausible** — a worker count above :data:`models.limits.MAX_WORKERS`, the most the
  queueing models compute with (their time grows with the count): dropped, with the
  utilization computed from it.

A dropped figure is ``None`` with the sentence as its ``missing`` reason, so every rule that
needs it says it was not usable (a queue without its worker count is not sized: "Not enough
data to size this queue: missing workers (…)"), and every other rule still runs. The history
(:class:`~models.verdicts.inputs.QueueHistory`) loses the same values point by point (NaN:
not measured). Each problem is one sentence naming the queue, the figure and the value: the
advice's warnings and the plan's caveats carry it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from models.formatting import sig
from models.limits import MAX_WORKERS
from models.measurements import QueueSnapshot
from models.verdicts.inputs import HISTORY_FIELDS, QueueHistory

__all__ = ["SIGNED_FIELDS", "Screened", "screen", "usable"]

SIGNED_FIELDS: frozenset[str] = frozenset({"unfinished_work_growth"})
"""The figures that may be negative: ``deriv(workqueue_unfinished_work_seconds)`` falls when
stuck work completes."""

_MAPPINGS: tuple[str, ...] = (
    "reconcile_results_per_s", "api_calls_by_class_per_s", "depth_by_priority",
    "depth_min_by_priority", "apf_rejected_by_reason", "admission_webhook_mean_s",
)
"""The mapping figures (rates, depths and durations by a label's value): none negative."""


@cache
def _number_fields() -> tuple[str, ...]:
    """Every numeric figure of :class:`QueueSnapshot` that may not be negative."""
    return tuple(f.name for f in dataclasses.fields(QueueSnapshot)
                 if f.type in ("float | None",) and f.name not in SIGNED_FIELDS)


@dataclass(frozen=True)
class Screened:
    """One queue's figures without the impossible and implausible ones."""

    signals: QueueSnapshot
    history: QueueHistory | None
    problems: tuple[str, ...] = ()
    """One sentence per problem, naming the queue, the figure and the value."""


def _bad(name: str, value: float) -> str | None:
    """Why a finite value of figure ``name`` cannot be used, or None when it can."""
    if value < 0:
        return (f"{name} is {sig(value)}, an impossible negative value: left out of the "
                "evaluation; check the series or the recording rule it comes from")
    if name == "workers" and value > MAX_WORKERS:
        return (f"the worker count {sig(value)} is above the {MAX_WORKERS:,} workers the "
                "queueing models compute with, implausible for one controller: the queue is "
                "judged without it; check controller_runtime_max_concurrent_reconciles or "
                "profile.workers")
    return None


def usable(value: float | None, name: str) -> float | None:
    """``value`` of figure ``name`` when it can be computed with (finite and neither
    impossible nor implausible: :func:`screen`), else None."""
    if value is None:
        return None
    v = float(value)
    if not math.isfinite(v) or _bad(name, v) is not None:
        return None
    return v


def screen(signals: QueueSnapshot, history: QueueHistory | None = None) -> Screened:
    """``signals`` and ``history`` without their impossible and implausible values (module
    docstring). Returns the same objects when nothing is wrong (the usual case: a few
    comparisons per figure)."""
    q = signals.queue
    dropped: dict[str, str] = {}
    for name in _number_fields():
        v = getattr(signals, name)
        if v is None:
            continue
        v = float(v)
        if math.isfinite(v):
            why = _bad(name, v)
            if why is not None:
                dropped[name] = why
    changes: dict[str, object] = dict.fromkeys(dropped)
    for name in _MAPPINGS:
        values: Mapping[str, float] = getattr(signals, name) or {}
        neg = {k: v for k, v in values.items() if v is not None and float(v) < 0}
        if neg:
            shown = ", ".join(f"{k or '(empty)'}={sig(float(v))}" for k, v in
                              sorted(neg.items())[:5])
            dropped[name] = (f"{name} has impossible negative values, {shown}: left out of "
                             "the evaluation")
            changes[name] = {k: v for k, v in values.items() if k not in neg}
    if "workers" in dropped and signals.utilization is not None and "utilization" not in dropped:
        changes["utilization"] = None
        dropped["utilization"] = "needs a usable worker count: " + dropped["workers"]
    hist, hist_problems = _screen_history(history, dropped)
    problems = tuple(f"{q}: {why}" for name, why in dropped.items()
                     if not (name == "utilization" and "workers" in dropped)) + tuple(
        f"{q}: {p}" for p in hist_problems)
    if not changes:
        return Screened(signals, hist, problems)
    missing = {**signals.missing, **{k: dropped[k] for k in changes}}
    return Screened(replace(signals, missing=missing, **changes),  # type: ignore[arg-type]
                    hist, problems)


def _screen_history(history: QueueHistory | None, dropped: Mapping[str, str]
                    ) -> tuple[QueueHistory | None, tuple[str, ...]]:
    """The history without negative points (and worker counts above the models' limit);
    a sentence per series that lost points, unless the snapshot's figure of the same name
    already said it."""
    if history is None:
        return None, ()
    masks: dict[str, np.ndarray] = {}
    problems: list[str] = []
    for name in HISTORY_FIELDS:
        arr = getattr(history, name)
        bad = arr < 0  # NaN compares False without a warning
        if name == "workers":
            bad |= arr > MAX_WORKERS
        n = int(np.count_nonzero(bad))
        if not n:
            continue
        masks[name] = bad
        snapshot_name = "depth_mean" if name == "depth" else name
        if snapshot_name not in dropped:
            worst = arr[bad]
            value = worst.max() if name == "workers" and worst.max() > MAX_WORKERS else \
                worst.min()
            problems.append(f"{n} point(s) of the history's {name} are impossible (down to "
                            f"{sig(float(value))})" if value < 0 else
                            f"{n} point(s) of the history's worker count are above the "
                            f"{MAX_WORKERS:,} workers the models compute with (up to "
                            f"{sig(float(value))})")
    if not masks:
        return history, ()
    columns = {name: np.where(masks[name], np.nan, getattr(history, name)) if name in masks
               else getattr(history, name) for name in HISTORY_FIELDS}
    out = object.__new__(QueueHistory)  # the same checked history, with NaN where masked
    object.__setattr__(out, "t_s", history.t_s)
    for name, col in columns.items():
        object.__setattr__(out, name, col)
    return out, tuple(p + "; those points are left out" for p in problems)
