"""What-if page: inputs, sweep view, recommendation text, contention fit, simulate (no browser)."""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import pytest

from collectors.demo import DemoSource
from dashboard import figures as fg
from dashboard.advice import advise_fleet
from dashboard.context import AppContext
from dashboard.pages import whatif as wp
from models import fleet as fl
from models.errors import ModelInputError
from models.measurements import QueueSnapshot, RangeData, Snapshot
from models.settings import AnalysisSettings

NOW = 1_700_000_000.0


def _params(**over: object) -> wp.WhatIfParams:
    raw: dict[str, object] = {
        "arrival": 1.0, "service": 1.0, "service_cv2": 1.0, "arrival_cv2": 1.0,
        "arrival_mult": 1.0, "service_mult": 1.0, "contention": "none", "sigma": 0.0,
        "kappa": 0.0, "slo": 1.0, "slo_quantile": "p95", "workers": [1, 16],
    }
    raw.update(over)
    return wp.parse_params(**raw)  # type: ignore[arg-type]


def test_parse_applies_multipliers_and_range() -> None:
    p = _params(arrival=2.0, arrival_mult=1.5, service=0.5, service_mult=2.0, workers=[9, 3])
    assert p.inputs.arrival_rate_per_s == 3.0
    assert p.inputs.service_mean_s == 1.0
    assert (p.inputs.workers_min, p.inputs.workers_max) == (3, 9)
    assert p.inputs.sigma is None  # contention off ignores typed σ, κ
    assert _params(slo_quantile="mean").inputs.slo_quantile is None
    assert _params(slo=None).inputs.slo_wait_s is None


@pytest.mark.parametrize(
    ("over", "message"),
    [({"arrival": None}, "Enter a number for the arrival rate λ."),
     ({"service": 0}, "The mean work time must be a positive number, got 0."),
     ({"arrival_mult": -1}, "The arrival multiplier must be a positive number, got -1."),
     ({"contention": "usl", "kappa": None}, "Enter a number for the coherency κ."),
     ({"slo_quantile": "p42"}, "Unknown SLO statistic 'p42'."),
     ({"workers": None}, "Choose a worker range with the slider.")],
)
def test_bad_inputs_are_sentences(over: dict[str, object], message: str) -> None:
    with pytest.raises(ModelInputError) as err:
        _params(**over)
    assert str(err.value) == message


def test_view_recommends_smallest_c_meeting_p95_slo() -> None:
    # λ = 1/s, E[S] = 1 s. M/M/c tail P(W > 1) = C·exp(−(c − 1)); c = 2: C = 1/3,
    # P = e^-1/3 = 0.123 > 0.05; c = 3: C = 1/11 (Erlang C, A = 1), P = e^-2/11 = 0.0123.
    view = wp.whatif_view(_params(), current_workers=5.0)
    assert view.error == ""
    assert view.recommendation.startswith("Recommended: 3 workers — smallest stable worker")
    assert "That is 2 fewer than the 5 now." in view.recommendation
    slo_fig = view.figures[1]
    p = list(slo_fig["data"][0]["y"])
    assert p[0] is None  # c = 1 is unstable (λ = μ): no probability drawn, not 1 or 0
    assert p[1] == pytest.approx(math.exp(-1) / 3, rel=1e-9)
    assert p[2] == pytest.approx(math.exp(-2) / 11, rel=1e-9)
    wait_fig, _, thr_fig = view.figures
    assert wait_fig["data"][0]["y"][0] is None  # unstable: no wait, not infinity, not 0
    assert wait_fig["layout"]["xaxis"]["title"]["text"] == "workers c"
    assert "(s)" in wait_fig["layout"]["yaxis"]["title"]["text"]
    assert list(thr_fig["data"][0]["y"][:3]) == [1.0, 2.0, 3.0]  # capacity c·μ


def test_narrowing_the_worker_range_changes_the_recommendation() -> None:
    wide = wp.whatif_view(_params(workers=[1, 16])).recommendation
    narrow = wp.whatif_view(_params(workers=[1, 2])).recommendation
    assert wide != narrow
    assert "cannot be met" in narrow
    assert narrow.startswith("Recommended: 2 workers")


def test_contention_lowers_capacity_by_usl() -> None:
    view = wp.whatif_view(_params(contention="usl", sigma=0.1, kappa=0.01, workers=[1, 4]))
    cap = list(view.figures[2]["data"][0]["y"])
    # c·μ/(1 + σ(c − 1) + κc(c − 1)) with μ = 1
    assert cap == pytest.approx([c / (1 + 0.1 * (c - 1) + 0.01 * c * (c - 1))
                                 for c in range(1, 5)])
    assert "USL σ = 0.1, κ = 0.01" in view.recommendation
    assert "with contention" in view.figures[2]["layout"]["title"]["text"]


def test_no_slo_chart_without_slo() -> None:
    view = wp.whatif_view(_params(slo=None))
    assert not view.figures[1]["data"]
    assert "no SLO given" in view.recommendation


class _UslSource:
    """History where throughput follows a known USL curve in busy workers."""

    name = "usl"

    def __init__(self, sigma: float, kappa: float, spread: float = 4.0) -> None:
        self.sigma, self.kappa, self.spread = sigma, kappa, spread

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        q = QueueSnapshot(queue="q", arrival_rate_per_s=3.0, service_mean_s=0.5, workers=8.0)
        return Snapshot(at=at, window_s=window_s, source="usl", queues=[q])

    def range(self, start: float, end: float, step_s: float,
              queues: list[str] | None = None, signals: object = None) -> RangeData:
        t = np.arange(start, end + 1, step_s)
        n = np.linspace(1.0, 1.0 + self.spread, len(t))
        x = 2.0 * n / (1 + self.sigma * (n - 1) + self.kappa * n * (n - 1))
        frame = pd.concat([
            pd.DataFrame({"queue": "q", "signal": "busy_workers", "t": t, "value": n}),
            pd.DataFrame({"queue": "q", "signal": "throughput_per_s", "t": t, "value": x}),
        ])
        return RangeData.from_frame(start=start, end=end, step_s=step_s, source="usl", frame=frame)


def test_measured_inputs_fit_usl_from_history() -> None:
    m = wp.measured_inputs(_UslSource(0.05, 0.02), "q", NOW)  # type: ignore[arg-type]
    assert m.contention is not None
    assert m.contention[0] == pytest.approx(0.05, abs=1e-4)
    assert m.contention[1] == pytest.approx(0.02, abs=1e-5)
    assert any("fitted by the USL" in n for n in m.notes)
    out = wp.prefill(m)
    assert out[:3] == (3.0, 0.5, 1.0)
    # the queue keeps up (busy workers 1–2 of 8) and no ceiling is measured: no contention
    # verdict, the page opens on the plan's USL fit
    assert out[3] == "usl"
    assert out[6] == [1, 16]  # max(16, 2 × 8 workers)


def test_measured_inputs_without_enough_load_say_so() -> None:
    m = wp.measured_inputs(_UslSource(0.05, 0.02, spread=0.5), "q", NOW)  # type: ignore[arg-type]
    assert m.contention is None
    assert any("No contention fit passed the advisor's gate" in n for n in m.notes)
    assert wp.prefill(m)[3] == "none"


def test_measured_inputs_unknown_and_none() -> None:
    m = wp.measured_inputs(DemoSource(seed=0), "nope", time.time())
    assert m.arrival_rate_per_s is None
    assert m.notes == ("There is no queue named “nope” in demo.",)
    assert "No queue selected" in wp.measured_inputs(None, None, NOW).notes[0]


def test_demo_certificate_contention_is_fitted() -> None:
    # the demo's certificate queue is built with USL σ = 0.08, κ = 0.015; its load spans
    # enough busy workers for a fit over a day (the advisor's gate: ≥ 2× spread, R² ≥ 0.8)
    m = wp.measured_inputs(DemoSource(seed=0), "certificate", AT_ADVICE,
                           AnalysisSettings(range_s=86400.0))
    assert m.contention is not None
    assert m.contention[0] == pytest.approx(0.08, abs=0.01)
    assert m.contention[1] == pytest.approx(0.015, abs=0.003)


def test_simulate_agrees_with_erlang_c() -> None:
    # M/M/3, λ = 2, μ = 1: Wq = C/(cμ − λ) with C = 4/9 → 0.444 s (Erlang C, A = 2)
    view = wp.simulate_view(_params(arrival=2.0), 3, arrivals=40_000)
    assert view.figure is not None
    sim, formula = view.figure["data"]
    assert formula["y"][0] == pytest.approx(4 / 9, rel=1e-9)
    assert sim["y"][0] == pytest.approx(4 / 9, rel=0.15)  # sampling error of a 40k-arrival run
    assert "vs formula 0.444 s" in view.text


def test_simulate_refuses_unstable_and_uses_recommendation() -> None:
    assert "unstable" in wp.simulate_view(_params(arrival=5.0), 2).text
    progress: list[float] = []
    view = wp.simulate_view(_params(), None, progress=progress.append, arrivals=5_000)
    assert "at c = 3" in view.text  # the recommendation of test_view_recommends…
    assert progress[-1] == 1.0


def test_simulate_refuses_a_fractional_worker_count() -> None:
    # 2.5 workers must not be truncated to 2 and simulated as if the user had typed 2
    view = wp.simulate_view(_params(arrival=2.0), 2.5, arrivals=5_000)
    assert view.figure is None
    assert view.text == "Not simulated: The worker count must be a whole number ≥ 1, got 2.5."


def test_layout_preselects_queue_and_keeps_ids() -> None:
    layout = wp.make_layout(AppContext(source=DemoSource(seed=0)))(queue="replicaset")
    ids: dict[str, object] = {}

    def walk(node: object) -> None:
        if getattr(node, "id", None):
            ids[node.id] = node  # type: ignore[attr-defined]
        children = getattr(node, "children", None)
        for child in children if isinstance(children, list) else [children]:
            if child is not None and not isinstance(child, str):
                walk(child)

    walk(layout)
    for required in ("whatif-workers", "whatif-recommendation", "whatif-advice",
                     "whatif-simulate", "whatif-queue"):
        assert required in ids
    assert ids["whatif-queue"].value == "replicaset"  # type: ignore[attr-defined]
    assert "deployment" in ids["whatif-queue"].options  # type: ignore[attr-defined]


def test_whatif_figures_reject_and_escape() -> None:
    with pytest.raises(ValueError, match="same length"):
        fg.sim_compare_figure(["a"], [1.0, 2.0], [1.0], workers=2)
    fig = fg.whatif_wait_figure([1, 2], [None, 0.5], [math.inf, 1.0], [1.2, 0.6], slo_s=1.0,
                                recommended=2)
    assert list(fig["data"][1]["y"]) == [None, 1.0]  # inf never reaches the chart
    assert list(fig["data"][2]["y"]) == [120.0, 60.0]
    assert fig["layout"]["yaxis2"]["title"]["text"].endswith("(%)")


# --- the advisor's recommendation on the what-if page ----------------------------------------

AT_ADVICE = fl.EPOCH_S + 40 * 86400 + 14 * 3600


def test_whatif_marks_the_advisors_worker_count_for_replicaset() -> None:
    src = DemoSource(seed=0)
    mark = wp.advisor_mark(src, "replicaset", AT_ADVICE)
    # the same plan as `advise` (one snapshot + the settings' range read, all queues)
    plan = advise_fleet(src, AT_ADVICE, AnalysisSettings()).plan("replicaset")
    assert plan is not None
    assert plan.kind == "add_workers"
    assert mark.workers == plan.recommended_workers
    snap = src.snapshot(AT_ADVICE, 300.0)
    now_c = next(q.workers for q in snap.queues if q.queue == "replicaset")
    assert now_c is not None
    assert mark.workers is not None
    assert mark.workers > now_c
    assert f"Recommended: {mark.workers} workers" in mark.text
    assert plan.headline in mark.text
    rendered = wp.render_advisor(mark)
    assert rendered[0].children == mark.text
    # the charts carry a vertical line at the advisor's count
    params = wp.parse_params(13.6, 0.25, 1, 1, 1, 1, "none", 0, 0, 1.0, "p95", [1, 16])
    view = wp.whatif_view(params, now_c, mark.workers)
    for fig in view.figures:
        lines = [s for s in fig["layout"]["shapes"] if s.get("name") == fg.ADVISOR_MARK_NAME]
        assert [(s["x0"], s["x1"]) for s in lines] == [(mark.workers, mark.workers)]
    assert not [s for s in wp.whatif_view(params, now_c).figures[0]["layout"]["shapes"]
                if s.get("name") == fg.ADVISOR_MARK_NAME]


def test_whatif_page_recommends_the_plans_count_from_its_prefill() -> None:
    # The page's own sweep of the prefilled inputs (design demand, measured work time, the
    # settings' SLO and utilization cap) recommends the plan's count: one rule everywhere.
    src = DemoSource(seed=0)
    settings = AnalysisSettings()
    m = wp.measured_inputs(src, "replicaset", AT_ADVICE, settings)
    plan = advise_fleet(src, AT_ADVICE, settings).plan("replicaset")
    assert plan is not None
    params = wp.parse_params(m.arrival_rate_per_s, m.service_mean_s, 1, 1, 1, 1, "none", 0, 0,
                             settings.slo_wait_s, "p95", [1, 32])
    view = wp.whatif_view(params, m.workers)
    assert view.result is not None
    assert view.result.recommendation.workers == plan.recommended_workers


def test_whatif_advisor_without_a_worker_count_says_so() -> None:
    mark = wp.advisor_mark(DemoSource(seed=0), "certificate", AT_ADVICE)
    # contention: the plan keeps the current count (more workers would only add contention)
    assert mark.workers == 6
    assert "More workers will not help" in mark.text
    assert wp.advisor_mark(DemoSource(seed=0), None, AT_ADVICE) == wp.AdvisorMark(None, "")
    assert wp.render_advisor(wp.AdvisorMark(None, "")) == ""


def test_an_slo_between_bucket_edges_is_said_to_be_approximate() -> None:
    on_edge = wp.whatif_view(_params(slo=1.0))
    assert "bucket edges" not in on_edge.recommendation
    between = wp.whatif_view(_params(slo=0.25))
    assert ("lies between the queue-wait histogram's bucket edges 0.1 s and 1 s"
            in between.recommendation)
    # the SLO field offers the edges
    field = wp._num_field("wait SLO", "x", 1.0, "any", "s", wp.SLO_EDGES_S)
    datalist = field.children[2]
    assert [o.value for o in datalist.children] == ["0.001", "0.01", "0.1", "1", "10", "100",
                                                    "1000"]
    assert field.children[1].list == datalist.id
