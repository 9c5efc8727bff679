"""The capacity plan's two charts: the decisive chart and the wait against workers.

:func:`decisive_figure` answers "will more workers help?" with the queue's own history:
throughput against busy workers at every point of the range (the measured points), beside
the linear-scaling line c / E[S] (what independent passes would give), the USL curve fitted to
those points (when it passed the advisor's gate), the plan's predicted throughput per worker
count at the design demand, the demand and the binding limit's ceiling as horizontal lines,
and the current and recommended counts as vertical lines. Points on the linear line: the
passes are independent and more workers add throughput up to the demand; points bending
below it: something shared binds.

:func:`plan_wait_figure` shows the mean and p95 wait per worker count with the plan's band
(the same sweep from the median to the highest demand of the range) and the SLO.

Both take a :class:`models.plan.CapacityPlan` and are plain Plotly dicts built with
:mod:`dashboard.figures`' shared look. Nothing here computes a model value.
"""

from __future__ import annotations

import math

from dashboard import figures as fg
from dashboard.plan_words import rate_text
from models.formatting import HOVER_X, HOVER_Y, number_text
from models.plan import CapacityPlan

__all__ = ["DECISIVE_TITLE", "WAIT_TITLE", "decisive_figure", "plan_wait_figure"]

DECISIVE_TITLE = "Will more workers add throughput?"
WAIT_TITLE = "How long will items wait with c workers?"
MEASURED_NAME = "measured (busy workers, throughput)"
"""Trace name of the history's points (tests look it up)."""


def _trace(**trace: object) -> dict[str, object]:
    return {"type": "scatter", **trace}


LABEL_LINE_PX = 17
"""One line of a 12 px annotation: the recommended count's label sits this far under the
current count's, so the two never overlap however close the counts are."""


def _side(x: float, right_edge: float) -> str:
    """A count's label reads to the right of its line, or to the left in the right quarter of
    the axis (where it would run off the plot)."""
    return "top left" if right_edge > 0 and x > 0.75 * right_edge else "top right"


def _mark_counts(fig: fg.Figure, plan: CapacityPlan) -> None:
    """The current and the recommended count as vertical lines, each labelled: the labels on
    two lines (the recommended one below), each on the side of its line with room."""
    edge = float(max([*(r.workers for r in plan.rows), plan.workers_now or 0,
                      plan.recommended_workers or 0, 1]))
    if plan.workers_now is not None:
        fg.add_vline(fig, plan.workers_now, {"color": fg.GREY, "width": 1.5, "dash": "dot"},
                     text=f"now c = {plan.workers_now}",
                     position=_side(plan.workers_now, edge), text_color=fg.GREY)
    if plan.recommended_workers is not None and plan.recommended_workers != plan.workers_now:
        fg.add_vline(fig, plan.recommended_workers, {"color": fg.GREEN, "width": 2,
                                                     "dash": "dash"},
                     name="recommended", text=f"recommended c = {plan.recommended_workers}",
                     position=_side(plan.recommended_workers, edge), text_color=fg.GREEN,
                     text_yshift=-LABEL_LINE_PX if plan.workers_now is not None else None)


def decisive_figure(plan: CapacityPlan) -> fg.Figure:
    """Throughput against workers: measured points, linear scaling, fit, demand, ceiling."""
    if not plan.rows and not plan.measured_busy_workers:
        return fg.no_data_figure(DECISIVE_TITLE, "no measured work time or worker count")
    fig = fg.base_figure(DECISIVE_TITLE, "workers (busy on average, or configured c)",
                         "items per second (1/s)")
    fig["layout"]["hovermode"] = "closest"
    xs = [r.workers for r in plan.rows]
    top = max([*xs, *plan.measured_busy_workers, 1.0])
    if plan.service_mean_s is not None and plan.service_mean_s > 0:
        line_x = [0.0, float(top)]
        fig["data"].append(_trace(
            x=line_x, y=[x / plan.service_mean_s for x in line_x],
            name="linear scaling c / E[S]", mode="lines",
            line={"color": fg.GREY, "dash": "dot", "width": 1.5},
            hovertemplate="linear " + HOVER_Y + "/s<extra></extra>"))
    if plan.measured_busy_workers:
        fig["data"].append(_trace(
            x=list(plan.measured_busy_workers), y=list(plan.measured_throughput_per_s),
            name=MEASURED_NAME, mode="markers",
            marker={"color": fg.BLUE, "size": 6, "opacity": 0.6},
            hovertemplate="busy " + HOVER_X + ", throughput " + HOVER_Y + "/s<extra></extra>"))
    if plan.rows:
        fig["data"].append(_trace(
            x=xs, y=[r.throughput_per_s for r in plan.rows],
            name="plan: throughput at the design demand", mode="lines+markers",
            line={"color": fg.ORANGE, "width": 2},
            hovertemplate="c = %{x}: " + HOVER_Y + "/s<extra></extra>"))
        fitted = [r.throughput_fit_per_s for r in plan.rows]
        if any(v is not None for v in fitted):
            fig["data"].append(_trace(
                x=xs, y=fitted, name="USL fit of the measured points", mode="lines",
                line={"color": fg.VERMILLION, "width": 2},
                hovertemplate="USL " + HOVER_Y + "/s<extra></extra>"))
    if plan.demand_per_s is not None:
        fg.add_hline(fig, plan.demand_per_s, {"color": fg.ORANGE, "dash": "dash"},
                     text=f"design demand {number_text(plan.demand_per_s, '/s')}",
                     position="bottom right", text_color=fg.ORANGE)
    if plan.ceiling_per_s is not None:
        fg.add_hline(fig, plan.ceiling_per_s, {"color": fg.VERMILLION, "width": 1.5},
                     text=f"ceiling {number_text(plan.ceiling_per_s, '/s')}",
                     position="top left", text_color=fg.VERMILLION)
    _fit_y(fig, plan)
    _mark_counts(fig, plan)
    return fig


LINEAR_OFF_CHART = 3.0
"""The linear-scaling line may leave the chart when it would stretch the axis to more than
this many times what the queue does: a 0–500 axis flattens a queue at 3/s to its floor."""


def _fit_y(fig: fg.Figure, plan: CapacityPlan) -> None:
    """The y-axis fits the queue — its measured throughput, the plan's rows, the design demand,
    the ceiling and the linear line up to the recommended count — not the linear line out to
    the largest count of the sweep."""
    shown = [v for v in (*plan.measured_throughput_per_s,
                         *(r.throughput_per_s for r in plan.rows),
                         *(r.throughput_fit_per_s for r in plan.rows),
                         plan.demand_per_s, plan.ceiling_per_s)
             if v is not None and math.isfinite(v) and v > 0]
    linear = [max(t["y"]) for t in fig["data"] if t.get("name") == "linear scaling c / E[S]"]
    if not shown or not linear or linear[0] <= LINEAR_OFF_CHART * max(shown):
        return
    top = 1.6 * max(shown)
    if plan.recommended_workers is not None and plan.service_mean_s:
        # the linear line stays in view up to the recommended count: the slope it is sized on
        top = max(top, 1.05 * plan.recommended_workers / plan.service_mean_s)
    if top < linear[0]:
        fig["layout"]["yaxis"]["range"] = [0, top]


def plan_wait_figure(plan: CapacityPlan) -> fg.Figure:
    """Mean and p95 wait per worker count (log scale), the band, and the SLO."""
    rows = [r for r in plan.rows if r.stable]
    if not rows:
        x = plan.sizing.ceiling_per_s if plan.sizing is not None else None
        return fg.no_data_figure(
            WAIT_TITLE, "the demand is over the ceiling of " + rate_text(x)
            + ": the backlog grows at every count" if x is not None
            and plan.demand_per_s is not None and plan.demand_per_s >= x
            else "no stable worker count to show")
    fig = fg.base_figure(WAIT_TITLE, "workers c", "wait in queue (log scale)")
    fig["layout"]["yaxis"].update({"type": "log", "rangemode": "normal"})
    xs = [r.workers for r in rows]

    def positive(values: list[float | None]) -> list[float | None]:
        return [v if v is not None and v > 0 else None for v in values]

    hi = positive([r.wait_p95_hi_s for r in rows])
    lo = positive([r.wait_p95_lo_s for r in rows])
    if any(v is not None for v in hi):
        fig["data"] += [
            _trace(x=xs, y=hi, name="p95 band (highest demand)", mode="lines",
                        line={"width": 0}, showlegend=False, hoverinfo="skip"),
            _trace(x=xs, y=lo, name="p95 band: median to highest demand of the range",
                        mode="lines", line={"width": 0}, fill="tonexty",
                        fillcolor="rgba(213,94,0,0.15)", hoverinfo="skip"),
        ]
    fig["data"] += [
        _trace(x=xs, y=positive([r.wait_mean_s for r in rows]), name="mean wait",
                    mode="lines+markers", line={"color": fg.BLUE, "width": 2.5},
                    hovertemplate="mean " + HOVER_Y + " s<extra></extra>"),
        _trace(x=xs, y=positive([r.wait_p95_s for r in rows]), name="p95 wait",
                    mode="lines+markers", line={"color": fg.VERMILLION, "width": 2},
                    hovertemplate="p95 " + HOVER_Y + " s<extra></extra>"),
    ]
    slo = plan.settings.slo_wait_s
    fg.add_hline(fig, slo, {"color": fg.GREEN, "dash": "dash"},
                 text=f"SLO {number_text(slo, 's')}", position="top right",
                 text_color=fg.GREEN)
    # waits far below the SLO say nothing more: the axis stops 4 decades under it
    shown = [v for r in rows for v in (r.wait_mean_s, r.wait_p95_s, r.wait_p95_hi_s)
             if v is not None and v > 0]
    top = max([*shown, slo]) * 2
    bottom = slo / 1e4
    fig["layout"]["yaxis"]["range"] = [math.log10(bottom), math.log10(top)]
    ticks = fg.log_ticks([bottom, top])
    if ticks:  # the unit on every tick ('100 µs'), not Plotly's bare '100µ'
        fig["layout"]["yaxis"].update(tickmode="array", tickvals=ticks,
                                      ticktext=[number_text(v, "s") for v in ticks])
    _mark_counts(fig, plan)
    return fig
