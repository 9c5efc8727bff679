"""The plan's charts: the decisive chart shows the history's own points and the plan's lines."""

from __future__ import annotations

import math

import pytest

from collectors.demo import DemoSource
from dashboard.advice import advise_fleet
from dashboard.plan_figures import MEASURED_NAME, decisive_figure, plan_wait_figure
from models import fleet as fl
from models.plan import CapacityPlan
from models.settings import AnalysisSettings

AT = fl.EPOCH_S + 40 * 86400 + 14 * 3600


@pytest.fixture(scope="module")
def replicaset() -> CapacityPlan:
    plan = advise_fleet(DemoSource(seed=0), AT, AnalysisSettings()).plan("replicaset")
    assert plan is not None
    return plan


def _trace(fig: dict[str, object], name: str) -> dict[str, object]:
    return next(t for t in fig["data"] if t["name"] == name)  # type: ignore[attr-defined,index]


def test_decisive_chart_draws_the_measured_points_and_the_plan(replicaset: CapacityPlan
                                                                ) -> None:
    fig = decisive_figure(replicaset)
    points = _trace(fig, MEASURED_NAME)
    # every point of the 2 h range at 60 s: (busy workers, throughput) as measured
    assert len(points["x"]) == len(replicaset.measured_busy_workers) >= 100  # type: ignore
    assert list(points["y"]) == list(replicaset.measured_throughput_per_s)  # type: ignore
    # linear scaling is c / E[S]: at c = 4, 4 / 0.25 s = 16/s
    linear = _trace(fig, "linear scaling c / E[S]")
    assert replicaset.service_mean_s is not None
    slope = linear["y"][1] / linear["x"][1]  # type: ignore[index]
    assert slope == pytest.approx(1 / replicaset.service_mean_s)
    shapes = fig["layout"]["shapes"]  # type: ignore[index]
    rec = [s for s in shapes if s.get("name") == "recommended"]
    assert [s["x0"] for s in rec] == [replicaset.recommended_workers]
    hlines = sorted(s["y0"] for s in shapes if s["x0"] == 0 and s["x1"] == 1)
    assert replicaset.demand_per_s in hlines  # the design demand
    assert replicaset.ceiling_per_s in hlines  # c·μ now


def test_wait_chart_shows_the_band_and_stops_four_decades_under_the_slo(
        replicaset: CapacityPlan) -> None:
    fig = plan_wait_figure(replicaset)
    names = [t["name"] for t in fig["data"]]
    assert "p95 band: median to highest demand of the range" in names
    lo, _ = fig["layout"]["yaxis"]["range"]
    assert lo == pytest.approx(math.log10(replicaset.settings.slo_wait_s / 1e4))
    mean = _trace(fig, "mean wait")
    stable = [r.workers for r in replicaset.rows if r.stable]
    assert list(mean["x"]) == stable  # type: ignore[arg-type]


def test_the_decisive_axis_fits_the_queue_not_the_linear_line() -> None:
    """secret runs 20 workers at 3.6/s: the linear line c / E[S] reaches 500/s at 40 workers,
    which would flatten the queue to the floor; the axis fits what the queue does."""
    secret = advise_fleet(DemoSource(seed=0), AT, AnalysisSettings()).plan("secret")
    assert secret is not None
    assert secret.demand_per_s is not None
    fig = decisive_figure(secret)
    lo, hi = fig["layout"]["yaxis"]["range"]
    assert lo == 0
    assert secret.recommended_workers is not None
    assert secret.service_mean_s is not None
    linear_at_rec = secret.recommended_workers / secret.service_mean_s
    assert max(secret.demand_per_s * 1.6, linear_at_rec) <= hi <= 1.1 * linear_at_rec
    assert max(_trace(fig, "linear scaling c / E[S]")["y"]) > 5 * hi  # type: ignore[arg-type]
