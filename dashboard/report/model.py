"""The report model: :func:`build_report` reads the source and returns a :class:`Report`
(fleet summary, one :class:`QueueRow` per queue, verdicts, assumptions, range and source)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from collectors.types import Source
from dashboard.numbers import snapshot_quantile_text
from dashboard.signals import Series, capacity_per_s, combine
from models.advisor import SEVERITIES, Verdict, threshold_table
from models.errors import ModelInputError
from models.formatting import number_text
from models.measurements import RangeData, Snapshot
from models.plan import CapacityPlan
from models.settings import AnalysisSettings
from models.whatif import WhatIfResult, whatif_sweep

if TYPE_CHECKING:

    pass


SCHEMA_VERSION = 1
"""Version of the JSON report layout; raised whenever a field changes meaning or goes away."""

FORMATS: tuple[str, ...] = ("html", "md", "json", "csv")
EXTENSIONS: Mapping[str, str] = {"html": "html", "md": "md", "json": "json", "csv": "csv"}
MIME_TYPES: Mapping[str, str] = {
    "html": "text/html", "md": "text/markdown", "json": "application/json", "csv": "text/csv",
}

CSV_COLUMNS: tuple[str, ...] = (
    "queue", "severity", "verdicts", "recommended_workers", "workers", "busy_workers",
    "utilization", "arrival_rate_per_s", "throughput_per_s", "capacity_per_s",
    "service_mean_s", "queue_wait_p95_s", "depth_current", "retries_per_s", "errors_per_s",
    "model", "summary",
)
"""Columns of the per-queue table (CSV, and the order of ``queues[].row`` in JSON)."""

SEVERITY_ORDER: tuple[str, ...] = SEVERITIES
"""The advisor's severities, most urgent first (report order and badge classes)."""

Progress = Callable[[str, int, int], None]
"""progress(step description, steps done, steps in total)."""


def _no_progress(_label: str, _done: int, _total: int) -> None:
    return None


# --------------------------------------------------------------------------------------------
# The report model
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Assumption:
    model: str
    used_for: str
    assumes: str
    source: str


ASSUMPTIONS: tuple[Assumption, ...] = (
    Assumption(
        "M/M/c (Erlang C)", "wait vs workers; add-workers and over-provisioned sizing",
        "Poisson arrivals of distinct keys at the measured rate λ (adds after coalescing), "
        "exponential work times with the measured mean, c identical workers, first-come "
        "first-served, steady state (λ < c·μ). Coalescing, retries and rate-limited re-adds "
        "are not modelled beyond their share of λ.",
        "Erlang C formula; e.g. Kleinrock, Queueing Systems vol. 1 (1975), §3.5",
    ),
    Assumption(
        "M/M/c//K (finite keys)", "the same sweep when the key count is known",
        "At most one queued entry per key (the workqueue's dirty set), K keys each "
        "re-arriving at rate λ/K while idle, exponential times.",
        "finite-source queue (Engset); client-go util/workqueue/queue.go for the dirty set",
    ),
    Assumption(
        "Fluid backlog", "backlog growth and time to SLO breach",
        "Constant arrival and service rates over the horizon; q(t) = max(0, q0 + (λ − c·μ)·t). "
        "No randomness, no key bookkeeping: it only describes a persistent imbalance.",
        "Newell, Applications of Queueing Theory (1982), ch. 2",
    ),
    Assumption(
        "Universal Scalability Law", "contention: whether throughput rises with busy workers",
        "Throughput X(N) = γN / (1 + σ(N − 1) + κN(N − 1)) fitted to range data of busy workers "
        "vs throughput; needs enough spread in concurrency over the range. The API budget "
        "(rest_client_*) is per process, shared by all its controllers.",
        "Gunther, Guerrilla Capacity Planning (2007), ch. 4–5",
    ),
    Assumption(
        "Measured signals", "every figure in this report",
        "Rates are Prometheus rate() over the window; busy workers = rate(work duration sum) "
        "(Little's law); workqueue_retries_total counts every delayed re-add, planned "
        "requeues included, so it is not a failure rate. A missing value is shown as missing, "
        "never as 0.",
        "client-go util/workqueue/metrics.go; controller-runtime pkg/metrics",
    ),
)


@dataclass(frozen=True)
class QueueRow:
    """One line of the per-queue table (None = not measured / does not exist)."""

    queue: str
    severity: str
    verdicts: tuple[str, ...]
    recommended_workers: int | None
    workers: float | None
    busy_workers: float | None
    utilization: float | None
    arrival_rate_per_s: float | None
    throughput_per_s: float | None
    capacity_per_s: float | None
    service_mean_s: float | None
    queue_wait_p95_s: float | None
    depth_current: float | None
    retries_per_s: float | None
    errors_per_s: float | None
    model: str | None
    summary: str
    queue_wait_p95_text: str = ""
    """The p95 as far as its bucket tells ('0.1–1 s'; :func:`dashboard.numbers.quantile_text`):
    what the Markdown and HTML tables show (the CSV keeps the number)."""

    def cells(self) -> dict[str, Any]:
        out: dict[str, Any] = {c: getattr(self, c) for c in CSV_COLUMNS}
        out["verdicts"] = ";".join(self.verdicts)
        return out


@dataclass(frozen=True)
class QueueReport:
    row: QueueRow
    labels: Mapping[str, str]
    verdicts: tuple[Verdict, ...]
    arrival: Series
    throughput: Series
    capacity: Series
    whatif: WhatIfResult | None
    whatif_note: str
    missing: Mapping[str, str] = field(default_factory=dict)
    plan: CapacityPlan | None = None


@dataclass(frozen=True)
class Report:
    generated_at: float
    at: float
    window_s: float
    range_s: float
    start: float
    end: float
    step_s: float
    source: str
    slo_wait_s: float
    slo_quantile: float
    queues: tuple[QueueReport, ...]
    assumptions: tuple[Assumption, ...] = ASSUMPTIONS
    thresholds: tuple[Mapping[str, Any], ...] = ()
    warnings: tuple[str, ...] = ()
    settings: AnalysisSettings = field(default_factory=AnalysisSettings)
    described: str = ""
    """The settings and source in one phrase ("last 2 h (a point every 60 s), …; demo")."""

    def severity_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(SEVERITY_ORDER, 0)
        for q in self.queues:
            counts[q.row.severity] = counts.get(q.row.severity, 0) + 1
        return counts

    def kind_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for q in self.queues:
            for kind in q.row.verdicts:
                counts[kind] = counts.get(kind, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


class _MemoSource:
    """Remembers the snapshot and range reads so the charts reuse what the advisor read."""

    def __init__(self, inner: Source) -> None:
        self.inner = inner
        self.snapshots: dict[tuple[float, float], Snapshot] = {}
        self.ranges: dict[tuple[float, float, float, tuple[str, ...] | None], RangeData] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        key = (at, window_s)
        if key not in self.snapshots:
            self.snapshots[key] = self.inner.snapshot(at, window_s)
        return self.snapshots[key]

    def range(self, start: float, end: float, step_s: float,
              queues: Sequence[str] | None = None,
              signals: Collection[str] | None = None) -> RangeData:
        key = (start, end, step_s, tuple(sorted(signals)) if signals is not None else None)
        if queues is not None or key not in self.ranges:
            data = self.inner.range(start, end, step_s, queues, signals)
            if queues is not None:
                return data
            self.ranges[key] = data
        return self.ranges[key]


def _finite(value: float | None) -> float | None:
    if value is None:
        return None
    v = float(value)
    return v if math.isfinite(v) else None


def _sweep(plan: CapacityPlan | None) -> tuple[WhatIfResult | None, str]:
    """The plan's own sweep (its inputs: the design demand, E[S], the SLO), as a result."""
    if plan is None or plan.sizing is None:
        return None, "No what-if sweep: the arrival rate, the mean work time or the worker " \
                     "count was not measured."
    try:
        result = whatif_sweep(plan.sizing)
    except ModelInputError as exc:
        return None, f"No what-if sweep: {exc}"
    return result, (f"{result.model} at the design demand {number_text(plan.demand_per_s, '/s')} "
                    f"and mean work time {number_text(plan.service_mean_s, 's')}; current "
                    "workers "
                    f"{plan.workers_now}.")


def _series_of(range_data: RangeData | None) -> dict[str, dict[str, Series]]:
    """{queue: {signal: (t, v)}} of the signals the charts need."""
    if range_data is None:
        return {}
    wanted = ("arrival_rate_per_s", "throughput_per_s", "workers", "service_mean_s")
    out: dict[str, dict[str, Series]] = {}
    for queue in range_data.queues:
        for signal in wanted:
            t, v = range_data.series(queue, signal)
            if len(t):
                out.setdefault(queue, {})[signal] = (t.tolist(), v.tolist())
    return out


def build_report(
    source: Source,
    at: float,
    settings: AnalysisSettings | None = None,
    *,
    progress: Progress | None = None,
    generated_at: float | None = None,
) -> Report:
    """Read the source once (snapshot + range for all queues, with ``settings``: the same
    reads and plans as every other surface) and build the report model.

    Raises ConfigError / CollectorError from the source."""
    from dashboard.advice import HISTORY_SIGNALS, advise_fleet

    settings = settings or AnalysisSettings()
    report_progress = progress or _no_progress
    memo = _MemoSource(source)
    report_progress("reading the source", 0, 1)
    advice = advise_fleet(memo, at, settings)
    range_s, step = settings.range_s, settings.step_s
    range_data = memo.ranges.get((at - range_s, at, step, tuple(sorted(HISTORY_SIGNALS))))
    series = _series_of(range_data)
    total = len(advice.queues)
    out: list[QueueReport] = []
    for i, qa in enumerate(advice.queues):
        report_progress(f"analysing {qa.queue}", i, total)
        q = qa.snapshot
        assert q is not None
        plan = qa.plan
        sweep, note = _sweep(plan)
        top = qa.verdicts[0] if qa.verdicts else None
        row = QueueRow(
            queue=q.queue,
            severity=top.severity if top else "ok",
            verdicts=tuple(v.kind for v in qa.verdicts),
            recommended_workers=plan.recommended_workers if plan is not None else None,
            workers=_finite(q.workers),
            busy_workers=_finite(q.busy_workers),
            utilization=_finite(q.utilization),
            arrival_rate_per_s=_finite(q.arrival_rate_per_s),
            throughput_per_s=_finite(q.throughput_per_s),
            capacity_per_s=capacity_per_s(q),
            service_mean_s=_finite(q.service_mean_s),
            queue_wait_p95_s=_finite(q.queue_wait_p95_s),
            depth_current=_finite(q.depth_current),
            retries_per_s=_finite(q.retries_per_s),
            errors_per_s=_finite(q.errors_per_s),
            model=sweep.model if sweep else None,
            summary=top.summary if top else "",
            queue_wait_p95_text=snapshot_quantile_text(q, "queue_wait_p95_s", compact=True),
        )
        s = series.get(q.queue, {})
        out.append(QueueReport(
            row=row, labels=dict(q.labels), verdicts=qa.verdicts,
            arrival=s.get("arrival_rate_per_s", ([], [])),
            throughput=s.get("throughput_per_s", ([], [])),
            capacity=combine(s.get("workers"), s.get("service_mean_s")),
            whatif=sweep, whatif_note=note, missing=dict(q.missing), plan=plan,
        ))
    report_progress("analysed", total, total)
    rank = {s: i for i, s in enumerate(SEVERITY_ORDER)}
    out.sort(key=lambda r: (rank.get(r.row.severity, len(rank)), r.row.queue))
    th = settings.thresholds
    return Report(
        generated_at=time.time() if generated_at is None else generated_at,
        at=advice.at, window_s=advice.window_s, range_s=range_s, start=advice.at - range_s,
        end=advice.at, step_s=step, source=source.name, slo_wait_s=settings.slo_wait_s,
        slo_quantile=th.slo_quantile, queues=tuple(out),
        thresholds=tuple(threshold_table(th)), warnings=tuple(advice.warnings),
        settings=settings, described=advice.describe(),
    )
