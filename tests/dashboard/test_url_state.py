"""State in the address, tab titles and kept zoom (issue 21): the pure parts.

The browser half (a reload keeps the state, the zoom survives refreshes) is
tests/browser/test_state_browser.py.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import dash
import pytest

from collectors.demo import DemoSource
from dashboard import figures as fg
from dashboard.context import MAX_TITLE_CHARS, AppContext, page_title
from dashboard.pages import queue as qp
from dashboard.pages import whatif as wp
from models.errors import ModelInputError

# --- the queue page's history range ----------------------------------------------------------


def test_range_from_the_address() -> None:
    assert qp.range_from_query("6h") == ("6h", "")
    assert qp.range_from_query(None) == (qp.DEFAULT_RANGE, "")
    key, note = qp.range_from_query("9y")
    assert key == "1h"
    assert note == ("The address asks for the history range '9y', which is not one of "
                    "15m, 1h, 6h, 24h, 7d: showing 1h.")
    key, note = qp.range_from_query(["6h", "7d"])  # ?range=6h&range=7d
    assert key == "1h"
    assert "several values" in note
    _, note = qp.range_from_query("x" * 10_000)
    assert len(note) < 200
    assert note.count("x") < qp.MAX_SHOWN_CHARS


def _ids(node: object, out: dict[str, Any] | None = None) -> dict[str, Any]:
    out = {} if out is None else out
    if getattr(node, "id", None):
        out[node.id] = node  # type: ignore[attr-defined]
    children = getattr(node, "children", None)
    for child in children if isinstance(children, list | tuple) else [children]:
        if child is not None and not isinstance(child, str):
            _ids(child, out)
    return out


def test_queue_layout_reads_the_range_from_the_address() -> None:
    ids = _ids(qp.layout("replicaset", range="7d"))
    assert ids["queue-range"].value == "7d"
    assert ids["queue-address-note"].children == ""
    ids = _ids(qp.layout("replicaset", range="<b>"))
    assert ids["queue-range"].value == "1h"
    assert ids["queue-address-note"].children.startswith("The address asks for")


# --- the shared x-range and the kept zoom -----------------------------------------------------

def test_shared_xrange_takes_two_ends_only() -> None:
    assert qp.shared_xrange(["2020-02-10 13:00", "2020-02-10 13:30:00.5"]) == [
        "2020-02-10 13:00", "2020-02-10 13:30:00.5"]
    assert qp.shared_xrange([1, 2.5]) == [1.0, 2.5]
    for bad in (None, [], ["a"], ["a", "b", "c"], "ab", [True, 1], [float("nan"), 1],
                ["", "x"], ["x" * 41, "y"], [{"a": 1}, 2], {"0": 1, "1": 2}):
        assert qp.shared_xrange(bad) is None, bad


def _depth_view() -> qp.QueueView:
    t = [1_700_000_000.0 + 60 * i for i in range(10)]
    figs = qp.build_figures({"depth_current": (t, [1.0] * 10)}, 60.0, None, t[-1])
    return qp.QueueView("q", figures=figs)


def test_refresh_draws_the_time_charts_at_the_shared_range() -> None:
    view = _depth_view()
    zoom = ["2023-11-14 22:15", "2023-11-14 22:18"]
    out = qp.render_view(view, zoom, ("q", "1h"))
    figs = dict(zip(qp.GRAPH_IDS, out[5:], strict=True))
    depth = figs["queue-depth-graph"]["layout"]["xaxis"]
    assert depth["range"] == zoom
    assert depth["autorange"] is False
    # a "no data" chart has no time axis to zoom
    assert "range" not in figs["queue-rates-graph"]["layout"]["xaxis"]
    # the view itself is untouched: the next refresh without a zoom draws the whole range
    assert "range" not in view.figures["queue-depth-graph"]["layout"]["xaxis"]
    plain = dict(zip(qp.GRAPH_IDS, qp.render_view(view, None, ("q", "1h"))[5:], strict=True))
    assert "range" not in plain["queue-depth-graph"]["layout"]["xaxis"]


def test_uirevision_is_kept_for_the_same_queue_and_range_only() -> None:
    view = _depth_view()

    def revisions(*key: str) -> list[str]:
        return [f["layout"]["uirevision"] for f in qp.render_view(view, None, key)[5:]]

    same = revisions("q", "1h")
    assert same == revisions("q", "1h")  # a refresh keeps the zoom
    assert len(set(same)) == len(same)  # each chart has its own
    other_range, other_queue = revisions("q", "6h"), revisions("r", "1h")
    assert all(a != b for a, b in zip(same, other_range, strict=True))
    assert all(a != b for a, b in zip(same, other_queue, strict=True))
    # ("q:1", "h") is not ("q", ":1h"): the parts are kept apart
    assert revisions("a", "bc") != revisions("ab", "c")
    assert all(isinstance(r, str) and len(r) == 16 for r in same)  # Plotly compares by value


def test_base_figure_keeps_the_zoom_by_default() -> None:
    fig = fg.base_figure("Is it?", "x", "y")
    assert fig["layout"]["uirevision"] == "Is it?"
    keyed = fg.set_uirevision(fg.base_figure("Is it?", "x", "y"), "q")
    assert keyed["layout"]["uirevision"] == fg.set_uirevision(
        fg.set_uirevision(fg.base_figure("Is it?", "x", "y"), "q"), "q")["layout"]["uirevision"]


# --- tab titles ---------------------------------------------------------------------------

def test_page_title_is_text_and_bounded() -> None:
    assert page_title("fleet") == "queuelens — fleet"
    assert page_title("a\nb\x00c") == "queuelens — a b c"
    long = page_title("q" * 10_000)
    assert len(long) == MAX_TITLE_CHARS
    assert long.endswith("…")
    assert qp.queue_title("team%2Fcontroller%20a") == "queuelens — team/controller a"
    assert qp.queue_title(None) == "queuelens — queue"
    assert wp.whatif_title("replicaset") == "queuelens — what-if replicaset"
    assert wp.whatif_title(None) == "queuelens — what-if"


def test_every_page_has_a_queuelens_title() -> None:
    from dashboard.app import build_dash_app

    build_dash_app(DemoSource(seed=0))
    titles = {p["path"]: p["title"] for p in dash.page_registry.values()}
    assert titles["/"] == "queuelens — fleet"
    assert titles["/whatif"] == "queuelens — what-if"
    assert titles["/lab"] == "queuelens — queue lab"
    queue_page = next(p for p in dash.page_registry.values()
                      if p["path_template"] == qp.PATH_TEMPLATE)
    assert queue_page["title"](name="replicaset") == "queuelens — replicaset"


# --- the what-if page's inputs --------------------------------------------------------------

VALUES: list[Any] = [12.5, 0.3, 0.5, 2.0, 1.5, 0.75, "usl", 0.02, 0.0001, 0.1, "p99",
                        [2, 24], None, 1.0]
"""Widget values in URL_FIELDS' order (a ceiling left empty)."""


def _query(search: str) -> dict[str, object]:
    """The query parameters as Dash pages hands them to the layout."""
    parsed = parse_qs(urlsplit(search).query, keep_blank_values=True)
    return {k: v[0] if len(v) == 1 else v for k, v in parsed.items()}


def test_address_round_trips_every_input() -> None:
    search = wp.address_query("team/a b&c", VALUES)
    assert search.startswith("?queue=team%2Fa%20b%26c&lambda=12.5&service=0.3&")
    assert "workers=2-24" in search
    assert "ceiling=" not in search
    back = wp.address_inputs(_query(search))
    assert back.queue == "team/a b&c"
    restored: list[Any] = [back.values.get(i) for _, i in wp.URL_FIELDS]
    assert restored == VALUES
    # the same sweep: parse_params reads the restored values exactly as the typed ones
    assert wp.parse_params(*restored).inputs == wp.parse_params(*VALUES).inputs
    assert back.notes[-1].startswith("From the address: lambda, service, cv2, acv2")


def test_address_writes_numbers_exactly() -> None:
    values = list(VALUES)
    values[0] = 0.1 + 0.2  # 0.30000000000000004: rounding it would change the sweep
    values[9] = None  # no SLO
    search = wp.address_query(None, values)
    assert "lambda=0.30000000000000004" in search
    assert "slo=&" in search
    assert "queue=" not in search
    back = wp.address_inputs(_query(search))
    assert back.values["whatif-arrival"] == 0.1 + 0.2
    assert back.values["whatif-slo"] is None


@pytest.mark.parametrize(("query", "param", "reason"), [
    ({"lambda": "abc"}, "lambda", "must be a number"),
    ({"service": "0"}, "service", "must be a positive number"),
    ({"slo": "-1"}, "slo", "must be a positive number"),
    ({"workers": "0-100"}, "workers", "worker range"),
    ({"workers": "8"}, "workers", "worker range"),
    ({"quantile": "p42"}, "quantile", "Unknown SLO statistic"),
    ({"contention": "bogus"}, "contention", "Unknown contention mode"),
    ({"sigma": "abc"}, "sigma", "contention σ"),  # refused even while contention is off
    ({"ccv2": "inf"}, "ccv2", "must be a non-negative number, got inf"),
    ({"lmult": "1" * 41}, "lmult", "longer than 40 characters"),
    ({"smult": ["1", "2"]}, "smult", "more than once"),
])
def test_a_bad_address_value_is_left_out_with_a_sentence(
        query: dict[str, object], param: str, reason: str) -> None:
    got = wp.address_inputs({"lambda": "20", **query})
    wid = dict(wp.URL_FIELDS)[param]
    assert wid not in got.values
    if param != "lambda":
        assert got.values["whatif-arrival"] == 20.0  # the good ones are still used
    bad = [n for n in got.notes if n.startswith(f"The address's {param}")]
    assert len(bad) == 1, got.notes
    assert reason in bad[0]
    assert "\n" not in bad[0]
    assert len(bad[0]) < 300


def test_address_queue_is_bounded() -> None:
    got = wp.address_inputs({"queue": "q" * (wp.MAX_ADDRESS_QUEUE_CHARS + 1)})
    assert got.queue is None
    assert "queue was not used" in got.notes[0]
    assert wp.address_inputs({"queue": "q" * wp.MAX_ADDRESS_QUEUE_CHARS}).queue is not None
    assert wp.address_inputs({"unknown": "x"}) == wp.AddressInputs(None, {}, ())


def test_the_address_wins_over_the_measured_prefill() -> None:
    ctx = AppContext(source=DemoSource(seed=0))
    measured = wp.measured_inputs(ctx.source, "replicaset", 1_581_343_200.0)
    outputs = wp.prefill(measured)
    kept = wp.keep_address_values(outputs, ["whatif-arrival", "whatif-workers"])
    assert kept[0] is dash.no_update
    assert kept[6] is dash.no_update
    assert kept[1] == outputs[1]
    assert kept[1] is not dash.no_update
    assert kept[7] == outputs[7]  # current workers are not an input
    layout = wp.make_layout(ctx)(queue="replicaset", **{"lambda": "20", "slo": "0.5",
                                                        "workers": "3-9"})
    ids = _ids(layout)
    assert ids["whatif-arrival"].value == 20.0
    assert ids["whatif-slo"].value == 0.5
    assert ids["whatif-workers"].value == [3, 9]
    assert ids["whatif-service"].value == wp.DEFAULT_SERVICE  # the prefill fills it
    pending = ids["whatif-address-inputs"].data
    assert pending["queue"] == "replicaset"
    assert pending["given"] == ["whatif-arrival", "whatif-slo", "whatif-workers"]


def test_parse_params_refuses_an_unknown_contention_mode() -> None:
    with pytest.raises(ModelInputError, match="Unknown contention mode 'x"):
        wp.parse_params(1, 1, 1, 1, 1, 1, "x" * 100, 0, 0, 1, "p95", [1, 4])
