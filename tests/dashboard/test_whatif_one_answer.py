"""The What-if page opened on a queue gives the plan's answer (issue 35 §5): for every demo
queue at several instants, the page's inputs as it prefills them, swept as the page sweeps
them, recommend the count the capacity plan recommends — whatever rule chose it (the SLO, the
utilization cap, the floor of a "fewer workers" change, "keep" where the limit is not the
worker count) — and draw the plan's rows. Before, the page recommended another count on 28 of
these 40 (queue, instant) pairs: λ prefilled rounded (14.06 → 14), the floor of 2 and the
hot key's "keep" not carried."""

from __future__ import annotations

from typing import Any

import dash
import pytest

from collectors.demo import DemoSource
from dashboard.advice import advise_fleet
from dashboard.pages import whatif as wp
from models import fleet as fl
from models.settings import AnalysisSettings

AT = fl.EPOCH_S + 40 * 86400 + 14 * 3600
HOURS = (0, 3, 9, 14, 20)
FLOOR = AnalysisSettings().thresholds.min_workers


def _typed(value: Any, default: Any) -> Any:
    return default if value is dash.no_update else value


def _page(filled: tuple[Any, ...], slo_s: float | None, **typed: Any) -> wp.WhatIfParams:
    """The sweep's params from the prefilled fields, as the page's callback parses them."""
    lam, s, cv2, mode, sigma, kappa, workers, _, _, ceiling, ceiling_cv2, _ = filled
    return wp.parse_params(
        typed.get("arrival", _typed(lam, wp.DEFAULT_ARRIVAL)), _typed(s, wp.DEFAULT_SERVICE),
        _typed(cv2, 1.0), 1.0, typed.get("arrival_mult", 1.0), 1.0, _typed(mode, "none"),
        _typed(sigma, 0.0), _typed(kappa, 0.0), slo_s, "p95", _typed(workers, [1, 16]),
        _typed(ceiling, None), _typed(ceiling_cv2, 1.0))


@pytest.mark.parametrize("hour", HOURS)
def test_the_page_opened_on_a_queue_recommends_the_plans_count(hour: int) -> None:
    at = AT + hour * 3600
    src = DemoSource(seed=0)
    advice = advise_fleet(src, at, AnalysisSettings())
    checked = 0
    for qa in advice.queues:
        plan = qa.plan
        assert plan is not None
        measured = wp.measured_inputs(src, qa.queue, at)
        filled = wp.prefill(measured)
        anchor = wp.PlanAnchor.from_payload(filled[11])
        if plan.sizing is None:
            continue
        assert anchor is not None, qa.queue
        params = _page(filled, plan.settings.slo_wait_s)
        view = wp.whatif_view(params, measured.workers, plan.recommended_workers, anchor,
                              FLOOR)
        assert view.result is not None, qa.queue
        assert view.result.recommendation.workers == plan.recommended_workers, \
            (hour, qa.queue, view.recommendation)
        # the sweep is the plan's: its exact inputs, so its rows are the plan's rows
        # (the fields show three digits; the page computes with what the plan sized with)
        assert view.result.inputs.arrival_rate_per_s == plan.sizing.arrival_rate_per_s
        by_c = {r.workers: r for r in view.result.rows}
        for row in plan.rows:
            got = by_c.get(row.workers)
            if got is None:
                continue
            assert got.throughput_per_s == pytest.approx(row.throughput_per_s, rel=1e-9)
            assert got.stable == row.stable
        checked += 1
    assert checked >= 6


def test_a_typed_input_is_a_what_if_not_the_plan() -> None:
    src = DemoSource(seed=0)
    measured = wp.measured_inputs(src, "replicaset", AT)
    filled = wp.prefill(measured)
    anchor = wp.PlanAnchor.from_payload(filled[11])
    assert anchor is not None
    assert anchor.workers is not None
    plan_text = "the capacity plan's count"
    same = wp.whatif_view(_page(filled, 1.0), measured.workers, anchor.workers, anchor, FLOOR)
    assert plan_text in same.recommendation
    # traffic doubles: the sweep's own answer, more workers than the plan's
    doubled = wp.whatif_view(_page(filled, 1.0, arrival_mult=2.0), measured.workers,
                             anchor.workers, anchor, FLOOR)
    assert doubled.result is not None
    assert plan_text not in doubled.recommendation
    assert doubled.result.recommendation.workers is not None
    assert doubled.result.recommendation.workers > anchor.workers
    # a store that is not an anchor is ignored, never an error
    assert wp.PlanAnchor.from_payload({"workers": "6"}) is None
    assert wp.PlanAnchor.from_payload("x") is None


def test_fewer_workers_keep_the_advisors_floor() -> None:
    # 20 workers, almost no load: the sweep alone says 1; a "fewer" change keeps min_workers
    params = wp.parse_params(0.5, 0.05, 1.0, 1.0, 1.0, 1.0, "none", 0, 0, 1.0, "p95", [1, 32])
    bare = wp.whatif_view(params, 20)
    assert bare.result is not None
    assert bare.result.recommendation.workers == 1
    kept = wp.whatif_view(params, 20, None, None, FLOOR)
    assert kept.result is not None
    assert kept.result.recommendation.workers == int(FLOOR)
    assert "floor" in kept.recommendation
    # a queue already at one worker is not raised by the floor of a change to fewer
    one = wp.whatif_view(params, 1, None, None, FLOOR)
    assert one.result is not None
    assert one.result.recommendation.workers == 1
