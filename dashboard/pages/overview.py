"""Fleet overview (`/`): one row per queue, sortable and filterable, names link to `/queue/<name>`.

Rows come from one ``Source.snapshot`` plus one ``Source.range`` for *all* queues (the depth
sparklines), through the app's shared cache: two source calls per refresh whatever the number
of queues. The status badge is the advisor's verdict (:func:`dashboard.advice.advise_data`
over the same snapshot and range data — no further source call): the verdict kinds in the
advisor's order, coloured by the first one's severity. The sparkline is text (unicode
blocks, :func:`dashboard.figures.sparkline_text`), so 500 of them cost the browser nothing
more than 500 short strings. The table is a
``dash_table.DataTable`` with native sort, filter and paging, so 500 queues cost the browser
one page of rows at a time. Queue names are rendered as Markdown links with HTML disabled
(``markdown_options={"html": False}``); the link text is Markdown-escaped and the URL
percent-encoded, so a label value can neither inject markup nor change the link target.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import dash
import numpy as np
from dash import Input, Output, dash_table, dcc, html

from collectors.errors import CollectorError
from collectors.types import RangeData, Snapshot
from dashboard.advice import (
    DASHBOARD_RANGE_S,
    DASHBOARD_STEP_S,
    HISTORY_SIGNALS,
    FleetAdvice,
    advise_data,
)
from dashboard.context import AppContext, register_page
from dashboard.figures import sparklines_text
from models.advisor import SEVERITIES
from models.errors import ModelInputError

PATH = "/"

COLUMNS: tuple[tuple[str, str, str], ...] = (
    # (field id, header, DataTable type)
    ("queue", "queue", "text"),
    ("status", "advisor verdict", "text"),
    ("arrival_rate_per_s", "arrivals /s", "numeric"),
    ("throughput_per_s", "throughput /s", "numeric"),
    ("utilization_pct", "utilization % (busy/c)", "numeric"),
    ("busy_workers", "busy workers", "numeric"),
    ("workers", "workers c", "numeric"),
    ("depth_current", "depth (items)", "numeric"),
    ("sparkline", "depth, last hour", "text"),
    ("queue_wait_p95_s", "queue wait p95 (s)", "numeric"),
    ("work_p95_s", "work p95 (s)", "numeric"),
    ("retries_per_s", "retries /s", "numeric"),
    ("errors_per_s", "errors /s", "numeric"),
    ("api_calls_per_s", "API calls /s (process)", "numeric"),
)

SPARK_RANGE_S = DASHBOARD_RANGE_S
"""The sparkline shows the depth over the last hour..."""
SPARK_STEP_S = DASHBOARD_STEP_S
"""...one point every 150 s (25 points), read in one range call for all queues; the advisor
reads the same range data (the badges), so a refresh stays at two source calls."""
SPARK_SIGNALS = ("depth_current", "depth_mean")
"""The first of these signals present in the range data is drawn."""
SPARK_WIDTH = 25
NO_DATA = "no data"

NO_VERDICT = "no verdict"
"""The status of a queue the advisor could not judge (its input was rejected)."""

# Characters that could start Markdown syntax inside link text. '-', '.', '#' and '+' only
# matter at the start of a line (the cell starts with '['); '_' only at a word edge, so
# names such as kube-system or my_queue stay filterable as typed.
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>&~!|])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def queue_href(name: str) -> str:
    """`/queue/<name>` with every reserved character percent-encoded (``/`` too)."""
    return "/queue/" + quote(name, safe="")


def markdown_link(name: str) -> str:
    """A Markdown link to the queue page whose text shows ``name`` literally."""
    text = _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), name).replace("\n", " ").replace("\r", " ")
    return f"[{text}]({queue_href(name)})"


def _num(value: float | None, digits: int = 3) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(value, digits)


def sparklines(data: RangeData, width: int = SPARK_WIDTH) -> dict[str, str]:
    """{queue: depth sparkline} from one range read of all queues. Points are placed on the
    range's time grid, so a missing sample is a blank cell (never a zero bar)."""
    signal = next((s for s in SPARK_SIGNALS if s in data.signals), None)
    if signal is None or len(data.t) == 0:
        return {}
    grid = data.start + data.step_s * np.arange(
        math.floor((data.end - data.start) / data.step_s + 1e-9) + 1)
    index = np.rint((data.t - data.start) / data.step_s).astype(np.int64)
    ok = (index >= 0) & (index < len(grid))
    table = np.full((len(data.queues), len(grid)), np.nan)
    table[:, index[ok]] = data.matrix(signal)[:, ok]
    texts = sparklines_text(table, width)
    return {name: text for name, text in zip(data.queues, texts, strict=True) if text}


def read_history(ctx: AppContext, now: float) -> tuple[RangeData | None, str]:
    """(range data, warning): ONE ``range`` call for all queues over the last hour at the
    advisor's dashboard step — the sparklines and the advisor both read it."""
    if ctx.source is None:
        return None, ""
    try:
        data = ctx.source.range(now - SPARK_RANGE_S, now, SPARK_STEP_S, None,
                                HISTORY_SIGNALS | set(SPARK_SIGNALS))
    except CollectorError as exc:
        return None, f"No history (sparklines, trend rules): {exc}"
    return data, "; ".join(data.warnings)


_memo: tuple[Snapshot, RangeData | None, float, FleetAdvice] | None = None
"""The last fleet advice with the (cached) snapshot and range it came from: another tab or a
refresh within the cache's lifetime gets the same objects back and skips the advisor."""


def fleet_advice(snapshot: Snapshot, data: RangeData | None, slo_wait_s: float) -> FleetAdvice:
    """The advisor's verdicts for every queue, from data already read (no source call)."""
    global _memo
    memo = _memo
    if memo is not None and memo[0] is snapshot and memo[1] is data and memo[2] == slo_wait_s:
        return memo[3]
    advice = advise_data(snapshot, data, range_s=SPARK_RANGE_S, slo_wait_s=slo_wait_s)
    _memo = (snapshot, data, slo_wait_s, advice)
    return advice


def overview_rows(
    snapshot: Snapshot, sparks: dict[str, str] | None = None,
    advice: FleetAdvice | None = None,
) -> list[dict[str, Any]]:
    """Table rows (JSON-safe: None for missing, never NaN), most severe verdict first.

    ``sparks``: {queue: sparkline text}; a queue without one shows "no data". ``advice``:
    the advisor's verdicts; the status cell lists their kinds in the advisor's order."""
    sparks = sparks or {}
    verdicts = {qa.queue: qa.verdicts for qa in advice.queues} if advice is not None else {}
    rows: list[dict[str, Any]] = []
    for q in snapshot.queues:
        found = verdicts.get(q.queue, ())
        rows.append({
            "queue": markdown_link(q.queue),
            "queue_name": q.queue,
            "status": ", ".join(v.kind for v in found) or NO_VERDICT,
            "severity": found[0].severity if found else NO_VERDICT,
            "verdict_summary": ". ".join(v.headline for v in found[:2]),
            "arrival_rate_per_s": _num(q.arrival_rate_per_s),
            "throughput_per_s": _num(q.throughput_per_s),
            "utilization_pct": None if q.utilization is None else _num(100 * q.utilization, 1),
            "busy_workers": _num(q.busy_workers, 2),
            "workers": _num(q.workers, 0),
            "depth_current": _num(q.depth_current, 1),
            "sparkline": sparks.get(q.queue, NO_DATA),
            "queue_wait_p95_s": _num(q.queue_wait_p95_s, 4),
            "work_p95_s": _num(q.work_p95_s, 4),
            "retries_per_s": _num(q.retries_per_s),
            "errors_per_s": _num(q.errors_per_s),
            "api_calls_per_s": _num(q.api_calls_per_s, 2),
        })
    rank = {s: i for i, s in enumerate(SEVERITY_ORDER)}
    rows.sort(key=lambda r: (rank[r["severity"]], r["queue_name"]))
    return rows


def summary_line(snapshot: Snapshot, rows: Sequence[dict[str, Any]]) -> str:
    counts = dict.fromkeys(SEVERITY_ORDER, 0)
    for row in rows:
        counts[row["severity"]] += 1
    parts = [f"{n} {s}" for s, n in counts.items() if n]
    when = time.strftime("%H:%M:%S UTC", time.gmtime(snapshot.at))
    return (f"{len(rows)} queues from {snapshot.source} at {when} "
            f"(rates over {snapshot.window_s:g} s; advisor verdicts over the last "
            f"{SPARK_RANGE_S / 3600:g} h): " + ", ".join(parts) + ".")


def load_overview(ctx: AppContext, now: float | None = None
                  ) -> tuple[list[dict[str, Any]], str, str]:
    """(rows, summary sentence, warning/error sentence) from one ``snapshot`` and one
    ``range`` read whatever the number of queues — an unavailable source is a sentence."""
    if ctx.source is None:
        return [], "", "No data source is configured."
    now = ctx.now() if now is None else now
    try:
        snapshot = ctx.source.snapshot(now, ctx.window_s)
    except CollectorError as exc:
        return [], "", f"Could not read the queues: {exc}"
    data, history_warning = read_history(ctx, now)
    notes = [*snapshot.warnings, *([history_warning] if history_warning else [])]
    try:
        advice: FleetAdvice | None = fleet_advice(snapshot, data, ctx.slo_wait_s)
    except (ModelInputError, CollectorError) as exc:
        advice = None
        notes.append(f"No advisor verdicts: {exc}")
    rows = overview_rows(snapshot, sparklines(data) if data is not None else {}, advice)
    return rows, summary_line(snapshot, rows), "; ".join(notes)


def status_tooltips(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-row tooltip of the status cell: the first verdicts' summaries (plain text)."""
    return [{"status": {"value": r["verdict_summary"] or r["status"], "type": "text"}}
            for r in rows]


SEVERITY_ORDER: tuple[str, ...] = (*SEVERITIES, NO_VERDICT)

_SEVERITY_STYLE = {
    "critical": ("#b3261e", "#ffffff"),
    "warning": ("#e69f00", "#1c1f24"),
    "info": ("#dbe9f6", "#0b3d6b"),
    "ok": ("#d7efe1", "#14532d"),
    NO_VERDICT: ("#e5e7eb", "#374151"),
}


def _table() -> Any:
    columns: list[dict[str, Any]] = []
    for field_id, header, kind in COLUMNS:
        col: dict[str, Any] = {"id": field_id, "name": header, "type": kind}
        if field_id == "queue":
            col["presentation"] = "markdown"
        columns.append(col)
    return dash_table.DataTable(  # type: ignore[attr-defined]
        id="overview-table",
        columns=columns,
        data=[],
        sort_action="native",
        sort_mode="multi",
        filter_action="native",
        page_action="native",
        page_size=50,
        markdown_options={"html": False, "link_target": "_self"},
        style_table={"overflowX": "auto"},
        style_cell={"fontFamily": "inherit", "fontSize": "14px", "padding": "4px 8px",
                    "textAlign": "right", "backgroundColor": "#ffffff", "color": "#1c1f24"},
        style_cell_conditional=[
            *({"if": {"column_id": c}, "textAlign": "left"} for c in ("queue", "status")),
            {"if": {"column_id": "sparkline"}, "textAlign": "left", "whiteSpace": "pre",
             "fontFamily": "DejaVu Sans Mono, Menlo, Consolas, monospace",
             "letterSpacing": "-1px", "color": "#0072B2"},
        ],
        style_header={"fontWeight": "700", "backgroundColor": "#eef1f5", "whiteSpace": "normal"},
        style_data_conditional=[
            {"if": {"filter_query": f'{{severity}} = "{sev}"', "column_id": "status"},
             "backgroundColor": bg, "color": fg, "fontWeight": "700"}
            for sev, (bg, fg) in _SEVERITY_STYLE.items()
        ],
        tooltip_header={
            "utilization_pct": "time-average busy workers ÷ worker count",
            "api_calls_per_s": "rest_client_requests_total of the whole process, shared by "
                               "every controller in it",
            "arrival_rate_per_s": "distinct adds after coalescing (workqueue_adds_total)",
            "sparkline": "queue depth over the last hour, scaled to each queue's own maximum",
            "status": "the advisor's verdicts, most important first; the colour is the first "
                      "verdict's severity (critical, warning, info, ok). Hover a cell for the "
                      "summary; the queue page has the evidence",
        },
        tooltip_delay=300,
        tooltip_duration=None,
    )


def layout(**_kwargs: object) -> html.Div:
    return html.Div(
        [
            html.H1("Fleet overview: which queues are falling behind?"),
            html.P(
                "One row per work queue. Sort by any column, filter with expressions such as "
                "> 0.9 or contains name; click a queue for its history, model fit and what-if.",
                className="ql-muted",
            ),
            html.Div(id="overview-summary", className="ql-readout"),
            html.Div(id="overview-error", className="ql-error", role="alert"),
            html.Div(_table(), className="ql-card"),
            dcc.Interval(id="overview-refresh", interval=15_000),
        ]
    )


def register(app: dash.Dash, ctx: AppContext) -> None:
    register_page(__name__, path=PATH, name="Fleet", title="Fleet · queuelens", order=0,
                  layout=layout)

    @app.callback(
        Output("overview-table", "data"),
        Output("overview-table", "tooltip_data"),
        Output("overview-summary", "children"),
        Output("overview-error", "children"),
        Output("overview-refresh", "interval"),
        Input("overview-refresh", "n_intervals"),
    )
    def _refresh(_n: int | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str, str,
                                          int]:
        rows, summary, error = load_overview(ctx)
        return rows, status_tooltips(rows), summary, error, int(ctx.refresh_s * 1000)
