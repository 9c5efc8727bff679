"""Pure Plotly figure builders for the dashboard: data in, a plain figure dict out.

No I/O, no Dash, no model calls: pages compute with :mod:`models` and hand the numbers here.
A figure is :data:`Figure`, ``{"data": [trace, ...], "layout": {...}}`` of plain JSON values
(str, int, float, None, bool, lists and dicts; times as ISO 8601 UTC strings) — what
``dcc.Graph(figure=...)`` and ``Plotly.newPlot`` take. The builders compose these dicts
directly instead of building ``plotly.graph_objects.Figure`` objects, whose validation costs
~20 ms per figure (issue 9); the output is exactly what ``go.Figure(...).to_plotly_json()``
gave for the same chart (``tests/dashboard/test_figures_plain.py`` checks it against Plotly's
schema).

Every chart has a title that says what it answers and units on both axes. Text that may carry
a label value (queue names, label values) goes through :func:`plotly_text`, because Plotly
renders a subset of HTML (``<b>``, ``<a href>``...) in trace names, hover text and titles.
"""

from __future__ import annotations

import datetime as dt
import functools
import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dashboard.signals import Series
from models.formatting import HOVER_Y, number_text, sig

Figure = dict[str, Any]
"""A Plotly figure as plain data: ``{"data": [trace dicts], "layout": {...}}``."""

# Okabe–Ito palette: distinguishable with the common colour-vision deficiencies.
BLUE = "#0072B2"
ORANGE = "#E69F00"
VERMILLION = "#D55E00"
GREEN = "#009E73"
SKY = "#56B4E9"
PURPLE = "#CC79A7"
GREY = "#6b7480"

_FONT_FAMILY = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"
_AXIS_LINE = "#9aa3ad"


def plotly_text(value: object) -> str:
    """HTML-escape a label value for Plotly text (trace names, hover, titles, annotations)."""
    return html.escape(str(value), quote=True)


@functools.cache
def plotly_white_template() -> Mapping[str, Any]:
    """Plotly's ``plotly_white`` template as plain data (computed once, shared by every
    figure's ``layout.template``: read it, never change it)."""
    import plotly.io as pio

    template: dict[str, Any] = pio.templates["plotly_white"].to_plotly_json()
    return template


MODEBAR_REMOVE: tuple[str, ...] = ("zoomIn2d", "zoomOut2d", "autoScale2d", "lasso2d",
                                   "select2d")
"""Mode-bar buttons left out (mouse wheel and double-click do the same); what stays — save as
PNG, zoom, pan, reset — is short enough to stand in a column at the right edge."""
MODEBAR_MARGIN_PX = 40
"""Right margin kept free for the vertical mode bar (~28 px of buttons), so it never covers the
title, a legend entry or the plot (``dcc.Graph`` shows it on hover)."""
TITLE_PAD_PX = 10
LEGEND_Y = 0.0
"""Legends sit at the bottom edge of the figure (``yref="container"``): Plotly then reserves
that height below the axis, so the x title ("time (UTC)") is laid out above the legend instead
of under it, whatever the chart's height and however many rows the legend wraps to."""


def base_figure(title: str, x_title: str, y_title: str) -> Figure:
    """An empty figure with the shared look: light card background, titled axes with units.

    The chrome is laid out so nothing overlaps at any size: the title is left-aligned in the
    top margin (``automargin``: the plot starts below it); the mode bar is vertical in a right
    margin of its own (:data:`MODEBAR_MARGIN_PX`); both axes have ``automargin``, so long tick
    labels push the axis titles out instead of being drawn under them; the legend is
    horizontal at the bottom of the container (:data:`LEGEND_Y`), below the x title.

    ``uirevision`` is the title: while it stays the same, Plotly keeps what the user did to
    the chart (zoom, pan, hidden legend entries) when the page sends a refreshed figure;
    pages key it to what the chart shows with :func:`set_uirevision`.
    """
    return {
        "data": [],
        "layout": {
            "uirevision": title,
            "template": plotly_white_template(),
            "title": {"text": title, "x": 0.0, "xanchor": "left", "xref": "container",
                      "y": 1.0, "yanchor": "top", "yref": "container", "automargin": True,
                      "pad": {"t": TITLE_PAD_PX, "l": TITLE_PAD_PX}, "font": {"size": 16}},
            "font": {"family": _FONT_FAMILY, "size": 13},
            "margin": {"l": 16, "r": MODEBAR_MARGIN_PX, "t": 16, "b": 8},
            "legend": {"orientation": "h", "x": 0.0, "xanchor": "left", "y": LEGEND_Y,
                       "yanchor": "bottom", "yref": "container"},
            "modebar": {"orientation": "v", "remove": list(MODEBAR_REMOVE)},
            "hovermode": "x unified",
            "paper_bgcolor": "#ffffff",
            "plot_bgcolor": "#ffffff",
            "xaxis": {"title": {"text": x_title}, "showline": True, "linecolor": _AXIS_LINE,
                      "zeroline": False, "automargin": True},
            "yaxis": {"title": {"text": y_title}, "showline": True, "linecolor": _AXIS_LINE,
                      "rangemode": "tozero", "automargin": True},
        },
    }


def set_uirevision(fig: Figure, *view: str) -> Figure:
    """Key the chart's kept zoom to ``view`` (e.g. the queue and the history range): a
    refreshed figure of the same view keeps the user's zoom, a figure of another view starts
    from its own axes (Plotly resets what the user did when ``layout.uirevision`` changes).

    The key is a short digest of the chart's title and ``view`` (a string, as Plotly
    compares it by value; a queue name may be long)."""
    import hashlib

    title = str(fig["layout"].get("title", {}).get("text", ""))
    text = "\x1f".join((title, *view))
    fig["layout"]["uirevision"] = hashlib.blake2s(text.encode("utf-8", "replace"),
                                                  digest_size=8).hexdigest()
    return fig


# --- plain-dict counterparts of go.Figure's add_vline, add_hline, ... -----------------------

def _shape(fig: Figure, shape: dict[str, Any]) -> None:
    fig["layout"].setdefault("shapes", []).append(shape)


TEXT_SHADE: Mapping[str, str] = {GREEN: "#007a58", ORANGE: "#9a6700", VERMILLION: "#b34f00"}
"""The darker shade of a line's colour its label is written in: the Okabe–Ito green, orange
and vermillion are 3.4, 2.3 and 3.9 to 1 on white, under WCAG AA's 4.5; these are 5.4, 4.9
and 5.2 (the dark theme's chart_theme.js lightens any label under 4.5 on its background)."""


def add_annotation(fig: Figure, annotation: dict[str, Any]) -> None:
    """Add ``annotation``; a label in a line colour is written in its readable shade."""
    font = annotation.get("font")
    if isinstance(font, dict) and font.get("color") in TEXT_SHADE:
        annotation = {**annotation, "font": {**font, "color": TEXT_SHADE[font["color"]]}}
    fig["layout"].setdefault("annotations", []).append(annotation)


# where go.Figure.add_vline / add_hline / add_vrect put an annotation_position
_VLINE_TEXT = {"top right": ("left", "top"), "top": ("center", "bottom"),
               "top left": ("right", "top")}
_HLINE_TEXT = {"top left": (0, "left", "bottom"), "top right": (1, "right", "bottom"),
               "bottom right": (1, "right", "top"), "bottom left": (0, "left", "top")}


LABEL_BACKGROUND = "#ffffff"
"""A line's label is written on the paper's colour (the light theme's; chart_theme.js gives
it the dark paper there): a trace or another line that crosses the label — the linear-scaling
line passing the current count's label at the top of the decisive chart — runs behind it
instead of through its letters."""


def add_vline(fig: Figure, x: Any, line: Mapping[str, Any], *, name: str | None = None,
              text: str | None = None, position: str = "top right",
              text_color: str | None = None, text_yshift: float | None = None) -> None:
    """A vertical line across the plot at ``x`` (data coordinates), with an optional
    annotation ``text`` (escape label values with :func:`plotly_text`)."""
    shape: dict[str, Any] = {"type": "line", "x0": x, "x1": x, "xref": "x", "y0": 0, "y1": 1,
                             "yref": "y domain", "line": dict(line)}
    if name is not None:
        shape["name"] = name
    _shape(fig, shape)
    if text is not None:
        xanchor, yanchor = _VLINE_TEXT[position]
        note: dict[str, Any] = {"text": text, "showarrow": False, "x": x, "xanchor": xanchor,
                                "xref": "x", "y": 1, "yanchor": yanchor, "yref": "y domain",
                                "bgcolor": LABEL_BACKGROUND,
                                # clear of its own line (the background would cover it)
                                "xshift": {"left": 2, "right": -2}.get(xanchor, 0)}
        if text_color is not None:
            note["font"] = {"color": text_color}
        if text_yshift is not None:
            note["yshift"] = text_yshift
        add_annotation(fig, note)


def add_hline(fig: Figure, y: float, line: Mapping[str, Any], *, text: str | None = None,
              position: str = "top right", text_color: str | None = None) -> None:
    """A horizontal line across the plot at ``y`` (data coordinates), optionally annotated."""
    _shape(fig, {"type": "line", "x0": 0, "x1": 1, "xref": "x domain", "y0": y, "y1": y,
                 "yref": "y", "line": dict(line)})
    if text is not None:
        x, xanchor, yanchor = _HLINE_TEXT[position]
        note: dict[str, Any] = {"text": text, "showarrow": False, "x": x, "xanchor": xanchor,
                                "xref": "x domain", "y": y, "yanchor": yanchor, "yref": "y",
                                "bgcolor": LABEL_BACKGROUND,
                                "yshift": {"bottom": 2, "top": -2}.get(yanchor, 0)}
        if text_color is not None:
            note["font"] = {"color": text_color}
        add_annotation(fig, note)


def add_vrect(fig: Figure, x0: float, x1: float, *, fillcolor: str, opacity: float,
              text: str | None = None) -> None:
    """A shaded band from ``x0`` to ``x1`` over the plot's height, its ``text`` top left."""
    _shape(fig, {"type": "rect", "x0": x0, "x1": x1, "xref": "x", "y0": 0, "y1": 1,
                 "yref": "y domain", "fillcolor": fillcolor, "opacity": opacity,
                 "line": {"width": 0}})
    if text is not None:
        add_annotation(fig, {"text": text, "showarrow": False, "x": x0, "xanchor": "left",
                             "xref": "x", "y": 1, "yanchor": "top", "yref": "y domain"})


def _scatter(**trace: Any) -> dict[str, Any]:
    return {"type": "scatter", **trace}


def _bar(**trace: Any) -> dict[str, Any]:
    return {"type": "bar", **trace}


def lab_figure(
    steps_t: Sequence[float],
    steps_backlog: Sequence[float],
    predicted_t: Sequence[float],
    predicted_backlog: Sequence[float],
    *,
    clear_time: float | None = None,
) -> Figure:
    """The queue lab: the backlog the lab has stepped through (points, drawn one per Step)
    against the fluid prediction q(t) = max(0, q0 + (λ − μ)·t) (a dashed line).

    ``clear_time`` (if the prediction clears) is marked with a vertical dotted line.
    """
    _same_length("steps", steps_t, steps_backlog)
    _same_length("prediction", predicted_t, predicted_backlog)
    fig = base_figure(
        "Does the backlog follow the fluid prediction?",
        "time t (lab time units; one Step = 1)",
        "backlog (items)",
    )
    fig["data"] += [
        _scatter(
            x=list(predicted_t),
            y=list(predicted_backlog),
            mode="lines",
            name="predicted: max(0, q0 + (λ − μ)·t)",
            line={"color": ORANGE, "width": 2.5, "dash": "dash"},
            hovertemplate="predicted " + HOVER_Y + " items<extra></extra>",
        ),
        _scatter(
            x=list(steps_t),
            y=list(steps_backlog),
            mode="markers",
            name="lab backlog after each step",
            marker={"size": 10, "color": BLUE, "line": {"color": "#ffffff", "width": 1}},
            hovertemplate="lab " + HOVER_Y + " items<extra></extra>",
        ),
    ]
    if clear_time is not None and math.isfinite(clear_time):
        add_vline(fig, clear_time, {"color": GREEN, "width": 1.5, "dash": "dot"},
                  text=f"clears at t = {sig(clear_time)}", position="top right",
                  text_color=GREEN)
    fig["layout"]["xaxis"]["rangemode"] = "tozero"
    return fig


def _same_length(what: str, xs: Sequence[float], ys: Sequence[float]) -> None:
    if len(xs) != len(ys):
        raise ValueError(f"{what}: {len(xs)} times but {len(ys)} values.")


# --- time series (queue detail page) ----------------------------------------------------------



@dataclass(frozen=True)
class Line:
    """One trace of a time-series chart."""

    name: str
    series: Series
    color: str = BLUE
    dash: str = "solid"
    width: float = 2.0
    fill: bool = False
    opacity: float = 1.0
    """Below 1 for a wide line drawn under a thin one it may equal (arrivals under the
    throughput of a queue that keeps up): both stay visible where they coincide."""


def series_points(series: Series, step_s: float) -> tuple[list[dt.datetime], list[float | None]]:
    """Plotly x/y lists for ``series``: times as UTC datetimes; a gap longer than 1.5 steps
    (missing samples) gets a ``None`` so the line breaks there instead of bridging it, and a
    non-finite value becomes ``None`` (never plotted, never 0)."""
    ts, ys = _series_xy(series, step_s)
    return [_utc(t) for t in ts], ys


def series_iso_points(series: Series, step_s: float) -> tuple[list[str], list[float | None]]:
    """:func:`series_points` with the times as the ISO 8601 strings Plotly sends to the
    browser for naive UTC datetimes ("2023-11-14T22:13:20")."""
    ts, ys = _series_xy(series, step_s)
    return [_iso(t) for t in ts], ys


def _series_xy(series: Series, step_s: float) -> tuple[list[float], list[float | None]]:
    ts, vs = series
    _same_length("series", ts, vs)
    xs: list[float] = []
    ys: list[float | None] = []
    prev: float | None = None
    for t, v in sorted(zip(ts, vs, strict=True), key=lambda p: p[0]):
        t = float(t)
        if prev is not None and t - prev > 1.5 * step_s:
            xs.append(prev + step_s)
            ys.append(None)
        xs.append(t)
        value = float(v)
        ys.append(value if math.isfinite(value) else None)
        prev = t
    return xs, ys


def _utc(unix_s: float) -> dt.datetime:
    """Naive UTC datetime (plotly.js date axes have no time zones)."""
    return dt.datetime.fromtimestamp(unix_s, tz=dt.UTC).replace(tzinfo=None)


@functools.lru_cache(maxsize=16384)
def _iso(unix_s: float) -> str:
    """The naive UTC datetime of ``unix_s`` as Plotly's JSON encoder writes it (memoised: the
    charts of one range share their times)."""
    return _utc(unix_s).isoformat()


def no_data_figure(title: str, message: str = "no data") -> Figure:
    """A titled empty chart that says why it is empty (instead of an axis of zeros)."""
    fig = base_figure(title, "", "")
    add_annotation(fig, {"text": plotly_text(message), "x": 0.5, "y": 0.5, "xref": "paper",
                         "yref": "paper", "showarrow": False,
                         "font": {"size": 15, "color": GREY}})
    fig["layout"]["xaxis"]["visible"] = False
    fig["layout"]["yaxis"]["visible"] = False
    return fig


def time_series_figure(
    title: str,
    y_title: str,
    lines: Sequence[Line],
    step_s: float,
    *,
    log_y: bool = False,
    now: float | None = None,
    unit: str = "",
) -> Figure:
    """Lines over UTC time. Lines without points are left out; no line at all → "no data".

    ``now`` (unix s) draws a thin vertical "now" marker (useful with projections). ``unit``:
    the values' unit ("s" for durations), written on a log axis's ticks by the one formatter
    ('100 µs', not Plotly's '100µ')."""
    drawn = [line for line in lines if len(line.series[0]) > 0]
    if not drawn:
        return no_data_figure(title, "no data for this range")
    fig = base_figure(title, "time (UTC)", y_title)
    for line in drawn:
        xs, ys = series_iso_points(line.series, step_s)
        name = plotly_text(line.name)
        trace = _scatter(
            x=xs, y=ys, mode="lines", name=name, connectgaps=False,
            line={"color": line.color, "width": line.width, "dash": line.dash},
            hovertemplate=HOVER_Y + (f" {unit}" if unit else "") + "<extra>" + name
            + "</extra>",
        )
        if line.fill:
            trace["fill"] = "tozeroy"
        if line.opacity < 1:
            trace["opacity"] = line.opacity
        fig["data"].append(trace)
    if log_y:
        fig["layout"]["yaxis"].update(type="log", rangemode="normal")
        ticks = log_ticks(v for line in drawn for v in line.series[1])
        if ticks:
            fig["layout"]["yaxis"].update(tickmode="array", tickvals=ticks,
                                          ticktext=[number_text(v, unit) for v in ticks])
    if now is not None:
        add_vline(fig, _iso(now), {"color": GREY, "width": 1, "dash": "dot"})
    return fig


def log_ticks(values: Iterable[float], *, max_decades: int = 3) -> list[float]:
    """Tick values for a log axis over the positive finite ``values``: 1, 2, 5 of every
    decade they span (only the powers of ten beyond ``max_decades`` decades), each labelled
    in full ("0.5", "2", "10") — Plotly's own log ticks label the in-between ticks with a
    bare digit ("5" under "1" for 0.5), or crowd every digit 2–9 into a short axis.
    No positive value → [] (Plotly's default ticks)."""
    positive = [float(v) for v in values if math.isfinite(float(v)) and float(v) > 0]
    if not positive:
        return []
    low = math.floor(math.log10(min(positive)) + 1e-9)
    high = math.ceil(math.log10(max(positive)) - 1e-9)
    high = max(high, low + 1)
    steps = (1.0,) if high - low > max_decades else (1.0, 2.0, 5.0)
    ticks = [float(f"{m * 10.0 ** e:.12g}") for e in range(low, high + 1) for m in steps]
    return [v for v in ticks if v <= 10.0 ** high]


def depth_figure(
    depth: Series, step_s: float, projection: Series | None = None, now: float | None = None
) -> Figure:
    """Queue depth (items) with the fluid projection of the backlog from now (dashed)."""
    lines = [Line("depth (items waiting)", depth, BLUE, fill=True)]
    if projection is not None and len(projection[0]) > 0:
        lines.append(Line("fluid projection: max(0, q + (λ − c·μ)·t)", projection, ORANGE,
                          "dash", 2.5))
    return time_series_figure("Is the backlog growing or clearing?", "depth (items)", lines,
                              step_s, now=now if projection is not None else None)


def rates_figure(
    arrival: Series, throughput: Series, capacity: Series, step_s: float
) -> Figure:
    """Arrival rate vs throughput vs capacity c·μ on one chart (items/s).

    The arrivals are a wide pale line under the throughput's thin one: a queue that keeps up
    has the two equal, and both stay visible. When the capacity is far above what the queue
    does (more than :data:`CAPACITY_OFF_CHART` × the highest measured rate), the axis fits
    the measured rates and a note states the capacity: a 0–500 axis would flatten 3/s."""
    fig = time_series_figure(
        "Is work arriving faster than it can be done?",
        "rate (items/s)",
        [Line("arrivals λ (adds/s)", arrival, ORANGE, width=6.0, opacity=0.45),
         Line("throughput (completed/s)", throughput, BLUE),
         Line("capacity c·μ = workers ÷ mean work time", capacity, GREEN, "dash")],
        step_s,
    )
    measured = [v for s in (arrival, throughput) for v in s[1]
                if v is not None and math.isfinite(v)]
    cap = [v for v in capacity[1] if v is not None and math.isfinite(v)]
    if measured and cap and max(measured) > 0 and max(cap) > CAPACITY_OFF_CHART * max(measured):
        fig["layout"]["yaxis"]["range"] = [0, 1.5 * max(measured)]
        add_annotation(fig, {
            "text": f"capacity c·μ ≈ {number_text(max(cap), '/s')}: above the chart",
            "showarrow": False, "x": 1, "xref": "x domain", "xanchor": "right", "y": 1,
            "yref": "y domain", "yanchor": "top", "font": {"color": GREEN}})
    return fig


CAPACITY_OFF_CHART = 4.0
"""A capacity more than this many times the measured rates would flatten them to the axis."""


def durations_figure(
    queue_wait: Mapping[str, Series], work: Mapping[str, Series], step_s: float
) -> Figure:
    """Queue wait and work duration quantiles (seconds, log scale); keys like 'p95'."""
    shades = {"p50": 1.2, "p95": 2.2, "p99": 1.2}
    dashes = {"p50": "dot", "p95": "solid", "p99": "dash"}
    lines = [Line(f"queue wait {k}", s, VERMILLION, dashes.get(k, "solid"), shades.get(k, 1.5))
             for k, s in queue_wait.items()]
    lines += [Line(f"work {k}", s, BLUE, dashes.get(k, "solid"), shades.get(k, 1.5))
              for k, s in work.items()]
    return time_series_figure("How long do items wait, and how long does work take?",
                              "duration (log scale)", lines, step_s, log_y=True, unit="s")


def workers_figure(busy: Series, workers: Series, step_s: float) -> Figure:
    """Time-average busy workers vs the worker count c."""
    return time_series_figure(
        "Are the workers saturated?", "workers",
        [Line("busy workers (time average)", busy, BLUE, fill=True),
         Line("max workers c", workers, GREY, "dash")],
        step_s,
    )


def retries_errors_figure(retries: Series, errors: Series, step_s: float) -> Figure:
    """Retries (delayed re-adds) and reconcile errors per second."""
    return time_series_figure(
        "Are reconciles failing and retrying?", "events per second (1/s)",
        [Line("retries/s (workqueue_retries_total)", retries, ORANGE),
         Line("errors/s", errors, VERMILLION)],
        step_s,
    )


API_CLASS_COLORS = {"2xx": GREEN, "4xx": PURPLE, "409": ORANGE, "429": VERMILLION, "5xx": GREY}


def api_calls_figure(by_class: Mapping[str, Series], step_s: float) -> Figure:
    """Kubernetes API requests per second of the process, by response code class."""
    lines = [Line(f"{cls} responses", s, API_CLASS_COLORS.get(cls, SKY))
             for cls, s in by_class.items()]
    return time_series_figure("Which API responses does this controller's process get?",
                              "API requests (1/s)", lines, step_s)


def effects_figure(effects_per_reconcile: Series, step_s: float) -> Figure:
    """External effects (writes to outside systems) per completed reconcile."""
    return time_series_figure(
        "How many external effects does each reconcile cause?",
        "effects per reconcile",
        [Line("external effects ÷ completed reconciles", effects_per_reconcile, PURPLE)],
        step_s,
    )


# --- what-if --------------------------------------------------------------------------------

def _none_if_nonfinite(values: Sequence[float | None]) -> list[float | None]:
    out: list[float | None] = []
    for v in values:
        out.append(None if v is None or not math.isfinite(v) else float(v))
    return out


def whatif_wait_figure(
    workers: Sequence[int],
    wait_mean_s: Sequence[float | None],
    wait_p95_s: Sequence[float | None],
    utilization: Sequence[float],
    *,
    slo_s: float | None = None,
    recommended: int | None = None,
) -> Figure:
    """Mean and p95 wait (left axis, seconds) and utilization (right axis, %) per worker
    count. Unstable worker counts have no wait (None): the line stops there."""
    fig = base_figure("How long will items wait with c workers?", "workers c",
                      "wait in queue (s)")
    xs = list(workers)
    fig["data"] += [
        _scatter(x=xs, y=_none_if_nonfinite(wait_mean_s), name="mean wait",
                 mode="lines+markers", line={"color": BLUE, "width": 2.5},
                 hovertemplate="mean " + HOVER_Y + " s<extra></extra>"),
        _scatter(x=xs, y=_none_if_nonfinite(wait_p95_s), name="p95 wait",
                 mode="lines+markers", line={"color": VERMILLION, "width": 2},
                 hovertemplate="p95 " + HOVER_Y + " s<extra></extra>"),
        _scatter(x=xs, y=[100.0 * u for u in utilization],
                 name="utilization (right axis)", yaxis="y2", mode="lines",
                 line={"color": GREY, "dash": "dot"},
                 hovertemplate="utilization " + HOVER_Y + " %<extra></extra>"),
    ]
    layout = fig["layout"]
    top, dtick = percent_axis([100.0 * u for u in utilization])
    layout["yaxis2"] = {"title": {"text": "utilization λ/(c·μ) (%)"}, "overlaying": "y",
                        "side": "right", "range": [0, top], "tickmode": "linear",
                        "tick0": 0, "dtick": dtick, "ticksuffix": " %", "showgrid": False,
                        "zeroline": False, "automargin": True}
    # the right axis' ticks and title take the right margin; the mode bar needs its own
    layout["margin"]["r"] = RIGHT_AXIS_MARGIN_PX + MODEBAR_MARGIN_PX
    if slo_s is not None:
        add_hline(fig, slo_s, {"color": GREEN, "dash": "dash"},
                  text=f"SLO {number_text(slo_s, 's')}", position="top right",
                  text_color=GREEN)  # left, it met the count labels of a small count
    _mark_recommended(fig, recommended)
    return fig


def whatif_slo_figure(
    workers: Sequence[int],
    p_over_slo: Sequence[float | None],
    *,
    slo_s: float,
    target: float | None = None,
    recommended: int | None = None,
) -> Figure:
    """P(wait > SLO) per worker count (0–1); ``target`` (e.g. 0.05 for a p95 SLO) dashed."""
    fig = base_figure(f"How likely is a wait over the SLO ({number_text(slo_s, 's')})?",
                      "workers c", "P(wait > SLO) (probability)")
    fig["data"].append(_scatter(x=list(workers), y=_none_if_nonfinite(p_over_slo),
                                name="P(wait > SLO)", mode="lines+markers",
                                line={"color": VERMILLION, "width": 2.5},
                                hovertemplate="P = " + HOVER_Y + "<extra></extra>"))
    fig["layout"]["yaxis"]["range"] = [0, 1.02]
    if target is not None:
        add_hline(fig, target, {"color": GREEN, "dash": "dash"},
                  text=f"target ≤ {sig(target)}", position="top right",
                  text_color=GREEN)
    _mark_recommended(fig, recommended)
    return fig


def whatif_throughput_figure(
    workers: Sequence[int],
    capacity_per_s: Sequence[float],
    throughput_per_s: Sequence[float],
    arrival_rate_per_s: float,
    *,
    contention: bool,
    recommended: int | None = None,
) -> Figure:
    """Capacity c·μ_c (USL contention when given) and the throughput the queue would reach,
    against the arrival rate λ (items/s)."""
    title = ("Does adding workers add throughput (with contention)?" if contention
             else "Does adding workers add throughput? (no contention assumed)")
    fig = base_figure(title, "workers c", "items per second (1/s)")
    xs = list(workers)
    fig["data"] += [
        _scatter(x=xs, y=list(capacity_per_s), name="capacity c·μ_c",
                 mode="lines+markers", line={"color": GREEN, "width": 2.5},
                 hovertemplate="capacity " + HOVER_Y + "/s<extra></extra>"),
        _scatter(x=xs, y=list(throughput_per_s), name="throughput",
                 mode="lines", line={"color": BLUE, "width": 2},
                 hovertemplate="throughput " + HOVER_Y + "/s<extra></extra>"),
    ]
    add_hline(fig, arrival_rate_per_s, {"color": ORANGE, "dash": "dash"},
              text=f"arrivals λ = {number_text(arrival_rate_per_s, '/s')}",
              position="top right", text_color=ORANGE)  # below, it sat on the ticks
    _mark_recommended(fig, recommended)
    return fig


RIGHT_AXIS_MARGIN_PX = 72
"""Room for a right axis' tick labels ("150 %") and rotated title."""

PERCENT_DTICKS: tuple[float, ...] = (10.0, 20.0, 25.0, 50.0, 100.0, 200.0, 250.0, 500.0)
"""Round tick steps for a percent axis, smallest first."""


def percent_axis(values_pct: Sequence[float | None], *, at_least: float = 100.0,
                 max_intervals: int = 5) -> tuple[float, float]:
    """(top of the range, tick step) for a 0-based percent axis: ticks at round numbers
    (0 / 20 / … / 100 %, or 0 / 50 / … / 200 % above 100 %) instead of what Plotly's
    auto-ticks make of an overlaying axis (0 / 92.9 / 185.7 %). The range covers the largest
    finite value and ``at_least`` (100 %: the saturation line is always on the axis), rounded
    up to a whole step; steps come from :data:`PERCENT_DTICKS` (×10 beyond them)."""
    finite = [v for v in values_pct if v is not None and math.isfinite(v)]
    peak = max([at_least, *finite])
    scale = 1.0
    while True:
        for step in PERCENT_DTICKS:
            dtick = step * scale
            top = math.ceil(peak / dtick - 1e-9) * dtick
            if top / dtick <= max_intervals:
                return top, dtick
        scale *= 10.0


def _mark_recommended(fig: Figure, recommended: int | None) -> None:
    if recommended is not None:
        add_vline(fig, recommended, {"color": GREEN, "width": 1.5, "dash": "dot"},
                  text=f"recommended c = {recommended}", position="top right",
                  text_color=GREEN)  # inside the plot: above it, it ran into the title


ADVISOR_MARK_NAME = "advisor"
"""``name`` of the vertical line :func:`mark_advisor` draws (tests look it up by name)."""


def mark_advisor(fig: Figure, workers: int | None, label: str = "advisor") -> None:
    """A dashed vertical line at the advisor's recommended worker count (measured demand),
    beside the sweep's own (dotted, green) recommendation for the typed inputs."""
    if workers is not None:
        add_vline(fig, workers, {"color": PURPLE, "width": 2.5, "dash": "dash"},
                  name=ADVISOR_MARK_NAME, text=f"{plotly_text(label)} c = {workers}",
                  position="top right", text_yshift=-18, text_color="#8a3d6b")


# --- sparkline --------------------------------------------------------------------------------

SPARK_BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline_text(values: Sequence[float | None], width: int = 24) -> str:
    """A unicode block sparkline of ``values`` scaled from 0 to their maximum.

    ``values`` are bucketed into ``width`` cells (each cell shows its bucket's largest value);
    a bucket with no finite value is a blank, never a zero bar. All missing → ''."""
    row = np.array([math.nan if v is None else v for v in values], dtype=np.float64)
    return sparklines_text(row.reshape(1, -1), width)[0]


def sparklines_text(table: npt.ArrayLike, width: int = 24, *,
                    log_floor: float | None = None, top: float | None = None) -> list[str]:
    """:func:`sparkline_text` of every row of a (rows × points) table at once (NaN or ±inf =
    missing): bucket maxima by one ``fmax.reduceat``, levels by array arithmetic.

    By default each row is scaled to its own maximum. With ``log_floor`` every row shares ONE
    logarithmic scale instead, so rows can be compared and a depth of 6e-05 does not draw like
    one of 16: a cell at or below ``log_floor`` is the lowest block, ``top`` (default: the
    table's largest finite value, at least 10 × ``log_floor``) is the full block, and the levels
    in between are equal ratios; any cell above the floor is at least the second block."""
    if width < 1:
        raise ValueError(f"width must be at least 1, got {width}.")
    t = np.asarray(table, dtype=np.float64)
    if t.ndim != 2:
        raise ValueError("sparklines need a 2-D table (rows × points)")
    rows, n = t.shape
    if n == 0:
        return [""] * rows
    t = np.where(np.isfinite(t), t, np.nan)
    cells = min(width, n)
    starts = np.array([i * n // cells for i in range(cells)], dtype=np.int64)
    steps = len(SPARK_BLOCKS) - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        buckets = np.fmax.reduceat(t, starts, axis=1)
        has: npt.NDArray[np.bool_] = ~np.isnan(buckets)
        if log_floor is None:
            peak = np.max(np.where(has, buckets, -np.inf), axis=1, keepdims=True)
            scaled = np.maximum(buckets, 0.0) / np.where(peak > 0, peak, 1.0)
            levels = np.where(peak > 0, np.round(scaled * steps), 0.0)
        else:
            if not (math.isfinite(log_floor) and log_floor > 0):
                raise ValueError(f"log_floor must be a positive number, got {log_floor!r}.")
            full = spark_log_top(t, log_floor) if top is None else max(top, log_floor * 10)
            ratio = np.log(np.clip(buckets, log_floor, full) / log_floor)
            levels = np.where(buckets > log_floor,
                              np.maximum(1.0, np.round(steps * ratio / math.log(full / log_floor))),
                              0.0)
    codes = np.where(has, np.nan_to_num(levels).astype(np.int64), len(SPARK_BLOCKS))
    chars = np.array([*SPARK_BLOCKS, " "], dtype=object)[codes]
    any_row = [bool(x) for x in np.any(has, axis=1).tolist()]
    return ["".join(r) if ok else "" for r, ok in zip(chars.tolist(), any_row, strict=True)]


def spark_log_top(table: npt.ArrayLike, log_floor: float) -> float:
    """What the full block stands for on the shared log scale of :func:`sparklines_text`: the
    largest finite value of the table, at least one decade above ``log_floor``."""
    t = np.asarray(table, dtype=np.float64)
    finite = t[np.isfinite(t)]
    peak = float(finite.max()) if finite.size else 0.0
    return max(peak, 10.0 * log_floor)


# --- key trace and retry storm (dashboard/pages/keys.py, dashboard/pages/retries.py) ---------

KEY_QUEUED = "queued"
KEY_PROCESSING = "processing"
KEY_PROCESSING_DIRTY = "processing, re-added (dirty: queued again at done)"
KEY_DIRTY = "dirty"
KEY_DELAYED = "delayed (waiting in add_after)"
KEY_REMEMBERED = "idle, failure count remembered"
KEY_STATUSES: tuple[str, ...] = (
    KEY_QUEUED, KEY_PROCESSING, KEY_PROCESSING_DIRTY, KEY_DIRTY, KEY_DELAYED, KEY_REMEMBERED,
)
"""Where a key can be after a trace step; one marker per key and step in
:func:`key_membership_figure` (a key that is also delayed gets a sky-blue ring)."""

_KEY_STYLE: dict[str, tuple[str, str]] = {
    KEY_QUEUED: (BLUE, "square"),
    KEY_PROCESSING: (ORANGE, "circle"),
    KEY_PROCESSING_DIRTY: (VERMILLION, "diamond"),
    KEY_DIRTY: (PURPLE, "triangle-up"),
    KEY_DELAYED: (SKY, "hourglass"),
    KEY_REMEMBERED: (GREY, "x-thin-open"),
}


def key_membership_figure(
    points: Sequence[tuple[int, str, str, bool, str]],
    keys: Sequence[str],
    step_labels: Sequence[str],
    *,
    current_step: int,
) -> Figure:
    """Where each key is after each trace step: one row per key, one column per step.

    ``points`` are ``(step, key, status, also_delayed, hover)`` with ``status`` from
    :data:`KEY_STATUSES`; ``step_labels[i]`` names step i (0 = the empty start); the current
    step gets a dotted vertical line. The x range always covers the whole trace, so the
    markers fill in as the trace is stepped through.
    """
    unknown = sorted({p[2] for p in points} - set(KEY_STATUSES))
    if unknown:
        raise ValueError(f"unknown key status {unknown[0]!r}; use one of KEY_STATUSES.")
    if not 0 <= current_step < max(1, len(step_labels)):
        raise ValueError(f"current step {current_step} is outside 0..{len(step_labels) - 1}.")
    fig = base_figure(
        "Where is each key after each step?",
        "trace step (operation number; 0 = empty queue)",
        "key",
    )
    for status in KEY_STATUSES:
        mine = [p for p in points if p[2] == status]
        if not mine:
            continue
        color, symbol = _KEY_STYLE[status]
        fig["data"].append(
            _scatter(
                x=[p[0] for p in mine],
                y=[plotly_text(p[1]) for p in mine],
                mode="markers",
                name=status,
                marker={
                    "size": 18,
                    "color": color,
                    "symbol": symbol,
                    "line": {
                        "color": [SKY if p[3] else "#ffffff" for p in mine],
                        "width": [4 if p[3] else 1 for p in mine],
                    },
                },
                text=[plotly_text(p[4]) for p in mine],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    n = len(step_labels)
    short = n <= 16
    layout = fig["layout"]
    layout["xaxis"].update(
        range=[-0.5, max(n - 1, 1) + 0.5],
        tickvals=list(range(n)),
        ticktext=[plotly_text(label) if short else str(i) for i, label in enumerate(step_labels)],
        tickangle=-35 if short else 0,
        zeroline=False,
    )
    layout["yaxis"].update(
        type="category",
        categoryorder="array",
        categoryarray=[plotly_text(k) for k in keys],
        autorange="reversed",
        rangemode="normal",
    )
    add_vline(fig, current_step, {"color": GREY, "width": 1.5, "dash": "dot"})
    layout.update(hovermode="closest", showlegend=True)
    return fig


def retry_rate_figure(
    t_s: Sequence[float],
    series: Sequence[tuple[str, Sequence[float]]],
    *,
    outage_s: float,
    dependency_limit_per_s: float | None = None,
    highlight: str | None = None,
) -> Figure:
    """Retry requests per second the dependency sees over time, one line per policy variant.

    ``t_s`` are bin starts (s since the outage began); the outage is shaded; the dependency's
    limit (if given) is a dashed horizontal line; the ``highlight`` variant is drawn thicker.
    The rate axis is logarithmic (the first retries of a storm come milliseconds apart and
    outnumber the later ones by orders of magnitude); empty bins are gaps.
    """
    colors = (GREY, ORANGE, BLUE, GREEN, PURPLE, VERMILLION)
    fig = base_figure(
        "Do the retries exceed what the dependency can take?",
        "time since the dependency went down (s)",
        "retry requests (requests/s, log scale)",
    )
    for i, (name, rates) in enumerate(series):
        _same_length(name, t_s, rates)
        chosen = name == highlight
        fig["data"].append(
            _scatter(
                x=list(t_s),
                # empty bins are gaps (a log axis has no zero), isolated spikes stay visible
                y=[r if r > 0 and math.isfinite(r) else None for r in rates],
                mode="lines+markers",
                marker={"size": 4 if chosen else 3},
                connectgaps=False,
                name=plotly_text(name + (" (your policy)" if chosen else "")),
                line={"color": colors[i % len(colors)], "width": 3.0 if chosen else 1.5,
                      "shape": "hv"},
                opacity=1.0 if chosen or highlight is None else 0.75,
                hovertemplate=plotly_text(name) + ": " + HOVER_Y + " req/s<extra></extra>",
            )
        )
    if math.isfinite(outage_s) and outage_s > 0:
        add_vrect(fig, 0, outage_s, fillcolor=VERMILLION, opacity=0.08, text="dependency down")
    if (dependency_limit_per_s is not None and math.isfinite(dependency_limit_per_s)
            and dependency_limit_per_s > 0 and len(t_s)):
        # a trace, not add_hline: annotations on a log axis take log10 coordinates
        fig["data"].append(_scatter(
            x=[min(t_s), max(t_s)],
            y=[dependency_limit_per_s] * 2,
            mode="lines",
            name=f"dependency limit {sig(dependency_limit_per_s)} req/s",
            line={"color": VERMILLION, "width": 1.5, "dash": "dash"},
            hoverinfo="skip",
        ))
    fig["layout"]["xaxis"]["rangemode"] = "tozero"
    fig["layout"]["yaxis"].update(type="log", rangemode="normal", dtick=1)
    return fig


def retry_lag_figure(
    variants: Sequence[str],
    p50_s: Sequence[float | None],
    p99_s: Sequence[float | None],
    max_s: Sequence[float | None],
) -> Figure:
    """Time from the dependency's recovery until each key's next attempt, per variant:
    median, p99 and the last key (grouped bars; a missing value is left out, not zero)."""
    for what, values in (("p50", p50_s), ("p99", p99_s), ("max", max_s)):
        if len(values) != len(variants):
            raise ValueError(f"{what}: {len(values)} values for {len(variants)} variants.")
    fig = base_figure(
        "After the dependency recovers, how long until each key tries again?",
        "retry policy",
        "recovery → next attempt (s)",
    )
    names = [plotly_text(v) for v in variants]
    for label, values, color in (("median key", p50_s, SKY), ("p99 key", p99_s, BLUE),
                                 ("last key", max_s, VERMILLION)):
        fig["data"].append(
            _bar(
                x=names,
                y=_none_if_nonfinite(values),
                name=label,
                marker={"color": color},
                hovertemplate=label + ": " + HOVER_Y + " s<extra></extra>",
            )
        )
    fig["layout"].update(barmode="group", hovermode="closest")
    return fig


def backoff_penalty_figure(
    failures: Sequence[int],
    delay_s: Sequence[float],
    marks: Sequence[tuple[str, int, float]],
    *,
    base_s: float,
) -> Figure:
    """The per-key backoff schedule min(cap, base·2^n) against the failure count n, with a
    marker where each variant's median key was left by the storm: without Forget its next,
    unrelated failure waits that long instead of ``base_s`` (log-scale delay axis)."""
    _same_length("schedule", failures, delay_s)
    fig = base_figure(
        "Without Forget, how long is a key's next unrelated failure delayed?",
        "failures remembered for the key (count n)",
        "retry delay (s, log scale)",
    )
    fig["data"].append(
        _scatter(
            x=list(failures),
            y=list(delay_s),
            mode="lines+markers",
            name="min(cap, base·2ⁿ)",
            line={"color": GREY, "width": 1.5, "shape": "hv"},
            marker={"size": 5, "color": GREY},
            hovertemplate="n = %{x}: " + HOVER_Y + " s<extra></extra>",
        )
    )
    colors = (ORANGE, BLUE, GREEN, PURPLE, VERMILLION, SKY)
    for i, (name, n, delay) in enumerate(marks):
        fig["data"].append(
            _scatter(
                x=[n],
                y=[delay],
                mode="markers",
                name=plotly_text(f"{name}: n = {n} → {number_text(delay, 's')}"),
                marker={"size": 13, "color": colors[i % len(colors)], "symbol": "diamond",
                        "line": {"color": "#ffffff", "width": 1}},
                hovertemplate=plotly_text(name) + ": " + HOVER_Y + " s<extra></extra>",
            )
        )
    if math.isfinite(base_s) and base_s > 0 and len(failures):
        fig["data"].append(_scatter(
            x=[min(failures), max(failures)],
            y=[base_s, base_s],
            mode="lines",
            name=f"with Forget: base {number_text(base_s, 's')}",
            line={"color": GREEN, "width": 1.5, "dash": "dot"},
            hoverinfo="skip",
        ))
    fig["layout"]["yaxis"].update(type="log", rangemode="normal", dtick=1)
    fig["layout"]["hovermode"] = "closest"
    return fig


HEALTHY_BASELINE = "without the storm"
"""The first category of :func:`healthy_wait_figure`: the healthy traffic alone."""


def healthy_wait_figure(
    variants: Sequence[str],
    mean_s: Sequence[float | None],
    p99_s: Sequence[float | None],
    *,
    baseline_mean_s: float | None,
    baseline_p99_s: float | None,
) -> Figure:
    """Queue wait of healthy keys that share the workers with the storm, per variant (mean and
    p99 bars), after a first pair of bars for the same traffic without the storm; log-scale
    wait."""
    for what, values in (("mean", mean_s), ("p99", p99_s)):
        if len(values) != len(variants):
            raise ValueError(f"{what}: {len(values)} values for {len(variants)} variants.")
    variants = [HEALTHY_BASELINE, *variants]
    mean_s = [baseline_mean_s, *mean_s]
    p99_s = [baseline_p99_s, *p99_s]
    fig = base_figure(
        "How long do healthy keys wait behind the retry storm?",
        "retry policy",
        "queue wait (s, log scale)",
    )
    names = [plotly_text(v) for v in variants]
    for label, values, color in (("mean wait", mean_s, BLUE), ("p99 wait", p99_s, VERMILLION)):
        fig["data"].append(
            _bar(
                x=names,
                y=_none_if_nonfinite(values),
                name=label,
                marker={"color": color},
                hovertemplate=label + ": " + HOVER_Y + " s<extra></extra>",
            )
        )
    fig["layout"]["yaxis"].update(type="log", rangemode="normal", dtick=1)
    fig["layout"].update(barmode="group", hovermode="closest")
    return fig


def sim_compare_figure(
    labels: Sequence[str],
    simulated: Sequence[float | None],
    formula: Sequence[float | None],
    *,
    workers: int,
) -> Figure:
    """Grouped bars: simulated vs formula value of each wait statistic (seconds)."""
    if not (len(labels) == len(simulated) == len(formula)):
        raise ValueError("labels, simulated and formula must have the same length.")
    fig = base_figure(f"Does the simulator agree with the formula at c = {workers}?",
                      "wait statistic", "wait in queue (s)")
    fig["data"] += [
        _bar(x=list(labels), y=_none_if_nonfinite(simulated), name="simulated",
             marker={"color": BLUE}, hovertemplate="simulated " + HOVER_Y + " s<extra></extra>"),
        _bar(x=list(labels), y=_none_if_nonfinite(formula), name="formula",
             marker={"color": ORANGE}, hovertemplate="formula " + HOVER_Y + " s<extra></extra>"),
    ]
    fig["layout"].update(barmode="group", hovermode="closest")
    return fig
