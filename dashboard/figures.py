"""Pure Plotly figure builders for the dashboard: data in, ``go.Figure`` out.

No I/O, no Dash, no model calls: pages compute with :mod:`models` and hand the numbers here.
Every chart has a title that says what it answers and units on both axes. Text that may carry
a label value (queue names, label values) goes through :func:`plotly_text`, because Plotly
renders a subset of HTML (``<b>``, ``<a href>``...) in trace names, hover text and titles.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import plotly.graph_objects as go

# Okabe–Ito palette: distinguishable with the common colour-vision deficiencies.
BLUE = "#0072B2"
ORANGE = "#E69F00"
VERMILLION = "#D55E00"
GREEN = "#009E73"
SKY = "#56B4E9"
PURPLE = "#CC79A7"
GREY = "#6b7480"

_FONT = {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 13}


def plotly_text(value: object) -> str:
    """HTML-escape a label value for Plotly text (trace names, hover, titles, annotations)."""
    return html.escape(str(value), quote=True)


def base_figure(title: str, x_title: str, y_title: str) -> go.Figure:
    """An empty figure with the shared look: light card background, titled axes with units."""
    fig = go.Figure()
    fig.update_layout(
        template="plotly_white",
        title={"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 16}},
        font=_FONT,
        margin={"l": 64, "r": 24, "t": 56, "b": 56},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1.0},
        hovermode="x unified",
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
    )
    fig.update_xaxes(title_text=x_title, showline=True, linecolor="#9aa3ad", zeroline=False)
    fig.update_yaxes(title_text=y_title, showline=True, linecolor="#9aa3ad", rangemode="tozero")
    return fig


def lab_figure(
    steps_t: Sequence[float],
    steps_backlog: Sequence[float],
    predicted_t: Sequence[float],
    predicted_backlog: Sequence[float],
    *,
    clear_time: float | None = None,
) -> go.Figure:
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
    fig.add_trace(
        go.Scatter(
            x=list(predicted_t),
            y=list(predicted_backlog),
            mode="lines",
            name="predicted: max(0, q0 + (λ − μ)·t)",
            line={"color": ORANGE, "width": 2.5, "dash": "dash"},
            hovertemplate="predicted %{y:.4g} items<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=list(steps_t),
            y=list(steps_backlog),
            mode="markers",
            name="lab backlog after each step",
            marker={"size": 10, "color": BLUE, "line": {"color": "#ffffff", "width": 1}},
            hovertemplate="lab %{y:.4g} items<extra></extra>",
        )
    )
    if clear_time is not None and math.isfinite(clear_time):
        fig.add_vline(
            x=clear_time,
            line={"color": GREEN, "width": 1.5, "dash": "dot"},
            annotation_text=f"clears at t = {format_number(clear_time)}",
            annotation_position="top right",
            annotation_font_color=GREEN,
        )
    fig.update_xaxes(rangemode="tozero")
    return fig


def format_number(value: float, digits: int = 3) -> str:
    """A short human number: 4.0 -> '4', 1.5 -> '1.5', 1/3 -> '0.333', 1e7 -> '10000000'.

    Rounds to ``digits`` decimals and drops trailing zeros; NaN/Inf become '—' (never shown
    as numbers).
    """
    if not math.isfinite(value):
        return "—"
    rounded = round(value, digits)
    if rounded == 0:
        return "0"
    text = f"{rounded:.{digits}f}".rstrip("0").rstrip(".")
    return text


def _same_length(what: str, xs: Sequence[float], ys: Sequence[float]) -> None:
    if len(xs) != len(ys):
        raise ValueError(f"{what}: {len(xs)} times but {len(ys)} values.")
