"""What-if (`/whatif`, optional `?queue=NAME`): how many workers does this queue need?

Starting point: the selected queue's capacity plan (:mod:`models.plan`, through
:func:`dashboard.advice.advise_fleet` with the app's settings — the same reads and plan as
``advise --queue`` and the queue page): λ at the design demand, the measured mean work time,
and the contention σ, κ of the plan's USL fit when it passed the advisor's gate — else the
user types them. Every value can be overridden. Multipliers scale λ and the work time
("traffic doubles", "the API gets 50 % slower"). The SLO, its quantile and the utilization
cap of the recommendation default to the app's settings.

The sweep itself is :func:`models.whatif.whatif_sweep` over the worker range of the
``whatif-workers`` slider (M/M/c, or G/G/c Allen–Cunneen when a cv² ≠ 1, with USL
contention when chosen) and its recommendation. It is pure numpy over ≤ 64 worker counts,
so the callback answers in tens of milliseconds (``benchmarks/bench_dashboard.py``).

**Simulate** runs :func:`models.simulate.simulate` at one worker count as a bounded short run
(:data:`SIM_ARRIVALS` Poisson arrivals, about 0.2 s; a ``dcc.Loading`` indicator shows while it
runs — Dash's background callbacks would need ``diskcache``, which is not a dependency) and
shows the simulated waits beside the formula's.

``#whatif-advice`` shows the plan's headline and recommended count for the selected queue
(:func:`advisor_mark`), drawn on the three charts as a dashed purple line, beside the sweep's
own dotted green recommendation for the typed inputs. While the inputs are the ones the page
prefilled, the sweep computes with the plan's exact inputs (the fields show three digits) and
recommends the plan's count, whatever rule chose it (:class:`PlanAnchor`: one answer on every
surface); a typed input makes it a what-if, the sweep's own answer, never below the advisor's
floor of a change to fewer workers (:func:`floored`).
State in the address (issue 21): every input of the page has a query parameter
(:data:`URL_FIELDS`: ``/whatif?queue=replicaset&lambda=12&service=0.25&slo=1&workers=1-16``
...). A link with them opens the page on them — they win over the measured prefill, each
checked by :func:`parse_params` (:func:`address_inputs`: a bad one is left out with a note) —
and each sweep writes the inputs it computed with back into the address
(:func:`address_query`, ``history.replaceState``), so a reload keeps them and the address
shares them. The tab title is "queuelens — what-if <queue>".

Tests call :func:`measured_inputs`, :func:`parse_params`, :func:`whatif_view` and
:func:`simulate_view` directly; the Dash callbacks are thin.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote, urlencode

import dash
from dash import Input, Output, State, dcc, html

from collectors.errors import CollectorError, ConfigError
from collectors.types import Source
from dashboard import figures as fg
from dashboard.advice import FleetAdvice, advise_fleet
from dashboard.context import AppContext, clientside_callback, page_title, register_page
from dashboard.forms import parse_number
from dashboard.numbers import number_text as fmt  # the one formatter, short
from models.advisor import worker_count
from models.errors import ModelInputError
from models.formatting import percent_text, shown_value, sig
from models.measurements import QueueSnapshot
from models.plan import CapacityPlan
from models.settings import AnalysisSettings
from models.simulate import simulate
from models.verdicts.capacity import fewer_floor
from models.whatif import Recommendation, WhatIfInputs, WhatIfResult, whatif_sweep

PATH = "/whatif"
UTILIZATION_TARGET = AnalysisSettings().thresholds.util_target
"""The default utilization cap of the recommendation (the app's settings set it: the
advisor's ``util_target``, so the page recommends what ``advise`` does for the same inputs)."""
WORKERS_MIN, WORKERS_MAX = 1, 64
DEFAULT_WORKERS = (1, 16)
DEFAULT_ARRIVAL = 10.0
DEFAULT_SERVICE = 0.25
SLO_QUANTILES: dict[str, float | None] = {"mean": None, "p90": 0.9, "p95": 0.95, "p99": 0.99}
CONTENTION_MODES = ("none", "usl", "ceiling")
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
    contention: tuple[float, float] | None
    """(σ, κ) of the plan's USL fit, when it passed the advisor's gate (R² ≥ usl_r2_min)."""
    notes: tuple[str, ...]
    ceiling: tuple[float, float] | None = None
    """(X* items/s, cv²) of the plan's binding limit, when its rows obey a ceiling; the work
    time is then the pass time without waiting for the shared resource."""
    plan: PlanAnchor | None = None
    """The plan these inputs are (its count and its exact inputs), for :func:`whatif_view`."""


@dataclass(frozen=True)
class PlanAnchor:
    """The capacity plan behind a prefill: its recommended count and rule, and the exact
    inputs it sized with. While the page's inputs are the ones it prefilled (each as
    :func:`~models.formatting.shown_value` writes it, multipliers 1), the sweep computes with
    these exact values and recommends the plan's count — the same answer as every other
    surface, whatever rule chose it (the SLO, the utilization cap, the floor of
    ``min_workers``, "keep" where the limit is not the worker count). Typed inputs make it a
    what-if: the sweep's own answer."""

    workers: int | None
    rule_text: str
    arrival_rate_per_s: float
    service_mean_s: float
    contention: str
    sigma: float | None = None
    kappa: float | None = None
    ceiling_per_s: float | None = None
    ceiling_cv2: float = 1.0
    slo_wait_s: float | None = None
    slo_quantile: float | None = None

    def payload(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_payload(cls, data: object) -> PlanAnchor | None:
        """The anchor the page's store holds; None for anything else."""
        if not isinstance(data, Mapping):
            return None
        try:
            anchor = cls(**{f.name: data[f.name] for f in dataclasses.fields(cls)})
        except (KeyError, TypeError):
            return None
        ok = isinstance(anchor.arrival_rate_per_s, int | float) and \
            isinstance(anchor.service_mean_s, int | float) and \
            (anchor.workers is None or isinstance(anchor.workers, int))
        return anchor if ok else None

    def exact(self, params: WhatIfParams) -> WhatIfParams | None:
        """``params`` with the plan's exact inputs when they are the prefilled ones (each
        equal to what the field was filled with, the multipliers 1); else None."""
        inp = params.inputs

        def shown(exact: float | None, typed: float | None) -> bool:
            if exact is None or typed is None:
                return exact is None and typed is None
            return math.isclose(shown_value(exact), typed, rel_tol=1e-9, abs_tol=1e-15)

        if params.arrival_multiplier != 1 or params.service_multiplier != 1:
            return None
        if self.workers is not None and not inp.workers_min <= self.workers <= inp.workers_max:
            return None  # the range swept leaves the plan's count out: a what-if
        if inp.slo_wait_s != self.slo_wait_s or inp.slo_quantile != self.slo_quantile:
            return None
        if not (shown(self.arrival_rate_per_s, inp.arrival_rate_per_s)
                and shown(self.service_mean_s, inp.service_mean_s)):
            return None
        if self.contention == "usl":
            same = shown(self.sigma, inp.sigma) and shown(self.kappa, inp.kappa) \
                and inp.ceiling_per_s is None
        elif self.contention == "ceiling":
            same = shown(self.ceiling_per_s, inp.ceiling_per_s) and inp.sigma is None \
                and inp.ceiling_cv2 == self.ceiling_cv2
        else:
            same = inp.sigma is None and inp.ceiling_per_s is None
        if not same:
            return None
        return replace(params, inputs=replace(
            inp, arrival_rate_per_s=self.arrival_rate_per_s,
            service_mean_s=self.service_mean_s,
            sigma=self.sigma if self.contention == "usl" else None,
            kappa=self.kappa if self.contention == "usl" else None,
            ceiling_per_s=self.ceiling_per_s if self.contention == "ceiling" else None))


def queue_plan(source: Source, queue: str, now: float, settings: AnalysisSettings
               ) -> tuple[FleetAdvice | None, str]:
    """The queue's advice (its plan is ``advice.queues[0].plan``) from the settings' reads
    (the same as ``advise --queue``), or why there is none."""
    try:
        return advise_fleet(source, now, settings, queue), ""
    except ConfigError:
        return None, f"There is no queue named “{queue}” in {source.name}."
    except (CollectorError, ModelInputError) as exc:
        return None, f"Could not read the queue: {exc}"


def measured_inputs(source: Source | None, queue: str | None, now: float,
                    settings: AnalysisSettings | None = None) -> Measured:
    """The queue's plan inputs — λ at the design demand, the measured work time, the worker
    count and the USL fit — with notes on where each came from."""
    settings = settings or AnalysisSettings()
    blank = Measured(None, None, 1.0, None, None, ())
    if not queue:
        return replace(blank, notes=("No queue selected: type the arrival rate and work time.",))
    if source is None:
        return replace(blank, notes=("No data source is configured.",))
    advice, why = queue_plan(source, queue, now, settings)
    if advice is None:
        return replace(blank, notes=(why,))
    q: QueueSnapshot | None = advice.queues[0].snapshot
    plan = advice.queues[0].plan
    assert q is not None
    assert plan is not None
    lam = plan.demand_per_s
    notes = [
        f"λ = {fmt(lam, '/s')}: the design demand the advisor sizes with (the larger of now, "
        f"{fmt(q.arrival_rate_per_s, '/s')}, and the "
        f"p{100 * settings.thresholds.design_quantile:.0f} of the range), mean work time "
        f"{fmt(q.service_mean_s, 's')}, current workers "
        f"{fmt(q.workers)}; {advice.describe()}.",
        "Work-time variability cannot be read reliably from the workqueue histogram's decade "
        "buckets, so cs² = 1 (exponential) is assumed: type your own if you know it.",
    ]
    for name, value in (("arrival rate", q.arrival_rate_per_s),
                        ("work time", q.service_mean_s)):
        if value is None:
            notes.append(f"The {name} was not measured ({q.missing.get(_FIELD[name], '')}): "
                         "type it in.")
    usl = plan.usl
    contention = None
    sized = plan.sizing
    ceiling = None
    service = q.service_mean_s
    if sized is not None and sized.ceiling_per_s is not None:
        notes.append(f"{plan.binding_text[:1].upper()}{plan.binding_text[1:]} binds: "
                     f"{plan.rows_basis}.")
        ceiling, service = (sized.ceiling_per_s, sized.ceiling_cv2), sized.service_mean_s
    if usl is not None:
        contention = (usl["sigma"], usl["kappa"])
        notes.append(f"σ = {sig(usl['sigma'])}, κ = {sig(usl['kappa'])} fitted by the USL to "
                     f"throughput vs busy workers over the range (R² = {usl['r2']:.2f}).")
    elif ceiling is None:
        notes.append("No contention fit passed the advisor's gate for this queue: type σ and "
                     "κ to model contention, or leave it off.")
    anchor = None
    if lam is not None and service is not None:
        mode = "ceiling" if ceiling is not None else "usl" if contention is not None else "none"
        anchor = PlanAnchor(
            plan.recommended_workers, plan.rule_text, lam, service, mode,
            contention[0] if contention is not None else None,
            contention[1] if contention is not None else None,
            ceiling[0] if ceiling is not None else None,
            ceiling[1] if ceiling is not None else 1.0,
            settings.slo_wait_s, settings.slo_quantile)
    return Measured(lam, service, 1.0, q.workers, contention, tuple(notes), ceiling, anchor)


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
    workers: object, ceiling: object = None, ceiling_cv2: object = 1.0,
    *,
    utilization_target: float | None = UTILIZATION_TARGET,
) -> WhatIfParams:
    """Turn raw widget values into sweep inputs; a bad value is a ModelInputError sentence."""
    lam = parse_number("arrival rate λ", arrival)
    s = parse_number("mean work time", service, positive=True)
    a_mult = parse_number("arrival multiplier", arrival_mult, positive=True)
    s_mult = parse_number("work-time multiplier", service_mult, positive=True)
    cs2 = parse_number("work-time cv²", service_cv2)
    ca2 = parse_number("arrival cv²", arrival_cv2)
    if contention is not None and contention not in CONTENTION_MODES:
        raise ModelInputError(f"Unknown contention mode {str(contention)[:40]!r}: choose "
                              f"{', '.join(CONTENTION_MODES)}.")
    use_usl = contention == "usl"
    sig = kap = x_star = None
    cv2_star = 1.0
    if use_usl:
        sig = parse_number("contention σ", sigma)
        kap = parse_number("coherency κ", kappa)
    elif contention == "ceiling":
        x_star = parse_number("shared ceiling X*", ceiling, positive=True)
        cv2_star = parse_number("shared resource's cv²", ceiling_cv2)
    slo_s = None if slo in (None, "") else parse_number("wait SLO", slo, positive=True)
    if not isinstance(slo_quantile, str) or slo_quantile not in SLO_QUANTILES:
        raise ModelInputError(f"Unknown SLO statistic {str(slo_quantile)[:40]!r}.")
    if not (isinstance(workers, list | tuple) and len(workers) == 2):
        raise ModelInputError("Choose a worker range with the slider.")
    lo, hi = (round(parse_number("worker range", w, positive=True)) for w in workers)
    if not WORKERS_MIN <= min(lo, hi) <= max(lo, hi) <= WORKERS_MAX:
        raise ModelInputError(f"The worker range must lie within {WORKERS_MIN}–{WORKERS_MAX} "
                              f"(the slider's), got {workers[0]!r}–{workers[1]!r}.")
    inputs = WhatIfInputs(
        arrival_rate_per_s=lam * a_mult, service_mean_s=s * s_mult, service_cv2=cs2,
        arrival_cv2=ca2, sigma=sig, kappa=kap, ceiling_per_s=x_star, ceiling_cv2=cv2_star,
        workers_min=max(1, min(lo, hi)),
        workers_max=max(lo, hi, 1), slo_wait_s=slo_s, slo_quantile=SLO_QUANTILES[slo_quantile],
        utilization_target=utilization_target,
    )
    return WhatIfParams(inputs, a_mult, s_mult, use_usl or x_star is not None)


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
                advised_workers: int | None = None, plan: PlanAnchor | None = None,
                floor_workers: float | None = None) -> WhatIfView:
    """The sweep's three charts and the recommendation sentence; ``advised_workers`` (the
    advisor's recommendation for the measured queue) is marked on each chart. With the
    inputs ``plan`` prefilled, the sweep is the plan's (its exact inputs, its count:
    :class:`PlanAnchor`); else the sweep's own, never fewer than ``floor_workers`` (the
    advisor's ``min_workers``) below the current count."""
    anchored = plan.exact(params) if plan is not None else None
    if anchored is not None:
        params = anchored
    try:
        result = whatif_sweep(params.inputs)
    except ModelInputError as exc:
        return _empty_view(str(exc))
    if anchored is not None and plan is not None:
        result = replace(result, recommendation=plan_recommendation(plan, result))
    else:
        result = replace(result, recommendation=floored(result, current_workers,
                                                        floor_workers))
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


def advisor_mark(source: Source | None, queue: str | None, now: float,
                 settings: AnalysisSettings | None = None) -> AdvisorMark:
    """The queue's plan at its *measured* demand (the same reads and plan as ``advise`` and
    the queue page): its recommended count is marked on the charts."""
    if not queue or source is None:
        return AdvisorMark(None, "")
    advice, why = queue_plan(source, queue, now, settings or AnalysisSettings())
    if advice is None:
        return AdvisorMark(None, why if why.startswith("Could not") else "")
    plan: CapacityPlan | None = advice.queues[0].plan
    assert plan is not None
    kinds = plan.tags
    basis = f"Capacity plan ({advice.describe()})"
    if plan.recommended_workers is None:
        return AdvisorMark(None, f"{basis}: {plan.headline} — no worker count recommended.",
                           kinds)
    return AdvisorMark(plan.recommended_workers,
                       f"{basis}: {plan.headline}. Recommended: {plan.recommended_workers} "
                       f"worker{'' if plan.recommended_workers == 1 else 's'} — "
                       f"{plan.rule_text} (dashed purple line on the charts).", kinds)


def render_advisor(mark: AdvisorMark) -> Any:
    """The ``#whatif-advice`` content (text only; Dash escapes it)."""
    if not mark.text:
        return ""
    parts: list[Any] = [html.P(mark.text, id="whatif-advice-text")]
    if len(mark.kinds) > 1:
        parts.append(html.P("All verdicts: " + ", ".join(mark.kinds), className="ql-note"))
    return parts


def plan_recommendation(plan: PlanAnchor, result: WhatIfResult) -> Recommendation:
    """The plan's count, with the sweep's own pick beside it where they differ (the plan
    keeps a count whose limit is not the workers, or keeps a floor)."""
    own = result.recommendation.workers
    reason = f"the capacity plan's count: {plan.rule_text}"
    if own != plan.workers:
        reason += (f" (the sweep alone would pick {own}: {result.recommendation.reason})"
                   if own is not None else
                   f" (no count of the sweep alone: {result.recommendation.reason})")
    return Recommendation(plan.workers, reason)


def floored(result: WhatIfResult, current_workers: float | None,
            floor_workers: float | None) -> Recommendation:
    """The sweep's recommendation, raised to min(``floor_workers``, the current count) when
    it is fewer: the plan's floor of a "fewer workers" change (``min_workers``: one worker is
    no redundancy against a stuck pass)."""
    rec = result.recommendation
    now = worker_count(current_workers)
    if rec.workers is None or floor_workers is None or now is None:
        return rec
    kept = fewer_floor(rec.workers, now, floor_workers)
    if kept == rec.workers:
        return rec
    return Recommendation(kept, f"{rec.reason}; kept at {kept}, the advisor's floor "
                                f"(min_workers) for fewer workers")


def recommendation_text(params: WhatIfParams, result: WhatIfResult,
                        current_workers: float | None) -> str:
    """'Recommended: 6 workers — <reason> …' with the model and the effective inputs."""
    inp = params.inputs
    rec = result.recommendation
    head = ("No worker count in this range works" if rec.workers is None
            else f"Recommended: {rec.workers} worker{'' if rec.workers == 1 else 's'}")
    parts = [f"{head} — {rec.reason}"]
    row = next((r for r in result.rows if r.workers == rec.workers), None)
    if row is not None and row.wait_mean_s is not None:
        parts.append(f"At c = {row.workers}: mean wait {fmt(row.wait_mean_s, 's')}, p95 wait "
                     f"{fmt(row.wait_p95_s, 's')}, utilization {percent_text(row.utilization)}.")
    now = worker_count(current_workers)
    if now is not None and rec.workers is not None:
        delta = rec.workers - now
        change = ("the same as now" if delta == 0 else
                  f"{abs(delta)} {'more' if delta > 0 else 'fewer'} than the {now} now")
        parts.append(f"That is {change}.")
    parts.append(
        f"Model: {result.model}; λ = {fmt(inp.arrival_rate_per_s, '/s')} "
        f"(×{params.arrival_multiplier:g}), mean work time {fmt(inp.service_mean_s, 's')} "
        f"(×{params.service_multiplier:g})"
        + (f", USL σ = {inp.sigma:g}, κ = {inp.kappa:g}." if inp.sigma is not None else
           f", a shared ceiling of {fmt(inp.ceiling_per_s, '/s')} (the work time is the pass "
           "without waiting for it)." if inp.ceiling_per_s is not None else ", no contention.")
    )
    if inp.slo_wait_s is not None:
        parts.append(slo_edge_note(inp.slo_wait_s))
    return " ".join(p for p in parts if p)


SLO_EDGES_S: tuple[float, ...] = (0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
"""The bucket edges of ``workqueue_queue_duration_seconds`` from 1 ms up (client-go's
ExponentialBuckets(10e-9, 10, 12) in controller-runtime ≥ 0.17; component-base stops at
10 s): the SLOs the measured waits can be checked against exactly. The SLO field offers
them."""


def slo_edge_note(slo_s: float) -> str:
    """'' for an SLO on a bucket edge; else a sentence saying the measured check is
    approximate (the share of waits above it is only known per decade bucket)."""
    if any(math.isclose(slo_s, e, rel_tol=1e-9) for e in SLO_EDGES_S):
        return ""
    below = max((e for e in SLO_EDGES_S if e < slo_s), default=0.0)
    above = min((e for e in SLO_EDGES_S if e > slo_s), default=math.inf)
    return (f"The SLO {fmt(slo_s, 's')} lies between the queue-wait histogram's bucket edges "
            f"{fmt(below, 's')} and {fmt(above, 's')}: measured waits can only be checked "
            "against it approximately (the models' figures are exact).")


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
        shared: dict[str, Any] = {}
        shared_note = ""
        if inp.ceiling_per_s is not None:
            # the mechanism, not the formula's stretched pass: a rate limiter on a dependency
            # (cv² 0), else a lock held for the share of the pass that sets the ceiling
            mean_c = inp.service_mean_s
            hold = 1.0 / (inp.ceiling_per_s * inp.service_mean_s)
            shared = ({"dependency_qps": inp.ceiling_per_s, "dependency_burst": 1}
                      if inp.ceiling_cv2 == 0 or hold > 1 else {"lock_fraction": hold})
            shared_note = (
                f" The shared ceiling is simulated as a rate limiter of "
                f"{fmt(inp.ceiling_per_s, '/s')} (burst 1) on every pass"
                if "dependency_qps" in shared else
                f" The shared ceiling is simulated as one lock held for {percent_text(hold)} of "
                "each pass") + (", a mechanism the formula's exponential station only "
                                "approximates." if 0 < inp.ceiling_cv2 < 1 or hold > 1
                                else ".")
        sim = simulate(
            arrival_rate_per_s=lam, keys=SIM_KEYS, workers=c, service_mean_s=mean_c,
            duration_s=duration, seed=SIM_SEED, service_dist=dist,  # type: ignore[arg-type]
            service_cv=math.sqrt(cs2), warmup_s=0.1 * duration, progress=progress, **shared,
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
        f"{percent_text(sim.utilization)} vs {percent_text(formula.utilization)}." + caveat
        + shared_note
    )
    return SimView(text, fig)


# --- layout and wiring ----------------------------------------------------------------------

def _num_field(label: str, input_id: str, value: float | None, step: float | str,
               unit: str = "", options: tuple[float, ...] = ()) -> html.Div:
    """A number field; ``options``: values the browser suggests (an HTML datalist)."""
    extra: dict[str, Any] = {"list": f"{input_id}-options"} if options else {}
    children: list[Any] = [
        html.Label(f"{label}{f' ({unit})' if unit else ''}", htmlFor=input_id),
        dcc.Input(id=input_id, type="number", value=value, min=0, step=step, debounce=True,
                  **extra)]
    if options:
        children.append(html.Datalist([html.Option(value=f"{v:g}") for v in options],
                                      id=f"{input_id}-options"))
    return html.Div(children, className="ql-field")


def _multiplier(label: str, slider_id: str, value: float = 1.0) -> html.Div:
    return html.Div(
        [html.Label(label, htmlFor=slider_id),
         dcc.Slider(id=slider_id, min=0.25, max=4, step=0.05, value=value,
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
    """The page layout; ``?queue=NAME`` preselects a queue, the other query parameters set
    the inputs (:func:`address_inputs`)."""

    def layout(**query: object) -> html.Div:
        address = address_inputs(query)
        queue = address.queue
        v: dict[str, Any] = {
            "whatif-arrival": DEFAULT_ARRIVAL, "whatif-service": DEFAULT_SERVICE,
            "whatif-service-cv2": 1.0, "whatif-arrival-cv2": 1.0, "whatif-arrival-mult": 1.0,
            "whatif-service-mult": 1.0, "whatif-contention": "none", "whatif-sigma": 0.0,
            "whatif-kappa": 0.0, "whatif-slo": ctx.slo_wait_s,
            "whatif-slo-q": _quantile_key(ctx.settings.slo_quantile),
            "whatif-workers": list(DEFAULT_WORKERS), "whatif-ceiling": None,
            "whatif-ceiling-cv2": 1.0, **address.values,
        }
        pending = {"queue": queue, "given": sorted(address.values), "notes": address.notes}
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
                                           v["whatif-arrival"], "any", "items/s"),
                                _num_field("mean work time", "whatif-service",
                                           v["whatif-service"], "any", "s"),
                                _num_field("work-time cv² (1 = exponential)",
                                           "whatif-service-cv2", v["whatif-service-cv2"],
                                           "any"),
                                _num_field("arrival cv² (1 = Poisson)", "whatif-arrival-cv2",
                                           v["whatif-arrival-cv2"], "any"),
                                _multiplier("arrival multiplier", "whatif-arrival-mult",
                                            v["whatif-arrival-mult"]),
                                _multiplier("work-time multiplier", "whatif-service-mult",
                                            v["whatif-service-mult"]),
                            ],
                            className="ql-col ql-panel",
                        ),
                        html.Div(
                            [
                                html.Div([html.Label("Contention", htmlFor="whatif-contention"),
                                          dcc.RadioItems(
                                              id="whatif-contention",
                                              options=[{"label": " none", "value": "none"},
                                                       {"label": " USL σ, κ", "value": "usl"},
                                                       {"label": " shared ceiling",
                                                        "value": "ceiling"}],
                                              value=v["whatif-contention"], inline=True,
                                              labelStyle={"marginRight": "1rem"})],
                                         className="ql-field"),
                                _num_field("contention σ", "whatif-sigma", v["whatif-sigma"],
                                           "any"),
                                _num_field("coherency κ", "whatif-kappa", v["whatif-kappa"],
                                           "any"),
                                _num_field("shared ceiling X*", "whatif-ceiling",
                                           v["whatif-ceiling"], "any", "/s"),
                                _num_field("its cv² (1 held, 0 rate limiter)",
                                           "whatif-ceiling-cv2", v["whatif-ceiling-cv2"], "any"),
                                _num_field("wait SLO", "whatif-slo", v["whatif-slo"], "any",
                                           "s", SLO_EDGES_S),
                                html.Div([html.Label("SLO applies to", htmlFor="whatif-slo-q"),
                                          dcc.RadioItems(id="whatif-slo-q",
                                                         options=list(SLO_QUANTILES),
                                                         value=v["whatif-slo-q"],
                                                         inline=True,
                                                         labelStyle={"marginRight": "1rem"})],
                                         className="ql-field"),
                                html.Div([html.Label("worker range c", htmlFor="whatif-workers"),
                                          dcc.RangeSlider(
                                              id="whatif-workers", min=WORKERS_MIN,
                                              max=WORKERS_MAX, step=1,
                                              value=v["whatif-workers"],
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
                dcc.Store(id="whatif-plan"),  # the plan the prefill is (PlanAnchor)
                # what the address set, until the first prefill has kept it (_load)
                dcc.Store(id="whatif-address-inputs", data=pending),
                dcc.Store(id="whatif-address"),  # the query string the last sweep wrote
                dcc.Store(id="whatif-address-written"),
                dcc.Store(id="whatif-title"),
                dcc.Store(id="whatif-title-set"),
            ]
        )

    return layout


def _quantile_key(q: float) -> str:
    """The SLO statistic choice of a quantile (the settings'), p95 when it is not offered."""
    return next((k for k, v in SLO_QUANTILES.items() if v == q), "p95")


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
    lam = nu if measured.arrival_rate_per_s is None else shown_value(measured.arrival_rate_per_s)
    s = nu if measured.service_mean_s is None else shown_value(measured.service_mean_s)
    ceiling: Any = nu
    ceiling_cv2: Any = nu
    sigma: Any = nu
    kappa: Any = nu
    contention: Any
    if measured.ceiling is not None:
        contention = "ceiling"
        ceiling, ceiling_cv2 = shown_value(measured.ceiling[0]), measured.ceiling[1]
    elif measured.contention is not None:
        contention = "usl"
        sigma = shown_value(measured.contention[0])
        kappa = shown_value(measured.contention[1])
    else:  # a measured queue without a usable fit: contention off, typed σ, κ kept
        contention = "none" if measured.arrival_rate_per_s is not None else nu
        sigma, kappa = nu, nu
    workers: Any = nu
    if measured.workers is not None:
        hi = int(min(WORKERS_MAX, max(DEFAULT_WORKERS[1], 2 * round(measured.workers))))
        workers = [WORKERS_MIN, hi]
    notes = [html.Li(n) for n in measured.notes]
    cv2: Any = nu if measured.arrival_rate_per_s is None else measured.service_cv2
    anchor = measured.plan.payload() if measured.plan is not None else None
    return (lam, s, cv2, contention, sigma, kappa, workers, measured.workers, notes, ceiling,
            ceiling_cv2, anchor)


_SWEEP_STATE = (
    ("whatif-arrival", "value"), ("whatif-service", "value"), ("whatif-service-cv2", "value"),
    ("whatif-arrival-cv2", "value"), ("whatif-arrival-mult", "value"),
    ("whatif-service-mult", "value"), ("whatif-contention", "value"),
    ("whatif-sigma", "value"), ("whatif-kappa", "value"), ("whatif-slo", "value"),
    ("whatif-slo-q", "value"), ("whatif-workers", "value"), ("whatif-ceiling", "value"),
    ("whatif-ceiling-cv2", "value"),
)


# --- state in the address -------------------------------------------------------------------

URL_FIELDS: tuple[tuple[str, str], ...] = (
    ("lambda", "whatif-arrival"), ("service", "whatif-service"),
    ("cv2", "whatif-service-cv2"), ("acv2", "whatif-arrival-cv2"),
    ("lmult", "whatif-arrival-mult"), ("smult", "whatif-service-mult"),
    ("contention", "whatif-contention"), ("sigma", "whatif-sigma"), ("kappa", "whatif-kappa"),
    ("slo", "whatif-slo"), ("quantile", "whatif-slo-q"), ("workers", "whatif-workers"),
    ("ceiling", "whatif-ceiling"), ("ccv2", "whatif-ceiling-cv2"),
)
"""(query parameter, input id) of every sweep input, in :data:`_SWEEP_STATE`'s order (which is
:func:`parse_params`'). ``workers`` is written ``1-16``; ``slo=`` (empty) is "no SLO"."""
MAX_ADDRESS_VALUE_CHARS = 40
"""The longest value of a number or choice in the address (a float's repr has ≤ 24)."""
MAX_ADDRESS_QUEUE_CHARS = 512
"""The longest queue name the address may select (Kubernetes object names stop at 253; a
controller's queue name is shorter still)."""
_CHECK_BASE: tuple[object, ...] = (DEFAULT_ARRIVAL, DEFAULT_SERVICE, 1.0, 1.0, 1.0, 1.0, "none",
                                   0.0, 0.0, 1.0, "p95", list(DEFAULT_WORKERS), 1.0, 1.0)
"""A valid set of inputs that one value from the address is checked in."""
_CHECK_MODE = {"sigma": "usl", "kappa": "usl", "ceiling": "ceiling", "ccv2": "ceiling"}
"""The contention mode in which :func:`parse_params` reads a parameter."""


@dataclass(frozen=True)
class AddressInputs:
    """What the address sets on the page: the queue, the inputs it gives and the notes."""

    queue: str | None
    values: Mapping[str, object]
    """{input id: widget value} of the parameters that passed :func:`parse_params`."""
    notes: tuple[str, ...] = ()


def _widget_value(param: str, text: str) -> object:
    """The widget value an address parameter stands for (unchecked: a text that is no number
    stays text, for :func:`parse_params` to refuse in its own words)."""
    if param in ("contention", "quantile"):
        return text
    if param == "slo" and text == "":
        return None
    if param == "workers":
        ends = text.split("-")
        return [_number_or_text(e) for e in ends] if len(ends) == 2 else text
    return _number_or_text(text)


def _number_or_text(text: str) -> object:
    try:
        return float(text)
    except ValueError:
        return text


def address_inputs(query: Mapping[str, object]) -> AddressInputs:
    """The page's inputs from the address's query parameters (Dash pages hands them to the
    layout). Each is checked by :func:`parse_params` in an otherwise valid set of inputs: one
    it refuses, one longer than :data:`MAX_ADDRESS_VALUE_CHARS` or one given twice is left
    out with a one-sentence note; unknown parameters are ignored."""
    notes: list[str] = []
    queue: str | None = None
    raw_queue = query.get("queue")
    if isinstance(raw_queue, str) and 0 < len(raw_queue) <= MAX_ADDRESS_QUEUE_CHARS:
        queue = raw_queue
    elif raw_queue not in (None, ""):
        notes.append("The address's queue was not used: it is given more than once or is "
                     f"longer than {MAX_ADDRESS_QUEUE_CHARS} characters.")
    values: dict[str, object] = {}
    index = {param: i for i, (param, _) in enumerate(URL_FIELDS)}
    for param, input_id in URL_FIELDS:
        raw = query.get(param)
        if raw is None:
            continue
        if not isinstance(raw, str) or len(raw) > MAX_ADDRESS_VALUE_CHARS:
            notes.append(f"The address's {param} was not used: it is given more than once or "
                         f"is longer than {MAX_ADDRESS_VALUE_CHARS} characters.")
            continue
        value = _widget_value(param, raw)
        trial: list[Any] = list(_CHECK_BASE)
        trial[index[param]] = value
        if param in _CHECK_MODE:
            trial[index["contention"]] = _CHECK_MODE[param]
        try:
            parse_params(*trial)
        except ModelInputError as exc:
            notes.append(f"The address's {param}={raw[:MAX_ADDRESS_VALUE_CHARS]!r} was not "
                         f"used: {exc}")
            continue
        if param == "workers" and isinstance(value, list):
            lo, hi = sorted(round(float(v)) for v in value)
            value = [lo, hi]
        values[input_id] = value
    if values:
        given = ", ".join(param for param, input_id in URL_FIELDS if input_id in values)
        notes.append(f"From the address: {given} (over the measured values).")
    return AddressInputs(queue, values, tuple(notes))


def _address_text(value: object) -> str:
    """An input value as the address writes it: a number exactly (the shortest text that
    reads back as the same float, not :func:`models.formatting.sig`'s rounding — a link must
    reproduce the sweep), a choice as it is."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        number = float(value)
        return str(int(number)) if number.is_integer() and abs(number) < 1e15 else repr(number)
    return str(value)


def address_query(queue: str | None, values: Sequence[object]) -> str:
    """'?queue=…&lambda=…&…&workers=1-16' for ``values`` in :data:`URL_FIELDS`' order (the
    sweep's inputs, which :func:`parse_params` accepted); an empty field is left out, an
    empty SLO is written ``slo=`` ("no SLO")."""
    pairs: list[tuple[str, str]] = []
    if queue:
        pairs.append(("queue", queue))
    for (param, _), value in zip(URL_FIELDS, values, strict=True):
        if param == "workers" and isinstance(value, list | tuple) and len(value) == 2:
            lo, hi = sorted(round(float(v)) for v in value)
            pairs.append((param, f"{lo}-{hi}"))
        elif value is None or value == "":
            if param == "slo":
                pairs.append((param, ""))
        else:
            pairs.append((param, _address_text(value)))
    return "?" + urlencode(pairs, quote_via=quote)


PREFILL_IDS: tuple[str | None, ...] = (
    "whatif-arrival", "whatif-service", "whatif-service-cv2", "whatif-contention",
    "whatif-sigma", "whatif-kappa", "whatif-workers", None, None, "whatif-ceiling",
    "whatif-ceiling-cv2", None,
)
"""The input each of :func:`prefill`'s outputs fills (None: not an input)."""


def keep_address_values(outputs: Sequence[Any], given: Sequence[str]) -> list[Any]:
    """:func:`prefill`'s outputs with ``dash.no_update`` for the inputs the address set (the
    layout already holds them: the address wins over the measurement)."""
    return [dash.no_update if input_id is not None and input_id in given else out
            for out, input_id in zip(outputs, PREFILL_IDS, strict=True)]


ADDRESS_JS = """
function(search) {
    // the sweep's inputs into the address, without a reload or a new history entry
    if (typeof search === 'string' && search.charAt(0) === '?') {
        window.history.replaceState(window.history.state, '',
            window.location.pathname + search + window.location.hash);
    }
    return search;
}
"""
TITLE_JS = """
function(title) {
    if (typeof title === 'string' && title) { document.title = title; }
    return title;
}
"""


def whatif_title(queue: str | None) -> str:
    """'queuelens — what-if <queue>' ('queuelens — what-if' without one)."""
    return page_title(f"what-if {queue}" if queue else "what-if")


def sweep_outputs(view: WhatIfView) -> tuple[Any, ...]:
    return (view.recommendation, view.error, *view.figures)


def register(app: dash.Dash, ctx: AppContext) -> None:
    """Register the page (path ``/whatif``) and its callbacks on ``app``."""
    register_page(__name__, path=PATH, name="What-if", order=2, layout=make_layout(ctx))

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
        Output("whatif-ceiling", "value"),
        Output("whatif-ceiling-cv2", "value"),
        Output("whatif-plan", "data"),
        Output("whatif-address-inputs", "data"),
        Input("whatif-queue", "value"),
        State("whatif-address-inputs", "data"),
    )
    def _load(queue: str | None, pending: object) -> tuple[Any, ...]:
        with ctx.refresh_budget():
            outputs = list(prefill(measured_inputs(ctx.source, queue, ctx.now(),
                                                   ctx.settings)))
        if isinstance(pending, dict) and pending.get("queue") == queue:
            # the page's first load: what the address gave wins over the measurement
            given = [g for g in pending.get("given") or [] if isinstance(g, str)]
            notes = [html.Li(str(n)) for n in (pending.get("notes") or [])[:len(URL_FIELDS) + 2]]
            outputs = keep_address_values(outputs, given)
            outputs[8] = [*outputs[8], *notes]
        return (*outputs, None)

    @app.callback(
        Output("whatif-advice", "children"),
        Output("whatif-advisor", "data"),
        Output("whatif-title", "data"),
        Input("whatif-queue", "value"),
    )
    def _advise(queue: str | None) -> tuple[Any, int | None, str]:
        with ctx.refresh_budget():
            mark = advisor_mark(ctx.source, queue, ctx.now(), ctx.settings)
        return render_advisor(mark), mark.workers, whatif_title(queue)

    @app.callback(
        Output("whatif-recommendation", "children"),
        Output("whatif-error", "children"),
        Output("whatif-wait-graph", "figure"),
        Output("whatif-slo-graph", "figure"),
        Output("whatif-throughput-graph", "figure"),
        Output("whatif-address", "data"),
        *[Input(i, p) for i, p in _SWEEP_STATE],
        Input("whatif-current-workers", "data"),
        Input("whatif-advisor", "data"),
        Input("whatif-plan", "data"),
        State("whatif-queue", "value"),
    )
    def _sweep(*values: Any) -> tuple[Any, ...]:
        inputs, current, advisor, anchor, queue = (values[:-4], values[-4], values[-3],
                                                   values[-2], values[-1])
        queue = queue if isinstance(queue, str) else None
        try:
            params = parse_params(*inputs,
                                  utilization_target=ctx.settings.thresholds.util_target)
        except ModelInputError as exc:
            return (*sweep_outputs(_empty_view(str(exc))), dash.no_update)
        advised = advisor if isinstance(advisor, int) else None
        view = whatif_view(params, current, advised, PlanAnchor.from_payload(anchor),
                           ctx.settings.thresholds.min_workers)
        workers = f"{params.inputs.workers_min}-{params.inputs.workers_max}"
        for fig in view.figures:  # a new queue or worker range starts unzoomed
            fg.set_uirevision(fig, queue or "", workers)
        return (*sweep_outputs(view), address_query(queue, inputs))

    clientside_callback(app, ADDRESS_JS, Output("whatif-address-written", "data"),
                        Input("whatif-address", "data"), prevent_initial_call=True)
    clientside_callback(app, TITLE_JS, Output("whatif-title-set", "data"),
                        Input("whatif-title", "data"), prevent_initial_call=True)

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
            params = parse_params(*values[:-1],
                                  utilization_target=ctx.settings.thresholds.util_target)
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

