"""One queue's evaluation context, and the helpers every rule shares.

:class:`Ctx` holds what the rules read — the signals, the history, the thresholds, the SLO,
λ, E[S] and c as usable numbers, the design demand — and what they leave for each other: the
notes of rules that could not be evaluated, the sizing sweeps, the USL fit (filled in advance
for a fleet by :mod:`models.verdicts.batch`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from models.bindings.measured import MeasuredCeiling
from models.contention import UslFit
from models.errors import ModelInputError
from models.measurements import QueueSnapshot
from models.verdicts.inputs import FloatArray, ProcessTotals, QueueHistory
from models.verdicts.screen import screen
from models.verdicts.thresholds import AdvisorThresholds
from models.verdicts.verdict import num
from models.whatif import WhatIfTable

__all__ = [
    "Ctx",
    "check_keys",
    "check_options",
    "core_inputs",
    "correlation",
    "demand_cv",
    "design_demand",
    "error_rate",
    "least_squares",
    "new_context",
    "paired",
    "results_total",
    "steady_points",
    "trend_slope",
    "worker_count",
]


@dataclass
class Ctx:
    s: QueueSnapshot
    h: QueueHistory | None
    th: AdvisorThresholds
    slo_s: float
    keys: int | None
    lam: float | None
    svc: float | None
    c: int | None
    lam_design: float | None
    notes: dict[str, str]
    """rule -> why it could not be evaluated."""
    sweeps: dict[float, WhatIfTable] = field(default_factory=dict)
    """Sizing sweeps by arrival rate: filled on first use, or in advance by :func:`advise_many`."""
    mmc: tuple[float, float] | None = None
    """(Wq, Lq) of M/M/c at (λ, μ, c) for the hot-key rule, when computed in advance."""
    usl: UslFit | ModelInputError | None = None
    """The USL fit of the contention rule, when computed in advance (:func:`prepare`)."""
    usl_points: tuple[FloatArray, FloatArray] | str | None = None
    """:func:`usl_points`, kept once computed."""
    process: ProcessTotals | None = None
    """Totals of the queue's process (the API budget and limiter are shared); None: the queue
    is taken to be alone in its process (:meth:`process_totals`)."""
    client_qps: float | None = None
    """The client's configured QPS limit, if known, for the API ceiling."""
    poll_period_s: float | None = None
    """The ``RequeueAfter`` period the controller asks for, if known (the polling check)."""
    problems: tuple[str, ...] = ()
    """The figures left out as impossible or implausible, one sentence each naming the queue
    (:mod:`models.verdicts.screen`)."""
    ceilings: tuple[MeasuredCeiling, ...] | None = None
    """Every limit's measured ceiling, once computed (:mod:`models.verdicts.ceilings`)."""
    rise: tuple[tuple[float, float, float, float, float, float] | str | None] | None = None
    """:func:`models.verdicts.contention_reasons.duration_rise`, once computed (a 1-tuple:
    its value may be None)."""
    shared_unmeasured: bool = False
    """The pass times rise with load but no ceiling could be measured, on a queue that keeps
    up (:mod:`models.verdicts.contention`): a limit may be nearer than any headroom given."""

    def process_totals(self) -> ProcessTotals:
        """:attr:`process`, or this queue alone as its process."""
        if self.process is not None:
            return self.process
        return ProcessTotals(num(self.s.throughput_per_s), num(self.s.busy_workers), self.lam)


def new_context(signals: QueueSnapshot, history: QueueHistory | None, th: AdvisorThresholds,
                slo_wait_s: float, keys: int | None, *, design: bool = True) -> Ctx:
    """The context of one queue, from its figures without the impossible and implausible
    ones (:func:`models.verdicts.screen.screen`: each is left out with a sentence, in
    :attr:`Ctx.problems` and the ``inputs`` note)."""
    check_keys(keys)
    screened = screen(signals, history)
    signals, history = screened.signals, screened.history
    lam = num(signals.arrival_rate_per_s)
    svc = num(signals.service_mean_s)
    c = worker_count(signals.workers)
    ctx = Ctx(signals, history, th, float(slo_wait_s), keys, lam, svc, c, None, {},
              problems=screened.problems)
    if screened.problems:
        prefix = f"{signals.queue}: "
        ctx.notes["inputs"] = "; ".join(p.removeprefix(prefix) for p in screened.problems)
    if svc is not None and svc <= 0:
        ctx.svc = svc = None
    if design:
        ctx.lam_design = design_demand(ctx)
    return ctx


def worker_count(workers: float | None) -> int | None:
    """The configured worker count c as a whole number — the one rounding every surface
    uses: the nearest integer, at least 1; None when not measured or below ½ (a gauge that
    reads 0.4 is a scrape artefact or a controller that is not running, not a worker)."""
    w = num(workers)
    return max(1, round(w)) if w is not None and w >= 0.5 else None


def check_keys(keys: int | None) -> None:
    if keys is not None and (isinstance(keys, bool) or not isinstance(keys, int) or keys < 1):
        raise ModelInputError(f"the key count must be a whole number of at least 1, got {keys!r}.")


def check_options(slo_wait_s: float, client_qps: float | None, keys: int | None = None
                  ) -> None:
    if not (isinstance(slo_wait_s, int | float) and math.isfinite(slo_wait_s) and slo_wait_s > 0):
        raise ModelInputError(
            f"the wait SLO must be a positive number of seconds, got {slo_wait_s!r}.")
    check_keys(keys)
    if client_qps is not None and not (math.isfinite(client_qps) and client_qps > 0):
        raise ModelInputError(f"client QPS must be a positive number, got {client_qps!r}.")


def core_inputs(ctx: Ctx) -> tuple[float, float, int]:
    if ctx.lam is None or ctx.svc is None or ctx.c is None:
        raise ModelInputError("arrival rate, service time and worker count are needed here.")
    return ctx.lam, ctx.svc, ctx.c


def paired(history: QueueHistory | None, *names: str) -> tuple[FloatArray, ...] | None:
    """The points where all named series are measured, or None without enough of them."""
    if history is None:
        return None
    cols = [np.asarray(getattr(history, n), dtype=np.float64) for n in names]
    ok = np.isfinite(cols[0])
    for c in cols[1:]:
        ok &= np.isfinite(c)
    if not ok.any():
        return None
    return tuple(c[ok] for c in (history.t_s, *cols))


def correlation(x: FloatArray, y: FloatArray) -> float | None:
    """Pearson's r of two series (None with fewer than 3 points or a constant series)."""
    fit = least_squares(x, y)
    return None if fit is None else fit[0]


def least_squares(x: FloatArray, y: FloatArray) -> tuple[float, float] | None:
    """(Pearson's r, the least-squares slope of y on x) from the centred sums:
    r = Sxy / √(Sxx·Syy) (clipped to [−1, 1], as :func:`numpy.corrcoef`), slope = Sxy / Sxx;
    None with fewer than 3 points, a constant series or a non-finite result. One pass of
    sums per pair, where ``corrcoef`` builds and normalises a covariance matrix: it runs
    for every queue of a fleet read (the contention rule's duration rise)."""
    if x.size < 3 or np.ptp(x) <= 0 or np.ptp(y) <= 0:
        return None
    sxx, syy, sxy = _centred_sums(x, y)
    norm = math.sqrt(sxx) * math.sqrt(syy)  # no overflow of the product
    if not (norm > 0 and math.isfinite(norm) and math.isfinite(sxy)):
        return None
    return max(-1.0, min(1.0, sxy / norm)), sxy / sxx


def trend_slope(t: FloatArray, y: FloatArray) -> float | None:
    """The least-squares slope of y on t, Σ(t − t̄)(y − ȳ) / Σ(t − t̄)² (None with fewer than
    3 points or one instant)."""
    if t.size < 3 or np.ptp(t) <= 0:
        return None
    stt, _, sty = _centred_sums(t, y)
    return sty / stt


def _centred_sums(x: FloatArray, y: FloatArray) -> tuple[float, float, float]:
    """(Σ(x − x̄)², Σ(y − ȳ)², Σ(x − x̄)(y − ȳ)): the sums every least-squares figure here
    is made of."""
    xc, yc = x - x.mean(), y - y.mean()
    return float(xc @ xc), float(yc @ yc), float(xc @ yc)


def steady_points(ctx: Ctx) -> npt.NDArray[np.bool_]:
    """The range points where failures and delayed re-adds stay under
    ``usl_failure_share_max`` (or are not measured): the points where throughput, busy workers
    and work duration describe the passes rather than the retry policy."""
    h = ctx.h
    assert h is not None
    lim = ctx.th.usl_failure_share_max
    with np.errstate(divide="ignore", invalid="ignore"):
        err = h.errors_per_s / h.throughput_per_s
        re_add = h.retries_per_s / h.arrival_rate_per_s
    out: npt.NDArray[np.bool_] = ~((err >= lim) | (re_add >= lim))
    return out


def design_demand(ctx: Ctx) -> float | None:
    """max(λ now, the design quantile of λ over the range)."""
    if ctx.lam is None:
        return None
    p = paired(ctx.h, "arrival_rate_per_s")
    if p is None or p[0].size < ctx.th.min_history_points:
        return ctx.lam
    return max(ctx.lam, float(np.quantile(p[1], ctx.th.design_quantile)))


def demand_cv(ctx: Ctx) -> float | None:
    p = paired(ctx.h, "arrival_rate_per_s")
    if p is None or p[0].size < ctx.th.min_history_points or p[1].mean() <= 0:
        return None
    return float(p[1].std() / p[1].mean())


def error_rate(s: QueueSnapshot) -> float | None:
    e = num(s.errors_per_s)
    if e is not None:
        return e
    results = s.reconcile_results_per_s or {}
    if "error" in results:
        return num(results["error"])
    return None


def results_total(s: QueueSnapshot) -> float | None:
    results = s.reconcile_results_per_s or {}
    vals = [num(v) for v in results.values()]
    good = [v for v in vals if v is not None]
    return sum(good) if good else None
