"""Check the change: the plan from before a worker-count change against what came after it.

Where the worker count of a queue's history changed, :func:`check_change` predicts the new
count from the points before the change (the work time measured there, the demand that came
after) and compares the prediction with what the points after it measured. By default the
prediction is M/M/c (:func:`mmc_prediction`: Erlang C, :func:`models.queueing.erlang_c`);
``predict`` plugs in another model (the binding limit's).

**Which points.** A range point at time t does not measure the instant t: its rates, means
and depth are over its rate window (t − w, t] (a range read's window is
``max(step + scrape interval, 4 × scrape interval)``, :func:`collectors.profile.
rate_window_s`). The worker count is a sampled gauge (``last_over_time`` of
``controller_runtime_max_concurrent_reconciles`` over the same window): the point at the old
count that comes last, at t_o, read its value from a sample in (t_o − w, t_o], and the change
happened after that sample; the first point at the new count, at t_n, read the new value from
a sample at or before t_n. So the change lies in (t_o − w, t_n], and the conservative side of
each is taken:

* a *before* point is one of the run at the old count whose window ends at or before the
  earliest the change can be: t ≤ t_o − w;
* an *after* point is one of the run at the new count whose window starts at or after the
  latest it can be: t − w ≥ t_n.

The same holds at the far end of each run (a run bounded by another change keeps only the
points whose windows end before it). A window that reaches across the change mixes the two
counts — on a real controller (c 2 → 4, independent waits) those points made the "after"
mean wait 29.5 ms where the queue waited 4.5 ms and M/M/4 predicted 1.6 ms — so they are left
out and counted (``straddling_before`` / ``straddling_after``).

**The drain.** A backlog built before the change (a queue that was short of workers) is worked
off by the new count first; until it is gone the after points measure the drain, not the
new steady state: throughput above demand, depth and wait above their steady level. The rule,
on the after points in time order:

* the *steady depth* D is the median mean depth of the last :data:`CHANGE_MIN_POINTS` after
  points that are not emptying (below); a point is *emptying* when its throughput exceeds its
  demand by more than :data:`DRAIN_RATE_MARGIN` (10 %);
* there is a backlog from before when the depth of the last point at the old count exceeds
  :data:`DRAIN_DEPTH_FACTOR` · D + :data:`DRAIN_DEPTH_ITEMS` (2·D + 1 item); without a depth
  series the emptying test alone decides;
* the drain is then the leading run of after points that are emptying or whose depth still
  exceeds 2·D + 1; the first point that is neither ends it, and every later point is steady.

The drain is reported apart (``drain_points``, ``drain_s`` — from the change to the last
point that still held the backlog, to within one step and one window —, ``depth_at_change``)
and left out of the observed figures, which are the means over the steady points. The
thresholds: a window whose mean depth is twice the steady one has, at the same demand, twice
the mean wait (Little's law, W = L/λ): an error of the size the check exists to show, so it
cannot be averaged in; the 1 item: the depth counts whole items, and a steady depth near 0
would otherwise make one waiting item a backlog. Throughput and demand over one steady window
differ only by the change in the items in the system over it (a few items: under 10 % of the
window's adds once it holds a few dozen); the emptying test is only applied where a backlog
was there at the change (or no depth was read), so a quiet queue's noise is never a drain.
A drain slower than 10 % net and below twice the last points' depth is read as steady.

**Too short an after.** With fewer than :data:`CHANGE_MIN_POINTS` steady after points the
check waits: the steady throughput and wait at the new count are not measured yet (a drain
still going on is ``status`` ``draining``), and ``wait_more_s`` says about how long until
enough points are there. The last change that can be checked is reported; only when none
can, the last change of the history, waiting.

**Too short a before.** With fewer than :data:`CHANGE_MIN_POINTS` clean points before the
change (a change early in the range, or a short run between two changes) there is no plan
from before to check: the check says so (``status`` ``before_too_short``, no prediction), with
what the after side measured, and — when the range's start cuts the run short — how much
further back a range must reach to hold them (``range_more_s``); a run bounded by an earlier
change never grows. Never silent: every worker-count change in the range gives a check
(issue 35: a 2 → 4 step 150 s into a 280-s range gave none).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from models.advisor import QueueHistory
from models.errors import ModelInputError
from models.queueing import erlang_c
from models.settings import AnalysisSettings

__all__ = [
    "CHANGE_MIN_POINTS",
    "CHANGE_STATUS",
    "DRAIN_DEPTH_FACTOR",
    "DRAIN_DEPTH_ITEMS",
    "DRAIN_RATE_MARGIN",
    "ChangeCheck",
    "Predict",
    "check_change",
    "mmc_prediction",
    "point_window_s",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

Predict = Callable[[int, float, float], tuple[float, float | None]]
"""(worker count, demand /s, mean work time s) → (throughput /s, mean queue wait s or None
where the model has no steady state)."""

CHANGE_MIN_POINTS = 6
"""Clean points on each side of a worker-count change before it is checked: the advisor's
``min_history_points``, the fewest that give a mean rate not dominated by one scrape."""

DRAIN_DEPTH_FACTOR = 2.0
"""A point is still draining while its mean depth exceeds this × the steady depth (plus
:data:`DRAIN_DEPTH_ITEMS`): twice the depth is twice the wait at the same demand (Little)."""
DRAIN_DEPTH_ITEMS = 1.0
"""Whole items above the scaled steady depth: one waiting item is not a backlog."""
DRAIN_RATE_MARGIN = 0.10
"""A point is emptying when its throughput exceeds its demand by more than this fraction: in
a steady window the two differ only by the change in the items in the system."""

CHANGE_STATUS: Mapping[str, str] = MappingProxyType({
    "checked": "enough steady points on each side: the prediction is checked",
    "after_too_short": "too few steady points after the change: the steady throughput and "
                       "wait at the new count are not measured yet",
    "draining": "the backlog from before the change is still draining: the steady state at "
                "the new count is not reached yet",
    "before_too_short": "too few clean points before the change: there is no plan from "
                        "before it to check",
})
"""What each ``ChangeCheck.status`` means."""


@dataclass(frozen=True)
class ChangeCheck:
    """The plan from before a worker-count change, against what happened after it (module
    docstring: which points count, the drain, the status)."""

    at: float
    """Unix time of the first point at the new count (the latest the change can be)."""
    workers_before: int
    workers_after: int
    demand_before_per_s: float | None
    """Mean demand of the clean points before (None: none measured, or too few points)."""
    demand_after_per_s: float | None
    """Mean demand of the steady after points (of the drain's, while it drains; None before
    any clean after point: the prediction then uses the demand before)."""
    service_mean_before_s: float | None
    predicted_throughput_per_s: float | None
    """None where there is no plan from before (``before_too_short``)."""
    observed_throughput_per_s: float | None
    predicted_wait_mean_s: float | None
    """The prediction (M/M/c unless another model is plugged in) at the new count, the demand
    after and the work time before; None where the model has no steady state."""
    observed_wait_mean_s: float | None
    points_before: int
    """Clean points before the change (window wholly before it)."""
    points_after: int
    """Steady clean points after it (window wholly after it, the drain left out)."""
    status: str = "checked"
    """:data:`CHANGE_STATUS`: checked, after_too_short or draining."""
    window_s: float = 0.0
    """The rate window each point covers (t − w, t], as the selection used it."""
    last_before_at: float = 0.0
    """Unix time of the last point at the old count."""
    straddling_before: int = 0
    """Points at the old count left out: their window may reach past the change."""
    straddling_after: int = 0
    """Points at the new count left out: their window reaches back before the change."""
    drain_points: int = 0
    """Clean after points that worked off the backlog from before (not in the figures)."""
    drain_s: float | None = None
    """From the change to the last point that still held the backlog (None: no drain)."""
    depth_at_change: float | None = None
    """Mean depth of the last point at the old count (the backlog the new count inherits)."""
    steady_depth: float | None = None
    """Median depth of the steady points the drain is judged against."""
    wait_more_s: float | None = None
    """About how long until :data:`CHANGE_MIN_POINTS` steady after points exist (None when
    checked, or when a drain's end cannot be estimated)."""
    prediction_basis: str = "M/M/c from the points before the change"
    """What predicted the new count, and whether it is out of sample (the caller says so
    when its model used the points after the change too)."""
    range_more_s: float | None = None
    """With too few points before: how much further back the range must start to hold
    :data:`CHANGE_MIN_POINTS` of them (None when an earlier change bounds the run)."""


def mmc_prediction(workers: int, demand_per_s: float, service_mean_s: float
                   ) -> tuple[float, float | None]:
    """M/M/c at ``workers``: throughput min(λ, c/E[S]); the Erlang C mean wait
    (:func:`models.queueing.erlang_c`) when λ < c/E[S], else None (no steady state)."""
    capacity = workers / service_mean_s
    if demand_per_s >= capacity:
        return capacity, None
    try:
        return demand_per_s, float(erlang_c(demand_per_s, 1.0 / service_mean_s,
                                            workers).wait_mean_s)
    except ModelInputError:
        return demand_per_s, None


def point_window_s(settings: AnalysisSettings) -> float:
    """The longest rate window a range point read with ``settings`` can cover, for
    :func:`check_change`: ``max(window, 2 × step)``.

    A range read's window is ``max(step + scrape, 4 × scrape)`` (:func:`collectors.profile.
    rate_window_s`); the models do not know the scrape interval, so this bounds it for any
    scrape interval up to the step (then step + scrape ≤ 2 × step) and up to a quarter of the
    snapshot window (then 4 × scrape ≤ window; the snapshot's own rates need that many
    samples): 75 s and 300 s at the default 60 s step and 5 min window. A longer window only
    leaves out more points; a shorter one would let straddling windows in."""
    return max(settings.window_s, 2.0 * settings.step_s)


def check_change(h: QueueHistory | None, *, window_s: float = 0.0,
                 predict: Predict | None = None) -> ChangeCheck | None:
    """The last worker-count change of the history that can be checked (module docstring),
    else the last change, waiting for its after side or without enough points before it;
    None without a change.

    ``window_s``: the rate window of each point (:func:`point_window_s` for a read with the
    analysis settings; 0 reads every point as the instant of its time stamp). ``predict``:
    the model of the new count (default :func:`mmc_prediction`)."""
    if isinstance(window_s, bool) or not isinstance(window_s, int | float) \
            or not math.isfinite(window_s) or window_s < 0:
        raise ModelInputError(f"the points' rate window must be a duration of 0 s or more, "
                              f"got {window_s!r}.")
    if h is None or h.points < 2:
        return None
    known = np.isfinite(h.workers)
    idx = np.flatnonzero(known)
    if idx.size < 2:
        return None
    counts = np.rint(h.workers[idx]).astype(np.int64)
    cuts = np.flatnonzero(np.diff(counts) != 0) + 1
    if cuts.size == 0:
        return None
    edges = [0, *cuts.tolist(), int(idx.size)]
    runs = [idx[a:b] for a, b in itertools.pairwise(edges)]
    step = float(np.median(np.diff(h.t_s))) if h.points > 1 else 0.0
    model = predict or mmc_prediction
    pending: ChangeCheck | None = None
    last = len(runs) - 1
    for j in range(last, 0, -1):
        cand = _check_at(h, runs, j, float(window_s), step, model)
        if cand is None:
            continue
        if cand.status == "checked":
            return cand
        if j == last and pending is None:
            pending = cand  # the after side may still grow; an earlier change never will
    return pending


def _clean(h: QueueHistory, runs: list[IntArray], j: int, w: float) -> IntArray:
    """The points of run ``j`` whose windows lie wholly between the runs' changes."""
    run = runs[j]
    t = h.t_s[run]
    keep = np.ones(run.size, dtype=bool)
    if j > 0:
        keep &= t - w >= t[0]  # the change is at or before the run's first point
    if j < len(runs) - 1:
        keep &= t <= t[-1] - w  # ... and after a sample in the last point's window
    return run[keep]


def _check_at(h: QueueHistory, runs: list[IntArray], j: int, w: float, step: float,
              predict: Predict) -> ChangeCheck | None:
    before, after = _clean(h, runs, j - 1, w), _clean(h, runs, j, w)
    c_before = int(np.rint(h.workers[runs[j - 1][0]]))
    c_after = int(np.rint(h.workers[runs[j][0]]))
    if c_before < 1 or c_after < 1:
        return None
    lam_b = _mean(h.arrival_rate_per_s[before])
    svc_b = _mean(h.service_mean_s[before])
    planned = before.size >= CHANGE_MIN_POINTS and lam_b is not None and svc_b is not None \
        and svc_b > 0
    at = float(h.t_s[runs[j][0]])
    last_old = int(runs[j - 1][-1])
    depth_at_change = _finite(h.depth[last_old])
    n_drain, steady_depth = _drain(h, after, depth_at_change)
    drain, steady = after[:n_drain], after[n_drain:]
    lam_a = _mean(h.arrival_rate_per_s[steady]) if steady.size else \
        _mean(h.arrival_rate_per_s[drain])
    x_pred: float | None = None
    wait_pred: float | None = None
    if planned and lam_b is not None and svc_b is not None:
        x_pred, wait_pred = predict(c_after, lam_a if lam_a is not None else lam_b, svc_b)
        if not (math.isfinite(x_pred) and x_pred >= 0) or (
                wait_pred is not None and not (math.isfinite(wait_pred) and wait_pred >= 0)):
            raise ModelInputError(
                f"the prediction for {c_after} workers must be a throughput of 0/s or more "
                f"and a wait of 0 s or more (or none), got {x_pred!r} and {wait_pred!r}.")
    range_more: float | None = None
    if not planned:
        status, wait_more = "before_too_short", None
        if j == 1 and step > 0:  # the range's start cuts the first run short
            range_more = (CHANGE_MIN_POINTS - before.size) * step
    elif steady.size >= CHANGE_MIN_POINTS:
        status, wait_more = "checked", None
    elif n_drain and not steady.size:
        status, wait_more = "draining", _drain_wait_s(h, drain, w, step)
    else:
        status = "after_too_short"
        if after.size:
            wait_more = (CHANGE_MIN_POINTS - steady.size) * step
        else:  # the first clean point is the first one at or after at + w
            t_end = float(h.t_s[runs[j][-1]])
            first = t_end + step * max(1, math.ceil((at + w - t_end) / step - 1e-9)) \
                if step > 0 else at + w
            wait_more = first - t_end + (CHANGE_MIN_POINTS - 1) * step
    return ChangeCheck(
        at=at, workers_before=c_before, workers_after=c_after,
        demand_before_per_s=lam_b, demand_after_per_s=lam_a, service_mean_before_s=svc_b,
        predicted_throughput_per_s=None if x_pred is None else float(x_pred),
        observed_throughput_per_s=_mean(h.throughput_per_s[steady]),
        predicted_wait_mean_s=None if wait_pred is None else float(wait_pred),
        observed_wait_mean_s=_mean(h.queue_wait_mean_s[steady]),
        points_before=int(before.size), points_after=int(steady.size), status=status,
        window_s=w, last_before_at=float(h.t_s[last_old]),
        straddling_before=int(np.count_nonzero(h.t_s[runs[j - 1]] > h.t_s[last_old] - w)),
        straddling_after=int(np.count_nonzero(h.t_s[runs[j]] - w < at)),
        drain_points=n_drain,
        drain_s=float(h.t_s[drain[-1]]) - at if n_drain else None,
        depth_at_change=depth_at_change, steady_depth=steady_depth, wait_more_s=wait_more,
        range_more_s=range_more)


def _drain(h: QueueHistory, after: IntArray, depth_at_change: float | None
           ) -> tuple[int, float | None]:
    """(how many leading after points are the drain, the steady depth): the rule of the
    module docstring."""
    if after.size == 0:
        return 0, None
    x, lam, depth = (h.throughput_per_s[after], h.arrival_rate_per_s[after], h.depth[after])
    with np.errstate(invalid="ignore"):
        emptying = np.nan_to_num(x, nan=-1.0) > (1 + DRAIN_RATE_MARGIN) * np.nan_to_num(
            lam, nan=np.inf)
    calm = np.flatnonzero(~emptying)[-CHANGE_MIN_POINTS:]
    tail = depth[calm]
    tail = tail[np.isfinite(tail)]
    steady = float(np.median(tail)) if tail.size else None
    if steady is None:
        draining = emptying  # no steady depth: the rates alone tell
    else:
        limit = DRAIN_DEPTH_FACTOR * steady + DRAIN_DEPTH_ITEMS
        if depth_at_change is None:
            draining = emptying
        elif depth_at_change <= limit:
            return 0, steady  # no backlog at the change: nothing to drain
        else:
            draining = emptying | (np.nan_to_num(depth, nan=-1.0) > limit)
    stop = np.flatnonzero(~draining)
    return (int(stop[0]) if stop.size else int(after.size)), steady


def _drain_wait_s(h: QueueHistory, drain: IntArray, w: float, step: float) -> float | None:
    """A drain still going on: the last point's depth over its net rate of emptying, then a
    window for the points to clear it and :data:`CHANGE_MIN_POINTS` − 1 steps; None when
    the last point does not show a net emptying rate and a depth."""
    i = int(drain[-1])
    depth, net = h.depth[i], h.throughput_per_s[i] - h.arrival_rate_per_s[i]
    if not (math.isfinite(depth) and math.isfinite(net)) or net <= 0:
        return None
    return float(depth / net) + w + (CHANGE_MIN_POINTS - 1) * step


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _mean(values: FloatArray) -> float | None:
    v = values[np.isfinite(values)]
    return float(v.mean()) if v.size else None
