"""The demo fleet served as real Prometheus metrics (prometheus_client custom collector).

At each scrape the collector evaluates the fleet's cumulative counters and gauges at the
current wall-clock time (:func:`collectors.openmetrics.fleet_families`), so rates computed by
a scraping Prometheus are the demo's rates, and ``*_created`` series are suppressed
(``PROMETHEUS_DISABLE_CREATED_SERIES``) like a Go client's output.
"""

from __future__ import annotations

import os

# Before prometheus_client is imported: no *_created series (a Go client has none).
os.environ.setdefault("PROMETHEUS_DISABLE_CREATED_SERIES", "True")

import threading
import time
from collections.abc import Callable, Iterator
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from collectors.openmetrics import Family, fleet_families
from models import fleet as fl
from models.limits import EXPORTER_MAX_QUEUES


def _label_names(family: Family) -> list[str]:
    names: list[str] = []
    for s in family.series:
        for k in s.labels:
            if k != "le" and k not in names:
                names.append(k)
    return names


def to_metric(family: Family, index: int = 0) -> Metric:
    """One family at one time (``index`` into the series' values) as a prometheus_client
    metric family."""
    names = _label_names(family)
    if family.type == "counter":
        counter = CounterMetricFamily(family.name, family.help, labels=names)
        for s in family.series:
            counter.add_metric([s.labels[n] for n in names], float(s.values[index]))
        return counter
    if family.type == "gauge":
        gauge = GaugeMetricFamily(family.name, family.help, labels=names)
        for s in family.series:
            gauge.add_metric([s.labels[n] for n in names], float(s.values[index]))
        return gauge
    hist = HistogramMetricFamily(family.name, family.help, labels=names)
    buckets: list[tuple[str, float]] = []
    for s in family.series:
        if s.sample.endswith("_bucket"):
            buckets.append((s.labels["le"], float(s.values[index])))
        elif s.sample.endswith("_sum"):
            hist.add_metric([s.labels[n] for n in names], buckets, float(s.values[index]))
            buckets = []
    return hist


class FleetCollector(Collector):
    """Yields the fleet's metric families evaluated at scrape time."""

    def __init__(self, fleet: fl.Fleet, clock: Callable[[], float] = time.time) -> None:
        self.fleet = fleet
        self.clock = clock

    def collect(self) -> Iterator[Metric]:
        now = self.clock()
        for family in fleet_families(self.fleet, [now]):
            if family.series:
                yield to_metric(family)


def registry_for(fleet: fl.Fleet, clock: Callable[[], float] = time.time) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(fleet, clock))
    return registry


def serve(
    fleet: fl.Fleet, host: str = "127.0.0.1", port: int = 9464
) -> tuple[WSGIServer, threading.Thread]:
    """Serve ``/metrics`` on host:port in a daemon thread; ``server.shutdown()`` stops it.
    Port 0 picks a free port (``server.server_port``). A fleet of more than
    :data:`models.limits.EXPORTER_MAX_QUEUES` queues is refused (ValueError): every scrape
    evaluates all of them."""
    if len(fleet) > EXPORTER_MAX_QUEUES:
        raise ValueError(f"the exporter serves at most {EXPORTER_MAX_QUEUES:,} queues, "
                         f"got {len(fleet):,}.")
    return start_http_server(port, addr=host, registry=registry_for(fleet))
