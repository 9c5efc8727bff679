"""The demo fleet served as real Prometheus metrics (prometheus_client custom collector).

At each scrape the collector evaluates the fleet's cumulative counters and gauges at the
current wall-clock time (:func:`collectors.openmetrics.fleet_families`), so rates computed by
a scraping Prometheus are the demo's rates, and ``*_created`` series are suppressed
(``PROMETHEUS_DISABLE_CREATED_SERIES``) like a Go client's output.

A scrape of a large fleet is expensive (10,000 queues: 34 s and about 0.85 GB each, issue 23),
so :func:`serve` does not use prometheus_client's server as is: :class:`ExpositionCache`
computes at most one exposition at a time, serves it to every scrape within
:data:`CACHE_INTERVAL_AUTO`'s derived interval (or a configured one), makes concurrent scrapes
wait for the one computation with a deadline (503 with a sentence after it), and starts no
computation for a client that has already gone.
"""

from __future__ import annotations

import os

# Before prometheus_client is imported: no *_created series (a Go client has none).
os.environ.setdefault("PROMETHEUS_DISABLE_CREATED_SERIES", "True")

import math
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import ThreadingWSGIServer, choose_encoder
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


CACHE_INTERVAL_AUTO = -1.0
"""The default cache interval: derived from the last computation, ``max(MIN_CACHE_INTERVAL_S,
its duration)``, at most :data:`MAX_CACHE_INTERVAL_S`. A fleet that takes T seconds to
evaluate is evaluated at most once every T seconds, so the exporter spends at most about
half its time computing however often it is scraped; a scrape then reads values at most
max(1 s, T) old (Prometheus stamps the scrape time, so a rate over several scrapes is off by at
most that much)."""

MIN_CACHE_INTERVAL_S = 1.0
"""Lower bound of the derived interval: the demo fleet (8 queues, ~10 ms) is still recomputed
at most once a second when many scrapers hit it together."""

MAX_CACHE_INTERVAL_S = 300.0
"""Upper bound of the cache interval, derived or configured: 5 min, twenty default 15 s scrape
intervals; staler values would make a scraping Prometheus's rates meaningless."""

DEFAULT_WAIT_S = 30.0
"""How long a scrape waits for another scrape's computation before it gets 503 (the
``X-Prometheus-Scrape-Timeout-Seconds`` header, when sent, shortens it): 30 s, beyond
Prometheus's default scrape timeout of 10 s and its usual 15–30 s intervals."""

MAX_WAIT_S = 600.0
"""Upper bound of the configured wait (10 min)."""

POLL_S = 0.2
"""How often a waiting scrape checks that its client is still connected."""

READ_TIMEOUT_S = 10.0
"""Deadline for a client to send its request (and of each socket operation on it): an idle or
drip-feeding connection holds a thread for at most this long."""


def client_gone(sock: socket.socket | None) -> bool:
    """True when the peer has closed (or reset) the connection: the socket reads as ready and a
    peek returns no byte. Bytes pipelined after the request read as still connected."""
    if sock is None:
        return False
    try:
        ready, _, _ = select.select([sock], [], [], 0)
        if not ready:
            return False
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (OSError, ValueError):
        return True


class _Snapshot(Collector):
    """The collected metric families of one instant, as a collector the encoders accept."""

    def __init__(self, metrics: list[Metric]) -> None:
        self.metrics = metrics

    def collect(self) -> Iterable[Metric]:
        return self.metrics


class ScrapeTimeout(Exception):
    """Another scrape's computation did not finish within this scrape's wait."""


class ClientGone(Exception):
    """The client closed its connection before its exposition was ready."""


@dataclass
class CacheStats:
    """Counters for tests and the benchmark."""

    computed: int = 0
    served_cached: int = 0
    timed_out: int = 0
    gone: int = 0


@dataclass
class ExpositionCache:
    """One exposition at a time, reused within the cache interval (single flight).

    ``interval_s`` is :data:`CACHE_INTERVAL_AUTO` or 0–:data:`MAX_CACHE_INTERVAL_S` seconds
    (0: every scrape after a finished computation computes anew, but concurrent scrapes still
    share the running one). The metric families are collected once per interval; each text
    format asked for is encoded from them once and its bytes kept."""

    collector: Collector
    interval_s: float = CACHE_INTERVAL_AUTO
    wait_s: float = DEFAULT_WAIT_S
    clock: Callable[[], float] = time.monotonic
    stats: CacheStats = field(default_factory=CacheStats)
    _cond: threading.Condition = field(default_factory=threading.Condition, init=False)
    _computing: bool = field(default=False, init=False)
    _generation: int = field(default=0, init=False)
    _at: float = field(default=-math.inf, init=False)
    _duration_s: float = field(default=0.0, init=False)
    _snapshot: _Snapshot | None = field(default=None, init=False)
    _bytes: dict[str, bytes] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        auto = self.interval_s == CACHE_INTERVAL_AUTO
        if not auto and not 0 <= self.interval_s <= MAX_CACHE_INTERVAL_S:
            raise ValueError(f"the cache interval must be 0 to {MAX_CACHE_INTERVAL_S:g} s, "
                             f"got {self.interval_s!r}.")
        if not 0 < self.wait_s <= MAX_WAIT_S:
            raise ValueError(f"the scrape wait must be above 0 and at most {MAX_WAIT_S:g} s, "
                             f"got {self.wait_s!r}.")

    def interval(self) -> float:
        """The interval in force: the configured one, or the derived one."""
        if self.interval_s != CACHE_INTERVAL_AUTO:
            return self.interval_s
        return min(MAX_CACHE_INTERVAL_S, max(MIN_CACHE_INTERVAL_S, self._duration_s))

    def _fresh(self) -> bool:
        return self._snapshot is not None and self.clock() - self._at < self.interval()

    def get(self, accept: str | None, wait_s: float | None = None,
            gone: Callable[[], bool] = lambda: False) -> tuple[bytes, str]:
        """The exposition (body, content type) for an Accept header. Waits at most ``wait_s``
        (default :attr:`wait_s`) for a computation another scrape runs (ScrapeTimeout);
        raises ClientGone, without starting a computation, when ``gone()`` turns true."""
        encoder, content_type = choose_encoder(accept or "")
        limit = self.wait_s if wait_s is None else min(wait_s, self.wait_s)
        deadline = time.monotonic() + limit
        with self._cond:
            joined: int | None = None  # the generation running when this scrape began waiting
            while True:
                usable = self._snapshot is not None and (
                    self._fresh() or (joined is not None and self._generation > joined))
                if usable and content_type in self._bytes:
                    self.stats.served_cached += 1
                    return self._bytes[content_type], content_type
                if not self._computing:
                    snapshot = self._snapshot if usable else None
                    if snapshot is None and gone():
                        self.stats.gone += 1
                        raise ClientGone
                    break
                if joined is None:
                    joined = self._generation
                left = deadline - time.monotonic()
                if left <= 0:
                    self.stats.timed_out += 1
                    raise ScrapeTimeout
                self._cond.wait(min(POLL_S, left))
                if gone():
                    self.stats.gone += 1
                    raise ClientGone
            self._computing = True
        try:
            started = time.monotonic()
            if snapshot is None:
                snapshot = _Snapshot(list(self.collector.collect()))
                self.stats.computed += 1
            body = encoder(snapshot)
            duration = time.monotonic() - started
        except BaseException:
            with self._cond:
                self._computing = False
                self._cond.notify_all()
            raise
        with self._cond:
            if snapshot is not self._snapshot:
                self._snapshot, self._bytes = snapshot, {}
                self._at = self.clock()
                self._duration_s = duration
                self._generation += 1
            self._bytes[content_type] = body
            self._computing = False
            self._cond.notify_all()
        return body, content_type


def _scrape_timeout(environ: dict[str, Any]) -> float | None:
    """Prometheus's ``X-Prometheus-Scrape-Timeout-Seconds``, when it is a positive number."""
    try:
        value = float(environ.get("HTTP_X_PROMETHEUS_SCRAPE_TIMEOUT_SECONDS", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def make_app(cache: ExpositionCache) -> Callable[..., list[bytes]]:
    """The WSGI app: GET (any path but /favicon.ico, like prometheus_client's) serves the
    cached exposition; 503 with a sentence when the wait runs out."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        method = environ["REQUEST_METHOD"]
        if method not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Allow", "GET, HEAD"),
                                                      ("Content-Type", "text/plain")])
            return [f"# {method} is not served; use GET\n".encode()]
        if environ.get("PATH_INFO") == "/favicon.ico":
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b""]
        sock = environ.get("queuelens.socket")
        try:
            body, content_type = cache.get(environ.get("HTTP_ACCEPT"), _scrape_timeout(environ),
                                           lambda: client_gone(sock))
        except ScrapeTimeout:
            text = (f"another scrape's computation of the exposition did not finish within "
                    f"{min(_scrape_timeout(environ) or cache.wait_s, cache.wait_s):g} s; "
                    f"at most one is computed at a time: retry later.\n")
            start_response("503 Service Unavailable", [("Content-Type", "text/plain"),
                                                        ("Retry-After", "5")])
            return [text.encode()]
        except ClientGone:
            start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
            return [b""]
        start_response("200 OK", [("Content-Type", content_type),
                                  ("Content-Length", str(len(body)))])
        return [b"" if method == "HEAD" else body]

    return app


class _Handler(WSGIRequestHandler):
    """No request log; the socket goes into the environ (to see a client leave) and every
    read has :data:`READ_TIMEOUT_S` as its deadline."""

    timeout = READ_TIMEOUT_S

    def get_environ(self) -> dict[str, Any]:
        environ: dict[str, Any] = super().get_environ()
        environ["queuelens.socket"] = self.connection
        return environ

    def log_message(self, format: str, *args: Any) -> None:
        """Log nothing."""


class _Server(ThreadingWSGIServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that left or stalled is not an error worth a traceback on stderr."""


def serve(
    fleet: fl.Fleet, host: str = "127.0.0.1", port: int = 9464, *,
    cache_interval_s: float = CACHE_INTERVAL_AUTO, wait_s: float = DEFAULT_WAIT_S,
    clock: Callable[[], float] = time.time,
) -> tuple[WSGIServer, threading.Thread]:
    """Serve ``/metrics`` on host:port in a daemon thread; ``server.shutdown()`` stops it.
    Port 0 picks a free port (``server.server_port``); ``server.cache`` (an
    :class:`ExpositionCache`) holds the counters. A fleet of more than
    :data:`models.limits.EXPORTER_MAX_QUEUES` queues is refused (ValueError): every
    computation evaluates all of them."""
    if len(fleet) > EXPORTER_MAX_QUEUES:
        raise ValueError(f"the exporter serves at most {EXPORTER_MAX_QUEUES:,} queues, "
                         f"got {len(fleet):,}.")
    cache = ExpositionCache(FleetCollector(fleet, clock), cache_interval_s, wait_s)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET

    class Server(_Server):
        address_family = family

    httpd = make_server(host, port, make_app(cache), Server, handler_class=_Handler)
    httpd.cache = cache  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, name="queuelens-exporter",
                              daemon=True)
    thread.start()
    return httpd, thread
