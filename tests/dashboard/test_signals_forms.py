"""Shared helpers of the pages and the report: derived signals, form numbers, and the
escaping of label values in every chart that names them."""

from __future__ import annotations

import math

import pytest

from dashboard import figures
from dashboard.forms import parse_number
from dashboard.signals import capacity_per_s, combine, ratio
from models.errors import ModelInputError
from models.measurements import QueueSnapshot

HOSTILE = '<img src=x onerror="alert(1)">'


@pytest.mark.parametrize(
    ("num", "den", "expected"),
    [(6.0, 2.0, 3.0), (0.0, 2.0, 0.0), (1.0, 0.0, None), (1.0, -1.0, None), (None, 2.0, None),
     (1.0, None, None), (math.nan, 2.0, None), (1e308, 1e-308, None)],
)
def test_ratio_is_none_when_it_does_not_exist(
    num: float | None, den: float | None, expected: float | None
) -> None:
    assert ratio(num, den) == expected


def test_capacity_is_workers_over_mean_work_time() -> None:
    assert capacity_per_s(QueueSnapshot(queue="q", workers=4.0, service_mean_s=0.5)) == 8.0
    assert capacity_per_s(QueueSnapshot(queue="q", workers=4.0)) is None
    assert capacity_per_s(QueueSnapshot(queue="q", workers=4.0, service_mean_s=0.0)) is None


def test_combine_only_divides() -> None:
    a = ([0.0, 15.0], [6.0, math.inf])
    b = ([0.0, 15.0], [2.0, 1.0])
    assert combine(a, b) == ([0.0], [3.0])  # the infinite quotient is left out, not plotted
    with pytest.raises(ValueError, match="unknown operation 'mul'"):
        combine(a, b, "mul")


@pytest.mark.parametrize(
    ("value", "positive", "expected"),
    [(3, False, 3.0), ("2.5", False, 2.5), (0, False, 0.0), (0.25, True, 0.25)],
)
def test_parse_number_accepts(value: object, positive: bool, expected: float) -> None:
    assert parse_number("rate", value, positive=positive) == expected


@pytest.mark.parametrize(
    ("value", "positive", "message"),
    [(None, False, "Enter a number for the rate."),
     ("", False, "Enter a number for the rate."),
     ("abc", False, "The rate must be a number, got 'abc'."),
     (True, False, "The rate must be a number, got True."),
     ([1], False, "The rate must be a number, got [1]."),
     (-1, False, "The rate must be a non-negative number, got -1."),
     (math.nan, False, "The rate must be a non-negative number, got nan."),
     (0, True, "The rate must be a positive number, got 0.")],
)
def test_parse_number_rejects_with_a_sentence(value: object, positive: bool,
                                              message: str) -> None:
    with pytest.raises(ModelInputError) as info:
        parse_number("rate", value, positive=positive)
    assert str(info.value) == message


def _plotly_strings(fig: figures.Figure) -> list[str]:
    """Every trace name, hover template, hover text, tick text and annotation text."""
    out: list[str] = []
    for trace in fig["data"]:
        out += [s for s in (trace.get("name"), trace.get("hovertemplate")) if isinstance(s, str)]
        text = trace.get("text")
        if isinstance(text, tuple | list):
            out += [str(t) for t in text]
        for axis in ("x", "y"):
            values = trace.get(axis)
            if isinstance(values, tuple | list):
                out += [v for v in values if isinstance(v, str)]
    out += [a["text"] for a in fig["layout"].get("annotations", [])]
    return out


def _assert_escaped(fig: figures.Figure) -> None:
    strings = _plotly_strings(fig)
    assert any("&lt;img" in s for s in strings), strings  # the label value is shown...
    assert not any("<img" in s for s in strings), strings  # ...never as markup


def test_label_values_are_escaped_in_every_chart_that_names_them() -> None:
    _assert_escaped(figures.time_series_figure(
        "t?", "y", [figures.Line(HOSTILE, ([0.0, 15.0], [1.0, 2.0]))], 15.0))
    _assert_escaped(figures.retry_rate_figure(
        [0.0, 1.0], [(HOSTILE, [1.0, 2.0])], outage_s=1.0, highlight=HOSTILE))
    _assert_escaped(figures.retry_lag_figure([HOSTILE], [1.0], [2.0], [3.0]))
    _assert_escaped(figures.healthy_wait_figure([HOSTILE], [1.0], [2.0], baseline_mean_s=0.5,
                                                baseline_p99_s=1.0))
    _assert_escaped(figures.backoff_penalty_figure([0, 1], [1.0, 2.0], [(HOSTILE, 1, 2.0)],
                                                   base_s=1.0))
    _assert_escaped(figures.no_data_figure("t?", HOSTILE))
    fig = figures.base_figure("t?", "x", "y")
    figures.mark_advisor(fig, 3, HOSTILE)
    _assert_escaped(fig)
