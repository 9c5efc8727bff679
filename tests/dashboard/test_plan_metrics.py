"""``/metrics`` of the dashboard server: the exposition, parsed back, says what the plans say.

The expected values are the plan objects of ``advise_fleet`` over the demo at a fixed instant,
computed here independently of the refresher and the collector; the exposition is read back
with prometheus_client's own parser, so escaping and number formatting are checked too.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families

from collectors.cache import CachedSource
from collectors.demo import DemoSource
from collectors.errors import PrometheusUnavailable
from dashboard.advice import FleetAdvice, advise_fleet
from dashboard.app import create_app
from dashboard.context import AppContext
from dashboard.plan_metrics import (
    SCRAPE_TIMEOUT_HEADER,
    SEVERITY_LEVEL,
    PlanCollector,
    scrape_wait_s,
)
from dashboard.plan_refresh import PlanRefresher, RefreshState, TimedReads
from models.measurements import RangeData, Snapshot
from models.settings import AnalysisSettings

AT = 1581343200.0

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture(scope="module")
def advice() -> FleetAdvice:
    return advise_fleet(DemoSource(seed=0), AT, AnalysisSettings())


def parse(text: str) -> Samples:
    return {(s.name, frozenset(s.labels.items())): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def exposition(state: RefreshState, status: dict[str, Any] | None = None) -> str:
    registry = CollectorRegistry(auto_describe=False)
    PlanCollector(lambda: state, (lambda: status) if status is not None else None,
                  registry=registry)
    return generate_latest(registry).decode()


def state_of(advice: FleetAdvice | None) -> RefreshState:
    return RefreshState(advice=advice, computed_at=1.7e9 if advice else None,
                        age_s=3.0 if advice else None, duration_s=0.25, read_s=0.125,
                        refreshes=4, source_errors=1, refresh_errors=0)


def of_queue(samples: Samples, name: str, queue: str) -> dict[frozenset[tuple[str, str]], float]:
    return {labels: v for (n, labels), v in samples.items()
            if n == name and dict(labels).get("queue") == queue}


def one(samples: Samples, name: str, queue: str) -> tuple[dict[str, str], float]:
    found = of_queue(samples, name, queue)
    assert len(found) == 1, (name, queue, found)
    labels, value = next(iter(found.items()))
    return dict(labels), value


def test_the_refreshed_exposition_is_each_demo_queues_plan(advice: FleetAdvice) -> None:
    ctx = AppContext(source=CachedSource(DemoSource(seed=0), ttl_s=15.0), at=AT)
    refresher = PlanRefresher(ctx)
    samples = parse(exposition(refresher.refresh()))
    assert len(advice.queues) == 8
    for qa in advice.queues:
        plan = qa.plan
        assert plan is not None
        identity = {"queue": qa.queue, "controller": qa.labels["controller"]}
        for name, expected in (
            ("queuelens_plan_recommended_workers", plan.recommended_workers),
            ("queuelens_plan_current_workers", plan.workers_now),
            ("queuelens_plan_design_demand_per_second", plan.demand_per_s),
            ("queuelens_plan_demand_now_per_second", plan.demand_now_per_s),
            ("queuelens_plan_service_mean_seconds", plan.service_mean_s),
            ("queuelens_plan_confidence_ratio", plan.confidence),
        ):
            labels, value = one(samples, name, qa.queue)
            assert labels == identity  # no empty namespace/cluster labels: the demo has none
            assert value == expected, (qa.queue, name)
        _, level = one(samples, "queuelens_plan_severity", qa.queue)
        assert level == {"ok": 0, "info": 1, "warning": 2, "critical": 3}[plan.severity]
        labels, value = one(samples, "queuelens_plan_verdict_info", qa.queue)
        assert value == 1.0
        assert labels == {**identity, "kind": plan.kind, "severity": plan.severity,
                          "binding_limit": plan.binding_limit, "rule": plan.rule}
        ceiling = of_queue(samples, "queuelens_plan_ceiling_per_second", qa.queue)
        assert list(ceiling.values()) == ([] if plan.ceiling_per_s is None
                                          else [plan.ceiling_per_s])
    # the demo at this instant: what advise says (its table), so a wrong plan cannot pass
    kinds = {qa.queue: one(samples, "queuelens_plan_verdict_info", qa.queue)[0]["kind"]
             for qa in advice.queues}
    assert kinds["replicaset"] == "add_workers"
    assert one(samples, "queuelens_plan_recommended_workers", "replicaset")[1] == 6
    assert one(samples, "queuelens_plan_current_workers", "secret")[1] == 20
    health = {n: v for (n, labels), v in samples.items() if not labels}
    assert health["queuelens_refreshes_total"] == 1
    assert health["queuelens_source_errors_total"] == 0
    assert health["queuelens_evaluation_timestamp_seconds"] == AT
    assert health["queuelens_refresh_duration_seconds"] >= health["queuelens_source_read_seconds"]


def test_a_missing_value_has_no_sample_not_zero(advice: FleetAdvice) -> None:
    no_ceiling = [qa.queue for qa in advice.queues
                  if qa.plan is not None and qa.plan.ceiling_per_s is None]
    assert "deployment" in no_ceiling  # a healthy queue: no limit binds
    first = advice.queues[0]
    assert first.plan is not None
    gone = replace(first, plan=replace(first.plan, recommended_workers=None,
                                       demand_per_s=float("nan"), service_mean_s=float("inf")))
    samples = parse(exposition(state_of(replace(advice, queues=(gone, *advice.queues[1:])))))
    for name in ("queuelens_plan_ceiling_per_second", "queuelens_plan_recommended_workers",
                 "queuelens_plan_design_demand_per_second",
                 "queuelens_plan_service_mean_seconds"):
        assert of_queue(samples, name, first.queue) == {}, name
    for queue in no_ceiling:
        assert of_queue(samples, "queuelens_plan_ceiling_per_second", queue) == {}
    # the other series of that queue, and the other queues' ceilings, are still there
    assert one(samples, "queuelens_plan_current_workers", first.queue)[1] == 5
    assert one(samples, "queuelens_plan_ceiling_per_second", "replicaset")[1] > 0


@pytest.mark.parametrize("hostile", ['a"b', "line\nbreak", "back\\slash", '\\"\n\\n"}',
                                     "ünï ☃ {x=\"1\"}"])
def test_a_hostile_queue_name_survives_the_round_trip(advice: FleetAdvice, hostile: str) -> None:
    first = advice.queues[0]
    assert first.plan is not None
    evil = replace(first, queue=hostile, labels={**first.labels, "controller": hostile + "\\"},
                   plan=replace(first.plan, queue=hostile))
    text = exposition(state_of(replace(advice, queues=(evil, *advice.queues[1:]))))
    samples = parse(text)
    labels, value = one(samples, "queuelens_plan_recommended_workers", hostile)
    assert labels["controller"] == hostile + "\\"
    assert value == first.plan.recommended_workers
    assert one(samples, "queuelens_plan_verdict_info", hostile)[0]["kind"] == first.plan.kind
    # every line is one sample or one comment: a newline in a name did not split a line
    assert all(line.startswith(("#", "queuelens_")) for line in text.splitlines())


def test_before_any_plan_only_the_health_series() -> None:
    status = {"source_state": "unknown"}
    samples = parse(exposition(RefreshState(None, None, None, None, None), status))
    assert not [n for n, _ in samples if n.startswith("queuelens_plan_")]
    names = {n for n, _ in samples}
    assert "queuelens_cache_age_seconds" not in names  # no plans: no age, not age 0
    assert "queuelens_last_refresh_timestamp_seconds" not in names
    assert samples[("queuelens_refreshes_total", frozenset())] == 0
    states = {dict(labels)["state"]: v for (n, labels), v in samples.items()
              if n == "queuelens_source_state"}
    assert states == {"ok": 0, "stale": 0, "unreachable": 0, "error": 0, "unknown": 1}


def test_severity_levels_rise_with_urgency() -> None:
    assert dict(SEVERITY_LEVEL) == {"ok": 0, "info": 1, "warning": 2, "critical": 3}


class _Switchable:
    """The demo, until told to fail like an unreachable Prometheus; optionally blocking its
    snapshot until released."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.demo = DemoSource(seed=0)
        self.fail = False
        self.gate = gate
        self.profile = object()

    @property
    def name(self) -> str:
        return "switchable"

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        if self.gate is not None:
            assert self.gate.wait(60), "the test never released the source"
        if self.fail:
            raise PrometheusUnavailable("Prometheus at http://127.0.0.1:1 is unreachable")
        return self.demo.snapshot(at, window_s)

    def range(self, start: float, end: float, step_s: float,
              queues: Sequence[str] | None = None,
              signals: Collection[str] | None = None) -> RangeData:
        return self.demo.range(start, end, step_s, queues, signals)


def test_a_failed_refresh_is_counted_and_the_last_plans_stay() -> None:
    source = _Switchable()
    refresher = PlanRefresher(AppContext(source=source, at=AT))
    good = refresher.refresh()
    assert good.advice is not None
    assert good.source_errors == 0
    source.fail = True
    failed = refresher.refresh()
    assert failed.source_errors == 1
    assert failed.refreshes == 2
    assert failed.advice is good.advice  # the last plans, with their age
    assert failed.computed_at == good.computed_at
    samples = parse(exposition(failed))
    assert samples[("queuelens_source_errors_total", frozenset())] == 1
    assert one(samples, "queuelens_plan_recommended_workers", "replicaset")[1] == 6


def test_plans_are_refreshed_once_per_period_whatever_the_scrapes() -> None:
    now = [100.0]
    refresher = PlanRefresher(AppContext(source=DemoSource(seed=0), at=AT, refresh_s=15.0),
                              clock=lambda: now[0])
    assert refresher.latest(wait_s=30).refreshes == 1
    now[0] += 14.0
    assert refresher.latest(wait_s=30).refreshes == 1  # younger than the period: no read
    now[0] += 1.0
    assert refresher.latest(wait_s=30).refreshes == 2


def test_a_scrape_does_not_wait_for_a_hung_refresh() -> None:
    gate = threading.Event()
    server = create_app(_Switchable(gate), at=AT)
    refresher: PlanRefresher = server.extensions["queuelens"]["plans"]
    client = server.test_client()
    try:
        # Prometheus says its timeout is 0.2 s: the scrape waits 0.1 s, then answers
        first = client.get("/metrics", headers={SCRAPE_TIMEOUT_HEADER: "0.2"})
        assert first.status_code == 200
        assert first.content_type == CONTENT_TYPE_LATEST
        samples = parse(first.get_data(as_text=True))
        assert not [n for n, _ in samples if n.startswith("queuelens_plan_")]
        assert samples[("queuelens_refreshes_total", frozenset())] == 0
        assert refresher.state().running
    finally:
        gate.set()
    assert refresher.refresh().advice is not None  # waits for the released refresh
    samples = parse(client.get("/metrics").get_data(as_text=True))
    assert one(samples, "queuelens_plan_recommended_workers", "replicaset")[1] == 6
    assert samples[("queuelens_refreshes_total", frozenset())] == 1


@pytest.mark.parametrize(("header", "expected"), [
    (None, 5.0), ("10", 5.0), ("1", 0.5), ("0.2", 0.1), ("0", 5.0), ("-3", 5.0),
    ("nan", 5.0), ("inf", 5.0), ("1e400", 5.0), ("ten", 5.0), ("", 5.0)])
def test_a_scrape_waits_half_its_timeout_at_most_the_cap(header: str | None,
                                                          expected: float) -> None:
    assert scrape_wait_s(header) == expected


def test_a_scrape_reads_nothing_the_overview_has_read() -> None:
    from dashboard.pages.overview import load_overview

    server = create_app(DemoSource(seed=0), at=AT, refresh_s=15.0)
    ctx: AppContext = server.extensions["queuelens"]["context"]
    assert isinstance(ctx.source, CachedSource)
    rows, _, error = load_overview(ctx)  # the fleet page's refresh: a snapshot and a range
    assert len(rows) == 8
    assert error == ""
    read = ctx.source.fetches
    assert read == 2
    client = server.test_client()
    for _ in range(3):
        samples = parse(client.get("/metrics").get_data(as_text=True))
        assert one(samples, "queuelens_plan_recommended_workers", "replicaset")[1] == 6
    assert ctx.source.fetches == read  # the same cache slot: the page's two reads served it
    assert samples[("queuelens_refreshes_total", frozenset())] == 1


def test_the_plans_get_the_profile_behind_the_cache() -> None:
    inner = _Switchable()
    assert TimedReads(CachedSource(inner, ttl_s=15.0)).profile is inner.profile
    assert TimedReads(DemoSource(seed=0)).profile is None
