"""Figure builders return plain figure dicts (issue 9): JSON values only, valid for Plotly's
schema, and exactly what Plotly itself makes of them (nothing dropped or coerced)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
import pytest
from plotly.io.json import to_json_plotly

from dashboard import figures as fg

HOSTILE = '<b>x</b></script><!--&"\''
T0 = 1_700_000_000.0


def _series(n: int) -> tuple[list[float], list[float]]:
    return [T0 + 15 * i for i in range(n)], [float(i) for i in range(n)]


GAPPY = ([T0, T0 + 15, T0 + 90, T0 + 105], [1.0, math.nan, 2.0, 3.0])


def _with_advisor() -> fg.Figure:
    fig = fg.whatif_wait_figure([1, 2], [None, 0.5], [None, 1.0], [1.2, 0.6], slo_s=1.0,
                                recommended=2)
    fg.mark_advisor(fig, 2, HOSTILE)
    fg.mark_advisor(fig, None)
    return fig


KEY_POINTS = [(1, "A", fg.KEY_QUEUED, False, "h<1>"), (2, "A", fg.KEY_PROCESSING, True, "h2"),
              (2, HOSTILE, fg.KEY_DELAYED, False, "h3")]

BUILDERS: dict[str, Callable[[], fg.Figure]] = {
    "base": lambda: fg.base_figure("What does it answer?", "x (s)", "y (1/s)"),
    "lab": lambda: fg.lab_figure([0, 1, 2], [4, 5, 6], [0, 1, 2, 3], [4, 5, 6, 7]),
    "lab clears": lambda: fg.lab_figure([0], [4], [0, 4, 5], [4, 0, 0], clear_time=4.0),
    "no data": lambda: fg.no_data_figure("t?", HOSTILE),
    "time series": lambda: fg.time_series_figure(
        "T?", "y", [fg.Line(HOSTILE, GAPPY, fill=True), fg.Line("b", _series(5), dash="dash")],
        15.0, log_y=True, now=T0 + 60),
    "time series, empty": lambda: fg.time_series_figure("T?", "y", [fg.Line("a", ([], []))],
                                                        15.0),
    "depth": lambda: fg.depth_figure(_series(5), 15.0, _series(3), T0 + 30),
    "rates": lambda: fg.rates_figure(_series(5), _series(5), GAPPY, 15.0),
    "durations": lambda: fg.durations_figure({"p50": _series(3), "p95": _series(3)},
                                             {"p99": _series(3)}, 15.0),
    "workers": lambda: fg.workers_figure(_series(3), _series(3), 15.0),
    "retries": lambda: fg.retries_errors_figure(_series(3), ([], []), 15.0),
    "api": lambda: fg.api_calls_figure({"2xx": _series(3), HOSTILE: _series(2)}, 15.0),
    "effects": lambda: fg.effects_figure(_series(3), 15.0),
    "what-if wait": lambda: fg.whatif_wait_figure(
        [1, 2, 3], [None, 0.5, 0.1], [math.inf, 1.0, 0.2], [1.2, 0.6, 0.4], slo_s=1.0,
        recommended=2),
    "what-if slo": lambda: fg.whatif_slo_figure([1, 2, 3], [1.0, 0.3, None], slo_s=0.25,
                                                target=0.05, recommended=3),
    "what-if throughput": lambda: fg.whatif_throughput_figure(
        [1, 2, 3], [1.0, 2.0, 3.0], [1.0, 2.0, 2.5], 2.5, contention=True, recommended=3),
    "advisor mark": _with_advisor,
    "keys": lambda: fg.key_membership_figure(KEY_POINTS, ["A", HOSTILE],
                                             ["start", "add A", "get"], current_step=2),
    "keys, long trace": lambda: fg.key_membership_figure(
        KEY_POINTS, ["A", HOSTILE], [f"s{i}" for i in range(20)], current_step=5),
    "retry rate": lambda: fg.retry_rate_figure(
        [0, 1, 2], [("a", [0, 5, 10]), (HOSTILE, [1, 1, math.nan])], outage_s=1.5,
        dependency_limit_per_s=3.0, highlight="a"),
    "retry lag": lambda: fg.retry_lag_figure(["p", HOSTILE], [1.0, None], [2.0, None],
                                             [3.0, math.nan]),
    "backoff penalty": lambda: fg.backoff_penalty_figure(
        [0, 1, 2], [0.1, 0.2, 0.4], [("v", 2, 0.4), (HOSTILE, 1, 0.2)], base_s=0.1),
    "healthy wait": lambda: fg.healthy_wait_figure(
        ["p", HOSTILE], [2.0, None], [3.0, 4.0], baseline_mean_s=0.1, baseline_p99_s=None),
    "simulated vs formula": lambda: fg.sim_compare_figure(
        ["mean wait", "p95 wait"], [0.1, None], [0.2, math.nan], workers=3),
}


def _values(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _values(v)
    elif isinstance(value, list):
        for v in value:
            yield from _values(v)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_builders_return_plain_json_data(name: str) -> None:
    fig = BUILDERS[name]()
    assert set(fig) == {"data", "layout"}
    assert isinstance(fig["data"], list)
    assert isinstance(fig["layout"], dict)
    for value in _values(fig):
        assert value is None or type(value) in (dict, list, str, int, float, bool), (name, value)
    json.dumps(fig, allow_nan=False)  # no NaN/Infinity, no objects


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_builders_are_valid_plotly_figures_plotly_leaves_unchanged(name: str) -> None:
    fig = BUILDERS[name]()
    validated = go.Figure(fig)  # raises ValueError on any property Plotly does not know
    assert json.loads(pio.to_json(validated)) == json.loads(json.dumps(fig))


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_label_values_never_reach_a_chart_as_markup(name: str) -> None:
    text = json.dumps(BUILDERS[name]())
    assert "<b>" not in text
    assert "</script>" not in text
    assert "<!--" not in text


def test_every_figure_has_the_plotly_white_look() -> None:
    fig = fg.base_figure("t?", "x", "y")
    assert fig["layout"]["template"] == pio.templates["plotly_white"].to_plotly_json()
    title = fig["layout"]["title"]
    assert (title["text"], title["x"], title["xanchor"]) == ("t?", 0.0, "left")
    assert title["font"] == {"size": 16}


def test_figures_are_independent_of_each_other() -> None:
    a = fg.base_figure("a?", "x", "y")
    b = fg.base_figure("b?", "x", "y")
    a["layout"]["xaxis"]["type"] = "log"
    a["layout"]["margin"]["r"] = 99
    a["data"].append({"type": "scatter"})
    assert "type" not in b["layout"]["xaxis"]
    assert b["layout"]["margin"]["r"] == fg.MODEBAR_MARGIN_PX
    assert b["data"] == []


def test_times_are_sent_as_plotly_writes_naive_utc_datetimes() -> None:
    xs, ys = fg.series_points(GAPPY, 15.0)
    iso, iso_ys = fg.series_iso_points(GAPPY, 15.0)
    assert iso == [x.isoformat() for x in xs] == json.loads(to_json_plotly(xs))
    assert iso[0] == "2023-11-14T22:13:20"
    assert iso_ys == ys == [1.0, None, None, 2.0, 3.0]
    trace = fg.rates_figure(GAPPY, ([], []), ([], []), 15.0)["data"][0]
    assert (trace["x"], trace["y"]) == (iso, ys)
