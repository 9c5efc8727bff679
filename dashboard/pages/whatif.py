"""What-if (`/whatif`, optional `?queue=NAME`): how many workers does this queue need?

Starting point: the selected queue's measured arrival rate λ and mean work time from one
``snapshot``, and its contention σ, κ fitted with the Universal Scalability Law
(:func:`models.contention.fit_usl`) to throughput vs busy workers over the last
:data:`FIT_RANGE_S` of history (one ``range`` read) when the history spans enough load —
else the user types them. Every value can be overridden. Multipliers scale λ and the work
time ("traffic doubles", "the API gets 50 % slower").

The sweep itself is :func:`models.whatif.whatif_sweep` over the worker range of the
``whatif-workers`` slider (M/M/c, or G/G/c Allen–Cunneen when a cv² ≠ 1, with USL
contention when chosen) and its recommendation. It is pure numpy over ≤ 64 worker counts,
so the callback answers in tens of milliseconds (``benchmarks/bench_dashboard.py``).

**Simulate** runs :func:`models.simulate.simulate` at one worker count as a bounded short run
(:data:`SIM_ARRIVALS` Poisson arrivals, about 0.2 s; a ``dcc.Loading`` indicator shows while it
runs — Dash's background callbacks would need ``diskcache``, which is not a dependency) and
shows the simulated waits beside the formula's.

``#whatif-advice`` shows the advisor's verdict for the selected queue at its *measured* demand
(:func:`advisor_mark`: the shared snapshot + one range read of the queue over the last hour,
the same inputs as the overview badge), and its recommended worker count is drawn on the
three charts as a dashed purple line, beside the sweep's own dotted green recommendation for
the typed inputs.
Tests call :func:`measured_inputs`, :func:`parse_params`, :func:`whatif_view` and
:func:`simulate_view` directly; the Dash callbacks are thin.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import dash
import numpy as np
from dash import Input, Output, State, dcc, html

from collectors.errors import CollectorError
from collectors.types import QueueSnapshot, Source
from dashboard import figures as fg
from dashboard.advice import (
    DASHBOARD_RANGE_S,
    DASHBOARD_STEP_S,
    advise_data,
    recommended_workers,
)
from dashboard.context import AppContext, register_page
from dashboard.forms import parse_number
from dashboard.pages.queue import fmt, signal_series
from dashboard.signals import combine
from models.advisor import AdvisorThresholds
from models.contention import UslFit, fit_usl
from models.errors import ModelInputError
from models.simulate import simulate
from models.whatif import WhatIfInputs, WhatIfResult, whatif_sweep

PATH = "/whatif"
UTILIZATION_TARGET = AdvisorThresholds().util_target
"""The recommendation's utilization cap: the advisor's, so the page recommends what
``advise`` does for the same inputs (one worker-count rule)."""
FIT_RANGE_S = 86400.0
"""History used for the contention fit (24 h)."""
FIT_STEP_S = 360.0
FIT_MIN_R2 = 0.5
"""Below this R² the fitted σ, κ are not used (the curve does not describe the points)."""
WORKERS_MIN, WORKERS_MAX = 1, 64
DEFAULT_WORKERS = (1, 16)
DEFAULT_ARRIVAL = 10.0
DEFAULT_SERVICE = 0.25
DEFAULT_SLO = 1.0
SLO_QUANTILES: dict[str, float | None] = {"mean": None, "p90": 0.9, "p95": 0.95, "p99": 0.99}
SIM_ARRIVALS = 100_000
"""Poisson arrivals per simulate run (bounded: ~2 events each, well under a second)."""
SIM_KEYS = 1_000_000
"""Distinct keys in the simulation: enough that coalescing is negligible (formula regime)."""
SIM_SEED = 1


# --- measured starting point --------------------------------------------------------------

@dataclass(frozen=True)
class Measured:
    """What the page pre-fills for a queue, and where each value came from."""

    arrival_rate_per_s: float | None
    service_mean_s: float | None
    service_cv2: float
    workers: float | None
    fit: UslFit | None
    notes: tuple[str, ...]


def fit_contention(source: Source, queue: str, now: float) -> tuple[UslFit | None, str]:
    """USL fit of throughput vs time-average busy workers over the last FIT_RANGE_S."""
    try:
        rng = source.range(now - FIT_RANGE_S, now, FIT_STEP_S, [queue])
    except CollectorError as exc:
        return None, f"Could not read the history for a contention fit ({exc})"
    series = signal_series(rng, queue)
    busy, thr = series.get("busy_workers"), series.get("throughput_per_s")
    pairs = combine(busy, thr, "div")  # the times both series have (throughput > 0)
    if busy is None or thr is None or not pairs[0]:
        return None, "No busy-worker and throughput history to fit contention"
    b = dict(zip(busy[0], busy[1], strict=True))
    x = dict(zip(thr[0], thr[1], strict=True))
    n = np.array([b[t] for t in pairs[0]])
    xs = np.array([x[t] for t in pairs[0]])
    keep = (n > 0) & (xs > 0)
    try:
        fit = fit_usl(n[keep], xs[keep])
    except ModelInputError as exc:
        return None, f"Contention not fitted: {str(exc).rstrip('.')}"
    if fit.r2 < FIT_MIN_R2:
        return None, (f"Contention not fitted: the USL curve explains too little of the history "
                      f"(R² = {fit.r2:.2f} < {FIT_MIN_R2})")
    return fit, (f"σ = {fit.sigma:.3g}, κ = {fit.kappa:.3g} fitted by the USL to throughput vs "
                 f"busy workers over the last {FIT_RANGE_S / 3600:g} h ({fit.points} points, "
                 f"R² = {fit.r2:.3f})")


def measured_inputs(source: Source | None, queue: str | None, now: float,
                    window_s: float = 300.0) -> Measured:
    """The queue's measured λ, work time, worker count and contention fit, with notes."""
    blank = Measured(None, None, 1.0, None, None, ())
    if not queue:
        return replace(blank, notes=("No queue selected: type the arrival rate and work time.",))
    if source is None:
        return replace(blank, notes=("No data source is configured.",))
    try:
        snap = source.snapshot(now, window_s)
    except CollectorError as exc:
        return replace(blank, notes=(f"Could not read the queues: {exc}",))
    found = [q for q in snap.queues if q.queue == queue]
    if not found:
        return replace(blank, notes=(f"There is no queue named “{queue}” in {snap.source}.",))
    q: QueueSnapshot = found[0]
    notes = [
        f"λ = {fmt(q.arrival_rate_per_s, '/s')} and mean work time "
        f"{fmt(q.service_mean_s, 's')} measured over the last {window_s:g} s "
        f"(current workers: {fmt(q.workers)}).",
        "Work-time variability cannot be read reliably from the workqueue histogram's decade "
        "buckets, so cs² = 1 (exponential) is assumed: type your own if you know it.",
    ]
    for name, value in (("arrival rate", q.arrival_rate_per_s),
                        ("work time", q.service_mean_s)):
        if value is None:
            notes.append(f"The {name} was not measured ({q.missing.get(_FIELD[name], '')}): "
                         "type it in.")
    fit, fit_note = fit_contention(source, queue, now)
    notes.append(fit_note + ".")
    if fit is None:
        notes.append("Type σ and κ to model contention, or leave it off.")
    return Measured(q.arrival_rate_per_s, q.service_mean_s, 1.0, q.workers, fit, tuple(notes))


_FIELD = {"arrival rate": "arrival_rate_per_s", "work time": "service_mean_s"}


# --- the sweep ------------------------------------------------------------------------------

@dataclass(frozen=True)
class WhatIfParams:
    """Validated page inputs."""

    inputs: WhatIfInputs
    arrival_multiplier: float
    service_multiplier: float
    contention: bool


def parse_params(
    arrival: object, service: object, service_cv2: object, arrival_cv2: object,
    arrival_mult: object, service_mult: object, contention: str | None,
    sigma: object, kappa: object, slo: object, slo_quantile: str | None,
    workers: object,
) -> WhatIfParams:
    """Turn raw widget values into sweep inputs; a bad value is a ModelInputError sentence."""
    lam = parse_number("arrival rate λ", arrival)
    s = parse_number("mean work time", service, positive=True)
    a_mult = parse_number("arrival multiplier", arrival_mult, positive=True)
    s_mult = parse_number("work-time multiplier", service_mult, positive=True)
    cs2 = parse_number("work-time cv²", service_cv2)
    ca2 = parse_number("arrival cv²", arrival_cv2)
    use_usl = contention == "usl"
    sig = kap = None
    if use_usl:
        sig = parse_number("contention σ", sigma)
        kap = parse_number("coherency κ", kappa)
    slo_s = None if slo in (None, "") else parse_number("wait SLO", slo, positive=True)
    if slo_quantile not in SLO_QUANTILES:
        raise ModelInputError(f"Unknown SLO statistic {slo_quantile!r}.")
    if not (isinstance(workers, list | tuple) and len(workers) == 2):
        raise ModelInputError("Choose a worker range with the slider.")
    lo, hi = (round(float(w)) for w in workers)
    inputs = WhatIfInputs(
        arrival_rate_per_s=lam * a_mult, service_mean_s=s * s_mult, service_cv2=cs2,
        arrival_cv2=ca2, sigma=sig, kappa=kap, workers_min=max(1, min(lo, hi)),
        workers_max=max(lo, hi, 1), slo_wait_s=slo_s, slo_quantile=SLO_QUANTILES[slo_quantile],
        utilization_target=UTILIZATION_TARGET,
    )
    return WhatIfParams(inputs, a_mult, s_mult, use_usl)


@dataclass(frozen=True)
class WhatIfView:
    recommendation: str
    error: str
    figures: tuple[fg.Figure, fg.Figure, fg.Figure]
    result: WhatIfResult | None = None


CHART_TITLES = (
    "How long will items wait with c workers?",
    "How likely is a wait over the SLO?",
    "Does adding workers add throughput?",
)


def _empty_view(error: str) -> WhatIfView:
    figs = tuple(fg.no_data_figure(t, "enter valid inputs") for t in CHART_TITLES)
    return WhatIfView("No recommendation: fix the inputs.", error, (figs[0], figs[1], figs[2]))


def whatif_view(params: WhatIfParams, current_workers: float | None = None,
                advised_workers: int | None = None) -> WhatIfView:
    """The sweep's three charts and the recommendation sentence; ``advised_workers`` (the
    advisor's recommendation for the measured queue) is marked on each chart."""
    try:
        result = whatif_sweep(params.inputs)
    except ModelInputError as exc:
        return _empty_view(str(exc))
    inp = params.inputs
    rows = result.rows
    rec = result.recommendation.workers
    workers = [r.workers for r in rows]
    wait_fig = fg.whatif_wait_figure(
        workers, [r.wait_mean_s for r in rows], [r.wait_p95_s for r in rows],
        [r.utilization for r in rows], slo_s=inp.slo_wait_s, recommended=rec)
    if inp.slo_wait_s is not None:
        target = None if inp.slo_quantile is None else 1.0 - inp.slo_quantile
        slo_fig = fg.whatif_slo_figure(workers, [r.p_wait_over_slo for r in rows],
                                       slo_s=inp.slo_wait_s, target=target, recommended=rec)
    else:
        slo_fig = fg.no_data_figure(CHART_TITLES[1], "set a wait SLO to see P(wait > SLO)")
    capacity = [r.workers * r.service_rate_per_worker_per_s for r in rows]
    thr_fig = fg.whatif_throughput_figure(
        workers, capacity, [r.throughput_per_s for r in rows], inp.arrival_rate_per_s,
        contention=params.contention, recommended=rec)
    for fig in (wait_fig, slo_fig, thr_fig) if inp.slo_wait_s is not None else (wait_fig,
                                                                                 thr_fig):
        fg.mark_advisor(fig, advised_workers)
    return WhatIfView(recommendation_text(params, result, current_workers), "",
                      (wait_fig, slo_fig, thr_fig), result)


# --- the advisor's recommendation -----------------------------------------------------------

@dataclass(frozen=True)
class AdvisorMark:
    """What the page shows of the advisor for the selected queue."""

    workers: int | None
    """The advisor's recommended worker count (marked on the charts), if it names one."""
    text: str
    """One sentence: the recommendation, or why there is none."""
    kinds: tuple[str, ...] = ()
    """All verdict kinds for the queue, in the advisor's order."""


def advisor_mark(source: Source | None, queue: str | None, now: float, window_s: float = 300.0,
                 slo_wait_s: float = 1.0) -> AdvisorMark:
    """The advisor's verdicts for ``queue`` at its *measured* demand: the (shared) snapshot
    plus one range read of this queue over the dashboard's advisor range, as on the overview
    and the queue page."""
    if not queue or source is None:
        return AdvisorMark(None, "")
    try:
        snap = source.snapshot(now, window_s)
        if not any(q.queue == queue for q in snap.queues):
            return AdvisorMark(None, "")
        rng = source.range(now - DASHBOARD_RANGE_S, now, DASHBOARD_STEP_S, [queue])
        advice = advise_data(snap, rng, range_s=DASHBOARD_RANGE_S, slo_wait_s=slo_wait_s,
                             queue=queue)
    except (CollectorError, ModelInputError) as exc:
        return AdvisorMark(None, f"No advisor verdict: {exc}")
    verdicts = advice.queues[0].verdicts
    kinds = tuple(v.kind for v in verdicts)
    basis = (f"Advisor (measured demand, last {DASHBOARD_RANGE_S / 3600:g} h, wait SLO "
             f"{fmt(slo_wait_s, 's')})")
    found = recommended_workers(verdicts)
    if found is None:
        first = verdicts[0]
        return AdvisorMark(None, f"{basis}: {first.kind} — no worker count recommended. "
                                 f"{first.summary}", kinds)
    workers, verdict = found
    return AdvisorMark(workers, f"{basis}: {verdict.kind} — c = {workers} (dashed purple "
                                f"line on the charts). {verdict.summary}", kinds)


def render_advisor(mark: AdvisorMark) -> Any:
    """The ``#whatif-advice`` content (text only; Dash escapes it)."""
    if not mark.text:
        return ""
    parts: list[Any] = [html.P(mark.text, id="whatif-advice-text")]
    if len(mark.kinds) > 1:
        parts.append(html.P("All verdicts: " + ", ".join(mark.kinds), className="ql-note"))
    return parts


def recommendation_text(params: WhatIfParams, result: WhatIfResult,
                        current_workers: float | None) -> str:
    """'Recommended: 6 workers — <reason> …' with the model and the effective inputs."""
    inp = params.inputs
    rec = result.recommendation
    head = ("No worker count in this range works" if rec.workers is None
            else f"Recommended: {rec.workers} workers")
    parts = [f"{head} — {rec.reason}"]
    row = next((r for r in result.rows if r.workers == rec.workers), None)
    if row is not None and row.wait_mean_s is not None:
        parts.append(f"At c = {row.workers}: mean wait {fmt(row.wait_mean_s, 's')}, p95 wait "
                     f"{fmt(row.wait_p95_s, 's')}, utilization {100 * row.utilization:.0f}%.")
    if current_workers is not None and rec.workers is not None:
        now = round(current_workers)
        delta = rec.workers - now
        change = ("the same as now" if delta == 0 else
                  f"{abs(delta)} {'more' if delta > 0 else 'fewer'} than the {now} now")
        parts.append(f"That is {change}.")
    parts.append(
        f"Model: {result.model}; λ = {fmt(inp.arrival_rate_per_s, '/s')} "
        f"(×{params.arrival_multiplier:g}), mean work time {fmt(inp.service_mean_s, 's')} "
        f"(×{params.service_multiplier:g})"
        + (f", USL σ = {inp.sigma:g}, κ = {inp.kappa:g}." if params.contention
           else ", no contention.")
    )
    return " ".join(parts)


# --- simulate -----------------------------------------------------------------------------

@dataclass(frozen=True)
class SimView:
    text: str
    figure: fg.Figure | None


def simulate_view(params: WhatIfParams, workers: float | None,
                  progress: Callable[[float], None] | None = None,
                  arrivals: int = SIM_ARRIVALS) -> SimView:
    """A bounded simulator run at ``workers`` (default: the recommendation) vs the formula."""
    inp = params.inputs
    try:
        if workers is None:
            workers = whatif_sweep(inp).recommendation.workers
            if workers is None:
                return SimView("Nothing to simulate: no worker count in the range is stable.",
                               None)
        if isinstance(workers, bool) or int(workers) != workers or workers < 1:
            raise ModelInputError(f"The worker count must be a whole number ≥ 1, got {workers}.")
        c = int(workers)
        formula = whatif_sweep(replace(inp, workers_min=c, workers_max=c)).rows[0]
        if not formula.stable:
            return SimView(f"Not simulated: c = {c} is unstable (λ ≥ c·μ), so the backlog "
                           "grows without bound and there is no steady wait to compare.", None)
        lam = inp.arrival_rate_per_s
        if lam <= 0:
            return SimView("Not simulated: the arrival rate is 0, nobody waits.", None)
        mean_c = 1.0 / formula.service_rate_per_worker_per_s  # contention-slowed work time
        duration = arrivals / lam  # bounded work: ~2 events per arrival
        cs2 = inp.service_cv2
        dist = "exp" if cs2 == 1.0 else ("const" if cs2 == 0 else "lognormal")
        sim = simulate(
            arrival_rate_per_s=lam, keys=SIM_KEYS, workers=c, service_mean_s=mean_c,
            duration_s=duration, seed=SIM_SEED, service_dist=dist,  # type: ignore[arg-type]
            service_cv=math.sqrt(cs2), warmup_s=0.1 * duration, progress=progress,
        )
    except ModelInputError as exc:
        return SimView(f"Not simulated: {exc}", None)
    labels = ["mean wait", "p95 wait"]
    simulated = [sim.wait_mean_s, sim.wait_p95_s]
    model = [formula.wait_mean_s, formula.wait_p95_s]
    fig = fg.sim_compare_figure(labels, simulated, model, workers=c)
    caveat = "" if inp.arrival_cv2 == 1.0 else (
        " The simulator draws Poisson arrivals (ca² = 1), unlike the formula's "
        f"ca² = {inp.arrival_cv2:g}.")
    text = (
        f"Simulated {sim.raw_events:,} arrivals over {fmt(duration, 's')} at c = {c} "
        f"({dist} work times, mean {fmt(mean_c, 's')}; seed {SIM_SEED}): mean wait "
        f"{fmt(sim.wait_mean_s, 's')} vs formula {fmt(formula.wait_mean_s, 's')}; p95 wait "
        f"{fmt(sim.wait_p95_s, 's')} vs {fmt(formula.wait_p95_s, 's')}; utilization "
        f"{100 * sim.utilization:.0f}% vs {100 * formula.utilization:.0f}%." + caveat
    )
    return SimView(text, fig)


# --- layout and wiring ----------------------------------------------------------------------

def _num_field(label: str, input_id: str, value: float | None, step: float | str,
               unit: str = "") -> html.Div:
    return html.Div(
        [html.Label(f"{label}{f' ({unit})' if unit else ''}", htmlFor=input_id),
         dcc.Input(id=input_id, type="number", value=value, min=0, step=step, debounce=True)],
        className="ql-field",
    )


def _multiplier(label: str, slider_id: str) -> html.Div:
    return html.Div(
        [html.Label(label, htmlFor=slider_id),
         dcc.Slider(id=slider_id, min=0.25, max=4, step=0.05, value=1.0,
                    marks={v: f"×{v:g}" for v in (0.5, 1, 2, 3, 4)},
                    tooltip={"placement": "bottom"})],
        className="ql-field",
    )


def _graph(graph_id: str, title: str) -> html.Div:
    return html.Div(
        dcc.Graph(id=graph_id, config={"displaylogo": False}, style={"height": "380px"},
                  figure=fg.no_data_figure(title, "loading…")),
        className="ql-card", style={"flex": "1 1 420px", "minWidth": "320px"},
    )


def make_layout(ctx: AppContext) -> Callable[..., html.Div]:
    """The page layout; ``?queue=NAME`` preselects a queue."""

    def layout(queue: str | None = None, **_kwargs: object) -> html.Div:
        names = _queue_names(ctx)
        if queue and queue not in names:
            names = [queue, *names]  # kept so the page can say it is unknown
        return html.Div(
            [
                html.H1("What-if: how many workers does this queue need?"),
                html.P("Start from a queue's measurements or type values; change the worker "
                       "range, traffic, work time, contention and SLO. Charts follow at once.",
                       className="ql-muted"),
                html.Div(
                    [
                        html.Div(
                            [
                                html.Div([html.Label("Queue", htmlFor="whatif-queue"),
                                          dcc.Dropdown(id="whatif-queue", options=names,
                                                       value=queue or None, clearable=True,
                                                       placeholder="type values, or pick")],
                                         className="ql-field"),
                                _num_field("arrival rate λ", "whatif-arrival",
                                           DEFAULT_ARRIVAL, "any", "items/s"),
                                _num_field("mean work time", "whatif-service",
                                           DEFAULT_SERVICE, "any", "s"),
                                _num_field("work-time cv² (1 = exponential)",
                                           "whatif-service-cv2", 1.0, "any"),
                                _num_field("arrival cv² (1 = Poisson)", "whatif-arrival-cv2",
                                           1.0, "any"),
                                _multiplier("arrival multiplier", "whatif-arrival-mult"),
                                _multiplier("work-time multiplier", "whatif-service-mult"),
                            ],
                            className="ql-col ql-panel",
                        ),
                        html.Div(
                            [
                                html.Div([html.Label("Contention", htmlFor="whatif-contention"),
                                          dcc.RadioItems(
                                              id="whatif-contention",
                                              options=[{"label": " none", "value": "none"},
                                                       {"label": " USL σ, κ", "value": "usl"}],
                                              value="none", inline=True,
                                              labelStyle={"marginRight": "1rem"})],
                                         className="ql-field"),
                                _num_field("contention σ", "whatif-sigma", 0.0, "any"),
                                _num_field("coherency κ", "whatif-kappa", 0.0, "any"),
                                _num_field("wait SLO", "whatif-slo", DEFAULT_SLO, "any", "s"),
                                html.Div([html.Label("SLO applies to", htmlFor="whatif-slo-q"),
                                          dcc.RadioItems(id="whatif-slo-q",
                                                         options=list(SLO_QUANTILES),
                                                         value="p95", inline=True,
                                                         labelStyle={"marginRight": "1rem"})],
                                         className="ql-field"),
                                html.Div([html.Label("worker range c", htmlFor="whatif-workers"),
                                          dcc.RangeSlider(
                                              id="whatif-workers", min=WORKERS_MIN,
                                              max=WORKERS_MAX, step=1,
                                              value=list(DEFAULT_WORKERS),
                                              marks={v: str(v) for v in (1, 8, 16, 32, 48, 64)},
                                              tooltip={"placement": "bottom",
                                                       "always_visible": True})],
                                         className="ql-field"),
                            ],
                            className="ql-col ql-panel",
                        ),
                        html.Div(
                            [
                                html.H2("Recommendation"),
                                html.P(id="whatif-recommendation", className="ql-readout"),
                                html.Div(id="whatif-error", className="ql-error", role="alert"),
                                html.Div(id="whatif-advice", className="ql-advice"),
                                html.Ul(id="whatif-notes", className="ql-note"),
                            ],
                            className="ql-col ql-panel",
                        ),
                    ],
                    className="ql-row",
                ),
                html.Div([_graph("whatif-wait-graph", CHART_TITLES[0]),
                          _graph("whatif-slo-graph", CHART_TITLES[1]),
                          _graph("whatif-throughput-graph", CHART_TITLES[2])],
                         className="ql-row"),
                html.Div(
                    [
                        html.H2("Check the formula with the simulator"),
                        html.P("Runs the controller simulator (client-go queue semantics, "
                               f"{SIM_ARRIVALS:,} Poisson arrivals over {SIM_KEYS:,} keys) at "
                               "one worker count and compares its waits with the formula's.",
                               className="ql-muted"),
                        html.Div(
                            [_num_field("workers to simulate (empty: the recommendation)",
                                        "whatif-sim-workers", None, 1),
                             html.Button("Simulate", id="whatif-simulate", n_clicks=0,
                                         className="ql-button")],
                            className="ql-buttons", style={"alignItems": "flex-end"},
                        ),
                        dcc.Loading(
                            html.Div([html.P(id="whatif-sim-result", className="ql-readout"),
                                      dcc.Graph(id="whatif-sim-graph",
                                                config={"displaylogo": False},
                                                style={"height": "300px", "display": "none"})]),
                            type="circle",
                        ),
                    ],
                    className="ql-panel",
                ),
                dcc.Store(id="whatif-current-workers"),
                dcc.Store(id="whatif-advisor"),
            ]
        )

    return layout


def _queue_names(ctx: AppContext) -> list[str]:
    if ctx.source is None:
        return []
    try:
        snap = ctx.source.snapshot(ctx.now(), ctx.window_s)
    except CollectorError:
        return []
    return sorted(q.queue for q in snap.queues)


def prefill(measured: Measured) -> tuple[Any, ...]:
    """Callback outputs for a measured queue: λ, work time, cv², contention, σ, κ,
    worker range, current workers, notes. ``dash.no_update`` keeps typed values."""
    nu = dash.no_update
    lam = nu if measured.arrival_rate_per_s is None else round(measured.arrival_rate_per_s, 6)
    s = nu if measured.service_mean_s is None else round(measured.service_mean_s, 6)
    if measured.fit is not None:
        contention: Any = "usl"
        sigma: Any = round(measured.fit.sigma, 6)
        kappa: Any = round(measured.fit.kappa, 6)
    else:  # a measured queue without a usable fit: contention off, typed σ, κ kept
        contention = "none" if measured.arrival_rate_per_s is not None else nu
        sigma, kappa = nu, nu
    workers: Any = nu
    if measured.workers is not None:
        hi = int(min(WORKERS_MAX, max(DEFAULT_WORKERS[1], 2 * round(measured.workers))))
        workers = [WORKERS_MIN, hi]
    notes = [html.Li(n) for n in measured.notes]
    cv2: Any = nu if measured.arrival_rate_per_s is None else measured.service_cv2
    return (lam, s, cv2, contention, sigma, kappa, workers, measured.workers, notes)


_SWEEP_STATE = (
    ("whatif-arrival", "value"), ("whatif-service", "value"), ("whatif-service-cv2", "value"),
    ("whatif-arrival-cv2", "value"), ("whatif-arrival-mult", "value"),
    ("whatif-service-mult", "value"), ("whatif-contention", "value"),
    ("whatif-sigma", "value"), ("whatif-kappa", "value"), ("whatif-slo", "value"),
    ("whatif-slo-q", "value"), ("whatif-workers", "value"),
)


def sweep_outputs(view: WhatIfView) -> tuple[Any, ...]:
    return (view.recommendation, view.error, *view.figures)


def register(app: dash.Dash, ctx: AppContext) -> None:
    """Register the page (path ``/whatif``) and its callbacks on ``app``."""
    register_page(__name__, path=PATH, name="What-if", title="What-if · queuelens",
                  order=2, layout=make_layout(ctx))

    @app.callback(
        Output("whatif-arrival", "value"),
        Output("whatif-service", "value"),
        Output("whatif-service-cv2", "value"),
        Output("whatif-contention", "value"),
        Output("whatif-sigma", "value"),
        Output("whatif-kappa", "value"),
        Output("whatif-workers", "value"),
        Output("whatif-current-workers", "data"),
        Output("whatif-notes", "children"),
        Input("whatif-queue", "value"),
    )
    def _load(queue: str | None) -> tuple[Any, ...]:
        return prefill(measured_inputs(ctx.source, queue, ctx.now(), ctx.window_s))

    @app.callback(
        Output("whatif-advice", "children"),
        Output("whatif-advisor", "data"),
        Input("whatif-queue", "value"),
    )
    def _advise(queue: str | None) -> tuple[Any, int | None]:
        mark = advisor_mark(ctx.source, queue, ctx.now(), ctx.window_s, ctx.slo_wait_s)
        return render_advisor(mark), mark.workers

    @app.callback(
        Output("whatif-recommendation", "children"),
        Output("whatif-error", "children"),
        Output("whatif-wait-graph", "figure"),
        Output("whatif-slo-graph", "figure"),
        Output("whatif-throughput-graph", "figure"),
        *[Input(i, p) for i, p in _SWEEP_STATE],
        Input("whatif-current-workers", "data"),
        Input("whatif-advisor", "data"),
    )
    def _sweep(*values: Any) -> tuple[Any, ...]:
        try:
            params = parse_params(*values[:-2])
        except ModelInputError as exc:
            return sweep_outputs(_empty_view(str(exc)))
        advised = values[-1] if isinstance(values[-1], int) else None
        return sweep_outputs(whatif_view(params, values[-2], advised))

    @app.callback(
        Output("whatif-sim-result", "children"),
        Output("whatif-sim-graph", "figure"),
        Output("whatif-sim-graph", "style"),
        Input("whatif-simulate", "n_clicks"),
        *[State(i, p) for i, p in _SWEEP_STATE],
        State("whatif-sim-workers", "value"),
        prevent_initial_call=True,
    )
    def _simulate(_n: int, *values: Any) -> tuple[Any, ...]:
        hidden = {"height": "300px", "display": "none"}
        try:
            params = parse_params(*values[:-1])
            raw = values[-1]
            # a fraction is refused by simulate_view (never silently truncated)
            workers = None if raw in (None, "") else parse_number("worker count", raw,
                                                                  positive=True)
        except ModelInputError as exc:
            return f"Not simulated: {exc}", dash.no_update, hidden
        view = simulate_view(params, workers)
        if view.figure is None:
            return view.text, dash.no_update, hidden
        return view.text, view.figure, {"height": "300px"}

