"""Queue detail (`/queue/<name>`): one queue's history, its model fit and the five measurements.

The page reads the source twice per refresh, through the app's shared cache: one
``snapshot`` (the current values) and one ``range`` for this queue only. From those:

* seven time-series charts over the chosen range (15m … 7d): depth with the fluid projection
  of the backlog from now (:mod:`models.fluid`, drained at full capacity c·μ); arrivals vs
  throughput vs capacity c·μ; queue wait and work quantiles; busy vs max workers; retries
  and errors; API calls by code class; external effects per reconcile;
* the M/M/c (Erlang C, :mod:`models.queueing`) wait at the current worker count beside the
  observed wait, so the user sees how well the model fits this queue;
* the five things the spec says to measure together before adding workers: queue age,
  reconcile duration, retry counts, API calls and external effects.

A missing value is shown as "no data" (with the collector's reason as a tooltip), never as 0,
and the charts leave a gap where samples are missing. The queue name comes from the URL
(percent-decoded) and is only ever rendered as component text (escaped by Dash/React). A name
may hold any character a Prometheus label value can — a line break included, which Flask's
catch-all route does not match (``.`` stops at a newline): :func:`register` adds a route for
``/queue/<anything>`` so such a queue's page is served like any other, and the heading shows
control characters as escapes (``\\n``) rather than as nothing.
The ``#queue-verdicts`` card shows the advisor's verdicts (:mod:`models.advisor` through
:func:`dashboard.advice.advise_data`, from the same two reads): kind, severity, summary, the
key evidence figures and the recommendation, in the advisor's order of impact.

State in the address (issue 21): ``/queue/<name>?range=6h`` opens the page on that history
range (:func:`range_from_query`; an unknown value shows the default and says so), and choosing
another range rewrites ``range=`` in the address (``history.replaceState``: a reload keeps it,
a link shares it, and the back button is not filled with one entry per click). The tab title
is "queuelens — <queue>".

Zoom: every chart's ``uirevision`` is keyed to the queue and the range
(:func:`dashboard.figures.set_uirevision`), so the 15 s refresh keeps the user's zoom and a
new range starts unzoomed; the time charts share one x-range — zooming one zooms all
(:data:`SHARE_XRANGE_JS`, in the browser), and the refresh draws every chart at the shared
range (:func:`apply_xrange`), so charts zoomed by the script keep it too.

Tests call :func:`queue_view` and :func:`render_view` directly; the Dash callback is thin.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

import dash
import numpy as np
from dash import Input, Output, State, dcc, html
from werkzeug.routing import BaseConverter

from collectors.cache import CachedSource
from collectors.errors import CollectorError
from collectors.types import Source
from dashboard import figures as fg
from dashboard.advice import advise_fleet
from dashboard.card import Evidence, plan_evidence, render_plan_card
from dashboard.context import AppContext, clientside_callback, page_title, register_page
from dashboard.numbers import number_text as fmt  # the one formatter, short
from dashboard.numbers import sig
from dashboard.plan_words import evidence_label, evidence_value
from dashboard.signals import Series, capacity_per_s, combine, ratio
from models.advisor import Verdict, worker_count
from models.errors import ModelInputError
from models.fluid import fluid_backlog, fluid_summary
from models.formatting import percent_text
from models.measurements import QueueSnapshot, RangeData
from models.plan import CapacityPlan
from models.queueing import erlang_c, erlang_c_wait_quantile
from models.settings import AnalysisSettings
from models.verdicts.screen import screen

PATH_TEMPLATE = "/queue/<name>"

RANGES: dict[str, float] = {
    "15m": 900.0, "1h": 3600.0, "6h": 21600.0, "24h": 86400.0, "7d": 604800.0,
}
"""Selectable history ranges (seconds)."""
DEFAULT_RANGE = "1h"
MAX_SHOWN_CHARS = 40
"""The longest piece of the address a note quotes (the address may hold anything)."""
POINTS = 240
"""Points per series the range read asks for (step = range / POINTS, at least MIN_STEP_S)."""
MIN_STEP_S = 15.0
PROJECTION_POINTS = 60

GRAPH_IDS: tuple[str, ...] = (
    "queue-depth-graph", "queue-rates-graph", "queue-durations-graph", "queue-workers-graph",
    "queue-retries-graph", "queue-api-graph", "queue-effects-graph",
)
QUANTILE_LABELS = ("p50", "p95", "p99")


# --- pure view model --------------------------------------------------------------------------

@dataclass(frozen=True)
class Measure:
    """One line of the "measure before adding workers" panel."""

    label: str
    value: str
    """The formatted value(s), or 'no data'."""
    note: str = ""
    """What it is / why it is missing (shown as a tooltip and in small print)."""


@dataclass(frozen=True)
class QueueView:
    """Everything the page shows for one queue; ``message`` alone when it cannot show it."""

    queue: str
    message: str = ""
    figures: Mapping[str, fg.Figure] = field(default_factory=dict)
    measures: tuple[Measure, ...] = ()
    beyond: tuple[Measure, ...] = ()
    """Beyond the queue: the API client and server, webhooks, priorities."""
    model_fit: tuple[str, ...] = ()
    fluid: str = ""
    summary: str = ""
    verdicts: tuple[Verdict, ...] = ()
    """The advisor's verdicts for the queue, in its order of impact."""
    advice_note: str = ""
    """What the verdicts were computed from (range, SLO), or why there are none."""
    plan: CapacityPlan | None = None
    """The queue's capacity plan (the same as ``advise``'s and the other pages')."""
    evidence: tuple[Evidence, ...] = ()
    source: str = ""


def range_step(range_s: float) -> float:
    """The range read's step: range / POINTS, at least MIN_STEP_S."""
    return max(range_s / POINTS, MIN_STEP_S)


def signal_series(range_data: RangeData, queue: str) -> dict[str, Series]:
    """{signal: (t, value)} of one queue, sorted by time (absent points stay absent)."""
    out: dict[str, Series] = {}
    for signal in range_data.signal_names:
        t, v = range_data.series(queue, signal)
        if len(t):
            out[signal] = (t.tolist(), v.tolist())
    return out


NO_BACKLOG_ITEMS = 0.5
"""A time-averaged depth under half an item is an empty queue with the odd key passing
through: the readout says the backlog is empty rather than "clears in < 0.001 s"."""


def fluid_projection(
    q: QueueSnapshot, now: float, horizon_s: float
) -> tuple[Series | None, str]:
    """The fluid backlog from now, q(t) = max(0, q0 + (λ − c·μ)·t), and its sentence."""
    cap = capacity_per_s(q)
    lam, q0 = q.arrival_rate_per_s, q.depth_current
    needed = {"arrival rate": lam, "current depth": q0, "capacity c·μ": cap}
    absent = [k for k, v in needed.items() if v is None]
    if absent or lam is None or q0 is None or cap is None:
        return None, "No fluid projection: " + ", ".join(absent) + " not measured."
    try:
        summary = fluid_summary(q0, lam, cap)
        ts = np.linspace(0.0, horizon_s, PROJECTION_POINTS + 1)
        clear = summary.clear_time_s
        if clear is not None and 0 < clear < horizon_s:
            ts = np.unique(np.append(ts, clear))
        qs = fluid_backlog(q0, lam, cap, ts)
    except ModelInputError as exc:
        return None, f"No fluid projection: {exc}"
    series: Series = ((now + ts).tolist(), qs.tolist())
    g = summary.growth_per_s
    head = (f"Fluid view (λ = {fmt(lam, '/s')}, full capacity c·μ = {fmt(cap, '/s')}, "
            f"backlog now {fmt(q0, 'items')}): ")
    if g > 0:
        return series, head + (
            f"the backlog grows by {fmt(g, 'items/s')} and never clears at this worker count "
            f"(+{fmt(float(qs[-1]) - q0, 'items')} over the next {fmt(horizon_s, 's')})."
        )
    if clear is None:
        return series, head + "λ = c·μ: the backlog stays where it is."
    if clear == 0 or q0 < NO_BACKLOG_ITEMS:
        return series, head + (
            "the backlog is empty and λ < c·μ, so it stays empty; short waits come from "
            "randomness, which the fluid view leaves out (see the M/M/c estimate)."
        )
    steady = _random_depth(q)
    if steady is not None and q0 <= 3.0 * max(steady, 1.0):
        # a depth of this size is the queue's randomness at this load, not a backlog: the
        # fluid view's "clears in" would be contradicted by the depth staying there
        return series, head + (
            f"a depth of {fmt(q0, 'items')} is what randomness keeps queued at this load "
            f"(M/M/c: {fmt(steady, 'items')} on average), not a backlog; the fluid view, "
            f"which leaves randomness out, would clear it in {fmt(clear, 's')}.")
    return series, head + f"the backlog clears in {fmt(clear, 's')} at full capacity."


def _random_depth(q: QueueSnapshot) -> float | None:
    """M/M/c's mean queue length Lq at the queue's λ, E[S] and c (None where it has none):
    what a depth is expected to be from random arrivals alone."""
    c = worker_count(q.workers)
    lam, svc = q.arrival_rate_per_s, q.service_mean_s
    if c is None or lam is None or svc is None or lam <= 0 or svc <= 0 or lam * svc >= c:
        return None
    try:
        return float(erlang_c(lam, 1.0 / svc, c).queue_length_mean)
    except ModelInputError:
        return None


def model_fit(q: QueueSnapshot) -> tuple[str, ...]:
    """Sentences: the M/M/c wait at the current worker count beside the observed wait."""
    lam, s = q.arrival_rate_per_s, q.service_mean_s
    workers = worker_count(q.workers)  # the advisor's rounding: 0.6 measured workers is 1
    if lam is None or s is None or workers is None or not s > 0:
        absent = [n for n, v in (("arrival rate", lam), ("mean work time", s),
                                 ("workers", workers)) if v is None]
        return (f"No M/M/c estimate: {', '.join(absent) or 'inputs'} not measured.",)
    try:
        res = erlang_c(lam, 1.0 / s, workers)
    except ModelInputError as exc:
        return (f"No M/M/c estimate: {exc}",)
    if not bool(res.stable):
        return (
            f"M/M/c at c = {workers}: unstable — λ = {fmt(lam, '/s')} ≥ c·μ = "
            f"{fmt(workers / s, '/s')}; the model has no steady-state wait (it grows without "
            f"bound). Observed mean wait: {fmt(q.queue_wait_mean_s, 's')}.",
        )
    model_mean = float(res.wait_mean_s)
    model_p95 = float(erlang_c_wait_quantile(res, 0.95))
    lines = [
        f"Mean wait: observed {fmt(q.queue_wait_mean_s, 's')} · M/M/c model "
        f"{fmt(model_mean, 's')}{_versus(q.queue_wait_mean_s, model_mean)}",
        f"p95 wait: observed {fmt(q.queue_wait_p95_s, 's')} · M/M/c model "
        f"{fmt(model_p95, 's')}{_versus(q.queue_wait_p95_s, model_p95)}",
        f"Model inputs: λ = {fmt(lam, '/s')}, mean work time {fmt(s, 's')}, c = {workers}, "
        f"ρ = {fmt(float(res.utilization))}, P(wait) {_equals(float(res.p_wait))}. The estimate "
        "assumes Poisson arrivals and exponential work times and ignores coalescing and "
        "retries; a large gap means those assumptions do not hold for this queue.",
    ]
    return tuple(lines)


def _equals(value: float) -> str:
    """'= 0.25', or '< 0.001' without a '=' before it."""
    text = fmt(value)
    return text if text.startswith(("<", ">")) else f"= {text}"


def _versus(observed: float | None, model: float) -> str:
    r = ratio(observed, model)
    if r is None:
        return ""
    if r > 1000:  # a model wait of ~0 (idle workers): the multiple itself means nothing
        return " (observed is over 1,000× the model)"
    return f" (observed is {sig(r, 2)}× the model)"


def measures(q: QueueSnapshot) -> tuple[Measure, ...]:
    """The five things to measure together before adding workers (spec), from the snapshot.

    The p95s are written as far as their histogram bucket supports them
    (:func:`dashboard.numbers.snapshot_quantile_text`: a range for a decade bucket), and a
    p95 whose bucket lies below the mean says so in the note."""
    from dashboard.numbers import snapshot_quantile_note, snapshot_quantile_text

    x = q.throughput_per_s
    why = dict(q.missing)

    def note(base: str, *fields: str) -> str:
        reasons = [why[f] for f in fields if f in why]
        return base + (f" Missing: {reasons[0]}." if reasons else "")

    def with_tail(text: str, name: str, what: str) -> str:
        extra = snapshot_quantile_note(q, name, what)
        return f"{text} {extra}" if extra else text

    classes = dict(q.api_calls_by_class_per_s)
    conflict = classes.get("409")
    throttled = classes.get("429")
    return (
        Measure("queue age (wait before a worker picks the item up)",
                f"p95 {snapshot_quantile_text(q, 'queue_wait_p95_s')} · "
                f"mean {fmt(q.queue_wait_mean_s, 's')}",
                with_tail(note("workqueue_queue_duration_seconds.", "queue_wait_p95_s"),
                          "queue_wait_p95_s", "items")),
        Measure("reconcile duration (work time)",
                f"p95 {snapshot_quantile_text(q, 'work_p95_s')} · "
                f"mean {fmt(q.service_mean_s, 's')} · "
                f"longest running {fmt(q.longest_running_s, 's')}",
                with_tail(note("workqueue_work_duration_seconds.", "work_p95_s",
                               "service_mean_s"), "work_p95_s", "passes")),
        Measure("retry counts",
                f"{fmt(q.retries_per_s, '/s')} · {fmt(ratio(q.retries_per_s, x))} per "
                f"reconcile · errors {fmt(q.errors_per_s, '/s')}",
                note("workqueue_retries_total counts every delayed re-add, planned requeues "
                     "included.", "retries_per_s")),
        Measure("API calls (whole process)",
                f"{fmt(q.api_calls_per_s, '/s')} · {fmt(ratio(q.api_calls_per_s, x))} per "
                f"reconcile · 409 {fmt(conflict, '/s')} · 429 {fmt(throttled, '/s')}",
                note("rest_client_requests_total is per process: shared by every controller "
                     "in it, so per-reconcile figures are an upper bound.", "api_calls_per_s")),
        Measure("external effects",
                f"{fmt(q.external_effects_per_s, '/s')} · "
                f"{fmt(ratio(q.external_effects_per_s, x))} per reconcile",
                note("Writes to systems outside the cluster.", "external_effects_per_s")),
    )


def beyond_measures(q: QueueSnapshot) -> tuple[Measure, ...]:
    """Where the wait goes beyond the queue: the API client's time, the API server's priority
    level, the admission webhooks, the priority queue and the failures that are not plain
    errors (issue 13); the same snapshot figures the advisor reads."""

    why = dict(q.missing)

    def note(base: str, *fields: str) -> str:
        reasons = [why[f] for f in fields if f in why]
        return base + (f" Missing: {reasons[0]}." if reasons else "")

    util = ratio(q.apf_seats_in_use_mean, q.apf_seat_limit)
    hooks = sorted(q.admission_webhook_mean_s.items(), key=lambda kv: -kv[1])
    slowest = (f"{hooks[0][0]} {fmt(hooks[0][1], 's')}" if hooks else "no data")
    prio = " · ".join(f"{p}: {sig(d)}" for p, d in q.depth_by_priority.items())
    served = ratio(q.served_webhook_s_per_s, q.served_webhook_requests_per_s)
    return (
        Measure("API time (whole process)",
                f"{fmt(q.api_request_s_per_s)} requests in flight · writes "
                f"{fmt(q.api_writes_per_s, '/s')} · retries {fmt(q.api_retries_per_s, '/s')}",
                note("rest_client_request_duration_seconds: seconds per second in API calls "
                     "(Little's law: requests in flight); retries sleep Retry-After inside "
                     "the pass.", "api_request_s_per_s")),
        Measure(f"API server level {q.apf_priority_level or ''}".strip(),
                f"seats {fmt(q.apf_seats_in_use_mean)} of {fmt(q.apf_seat_limit)}"
                + (f" ({percent_text(util)})" if util is not None else "")
                + f" · queue wait {fmt(q.apf_wait_mean_s, 's')} · queued "
                f"{fmt(q.apf_inqueue_mean)} · dispatched {fmt(q.apf_dispatched_per_s, '/s')}"
                f" · rejected {fmt(q.apf_rejected_per_s, '/s')}"
                + (" (" + ", ".join(f"{k} {sig(v)}/s" for k, v in
                                    q.apf_rejected_by_reason.items()) + ")"
                   if q.apf_rejected_by_reason else ""),
                note("apiserver_flowcontrol_*: the level's figures, shared by every client "
                     "in it (a dedicated FlowSchema makes them this controller's).",
                     "apf_seat_limit")),
        Measure("admission webhooks (slowest)",
                f"{slowest} · writes {fmt(q.apiserver_write_latency_mean_s, 's')} "
                f"(without webhooks and APF wait "
                f"{fmt(q.apiserver_write_sli_mean_s, 's')})",
                note("apiserver_admission_webhook_admission_duration_seconds, cluster-wide.",
                     "admission_webhook_mean_s", "apiserver_write_latency_mean_s")),
        Measure("webhooks this manager serves",
                f"{fmt(q.served_webhook_requests_per_s, '/s')} · mean {fmt(served, 's')}"
                f" · in flight {fmt(q.served_webhook_in_flight)}",
                note("controller_runtime_webhook_*: the process's own webhook server, called "
                     "by the API server inside other clients' writes.",
                     "served_webhook_requests_per_s")),
        Measure("depth by priority",
                prio or _no_priority(q.missing.get("priority_series")),
                note("Only workqueue_depth carries priority: wait and work figures blend "
                     "the priorities." + (f" {sig(q.priority_series)} priority values."
                                          if q.priority_series else ""), "priority_series")),
        Measure("failures beyond errors",
                f"panics {fmt(q.reconcile_panics_per_s, '/s')} · timeouts "
                f"{fmt(q.reconcile_timeouts_per_s, '/s')} · terminal "
                f"{fmt(q.terminal_errors_per_s, '/s')}",
                note("controller_runtime_reconcile_{panics,timeouts}_total and "
                     "terminal_reconcile_errors_total: terminal errors are not retried.",
                     "reconcile_panics_per_s")),
    )


def queue_view(source: Source | None, name: str, range_key: str, now: float,
               settings: AnalysisSettings | None = None) -> QueueView:
    """Read the queue from ``source`` and build the page's content (see module docstring).

    The capacity plan comes from the settings' reads (:func:`dashboard.advice.advise_fleet`:
    the shared snapshot and the advisor's range read of this queue, whatever range the
    charts show), so the card says what ``advise`` and the other pages say."""
    settings = settings or AnalysisSettings()
    window_s = settings.window_s
    if source is None:
        return QueueView(name, "No data source is configured.")
    if not name:
        return QueueView(name, "No queue was named in the address (use /queue/<name>).")
    range_s = RANGES.get(range_key)
    if range_s is None:
        return QueueView(name, f"Unknown range {range_key!r}: choose one of "
                               f"{', '.join(RANGES)}.")
    try:
        snap = source.snapshot(now, window_s)
    except CollectorError as exc:
        if isinstance(source, CachedSource):  # the page's banner already gives the error
            return QueueView(name, "Nothing to show until the data source answers (the "
                                   "note at the top of the page says why).")
        return QueueView(name, f"Could not read the queues: {exc}")
    found = [q for q in snap.queues if q.queue == name]
    if not found:
        known = sorted(q.queue for q in snap.queues)
        shown = ", ".join(known[:12]) + (" …" if len(known) > 12 else "")
        return QueueView(name, f"There is no queue named “{name}” in {snap.source}. "
                               f"Known queues: {shown or 'none'}.")
    # the queue's figures without the impossible and implausible ones (a worker count of
    # 1e12 would keep the M/M/c estimate's recursion running for ever), each named once
    screened = screen(found[0])
    q = screened.signals
    step = range_step(range_s)
    warnings = list(snap.warnings)
    warnings += [p for p in screened.problems if p not in warnings]
    rng: RangeData | None = None
    try:
        rng = source.range(now - range_s, now, step, [name])
        series = signal_series(rng, name)
        warnings += [w for w in rng.warnings if w not in warnings]
    except CollectorError as exc:
        series = {}
        warnings.append(f"Could not read the history: {exc}")
    verdicts, advice_note, plan = queue_advice(source, now, name, settings)
    projection, fluid_text = fluid_projection(q, now, range_s / 4)
    figs = build_figures(series, step, projection, now)
    summary = (f"{len(series.get('depth_current', ([], []))[0])} points per signal, one every "
               f"{fmt(step, 's')}, from {snap.source}.")
    if warnings:
        summary += " " + " ".join(warnings)
    evidence = (plan_evidence(q, plan, getattr(source, "profile", None))
                if plan is not None else ())
    return QueueView(q.queue, "", figs, measures(q), beyond_measures(q), model_fit(q),
                     fluid_text, summary,
                     verdicts, advice_note, plan, evidence, snap.source)


def queue_advice(source: Source, now: float, name: str, settings: AnalysisSettings
                 ) -> tuple[tuple[Verdict, ...], str, CapacityPlan | None]:
    """(verdicts, note, plan): the queue's plan from the settings' reads."""
    try:
        advice = advise_fleet(source, now, settings, name)
    except (ModelInputError, CollectorError) as exc:
        return (), f"No capacity plan: {exc}", None
    note = f"From {advice.describe()}. Most important first."
    return advice.queues[0].verdicts, note, advice.queues[0].plan


def build_figures(
    series: Mapping[str, Series], step: float, projection: Series | None, now: float
) -> dict[str, fg.Figure]:
    """The seven charts of the page from the queue's series."""

    def s(name: str) -> Series:
        return series.get(name, ([], []))

    capacity = combine(series.get("workers"), series.get("service_mean_s"), "div")
    depth = s("depth_current") if s("depth_current")[0] else s("depth_mean")
    api = {cls: s(f"api_calls_by_class_per_s.{cls}") for cls in ("2xx", "4xx", "409", "429",
                                                                  "5xx")}
    errors = s("errors_per_s") if s("errors_per_s")[0] else s("reconcile_results_per_s.error")
    return {
        "queue-depth-graph": fg.depth_figure(depth, step, projection, now),
        "queue-rates-graph": fg.rates_figure(s("arrival_rate_per_s"), s("throughput_per_s"),
                                             capacity, step),
        "queue-durations-graph": fg.durations_figure(
            {k: s(f"queue_wait_{k}_s") for k in QUANTILE_LABELS},
            {k: s(f"work_{k}_s") for k in QUANTILE_LABELS}, step),
        "queue-workers-graph": fg.workers_figure(s("busy_workers"), s("workers"), step),
        "queue-retries-graph": fg.retries_errors_figure(s("retries_per_s"), errors, step),
        "queue-api-graph": fg.api_calls_figure(api, step),
        "queue-effects-graph": fg.effects_figure(
            combine(series.get("external_effects_per_s"), series.get("throughput_per_s"),
                    "div"), step),
    }


# --- state in the address -------------------------------------------------------------------

def range_from_query(value: object) -> tuple[str, str]:
    """(range key, note) from the address's ``range=`` value: a known key and '', else
    :data:`DEFAULT_RANGE` and one sentence saying why (absent: the default, no note)."""
    if value is None:
        return DEFAULT_RANGE, ""
    if isinstance(value, str) and value in RANGES:
        return value, ""
    shown = _quoted(value)
    return DEFAULT_RANGE, (f"The address asks for the history range {shown}, which is not one "
                           f"of {', '.join(RANGES)}: showing {DEFAULT_RANGE}.")


def _quoted(value: object) -> str:
    """A value from the address as a note quotes it: repr, cut to MAX_SHOWN_CHARS."""
    text = repr(value) if isinstance(value, str) else "several values"
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS - 1] + "…"


MAX_RANGE_VALUE_CHARS = 40
"""The longest x-range end the page accepts from the browser (a Plotly date string such as
'2020-02-10 13:20:00.1234' has 24)."""


def shared_xrange(value: object) -> list[str | float] | None:
    """The browser's shared x-range ([start, end]: Plotly date strings or numbers) when it is
    one, else None (no zoom: the charts' own range)."""
    if not (isinstance(value, list | tuple) and len(value) == 2):
        return None
    out: list[str | float] = []
    for end in value:
        if isinstance(end, str) and 0 < len(end) <= MAX_RANGE_VALUE_CHARS:
            out.append(end)
        elif (isinstance(end, int | float) and not isinstance(end, bool)
              and np.isfinite(end)):
            out.append(float(end))
        else:
            return None
    return out


def apply_xrange(figures: Mapping[str, fg.Figure], xrange: object) -> None:
    """Draw every time chart (not a "no data" one) at the shared ``xrange``
    (:func:`shared_xrange`); nothing when there is none."""
    shown = shared_xrange(xrange)
    if shown is None:
        return
    for fig in figures.values():
        axis = fig["layout"].get("xaxis", {})
        if axis.get("visible", True):
            axis.update(range=list(shown), autorange=False)


SHARE_XRANGE_JS = """
function() {
    // One x-range for the queue page's time charts: a zoom (or autoscale) of one chart is
    // applied to the others; the range goes to the store, which the refresh draws with.
    const C = window.dash_clientside;
    const ids = %s;
    const trig = (C.callback_context.triggered || [])[0];
    const trigId = trig ? trig.prop_id.split('.')[0] : null;
    if (!trigId || trigId === 'queue-range') { return null; }
    const rd = arguments[ids.indexOf(trigId)];
    if (!rd) { return C.no_update; }
    let range;
    if (rd['xaxis.range[0]'] !== undefined) {
        range = [rd['xaxis.range[0]'], rd['xaxis.range[1]']];
    } else if (Array.isArray(rd['xaxis.range'])) {
        range = rd['xaxis.range'].slice(0, 2);
    } else if (rd['xaxis.autorange']) {
        range = null;
    } else {
        return C.no_update;  // a y-only zoom, a resize: nothing to share
    }
    for (const id of ids) {
        if (id === trigId) { continue; }
        const gd = document.querySelector('#' + id + ' .js-plotly-plot');
        const ax = gd && gd._fullLayout && gd._fullLayout.xaxis;
        if (!ax || ax.visible === false || !window.Plotly) { continue; }
        if (range === null) {
            if (!ax.autorange) { window.Plotly.relayout(gd, {'xaxis.autorange': true}); }
            continue;
        }
        const same = ax.range && Math.abs(ax.r2l(ax.range[0]) - ax.r2l(range[0])) < 1
            && Math.abs(ax.r2l(ax.range[1]) - ax.r2l(range[1])) < 1;
        if (!same) { window.Plotly.relayout(gd, {'xaxis.range': range}); }
    }
    return range;
}
"""
"""The clientside callback sharing the x-range (``%s``: the graph ids). A chart only relays
a range it does not already show, so the charts' own relayout events end the exchange."""

RANGE_TO_ADDRESS_JS = """
function(value) {
    // the chosen range into the address, without a reload or a new history entry
    const params = new URLSearchParams(window.location.search);
    params.set('range', value);
    window.history.replaceState(window.history.state, '',
        window.location.pathname + '?' + params.toString() + window.location.hash);
    return value;
}
"""


def queue_title(name: str | None = None, **_kwargs: object) -> str:
    """The tab title: 'queuelens — <queue>' (the name percent-decoded, as the heading)."""
    return page_title(unquote(name or "") or "queue")


# --- rendering ----------------------------------------------------------------------------

def _shown_value(value: str) -> str:
    """A measure whose every part is missing reads 'not measured' once, not 'no data ·
    no data requests in flight · writes no data · …' (the note says what is missing)."""
    parts = value.split(" · ")
    missing = all(fmt(None) in p and not any(c.isdigit() for c in p) for p in parts)
    return "not measured" if missing else value  # 'seats 3 of no data' keeps its 3


def render_measures(items: tuple[Measure, ...]) -> Any:
    if not items:
        return ""
    rows = [
        html.Tr([html.Th(m.label, scope="row", style={"textAlign": "left",
                                                       "paddingRight": "1rem"}),
                 html.Td(_shown_value(m.value), title=m.note, className="ql-value"),
                 html.Td(m.note, className="ql-note")])
        for m in items
    ]
    return html.Table(html.Tbody(rows), className="ql-measures")


EVIDENCE_SHOWN = 8
"""Evidence figures shown on a verdict; the rest fold into "all evidence"."""


verdict_value = evidence_value
"""One evidence or recommendation value as text (:func:`dashboard.plan_words.evidence_value`,
the reports' too)."""
_label = evidence_label


def _pairs_table(items: list[tuple[str, Any]], class_name: str) -> html.Table:
    return html.Table(html.Tbody([
        html.Tr([html.Th(_label(k), scope="row"), html.Td(verdict_value(v, k))])
        for k, v in items
    ]), className=class_name)


def render_verdict(v: Verdict) -> html.Li:
    """One verdict: severity badge, kind, confidence, summary, the key evidence figures and
    the recommendation. Text only (Dash escapes it); nothing is rendered as HTML."""
    evidence = [(k, val) for k, val in v.evidence.items() if val is not None]
    scalars = [(k, val) for k, val in evidence if not isinstance(val, Mapping | list | tuple)]
    shown = scalars[:EVIDENCE_SHOWN]
    rest = [(k, val) for k, val in evidence if (k, val) not in shown]
    rec = dict(v.recommendation)
    action = rec.pop("action", None)
    steps = rec.pop("steps", None)
    note = rec.pop("note", None)
    rec_items = [(k, val) for k, val in rec.items() if val is not None]
    children: list[Any] = [
        html.P(html.Strong(v.headline), className="ql-verdict-headline"),
        html.Div([html.Span(v.severity, className=f"ql-sev ql-sev-{v.severity}"),
                  html.Strong(v.kind, className="ql-verdict-kind"),
                  html.Span(f"confidence {fmt(100 * v.confidence, digits=2)} %",
                            className="ql-note")],
                 className="ql-verdict-head"),
        html.P(v.summary, className="ql-verdict-summary"),
    ]
    if shown:
        children.append(_pairs_table(shown, "ql-evidence"))
    if rest:
        children.append(html.Details([html.Summary(f"all evidence (+{len(rest)})"),
                                      _pairs_table(rest, "ql-evidence")]))
    rec_parts: list[Any] = [html.Strong("Recommendation: "),
                            html.Span(_label(str(action)) if action else "—")]
    if note:
        rec_parts.append(html.Span(f" — {note}", className="ql-note"))
    children.append(html.P(rec_parts, className="ql-verdict-rec"))
    if rec_items:
        children.append(_pairs_table(rec_items, "ql-evidence"))
    if isinstance(steps, list | tuple) and steps:
        children.append(html.Ul([html.Li(str(step)) for step in steps]))
    return html.Li(children, className=f"ql-verdict ql-verdict-{v.severity} ql-kind-{v.kind}")


def render_verdicts(view: QueueView) -> Any:
    """The advice card (``#queue-verdicts``): the plan (:func:`dashboard.card.
    render_plan_card`), with the advisor's verdicts in full, in its order, folded inside."""
    if view.message:
        return ""
    if not view.verdicts:
        return html.P(view.advice_note or "No advisor verdict.", className="ql-note")
    details = html.Div([html.P(view.advice_note, className="ql-note"),
                        html.Ol([render_verdict(v) for v in view.verdicts],
                                className="ql-verdict-list")])
    if view.plan is None:
        return html.Div([html.H2("Advisor: will more workers help?"), details],
                        className="ql-card ql-verdict-card")
    return render_plan_card(view.plan, view.evidence, view.source, details)


def render_view(view: QueueView, xrange: object = None,
                ui_key: tuple[str, ...] = ()) -> tuple[Any, ...]:
    """Callback outputs: (message, measures, model fit, fluid, summary, *figures).

    ``xrange``: the shared zoom the time charts are drawn at (:func:`apply_xrange`);
    ``ui_key``: what the charts show (queue, range), the key of their kept zoom
    (:func:`dashboard.figures.set_uirevision`)."""
    empty = [fg.no_data_figure(_TITLES[g], "no data") for g in GRAPH_IDS]
    for fig in empty:
        fg.set_uirevision(fig, *ui_key)
    if view.message:
        return (view.message, "", "", "", "", *empty)
    by_id = {g: fg.set_uirevision(_own_copy(view.figures.get(g, e)), *ui_key)
             for g, e in zip(GRAPH_IDS, empty, strict=True)}
    apply_xrange(by_id, xrange)
    figs = [by_id[g] for g in GRAPH_IDS]
    fit = [html.Li(line) for line in view.model_fit]
    shown = html.Div([render_measures(view.measures),
                      html.H3("Beyond the queue: API client, API server, webhooks, priorities"),
                      render_measures(view.beyond)], id="queue-beyond") if view.beyond \
        else render_measures(view.measures)
    return ("", shown, html.Ul(fit), view.fluid, view.summary, *figs)


def _own_copy(fig: fg.Figure) -> fg.Figure:
    """A copy of ``fig`` whose layout and x-axis may be changed (the view keeps its own)."""
    layout = dict(fig["layout"])
    layout["xaxis"] = dict(layout.get("xaxis", {}))
    return {**fig, "layout": layout}


_TITLES = {
    "queue-depth-graph": "Is the backlog growing or clearing?",
    "queue-rates-graph": "Is work arriving faster than it can be done?",
    "queue-durations-graph": "How long do items wait, and how long does work take?",
    "queue-workers-graph": "Are the workers saturated?",
    "queue-retries-graph": "Are reconciles failing and retrying?",
    "queue-api-graph": "Which API responses does this controller's process get?",
    "queue-effects-graph": "How many external effects does each reconcile cause?",
}


def whatif_href(name: str) -> str:
    return "/whatif?queue=" + quote(name, safe="")


def _graph(graph_id: str) -> html.Div:
    return html.Div(
        dcc.Graph(id=graph_id, config={"displaylogo": False}, style={"height": "340px"},
                  figure=fg.no_data_figure(_TITLES[graph_id], "loading…")),
        className="ql-card", style={"flex": "1 1 560px", "minWidth": "320px"},
    )


def layout(name: str | None = None, **query: object) -> html.Div:
    """The page for ``name``; ``query`` holds the address's ``?key=value`` pairs (Dash pages
    passes them): ``range`` picks the history range (:func:`range_from_query`)."""
    from dashboard.cliutil import terminal_text

    queue = unquote(name or "")
    range_key, range_note = range_from_query(query.get("range"))
    return html.Div(
        [
            html.H1(["Queue ", html.Code(terminal_text(queue), id="queue-name")]),
            html.Div(
                [
                    html.Span("History: ", className="ql-muted"),
                    dcc.RadioItems(
                        id="queue-range", options=list(RANGES), value=range_key,
                        inline=True, inputStyle={"marginRight": "0.25rem"},
                        labelStyle={"marginRight": "0.9rem"},
                    ),
                    html.Span("(the charts; the plan reads the range its card states)",
                              className="ql-muted", id="queue-range-note",
                              style={"marginRight": "0.9rem"}),
                    dcc.Link("What-if for this queue →", href=whatif_href(queue),
                             id="queue-whatif-link"),
                ],
                className="ql-row", style={"alignItems": "center"},
            ),
            html.P(range_note, id="queue-address-note", className="ql-note"),
            html.Div(id="queue-message", className="ql-error", role="alert"),
            # the advisor's verdict card (render_verdicts), filled by the page's callback
            html.Div(id="queue-verdicts", className="ql-verdicts"),
            html.Div([html.Div(
                [
                    html.Div(
                        [html.H2("Measure these together before adding workers"),
                         html.Div(id="queue-measures")],
                        className="ql-col-wide ql-panel",
                    ),
                    html.Div(
                        [html.H2("Does the M/M/c model fit this queue?"),
                         html.Div(id="queue-model-fit"),
                         html.H2("Where is the backlog heading?"),
                         html.P(id="queue-fluid", className="ql-readout")],
                        className="ql-col ql-panel",
                    ),
                ],
                className="ql-row",
            ),
            dcc.Loading(
                html.Div([_graph(g) for g in GRAPH_IDS], className="ql-row"),
                type="dot", delay_show=400,
            ),
            html.P(id="queue-summary", className="ql-note")], id="queue-body"),
            dcc.Store(id="queue-store", data=queue),
            dcc.Store(id="queue-xrange"),  # the shared x-range (SHARE_XRANGE_JS)
            dcc.Store(id="queue-address"),  # the range last written to the address
            dcc.Interval(id="queue-refresh", interval=15_000),
        ]
    )


class _AnyText(BaseConverter):
    """A Werkzeug URL converter for a queue name of any characters (newlines and ``/``
    too): the default converters' ``.`` does not match a line break, so ``/queue/a%0Ab``
    would be a bare 404 before the page could say anything."""

    regex = r"[\s\S]+"
    part_isolating = False
    weight = 200

    def to_url(self, value: Any) -> str:
        return quote(str(value), safe="")


def register(app: dash.Dash, ctx: AppContext) -> None:
    """Register the page (path ``/queue/<name>``) and its callback on ``app``; and the route
    that serves the page for a name with a line break (:class:`_AnyText`)."""
    register_page(__name__, path_template=PATH_TEMPLATE, name="Queue",
                  title=queue_title, order=1, layout=layout)
    server = app.server
    server.url_map.converters.setdefault("queuelens_any", _AnyText)

    def page(name: str) -> Any:
        del name  # the page reads it from the browser's address, as for every page
        return app.index()  # type: ignore[no-untyped-call]

    server.add_url_rule("/queue/<queuelens_any:name>", "queuelens_queue_page", page,
                        methods=["GET"])

    @app.callback(
        Output("queue-message", "children"),
        Output("queue-measures", "children"),
        Output("queue-model-fit", "children"),
        Output("queue-fluid", "children"),
        Output("queue-summary", "children"),
        *[Output(g, "figure") for g in GRAPH_IDS],
        Output("queue-verdicts", "children"),
        Output("queue-refresh", "interval"),
        Output("queue-body", "style"),
        Input("queue-range", "value"),
        Input("queue-refresh", "n_intervals"),
        State("queue-store", "data"),
        State("queue-xrange", "data"),
    )
    def _refresh(range_key: str | None, _n: int | None, name: str | None,
                 xrange: object) -> tuple[Any, ...]:
        # a forged value (the dropdown and the store send text) reads as absent: the
        # default range, no queue named — each answered by the page's own sentence
        range_key = range_key if isinstance(range_key, str) and range_key else DEFAULT_RANGE
        name = name if isinstance(name, str) else None
        with ctx.refresh_budget():  # every read of the refresh shares one budget
            view = queue_view(ctx.source, name or "", range_key, ctx.now(), ctx.settings)
        if dash.ctx.triggered_id == "queue-range":
            xrange = None  # a new range starts unzoomed (the store is being cleared)
        outputs = render_view(view, xrange, (name or "", range_key))
        # an error is the page's one message: no empty panels, no seven "no data" charts
        body = {"display": "none"} if view.message else {}
        return (*outputs, render_verdicts(view), int(ctx.refresh_s * 1000), body)

    clientside_callback(
        app,
        SHARE_XRANGE_JS % json.dumps(list(GRAPH_IDS)),
        Output("queue-xrange", "data"),
        *[Input(g, "relayoutData") for g in GRAPH_IDS],
        Input("queue-range", "value"),
        prevent_initial_call=True,
    )
    clientside_callback(
        app,
        RANGE_TO_ADDRESS_JS,
        Output("queue-address", "data"),
        Input("queue-range", "value"),
        prevent_initial_call=True,
    )


def _no_priority(why: str | None) -> str:
    """The depth-by-priority cell without priorities: what the read said (not read — the demo
    does not model it — is not "not a priority queue", which the doctor may contradict)."""
    if why is None or why.startswith("not a priority queue"):
        return "not a priority queue"
    return f"not read: {why}"
