"""Queue detail page: view model, figures, model fit, fluid projection (no browser)."""

from __future__ import annotations

import math
import time

import pandas as pd
import pytest

from collectors.cache import CachedSource
from collectors.demo import DemoSource
from collectors.errors import PrometheusUnreachable
from dashboard import figures as fg
from dashboard.advice import advise_fleet
from dashboard.numbers import number_text
from dashboard.pages import queue as qp
from models import fleet as fl
from models.measurements import QueueSnapshot, RangeData, Snapshot
from models.settings import AnalysisSettings
from tests.support.dash_tree import component_texts

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


def test_a_depth_randomness_explains_is_not_called_a_backlog_to_clear() -> None:
    # issue 21: "clears in 4.7 s" beside a depth that sat at 7 for an hour. λ = 2.85, c = 3,
    # E[S] = 1 s: ρ = 0.95, M/M/3's mean queue Lq = C·ρ/(1 − ρ) with Erlang C from its sum
    a, c = 2.85, 3
    head = sum(a ** k / math.factorial(k) for k in range(c))
    tail = a ** c / math.factorial(c) / (1 - a / c)
    lq = tail / (head + tail) * (a / c) / (1 - a / c)
    _, text = qp.fluid_projection(_queue(arrival_rate_per_s=2.85, depth_current=7.0), NOW,
                                  100.0)
    assert "what randomness keeps queued at this load" in text
    assert f"{lq:.3g}" in text or f"{lq:.2f}".rstrip("0") in text
    assert "not a backlog" in text


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
    assert f"M/M/c model {number_text(math.log(20 / 3), 's')}" in lines[1]


def test_model_fit_unstable() -> None:
    lines = qp.model_fit(_queue())  # λ = 4 ≥ c·μ = 3
    assert "unstable" in lines[0]


def test_measures_say_no_data_not_zero() -> None:
    q = QueueSnapshot(queue="x", throughput_per_s=2.0, retries_per_s=0.0,
                      missing={"external_effects_per_s": "no metric"})
    items = qp.measures(q)
    assert [m.label.split(" ")[0] for m in items] == ["queue", "reconcile", "retry", "API",
                                                     "external"]
    assert items[2].value.startswith("0/s · 0 per reconcile")  # a measured zero stays 0
    assert items[4].value == "no data · no data per reconcile"
    assert "no metric" in items[4].note
    # beyond the queue: nothing measured reads as no data, never as 0
    beyond = qp.beyond_measures(q)
    assert [m.label.split(" ")[0] for m in beyond] == ["API", "API", "admission", "webhooks",
                                                      "depth", "failures"]
    assert beyond[1].value.startswith("seats no data of no data · queue wait no data")
    assert beyond[4].value == "not a priority queue"


def test_beyond_measures_show_the_level_and_the_priorities() -> None:
    q = QueueSnapshot(queue="x", apf_priority_level="workload-low", apf_seats_in_use_mean=38.0,
                      apf_seat_limit=40.0, apf_wait_mean_s=0.25, apf_rejected_per_s=1.5,
                      depth_by_priority={"10": 1.0, "-100": 6.0},
                      admission_webhook_mean_s={"fast": 0.01, "slow.example.com": 0.2})
    items = {m.label: m for m in qp.beyond_measures(q)}
    level = items["API server level workload-low"].value
    assert level.startswith("seats 38 of 40 (95 %)")
    assert "queue wait 0.25 s" in level
    assert "rejected 1.5/s" in level
    assert items["admission webhooks (slowest)"].value.startswith("slow.example.com 0.2 s")
    assert items["depth by priority"].value == "10: 1 · -100: 6"


def test_measures_give_a_decade_bucket_as_a_range_and_explain_a_long_tail() -> None:
    # 1000 waits, counted into client-go's decade buckets: 960 within 100 µs (200 of them
    # within 10 µs) and 40 behind long passes, 0.5 s each; passes: 700 ≤ 0.2 s, 1000 ≤ 0.4 s.
    from models.histogram import bucket_quantile

    wait_bounds = (9.999999999999999e-06, 9.999999999999999e-05, 0.1, 1.0, math.inf)
    wait = bucket_quantile(0.95, wait_bounds, [[200.0, 960.0, 960.0, 1000.0, 1000.0]])
    work = bucket_quantile(0.95, (0.2, 0.4, math.inf), [[700.0, 1000.0, 1000.0]])
    mean_wait = (200 * 5e-6 + 760 * 5e-5 + 40 * 0.5) / 1000  # 20 ms: the 40 long waits
    q = QueueSnapshot(
        queue="x", queue_wait_p95_s=float(wait.values[0]), queue_wait_mean_s=mean_wait,
        work_p95_s=float(work.values[0]), service_mean_s=0.2, longest_running_s=0.35,
        quantile_bounds={
            "queue_wait_p95_s": (float(wait.bucket_lo[0]), float(wait.bucket_hi[0])),
            "work_p95_s": (float(work.bucket_lo[0]), float(work.bucket_hi[0]))})
    age, duration, *_ = qp.measures(q)
    assert age.value == "p95 between 10 µs and 100 µs · mean 20 ms"
    assert "below the mean" in age.note
    # (0.2 s, 0.4 s] is ×2 wide: the interpolated value, 0.2 + 0.2 × (950 − 700) / 300
    assert duration.value == "p95 0.367 s · mean 0.2 s · longest running 0.35 s"
    assert "below the mean" not in duration.note


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
    # the charts' range read, then the plan's (the settings' range and step, as `advise`)
    assert src.calls == ["snapshot", "range ['q<b>']", "snapshot", "range ['q<b>']"]
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
    five, heading, beyond = measures.children
    assert five.children.children[0].children[0].children.startswith("queue age")
    assert heading.children.startswith("Beyond the queue")
    assert beyond.children.children[0].children[0].children == "API time (whole process)"


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


def test_verdict_card_lists_the_advisors_verdicts_for_certificate() -> None:
    src = CachedSource(DemoSource(seed=0))
    view = qp.queue_view(src, "certificate", "1h", AT_DEMO)
    # the charts' range (1 h) and the plan's (the settings': 2 h at 60 s) share the snapshot
    assert src.fetches == 3
    # the card shows the plan `advise` gives for the same data, verdicts in the same order
    expected = advise_fleet(DemoSource(seed=0), AT_DEMO, AnalysisSettings())
    plan = expected.plan("certificate")
    assert plan is not None
    assert view.plan is not None
    assert view.plan.payload() == plan.payload()
    assert [v.kind for v in view.verdicts] == [v.kind for v in plan.verdicts]
    assert "contention" in [v.kind for v in view.verdicts]
    card = qp.render_verdicts(view)
    texts = component_texts(card)
    assert plan.headline in texts
    assert "More workers will not help" in plan.headline
    assert "API client limiter" in texts  # the binding limit, labelled
    assert f"{100 * plan.confidence:.0f} %" in texts
    assert plan.options[0].action in texts  # ranked options, best first
    # every verdict in full, folded, in the advisor's order
    details = card.children[-1]  # type: ignore[union-attr]
    items = details.children[1].children[1].children
    assert [li.className.split()[-1] for li in items] == [f"ql-kind-{v.kind}"
                                                           for v in view.verdicts]
    contention = next(v for v in view.verdicts if v.kind == "contention")
    assert contention.summary in texts
    assert "do not add workers" in texts  # the recommendation's action
    assert qp.verdict_value(contention.evidence["api_calls_per_reconcile"]) in texts
    # the evidence carries the PromQL that reads it for this queue
    promql = [e.promql for e in view.evidence]
    assert any("workqueue_adds_total" in q and 'name=~"certificate"' in q for q in promql)


def test_verdict_values_are_text_never_nan() -> None:
    assert qp.verdict_value(None) == "no data"
    assert qp.verdict_value(0.061234, "wait_mean_s") == "61.2 ms"
    assert qp.verdict_value(13.94, "arrival_rate_per_s") == "13.9/s"
    assert qp.verdict_value(0.9, "utilization_design") == "90 %"
    assert qp.verdict_value(float("nan")) == "no data"
    assert qp.verdict_value(True) == "yes"
    assert qp.verdict_value(("a", "b")) == "a, b"
    assert qp.verdict_value({"x_s": 2.0}) == "x: 2 s"
    assert qp.verdict_value("fix_failure_not_workers", "action") == "fix failure not workers"
    # labels are words, the unit goes with the value
    assert qp._label("expected_p_wait_over_slo") == "expected P(wait > SLO)"
    assert qp._label("utilization_design") == "utilization design"
    assert qp._label("design_arrival_rate_per_s") == "design arrival rate"


def test_verdict_text_is_never_markup() -> None:
    from models.advisor import Verdict

    evil = Verdict("hot_key", "warning", "<script>alert(1)</script>",
                   {"note": "<b>x</b>"}, {"action": "split_hot_key"}, 0.7)
    li = qp.render_verdict(evil)
    texts = component_texts(li)
    assert "<script>alert(1)</script>" in texts  # a plain string child: React escapes it
    assert "dangerously_allow_html" not in repr(li)


def test_model_fit_rounds_the_worker_count_as_the_advisor_does() -> None:
    # a gauge averaging 0.6 is one worker for the advisor and the plan: the page agrees
    q = QueueSnapshot(queue="q", arrival_rate_per_s=0.5, service_mean_s=1.0, workers=0.6,
                      queue_wait_mean_s=1.0)
    lines = qp.model_fit(q)
    assert "c = 1" in lines[-1]
    # M/M/1, λ = 0.5, μ = 1: Wq = ρ / (μ − λ) = 1 s
    assert "M/M/c model 1 s" in lines[0]
    none = qp.model_fit(QueueSnapshot(queue="q", arrival_rate_per_s=0.5, service_mean_s=1.0,
                                      workers=0.4))
    assert none == ("No M/M/c estimate: workers not measured.",)


def test_the_priority_cell_does_not_contradict_the_doctor() -> None:
    # the doctor reads the demo's exposition (priority label on workqueue_depth: "priority
    # queue on"); the demo's snapshot does not read depth by priority, and says so
    snap = DemoSource(seed=0).snapshot(AT_DEMO, 300)
    q = next(q for q in snap.queues if q.queue == "replicaset")
    cell = next(m for m in qp.beyond_measures(q) if m.label == "depth by priority")
    assert cell.value == "not read: the demo does not read depth by priority"
