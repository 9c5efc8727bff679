"""Capacity reports: one report model, rendered as HTML, Markdown, JSON or CSV.

:func:`build_report` reads the source through :func:`dashboard.advice.advise_fleet` (one
``snapshot`` and one ``range`` for every queue; the range read is memoised so the charts reuse
it) and runs the what-if sweep per queue for the "wait vs workers" chart. It returns a
:class:`Report`: fleet summary, one :class:`QueueRow` per queue, the advisor's verdicts with
their evidence, the assumptions of each model, the time range and the data source (the
source's ``name``, which never carries credentials).

Renderers (pure, no I/O):

* :func:`render_html` — one self-contained page: plotly.js inlined exactly once in a single
  ``<script>``; the charts' data embedded once, as one JSON document in a
  ``<script type="application/json">`` (every ``<``, ``>`` and ``&`` in it written as a
  ``\\u00XX`` escape, so no label value can end the script or open a comment), and a small
  inline script that draws a queue's charts when they scroll into view (IntersectionObserver;
  all of them before printing). No external URL, so it opens offline. Every label value goes
  through :func:`html.escape` in the page and :func:`dashboard.figures.plotly_text` in the
  charts.
* :func:`render_markdown` — for pull requests and tickets; label values are escaped for
  Markdown and inline HTML (:func:`md_text`), pipes included.
* :func:`render_json` — ``{"schema_version": 1, ...}``; a number that does not exist is
  ``null`` (never NaN).
* :func:`render_csv` — the per-queue table, one row per queue. A text cell that a spreadsheet
  would run as a formula (leading ``= + - @``, tab or CR) is prefixed with ``'``
  (:func:`dashboard.cliutil.csv_text`, the guard every CSV output shares).

The dashboard's "Export report" control (:func:`export_control`,
:func:`register_export_callbacks`) renders the same report from the app's source, as a Dash
background callback: a progress bar names the step (each queue analysed, then each queue
rendered), a Cancel button stops the job, and the export button is disabled while it runs.
Each export is a forked process, so :class:`ExportJobs` bounds them: at most
:data:`EXPORT_MAX_JOBS` at a time per app (a further click is told "an export is already
running"), each stopped after :data:`EXPORT_TIMEOUT_S`, one nobody polls cancelled after
:data:`EXPORT_ABANDON_S`, every finished one waited for (no zombies).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import html
import json
import math
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from collectors.types import RangeData, Snapshot, Source
from dashboard.advice import verdict_payload
from dashboard.cliutil import format_csv, jsonable
from dashboard.numbers import snapshot_quantile_text
from dashboard.plan_words import change_text, evidence_label, evidence_value, plan_facts
from dashboard.rules import prometheus_duration
from dashboard.signals import Series, capacity_per_s, combine
from models.advisor import SEVERITIES, Verdict, threshold_table
from models.errors import ModelInputError
from models.formatting import count_text, number_text, percent_text, sig
from models.plan import CapacityPlan
from models.settings import AnalysisSettings
from models.whatif import WhatIfResult, whatif_sweep

if TYPE_CHECKING:
    import dash

    from dashboard.context import AppContext

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


# --------------------------------------------------------------------------------------------
# Shared text helpers
# --------------------------------------------------------------------------------------------


def _num(value: Any) -> str:
    """A table cell by the one formatter (:mod:`models.formatting`): a count as it is, a
    measurement to three significant digits; '—' when it does not exist."""
    if value is None or isinstance(value, bool):
        return "—" if value is None else ("yes" if value else "no")
    if isinstance(value, int):
        return count_text(value)
    if isinstance(value, float):
        return sig(value) if math.isfinite(value) else "—"
    return str(value)


def _pct(share: float | None) -> str:
    return "—" if share is None else percent_text(share)


def _utc(unix_s: float) -> str:
    return dt.datetime.fromtimestamp(unix_s, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _headline(report: Report) -> str:
    counts = report.severity_counts()
    parts = [f"{n} {s}" for s, n in counts.items() if n]
    return f"{len(report.queues)} queues: " + (", ".join(parts) if parts else "none")


def _range_text(report: Report) -> str:
    span, step, window = (prometheus_duration(s) for s in (report.range_s, report.step_s,
                                                           report.window_s))
    return (f"{_utc(report.start)} → {_utc(report.end)} ({span}, one point every {step}); "
            f"snapshot rates over {window}")


def _slo_text(report: Report) -> str:
    return f"p{report.slo_quantile * 100:g} queue wait ≤ {number_text(report.slo_wait_s, 's')}"


# --------------------------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------------------------


def report_payload(report: Report) -> dict[str, Any]:
    """The JSON document (plain values; NaN/Inf already None)."""
    payload = {
        "schema_version": SCHEMA_VERSION,
        "generated_at": report.generated_at,
        "source": report.source,
        "time_range": {"start": report.start, "end": report.end, "at": report.at,
                       "range_s": report.range_s, "step_s": report.step_s,
                       "window_s": report.window_s},
        "slo": {"wait_s": report.slo_wait_s, "quantile": report.slo_quantile},
        "settings": report.settings.payload(),
        "described": report.described,
        "summary": {"queues": len(report.queues), "by_severity": report.severity_counts(),
                    "by_verdict": report.kind_counts()},
        "queues": [
            {
                "queue": q.row.queue,
                "labels": dict(q.labels),
                "row": q.row.cells() | {"verdicts": list(q.row.verdicts)},
                "plan": q.plan.payload() if q.plan is not None else None,
                "verdicts": [verdict_payload(v) for v in q.verdicts],
                "whatif": None if q.plan is None or not q.plan.rows else {
                    "model": q.plan.model,
                    "recommended_workers": q.plan.recommended_workers,
                    "band_source": q.plan.band_source,
                    "rows": q.plan.rows_payload(),
                },
                "missing": dict(q.missing),
            }
            for q in report.queues
        ],
        "assumptions": [
            {"model": a.model, "used_for": a.used_for, "assumes": a.assumes, "source": a.source}
            for a in report.assumptions
        ],
        "thresholds": [dict(t) for t in report.thresholds],
        "warnings": list(report.warnings),
    }
    result: dict[str, Any] = jsonable(payload)
    return result


def render_json(report: Report) -> str:
    return json.dumps(report_payload(report), indent=2, allow_nan=False,
                      ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------------------------

def render_csv(report: Report) -> str:
    """The per-queue table; :func:`dashboard.cliutil.format_csv` guards every text cell
    against formulas (:func:`dashboard.cliutil.csv_text`, the guard ``snapshot`` and every
    other CSV use too)."""
    return format_csv([q.row.cells() for q in report.queues], CSV_COLUMNS)


# --------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~#!])")


def md_text(value: object) -> str:
    """A label value as inert Markdown text: Markdown punctuation backslash-escaped, inline
    HTML (``& < >``) as entities, pipes escaped (safe in table cells), newlines flattened."""
    text = " ".join(str(value).split())
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _fence(text: str) -> str:
    """A Markdown code fence longer than any run of backticks in ``text`` (CommonMark closes
    a fence only with at least as many backticks), so the text cannot end it early."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _md_plan(plan: CapacityPlan | None) -> list[str]:
    """The queue's capacity plan in the words of the dashboard's card (:mod:`plan_words`)."""
    if plan is None:
        return []
    payload = plan.payload()
    lines = [f"**{md_text(plan.headline)}** "
             + " ".join(f"`{md_text(t)}`" for t in plan.tags), ""]
    lines += [_md_row(["Plan", "Value", "Why"]), _md_row(["---", "---", "---"])]
    lines += [_md_row([md_text(label), md_text(value), md_text(note)])
              for label, value, note in plan_facts(payload)]
    lines += ["", "What to do, best first:", ""]
    lines += [f"{i}. {md_text(o.action)} — trade-off: {md_text(o.tradeoff)}"
              for i, o in enumerate(plan.options, 1)]
    if plan.knobs:
        lines += ["", "Where to set it: " + "; ".join(
            f"`{md_text(k.setting)}` ({md_text(k.how)})" for k in plan.knobs)]
        for k in plan.knobs:
            if k.manifest:
                fence = _fence(k.manifest)
                lines += ["", f"{fence}yaml", *k.manifest.splitlines(), fence]
    change = change_text(payload["change"])
    if change:
        lines += ["", f"Check the change: {md_text(change)}"]
    if plan.caveats:
        lines += ["", "Caveats:", ""] + [f"- {md_text(c)}" for c in plan.caveats]
    return [*lines, ""]


def render_markdown(report: Report) -> str:
    lines = [
        "# queuelens capacity report",
        "",
        f"- **Source:** {md_text(report.source)}",
        f"- **Settings:** {md_text(report.described)}",
        f"- **Time range:** {md_text(_range_text(report))}",
        f"- **SLO:** {md_text(_slo_text(report))}",
        f"- **Generated:** {_utc(report.generated_at)}",
        f"- **Fleet:** {md_text(_headline(report))}",
        "",
        "## Fleet summary",
        "",
        _md_row(["Queue", "Severity", "Verdicts", "Workers", "Recommended", "Utilization",
                 "Arrivals /s", "Capacity /s", "p95 wait"]),
        _md_row(["---"] * 3 + ["---:"] * 6),
    ]
    for q in report.queues:
        r = q.row
        lines.append(_md_row([
            md_text(r.queue), md_text(r.severity), md_text(", ".join(r.verdicts)),
            _num(r.workers), _num(r.recommended_workers), _pct(r.utilization),
            _num(r.arrival_rate_per_s), _num(r.capacity_per_s), md_text(r.queue_wait_p95_text),
        ]))
    for q in report.queues:
        lines += ["", f"## {md_text(q.row.queue)}", ""]
        if q.labels:
            lines.append("Labels: " + ", ".join(f"{md_text(k)}={md_text(v)}"
                                                  for k, v in sorted(q.labels.items())))
            lines.append("")
        lines += _md_plan(q.plan)
        for v in q.verdicts:
            lines.append(f"### {md_text(v.headline)} — {md_text(v.severity)} · "
                         f"`{md_text(v.kind)}` (confidence {100 * v.confidence:.0f} %)")
            lines += ["", md_text(v.summary), ""]
            if v.recommendation:
                lines.append("Recommendation: " + md_text(evidence_value(dict(v.recommendation))))
                lines.append("")
            if v.evidence:
                lines += [_md_row(["Evidence", "Value"]), _md_row(["---", "---"])]
                lines += [_md_row([md_text(evidence_label(k)), md_text(evidence_value(val, k))])
                          for k, val in v.evidence.items()]
                lines.append("")
        lines.append(f"What-if: {md_text(q.whatif_note)}")
    lines += ["", "## Model assumptions", ""]
    for a in report.assumptions:
        lines.append(f"- **{md_text(a.model)}** ({md_text(a.used_for)}): {md_text(a.assumes)} "
                     f"Source: {md_text(a.source)}.")
    if report.warnings:
        lines += ["", "## Warnings", ""]
        lines += [f"- {md_text(w)}" for w in report.warnings]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1f2933;
background:#f4f6f8}
header{background:#1f2933;color:#fff;padding:1rem 2rem}
header h1{margin:0 0 .3rem;font-size:1.4rem}
header dl{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:0;
font-size:.9rem}
header dt{color:#9aa3ad}header dd{margin:0}
main{padding:1rem 2rem;max-width:1300px}
section.card{background:#fff;border-radius:8px;padding:1rem 1.2rem;margin:1rem 0;
box-shadow:0 1px 2px rgba(0,0,0,.08)}
table{border-collapse:collapse;font-size:.88rem}
th,td{padding:.3rem .6rem;border-bottom:1px solid #e4e7eb;
text-align:left;vertical-align:top}td.n{text-align:right;font-variant-numeric:tabular-nums}
.sev{display:inline-block;padding:.05rem .5rem;border-radius:1rem;font-size:.8rem;font-weight:600}
.sev-critical{background:#fde2d6;color:#8a2c00}.sev-warning{background:#fff1c7;color:#6b4e00}
.sev-info{background:#dbeefb;color:#0b4a75}.sev-ok{background:#d6f2e7;color:#005c3f}
.verdict{border-left:4px solid #9aa3ad;padding:.2rem .8rem;margin:.8rem 0}
.verdict.critical{border-color:#D55E00}.verdict.warning{border-color:#E69F00}
.verdict.info{border-color:#0072B2}.verdict.ok{border-color:#009E73}
.charts{display:grid;grid-template-columns:1fr 1fr;gap:.8rem}
section.card[id^="queue-"]{content-visibility:auto;contain-intrinsic-size:auto 1100px}
.note{color:#52606d;font-size:.85rem}code{font-size:.85rem}
details summary{cursor:pointer;color:#0072B2}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _sev(severity: str) -> str:
    cls = severity if severity in SEVERITY_ORDER else "info"
    return f'<span class="sev sev-{cls}">{_e(severity)}</span>'


def _kv_table(items: Mapping[str, Any], head: tuple[str, str]) -> str:
    rows = "".join(f"<tr><th scope=\"row\">{_e(evidence_label(str(k)))}</th>"
                   f"<td>{_e(evidence_value(v, str(k)))}</td></tr>" for k, v in items.items())
    return (f"<table><thead><tr><th>{_e(head[0])}</th><th>{_e(head[1])}</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def queue_figures(q: QueueReport, report: Report) -> list[dict[str, Any]]:
    """The queue's two charts: demand vs capacity over the range, wait vs workers."""
    from dashboard import figures as fg

    charts = []
    if any(len(s[0]) for s in (q.arrival, q.throughput, q.capacity)):
        charts.append(fg.rates_figure(q.arrival, q.throughput, q.capacity, report.step_s))
    else:
        charts.append(fg.no_data_figure("Is work arriving faster than it can be done?",
                                        "no range data for this queue"))
    if q.whatif is not None:
        rows = q.whatif.rows
        recommended = q.row.recommended_workers
        charts.append(fg.whatif_wait_figure(
            [r.workers for r in rows], [r.wait_mean_s for r in rows],
            [r.wait_p95_s for r in rows], [r.utilization for r in rows],
            slo_s=report.slo_wait_s, recommended=recommended))
    else:
        charts.append(fg.no_data_figure("How long will items wait with c workers?",
                                        q.whatif_note))
    return charts


CHART_DATA_ID = "ql-report-charts"
"""``id`` of the ``<script type="application/json">`` that holds every chart of the report."""

CHART_CLASS = "ql-chart"
"""``class`` of a chart's placeholder ``<div>`` (its ``id`` is the chart's key in the data)."""

CHART_HEIGHT = "380px"

SHARED_X = "ql_shared_x"
"""Key of a trace in the report's chart data whose ``x`` is ``arrays[value]`` (the charts of
one report share their time axis: it is stored once, not once per trace)."""

_PLOT_CONFIG: Mapping[str, Any] = {"displaylogo": False, "responsive": True}

# Draws a chart when its placeholder comes near the viewport (or, without
# IntersectionObserver, at once); every remaining chart before printing. Each chart's data is
# dropped once drawn.
_DRAW_JS = """(function () {
  "use strict";
  var spec = JSON.parse(document.getElementById("__DATA_ID__").textContent);
  var charts = Array.prototype.slice.call(document.querySelectorAll(".__CHART_CLASS__"));
  function draw(el) {
    var fig = spec.charts[el.id];
    if (!fig) { return; }
    delete spec.charts[el.id];
    fig.data.forEach(function (trace) {
      if ("__SHARED_X__" in trace) {
        trace.x = spec.arrays[trace["__SHARED_X__"]].slice();
        delete trace["__SHARED_X__"];
      }
    });
    var layout = Object.assign({template: spec.template}, fig.layout);
    Plotly.newPlot(el, fig.data, layout, spec.config);
  }
  function drawSafely(el) {
    try { draw(el); } catch (err) { console.error("queuelens: chart " + el.id, err); }
  }
  if ("IntersectionObserver" in window) {
    var seen = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (entry.isIntersecting) { seen.unobserve(entry.target); drawSafely(entry.target); }
      });
    }, {rootMargin: "400px 0px"});
    charts.forEach(function (el) { seen.observe(el); });
  } else {
    charts.forEach(drawSafely);
  }
  window.addEventListener("beforeprint", function () { charts.forEach(drawSafely); });
})();"""
for _token, _value in (("__DATA_ID__", CHART_DATA_ID), ("__CHART_CLASS__", CHART_CLASS),
                       ("__SHARED_X__", SHARED_X)):
    _DRAW_JS = _DRAW_JS.replace(_token, _value)

_SCRIPT_UNSAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                                "\u2028": "\\u2028", "\u2029": "\\u2029"})


def script_json(value: Any) -> str:
    """``value`` as JSON that is inert inside ``<script type="application/json">``: ``<``,
    ``>`` and ``&`` (and U+2028/U+2029) only ever occur inside JSON strings, where they are
    written as ``\\u00XX`` escapes — so ``</script>`` or ``<!--`` in a label value cannot end
    the element or change how the HTML parser reads it; ``JSON.parse`` gives the text back.
    NaN and infinities become ``null``."""
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"),
                          default=_json_scalar)
    except ValueError:  # a NaN or infinity somewhere: the slow path replaces them
        text = json.dumps(jsonable(value), allow_nan=False, ensure_ascii=False,
                          separators=(",", ":"), default=_json_scalar)
    return text.translate(_SCRIPT_UNSAFE)


def _json_scalar(value: Any) -> Any:
    """numpy scalars and arrays (anything with ``.tolist()``) as Python numbers and lists."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


_SHARE_MIN = 8  # shorter x arrays are cheaper inline than as a reference


class ChartData:
    """The charts of a report as one JSON document: ``{"template", "config", "arrays",
    "charts": {placeholder id: {"data", "layout"}}}`` — each figure without its
    ``layout.template`` (carried once) and every long ``x`` array stored once in ``arrays``
    (a trace refers to it by :data:`SHARED_X`)."""

    def __init__(self) -> None:
        self.charts: dict[str, dict[str, Any]] = {}
        self.arrays: list[list[Any]] = []
        self._index: dict[tuple[Any, ...], int] = {}

    def add(self, chart_id: str, figure: Mapping[str, Any]) -> None:
        layout = {k: v for k, v in figure["layout"].items() if k != "template"}
        self.charts[chart_id] = {"data": [self._shared(t) for t in figure["data"]],
                                 "layout": layout}

    def _shared(self, trace: Mapping[str, Any]) -> Mapping[str, Any]:
        xs = trace.get("x")
        if not isinstance(xs, list) or len(xs) < _SHARE_MIN:
            return trace
        try:
            key = tuple(xs)
            index = self._index.setdefault(key, len(self.arrays))
        except TypeError:  # unhashable values: keep them inline
            return trace
        if index == len(self.arrays):
            self.arrays.append(xs)
        return {**{k: v for k, v in trace.items() if k != "x"}, SHARED_X: index}

    def document(self) -> dict[str, Any]:
        from dashboard.figures import plotly_white_template

        return {"template": plotly_white_template(), "config": dict(_PLOT_CONFIG),
                "arrays": self.arrays, "charts": self.charts}


def _plotlyjs() -> str:
    from plotly.offline import get_plotlyjs

    js: str = get_plotlyjs()
    return js.replace("</script", "<\\/script")


def _html_plan(plan: CapacityPlan | None) -> str:
    """The queue's capacity plan (escaped text only), as the dashboard's card words it."""
    if plan is None:
        return ""
    payload = plan.payload()
    tags = " ".join(f"<code>{_e(t)}</code>" for t in plan.tags)
    facts = "".join(f'<tr><th scope="row">{_e(label)}</th><td><strong>{_e(value)}</strong>'
                    f'<span class="note"> {_e(note)}</span></td></tr>'
                    for label, value, note in plan_facts(payload))
    options = "".join(f"<li>{_e(o.action)}<br><span class=\"note\">Trade-off: "
                      f"{_e(o.tradeoff)}</span></li>" for o in plan.options)
    knobs = "".join(f"<li><code>{_e(k.setting)}</code> — {_e(k.how)}"
                    + (f"<details><summary>the manifest (YAML)</summary><pre>{_e(k.manifest)}"
                       "</pre></details>" if k.manifest else "") + "</li>"
                    for k in plan.knobs)
    change = change_text(payload["change"])
    caveats = "".join(f"<li>{_e(c)}</li>" for c in plan.caveats)
    return (f'<div class="plan"><h3>{_e(plan.headline)}</h3><p>{tags}</p>'
            f"<table><tbody>{facts}</tbody></table>"
            f"<p>What to do, best first:</p><ol>{options}</ol>"
            + (f"<p>Where to set it:</p><ul>{knobs}</ul>" if knobs else "")
            + (f"<p><strong>Check the change:</strong> {_e(change)}</p>" if change else "")
            + (f"<details><summary>caveats</summary><ul>{caveats}</ul></details>"
               if caveats else "")
            + "</div>")


def render_html(report: Report, progress: Progress | None = None) -> str:
    """One self-contained HTML page (plotly.js inlined once; no external resources)."""
    step = progress or _no_progress
    total = len(report.queues)
    counts = report.severity_counts()
    summary_rows = []
    for i, q in enumerate(report.queues):
        r = q.row
        summary_rows.append(
            "<tr>"
            f'<td><a href="#queue-{i}">{_e(r.queue)}</a></td><td>{_sev(r.severity)}</td>'
            f"<td>{_e(', '.join(r.verdicts))}</td>"
            + "".join(f'<td class="n">{_e(_num(v))}</td>' for v in (
                r.workers, r.recommended_workers, r.busy_workers))
            + f'<td class="n">{_e(_pct(r.utilization))}</td>'
            + "".join(f'<td class="n">{_e(_num(v))}</td>' for v in (
                r.arrival_rate_per_s, r.capacity_per_s))
            + f'<td class="n">{_e(r.queue_wait_p95_text)}</td>'
            + f'<td class="n">{_e(_num(r.depth_current))}</td>'
            + "</tr>")
    sections = []
    charts = ChartData()
    for i, q in enumerate(report.queues):
        step(f"rendering {q.row.queue}", i, total)
        verdicts = [_html_plan(q.plan)]
        for v in q.verdicts:
            cls = v.severity if v.severity in SEVERITY_ORDER else "info"
            parts = [f'<div class="verdict {cls}"><h3>{_e(v.headline)}</h3><p>'
                     f"{_sev(v.severity)} <code>{_e(v.kind)}</code> <span class=\"note\">"
                     f"confidence {100 * v.confidence:.0f} %</span></p><p>{_e(v.summary)}</p>"]
            if v.recommendation:
                parts.append(_kv_table(v.recommendation, ("recommendation", "value")))
            if v.evidence:
                parts.append("<details><summary>evidence</summary>"
                             + _kv_table(v.evidence, ("evidence", "value")) + "</details>")
            parts.append("</div>")
            verdicts.append("".join(parts))
        placeholders = []
        for j, fig in enumerate(queue_figures(q, report)):
            chart_id = f"queue-{i}-chart-{j}"
            charts.add(chart_id, fig)
            placeholders.append(f'<div><div class="{CHART_CLASS} plotly-graph-div" '
                                f'id="{chart_id}" style="height:{CHART_HEIGHT};width:100%">'
                                "</div></div>")
        labels = ", ".join(f"{_e(k)}={_e(v)}" for k, v in sorted(q.labels.items()))
        missing = ""
        if q.missing:
            missing = ("<details><summary>signals not measured</summary>"
                       + _kv_table(q.missing, ("signal", "why")) + "</details>")
        sections.append(
            f'<section class="card" id="queue-{i}"><h2>{_e(q.row.queue)} {_sev(q.row.severity)}'
            f"</h2><p class=\"note\">{labels}</p>{''.join(verdicts)}"
            f'<div class="charts">{"".join(placeholders)}</div>'
            f'<p class="note">What-if: {_e(q.whatif_note)}'
            f"</p>{missing}</section>")
    step("rendered", total, total)
    assumptions = "".join(
        f"<tr><th scope=\"row\">{_e(a.model)}</th><td>{_e(a.used_for)}</td>"
        f"<td>{_e(a.assumes)}</td><td>{_e(a.source)}</td></tr>" for a in report.assumptions)
    thresholds = "".join(
        f"<tr><th scope=\"row\"><code>{_e(t['name'])}</code></th><td class=\"n\">"
        f"{_e(_num(t['value']))}</td><td>{_e(t['signal'])}</td><td>{_e(t['reason'])}</td></tr>"
        for t in report.thresholds)
    warnings = ""
    if report.warnings:
        warnings = ('<section class="card"><h2>Warnings</h2><ul>'
                    + "".join(f"<li>{_e(w)}</li>" for w in report.warnings) + "</ul></section>")
    sev_line = " ".join(f"{_sev(s)} {n}" for s, n in counts.items() if n)
    chart_data = script_json(charts.document())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>queuelens capacity report — {_e(report.source)}</title>
<style>{_CSS}</style>
<script type="text/javascript">{_plotlyjs()}</script>
</head><body>
<header><h1>queuelens capacity report</h1><dl>
<dt>source</dt><dd id="report-source">{_e(report.source)}</dd>
<dt>time range</dt><dd>{_e(_range_text(report))}</dd>
<dt>SLO</dt><dd>{_e(_slo_text(report))}</dd>
<dt>settings</dt><dd id="report-settings">{_e(report.described)}</dd>
<dt>generated</dt><dd>{_e(_utc(report.generated_at))}</dd>
</dl></header>
<main>
<section class="card" id="fleet-summary"><h2>Fleet summary</h2>
<p>{len(report.queues)} queues · {sev_line}</p>
<table><thead><tr><th>queue</th><th>severity</th><th>verdicts</th><th>workers</th>
<th>recommended</th><th>busy</th><th>utilization</th><th>arrivals /s</th><th>capacity /s</th>
<th>p95 wait</th><th>depth</th></tr></thead>
<tbody>{''.join(summary_rows)}</tbody></table></section>
{warnings}
{''.join(sections)}
<section class="card" id="assumptions"><h2>Model assumptions</h2>
<table><thead><tr><th>model</th><th>used for</th><th>assumes</th><th>source</th></tr></thead>
<tbody>{assumptions}</tbody></table>
<h3>Advisor thresholds</h3>
<table><thead><tr><th>threshold</th><th>value</th><th>signal</th><th>reason</th></tr></thead>
<tbody>{thresholds}</tbody></table></section>
</main>
<script type="application/json" id="{CHART_DATA_ID}">{chart_data}</script>
<script type="text/javascript">{_DRAW_JS}</script>
</body></html>
"""


# --------------------------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------------------------


def render(report: Report, fmt: str, progress: Progress | None = None) -> str:
    """The report in ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "html":
        return render_html(report, progress)
    if fmt == "md":
        return render_markdown(report)
    if fmt == "json":
        return render_json(report)
    if fmt == "csv":
        return render_csv(report)
    raise ValueError(f"unknown report format {fmt!r}: choose one of {', '.join(FORMATS)}.")


def default_filename(report: Report, fmt: str) -> str:
    stamp = dt.datetime.fromtimestamp(report.at, tz=dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"queuelens-report-{stamp}.{EXTENSIONS[fmt]}"


# --------------------------------------------------------------------------------------------
# Dashboard export control
# --------------------------------------------------------------------------------------------

EXPORT_LABELS: Mapping[str, str] = {
    "html": "HTML", "md": "Markdown", "json": "JSON", "csv": "CSV",
}

EXPORT_POLL_MS = 250
"""How often the browser asks for the export's progress and result (milliseconds)."""

ExportProgress = tuple[int, int, str]
"""What the export shows while it runs: (progress bar value, bar maximum, step text)."""

_RUNNING_ON: Mapping[str, str] = {"display": "inline-flex", "gap": ".3rem",
                                  "alignItems": "center"}
_RUNNING_OFF: Mapping[str, str] = {"display": "none"}


_EXPORT_CONTEXTS: weakref.WeakValueDictionary[str, AppContext] = weakref.WeakValueDictionary()


def export_token(ctx: AppContext) -> str:
    """The opaque key the export job finds its app's context by (one per context).

    Dash registers a background callback's function under a hash of its source code and
    output ids, for every manager in the process — so with several apps in one process (the
    tests) the last app's function would run for all of them. The export callback therefore
    closes over nothing: the page sends this token (a ``dcc.Store``) and the job looks the
    context up here. A forked job process inherits the table."""
    for token, known in list(_EXPORT_CONTEXTS.items()):
        if known is ctx:
            return token
    token = secrets.token_urlsafe(16)
    _EXPORT_CONTEXTS[token] = ctx
    return token


def export_control(ctx: AppContext) -> Any:
    """Format choice (radio items), "Export report" and "Cancel" buttons, a progress bar with
    the current step (shown while an export runs) and the download target (nav bar)."""
    from dash import dcc
    from dash import html as dhtml

    return dhtml.Div(
        [
            dcc.Store(id="export-app", data=export_token(ctx)),
            dcc.RadioItems(
                id="export-format",
                options=[{"label": EXPORT_LABELS[f], "value": f} for f in FORMATS],
                value="html", inline=True, className="ql-export-format",
                inputStyle={"marginRight": ".2rem"},
                labelStyle={"marginRight": ".5rem", "fontSize": ".85rem"},
            ),
            dhtml.Button("Export report", id="export-button", n_clicks=0,
                         className="ql-export-button", title="Download a capacity "
                         "report of every queue (last 24 h)"),
            dhtml.Span(
                [dhtml.Progress(id="export-progress", value="0", max="1",
                                style={"width": "6rem"}),
                 dhtml.Span(id="export-progress-label", className="ql-export-step",
                            style={"fontSize": ".8rem"}),
                 dhtml.Button("Cancel", id="export-cancel", n_clicks=0, disabled=True,
                              className="ql-export-cancel",
                              title="Stop the running export")],
                id="export-running", role="status", style=_RUNNING_OFF,
            ),
            dhtml.Span(id="export-status", className="ql-export-status", role="status"),
            dcc.Download(id="export-download"),
        ],
        className="ql-export", style={"display": "flex", "gap": ".4rem",
                                      "alignItems": "center"},
    )


def progress_update(label: str, done: int, total: int) -> ExportProgress:
    """A report :data:`Progress` step as the export control shows it."""
    total = max(int(total), 1)
    done = min(max(int(done), 0), total)
    return done, total, f"{label} — {done}/{total} done"


def export_payload(source: Source | None, fmt: str, now: float,
                   settings: AnalysisSettings | None = None, progress: Progress | None = None
                   ) -> tuple[dict[str, Any] | None, str]:
    """(dcc.Download data, status text) of a report of ``source`` at ``now``; ``progress``
    hears each step (reading, analysing each queue, rendering each queue for HTML)."""
    from collectors.errors import CollectorError

    if fmt not in FORMATS:
        return None, f"Unknown format {fmt!r}."
    if source is None:
        return None, "No data source is configured."
    try:
        report = build_report(source, now, settings, progress=progress)
    except (CollectorError, ModelInputError) as exc:
        return None, f"Could not build the report: {exc}"
    text = render(report, fmt, progress)
    data = {"content": text, "filename": default_filename(report, fmt), "base64": False,
            "type": MIME_TYPES[fmt]}
    return data, f"{len(report.queues)} queues exported."


def run_export(ctx: AppContext | None, n_clicks: int | None, fmt: str | None,
               set_progress: Callable[[ExportProgress], None]) -> tuple[Any, str]:
    """The export button's job (runs in the background-callback process).

    It reads the source behind the app's query cache: the job runs in a forked process, where
    the cache's locks and in-flight fetches of the parent's other threads must not be
    waited on, and a report must not present stale cached data as current."""
    from dash import no_update

    from collectors.cache import CachedSource

    if not n_clicks:
        return no_update, ""
    if ctx is None:
        return no_update, "This page belongs to a dashboard that is gone: reload the page."
    source = ctx.source.source if isinstance(ctx.source, CachedSource) else ctx.source

    def progress(label: str, done: int, total: int) -> None:
        set_progress(progress_update(label, done, total))

    data, status = export_payload(source, fmt or "html", ctx.now(), ctx.settings, progress)
    return (data if data is not None else no_update), status


EXPORT_MAX_JOBS = 2
"""Export jobs one app runs at a time (each is a forked process that holds a whole report:
~180 MB for the demo, more for a large fleet); a further click is told to wait."""
EXPORT_TIMEOUT_S = 600.0
"""Longest an export job may run (a 1,000-queue HTML report takes ~7 s on the demo)."""
EXPORT_ABANDON_S = 120.0
"""A job whose progress nobody asked for this long is cancelled (its tab was closed). Above
a minute: a browser polls a hidden tab as rarely as once a minute."""
EXPORT_REAP_S = 1.0
"""How often the reaper looks at the jobs while there are any."""
EXPORT_KILL_GRACE_S = 30.0
"""A job also stops itself (SIGALRM) this long after its timeout, in case the server that
would have stopped it is gone."""
EXPORT_BUSY = ("An export is already running; try again when it finishes (the server runs at "
               "most {jobs} at a time).")


def export_timeout_text(timeout_s: float) -> str:
    """What the export control says about a job stopped at its time limit."""
    return (f"The export took longer than {timeout_s:g} s and was stopped "
            "(the server's limit, QUEUELENS_EXPORT_TIMEOUT).")


@dataclass
class _ExportJob:
    process: Any
    """The job's ``multiprocess.Process`` (only ever signalled through this object, never by
    PID number: a reaped PID may belong to another process by now)."""
    key: str
    started: float
    polled: float
    finished: float | None = None


class ExportJobs:
    """The export processes of one app: a limit on how many run at once, a time limit for
    each, and a reaper, so exports cannot exhaust the server's memory or process table.

    Dash's ``DiskcacheManager`` forks one process per "Export report" POST, with no limit
    (12 POSTs: 12 processes, 2.2 GB), and waits for a finished one only when its result is
    fetched — a job nobody polls stays a zombie, a job whose tab was closed runs on. Here
    (:func:`export_manager` routes Dash's job calls through this class):

    * :meth:`start` forks only while fewer than ``max_jobs`` run; otherwise no process is
      made and the request's result is the sentence :data:`EXPORT_BUSY`, shown in the
      export control at its first poll;
    * :meth:`reap` (a daemon thread every :data:`EXPORT_REAP_S` while there are jobs) waits
      for every finished job at once (no zombies), stops a job that ran ``timeout_s``
      (its result becomes :func:`export_timeout_text`), and stops and forgets a job — running
      or finished — that nobody has polled for ``abandon_s``, deleting its stored result;
    * :meth:`terminate` and :meth:`running` know only the jobs this object started: a job
      handle is a PID, and once a finished job is reaped its PID can be reused, so nothing
      is ever killed by number (Dash's own ``terminate_job`` would kill whatever holds it).

    The limit is per app and process (``queuelens serve`` and the container run one worker
    process)."""

    def __init__(self, cache: Any, *, max_jobs: int = EXPORT_MAX_JOBS,
                 timeout_s: float = EXPORT_TIMEOUT_S, abandon_s: float = EXPORT_ABANDON_S,
                 refused: Callable[[str], Any] = lambda text: (None, text),
                 clock: Callable[[], float] = time.monotonic,
                 reap_every_s: float = EXPORT_REAP_S) -> None:
        if max_jobs < 1 or not timeout_s > 0 or not abandon_s > 0:
            raise ValueError("export limits: max_jobs >= 1, timeout_s > 0 and abandon_s > 0")
        self.cache = cache
        self.max_jobs = max_jobs
        self.timeout_s = float(timeout_s)
        self.abandon_s = float(abandon_s)
        self.refused = refused
        """text -> the callback result that shows ``text`` (set by :func:`export_manager`)."""
        self.clock = clock
        self.reap_every_s = reap_every_s
        self._lock = threading.Lock()
        self._jobs: dict[int, _ExportJob] = {}
        self._reaper: threading.Thread | None = None
        self._reaper_pid = 0

    # --- what Dash calls (through the manager) ------------------------------------------

    def start(self, key: str, target: Callable[..., None], args: tuple[Any, ...]) -> int:
        """Fork ``target(*args)`` for the result ``key``; its PID, or 0 when none was forked
        (at the limit: the result is :data:`EXPORT_BUSY`). The same key while its job runs
        (the same request sent again) gets that job's PID."""
        from multiprocess import Process

        with self._lock:
            self._reap_locked()
            running = [j for j in self._jobs.values() if j.finished is None]
            for pid, job in self._jobs.items():
                if job.key == key and job.finished is None:
                    job.polled = self.clock()
                    return pid
            if len(running) >= self.max_jobs:
                self.cache.set(key, self.refused(EXPORT_BUSY.format(jobs=self.max_jobs)),
                               expire=self.abandon_s)
                return 0
            process = Process(target=_bounded_job,
                              args=(target, args, self.timeout_s + EXPORT_KILL_GRACE_S))
            process.start()
            pid = int(process.pid)
            stale = self._jobs.pop(pid, None)  # a reaped job whose PID came round again
            if stale is not None:
                self._forget_locked(stale)
            now = self.clock()
            self._jobs[pid] = _ExportJob(process, key, started=now, polled=now)
            self._ensure_reaper_locked()
            return pid

    def touch(self, key: str | None) -> None:
        """Someone polled the result ``key``: its job is not abandoned."""
        if key is None:
            return
        with self._lock:
            for job in self._jobs.values():
                if job.key == key:
                    job.polled = self.clock()

    def running(self, handle: Any) -> bool:
        """Whether ``handle`` is the PID of a job of ours that has not finished."""
        with self._lock:
            job = self._jobs.get(_pid(handle))
            return job is not None and job.process.is_alive()

    def terminate(self, handle: Any) -> None:
        """Stop (if it runs) and forget our job with this PID; any other PID: nothing."""
        with self._lock:
            job = self._jobs.pop(_pid(handle), None)
            if job is not None:
                _stop(job.process)

    # --- the reaper ---------------------------------------------------------------------

    def reap(self) -> None:
        """Wait for finished jobs, stop timed-out and abandoned ones (see the class doc)."""
        with self._lock:
            self._reap_locked()

    def jobs(self) -> dict[int, str]:
        """PID -> "running" | "finished" of every job still known (for tests and /health)."""
        with self._lock:
            return {pid: "running" if j.finished is None else "finished"
                    for pid, j in self._jobs.items()}

    def _reap_locked(self) -> None:
        now = self.clock()
        for pid, job in list(self._jobs.items()):
            if job.finished is None and not job.process.is_alive():  # is_alive() waits for it
                job.finished = now
            abandoned = now - job.polled >= self.abandon_s
            if job.finished is None and abandoned:
                _stop(job.process)
                job.finished = now
            elif job.finished is None and now - job.started >= self.timeout_s:
                _stop(job.process)
                job.finished = now
                self.cache.set(job.key, self.refused(export_timeout_text(self.timeout_s)),
                               expire=self.abandon_s)
            if job.finished is not None and abandoned:
                del self._jobs[pid]
                self._forget_locked(job)

    def _forget_locked(self, job: _ExportJob) -> None:
        """Delete what a job left in the store (result, progress, side updates)."""
        for key in (job.key, f"{job.key}-progress", f"{job.key}-set_props"):
            self.cache.delete(key)
        with contextlib.suppress(ValueError):  # close() refuses a process that still runs
            job.process.close()

    def _ensure_reaper_locked(self) -> None:
        # a forked gunicorn worker inherits the object but not the thread
        if self._reaper is not None and self._reaper.is_alive() and self._reaper_pid == os.getpid():
            return
        self._reaper_pid = os.getpid()
        self._reaper = threading.Thread(target=self._reap_loop, name="queuelens-export-reaper",
                                        daemon=True)
        self._reaper.start()

    def _reap_loop(self) -> None:
        while True:
            time.sleep(self.reap_every_s)
            with self._lock:
                self._reap_locked()
                if not self._jobs:
                    self._reaper = None
                    return


def _pid(handle: Any) -> int:
    try:
        return int(handle)
    except (TypeError, ValueError):
        return 0


def _stop(process: Any) -> None:
    """Kill a job process of ours and its children, and wait for it (no zombie)."""
    if process.is_alive():
        try:
            import psutil

            for child in psutil.Process(process.pid).children(recursive=True):
                with contextlib.suppress(psutil.NoSuchProcess):
                    child.kill()
        except Exception:  # the job itself is killed below regardless
            pass
        process.kill()
    process.join(timeout=5)


def _bounded_job(target: Callable[..., None], args: tuple[Any, ...], limit_s: float) -> None:
    """In the job process: stop by SIGALRM after ``limit_s`` whatever happens to the server,
    then run the job."""
    import signal

    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(max(1, math.ceil(limit_s)))
    target(*args)


def export_manager(*, max_jobs: int = EXPORT_MAX_JOBS, timeout_s: float = EXPORT_TIMEOUT_S,
                   abandon_s: float = EXPORT_ABANDON_S) -> Any:
    """A ``dash.DiskcacheManager`` for one app's background callbacks, its jobs run by an
    :class:`ExportJobs` (at most ``max_jobs`` at a time, each for at most ``timeout_s``,
    cancelled when not polled for ``abandon_s``; the manager's ``jobs`` attribute).

    Its store is a fresh private directory (``tempfile.mkdtemp``: mode 0700, so no other local
    user can read results or the handle-signing secret dash keeps there). The directory is
    removed at interpreter exit (dash keeps every manager for the process's lifetime) — only
    by the process that created it, never by a forked worker or job process."""
    import diskcache
    from dash import DiskcacheManager, no_update

    class _LimitedManager(DiskcacheManager):
        def __init__(self, cache: Any, jobs: ExportJobs) -> None:
            super().__init__(cache)  # type: ignore[no-untyped-call]
            self.jobs = jobs

        def call_job_fn(self, key: str, job_fn: Any, args: Any, context: Any) -> int:
            progress_key = self._make_progress_key(key)  # type: ignore[no-untyped-call]
            return self.jobs.start(key, job_fn, (key, progress_key, args, context))

        def terminate_job(self, job: Any) -> None:
            self.jobs.terminate(job)

        def terminate_unhealthy_job(self, job: Any) -> bool:
            if _pid(job) and not self.jobs.running(job):
                self.jobs.terminate(job)
                return True
            return False

        def job_running(self, job: Any) -> bool:
            return self.jobs.running(job)

        def get_progress(self, key: str) -> Any:
            self.jobs.touch(key)
            return super().get_progress(key)  # type: ignore[no-untyped-call]

        def get_result(self, key: str, job: Any) -> Any:
            self.jobs.touch(key)
            return super().get_result(key, job)  # type: ignore[no-untyped-call]

    directory = tempfile.mkdtemp(prefix="queuelens-export-")
    cache = diskcache.Cache(directory)
    jobs = ExportJobs(cache, max_jobs=max_jobs, timeout_s=timeout_s, abandon_s=abandon_s,
                      refused=lambda text: (no_update, text))
    manager = _LimitedManager(cache, jobs)
    weakref.finalize(manager, _remove_store, cache, directory, os.getpid())
    return manager


def _remove_store(cache: Any, directory: str, owner_pid: int) -> None:
    if os.getpid() != owner_pid:
        return
    try:
        cache.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def register_export_callbacks(app: dash.Dash) -> None:
    """The export button's callback: a Dash background callback (the app's
    :func:`export_manager`) that shows the per-queue progress, can be cancelled and disables
    the button while it runs. The app's context comes from :func:`export_token`."""
    from dash import Input, Output, State

    @app.callback(
        Output("export-download", "data"),
        Output("export-status", "children"),
        Input("export-button", "n_clicks"),
        State("export-format", "value"),
        State("export-app", "data"),
        background=True,
        progress=[Output("export-progress", "value"), Output("export-progress", "max"),
                  Output("export-progress-label", "children")],
        progress_default=[0, 1, ""],
        running=[(Output("export-button", "disabled"), True, False),
                 (Output("export-cancel", "disabled"), False, True),
                 (Output("export-running", "style"), _RUNNING_ON, _RUNNING_OFF)],
        cancel=[Input("export-cancel", "n_clicks")],
        interval=EXPORT_POLL_MS,
        prevent_initial_call=True,
    )
    def _export(set_progress: Callable[[ExportProgress], None], n_clicks: int | None,
                fmt: str | None, token: str | None) -> tuple[Any, str]:
        return run_export(_EXPORT_CONTEXTS.get(token or ""), n_clicks, fmt, set_progress)
