"""The card's options agree with its rule (issue 21, "the card contradicts itself"): for every
demo queue, a plan that lowers the count says so first and never "keep the current worker
count", one that raises it says so first, "keep" only where the count is kept; a polling
controller's options say to react to watches; the card shows the plan's options in order."""

from __future__ import annotations

import pytest

from collectors.demo import DemoSource
from dashboard.advice import advise_fleet
from dashboard.card import render_plan_card
from models import fleet as fl
from models.plan import CapacityPlan
from models.settings import AnalysisSettings
from models.verdicts.kinds import Kind
from tests.support.dash_tree import component_texts

AT = fl.EPOCH_S + 40 * 86400 + 14 * 3600
KEEP = "keep the current worker count"


@pytest.fixture(scope="module")
def plans() -> list[CapacityPlan]:
    advice = advise_fleet(DemoSource(seed=0), AT, AnalysisSettings())
    return [q.plan for q in advice.queues if q.plan is not None]


def test_every_plans_options_agree_with_its_rule(plans: list[CapacityPlan]) -> None:
    rules = set()
    for plan in plans:
        actions = [o.action for o in plan.options]
        assert actions, plan.queue
        rec, now = plan.recommended_workers, plan.workers_now
        rules.add(plan.rule)
        if plan.rule == "fewer":
            assert actions[0] == f"lower the worker count to {rec}", plan.queue
        if KEEP in actions:
            assert rec == now, plan.queue
        if rec is not None and now is not None and rec > now:
            assert actions[0].startswith("raise the worker count"), plan.queue
        if any(v.kind == Kind.REQUEUE_MISUSE and any(
                "RequeueAfter on" in str(p) for p in v.recommendation.get("patterns", ()))
               for v in plan.verdicts):
            assert any(a.startswith("react to watch events") for a in actions), plan.queue
    assert {"fewer", "keep", "utilization_target"} <= rules  # the demo covers each case


def test_the_card_shows_the_options_in_order(plans: list[CapacityPlan]) -> None:
    for plan in plans:
        text = " ".join(component_texts(render_plan_card(plan, (), "demo")))
        at = [text.find(o.action) for o in plan.options]
        assert all(i >= 0 for i in at), plan.queue
        assert at == sorted(at), plan.queue
