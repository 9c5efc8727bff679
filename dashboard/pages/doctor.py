"""Metric-contract doctor (`/doctor`): the report of ``queuelens doctor`` for the app's source.

Per process (its labels), what was detected — the framework with its evidence, version hints,
the priority queue, the REST client's metrics, the API server — and one table of every signal
of the contract that applies: status (ok, missing, empty, malformed), detail, what a gap costs
and the exact fix (code, config or a manifest, in a ``<pre>`` to copy). Fleet-wide signals
(any workqueue series at all? the API server scraped?) come first.

The report is read from the app's source (:func:`collectors.doctor.read_contract`: five
queries for the whole fleet on Prometheus, the rendered metrics on the demo) under the page
refresh's budget (:meth:`dashboard.context.AppContext.refresh_budget`), and kept per app for
:data:`MIN_REUSE_S` or the refresh period, whichever is longer: ten tabs cost one reading;
"Check again" reads anew. It is not refreshed on the dashboard's interval (the contract of a
fleet changes with deployments, not every 15 s).

Every label value, queue name and text reaches the page as a Dash text child (escaped by
React), never as HTML or Markdown.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import dash
from dash import Input, Output, html

from collectors.errors import CollectorError
from dashboard.context import AppContext, register_page
from models.contract import DoctorReport, ProcessReport, SignalReport

PATH = "/doctor"
MIN_REUSE_S = 60.0
"""The shortest life of a doctor reading shared by the page's visitors."""

_STATUS_STYLE = {
    "ok": {"backgroundColor": "#d7efe1", "color": "#14532d"},
    "missing": {"backgroundColor": "#fde2e1", "color": "#8a1c14"},
    "empty": {"backgroundColor": "#fff1cc", "color": "#5c4200"},
    "malformed": {"backgroundColor": "#fde2e1", "color": "#8a1c14"},
}


class _Memo:
    """The last report of one app, shared by its visitors for ``ttl_s``; one reading at a
    time (a visitor arriving during a reading waits for it and gets it)."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self._value: tuple[float, DoctorReport, str | None] | None = None

    def get(self, ctx: AppContext, force: bool) -> tuple[DoctorReport, str | None]:
        """The report and the line on the recorded series (None: a source without them)."""
        asked = time.monotonic()
        with self._lock:
            value = self._value
            if value is not None and (value[0] >= asked or (
                    not force and asked - value[0] < self.ttl_s)):
                return value[1], value[2]
            report, recorded = read_report(ctx), read_recorded_line(ctx)
            self._value = (time.monotonic(), report, recorded)
            return report, recorded


def read_report(ctx: AppContext, at: float | None = None) -> DoctorReport:
    """The doctor's report of the app's source at ``at`` (default: the app's time)."""
    from collectors.doctor import DEFAULT_RANGE_S, read_contract
    from collectors.profile import Profile
    from models.contract import diagnose

    if ctx.source is None:
        raise CollectorError("No data source is configured.")
    profile = ctx.config.profile if ctx.config is not None else Profile()
    reading = read_contract(ctx.source, ctx.now() if at is None else at, DEFAULT_RANGE_S,
                            profile)
    return diagnose(reading)


def read_recorded_line(ctx: AppContext) -> str | None:
    """The CLI's line on the recorded series of ``queuelens rules --recording`` the reads
    would use (:func:`collectors.doctor.read_recorded`), None for the demo."""
    from collectors.doctor import read_recorded
    from dashboard.commands.doctor import recorded_line

    return recorded_line(read_recorded(ctx.source, ctx.now()))


def _fix_cell(s: SignalReport, key: str) -> Any:
    if s.status == "ok":
        return ""
    parts: list[Any] = []
    if s.cost:
        parts.append(html.Div(s.cost, className="ql-note"))
    if s.costs:
        parts.append(html.Div("cannot be given: " + ", ".join(s.costs), className="ql-note"))
    if s.fix:
        parts.append(html.Details([html.Summary("the fix"),
                                   html.Pre(s.fix, id=key, className="ql-promql")]))
    return parts


def signal_table(signals: Sequence[SignalReport], prefix: str) -> html.Table:
    """One row per signal: signal, status, detail, and — when not ok — its cost and fix."""
    head = html.Thead(html.Tr([html.Th("signal"), html.Th("status"), html.Th("detail"),
                               html.Th("cost and fix")]))
    rows = [html.Tr([html.Td(s.signal),
                     html.Td(s.status, style={**_STATUS_STYLE.get(s.status, {}),
                                              "fontWeight": "700", "padding": "0 0.4rem"}),
                     html.Td(s.detail),
                     html.Td(_fix_cell(s, f"{prefix}-fix-{i}"))],
                    className=f"ql-doctor-{s.status}")
            for i, s in enumerate(signals)]
    return html.Table([head, html.Tbody(rows)], className="ql-evidence ql-evidence-promql")


def _detected(p: ProcessReport) -> html.Table:
    facts = [*p.detected.facts(), ("queues", ", ".join(q.name for q in p.queues) or "none")]
    return html.Table(html.Tbody([html.Tr([html.Th(k), html.Td(v)]) for k, v in facts]),
                      className="ql-evidence")


_FIX_ORDER = {"missing": 0, "malformed": 1, "empty": 2}
"""What to fix first: a missing signal costs whole verdicts, a malformed one gives wrong
numbers until fixed, an empty one may only mean nothing happened in the hour."""


def fix_groups(report: DoctorReport) -> list[tuple[SignalReport, list[str]]]:
    """Each gap once — (the signal's report, the processes it is a gap in) — the gaps that
    cost the most first (status, then how many processes, then what it costs): a fleet of
    30 processes missing the same metric is one entry with one fix, not 30 tables."""
    groups: dict[tuple[str, str, str], tuple[SignalReport, list[str]]] = {}
    where = [("the fleet", report.signals)] + [(p.labels_text, p.signals)
                                               for p in report.processes]
    for name, signals in where:
        for sig_report in signals:
            if sig_report.status == "ok":
                continue
            key = (sig_report.signal, sig_report.status, sig_report.fix or "")
            groups.setdefault(key, (sig_report, []))[1].append(name)
    return sorted(groups.values(), key=lambda g: (_FIX_ORDER.get(g[0].status, 3), -len(g[1]),
                                                  -len(g[0].costs), g[0].signal))


def _fix_first(report: DoctorReport) -> html.Section:
    groups = fix_groups(report)
    if not groups:
        return html.Section([html.H2("Nothing to fix"), html.P(
            "Every signal of the contract is there for every process.")],
            className="ql-card", id="doctor-fix-first")
    items = [html.Li([html.Strong(f"{s.signal}: {s.status}"), f" — {s.detail} ",
                      html.Span(f"({len(where)} of {len(report.processes) + 1} places: "
                                f"{', '.join(where[:3])}{' …' if len(where) > 3 else ''})",
                                className="ql-muted"),
                      *(_fix_cell(s, f"first-fix-{i}") or [])])
             for i, (s, where) in enumerate(groups)]
    return html.Section([html.H2("What to fix first"), html.Ol(items)], className="ql-card",
                        id="doctor-fix-first")


def report_children(report: DoctorReport) -> list[Any]:
    """The page's content for a report (no source call): what to fix first, each gap once;
    then the fleet and each process, folded (a process's table lists every signal)."""
    out: list[Any] = [_fix_first(report),
                      html.Details([html.Summary("Fleet-wide signals"),
                                    signal_table(report.signals, "fleet")],
                                   className="ql-card", open=False)]
    for i, p in enumerate(report.processes):
        counts = p.counts()
        gaps = ", ".join(f"{n} {st}" for st, n in counts.items() if n and st != "ok")
        out.append(html.Details(
            [html.Summary(f"Process {p.labels_text} — {gaps or 'all ok'}"), _detected(p),
             signal_table(p.signals, f"p{i}")],
            className="ql-card", id=f"doctor-process-{i}", open=False))
    if report.warnings:
        out.append(html.Div([html.P(w) for w in report.warnings], className="ql-note"))
    return out


def layout(**_kwargs: object) -> html.Div:
    return html.Div([
        html.H1("Metric-contract doctor: can queuelens see what it needs?"),
        html.P("Per process: which signals of the metric contract are present, missing, "
               "empty (never changed over the last hour) or malformed, what was detected, "
               "what each gap costs and the exact fix.", className="ql-muted"),
        html.Button("Check again", id="doctor-run", className="ql-button secondary"),
        html.Div(id="doctor-summary", className="ql-readout"),
        html.Div(id="doctor-error", className="ql-error", role="alert"),
        html.Div(id="doctor-report"),
    ])


def register(app: dash.Dash, ctx: AppContext) -> None:
    register_page(__name__, path=PATH, name="Doctor", title="Doctor · queuelens", order=6,
                  layout=layout)
    memo = _Memo(max(MIN_REUSE_S, ctx.refresh_s))

    @app.callback(
        Output("doctor-report", "children"),
        Output("doctor-summary", "children"),
        Output("doctor-error", "children"),
        Input("doctor-run", "n_clicks"),
    )
    def _run(n_clicks: int | None) -> tuple[list[Any], Any, str]:
        try:
            with ctx.refresh_budget():
                report, recorded = memo.get(ctx, force=bool(n_clicks))
        except CollectorError as exc:
            return [], "", f"Could not read the metric contract: {exc}"
        summary: Any = report.summary if recorded is None else [
            html.Div(report.summary), html.Div(recorded, id="doctor-recorded")]
        return report_children(report), summary, ""
