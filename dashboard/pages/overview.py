"""Fleet overview (`/`): one row per queue, sortable and filterable, names link to `/queue/<name>`.

Rows come from one ``Source.snapshot`` (through the app's shared cache). The table is a
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
from dash import Input, Output, dash_table, dcc, html

from collectors.errors import CollectorError
from collectors.types import QueueSnapshot, Snapshot
from dashboard.context import AppContext, register_page

PATH = "/"

UTILIZATION_HOT = 0.9
"""busy/c at or above this is 'saturated': waits grow sharply as ρ → 1 (Kingman)."""
UTILIZATION_WARM = 0.75
BEHIND_RATIO = 1.05
"""arrival > 1.05 × throughput: the queue admits more than it completes (backlog grows)."""

COLUMNS: tuple[tuple[str, str, str], ...] = (
    # (field id, header, DataTable type)
    ("queue", "queue", "text"),
    ("status", "status", "text"),
    ("arrival_rate_per_s", "arrivals /s", "numeric"),
    ("throughput_per_s", "throughput /s", "numeric"),
    ("utilization_pct", "utilization % (busy/c)", "numeric"),
    ("busy_workers", "busy workers", "numeric"),
    ("workers", "workers c", "numeric"),
    ("depth_current", "depth (items)", "numeric"),
    ("queue_wait_p95_s", "queue wait p95 (s)", "numeric"),
    ("work_p95_s", "work p95 (s)", "numeric"),
    ("retries_per_s", "retries /s", "numeric"),
    ("errors_per_s", "errors /s", "numeric"),
    ("api_calls_per_s", "API calls /s (process)", "numeric"),
)

STATUS_ORDER = ("falling behind", "saturated", "errors", "busy", "ok", "no data")

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


def queue_status(q: QueueSnapshot) -> str:
    """One word for the badge: falling behind · saturated · errors · busy · ok · no data."""
    lam, x, u = q.arrival_rate_per_s, q.throughput_per_s, q.utilization
    if lam is None and x is None and u is None:
        return "no data"
    if lam is not None and x is not None and lam > BEHIND_RATIO * x and lam > 0:
        return "falling behind"
    if u is not None and u >= UTILIZATION_HOT:
        return "saturated"
    if q.errors_per_s is not None and x is not None and x > 0 and q.errors_per_s > 0.05 * x:
        return "errors"
    if u is not None and u >= UTILIZATION_WARM:
        return "busy"
    return "ok"


def _num(value: float | None, digits: int = 3) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(value, digits)


def overview_rows(snapshot: Snapshot) -> list[dict[str, Any]]:
    """Table rows (JSON-safe: None for missing, never NaN), worst status first."""
    rows: list[dict[str, Any]] = []
    for q in snapshot.queues:
        status = queue_status(q)
        rows.append({
            "queue": markdown_link(q.queue),
            "queue_name": q.queue,
            "status": status,
            "arrival_rate_per_s": _num(q.arrival_rate_per_s),
            "throughput_per_s": _num(q.throughput_per_s),
            "utilization_pct": None if q.utilization is None else _num(100 * q.utilization, 1),
            "busy_workers": _num(q.busy_workers, 2),
            "workers": _num(q.workers, 0),
            "depth_current": _num(q.depth_current, 1),
            "queue_wait_p95_s": _num(q.queue_wait_p95_s, 4),
            "work_p95_s": _num(q.work_p95_s, 4),
            "retries_per_s": _num(q.retries_per_s),
            "errors_per_s": _num(q.errors_per_s),
            "api_calls_per_s": _num(q.api_calls_per_s, 2),
        })
    rank = {s: i for i, s in enumerate(STATUS_ORDER)}
    rows.sort(key=lambda r: (rank[r["status"]], r["queue_name"]))
    return rows


def summary_line(snapshot: Snapshot, rows: Sequence[dict[str, Any]]) -> str:
    counts = dict.fromkeys(STATUS_ORDER, 0)
    for row in rows:
        counts[row["status"]] += 1
    parts = [f"{n} {s}" for s, n in counts.items() if n]
    when = time.strftime("%H:%M:%S UTC", time.gmtime(snapshot.at))
    return (f"{len(rows)} queues from {snapshot.source} at {when} "
            f"(rates over {snapshot.window_s:g} s): " + ", ".join(parts) + ".")


def load_overview(ctx: AppContext) -> tuple[list[dict[str, Any]], str, str]:
    """(rows, summary sentence, error sentence) — an unavailable source is a sentence."""
    if ctx.source is None:
        return [], "", "No data source is configured."
    try:
        snapshot = ctx.source.snapshot(time.time(), ctx.window_s)
    except CollectorError as exc:
        return [], "", f"Could not read the queues: {exc}"
    rows = overview_rows(snapshot)
    warnings = "; ".join(snapshot.warnings)
    return rows, summary_line(snapshot, rows), warnings


_STATUS_STYLE = {
    "falling behind": ("#b3261e", "#ffffff"),
    "saturated": ("#d55e00", "#ffffff"),
    "errors": ("#cc79a7", "#1c1f24"),
    "busy": ("#e69f00", "#1c1f24"),
    "ok": ("#d7efe1", "#14532d"),
    "no data": ("#e5e7eb", "#374151"),
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
            {"if": {"column_id": c}, "textAlign": "left"} for c in ("queue", "status")
        ],
        style_header={"fontWeight": "700", "backgroundColor": "#eef1f5", "whiteSpace": "normal"},
        style_data_conditional=[
            {"if": {"filter_query": f'{{status}} = "{status}"', "column_id": "status"},
             "backgroundColor": bg, "color": fg, "fontWeight": "700"}
            for status, (bg, fg) in _STATUS_STYLE.items()
        ],
        tooltip_header={
            "utilization_pct": "time-average busy workers ÷ worker count",
            "api_calls_per_s": "rest_client_requests_total of the whole process, shared by "
                               "every controller in it",
            "arrival_rate_per_s": "distinct adds after coalescing (workqueue_adds_total)",
        },
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
        Output("overview-summary", "children"),
        Output("overview-error", "children"),
        Output("overview-refresh", "interval"),
        Input("overview-refresh", "n_intervals"),
    )
    def _refresh(_n: int | None) -> tuple[list[dict[str, Any]], str, str, int]:
        rows, summary, error = load_overview(ctx)
        return rows, summary, error, int(ctx.refresh_s * 1000)
