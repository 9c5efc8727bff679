"""Fleet overview (`/`): one row per queue in a ``dash-ag-grid`` grid — sortable, filterable,
names link to `/queue/<name>`.

Rows come from one ``Source.snapshot`` plus one ``Source.range`` for *all* queues (the depth
sparklines), through the app's shared cache: two source calls per refresh whatever the number
of queues. The status badge is the advisor's verdict (:func:`dashboard.advice.advise_data`
over the same snapshot and range data — no further source call): the verdict kinds in the
advisor's order, coloured by the first one's severity, with the queue's capacity plan beside
it (recommended workers, binding limit, the demand it is sized for).

The grid (``dash_table.DataTable`` is deprecated in Dash 4) groups its columns (Advice,
Demand, Workers, Backlog, p95, Failures & API) under short headers, so the default columns
fit a 1400 px window without a horizontal scroll bar: the name is pinned left at a fixed
width, every other column is ``flex`` with a minimum width (AG Grid shares the width out
exactly; ``sizeColumnsToFit`` rounded 2 px over it and showed a scroll bar). It pages 50
rows at a time, so 500 queues cost the browser one page of rows. The sparkline is text
(unicode blocks, :func:`dashboard.figures.sparklines_text`) on ONE logarithmic scale shared
by every queue — a depth of 6e-05 draws as the floor, not as the full bar a per-row scale
gave it — and the scale is stated under the grid (:func:`spark_scale`).

Queue names are label values (hostile input): they reach the page only as text. The name
cell's renderer (``QueueLink`` in ``dashboard/assets/overview_grid.js``) puts the name into
an ``<a>`` as a React text child; the link target is :func:`queue_href`, percent-encoded here.
No column uses the Markdown renderer, ``dangerously_allow_code`` stays off, and tooltips are
AG Grid's plain-text ones.

**A cold start streams** (issue 22 §2, :mod:`dashboard.streaming`): when the app's cache holds
no read of the view and the fleet has more than ``QUEUELENS_STREAM_ABOVE`` queues (500), the
refresh starts (or joins) the app's background job, which reads the fleet in batches of whole
processes; the page polls every second and shows "Reading queues: 2,500 of 10,000 — about
40 s left" (:func:`models.formatting.progress_text`) and the rows of every batch planned so
far. The summary line and the sparkline scale say they are partial; the sparklines are
redrawn on the scale of the rows read so far. When the last batch lands the whole read is in
the cache and the grid holds every row; later refreshes are the normal ones.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import dash
import dash_ag_grid as dag
import numpy as np
import numpy.typing as npt
from dash import Input, Output, State, dcc, html

from collectors.cache import CachedSource
from collectors.errors import CollectorError
from collectors.query_pool import in_background
from dashboard.advice import (
    HISTORY_SIGNALS,
    FleetAdvice,
    QueueAdvice,
    advise_data,
    source_framework,
    source_poll_periods,
)
from dashboard.context import AppContext, clientside_callback, register_page
from dashboard.figures import SPARK_BLOCKS, spark_log_top, sparklines_text
from dashboard.numbers import sig, snapshot_quantile_text
from dashboard.plan_words import binding_label, headroom_words, workers_text
from dashboard.streaming import ColdStart, Progress, StreamSettings
from models.advisor import SEVERITIES
from models.errors import ModelInputError
from models.formatting import count_text, percent_text
from models.measurements import RangeData, Snapshot
from models.settings import DEFAULT_RANGE_S, AnalysisSettings, describe_duration
from models.verdicts.kinds import KIND_WORDS

PATH = "/"
GRID_ID = "overview-table"

SPARK_RANGE_S = DEFAULT_RANGE_S
"""The sparkline shows the depth over the settings' range (this is the default; the app's
settings decide) at their step, read in one range call for all queues; the plans read the
same range data, so a refresh stays at two source calls."""
SPARK_SIGNALS = ("depth_current", "depth_mean")
"""The first of these signals present in the range data is drawn."""
SPARK_WIDTH = 25
SPARK_FLOOR = 0.1
"""Depth (items) at or below which a sparkline cell is the lowest block: the shared log scale
starts here. A time-average depth under 0.1 item is a queue that is practically empty."""
NO_DATA = "no data"

NO_VERDICT = "no verdict"
"""The status of a queue the advisor could not judge (its input was rejected)."""


def queue_href(name: str) -> str:
    """`/queue/<name>` with every reserved character percent-encoded (``/`` too)."""
    return "/queue/" + quote(name, safe="")


def _num(value: float | None, digits: int = 3) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(value, digits)


def spark_signal(names: Collection[str]) -> str | None:
    """The signal the sparklines draw: the first of :data:`SPARK_SIGNALS` among ``names``."""
    return next((s for s in SPARK_SIGNALS if s in names), None)


def _depth_table(data: RangeData, only: Collection[str] | None = None,
                 signal: str | None = None) -> tuple[list[str], npt.NDArray[np.float64]]:
    """(queues, queues × grid-points depth table) with the points placed on the range's time
    grid, so a missing sample is NaN (a blank cell, never a zero bar); ``only``: just these
    queues (the ones the grid shows, so the shared scale is theirs); ``signal``: the one to
    draw (default :func:`spark_signal` of the data's; NaN rows when the data lack it)."""
    signal = signal or spark_signal(data.signals)
    if signal is None or len(data.t) == 0:
        return [], np.empty((0, 0))
    grid = data.start + data.step_s * np.arange(
        math.floor((data.end - data.start) / data.step_s + 1e-9) + 1)
    index = np.rint((data.t - data.start) / data.step_s).astype(np.int64)
    ok = (index >= 0) & (index < len(grid))
    table = np.full((len(data.queues), len(grid)), np.nan)
    if signal in data.signals:
        table[:, index[ok]] = data.matrix(signal)[:, ok]
    if only is None:
        return list(data.queues), table
    keep = [i for i, name in enumerate(data.queues) if name in only]
    return [data.queues[i] for i in keep], table[keep]


def sparklines(data: RangeData, width: int = SPARK_WIDTH,
               only: Collection[str] | None = None) -> dict[str, str]:
    """{queue: depth sparkline} from one range read of all queues (or ``only`` these), on one
    log scale shared by every queue: :data:`SPARK_FLOOR` to their peak (:func:`spark_scale`)."""
    queues, table = _depth_table(data, only)
    if not queues:
        return {}
    texts = sparklines_text(table, width, log_floor=SPARK_FLOOR)
    return {name: text for name, text in zip(queues, texts, strict=True) if text}


def depth_peaks(data: RangeData, only: Collection[str] | None = None) -> dict[str, float]:
    """{queue: largest depth over the range} (queues with at least one point)."""
    queues, table = _depth_table(data, only)
    out: dict[str, float] = {}
    for name, row in zip(queues, table, strict=True):
        finite = row[np.isfinite(row)]
        if finite.size:
            out[name] = float(finite.max())
    return out


def spark_scale(peaks: Collection[float]) -> str:
    """The shared sparkline scale in words (shown under the grid), from the peaks of the
    queues drawn (:func:`depth_peaks`): the same top :func:`sparklines` scaled them to."""
    if not peaks:
        return ""
    top = spark_log_top(np.array(list(peaks), dtype=np.float64), SPARK_FLOOR)
    ratio = (top / SPARK_FLOOR) ** (1 / (len(SPARK_BLOCKS) - 1))
    return (f"Depth sparklines share one log scale: {SPARK_BLOCKS[0]} ≤ "
            f"{sig(SPARK_FLOOR)} items, {SPARK_BLOCKS[-1]} = "
            f"{sig(top)} items (the fleet's peak), each block ×"
            f"{sig(ratio)} the one below; a blank is a missing sample.")


def rows_scale(rows: Sequence[Mapping[str, Any]]) -> str:
    """:func:`spark_scale` of the rows shown."""
    return spark_scale([r["depth_peak"] for r in rows if r.get("depth_peak") is not None])


def read_history(ctx: AppContext, now: float) -> tuple[RangeData | None, str]:
    """(range data, warning): ONE ``range`` call for all queues over the settings' range at
    their step (the advisor's read, as ``advise``) — the sparklines and the plans read it."""
    if ctx.source is None:
        return None, ""
    s = ctx.settings
    try:
        data = ctx.source.range(now - s.range_s, now, s.step_s, None,
                                HISTORY_SIGNALS | set(SPARK_SIGNALS))
    except CollectorError as exc:
        return None, f"No history (sparklines, trend rules): {exc}"
    return data, "; ".join(data.warnings)


_memo: tuple[Snapshot, RangeData | None, AnalysisSettings, FleetAdvice] | None = None
"""The last fleet advice with the (cached) snapshot and range it came from: another tab or a
refresh within the cache's lifetime gets the same objects back and skips the advisor."""


def fleet_advice(snapshot: Snapshot, data: RangeData | None,
                 settings: AnalysisSettings | None = None,
                 framework: str | None = None,
                 poll_periods: Mapping[str, float] | None = None) -> FleetAdvice:
    """Every queue's plan and verdicts, from data already read (no source call)."""
    global _memo
    settings = settings or AnalysisSettings()
    memo = _memo
    if memo is not None and memo[0] is snapshot and memo[1] is data and memo[2] == settings:
        return memo[3]
    advice = advise_data(snapshot, data, settings, framework=framework,
                         poll_periods=poll_periods)
    _memo = (snapshot, data, settings, advice)
    return advice


NO_HEADROOM = "no limit's ceiling was measured for this queue"
"""The headroom cell's tip where the plan has none."""


def _plan_cells(qa: QueueAdvice | None) -> dict[str, Any]:
    """The capacity plan's cells of a row: the same words as every other surface."""
    plan = qa.plan if qa is not None else None
    if plan is None:
        return {"workers_advice": "—", "workers_advised": None, "binding_limit": None,
                "binding": "", "binding_text": "", "demand_per_s": None, "headline": "",
                "headroom": "—", "headroom_ratio": None, "headroom_tip": NO_HEADROOM}
    counts = {"workers_now": plan.workers_now, "recommended_workers": plan.recommended_workers}
    ratio = _num(plan.least_headroom.ratio) if plan.least_headroom else None
    return {
        "workers_advice": workers_text(counts),
        "workers_advised": plan.recommended_workers,
        "binding_limit": plan.binding_limit,
        "binding": binding_label(plan.binding_limit),
        "binding_text": plan.binding_text,
        "demand_per_s": _num(plan.demand_per_s),
        "headline": plan.headline,
        "headroom": headroom_words(ratio, plan.headroom_limit),
        # the sort key: a binding limit without a measured ceiling first (it binds), then
        # the least headroom; none last (the grid's comparator, byHeadroom)
        "headroom_ratio": 0.0 if plan.headroom_limit is not None and ratio is None else ratio,
        "headroom_tip": " ".join(t for t in (plan.headroom_text or NO_HEADROOM,
                                             f"Binding now: {plan.binding_text}.") if t),
    }


def overview_rows(
    snapshot: Snapshot, sparks: Mapping[str, str] | None = None,
    advice: FleetAdvice | None = None, peaks: Mapping[str, float] | None = None,
    range_s: float = SPARK_RANGE_S,
) -> list[dict[str, Any]]:
    """Grid rows (JSON-safe: None for missing, never NaN), most severe verdict first.

    ``sparks``: {queue: sparkline text}; a queue without one shows "no data". ``advice``:
    the advisor's verdicts and plans; the status cell lists the verdict kinds in the
    advisor's order. ``peaks``: {queue: peak depth} for the sparkline's tooltip. The name is
    kept as plain text (``queue_name``) with its link target (``queue_href``) beside it."""
    sparks = sparks or {}
    peaks = peaks or {}
    by_queue = {qa.queue: qa for qa in advice.queues} if advice is not None else {}
    rank = {s: i for i, s in enumerate(SEVERITY_ORDER)}
    rows: list[dict[str, Any]] = []
    for q in snapshot.queues:
        qa = by_queue.get(q.queue)
        found = qa.verdicts if qa is not None else ()
        severity = found[0].severity if found else NO_VERDICT
        plan = _plan_cells(qa)
        summary = plan.pop("headline") or ". ".join(v.headline for v in found[:2])
        peak = peaks.get(q.queue)
        rows.append({
            "queue_name": q.queue,
            "queue_href": queue_href(q.queue),
            "status": ", ".join(KIND_WORDS[v.kind] for v in found) or NO_VERDICT,
            "severity": severity,
            "severity_rank": rank[severity],
            "verdict_summary": summary,
            "verdict_tip": (f"{summary} — {', '.join(v.kind for v in found)}" if summary
                            else ", ".join(v.kind for v in found) or NO_VERDICT),
            **plan,
            "arrival_rate_per_s": _num(q.arrival_rate_per_s),
            "throughput_per_s": _num(q.throughput_per_s),
            "utilization_pct": None if q.utilization is None else _num(100 * q.utilization, 1),
            "busy_workers": _num(q.busy_workers, 2),
            "workers": _num(q.workers, 0),
            "depth_current": _num(q.depth_current, 1),
            "sparkline": sparks.get(q.queue, NO_DATA),
            "depth_peak": peak,
            "sparkline_tip": (f"peak depth {sig(peak)} items over the last "
                              f"{describe_duration(range_s)}" if peak is not None
                              else "no depth history"),
            "queue_wait_p95_s": _num(q.queue_wait_p95_s, 4),
            "queue_wait_p95_text": snapshot_quantile_text(q, "queue_wait_p95_s", compact=True),
            "work_p95_s": _num(q.work_p95_s, 4),
            "work_p95_text": snapshot_quantile_text(q, "work_p95_s", compact=True),
            "retries_per_s": _num(q.retries_per_s),
            "errors_per_s": _num(q.errors_per_s),
            "api_calls_per_s": _num(q.api_calls_per_s, 2),
        })
    for row in rows:
        row.update(cell_texts(row))
    rows.sort(key=lambda r: (r["severity_rank"], r["queue_name"]))
    return rows


def summary_line(snapshot: Snapshot, rows: Sequence[dict[str, Any]],
                 settings: AnalysisSettings | None = None, of: int | None = None) -> str:
    """The fleet's verdicts counted; ``of``: the rows are the part of a fleet of that many
    queues read so far (a streaming cold start), and the line says so."""
    counts = dict.fromkeys(SEVERITY_ORDER, 0)
    for row in rows:
        counts[row["severity"]] += 1
    parts = [f"{n} {s}" for s, n in counts.items() if n]
    when = time.strftime("%H:%M:%S UTC", time.gmtime(snapshot.at))
    described = (settings or AnalysisSettings()).describe()
    if of is not None:
        return (f"Partial: {count_text(len(rows))} of {count_text(of)} queues read so far "
                f"from {snapshot.source} at {when} (plans from the {described}): "
                + ", ".join(parts) + " — the counts grow as the rest is read.")
    return (f"{len(rows)} queues from {snapshot.source} at {when} (plans from the {described}): "
            + ", ".join(parts) + ".")


def load_overview(ctx: AppContext, now: float | None = None
                  ) -> tuple[list[dict[str, Any]], str, str]:
    """(rows, summary sentence, warning/error sentence) from one ``snapshot`` and one
    ``range`` read, made concurrently, whatever the number of queues — an unavailable source
    is a sentence."""
    if ctx.source is None:
        return [], "", "No data source is configured."
    now = ctx.now() if now is None else now
    # the range read runs beside the snapshot (neither needs the other): the refresh waits
    # for the slower of the two, not their sum
    history = in_background(lambda: read_history(ctx, now), "queuelens-overview-range")
    try:
        snapshot = ctx.source.snapshot(now, ctx.window_s)
    except CollectorError as exc:
        return [], "", f"Could not read the queues: {exc}"
    data, history_warning = history()
    notes = [*snapshot.warnings, *([history_warning] if history_warning else [])]
    try:
        advice: FleetAdvice | None = fleet_advice(snapshot, data, ctx.settings,
                                                  source_framework(ctx.source),
                                                  source_poll_periods(ctx.source))
    except (ModelInputError, CollectorError) as exc:
        advice = None
        notes.append(f"No advisor verdicts: {exc}")
    rows = fleet_rows(snapshot, data, advice, ctx.settings.range_s)
    return rows, summary_line(snapshot, rows, ctx.settings), "; ".join(notes)


def fleet_rows(snapshot: Snapshot, data: RangeData | None, advice: FleetAdvice | None,
               range_s: float) -> list[dict[str, Any]]:
    """The grid's rows of a whole read: the snapshot's queues, their sparklines on the
    scale of the queues shown, their plans."""
    shown = {q.queue for q in snapshot.queues}
    sparks = sparklines(data, only=shown) if data is not None else {}
    peaks = depth_peaks(data, only=shown) if data is not None else {}
    return overview_rows(snapshot, sparks, advice, peaks, range_s)


# --- the streaming cold start (dashboard.streaming) -------------------------------------------

STREAM_POLL_MS = 1000
"""How often a page polls while the cold start streams (a batch of 250 queues lands every
1–2 s at 10,000 queues)."""


def _plan(ctx: AppContext) -> Callable[[Snapshot, RangeData], FleetAdvice]:
    """The plans of one batch, as :func:`load_overview` plans the whole fleet."""
    framework = source_framework(ctx.source)
    periods = source_poll_periods(ctx.source) if ctx.source is not None else {}

    def plan(snapshot: Snapshot, data: RangeData) -> FleetAdvice:
        return advise_data(snapshot, data, ctx.settings, framework=framework,
                           poll_periods=periods)
    return plan


@dataclass
class _BatchRows:
    rows: list[dict[str, Any]]
    """The batch's rows, sparklines not drawn yet (they share the scale of all rows)."""
    queues: list[str]
    table: npt.NDArray[np.float64]
    notes: list[str]


_stream_memo: dict[tuple[int, int], _BatchRows] = {}
"""(job, batch) -> its rows: a poll builds only the rows of the batches new since the last."""
_stream_lock = threading.Lock()
"""Guards :data:`_stream_memo` (the callbacks of several tabs run in threads at once)."""


def _batch_rows(job: int, batch: Any, signal: str | None, range_s: float) -> _BatchRows:
    key = (job, batch.index)
    with _stream_lock:
        got = _stream_memo.get(key)
        if got is not None:
            return got
        if any(k[0] != job for k in _stream_memo):
            _stream_memo.clear()
    shown = {q.queue for q in batch.snapshot.queues}
    queues, table = _depth_table(batch.data, only=shown, signal=signal)
    peaks = {}
    for name, row in zip(queues, table, strict=True):
        finite = row[np.isfinite(row)]
        if finite.size:
            peaks[name] = float(finite.max())
    rows = overview_rows(batch.snapshot, {}, batch.advice, peaks, range_s)
    notes = [*batch.snapshot.warnings, *batch.data.warnings,
             *([batch.note] if batch.note else [])]
    got = _BatchRows(rows, queues, table, notes)
    with _stream_lock:
        _stream_memo[key] = got
    return got


RESEND_GROWTH = 1.5
"""While a cold start streams, a page is sent its rows again only once the queues read have
grown by half since the rows it has (and when the stream ends): every row is resent each time
(the sparklines share one scale, which grows), and resending them at every batch came to about
100 MB over a 10,000-queue stream; growing by half, a page receives at most three times the
final rows in all."""


def resend(p: Progress, shown: str | None) -> bool:
    """Whether a page that shows the publication ``shown`` (``job:version:queues read``, None:
    nothing yet) is sent the rows of ``p`` now (:data:`RESEND_GROWTH`)."""
    job, version, done = (shown or "::").split(":")[:3]
    if job != str(p.job) or not done.isdigit():
        return True
    if version == str(p.version):
        return False  # no new batch since this page's last poll
    return not p.running or p.done >= RESEND_GROWTH * max(1, int(done))


@dataclass(frozen=True)
class StreamView:
    """What the overview shows of a streaming cold start."""

    key: str
    """Which publication of which job (a page that shows it already is not sent it again)."""
    rows: list[dict[str, Any]]
    summary: str
    error: str
    scale: str
    progress: str
    """The progress line ('' once finished)."""


def stream_view(p: Progress, settings: AnalysisSettings) -> StreamView:
    """Rows, summary, notes, scale and progress line of a job's publication: the batches'
    rows while it streams, the whole read's (as :func:`load_overview` makes them) once it is
    done."""
    global _memo
    key = f"{p.job}:{p.version}"
    if p.finished and p.advice is not None and p.snapshot is not None and p.data is not None:
        # the normal refresh after the stream gets these objects from the cache: no re-plan
        _memo = (p.snapshot, p.data, settings, p.advice)
        with _stream_lock:
            _stream_memo.clear()
        rows = fleet_rows(p.snapshot, p.data, p.advice, settings.range_s)
        return StreamView(key, rows, summary_line(p.snapshot, rows, settings),
                          "; ".join([*p.snapshot.warnings, *p.data.warnings]),
                          rows_scale(rows), "")
    signal = spark_signal({n for b in p.batches for n in b.data.signals})
    parts = [_batch_rows(p.job, b, signal, settings.range_s) for b in p.batches]
    rows = [dict(r) for part in parts for r in part.rows]
    notes: list[str] = []
    for part in parts:
        notes += [n for n in part.notes if n not in notes]
    if p.error is not None:
        notes.insert(0, p.error if p.total is not None else f"Could not list the queues: "
                     f"{p.error}")
    if parts and signal is not None:
        names = [q for part in parts for q in part.queues]
        texts = sparklines_text(np.concatenate([part.table for part in parts]), SPARK_WIDTH,
                                log_floor=SPARK_FLOOR)
        sparks = {q: t for q, t in zip(names, texts, strict=True) if t}
        for row in rows:
            row["sparkline"] = sparks.get(row["queue_name"], NO_DATA)
    rows.sort(key=lambda r: (r["severity_rank"], r["queue_name"]))
    total = p.total or 0
    partial = not p.finished
    summary = scale = ""
    if p.batches:
        summary = summary_line(p.batches[0].snapshot, rows, settings,
                               of=total if partial else None)
        scale = rows_scale(rows)
        if partial and scale:
            scale += (f" Partial: the peak of the {count_text(len(rows))} queues read so far;"
                      " the scale may grow as the rest is read.")
    return StreamView(key, rows, summary, "; ".join(notes), scale,
                      p.text())


def progress_children(p: Progress) -> list[Any]:
    """The progress line and, while it runs, the bar of the queues read (nothing once the
    stream ended)."""
    text = p.text()
    if not text:
        return []
    line = html.Span(text, id="overview-progress-text")
    if not p.running:
        return [line]
    label: dict[str, Any] = {"aria-label": "queues read"}
    return [line, html.Progress(value=str(p.done), max=str(max(1, p.total or 0)),
                                className="ql-stream-bar", **label)]


SEVERITY_ORDER: tuple[str, ...] = (*SEVERITIES, NO_VERDICT)

_SEVERITY_STYLE = {
    "critical": ("#b3261e", "#ffffff"),
    "warning": ("#e69f00", "#1c1f24"),
    "info": ("#dbe9f6", "#0b3d6b"),
    "ok": ("#d7efe1", "#14532d"),
    NO_VERDICT: ("#e5e7eb", "#374151"),
}

_MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"
QUEUE_WIDTH = 150
"""Width of the (pinned) name column; a longer name ends in an ellipsis, its tooltip is whole."""

HEADER_CHAR_PX = 7.5
"""Width of one character of a 13 px bold header (DejaVu Sans, the widest of the fonts the
page falls back to), with a margin."""
HEADER_PAD_PX = 20
"""A header's padding, its sort arrow and its filter button's room."""


def _fit_header(header: str, min_width: int) -> int:
    """The column's minimum width: at least its longest header word, so a header can wrap
    between words but never inside one (queuelens.css has no mid-word break)."""
    longest = max(len(w) for w in header.split())
    return max(min_width, round(longest * HEADER_CHAR_PX + HEADER_PAD_PX))


def _number(field: str, header: str, min_width: int, tip: str = "") -> dict[str, Any]:
    """A number column: sorted and filtered on the number, shown as the one formatter wrote
    it (``<field>_text``, :mod:`models.formatting`: '15.1', '8,330', '73 %', '< 0.001')."""
    min_width = _fit_header(header, min_width)
    # numbers filter from the header's filter button (greater than, between…), which
    # queuelens.css overlays on hover: a floating filter or a permanent button in every
    # narrow header would take the room the grid needs to fit
    col: dict[str, Any] = {"field": field, "headerName": header, "minWidth": min_width,
                           "flex": min_width, "type": "rightAligned",
                           "filter": "agNumberColumnFilter", "cellDataType": "number",
                           "valueFormatter": {"function": f"params.data ? params.data.{field}"
                                              "_text : ''"}}
    if tip:
        col["headerTooltip"] = tip
    return col


P95_MIN_WIDTH = 90
"""A p95 cell's widest text, '0.01–0.1 s' (a decade bucket in its compact form), in 13 px."""


def _quantile(field: str, header: str, tip: str) -> dict[str, Any]:
    """A p95 column: sorted and filtered on the number, shown as its bucket allows
    (``<field minus _s>_text``, :func:`dashboard.numbers.quantile_text` in its compact form)."""
    col = _number(field, header, P95_MIN_WIDTH, tip)
    text = field.removesuffix("_s") + "_text"
    col["valueFormatter"] = {"function": f"params.data ? params.data.{text} : ''"}
    col["tooltipField"] = text
    return col


_CELL_TEXT: dict[str, Callable[[float | None], str]] = {
    "arrival_rate_per_s": lambda v: _blank(v, sig), "demand_per_s": lambda v: _blank(v, sig),
    "throughput_per_s": lambda v: _blank(v, sig), "workers": lambda v: _blank(v, count_text),
    "busy_workers": lambda v: _blank(v, sig),
    "utilization_pct": lambda v: _blank(None if v is None else v / 100, percent_text),
    "depth_current": lambda v: _blank(v, sig), "retries_per_s": lambda v: _blank(v, sig),
    "errors_per_s": lambda v: _blank(v, sig), "api_calls_per_s": lambda v: _blank(v, sig),
}
"""The text of each number cell (the header carries the unit: 'adds /s', 'busy %')."""


def _blank(value: float | None, write: Callable[[float], str]) -> str:
    return "" if value is None else write(value)


def cell_texts(row: Mapping[str, Any]) -> dict[str, str]:
    """``{<field>_text: text}`` of a row's number cells, by the one formatter."""
    return {f"{field}_text": write(row.get(field)) for field, write in _CELL_TEXT.items()}


def _text(field: str, header: str, min_width: int, tip: str = "") -> dict[str, Any]:
    min_width = _fit_header(header, min_width)
    col: dict[str, Any] = {"field": field, "headerName": header, "minWidth": min_width,
                           "flex": min_width, "filter": "agTextColumnFilter",
                           "floatingFilter": True, "cellDataType": "text"}
    if tip:
        col["headerTooltip"] = tip
    return col


def column_defs(range_s: float = SPARK_RANGE_S) -> list[dict[str, Any]]:
    """The grid's columns, in groups. Every cell is text or a number: the only renderer is
    ``QueueLink`` (a text link), no column is Markdown or HTML."""
    queue = _text("queue_name", "queue", 120, "the queue's name (workqueue_* {name}); click "
                  "it for the queue's history, model fit and what-if")
    # pinned (stays in view if a narrow window scrolls): pinned columns do not flex
    queue.update(cellRenderer="QueueLink", pinned="left", lockPinned=True, width=QUEUE_WIDTH,
                 flex=None, tooltipField="queue_name")
    verdict = _text("status", "verdict", 130,
                    "the advisor's verdicts, most important first; the colour is the first "
                    "verdict's severity (critical, warning, info, ok). Hover a cell for the "
                    "verdict in words; the queue page has the evidence")
    verdict.update(
        tooltipField="verdict_tip", wrapText=True, autoHeight=True,
        # the column sorts by severity (then by the verdicts' text), not alphabetically
        comparator={"function": "bySeverity"},
        cellStyle={"styleConditions": [
            {"condition": f"params.data.severity == '{sev}'",
             "style": {"backgroundColor": bg, "color": fg, "fontWeight": "700"}}
            for sev, (bg, fg) in _SEVERITY_STYLE.items()]},
    )
    workers = _text("workers_advice", "plan c", 60,
                    "the capacity plan's worker count: now → recommended (one number: keep it)")
    workers.update(floatingFilter=False, filter=False, cellStyle={"textAlign": "right"})
    limit = _text("headroom", "headroom", 88,
                  "how far the demand can grow before the nearest limit binds, and which "
                  "(its measured ceiling ÷ the design demand; under 1× its peaks are over "
                  "it; 'binds' where the binding limit's ceiling is not measured). Sorted "
                  "ascending: the queues nearest a limit first; hover a cell for the "
                  "ceiling and what binds now")
    limit.update(tooltipField="headroom_tip", wrapText=True, autoHeight=True,
                 comparator={"function": "byHeadroom"})
    spark = _text("sparkline", f"last {describe_duration(range_s)} (log)", 172,
                  f"queue depth over the last {describe_duration(range_s)}, on ONE "
                  f"logarithmic scale shared by all queues: the lowest block is ≤ "
                  f"{sig(SPARK_FLOOR)} items, the full block the fleet's peak "
                  "(stated under the table); a blank is a missing sample")
    spark.update(sortable=False, filter=False, floatingFilter=False, maxWidth=220,
                 tooltipField="sparkline_tip",
                 cellStyle={"fontFamily": _MONO, "fontSize": "12px", "letterSpacing": "-1px",
                            "color": "#0072B2", "whiteSpace": "pre"})
    return [
        queue,
        {"headerName": "Advice", "children": [verdict, workers, limit]},
        {"headerName": "Demand", "children": [
            _number("arrival_rate_per_s", "adds /s", 54,
                    "distinct adds after coalescing (workqueue_adds_total)"),
            _number("demand_per_s", "design /s", 60,
                    "the design demand the capacity plan sizes the workers for"),
            _number("throughput_per_s", "done /s", 54,
                    "completed passes per second (workqueue_work_duration_seconds_count)"),
        ]},
        {"headerName": "Workers", "children": [
            _number("workers", "c", 36, "worker count (MaxConcurrentReconciles or config)"),
            _number("busy_workers", "busy", 46, "time-average busy workers (Little's law)"),
            _number("utilization_pct", "busy %", 52, "time-average busy workers ÷ worker "
                    "count"),
        ]},
        {"headerName": "Backlog", "children": [
            _number("depth_current", "depth", 58, "items waiting now (workqueue_depth)"),
            spark,
        ]},
        {"headerName": "p95", "headerTooltip": "95th percentiles from the histograms, as far "
         "as their buckets tell: a decade bucket is shown as its range (0.1–1 s), the +Inf "
         "bucket as '> 10 s'; sorted by the interpolated value",
         "children": [
             _quantile("queue_wait_p95_s", "wait", "queue wait p95: time before a worker "
                       "picks the item up (workqueue_queue_duration_seconds)"),
             _quantile("work_p95_s", "work", "work p95: reconcile duration "
                       "(workqueue_work_duration_seconds)"),
         ]},
        {"headerName": "Failures & API /s", "children": [
            _number("retries_per_s", "retry", 50, "delayed re-adds per second, planned "
                    "requeues included (workqueue_retries_total): not a failure count"),
            _number("errors_per_s", "error", 50, "reconcile errors per second"),
            _number("api_calls_per_s", "API", 50, "rest_client_requests_total of the whole "
                    "process, shared by every controller in it"),
        ]},
    ]


# --- the grid's sort and filter in the address ------------------------------------------------

MAX_STATE_CHARS = 2000
"""The longest ``sort`` or ``filter`` query value read (user input in the address)."""
_TEXT_TYPES = frozenset({"contains", "notContains", "equals", "notEqual", "startsWith",
                         "endsWith", "blank", "notBlank"})
_NUMBER_TYPES = frozenset({"equals", "notEqual", "greaterThan", "greaterThanOrEqual",
                           "lessThan", "lessThanOrEqual", "inRange", "blank", "notBlank"})


@dataclass(frozen=True)
class GridState:
    """The grid's sort (``[(column, 'asc'|'desc')]``, first key first) and AG Grid filter
    model read from the address, and a sentence for what was dropped."""

    sort: tuple[tuple[str, str], ...] = ()
    filters: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    note: str = ""


def _leaf_fields(range_s: float = SPARK_RANGE_S) -> dict[str, str]:
    """{field: 'text'|'number'} of every grid column."""
    out: dict[str, str] = {}

    def walk(cols: Sequence[Mapping[str, Any]]) -> None:
        for c in cols:
            if "children" in c:
                walk(c["children"])
            else:
                out[c["field"]] = ("number" if c.get("filter") == "agNumberColumnFilter"
                                   else "text")
    walk(column_defs(range_s))
    return out


def _one_filter(kind: str, model: Any) -> Mapping[str, Any] | None:
    """A column's filter model if it is one the grid's own filters could have made."""
    if not isinstance(model, dict) or model.get("filterType") != kind:
        return None
    allowed = _TEXT_TYPES if kind == "text" else _NUMBER_TYPES
    if model.get("type") not in allowed:
        return None
    out: dict[str, Any] = {"filterType": kind, "type": model["type"]}
    for key in ("filter", "filterTo"):
        value = model.get(key)
        if value is None:
            continue
        text_ok = kind == "text" and isinstance(value, str) and len(value) <= 200
        number_ok = (kind == "number" and isinstance(value, int | float)
                     and not isinstance(value, bool) and math.isfinite(value))
        if text_ok or number_ok:
            out[key] = value
        else:
            return None
    return out


def parse_grid_state(sort: object = None, filters: object = None) -> GridState:
    """``?sort=status:asc,demand_per_s:desc&filter=<AG Grid filter model as JSON>``: what
    the grid writes to the address (GRID_STATE_TO_ADDRESS_JS), read back on load; an unknown
    column, a bad direction, a filter the grid could not have made or an over-long value is
    dropped, and the note says so in one sentence."""
    fields = _leaf_fields()
    dropped: list[str] = []
    order: list[tuple[str, str]] = []
    if isinstance(sort, str) and sort:
        if len(sort) > MAX_STATE_CHARS:
            dropped.append("the sort (too long)")
        else:
            for part in sort.split(","):
                name, _, direction = part.partition(":")
                if name in fields and direction in ("asc", "desc") and name not in dict(order):
                    order.append((name, direction))
                else:
                    dropped.append(f"the sort {part[:40]!r}")
    model: dict[str, Mapping[str, Any]] = {}
    if isinstance(filters, str) and filters:
        parsed: Any = None
        if len(filters) <= MAX_STATE_CHARS:
            with contextlib.suppress(ValueError):
                parsed = json.loads(filters)
        if not isinstance(parsed, dict):
            dropped.append("the filter (not a filter the grid writes)")
        else:
            for name, one in parsed.items():
                kept = _one_filter(fields.get(name, ""), one) if name in fields else None
                if kept is None:
                    dropped.append(f"the filter on {str(name)[:40]!r}")
                else:
                    model[name] = kept
    note = ("Not applied from the address: " + ", ".join(dropped) + "; the grid shows "
            "the rest.") if dropped else ""
    return GridState(tuple(order), model, note)


GRID_STATE_TO_ADDRESS_JS = """
function(columnState, filterModel) {
    // the grid's sort and filter into the address, without a reload or a history entry
    const params = new URLSearchParams(window.location.search);
    const sorted = (columnState || []).filter(c => c.sort)
        .sort((a, b) => (a.sortIndex || 0) - (b.sortIndex || 0))
        .map(c => c.colId + ':' + c.sort);
    if (sorted.length) { params.set('sort', sorted.join(',')); } else { params.delete('sort'); }
    const model = filterModel || {};
    if (Object.keys(model).length) { params.set('filter', JSON.stringify(model)); }
    else { params.delete('filter'); }
    const query = params.toString();
    window.history.replaceState(window.history.state, '',
        window.location.pathname + (query ? '?' + query : '') + window.location.hash);
    return query;
}
"""


def grid(range_s: float = SPARK_RANGE_S, state: GridState | None = None) -> Any:
    """The overview grid (no rows yet: the refresh callback fills ``rowData``), sorted and
    filtered as ``state`` (the address) says."""
    state = state or GridState()
    defs = column_defs(range_s)
    rank = {name: (i, direction) for i, (name, direction) in enumerate(state.sort)}

    def apply(cols: list[dict[str, Any]]) -> None:
        for c in cols:
            if "children" in c:
                apply(c["children"])
            elif c.get("field") in rank:
                c["sortIndex"], c["sort"] = rank[c["field"]]
    apply(defs)
    extra: dict[str, Any] = {"filterModel": dict(state.filters)} if state.filters else {}
    return dag.AgGrid(
        id=GRID_ID,
        columnDefs=defs,
        **extra,
        defaultColDef={"sortable": True, "resizable": True, "wrapHeaderText": True,
                       "autoHeaderHeight": True},
        getRowId="params.data.queue_name",
        dashGridOptions={
            # compact: 17 columns in a 1400 px window (cell padding 7 px, not 16 px)
            "theme": {"function": "themeQuartz.withParams({spacing: 5, fontSize: 13, "
                                  "headerFontSize: 13, fontFamily: 'inherit', "
                                  "headerFontWeight: 700, cellHorizontalPaddingScale: 0.7})"},
            "domLayout": "autoHeight",
            "pagination": True,
            "paginationPageSize": 50,
            "paginationPageSizeSelector": [50, 100, 250],
            "tooltipShowDelay": 300,
            "enableCellTextSelection": True,
            "ensureDomOrder": True,
            "suppressColumnVirtualisation": True,
            "animateRows": False,
        },
        dangerously_allow_code=False,
        style={"width": "100%"},
    )


def layout(range_s: float = SPARK_RANGE_S, **kwargs: object) -> html.Div:
    state = parse_grid_state(kwargs.get("sort"), kwargs.get("filter"))
    live: dict[str, Any] = {"aria-live": "polite"}
    return html.Div(
        [
            html.H1("Fleet overview: which queues are falling behind?"),
            html.P(
                "One row per work queue. Click a header to sort (shift-click for several); "
                "type under queue, verdict or headroom to filter them, or hover a number's "
                "header for its filter (greater than, between…); click a queue for its "
                "history, model fit and what-if.",
                className="ql-muted",
            ),
            html.Div(id="overview-progress", className="ql-stream", role="status",
                     **live),
            html.Div(id="overview-summary", className="ql-readout"),
            html.Div(id="overview-error", className="ql-error", role="alert"),
            html.P(state.note, id="overview-state-note", className="ql-note"),
            html.Div([grid(range_s, state),
                      html.Div(id="overview-scale", className="ql-muted ql-small")],
                     className="ql-card"),
            dcc.Interval(id="overview-refresh", interval=15_000),
            dcc.Store(id="overview-address"),  # the query last written (GRID_STATE_…_JS)
            dcc.Store(id="overview-shown"),  # the stream publication this page shows
        ]
    )


def register(app: dash.Dash, ctx: AppContext) -> None:
    def page_layout(**kwargs: object) -> html.Div:
        return layout(ctx.settings.range_s, **kwargs)

    register_page(__name__, path=PATH, name="Fleet", title="Fleet · queuelens", order=0,
                  layout=page_layout)

    cold = (ColdStart(ctx.source, ctx.settings, StreamSettings.from_env(),
                      retry_s=ctx.refresh_s)
            if isinstance(ctx.source, CachedSource) else None)
    extensions = getattr(app.server, "extensions", {}).get("queuelens")
    if isinstance(extensions, dict):
        extensions["cold_start"] = cold  # one per app; tests and shutdown reach it here
    plan = _plan(ctx)
    signals = HISTORY_SIGNALS | set(SPARK_SIGNALS)

    @app.callback(
        Output(GRID_ID, "rowData"),
        Output("overview-summary", "children"),
        Output("overview-error", "children"),
        Output("overview-scale", "children"),
        Output("overview-refresh", "interval"),
        Output("overview-progress", "children"),
        Output("overview-shown", "data"),
        Input("overview-refresh", "n_intervals"),
        State("overview-shown", "data"),
    )
    def _refresh(_n: int | None, shown: str | None) -> tuple[Any, ...]:
        progress = cold.poll(ctx.now(), signals, plan) if cold is not None else None
        if progress is None:
            with ctx.refresh_budget():  # the snapshot and the range read share one budget
                rows, summary, error = load_overview(ctx)
            return (rows, summary, error, rows_scale(rows), int(ctx.refresh_s * 1000), [],
                    None)
        interval = STREAM_POLL_MS if progress.running else int(ctx.refresh_s * 1000)
        if not resend(progress, shown):  # the time left only
            return (dash.no_update,) * 4 + (interval, progress_children(progress),
                                            dash.no_update)
        view = stream_view(progress, ctx.settings)
        return (view.rows, view.summary, view.error, view.scale, interval,
                progress_children(progress), f"{view.key}:{progress.done}")

    clientside_callback(
        app, GRID_STATE_TO_ADDRESS_JS,
        Output("overview-address", "data"),
        Input(GRID_ID, "columnState"),
        Input(GRID_ID, "filterModel"),
        prevent_initial_call=True,
    )
