"""The capacity plan of one queue: the one answer every surface shows.

The overview, the queue page, the what-if page, ``advise``, ``whatif`` and every report read
a :class:`CapacityPlan`, built here from what the advisor found (:class:`models.advisor.
Assessment`: the verdicts, the sizing inputs and sweep, the USL fit) and the queue's history.
Nothing on a surface recomputes a worker count, a limit or a demand.

**Recommended worker count** (one number, one rule, :data:`RULES`):

* a verdict that names a count (add workers, a growing backlog, fewer workers) gives it —
  the sweep's rule: the smallest count whose SLO quantile of wait is within the SLO, and at
  least the count that keeps utilization ≤ ``util_target`` at the design demand
  (:meth:`models.whatif.WhatIfTable.design_workers`); the rule says which of the two chose;
* contention: the current count, or the USL peak N* when it is lower (past the peak every
  worker lowers throughput) — more workers do not help;
* a hot key, a retry storm, a stuck worker, requeue misuse, long passes or a healthy queue:
  the current count (the limit is not the worker count);
* not enough data: none.

**Rows and band.** Every worker count of the advisor's sweep (at the design demand: the
larger of λ now and the ``design_quantile`` of λ over the range) with throughput, mean and
p95 wait, P(wait > SLO) and utilization. The band is the same sweep at the lowest and highest
demand that bracket it: from the median λ of the range's points (or the design demand, if
lower) to the highest λ of the range (or the design demand, if higher), with the measured mean
work time — the spread of the history's demand, not a confidence interval of the model.
With a USL fit of (busy workers, throughput) whose R² passes the advisor's ``usl_r2_min``
(the one gate: the what-if page pre-fills σ, κ from the same fit) each row also carries the
fitted curve X(N) = γN / (1 + σ(N − 1) + κN(N − 1)) (Gunther, *Guerrilla Capacity Planning*,
2007).

**Check the change.** Where the history's worker count changed, :attr:`CapacityPlan.change`
is :func:`models.change.check_change` of the history (its one home: which points are clean,
the drain, a too-short "after"), with the rate window of the plan's range read
(:func:`models.change.point_window_s`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from models.advisor import Assessment, QueueHistory, Verdict
from models.bindings import CEILING_LIMITS, limits
from models.bindings.headroom import Headroom, headroom_text, headrooms
from models.bindings.measured import MeasuredCeiling
from models.bindings.registry import KnobKind
from models.bindings.rows import LimitSizing, limit_prediction, limit_sizing
from models.change import CHANGE_MIN_POINTS, ChangeCheck, check_change, point_window_s
from models.contention import UslFit, usl_throughput
from models.errors import ModelInputError
from models.flowschema import flowschema_manifest
from models.formatting import number_text
from models.options import Option
from models.settings import AnalysisSettings
from models.verdicts.fallback import unusable
from models.verdicts.kinds import Kind
from models.verdicts.registry import headline as rule_headline
from models.whatif import WhatIfInputs, WhatIfTable, whatif_tables

__all__ = [
    "CHANGE_MIN_POINTS",
    "RULES",
    "CapacityPlan",
    "ChangeCheck",
    "Knob",
    "PlanRow",
    "check_change",
    "plan_many",
]

FloatArray = npt.NDArray[np.float64]

RULES: Mapping[str, str] = MappingProxyType({
    "slo": "the fewest workers whose p{q} wait stays within the SLO at the design demand",
    "utilization_target": "the fewest workers that keep utilization at or below {u} % at the "
                          "design demand (the SLO alone would need fewer)",
    "fewer": "fewer workers still meet the SLO and keep utilization at or below {u} %",
    "contention_ceiling": "the current count, or the peak of the fitted scaling curve when it "
                          "is lower: more workers only add contention",
    "keep": "the current count: the limit is not the worker count",
    "none": "no count: the data needed to size the queue were not measured",
})
"""Which rule chose the recommended count, in words ({q}: the SLO quantile in %, {u}: the
utilization target in %)."""

_KIND_LIMIT: Mapping[str, str] = MappingProxyType({
    kind: lim.name for lim in limits().values() for kind in lim.kinds})
"""verdict kind -> the binding limit it names (each limit's module of :mod:`models.bindings`
declares its kinds)."""


@dataclass(frozen=True)
class PlanRow:
    """One worker count of the plan (None where a value does not exist)."""

    workers: int
    throughput_per_s: float
    wait_mean_s: float | None
    wait_p95_s: float | None
    p_wait_over_slo: float | None
    utilization: float
    stable: bool
    wait_mean_lo_s: float | None = None
    wait_mean_hi_s: float | None = None
    wait_p95_lo_s: float | None = None
    wait_p95_hi_s: float | None = None
    utilization_lo: float | None = None
    utilization_hi: float | None = None
    throughput_fit_per_s: float | None = None
    """The USL curve fitted on the range's (busy workers, throughput) points, if one was."""


@dataclass(frozen=True)
class Knob:
    """Where the recommendation is set."""

    setting: str
    """e.g. ``MaxConcurrentReconciles`` or ``--concurrent-replicaset-syncs``."""
    how: str
    """Where it goes, in one sentence."""
    manifest: str | None = None
    """YAML to apply, when the knob is a Kubernetes object (a FlowSchema)."""


@dataclass(frozen=True)
class CapacityPlan:
    """One queue's plan (see the module docstring)."""

    queue: str
    workers_now: int | None
    recommended_workers: int | None
    rule: str
    rule_text: str
    binding_limit: str
    binding_text: str
    ceiling_per_s: float | None
    """Most items/s the binding limit allows, when known."""
    ceiling_basis: str | None
    demand_per_s: float | None
    """The design demand the queue is sized for."""
    demand_now_per_s: float | None
    service_mean_s: float | None
    headline: str
    kind: str
    severity: str
    confidence: float
    caveats: tuple[str, ...]
    knobs: tuple[Knob, ...]
    options: tuple[Option, ...]
    model: str | None
    band_source: str
    verdicts: tuple[Verdict, ...]
    settings: AnalysisSettings
    sizing: WhatIfInputs | None = None
    """The what-if inputs the rows were computed with (the design demand, E[S], the SLO, and
    the binding limit's ceiling or USL curve: :mod:`models.bindings.rows`)."""
    rows_basis: str = ""
    """How the rows model the binding limit, in words ("" where they are the plain sweep)."""
    usl: Mapping[str, float] | None = None
    """{gamma_per_s, sigma, kappa, r2, peak_workers?} of the fit, if one was made."""
    tags: tuple[str, ...] = field(default=())
    """Every verdict kind, for the small tags beside the headline."""
    headroom: tuple[Headroom, ...] = ()
    """How far the demand can grow before each limit with a measured ceiling binds, smallest
    first (:mod:`models.bindings.headroom`)."""
    ceilings: tuple[MeasuredCeiling, ...] = ()
    """Every limit's ceiling as measured from its own signals, or why it could not be."""
    demand_lower_bound: bool = False
    """The design demand is a lower bound: the queue was saturated at some of the range's
    points (every worker busy, items waiting), where client-go counts an add only when the
    key is not already waiting — the add rate undercounts what was offered."""
    table: WhatIfTable | None = field(default=None, repr=False, compare=False)
    band: tuple[WhatIfTable, WhatIfTable] | None = field(default=None, repr=False,
                                                         compare=False)
    fit: UslFit | None = field(default=None, repr=False, compare=False)
    history: QueueHistory | None = field(default=None, repr=False, compare=False)
    """What the rows, the measured points and the change check are read from, on first use
    (10,000 plans are built for the overview, which shows none of them)."""

    @cached_property
    def rows(self) -> tuple[PlanRow, ...]:
        """Every worker count of the sweep, with the band and the fitted curve."""
        return _rows(self.table, self.band, self.fit) if self.table is not None else ()

    @cached_property
    def change(self) -> ChangeCheck | None:
        """The last worker-count change of the history, checked (:mod:`models.change`)."""
        predict = limit_prediction(self.sizing)
        found = check_change(self.history, window_s=point_window_s(self.settings),
                             predict=predict)
        if found is None or predict is None:
            return found
        return replace(found, prediction_basis=(
            f"the binding limit's model ({self.binding_limit}): its ceiling or curve was "
            "read from the whole range, the points after the change included — an in-sample "
            "check, not a prediction from before"))

    @cached_property
    def _measured(self) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
        return _measured(self.history)

    @property
    def measured_busy_workers(self) -> tuple[float, ...]:
        """The range's points, for the decisive chart (busy workers against throughput)."""
        return self._measured[0]

    @property
    def measured_throughput_per_s(self) -> tuple[float, ...]:
        return self._measured[1]

    @property
    def measured_workers(self) -> tuple[float, ...]:
        return self._measured[2]

    @property
    def least_headroom(self) -> Headroom | None:
        """The smallest headroom: the limit the demand reaches first; None where there is
        none, or where the binding limit's own ceiling is not measured (a smaller figure of
        another limit would read as room the queue does not have)."""
        if self._binds_unmeasured:
            return None
        return self.headroom[0] if self.headroom else None

    @property
    def _binds_unmeasured(self) -> bool:
        lim = limits()[self.binding_limit]
        capped = lim.name in CEILING_LIMITS or lim.unmeasured is not None
        return capped and all(h.limit != lim.name for h in self.headroom)

    @property
    def headroom_limit(self) -> str | None:
        """The limit of :attr:`headroom_text`: the least headroom's, or the binding limit's
        where its ceiling is not measured; None without either."""
        least = self.least_headroom
        if least is not None:
            return least.limit
        return self.binding_limit if self._binds_unmeasured else None

    @property
    def headroom_text(self) -> str | None:
        """The smallest headroom in words (:func:`models.bindings.headroom.headroom_text`);
        for a binding limit whose ceiling is not measured, that it binds and why there is no
        number."""
        lim = limits()[self.binding_limit]
        if self._binds_unmeasured:
            own = next((m for m in self.ceilings if m.limit == lim.name), None)
            why = own.basis if own is not None else lim.unmeasured or "no signal gives it"
            return (f"the {lim.label.split(' (')[0]} binds; its ceiling is not measured "
                    f"({why})")
        h = self.least_headroom
        return headroom_text(h) if h is not None else None

    def row(self, workers: int) -> PlanRow | None:
        return next((r for r in self.rows if r.workers == workers), None)

    def payload(self) -> dict[str, Any]:
        """The plan as JSON (SI units, None where a number does not exist)."""
        least = self.least_headroom
        return {
            "queue": self.queue, "workers_now": self.workers_now,
            "recommended_workers": self.recommended_workers, "rule": self.rule,
            "rule_text": self.rule_text, "binding_limit": self.binding_limit,
            "binding_text": self.binding_text, "ceiling_per_s": _clean(self.ceiling_per_s),
            "ceiling_basis": self.ceiling_basis, "demand_per_s": _clean(self.demand_per_s),
            "demand_now_per_s": _clean(self.demand_now_per_s),
            "demand_lower_bound": self.demand_lower_bound,
            "service_mean_s": _clean(self.service_mean_s), "headline": self.headline,
            "kind": self.kind, "severity": self.severity, "confidence": self.confidence,
            "caveats": list(self.caveats),
            "knobs": [{"setting": k.setting, "how": k.how, "manifest": k.manifest}
                      for k in self.knobs],
            "options": [{"rank": i + 1, "action": o.action, "tradeoff": o.tradeoff}
                        for i, o in enumerate(self.options)],
            "model": self.model, "band_source": self.band_source,
            "rows_basis": self.rows_basis,
            "rows_inputs": None if self.sizing is None else {
                "arrival_rate_per_s": self.sizing.arrival_rate_per_s,
                "service_mean_s": self.sizing.service_mean_s,
                "ceiling_per_s": self.sizing.ceiling_per_s,
                "ceiling_cv2": self.sizing.ceiling_cv2 if self.sizing.ceiling_per_s else None,
                "sigma": self.sizing.sigma, "kappa": self.sizing.kappa,
                "keys": self.sizing.keys},
            "usl": dict(self.usl) if self.usl is not None else None,
            "change": _change_payload(self.change),
            "settings": self.settings.payload(),
            "tags": list(self.tags),
            "headroom_ratio": _clean(least.ratio) if least is not None else None,
            "headroom_limit": self.headroom_limit,
            "headroom_text": self.headroom_text,
            "headroom": [{k: _clean(v) for k, v in h.payload().items()}
                         for h in self.headroom],
            "ceilings": [{"limit": m.limit, "ceiling_per_s": _clean(m.ceiling_per_s),
                          "lo_per_s": _clean(m.lo_per_s), "hi_per_s": _clean(m.hi_per_s),
                          "basis": m.basis, "scope": m.scope,
                          "binds_share": _clean(m.binds_share)} for m in self.ceilings],
        }

    def rows_payload(self) -> list[dict[str, Any]]:
        return [{k: _clean(getattr(r, k)) for k in PlanRow.__dataclass_fields__}
                for r in self.rows]


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _change_payload(c: ChangeCheck | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {k: _clean(getattr(c, k)) for k in ChangeCheck.__dataclass_fields__}


# --- building -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanRequest:
    """One queue for :func:`plan_many`."""

    queue: str
    assessment: Assessment
    history: QueueHistory | None = None
    workers_now: int | None = None
    demand_now_per_s: float | None = None
    framework: str | None = None
    """``controller-runtime`` or ``component-base`` (kube-controller-manager), for the knob."""
    namespace: str | None = None
    """The controller's namespace when its series carry one (for the FlowSchema's subject)."""
    process_name: str | None = None
    """The process's name (its ``job``, else ``pod``): one FlowSchema per process."""
    throughput_now_per_s: float | None = None
    """The queue's throughput in the snapshot: a ceiling the rows obey is never below what
    the queue does now."""


def plan_many(requests: Sequence[PlanRequest], settings: AnalysisSettings
              ) -> list[CapacityPlan]:
    """The plan of every queue; the band sweeps of all queues in one vectorized call."""
    band_inputs: list[WhatIfInputs] = []
    band_of: list[tuple[int, int] | None] = []
    limits = [_safe_limit(r, settings) for r in requests]
    for r, lim in zip(requests, limits, strict=True):
        lo_hi = _band_demands(r)
        sizing = lim.sizing.inputs if lim.sizing is not None else None
        if lo_hi is None or sizing is None or sizing.keys is not None:
            band_of.append(None)
            continue
        start = len(band_inputs)
        band_inputs += [replace(sizing, arrival_rate_per_s=lo_hi[0]),
                        replace(sizing, arrival_rate_per_s=lo_hi[1])]
        band_of.append((start, start + 1))
    tables: list[WhatIfTable | None]
    try:
        tables = list(whatif_tables(band_inputs)) if band_inputs else []
    except ModelInputError:  # rare (absurd inputs): queue by queue, the others keep theirs
        tables = []
        for inp in band_inputs:
            try:
                tables.append(whatif_tables([inp])[0])
            except ModelInputError:
                tables.append(None)
    out = []
    for r, lim, idx in zip(requests, limits, band_of, strict=True):
        lo, hi = (tables[idx[0]], tables[idx[1]]) if idx is not None else (None, None)
        band = (lo, hi) if lo is not None and hi is not None else None
        try:
            out.append(_plan(r, settings, band, lim))
        except (ModelInputError, ArithmeticError) as exc:
            # one queue's figures the models cannot compute with: its plan says so, the
            # other queues' plans are built as usual
            out.append(_unusable_plan(r, settings, exc))
    return out


def _unusable_plan(r: PlanRequest, settings: AnalysisSettings, exc: Exception
                   ) -> CapacityPlan:
    """The plan of a queue whose plan could not be computed: no count, and why."""
    reason = str(exc) or type(exc).__name__
    a = Assessment((unusable(reason, r.assessment.problems),), None, None, None,
                   {**r.assessment.notes, "plan": reason}, problems=r.assessment.problems)
    return _plan(replace(r, assessment=a, history=None), settings, None,
                 _Limit("none", None, None, None))


@dataclass(frozen=True)
class _Limit:
    """What the plan of one queue is built around: its binding limit, the contention verdict
    that named it, the USL fit that passed the gate, and the rows' inputs under the limit."""

    binding: str
    contention: Verdict | None
    fit: UslFit | None
    sizing: LimitSizing | None


def _limit(r: PlanRequest, settings: AnalysisSettings) -> _Limit:
    a = r.assessment
    binding = _binding(a.verdicts)
    contention = next((v for v in a.verdicts if v.kind == Kind.CONTENTION), None)
    # The one USL gate: the advisor's own R² threshold (a curve that explains less is not
    # shown or used anywhere).
    fit = a.usl if a.usl is not None and a.usl.r2 >= settings.thresholds.usl_r2_min else None
    sizing = None
    if a.sizing is not None:
        measured = _measured_ceiling(a, binding)
        sizing = limit_sizing(binding, a.sizing,
                              contention.evidence if contention is not None else None,
                              r.history, fit, r.throughput_now_per_s, measured,
                              measured.service_free_s if measured is not None else None)
    return _Limit(binding, contention, fit, sizing)


def _measured_ceiling(a: Assessment, binding: str) -> MeasuredCeiling | None:
    return next((m for m in a.ceilings if m.limit == binding), None)


def _safe_limit(r: PlanRequest, settings: AnalysisSettings) -> _Limit:
    """:func:`_limit`, or the plain sweep's (no ceiling, no curve) when the limit's model
    cannot compute with this queue's figures."""
    try:
        return _limit(r, settings)
    except (ModelInputError, ArithmeticError):
        sizing = r.assessment.sizing
        return _Limit(_binding(r.assessment.verdicts), None, None,
                      LimitSizing(sizing, None, None, "") if sizing is not None else None)


def _band_demands(r: PlanRequest) -> tuple[float, float] | None:
    h, sizing = r.history, r.assessment.sizing
    if h is None or sizing is None:
        return None
    lam = h.arrival_rate_per_s[np.isfinite(h.arrival_rate_per_s)]
    if lam.size < CHANGE_MIN_POINTS:
        return None
    design = sizing.arrival_rate_per_s
    return min(float(np.median(lam)), design), max(float(lam.max()), design)


def _plan(r: PlanRequest, settings: AnalysisSettings,
          band: tuple[WhatIfTable, WhatIfTable] | None, lim: _Limit) -> CapacityPlan:
    a, th = r.assessment, settings.thresholds
    verdicts = a.verdicts
    lead = verdicts[0]
    c = r.workers_now
    rec, rule = _recommendation(verdicts, c, a)
    binding, contention, fit = lim.binding, lim.contention, lim.fit
    ceiling, basis = _ceiling(binding, contention, a)
    rows_ceiling = lim.sizing.ceiling_per_s if lim.sizing is not None else None
    title = lead.headline
    if lim.sizing is not None and binding in CEILING_LIMITS and rows_ceiling is None:
        # the rows found the estimate wrong (under what the queue completes now) or had
        # none: the card states no ceiling, and says why
        ceiling, basis = None, lim.sizing.basis
    elif ceiling is not None and rows_ceiling is not None and rows_ceiling != ceiling \
            and lim.sizing is not None and lim.sizing.ceiling_basis is None \
            and rows_ceiling > ceiling:
        # the rows' ceiling is the queue's throughput now, a few per cent over the estimate
        # (a saturated limit measured at its throughput): the card states one ceiling
        basis = (f"{basis}; the queue completes {number_text(rows_ceiling, '/s')} now, "
                 "slightly over it")
        ceiling = rows_ceiling
    if lead.kind == Kind.CONTENTION and ceiling != lead.evidence.get(
            "ceiling_reconciles_per_s"):
        title = rule_headline(lead.kind, lead.evidence,
                              {**lead.recommendation, "ceiling_reconciles_per_s": ceiling})
    sizing = lim.sizing.inputs if lim.sizing is not None else None
    table = a.table if sizing is a.sizing else None
    if table is None and sizing is not None:
        try:
            table = whatif_tables([sizing])[0]
        except ModelInputError:
            table = None
    q_pct = f"{100 * settings.slo_quantile:.0f}"
    u_pct = f"{100 * th.util_target:.0f}"
    band_source = (
        "band: the same sweep from the median to the highest demand of the range's points, "
        "with the measured mean work time" if band is not None else
        "no band: " + ("no history was read" if r.history is None else
                       "the finite-key model is sized at one demand" if a.sizing is not None
                       and a.sizing.keys is not None else "too few points of demand"))
    h = r.history
    usl = None
    if fit is not None:
        usl = {"gamma_per_s": fit.gamma, "sigma": fit.sigma, "kappa": fit.kappa, "r2": fit.r2}
        if fit.peak_workers is not None:
            usl["peak_workers"] = fit.peak_workers
    return CapacityPlan(
        queue=r.queue, workers_now=c, recommended_workers=rec, rule=rule,
        rule_text=RULES[rule].format(q=q_pct, u=u_pct), binding_limit=binding,
        binding_text=limits()[binding].words, ceiling_per_s=ceiling, ceiling_basis=basis,
        demand_per_s=a.sizing.arrival_rate_per_s if a.sizing is not None else None,
        demand_now_per_s=r.demand_now_per_s,
        service_mean_s=a.sizing.service_mean_s if a.sizing is not None else None,
        rows_basis=lim.sizing.basis if lim.sizing is not None else "",
        headline=title, kind=lead.kind, severity=lead.severity,
        confidence=lead.confidence, caveats=_caveats(verdicts, a, table, h),
        knobs=_knobs(binding, r, rec, contention),
        options=_options(binding, rule, rec, verdicts),
        model=table.model if table is not None else None, band_source=band_source,
        verdicts=verdicts, settings=settings, sizing=sizing, usl=usl,
        tags=tuple(v.kind for v in verdicts), table=table, band=band, fit=fit, history=h,
        headroom=_plan_headroom(a, binding, ceiling, basis), ceilings=a.ceilings,
        demand_lower_bound=saturated_share(h, c) >= SATURATED_SHARE_MIN,
    )


def _rows(table: WhatIfTable, band: tuple[WhatIfTable, WhatIfTable] | None,
          fit: UslFit | None) -> tuple[PlanRow, ...]:
    """The rows from the sweep's columns (and the band sweeps', on the same worker range)."""
    stable = table.stable

    def col(values: FloatArray, ok: npt.NDArray[np.bool_] | None = None) -> list[float | None]:
        good = np.isfinite(values) & (stable if ok is None else ok)
        return [float(v) if g else None for v, g in zip(values.tolist(), good.tolist(),
                                                          strict=True)]

    none: list[float | None] = [None] * table.workers.size
    lo, hi = band if band is not None else (None, None)
    fitted = (col(usl_throughput(table.workers, fit.gamma, fit.sigma, fit.kappa),
                  np.ones(table.workers.size, dtype=bool)) if fit is not None else none)
    columns = zip(
        table.workers.tolist(), table.throughput_per_s.tolist(), col(table.wait_mean_s),
        col(table.wait_p95_s), col(table.p_wait_over_slo), table.utilization.tolist(),
        stable.tolist(),
        col(lo.wait_mean_s, lo.stable) if lo is not None else none,
        col(hi.wait_mean_s, hi.stable) if hi is not None else none,
        col(lo.wait_p95_s, lo.stable) if lo is not None else none,
        col(hi.wait_p95_s, hi.stable) if hi is not None else none,
        lo.utilization.tolist() if lo is not None else none,
        hi.utilization.tolist() if hi is not None else none,
        fitted, strict=True)
    return tuple(PlanRow(*values) for values in columns)


def _recommendation(verdicts: Sequence[Verdict], c: int | None, a: Assessment
                    ) -> tuple[int | None, str]:
    for v in verdicts:
        n = v.recommendation.get("workers")
        if isinstance(n, int) and not isinstance(n, bool) and n >= 1:
            if v.kind == Kind.OVER_PROVISIONED:
                return n, "fewer"
            slo_c = v.recommendation.get("workers_for_slo")
            return n, "slo" if slo_c == n else "utilization_target"
    if c is None or any(v.kind == Kind.INSUFFICIENT_DATA for v in verdicts):
        return None, "none"
    contention = next((v for v in verdicts if v.kind == Kind.CONTENTION), None)
    if contention is not None:
        useful = contention.recommendation.get("workers_max_useful")
        if isinstance(useful, int) and 1 <= useful < c:
            return useful, "contention_ceiling"
        return c, "contention_ceiling"
    return c, "keep"


RECOMMENDED = "the recommended one"
"""A limit's option that names the plan's count says this; the plan writes the count in
('raise the worker count to 6')."""


def _options(binding: str, rule: str, rec: int | None, verdicts: Sequence[Verdict]
             ) -> tuple[Option, ...]:
    """What to do, best first: the binding limit's options — with the rule's own first when
    it changes the count the limit's options do not (fewer workers would do: the count goes
    down, it is not kept) — then what a verdict that names no limit asks for (polling instead
    of reacting, passes that hold a worker far longer than the rest)."""
    out = [replace(o, action=o.action.replace(RECOMMENDED, str(rec))) if rec is not None
           else o for o in limits()[binding].options]
    if rule == "fewer" and rec is not None:
        out = [Option(f"lower the worker count to {rec}",
                      "less headroom, still within the SLO and the utilization target at the "
                      "design demand; each worker removed frees its memory and its share of the "
                      "process's API budget"),
               *(o for o in out if o.action != "keep the current worker count")]
    for v in verdicts:
        extra = _VERDICT_OPTIONS.get(v.kind)
        if extra is not None and (v.kind != Kind.REQUEUE_MISUSE or any(
                "RequeueAfter on" in str(p) for p in v.recommendation.get("patterns", ()))):
            out.append(extra)
    return tuple(out)


_VERDICT_OPTIONS: Mapping[Kind, Option] = MappingProxyType({
    Kind.REQUEUE_MISUSE: Option(
        "react to watch events instead of polling (RequeueAfter): watch what the controller "
        "polls, or lengthen the interval",
        "a code change; every poll is a pass (and its API calls) that may find nothing to do"),
    Kind.LONG_PASSES: Option(
        "split the long passes into bounded ones (requeue with progress between them)",
        "a code change; each pass must be resumable"),
})
"""The option a verdict that names no binding limit adds (requeue misuse only for RequeueAfter
polling: its other patterns are fixes of the requeue call, in its own steps)."""


def _binding(verdicts: Sequence[Verdict]) -> str:
    for v in verdicts:
        if v.kind == Kind.CONTENTION:
            return str(v.evidence.get("binding_limit") or "shared_resource")
    for v in verdicts:
        # a verdict that found its limit says so (a retry storm's cause); else its kind's
        named = v.evidence.get("binding_limit")
        limit = named if isinstance(named, str) and named in limits() \
            else _KIND_LIMIT.get(v.kind)
        if limit is not None and limit != "none":
            return limit
    return "none"


SATURATED_SHARE_MIN = 0.05
"""The share of the range's points that were saturated from which the design demand (the 95th
percentile of the add rate) is a lower bound: a twentieth of the points is where that
percentile lies."""


def saturated_share(h: QueueHistory | None, c: int | None) -> float:
    """The share of the range's points with every worker busy (≥ 90 % of c) and items
    waiting (a mean depth of at least one)."""
    if h is None or c is None or h.points == 0:
        return 0.0
    return float(np.count_nonzero(h.saturated(c))) / h.points


def _plan_headroom(a: Assessment, binding: str, ceiling: float | None, basis: str | None
                   ) -> tuple[Headroom, ...]:
    """The advisor's headroom, with the binding limit's ceiling the one the card states
    (a contention verdict's, measured at a worker count the queue ran, over the limit's own
    measure)."""
    mine = next((h for h in a.headroom if h.limit == binding), None)
    if ceiling is None or binding not in CEILING_LIMITS or a.sizing is None \
            or (mine is not None and mine.ceiling_per_s == ceiling):
        return a.headroom
    own = next((m for m in a.ceilings if m.limit == binding), None)
    stated = MeasuredCeiling(binding, ceiling, None, None, basis or "",
                             own.scope if own is not None else "queue")
    found = [m for m in a.ceilings if m.limit != binding] + [stated]
    lam = a.history.arrival_rate_per_s if a.history is not None else None
    return headrooms(found, a.sizing.arrival_rate_per_s, lam)


def _ceiling(binding: str, contention: Verdict | None, a: Assessment
             ) -> tuple[float | None, str | None]:
    """The binding limit's ceiling: the contention verdict's where it measured one, else the
    limit's own measure — a number, or why there is none (never the queue's throughput: a
    queue that keeps up completes its demand)."""
    if contention is not None:
        value = contention.evidence.get("ceiling_reconciles_per_s")
        if isinstance(value, float):
            return value, str(contention.evidence.get("ceiling_basis") or "")
    measured = _measured_ceiling(a, binding)
    if measured is not None:
        return measured.ceiling_per_s, measured.basis
    unmeasured = limits()[binding].unmeasured
    return None, (f"not measured: {unmeasured}" if unmeasured else None)


def _caveats(verdicts: Sequence[Verdict], a: Assessment, table: WhatIfTable | None,
             h: QueueHistory | None) -> tuple[str, ...]:
    out: list[str] = []
    for v in verdicts:
        cav = v.evidence.get("caveats")
        if isinstance(cav, list | tuple):
            out += [str(x) for x in cav if str(x) not in out]
    if table is not None:
        model = table.model
        if "M/M/c" in model or "Erlang" in model:
            out.append("the waits assume Poisson arrivals and exponential work times; "
                       "coalescing of a key and retries are not modelled")
        elif "//K" in model:
            out.append("the finite-key model assumes each key returns after an exponential "
                       "idle time")
    if h is None:
        out.append("no history was read: the demand is the snapshot's and the scaling of the "
                   "work time with load was not measured")
    for rule, note in sorted(a.notes.items()):
        text = f"{rule.replace('/', ': ')}: {note}"
        if note not in " ".join(out):
            out.append(text)
    return tuple(out)


def _knobs(binding: str, r: PlanRequest, rec: int | None, contention: Verdict | None
           ) -> tuple[Knob, ...]:
    n = str(rec) if rec is not None else "N"
    queue = r.queue
    kcm = r.framework == "component-base"
    ev = contention.evidence if contention is not None else {}

    def workers() -> Knob:
        flag = f"--concurrent-{queue.replace('_', '-')}-syncs"
        return (Knob(flag, "kube-controller-manager flag (or its config file) for this "
                           f"controller: {flag}={n}") if kcm
                else Knob("MaxConcurrentReconciles",
                          f"controller-runtime: controller.Options{{MaxConcurrentReconciles: "
                          f"{n}}} (builder .WithOptions) for this controller"))

    def client_qps() -> Knob:
        return (Knob("--kube-api-qps / --kube-api-burst",
                     "kube-controller-manager flags: the process's client token bucket") if kcm
                else Knob("rest.Config QPS / Burst",
                          "the manager's rest.Config (client-go defaults 5 / 10): the token "
                          "bucket shared by every controller of the process"))

    def flowschema() -> Knob:
        # One FlowSchema per ServiceAccount, so per process: named after the process (its
        # job, which every queue of the manager shares), sized by the process's requests in
        # flight.
        in_flight = ev.get("api_request_s_per_s")
        level = ev.get("apf_priority_level") or "workload-low"
        who = r.process_name or queue
        return Knob("FlowSchema", "a FlowSchema matching the ServiceAccount of the process "
                    f"{who!r}, with its own priority level (it now lands in {level}, shared "
                    "with every other ServiceAccount of that level)",
                    flowschema_manifest(who, namespace=r.namespace,
                                        api_request_s_per_s=in_flight
                                        if isinstance(in_flight, float) else None))

    def webhook() -> Knob:
        hook = ev.get("admission_webhook")
        return Knob("ValidatingWebhookConfiguration / MutatingWebhookConfiguration",
                    (f"the webhook {hook}: " if hook else "the webhook: ")
                    + "more replicas of its server, or rules / namespaceSelector / "
                    "objectSelector that leave out this controller's writes; timeoutSeconds "
                    "bounds each call")

    def cpu() -> Knob:
        cores = ev.get("cpu_cores_available")
        return Knob("resources.limits.cpu / GOMAXPROCS",
                    "the controller container's CPU limit in its Deployment"
                    + (f" (the process may use {cores:g} cores now)"
                       if isinstance(cores, float) else "")
                    + "; GOMAXPROCS follows it from Go 1.25, set it to the limit on older Go")

    build: Mapping[KnobKind, Callable[[], Knob]] = {
        "workers": workers, "client_qps": client_qps, "flowschema": flowschema,
        "webhook": webhook, "cpu": cpu}
    return tuple(build[k]() for k in limits()[binding].knobs)


def _measured(h: QueueHistory | None
              ) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    if h is None:
        return (), (), ()
    ok = np.isfinite(h.busy_workers) & np.isfinite(h.throughput_per_s)
    wk = np.where(np.isfinite(h.workers), h.workers, np.nan)[ok]
    return (tuple(h.busy_workers[ok].tolist()), tuple(h.throughput_per_s[ok].tolist()),
            tuple(wk.tolist()))
