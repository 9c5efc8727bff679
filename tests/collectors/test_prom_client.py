"""The HTTP wrapper: failures (refused, hanging, 503, non-API), warnings, NaN/Inf, steps.

Real-server behaviour uses the real Prometheus; transport failures are injected with tiny local
socket/HTTP servers (they stand in for a broken network or proxy, not for the Prometheus API).
"""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import ClassVar

import pytest

from collectors.config import ConnectionSettings
from collectors.errors import (
    BadQuery,
    PrometheusServerError,
    PrometheusTimeout,
    PrometheusUnreachable,
)
from collectors.prom_client import MAX_POINTS, PrometheusClient, classify_value, plan_range
from tests.support.prometheus import PrometheusProcess
from tests.support.workqueue_om import AT, START


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def hanging_server() -> Iterator[str]:
    """Accepts connections and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    conns: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                conns.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    stop.set()
    thread.join(2)
    for c in conns:
        c.close()
    srv.close()


class _Scripted(http.server.BaseHTTPRequestHandler):
    """Answers from a script of (status, body, headers); counts requests."""

    script: ClassVar[list[tuple[int, str, dict[str, str]]]] = []
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        status, body, headers = self.script[min(len(self.hits) - 1, len(self.script) - 1)]
        data = body.encode()
        self.send_response(status)
        for k, v in {"Content-Type": "application/json", **headers}.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def scripted() -> Iterator[tuple[type[_Scripted], str]]:
    handler = type("Handler", (_Scripted,), {"script": [], "hits": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield handler, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


OK_EMPTY = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}})


def test_refused_port_is_unreachable_fast_and_names_url_without_credentials() -> None:
    port = _free_port()
    client = PrometheusClient(ConnectionSettings(url=f"http://127.0.0.1:{port}",
                                                 username="alice", password="s3cret"))
    t0 = time.monotonic()
    with pytest.raises(PrometheusUnreachable) as info:
        client.query("up", AT)
    assert time.monotonic() - t0 < 1.0
    msg = str(info.value)
    assert f"127.0.0.1:{port}" in msg
    assert "connection refused" in msg
    assert "s3cret" not in msg
    assert "alice" not in msg
    assert client.request_count == 1


def test_hanging_server_times_out_within_the_configured_timeout(hanging_server: str) -> None:
    client = PrometheusClient(ConnectionSettings(url=hanging_server, timeout_s=0.5, retries=3))
    t0 = time.monotonic()
    with pytest.raises(PrometheusTimeout) as info:
        client.query("up", AT)
    elapsed = time.monotonic() - t0
    assert 0.4 < elapsed < 1.5
    assert "0.5 s" in str(info.value)
    assert hanging_server in str(info.value)
    assert client.request_count == 1  # a timeout is never retried


def test_503_is_retried_with_backoff_then_succeeds(scripted: tuple[type[_Scripted], str]) -> None:
    handler, url = scripted
    handler.script = [(503, '{"status":"error","errorType":"unavailable","error":"busy"}', {}),
                      (503, "busy", {}), (200, OK_EMPTY, {})]
    sleeps: list[float] = []
    client = PrometheusClient(ConnectionSettings(url=url, retries=2, backoff_s=0.1),
                              sleep=sleeps.append)
    assert client.query("up", AT).samples == []
    assert len(handler.hits) == 3
    assert client.request_count == 3
    assert len(sleeps) == 2
    assert 0.05 <= sleeps[0] <= 0.1
    assert 0.1 <= sleeps[1] <= 0.2


def test_retries_are_bounded_and_error_is_typed(scripted: tuple[type[_Scripted], str]) -> None:
    handler, url = scripted
    handler.script = [(429, '{"status":"error","errorType":"too_many","error":"slow down"}',
                       {"Retry-After": "1"})]
    sleeps: list[float] = []
    client = PrometheusClient(ConnectionSettings(url=url, retries=2, backoff_s=0.01),
                              sleep=sleeps.append)
    with pytest.raises(PrometheusServerError) as info:
        client.query("up", AT)
    assert len(handler.hits) == 3
    assert sleeps
    assert min(sleeps) >= 1.0
    assert "HTTP 429" in str(info.value)
    assert "slow down" in str(info.value)
    assert "b'" not in str(info.value)


@pytest.mark.parametrize("status", [500, 400, 422])
def test_non_retryable_statuses_are_tried_once(
    scripted: tuple[type[_Scripted], str], status: int
) -> None:
    handler, url = scripted
    handler.script = [(status, '{"status":"error","errorType":"execution","error":"boom"}', {})]
    client = PrometheusClient(ConnectionSettings(url=url, retries=3), sleep=lambda s: None)
    expected = BadQuery if status in (400, 422) else PrometheusServerError
    with pytest.raises(expected, match="execution: boom"):
        client.query("up", AT)
    assert len(handler.hits) == 1


def test_warnings_are_surfaced(scripted: tuple[type[_Scripted], str]) -> None:
    handler, url = scripted
    body = {"status": "success", "warnings": ["store 2 unavailable: partial response"],
            "infos": ["metric might not be a counter"],
            "data": {"resultType": "vector",
                     "result": [{"metric": {"name": "a"}, "value": [AT, "1.5"]}]}}
    handler.script = [(200, json.dumps(body), {})]
    res = PrometheusClient(ConnectionSettings(url=url)).query("x", AT)
    assert res.samples[0].value == 1.5
    assert any("partial response" in w for w in res.warnings)
    assert any("might not be a counter" in w for w in res.warnings)


def test_html_answer_is_not_the_prometheus_api(scripted: tuple[type[_Scripted], str]) -> None:
    handler, url = scripted
    handler.script = [(200, "<html>login</html>", {"Content-Type": "text/html"})]
    with pytest.raises(PrometheusServerError, match="not the Prometheus HTTP API"):
        PrometheusClient(ConnectionSettings(url=url)).query("up", AT)


@pytest.mark.parametrize("result", [
    [{"metric": {"name": "a"}, "value": [AT, "not-a-number"]}],
    [{"metric": {"name": "a"}, "value": [AT]}],
    [{"metric": "name=a", "value": [AT, "1"]}],
    ["a string where a series belongs"],
])
def test_malformed_200_result_is_a_typed_error_not_a_traceback(
    scripted: tuple[type[_Scripted], str], result: list[object]
) -> None:
    handler, url = scripted
    body = {"status": "success", "data": {"resultType": "vector", "result": result}}
    handler.script = [(200, json.dumps(body), {})]
    with pytest.raises(PrometheusServerError, match="not in the Prometheus HTTP API format"):
        PrometheusClient(ConnectionSettings(url=url)).query("up", AT)


def test_malformed_range_result_is_a_typed_error(scripted: tuple[type[_Scripted], str]) -> None:
    handler, url = scripted
    body = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"name": "a"}, "values": [[START, "1"], [START + 60, "oops"]]}]}}
    handler.script = [(200, json.dumps(body), {})]
    with pytest.raises(PrometheusServerError, match="range query"):
        PrometheusClient(ConnectionSettings(url=url)).query_range("up", START, START + 60, 60)


def test_auth_headers_and_prefix_are_sent(scripted: tuple[type[_Scripted], str]) -> None:
    handler, _ = scripted
    seen: list[dict[str, str]] = []

    class Capture(handler):  # type: ignore[misc, valid-type]
        def do_GET(self) -> None:
            seen.append(dict(self.headers))
            super().do_GET()

    handler.script = [(200, OK_EMPTY, {})]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/prometheus"
        client = PrometheusClient(ConnectionSettings(url=base, token="tok-123",
                                                     headers={"X-Scope-OrgID": "tenant-1"}))
        client.query("up", AT)
    finally:
        server.shutdown()
        server.server_close()
    assert seen[0]["Authorization"] == "Bearer tok-123"
    assert seen[0]["X-Scope-OrgID"] == "tenant-1"
    assert Capture.hits[-1].startswith("/prometheus/api/v1/query?")
    assert "timeout=" in Capture.hits[-1]


@pytest.mark.prometheus
def test_nan_and_inf_are_classified_never_numbers(backfilled_prometheus: PrometheusProcess
                                                  ) -> None:
    client = PrometheusClient(ConnectionSettings(url=backfilled_prometheus.url))
    res = client.query('label_replace(vector(0)/0, "k", "nan", "", "") or '
                       'label_replace(vector(1)/0, "k", "pinf", "", "") or '
                       'label_replace(vector(-1)/0, "k", "ninf", "", "")', AT)
    by = {s.labels["k"]: s for s in res.samples}
    assert (by["nan"].value, by["nan"].special) == (None, "NaN")
    assert (by["pinf"].value, by["pinf"].special) == (None, "+Inf")
    assert (by["ninf"].value, by["ninf"].special) == (None, "-Inf")
    rng = client.query_range("vector(0)/0 or vector(1)", START, START + 600, 60)
    assert all(len(s.v) == 0 or s.v.tolist() == [] for s in rng.series if s.dropped)
    assert sum(n for s in rng.series for n in s.dropped.values()) == 11


@pytest.mark.prometheus
def test_scalar_result_and_real_bad_query(backfilled_prometheus: PrometheusProcess) -> None:
    client = PrometheusClient(ConnectionSettings(url=backfilled_prometheus.url))
    assert client.query("1+1", AT).samples[0].value == 2.0
    with pytest.raises(BadQuery, match=r"execution|bad_data"):
        client.query("workqueue_adds_total + on() workqueue_adds_total", AT)


def test_classify_value() -> None:
    assert classify_value("1.25") == (1.25, None)
    assert classify_value("NaN") == (None, "NaN")
    assert classify_value("+Inf") == (None, "+Inf")
    assert classify_value("-Inf") == (None, "-Inf")


@pytest.mark.parametrize(("start", "end", "step"), [
    (0, 46 * 3600, 15), (1704067200, 1704067200 + 7 * 86400, 1), (10.5, 7210.2, 0.3),
    (5, 5, 60), (0, 11000 * 60, 60),
])
def test_plan_range_caps_points_and_aligns(start: float, end: float, step: float) -> None:
    a, b, s = plan_range(start, end, step)
    assert s >= step
    assert s == int(s)
    assert a % s == 0
    assert b % s == 0
    assert a <= start
    assert b >= end
    assert (b - a) // s + 1 <= MAX_POINTS


def test_plan_range_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="before start"):
        plan_range(10, 5, 1)
    with pytest.raises(ValueError, match="step"):
        plan_range(0, 5, 0)


# --- issue 12 ---------------------------------------------------------------------------------


def test_basic_auth_with_non_latin1_characters_is_sent_as_utf8(
        scripted: tuple[type[_Scripted], str]) -> None:
    """requests encodes a str password as Latin-1 and fails at send time on anything else
    (which read as "not the Prometheus HTTP API"); RFC 7617's charset is UTF-8."""
    import base64

    handler, _ = scripted
    seen: list[str] = []

    class Capture(handler):  # type: ignore[misc, valid-type]
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            super().do_GET()

    handler.script = [(200, OK_EMPTY, {})]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        PrometheusClient(ConnectionSettings(url=url, username="bob",
                                            password="pässwörd😀")).query("up", AT)
    finally:
        server.shutdown()
        server.server_close()
    assert seen == ["Basic " + base64.b64encode("bob:pässwörd😀".encode()).decode()]


def test_a_redirect_loop_is_a_sentence(scripted: tuple[type[_Scripted], str]) -> None:
    handler, url = scripted
    handler.script = [(302, "", {"Location": "/api/v1/query"})]
    with pytest.raises(PrometheusServerError, match="redirected more than 5 times"):
        PrometheusClient(ConnectionSettings(url=url)).query("up", AT)
    assert len(handler.hits) == 6


def test_warnings_are_capped(scripted: tuple[type[_Scripted], str]) -> None:
    handler, url = scripted
    body = {"status": "success", "warnings": [f"w{i}" for i in range(500)],
            "data": {"resultType": "vector", "result": []}}
    handler.script = [(200, json.dumps(body), {})]
    res = PrometheusClient(ConnectionSettings(url=url)).query("x", AT)
    assert len(res.warnings) == 21
    assert "480 more warning(s)" in res.warnings[-1]


def test_retries_stay_within_the_one_query_deadline(scripted: tuple[type[_Scripted], str]
                                                    ) -> None:
    handler, url = scripted
    handler.script = [(503, '{"status":"error","errorType":"unavailable","error":"busy"}',
                       {"Retry-After": "0.4"})]
    client = PrometheusClient(ConnectionSettings(url=url, timeout_s=1.0, retries=10,
                                                 backoff_max_s=0.4))
    t0 = time.monotonic()
    with pytest.raises(PrometheusServerError, match="HTTP 503"):
        client.query("up", AT)
    assert time.monotonic() - t0 < 1.0 + 0.5
    assert 2 <= len(handler.hits) <= 3


def test_a_late_watchdog_never_shuts_a_connection_back_in_the_pool(
        scripted: tuple[type[_Scripted], str]) -> None:
    """A query whose answer completed just at its deadline: its connection is already back in
    the pool (and may be another query's next), so the watchdog's late fire leaves it alone."""
    from collectors.deadlines import Deadline, Watch, _WatchedHTTPPool

    handler, url = scripted
    handler.script = [(200, OK_EMPTY, {})]
    pool = _WatchedHTTPPool("127.0.0.1", int(url.rsplit(":", 1)[1]))
    conn = pool._get_conn()
    conn.connect()
    watch = Watch(Deadline.after(60.0), None)
    watch.attach(conn)
    pool._put_conn(conn)
    watch.fire()
    assert conn.sock is not None
    assert conn.sock.fileno() != -1
    conn.sock.sendall(b"GET /api/v1/query?query=up HTTP/1.1\r\nHost: x\r\n\r\n")
    assert conn.sock.recv(12) == b"HTTP/1.0 200"
    pool.close()
