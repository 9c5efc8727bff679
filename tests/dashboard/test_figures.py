"""Pure figure builders: traces, titles and units, escaping."""

from __future__ import annotations

import math

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


@pytest.mark.parametrize(
    ("value", "text"),
    [(4.0, "4"), (1.5, "1.5"), (1 / 3, "0.333"), (-2.0, "-2"), (0.0004, "0"), (-0.0, "0"),
     (10_000_000.0, "10000000"), (math.nan, "—"), (math.inf, "—")],
)
def test_format_number(value: float, text: str) -> None:
    assert figures.format_number(value) == text


@pytest.mark.parametrize(
    ("value", "digits", "text"), [(1000.0, 0, "1000"), (250.0, 0, "250"), (2.5, 0, "2")],
)
def test_format_number_whole_digits_keep_zeros(value: float, digits: int, text: str) -> None:
    """With no decimals there is nothing to strip: 1000 must not become '1'."""
    assert figures.format_number(value, digits) == text
