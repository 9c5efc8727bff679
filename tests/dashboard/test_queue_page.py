"""Queue detail page: view model, figures, model fit, fluid projection (no browser)."""

from __future__ import annotations

import math
import time

import pandas as pd
import pytest

from collectors.cache import CachedSource
from collectors.demo import DemoSource
from collectors.errors import PrometheusUnreachable
from collectors.types import QueueSnapshot, RangeData, Snapshot
from dashboard import figures as fg
from dashboard.advice import advise_data
from dashboard.pages import queue as qp
from models import fleet as fl

NOW = 1_700_000_000.0


class _FakeSource:
    """A Source with one hand-made queue and a chosen history (for exact assertions)."""

    name = "fake"

    def __init__(self, q: QueueSnapshot, rows: list[tuple[str, float, float]]) -> None:
        self.q = q
        self.rows = rows
        self.calls: list[str] = []

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        self.calls.append("snapshot")
        return Snapshot(at=at, window_s=window_s, source="fake", queues=[self.q])

    def range(self, start: float, end: float, step_s: float,
              queues: list[str] | None = None, signals: object = None) -> RangeData:
        self.calls.append(f"range {queues}")
        frame = pd.DataFrame(
            [{"queue": self.q.queue, "signal": s, "t": t, "value": v} for s, t, v in self.rows],
            columns=["queue", "signal", "t", "value"])
        return RangeData.from_frame(start=start, end=end, step_s=step_s, source="fake", frame=frame)


def _queue(**fields: float) -> QueueSnapshot:
    base: dict[str, float] = {"arrival_rate_per_s": 4.0, "throughput_per_s": 3.0,
                              "service_mean_s": 1.0, "workers": 3.0, "depth_current": 4.0}
    base.update(fields)
    return QueueSnapshot(queue="q<b>", **base)  # type: ignore[arg-type]


def test_fluid_projection_growth_matches_closed_form() -> None:
    # λ = 4, c·μ = 3/1 s = 3: backlog 4 + t
    series, text = qp.fluid_projection(_queue(), NOW, 100.0)
    assert series is not None
    ts, qs = series
    assert ts[0] == NOW
    for t, q in zip(ts, qs, strict=True):
        assert q == pytest.approx(4.0 + (t - NOW))
    assert "grows by 1 items/s" in text
    assert "never clears" in text


def test_fluid_projection_clears_at_q0_over_slack() -> None:
    # λ = 2, c·μ = 3: clears at 4 / (3 − 2) = 4 s; the clear time is a projection point
    series, text = qp.fluid_projection(_queue(arrival_rate_per_s=2.0), NOW, 100.0)
    assert series is not None
    assert "clears in 4 s" in text
    ts, qs = series
    assert qs[ts.index(NOW + 4.0)] == 0.0


def test_fluid_projection_missing_input_is_said() -> None:
    series, text = qp.fluid_projection(_queue(service_mean_s=None), NOW, 100.0)  # type: ignore[arg-type]
    assert series is None
    assert "capacity c·μ" in text


def test_model_fit_mmc_values() -> None:
    # M/M/2 with λ = 1, μ = 1 (A = 1): C = 1/3, Wq = C/(cμ − λ) = 1/3 s (Kleinrock §3.5)
    q = _queue(arrival_rate_per_s=1.0, service_mean_s=1.0, workers=2.0, queue_wait_mean_s=0.5,
               queue_wait_p95_s=2.0)
    lines = qp.model_fit(q)
    assert "observed 0.5 s · M/M/c model 0.333 s" in lines[0]
    assert "1.5× the model" in lines[0]
    # p95 = ln(C/0.05)/(cμ − λ) = ln(20/3)
    assert f"M/M/c model {qp.fmt(math.log(20 / 3), 's')}" in lines[1]


def test_model_fit_unstable() -> None:
    lines = qp.model_fit(_queue())  # λ = 4 ≥ c·μ = 3
    assert "unstable" in lines[0]


def test_measures_say_no_data_not_zero() -> None:
    q = QueueSnapshot(queue="x", throughput_per_s=2.0, retries_per_s=0.0,
                      missing={"external_effects_per_s": "no metric"})
    items = qp.measures(q)
    assert [m.label.split(" ")[0] for m in items] == ["queue", "reconcile", "retry", "API",
                                                     "external"]
    assert items[2].value.startswith("0 /s · 0 per reconcile")  # a measured zero stays 0
    assert items[4].value == "no data · no data per reconcile"
    assert "no metric" in items[4].note


@pytest.mark.parametrize(("value", "text"), [(None, "no data"), (math.nan, "no data"),
                                             (0.0, "0 s"), (0.7151, "0.715 s"),
                                             (670.2, "670 s"), (4.04e-4, "4.04e-04 s")])
def test_fmt(value: float | None, text: str) -> None:
    assert qp.fmt(value, "s") == text


def test_combine_divides_on_common_times_only() -> None:
    a = ([0.0, 15.0, 30.0], [6.0, 6.0, 6.0])
    b = ([15.0, 30.0, 45.0], [2.0, 0.0, 3.0])
    assert qp.combine(a, b, "div") == ([15.0], [3.0])
    assert qp.combine(a, None, "div") == ([], [])


def test_queue_view_two_source_calls_and_seven_charts() -> None:
    rows = [(s, NOW - 60 + k * 15, float(k + 1)) for k in range(5)
            for s in ("depth_current", "workers", "service_mean_s", "throughput_per_s",
                      "external_effects_per_s", "arrival_rate_per_s")]
    src = _FakeSource(_queue(), rows)
    view = qp.queue_view(src, "q<b>", "15m", NOW)  # type: ignore[arg-type]
    assert view.message == ""
    assert src.calls == ["snapshot", "range ['q<b>']"]
    assert set(view.figures) == set(qp.GRAPH_IDS)
    depth = view.figures["queue-depth-graph"]
    assert depth["data"][0]["name"] == "depth (items waiting)"
    assert "fluid projection" in depth["data"][1]["name"]
    # capacity = workers / service mean = 1 at every point; effects per reconcile = 1
    cap = view.figures["queue-rates-graph"]["data"][2]
    assert list(cap["y"]) == [1.0] * 5
    assert list(view.figures["queue-effects-graph"]["data"][0]["y"]) == [1.0] * 5
    # a signal with no history is a "no data" chart, not zeros
    api = view.figures["queue-api-graph"]
    assert not api["data"]
    assert api["layout"]["annotations"][0]["text"] == "no data for this range"


def test_unknown_queue_is_a_message() -> None:
    view = qp.queue_view(DemoSource(seed=0), "no-such<script>", "1h", time.time())
    assert view.message.startswith("There is no queue named “no-such<script>” in demo.")
    assert "deployment" in view.message
    out = qp.render_view(view)
    assert out[0] == view.message  # rendered as text by Dash (escaped), never as HTML
    assert len(out) == 5 + len(qp.GRAPH_IDS)


def test_unknown_range_and_down_source() -> None:
    assert "Unknown range" in qp.queue_view(DemoSource(seed=0), "deployment", "2y",
                                            time.time()).message

    class Down:
        name = "prom"

        def snapshot(self, at: float, window_s: float) -> Snapshot:
            raise PrometheusUnreachable("connection refused")

    view = qp.queue_view(Down(), "x", "1h", NOW)  # type: ignore[arg-type]
    assert view.message == "Could not read the queues: connection refused"


@pytest.mark.parametrize("range_key", list(qp.RANGES))
def test_demo_queue_every_range(range_key: str) -> None:
    view = qp.queue_view(DemoSource(seed=0), "replicaset", range_key, time.time())
    assert view.message == ""
    for graph_id in qp.GRAPH_IDS:
        fig = view.figures[graph_id]
        assert fig["layout"]["title"]["text"].endswith("?")
    rates = view.figures["queue-rates-graph"]
    assert len(rates["data"]) == 3
    assert "(items/s)" in rates["layout"]["yaxis"]["title"]["text"]
    assert view.model_fit[0].startswith("Mean wait: observed")
    assert len(view.measures) == 5


def test_render_view_outputs() -> None:
    view = qp.queue_view(DemoSource(seed=0), "dnsrecord", "1h", time.time())
    message, measures, _fit, fluid, summary, *figs = qp.render_view(view)
    assert message == ""
    assert len(figs) == len(qp.GRAPH_IDS)
    assert fluid.startswith("Fluid view")
    assert "points per signal" in summary
    assert measures.children.children[0].children[0].children.startswith("queue age")


def test_layout_decodes_the_name_and_keeps_it_text() -> None:
    layout = qp.layout(name="kube-system%2F%3Cb%3E")
    code = layout.children[0].children[1]
    assert code.id == "queue-name"
    assert code.children == "kube-system/<b>"
    assert qp.whatif_href("a/b c") == "/whatif?queue=a%2Fb%20c"


def test_figures_never_plot_missing_as_zero() -> None:
    # a gap of several steps breaks the line with None; NaN values become None
    xs, ys = fg.series_points(([0.0, 15.0, 90.0, 105.0], [1.0, math.nan, 2.0, 3.0]), 15.0)
    assert ys == [1.0, None, None, 2.0, 3.0]
    assert len(xs) == len(ys)


# --- the advisor's verdict card ---------------------------------------------------------------

AT_DEMO = fl.EPOCH_S + 40 * 86400 + 14 * 3600


def _texts(component: object) -> list[str]:
    """Every string child in a Dash component tree (what the browser would show as text)."""
    out: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, list | tuple):
            for child in node:
                walk(child)
        elif hasattr(node, "children"):
            walk(node.children)

    walk(component)
    return out


def test_verdict_card_lists_the_advisors_verdicts_for_certificate() -> None:
    src = CachedSource(DemoSource(seed=0))
    view = qp.queue_view(src, "certificate", "1h", AT_DEMO)
    assert src.fetches == 2  # the card shares the charts' snapshot and range read
    # the card shows what the advisor says about the same data, in its order
    rng = DemoSource(seed=0).range(AT_DEMO - 3600, AT_DEMO, qp.range_step(3600.0),
                                   ["certificate"])
    snap = DemoSource(seed=0).snapshot(AT_DEMO, 300.0)
    expected = advise_data(snap, rng, range_s=3600.0, slo_wait_s=1.0,
                           queue="certificate").queues[0].verdicts
    assert [v.kind for v in view.verdicts] == [v.kind for v in expected]
    assert "contention" in [v.kind for v in view.verdicts]
    card = qp.render_verdicts(view)
    texts = _texts(card)
    items = card.children[2].children  # type: ignore[union-attr]
    assert [li.className.split()[-1] for li in items] == [f"ql-kind-{v.kind}"
                                                           for v in view.verdicts]
    contention = next(v for v in view.verdicts if v.kind == "contention")
    assert contention.summary in texts
    assert contention.severity in texts
    assert "do not add workers" in texts  # the recommendation's action
    # a key evidence number, formatted: API calls per reconcile
    assert qp.verdict_value(contention.evidence["api_calls_per_reconcile"]) in texts
    assert "api calls per reconcile" in texts


def test_verdict_values_are_text_never_nan() -> None:
    assert qp.verdict_value(None) == "no data"
    assert qp.verdict_value(0.061234, "wait_mean_s") == "0.0612 s"
    assert qp.verdict_value(13.94, "arrival_rate_per_s") == "13.9 /s"
    assert qp.verdict_value(float("nan")) == "no data"
    assert qp.verdict_value(True) == "yes"
    assert qp.verdict_value(("a", "b")) == "a, b"
    assert qp.verdict_value({"x_s": 2.0}) == "x_s: 2 s"


def test_verdict_text_is_never_markup() -> None:
    from models.advisor import Verdict

    evil = Verdict("hot_key", "warning", "<script>alert(1)</script>",
                   {"note": "<b>x</b>"}, {"action": "split_hot_key"}, 0.7)
    li = qp.render_verdict(evil)
    texts = _texts(li)
    assert "<script>alert(1)</script>" in texts  # a plain string child: React escapes it
    assert "dangerously_allow_html" not in repr(li)
