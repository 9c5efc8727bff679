"""Pure figure builders: traces, titles and units, escaping."""

from __future__ import annotations

import math
from typing import Any

import pytest

from dashboard import figures


def test_lab_figure_draws_steps_against_prediction() -> None:
    fig = figures.lab_figure([0, 1, 2], [4, 5, 6], [0, 1, 2, 3], [4, 5, 6, 7])
    names = [trace["name"] for trace in fig["data"]]
    assert len(fig["data"]) == 2
    predicted, steps = fig["data"]
    assert "predicted" in names[0]
    assert "lab backlog" in names[1]
    assert list(steps["x"]) == [0, 1, 2]
    assert list(steps["y"]) == [4, 5, 6]
    assert list(predicted["y"]) == [4, 5, 6, 7]
    assert steps["mode"] == "markers"
    assert predicted["line"]["dash"] == "dash"
    layout = fig["layout"]
    assert layout["title"]["text"].endswith("?")
    assert "time units" in layout["xaxis"]["title"]["text"]
    assert "(items)" in layout["yaxis"]["title"]["text"]
    assert not layout.get("shapes")  # no clearing marker for a growing queue


def test_lab_figure_marks_the_clearing_time() -> None:
    fig = figures.lab_figure([0], [4], [0, 4, 5], [4, 0, 0], clear_time=4.0)
    assert len(fig["layout"]["shapes"]) == 1
    assert fig["layout"]["shapes"][0]["x0"] == 4.0
    assert fig["layout"]["annotations"][0]["text"] == "clears at t = 4"


def test_lab_figure_rejects_mismatched_series() -> None:
    with pytest.raises(ValueError, match="2 times but 1 values"):
        figures.lab_figure([0, 1], [4], [0], [4])


def test_lab_figure_ignores_non_finite_clear_time() -> None:
    fig = figures.lab_figure([0], [4], [0], [4], clear_time=math.inf)
    assert not fig["layout"].get("shapes")


def test_plotly_text_escapes_markup() -> None:
    hostile = '<b>x</b><a href="javascript:alert(1)">y</a>'
    escaped = figures.plotly_text(hostile)
    assert not set("<>\"") & set(escaped)
    assert escaped.startswith("&lt;b&gt;x&lt;/b&gt;")


# --- chart chrome: nothing drawn over anything else (issue 11, part 5) ----------------------

T0 = 1_700_000_000.0
_SERIES = ([T0 + 60 * i for i in range(10)], [1.0 + i for i in range(10)])
TIME_SERIES = {
    "rates": lambda: figures.rates_figure(_SERIES, _SERIES, _SERIES, 60.0),
    "depth": lambda: figures.depth_figure(_SERIES, 60.0, _SERIES, T0),
    "durations": lambda: figures.durations_figure({"p95": _SERIES}, {"p95": _SERIES}, 60.0),
    "workers": lambda: figures.workers_figure(_SERIES, _SERIES, 60.0),
    "retries": lambda: figures.retries_errors_figure(_SERIES, _SERIES, 60.0),
    "api": lambda: figures.api_calls_figure({"2xx": _SERIES, "429": _SERIES}, 60.0),
    "effects": lambda: figures.effects_figure(_SERIES, 60.0),
}


def _every_figure() -> dict[str, Any]:
    from tests.dashboard.test_figures_plain import BUILDERS

    return {**BUILDERS, **TIME_SERIES}


@pytest.mark.parametrize("name", sorted(_every_figure()))
def test_the_legend_is_below_the_x_title_never_on_it(name: str) -> None:
    """The legend is anchored to the bottom of the container, not at a paper height under the
    plot: Plotly reserves the container-anchored legend's rows below the axis, and the x axis
    (ticks and title) pushes the margin itself, so "time (UTC)" cannot land on the legend.
    (It used to sit at paper y = -0.22, which at 340 px is inside the x title.)"""
    layout = _every_figure()[name]()["layout"]
    legend = layout["legend"]
    assert legend["yref"] == "container"
    assert (legend["y"], legend["yanchor"]) == (0.0, "bottom")
    assert legend["orientation"] == "h"
    assert layout["xaxis"]["automargin"] is True
    assert layout["yaxis"]["automargin"] is True  # long tick labels push the y title out


@pytest.mark.parametrize("name", sorted(_every_figure()))
def test_the_title_and_the_mode_bar_have_room_of_their_own(name: str) -> None:
    """The title is left-aligned at the top of the container and pushes the plot down
    (automargin); the mode bar is a vertical column in a right margin kept for it, so the
    toolbar never covers the title whatever its length."""
    layout = _every_figure()[name]()["layout"]
    title = layout["title"]
    assert (title["xref"], title["x"], title["xanchor"]) == ("container", 0.0, "left")
    assert (title["yref"], title["y"], title["yanchor"]) == ("container", 1.0, "top")
    assert title["automargin"] is True
    assert layout["modebar"]["orientation"] == "v"
    assert layout["margin"]["r"] >= figures.MODEBAR_MARGIN_PX
    assert "autoScale2d" in layout["modebar"]["remove"]
    if "yaxis2" in layout:  # a right axis takes its own room besides the mode bar's
        assert layout["margin"]["r"] >= figures.MODEBAR_MARGIN_PX + 60


@pytest.mark.parametrize("name", sorted(TIME_SERIES))
def test_y_titles_fit_beside_a_340px_chart(name: str) -> None:
    """A queue-page chart is 340 px high; with the title, two-line time ticks, the x title and
    a two-row legend its plot is ~180 px (measured in Chromium), about 24 characters of a
    13 px axis title. "API requests per second (1/s)" (29) ran off the top of the plot."""
    text = TIME_SERIES[name]()["layout"]["yaxis"]["title"]["text"]
    assert len(text) <= 24, text


@pytest.mark.parametrize(
    ("values", "top", "dtick"),
    [([], 100.0, 20.0), ([95.0, 20.0], 100.0, 20.0), ([185.7, 92.9, 0.0], 200.0, 50.0),
     ([380.0], 400.0, 100.0), ([1200.0, None, math.nan], 1250.0, 250.0),
     ([40.0], 100.0, 20.0), ([20_000.0], 20_000.0, 5000.0)],
)
def test_percent_axis_ticks_are_round(values: list[float | None], top: float,
                                      dtick: float) -> None:
    assert figures.percent_axis(values) == (top, dtick)
    ticks = [dtick * i for i in range(int(top / dtick) + 1)]
    assert len(ticks) <= 6
    assert all(t % 5 == 0 for t in ticks)  # 0 / 50 / 100 %, never 92.9


def test_the_what_if_right_axis_shows_0_50_100_percent_not_92_9() -> None:
    # the demo's replicaset at c = 2..4: 185.7 %, 123.8 %, 92.9 % — Plotly's own ticks for
    # that overlaying axis were 0 / 92.9 / 185.7 %
    fig = figures.whatif_wait_figure([2, 3, 4], [None, None, 0.35], [None, None, 1.3],
                                     [1.857, 1.238, 0.929], slo_s=1.0, recommended=4)
    axis = fig["layout"]["yaxis2"]
    assert (axis["tickmode"], axis["tick0"], axis["dtick"]) == ("linear", 0, 50.0)
    assert axis["range"] == [0, 200.0]
    assert axis["ticksuffix"] == " %"
    assert axis["side"] == "right"
    assert fig["data"][2]["yaxis"] == "y2"
    assert max(fig["data"][2]["y"]) <= axis["range"][1]


@pytest.mark.parametrize(
    ("values", "ticks"),
    [([0.4, 9.8], [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]),
     ([1.0, 1.0], [1.0, 2.0, 5.0, 10.0]),
     ([2e-5, 30.0], [1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0]),
     ([0.0, -1.0, math.nan, 0.003], [0.001, 0.002, 0.005, 0.01]),
     ([0.0, math.inf], [])],
)
def test_log_ticks(values: list[float], ticks: list[float]) -> None:
    assert figures.log_ticks(values) == pytest.approx(ticks)


def test_log_duration_axis_labels_every_tick_in_full() -> None:
    """Plotly's own log ticks label 0.5 as a bare "5" under the "1"; ours say "0.5"."""
    series = ([T0, T0 + 60], [0.4, 9.8])
    axis = figures.durations_figure({"p95": series}, {}, 60.0)["layout"]["yaxis"]
    assert axis["type"] == "log"
    assert axis["tickmode"] == "array"
    assert axis["ticktext"] == ["0.1 s", "0.2 s", "0.5 s", "1 s", "2 s", "5 s", "10 s"]
    assert axis["tickvals"] == pytest.approx([0.1, 0.2, 0.5, 1, 2, 5, 10])


def test_the_rates_axis_fits_the_measured_rates_not_a_far_capacity() -> None:
    """A 0–500 axis would flatten 3/s to the floor: the axis fits what the queue does and a
    note gives the capacity; a capacity within reach stays on the chart."""
    times = [T0, T0 + 60, T0 + 120]
    arrivals = (times, [3.0, 3.0, 3.0])
    far = figures.rates_figure(arrivals, arrivals, (times, [500.0] * 3), 60.0)
    assert far["layout"]["yaxis"]["range"] == [0, pytest.approx(4.5)]
    notes = [a["text"] for a in far["layout"]["annotations"]]
    assert "capacity c·μ ≈ 500/s: above the chart" in notes
    near = figures.rates_figure(arrivals, arrivals, (times, [5.0] * 3), 60.0)
    assert "range" not in near["layout"]["yaxis"]
    # arrivals equal to the throughput stay visible: a wide pale line under a thin one
    arrival_trace, throughput_trace = near["data"][0], near["data"][1]
    assert arrival_trace["line"]["width"] > 2 * throughput_trace["line"]["width"]
    assert arrival_trace["opacity"] < 1
