"""The plan's invariants on every demo queue at 24 hourly instants of a day (issue 35 §1):
what must hold whatever the verdict, checked against the plan's own measured inputs.

* no stated ceiling below what the queue completes now (a ceiling is measured, not today's
  throughput — and never under it);
* never "healthy" while the measured wait is proven over the SLO;
* a saturated queue's demand is marked a lower bound (client-go coalesces the adds of keys
  already waiting);
* "the backlog grows" (the row at the current count has no steady state) only where the
  depth does;
* the rows under a limit with a ceiling are that limit's model, never plain M/M/c;
* the limit named does not flip back and forth between neighbouring hours.

The regime matrix and the recordings check the same on the real Prometheus
(``tests/cli/test_advise_regimes.py``, ``tests/cli/test_recordings.py``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import pytest

from collectors.demo import DemoSource
from dashboard.advice import QueueAdvice, advise_fleet
from models import fleet as fl
from models.bindings import CEILING_LIMITS
from models.bindings.registry import limits
from models.measurements import QueueSnapshot
from models.plan import CapacityPlan
from models.settings import AnalysisSettings
from models.verdicts.sizing import observed_wait_vs_slo

DAY = fl.EPOCH_S + 40 * 86400
HOURS = tuple(DAY + h * 3600 for h in range(24))


@pytest.fixture(scope="module")
def day() -> dict[float, tuple[QueueAdvice, ...]]:
    src, settings = DemoSource(seed=0), AnalysisSettings()
    return {at: advise_fleet(src, at, settings).queues for at in HOURS}


def _each(day: dict[float, tuple[QueueAdvice, ...]]
          ) -> Iterator[tuple[float, str, CapacityPlan, QueueSnapshot]]:
    for at, queues in day.items():
        for qa in queues:
            assert qa.plan is not None
            assert qa.snapshot is not None
            yield at, qa.queue, qa.plan, qa.snapshot


def test_no_ceiling_is_below_what_the_queue_completes(
        day: dict[float, tuple[QueueAdvice, ...]]) -> None:
    for at, queue, plan, snap in _each(day):
        x = snap.throughput_per_s
        if plan.ceiling_per_s is not None and x is not None and math.isfinite(x):
            assert plan.ceiling_per_s >= 0.999 * x, (at, queue, plan.ceiling_basis)
            if not plan.demand_lower_bound:
                # a queue that keeps up completes its demand: its throughput is no ceiling
                # (the certificate's "ceiling" was exactly what it completed now)
                assert plan.ceiling_per_s != pytest.approx(x, rel=1e-9), (at, queue)


def test_never_healthy_while_the_measured_wait_breaks_the_slo(
        day: dict[float, tuple[QueueAdvice, ...]]) -> None:
    for at, queue, plan, snap in _each(day):
        if observed_wait_vs_slo(snap, plan.settings.slo_wait_s) == "above":
            assert plan.kind != "healthy", (at, queue)


def test_a_saturated_queue_marks_its_demand_a_lower_bound(
        day: dict[float, tuple[QueueAdvice, ...]]) -> None:
    for at, queue, plan, snap in _each(day):
        busy, depth = snap.busy_workers, snap.depth_mean
        if plan.workers_now and busy is not None and depth is not None \
                and busy >= 0.9 * plan.workers_now and depth >= 1.0:
            assert plan.demand_lower_bound, (at, queue)


def test_the_backlog_grows_only_where_the_depth_does(
        day: dict[float, tuple[QueueAdvice, ...]]) -> None:
    for at, queue, plan, snap in _each(day):
        row = plan.row(plan.workers_now) if plan.workers_now else None
        if row is not None and not row.stable:
            grew = (snap.depth_mean or 0.0) >= 1.0 or plan.demand_lower_bound
            assert grew, (at, queue, plan.rows_basis)


def test_the_rows_under_a_ceiling_are_that_limits_model(
        day: dict[float, tuple[QueueAdvice, ...]]) -> None:
    for at, queue, plan, _ in _each(day):
        if plan.binding_limit in CEILING_LIMITS and plan.sizing is not None \
                and plan.sizing.ceiling_per_s is not None:
            assert plan.model is not None
            assert "M/M/c" not in plan.model, (at, queue, plan.model)


def test_rows_that_cannot_be_the_limits_model_say_so(
        day: dict[float, tuple[QueueAdvice, ...]]) -> None:
    # a limit the workers cannot lift without a measured ceiling (the API server, the client
    # limiter never held, one hot key): the rows are M/M/c and must not read as a remedy —
    # before, ingress's hot key showed M/M/c waits falling with workers under "will not help"
    seen = 0
    for at, queue, plan, _ in _each(day):
        lim = limits()[plan.binding_limit]
        binds = lim.name in CEILING_LIMITS or lim.unmeasured is not None
        if binds and plan.sizing is not None and plan.sizing.ceiling_per_s is None:
            assert "no ceiling could be measured" in plan.rows_basis, (at, queue)
            assert "more workers will not deliver them" in plan.rows_basis, (at, queue)
            seen += 1
    assert seen >= 24  # the demo's ingress (a hot key) at every hour at least


def test_the_limit_named_does_not_flip_between_neighbouring_hours(
        day: dict[float, tuple[QueueAdvice, ...]]) -> None:
    named: dict[str, list[str]] = {}
    for _, queue, plan, _ in _each(day):
        named.setdefault(queue, []).append(plan.binding_limit)
    for name, seq in named.items():
        # the daily cycle may cross a limit's threshold twice (up at the morning's rise, down
        # in the evening); more changes are a verdict that flips on noise
        flips = sum(a != b for a, b in itertools.pairwise(seq))
        assert flips <= 2, (name, seq)
