"""The advisor: one queue's signals → verdicts ("will more workers help, or only add contention?").

Pure: no I/O, no collectors import. The snapshot is the measurement vocabulary's
:class:`~models.measurements.QueueSnapshot`; range data come as an optional
:class:`QueueHistory` of numpy arrays for the contention fit and the trend rules.

Every rule names its signal, its threshold and the reason for the threshold; the thresholds
live in :class:`AdvisorThresholds` (field metadata ``signal`` and ``reason``, listed by
:func:`threshold_table`). Metric semantics follow ``workqueue-metrics.md`` §6:

* arrivals λ = rate(workqueue_adds_total): distinct adds after coalescing, *including* the
  controller's own re-adds (retries, requeue_after);
* ``retries_total`` counts every delayed re-add, planned requeues included — it is never read
  as a failure rate; failures come from ``reconcile_errors_total`` / ``result="error"``;
* busy workers B = rate(work_duration_sum) (Little's law), utilization ρ = B / c;
* the API client (``rest_client_*``) is per process: its QPS budget is shared by every
  controller of the process, so the ceiling is process-wide.

Queueing numbers (the wait at a worker count) come from the what-if sweep
(:func:`models.whatif.whatif_tables`, the column form of :func:`models.whatif.whatif_sweep`:
M/M/c, or the finite-key M/M/c//K model when the key count is known), the backlog trend from
:mod:`models.fluid`, the contention curve from :func:`models.contention.fit_usl`.
:func:`advise_many` gives the same verdicts for a whole fleet, with the queueing figures of
every queue computed in a few vectorized calls.

Verdict kinds are stable identifiers (:class:`Kind`, listed in the order of impact by
:data:`KINDS`); :func:`advise` returns them ordered by impact: severity first (critical,
warning, info, ok), then the order of :data:`KINDS`.

This module is the facade: the inputs, the thresholds, the verdict and every rule live in
:mod:`models.verdicts` (one module per rule or close family, put in order by
:mod:`models.verdicts.registry`: its kind, its order of impact, what it reads and what
suppresses it), the binding limits the contention verdict names in :mod:`models.bindings`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from models.bindings.headroom import Headroom
from models.bindings.measured import MeasuredCeiling
from models.bindings.registry import limits
from models.contention import UslFit
from models.errors import ModelInputError
from models.measurements import QueueSnapshot
from models.verdicts.batch import design_demands, prepare
from models.verdicts.ceilings import ceilings, queue_headroom
from models.verdicts.context import Ctx, check_keys, check_options, new_context, worker_count
from models.verdicts.fallback import unusable
from models.verdicts.inputs import (
    CORE_FIELDS,
    HISTORY_FIELDS,
    ProcessTotals,
    QueueHistory,
    histories_from_table,
)
from models.verdicts.registry import KINDS, RULES, headline, run
from models.verdicts.sizing import sweep_inputs
from models.verdicts.thresholds import AdvisorThresholds, threshold_table
from models.verdicts.verdict import SEVERITIES, Kind, Severity, Verdict
from models.whatif import WhatIfInputs, WhatIfTable

__all__ = [
    "BINDING_LIMITS",
    "CORE_FIELDS",
    "HISTORY_FIELDS",
    "KINDS",
    "RULES",
    "SEVERITIES",
    "AdviceRequest",
    "AdvisorThresholds",
    "Assessment",
    "Kind",
    "ProcessTotals",
    "QueueHistory",
    "Severity",
    "Verdict",
    "advise",
    "advise_many",
    "assess_many",
    "headline",
    "histories_from_table",
    "sizing_inputs",
    "threshold_table",
    "worker_count",
]

BINDING_LIMITS: Mapping[str, str] = MappingProxyType({
    lim.name: lim.words for lim in sorted(limits().values(), key=lambda lim: lim.precedence)
    if lim.contention and not lim.fallback} | {
    lim.name: lim.words for lim in limits().values() if lim.fallback})
"""What the contention verdict can name as the limit, in words, most specific first
(:mod:`models.bindings`)."""


def advise(
    signals: QueueSnapshot,
    history: QueueHistory | None = None,
    *,
    slo_wait_s: float = 1.0,
    thresholds: AdvisorThresholds | None = None,
    keys: int | None = None,
    process: ProcessTotals | None = None,
    client_qps: float | None = None,
    poll_period_s: float | None = None,
) -> tuple[Verdict, ...]:
    """Verdicts for one queue, ordered by impact (see the module docstring).

    ``slo_wait_s``: the queue-wait objective (the ``slo_quantile`` of waits must be within it).
    ``keys``: distinct keys, when known — the what-if then uses the finite-key model.
    ``process``: totals over all queues of this queue's process (the API budget and limiter
    are shared); without it the queue is taken to be alone in its process.
    ``client_qps``: the client's configured QPS limit, if known, for the API ceiling.
    ``poll_period_s``: the ``RequeueAfter`` period the controller asks for, if known.
    """
    th = thresholds or AdvisorThresholds()
    check_options(slo_wait_s, client_qps, keys)
    ctx = new_context(signals, history, th, slo_wait_s, keys)
    ctx.poll_period_s = poll_period_s
    return _evaluate(ctx, process, client_qps)


def sizing_inputs(
    signals: QueueSnapshot,
    history: QueueHistory | None = None,
    *,
    slo_wait_s: float = 1.0,
    thresholds: AdvisorThresholds | None = None,
    keys: int | None = None,
) -> WhatIfInputs | None:
    """The what-if inputs the advisor sizes this queue with — λ at the design demand (the
    larger of λ now and the ``design_quantile`` of λ over the history), the measured mean work
    time, the key count when known (finite-key model), the SLO and its quantile, c from 1 to
    max(2c, target + 2, ⌈λ·E[S]⌉ + 8, 16) — so that a what-if of a measured queue sweeps
    exactly what :func:`advise` sized; None when λ, the work time or c was not measured."""
    th = thresholds or AdvisorThresholds()
    check_options(slo_wait_s, None, keys)
    ctx = new_context(signals, history, th, slo_wait_s, keys)
    if ctx.lam is None or ctx.svc is None or ctx.c is None:
        return None
    return sweep_inputs(ctx, ctx.lam_design if ctx.lam_design is not None else ctx.lam)


@dataclass(frozen=True)
class AdviceRequest:
    """One queue for :func:`advise_many`: the arguments :func:`advise` takes per queue."""

    signals: QueueSnapshot
    history: QueueHistory | None = None
    keys: int | None = None
    process: ProcessTotals | None = None
    poll_period_s: float | None = None
    """The ``RequeueAfter`` period the queue's controller asks for, when configured."""


@dataclass(frozen=True)
class Assessment:
    """What the advisor found for one queue, beyond its verdicts: what the capacity plan
    (:mod:`models.plan`) is built from, so the plan does not redo the advisor's work."""

    verdicts: tuple[Verdict, ...]
    sizing: WhatIfInputs | None
    """The inputs the queue was sized with (:func:`sizing_inputs`); None without λ, E[S], c."""
    table: WhatIfTable | None
    """The sweep at ``sizing`` (None for a finite-key queue no rule sized, or without inputs)."""
    usl: UslFit | None
    """The USL fit of (busy workers, throughput) over the range, when one was made."""
    notes: Mapping[str, str]
    """rule -> why it could not be evaluated (caveats of the plan)."""
    problems: tuple[str, ...] = ()
    """The queue's figures left out as impossible or implausible, one sentence each naming
    the queue (:mod:`models.verdicts.screen`); the advice's warnings carry them."""
    signals: QueueSnapshot | None = None
    """The figures the queue was evaluated with (the snapshot without those left out); None
    when not even they could be read."""
    history: QueueHistory | None = None
    """The history the queue was evaluated with (without the points left out)."""
    ceilings: tuple[MeasuredCeiling, ...] = ()
    """Every limit's ceiling as measured from its own signals, or why it could not be
    (:mod:`models.verdicts.ceilings`)."""
    headroom: tuple[Headroom, ...] = ()
    """The headroom to each measured ceiling at the design demand, smallest first."""


def advise_many(
    requests: Sequence[AdviceRequest],
    *,
    slo_wait_s: float = 1.0,
    thresholds: AdvisorThresholds | None = None,
    client_qps: float | None = None,
) -> list[tuple[Verdict, ...]]:
    """:func:`advise` for many queues: the same verdicts, in the order of ``requests``.

    The queueing figures the rules may need — the sizing sweep at the design demand (and at
    the current demand for an overloaded queue) and the M/M/c wait for the hot-key rule — are
    computed for all queues up front, in a few vectorized calls
    (:func:`models.whatif.whatif_tables`, :func:`models.queueing.erlang_c` over arrays), instead
    of one small sweep per queue and rule. Each element goes through the same arithmetic as in
    :func:`advise`, so the verdicts and their numbers are identical; an input the batch cannot
    take is left to the per-queue path, which raises the same error :func:`advise` would.
    """
    return [a.verdicts for a in assess_many(requests, slo_wait_s=slo_wait_s,
                                            thresholds=thresholds, client_qps=client_qps)]


def assess_many(
    requests: Sequence[AdviceRequest],
    *,
    slo_wait_s: float = 1.0,
    thresholds: AdvisorThresholds | None = None,
    client_qps: float | None = None,
) -> list[Assessment]:
    """:func:`advise_many` with, per queue, the sizing inputs, the sweep, the USL fit and the
    notes the verdicts were made with (:class:`Assessment`)."""
    th = thresholds or AdvisorThresholds()
    check_options(slo_wait_s, client_qps)
    for r in requests:  # the caller's options: a wrong one is the caller's error, raised
        check_keys(r.keys)
    ctxs: list[Ctx | ArithmeticError | ModelInputError] = []
    for r in requests:
        try:
            ctx = new_context(r.signals, r.history, th, slo_wait_s, r.keys, design=False)
        except (ModelInputError, ArithmeticError) as exc:  # this queue's alone (below)
            ctxs.append(exc)
            continue
        ctx.poll_period_s = r.poll_period_s
        ctxs.append(ctx)
    ready = [c for c in ctxs if isinstance(c, Ctx)]
    design_demands(ready)
    prepare(ready)
    out = []
    for item, r in zip(ctxs, requests, strict=True):
        try:
            if not isinstance(item, Ctx):
                raise item
            out.append(_assessment(item, r, client_qps))
        except (ModelInputError, ArithmeticError) as exc:
            # one queue's figures the models cannot compute with (1e308 arrivals, a
            # subnormal work time): that queue is not evaluated, the rest of the fleet is
            ok = item if isinstance(item, Ctx) else None
            problems = ok.problems if ok is not None else ()
            out.append(Assessment((unusable(str(exc) or type(exc).__name__, problems),),
                                  None, None, None, {"inputs": str(exc)}, problems=problems,
                                  signals=ok.s if ok is not None else None,
                                  history=ok.h if ok is not None else None))
    return out


def _assessment(ctx: Ctx, r: AdviceRequest, client_qps: float | None) -> Assessment:
    verdicts = _evaluate(ctx, r.process, client_qps)
    sizing: WhatIfInputs | None = None
    table: WhatIfTable | None = None
    if ctx.lam is not None and ctx.svc is not None and ctx.c is not None:
        lam = ctx.lam_design if ctx.lam_design is not None else ctx.lam
        sizing = sweep_inputs(ctx, lam)
        table = ctx.sweeps.get(lam)
    found = ceilings(ctx) if ctx.c is not None or ctx.h is not None else ()
    return Assessment(
        verdicts, sizing, table, ctx.usl if isinstance(ctx.usl, UslFit) else None,
        dict(ctx.notes), problems=ctx.problems, signals=ctx.s, history=ctx.h,
        ceilings=found, headroom=queue_headroom(ctx) if found else ())


def _evaluate(ctx: Ctx, process: ProcessTotals | None, client_qps: float | None
              ) -> tuple[Verdict, ...]:
    ctx.process, ctx.client_qps = process, client_qps
    return run(ctx)
