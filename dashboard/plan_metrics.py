"""``/metrics`` of ``queuelens serve``: each queue's capacity plan as Prometheus series, and
the server's own refresh health.

:class:`PlanCollector` is a prometheus_client custom collector over what the app's
:class:`dashboard.plan_refresh.PlanRefresher` last computed — the plans of
``queuelens advise`` for the app's source, time and settings. A scrape never reads the
source itself: the route (:func:`metrics_view`) asks the refresher for the plans, which
starts a refresh when they are older than the refresh period and waits for it at most
:func:`scrape_wait_s`; then the collector renders what is there. Before the first plans exist
only the health series are exposed.

Plan series, one sample per queue with a plan, labelled by the queue's identity as the rest
of the app names it (:data:`IDENTITY_LABELS`: ``queue``, and ``controller``, ``namespace``,
``cluster`` when a queue's series carry them). A value that does not exist (no ceiling known,
no count recommended, NaN) has no sample — never 0:

* ``queuelens_plan_recommended_workers``: the plan's worker count (:data:`models.plan.RULES`);
* ``queuelens_plan_current_workers``: the worker count measured now;
* ``queuelens_plan_ceiling_per_second``: most items/s the binding limit allows;
* ``queuelens_plan_design_demand_per_second``: the demand the queue is sized for;
* ``queuelens_plan_demand_now_per_second``: the arrival rate now;
* ``queuelens_plan_service_mean_seconds``: the mean work time the plan sized with;
* ``queuelens_plan_confidence_ratio``: the verdict's confidence, 0–1;
* ``queuelens_plan_severity``: the verdict's severity as a level (:data:`SEVERITY_LEVEL`);
* ``queuelens_plan_headroom_ratio``: labelled ``limit``, one sample per limit with a measured
  ceiling — ceiling ÷ the design demand (under 1: the demand's peaks are over it;
  :mod:`models.bindings.headroom`), so ``min by (queue)`` is a queue's headroom;
* ``queuelens_plan_verdict_info``: 1, labelled ``kind``, ``severity``, ``binding_limit`` and
  ``rule`` (which rule chose the count).

Health series: ``queuelens_refresh_duration_seconds`` and ``queuelens_source_read_seconds``
(the last refresh: all of it, and its reads), ``queuelens_refreshes_total``,
``queuelens_source_errors_total``, ``queuelens_refresh_errors_total``,
``queuelens_cache_age_seconds`` (how old the exposed plans are),
``queuelens_last_refresh_timestamp_seconds`` (when they were computed),
``queuelens_evaluation_timestamp_seconds`` (the instant they describe: ``serve --at``, or the
time of the refresh's reads) and ``queuelens_source_state{state}`` (1 for the source's state
of ``/health``, 0 for the others).

Label values are hostile input (queue names come from the scraped controllers):
prometheus_client escapes them in the exposition; nothing here escapes by hand.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import flask
from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from dashboard.advice import QueueAdvice
from dashboard.plan_refresh import PlanRefresher, RefreshState
from models.advisor import SEVERITIES
from models.plan import CapacityPlan

__all__ = [
    "IDENTITY_LABELS",
    "METRICS_WAIT_S",
    "SCRAPE_TIMEOUT_HEADER",
    "SEVERITY_LEVEL",
    "SOURCE_STATES",
    "PlanCollector",
    "metrics_view",
    "scrape_wait_s",
]

IDENTITY_LABELS: tuple[str, ...] = ("controller", "namespace", "cluster")
"""Labels of a queue's series that identify it beside its name (the ``queue`` label), used
when at least one queue of the fleet has them (a fleet without namespaces gets no empty
``namespace`` label)."""

SEVERITY_LEVEL: Mapping[str, int] = {s: len(SEVERITIES) - 1 - i for i, s in enumerate(SEVERITIES)}
"""ok 0, info 1, warning 2, critical 3: :data:`models.advisor.SEVERITIES` reversed, so that
``>= 2`` selects what needs action and ``max`` over queues is the worst."""

SOURCE_STATES: tuple[str, ...] = ("ok", "stale", "unreachable", "error", "unknown")
"""The ``source_state`` values of ``/health`` (:func:`dashboard.app.source_status`)."""

METRICS_WAIT_S = 5.0
"""Longest a scrape waits for a refresh in progress: half of Prometheus's default
``scrape_timeout`` (10 s), so a scrape that waits still answers within its timeout."""

SCRAPE_TIMEOUT_HEADER = "X-Prometheus-Scrape-Timeout-Seconds"
"""The scrape timeout Prometheus sends with each scrape."""

_PLAN_GAUGES: tuple[tuple[str, str, Callable[[CapacityPlan], Any]], ...] = (
    ("queuelens_plan_recommended_workers",
     "Worker count the capacity plan recommends (the rule is the verdict_info's rule label).",
     lambda p: p.recommended_workers),
    ("queuelens_plan_current_workers", "Worker count measured now (workers).",
     lambda p: p.workers_now),
    ("queuelens_plan_ceiling_per_second",
     "Most items per second the binding limit allows (items/s); absent when not known.",
     lambda p: p.ceiling_per_s),
    ("queuelens_plan_design_demand_per_second",
     "Arrival rate the queue is sized for: the larger of the rate now and the design "
     "quantile of the range (items/s).",
     lambda p: p.demand_per_s),
    ("queuelens_plan_demand_now_per_second", "Arrival rate over the rate window (items/s).",
     lambda p: p.demand_now_per_s),
    ("queuelens_plan_service_mean_seconds",
     "Mean work time per item the plan sized with (seconds).",
     lambda p: p.service_mean_s),
    ("queuelens_plan_confidence_ratio", "Confidence of the plan's verdict (0 to 1).",
     lambda p: p.confidence),
    ("queuelens_plan_severity",
     "Severity of the plan's verdict as a level: 0 ok, 1 info, 2 warning, 3 critical.",
     lambda p: SEVERITY_LEVEL.get(p.severity)),
)


def _number(value: Any) -> float | None:
    """A sample value, or None where there is none (None, NaN, ±inf, not a number)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _identity_names(queues: Sequence[QueueAdvice]) -> list[str]:
    return ["queue", *(name for name in IDENTITY_LABELS
                       if any(name in qa.labels for qa in queues))]


class PlanCollector(Collector):
    """The plans and the refresh health as metric families (module doc).

    ``state``: what the refresh computed (:meth:`dashboard.plan_refresh.PlanRefresher.state`);
    ``source_status``: ``/health``'s source fields (``{"source_state": ...}``), or None to
    leave out ``queuelens_source_state``. ``registry``: registered there when given —
    never the global registry by default."""

    def __init__(self, state: Callable[[], RefreshState],
                 source_status: Callable[[], Mapping[str, Any]] | None = None,
                 registry: CollectorRegistry | None = None) -> None:
        self._state = state
        self._source_status = source_status
        if registry is not None:
            registry.register(self)

    def describe(self) -> list[Metric]:
        """No fixed families (the plan series exist only once plans do): registration asks
        nothing of :meth:`collect`."""
        return []

    def collect(self) -> Iterator[Metric]:
        state = self._state()
        yield from self._health(state)
        if state.advice is not None:
            yield from self._plans(state.advice.queues)

    def _health(self, state: RefreshState) -> Iterator[Metric]:
        gauges = (
            ("queuelens_refresh_duration_seconds",
             "Wall time of the last plan refresh, reads and advisor (seconds).",
             state.duration_s),
            ("queuelens_source_read_seconds",
             "Wall time the last plan refresh spent reading the source (seconds).",
             state.read_s),
            ("queuelens_cache_age_seconds", "Age of the exposed plans (seconds).",
             state.age_s),
            ("queuelens_last_refresh_timestamp_seconds",
             "Unix time at which the exposed plans were computed (seconds).",
             state.computed_at),
            ("queuelens_evaluation_timestamp_seconds",
             "Unix time the exposed plans describe: the evaluation time of their reads "
             "(seconds).",
             state.advice.at if state.advice is not None else None),
        )
        for name, doc, value in gauges:
            family = GaugeMetricFamily(name, doc)
            number = _number(value)
            if number is not None:
                family.add_metric([], number)
            yield family
        for name, doc, count in (
            ("queuelens_refreshes", "Plan refreshes finished, failed ones included.",
             state.refreshes),
            ("queuelens_source_errors",
             "Plan refreshes whose source reads failed (unavailable or refused).",
             state.source_errors),
            ("queuelens_refresh_errors",
             "Plan refreshes that failed after reading (the advisor refused its input).",
             state.refresh_errors),
        ):
            yield CounterMetricFamily(name, doc, value=float(count))
        if self._source_status is not None:
            current = self._source_status().get("source_state")
            family = GaugeMetricFamily(
                "queuelens_source_state",
                "1 for the data source's state as /health reports it, 0 for the others.",
                labels=["state"])
            for s in SOURCE_STATES:
                family.add_metric([s], 1.0 if s == current else 0.0)
            yield family

    def _plans(self, queues: Sequence[QueueAdvice]) -> Iterator[Metric]:
        planned = [(qa, qa.plan) for qa in queues if qa.plan is not None]
        names = _identity_names([qa for qa, _ in planned])

        def identity(qa: QueueAdvice) -> list[str]:
            return [qa.queue, *(str(qa.labels.get(n, "")) for n in names[1:])]

        for name, doc, value_of in _PLAN_GAUGES:
            family = GaugeMetricFamily(name, doc, labels=names)
            for qa, plan in planned:
                number = _number(value_of(plan))
                if number is not None:
                    family.add_metric(identity(qa), number)
            yield family
        room = GaugeMetricFamily(
            "queuelens_plan_headroom_ratio",
            "How far the demand can grow before the limit binds: its measured ceiling divided "
            "by the design demand (under 1: the demand's peaks are over it).",
            labels=[*names, "limit"])
        for qa, plan in planned:
            for h in plan.headroom:
                number = _number(h.ratio)
                if number is not None:
                    room.add_metric([*identity(qa), h.limit], number)
        yield room
        info = InfoMetricFamily(
            "queuelens_plan_verdict",
            "The plan's verdict: kind, severity, binding limit and the rule that chose the "
            "recommended count (always 1).",
            labels=names)
        for qa, plan in planned:
            info.add_metric(identity(qa), {"kind": str(plan.kind), "severity": plan.severity,
                                           "binding_limit": plan.binding_limit,
                                           "rule": plan.rule})
        yield info


def scrape_wait_s(timeout_header: str | None, cap_s: float = METRICS_WAIT_S) -> float:
    """How long one scrape may wait for a refresh in progress: half the scrape timeout the
    scraper states (``X-Prometheus-Scrape-Timeout-Seconds``), at most ``cap_s``; ``cap_s``
    when the header is missing or not a positive number."""
    try:
        timeout = float(timeout_header) if timeout_header is not None else math.nan
    except ValueError:
        timeout = math.nan
    if not (math.isfinite(timeout) and timeout > 0):
        return cap_s
    return min(cap_s, timeout / 2)


def metrics_view(refresher: PlanRefresher,
                 source_status: Callable[[], Mapping[str, Any]] | None = None,
                 *, cap_s: float = METRICS_WAIT_S) -> Callable[[], flask.Response]:
    """The ``GET /metrics`` view: the plans as the refresher has them after at most
    :func:`scrape_wait_s`, in the Prometheus text format, from a registry of this app's
    own."""
    registry = CollectorRegistry(auto_describe=False)
    PlanCollector(refresher.state, source_status, registry=registry)

    def metrics() -> flask.Response:
        refresher.latest(scrape_wait_s(flask.request.headers.get(SCRAPE_TIMEOUT_HEADER), cap_s))
        return flask.Response(generate_latest(registry), status=200,
                              content_type=CONTENT_TYPE_LATEST,
                              headers={"Cache-Control": "no-store"})

    return metrics
