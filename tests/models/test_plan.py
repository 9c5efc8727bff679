"""The capacity plan (models.plan): one answer per queue, checked against closed forms and
against the mechanisms the demo fleet is built from."""

from __future__ import annotations

import math

import numpy as np
import pytest

from collectors.demo import DemoSource
from dashboard.advice import advise_fleet, histories_from_range
from models import fleet as fl
from models.plan import CapacityPlan
from models.settings import AnalysisSettings

AT = fl.EPOCH_S + 40 * 86400 + 14 * 3600


def _erlang_c_wait(lam: float, mu: float, c: int) -> float:
    """Mean wait of M/M/c from the textbook sums (Kleinrock vol. 1, eq. 3.40), written out."""
    a = lam / mu
    rho = a / c
    tail = a**c / math.factorial(c) / (1 - rho)
    p0 = 1.0 / (sum(a**k / math.factorial(k) for k in range(c)) + tail)
    return tail * p0 / (c * mu - lam)


@pytest.fixture(scope="module")
def plans() -> dict[str, CapacityPlan]:
    advice = advise_fleet(DemoSource(seed=0), AT, AnalysisSettings())
    out = {qa.queue: qa.plan for qa in advice.queues}
    assert all(p is not None for p in out.values())
    return {k: v for k, v in out.items() if v is not None}


def test_saturated_queue_is_sized_by_the_utilization_cap(plans: dict[str, CapacityPlan]
                                                         ) -> None:
    p = plans["replicaset"]
    assert p.binding_limit == "workers"
    assert p.workers_now == 4
    assert p.recommended_workers == 6
    assert p.rule == "utilization_target"
    lam, svc = p.demand_per_s, p.service_mean_s
    assert lam is not None
    assert svc is not None
    # the rule, from the demand and work time alone: the fewest c with λ·E[S]/c ≤ 0.7 ...
    assert min(c for c in range(1, 50) if lam * svc / c <= 0.7) == 6
    # ... while the SLO alone would take fewer: the M/M/c p95 at 5 workers is within 1 s
    row5 = p.row(5)
    assert row5 is not None
    assert row5.wait_p95_s is not None
    assert row5.wait_p95_s <= 1.0
    # the rows are M/M/c at the design demand: the textbook mean wait
    row6 = p.row(6)
    assert row6 is not None
    assert row6.wait_mean_s == pytest.approx(_erlang_c_wait(lam, 1 / svc, 6), rel=1e-9)
    # c·μ with the range's median pass time (the pass time does not grow with load here)
    assert p.history is not None
    passes = p.history.service_mean_s[np.isfinite(p.history.service_mean_s)]
    assert p.ceiling_per_s == pytest.approx(4 / float(np.median(passes)))
    assert [k.setting for k in p.knobs] == ["MaxConcurrentReconciles"]
    assert "MaxConcurrentReconciles: 6" in p.knobs[0].how


def test_the_band_spans_the_ranges_demand(plans: dict[str, CapacityPlan]) -> None:
    p = plans["replicaset"]
    settings = AnalysisSettings()
    rng = DemoSource(seed=0).range(AT - settings.range_s, AT, settings.step_s, ["replicaset"])
    lam = histories_from_range(rng)["replicaset"].arrival_rate_per_s
    lam = lam[np.isfinite(lam)]
    assert p.demand_per_s is not None
    assert p.service_mean_s is not None
    lo = min(float(np.median(lam)), p.demand_per_s)
    hi = max(float(lam.max()), p.demand_per_s)
    for r in p.rows:
        assert r.utilization_lo == pytest.approx(lo * p.service_mean_s / r.workers)
        assert r.utilization_hi == pytest.approx(hi * p.service_mean_s / r.workers)
        if r.stable and r.wait_mean_lo_s is not None and r.wait_mean_hi_s is not None:
            assert r.wait_mean_s is not None
            assert r.wait_mean_lo_s <= r.wait_mean_s <= r.wait_mean_hi_s
    assert "median to the highest demand" in p.band_source


def test_limits_that_are_not_the_worker_count(plans: dict[str, CapacityPlan]) -> None:
    cert = plans["certificate"]
    assert cert.binding_limit == "client_limiter"
    assert cert.rule == "contention_ceiling"
    assert cert.recommended_workers == cert.workers_now  # more workers only add contention
    assert cert.knobs[0].setting == "rest.Config QPS / Burst"
    assert "client's QPS/Burst" in " ".join(o.action for o in cert.options)
    hot = plans["ingress"]
    assert hot.binding_limit == "hot_key"
    # the hot key's serial rate is 1 / its own pass time, which no workqueue metric carries:
    # no number (1 / the queue's mean pass time was below what the queue completed)
    assert hot.ceiling_per_s is None
    assert hot.ceiling_basis is not None
    assert "not measured" in hot.ceiling_basis
    assert hot.headroom_text is not None
    assert hot.headroom_text.startswith("the hot key binds")
    storm = plans["dnsrecord"]
    assert storm.binding_limit == "retry_policy"
    assert storm.options[0].action.startswith("fix the failing dependency")
    over = plans["secret"]
    assert (over.workers_now, over.recommended_workers, over.rule) == (20, 2, "fewer")
