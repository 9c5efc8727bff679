"""The exporter under many scrapers (issue 23 item 10): one exposition computed at a time,
cached per interval, no computation for a client that has gone, 503 with a sentence when a
scrape's wait runs out. Each test starts the exporter on 127.0.0.1, port 0."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests
from prometheus_client import generate_latest
from prometheus_client.openmetrics import exposition as openmetrics

from collectors import exporter
from collectors.demo import DemoSource
from collectors.exporter import ClientGone, ExpositionCache, FleetCollector, registry_for, serve
from collectors.openmetrics import fleet_families
from dashboard.cli import main
from dashboard.commands import exporter as exporter_cmd
from models import fleet as fl

AT = 1_704_067_200.0 + 14 * 3600
OPENMETRICS = "application/openmetrics-text; version=1.0.0"


class CountingBuilder:
    """Stands in for collectors.exporter.fleet_families: counts calls, takes ``delay_s``, and
    waits for ``gate`` (when given) before building."""

    def __init__(self, delay_s: float = 0.0, gate: threading.Event | None = None) -> None:
        self.calls = 0
        self.delay_s = delay_s
        self.gate = gate
        self.started = threading.Event()
        self._real = fleet_families
        self._lock = threading.Lock()

    def __call__(self, fleet: fl.Fleet, times: list[float]) -> Any:
        with self._lock:
            self.calls += 1
        self.started.set()
        if self.gate is not None:
            assert self.gate.wait(20)
        time.sleep(self.delay_s)
        return self._real(fleet, times)


@pytest.fixture
def fleet() -> fl.Fleet:
    return DemoSource().fleet


@pytest.fixture
def start(fleet: fl.Fleet) -> Iterator[Callable[..., tuple[str, ExpositionCache]]]:
    servers: list[Any] = []

    def _start(**kwargs: Any) -> tuple[str, ExpositionCache]:
        server, thread = serve(fleet, "127.0.0.1", 0, clock=lambda: AT, **kwargs)
        servers.append((server, thread))
        return f"http://127.0.0.1:{server.server_port}/metrics", server.cache  # type: ignore[attr-defined]

    yield _start
    for server, thread in servers:
        server.shutdown()
        server.server_close()
        thread.join(5)


def abandon(url: str) -> None:
    """Open a connection, send a whole scrape request, and close at once (with a reset)."""
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def wait_for(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_eight_concurrent_scrapes_compute_once(
        start: Callable[..., tuple[str, ExpositionCache]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    builder = CountingBuilder(delay_s=0.5)
    monkeypatch.setattr(exporter, "fleet_families", builder)
    url, cache = start()
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: requests.get(url, timeout=20), range(8)))
    assert [a.status_code for a in answers] == [200] * 8
    assert len({a.content for a in answers}) == 1
    assert builder.calls == 1
    assert cache.stats.computed == 1


def test_scrape_within_interval_is_cached_and_equals_a_fresh_one(
        start: Callable[..., tuple[str, ExpositionCache]], fleet: fl.Fleet,
        monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = generate_latest(registry_for(fleet, clock=lambda: AT))
    fresh_om = openmetrics.generate_latest(registry_for(fleet, clock=lambda: AT))  # type: ignore[no-untyped-call]
    builder = CountingBuilder()
    monkeypatch.setattr(exporter, "fleet_families", builder)
    url, cache = start(cache_interval_s=60.0)
    first = requests.get(url, timeout=10)
    second = requests.get(url, timeout=10)
    assert builder.calls == 1
    assert cache.stats.served_cached == 1
    assert first.content == second.content == fresh
    assert first.headers["Content-Type"].startswith("text/plain")
    # another format within the interval: encoded from the same families, not rebuilt
    om = requests.get(url, headers={"Accept": OPENMETRICS}, timeout=10)
    assert om.headers["Content-Type"].startswith("application/openmetrics-text")
    assert om.content == fresh_om
    assert builder.calls == 1
    assert requests.head(url, timeout=10).content == b""
    assert requests.post(url, timeout=10).status_code == 405


def test_interval_zero_recomputes_and_auto_is_at_least_a_second(
        start: Callable[..., tuple[str, ExpositionCache]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    builder = CountingBuilder()
    monkeypatch.setattr(exporter, "fleet_families", builder)
    url, _ = start(cache_interval_s=0.0)
    requests.get(url, timeout=10)
    requests.get(url, timeout=10)
    assert builder.calls == 2
    url, cache = start()
    requests.get(url, timeout=10)
    requests.get(url, timeout=10)
    assert builder.calls == 3
    assert cache.interval() == exporter.MIN_CACHE_INTERVAL_S


def test_a_scrape_whose_wait_runs_out_gets_503_with_a_sentence(
        start: Callable[..., tuple[str, ExpositionCache]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    gate = threading.Event()
    builder = CountingBuilder(gate=gate)
    monkeypatch.setattr(exporter, "fleet_families", builder)
    url, cache = start()
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(requests.get, url, timeout=20)
        assert builder.started.wait(10)
        t0 = time.monotonic()
        late = requests.get(url, headers={"X-Prometheus-Scrape-Timeout-Seconds": "0.5"},
                            timeout=10)
        waited = time.monotonic() - t0
        gate.set()
        assert first.result().status_code == 200
    assert late.status_code == 503
    assert "at most one is computed at a time" in late.text
    assert "0.5 s" in late.text
    assert 0.4 < waited < 3
    assert builder.calls == 1
    assert cache.stats.timed_out == 1


def test_abandoned_scrapes_do_not_pile_up_computations(
        start: Callable[..., tuple[str, ExpositionCache]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    gate = threading.Event()
    builder = CountingBuilder(gate=gate)
    monkeypatch.setattr(exporter, "fleet_families", builder)
    url, cache = start(cache_interval_s=0.0)  # no caching: only the gone-client rules help
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(requests.get, url, timeout=20)
        assert builder.started.wait(10)
        for _ in range(8):
            abandon(url)
        wait_for(lambda: cache.stats.gone == 8)  # each noticed while it waited
        gate.set()
        assert first.result().status_code == 200
    assert builder.calls == 1
    # abandoned while nothing runs: at most the odd one read before its close is computed
    for _ in range(8):
        abandon(url)
    wait_for(lambda: cache.stats.gone + cache.stats.computed >= 8 + 1 + 8)
    assert builder.calls <= 3, builder.calls


def test_no_computation_starts_for_a_gone_client(fleet: fl.Fleet,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    builder = CountingBuilder()
    monkeypatch.setattr(exporter, "fleet_families", builder)
    cache = ExpositionCache(FleetCollector(fleet, lambda: AT))
    with pytest.raises(ClientGone):
        cache.get(None, gone=lambda: True)
    assert builder.calls == 0
    body, _ = cache.get(None)
    assert builder.calls == 1
    assert cache.get(None, gone=lambda: True)[0] == body  # cached bytes cost nothing


def test_client_gone_sees_a_closed_peer() -> None:
    left, right = socket.socketpair()
    try:
        assert not exporter.client_gone(left)
        right.sendall(b"GET / HTTP/1.1\r\n\r\n")  # a pipelined request: still there
        assert not exporter.client_gone(left)
        right.close()
        left.recv(100)
        assert exporter.client_gone(left)
    finally:
        left.close()
    assert not exporter.client_gone(None)


@pytest.mark.parametrize(("interval_s", "wait_s"), [(301.0, 30.0), (-2.0, 30.0), (0.0, 0.0),
                                                    (0.0, 601.0)])
def test_bad_settings_are_refused(fleet: fl.Fleet, interval_s: float, wait_s: float) -> None:
    with pytest.raises(ValueError, match="must be"):
        ExpositionCache(FleetCollector(fleet), interval_s, wait_s)


def test_cli_limits_match_and_bad_flags_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert exporter_cmd.MAX_CACHE_INTERVAL_S == exporter.MAX_CACHE_INTERVAL_S
    assert exporter_cmd.MAX_WAIT_S == exporter.MAX_WAIT_S
    assert exporter_cmd.cache_interval("auto") == exporter.CACHE_INTERVAL_AUTO
    assert exporter_cmd.cache_interval("0") == 0.0
    assert exporter_cmd.cache_interval("5m") == 300.0
    for args in (["--cache-interval", "6m"], ["--cache-interval", "-1"],
                 ["--scrape-wait", "0"], ["--scrape-wait", "11m"]):
        with pytest.raises(SystemExit) as exc:
            main(["exporter", "--listen", "127.0.0.1:0", *args])
        assert exc.value.code == 2, args
        assert capsys.readouterr().err.count("\n") == 1, args
