"""What one request or one export may cost the dashboard server (issue 12 §8, §10, §16):
the request-size limit and its 413 sentence, the export jobs' limit, time bound and reaper,
/health's source state, the banner when nothing was ever read, and a queue name with a line
break in the address."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import flask
import pandas as pd
import psutil
import pytest

from collectors.cache import CachedSource
from collectors.demo import DemoSource
from collectors.errors import BadQuery, ConfigError, PrometheusUnreachable
from dashboard.app import (
    MAX_REQUEST_BYTES,
    ServerLimits,
    create_app,
    dash_app_of,
    parse_byte_size,
    stale_banner_text,
)
from dashboard.report import EXPORT_BUSY, ExportJobs, export_timeout_text, export_token
from dashboard.report import export as report  # the export jobs live there
from models.measurements import QueueSnapshot, RangeData, Snapshot

EXPORT_OUTPUT = "..export-download.data...export-status.children.."
DASH_POST = "/_dash-update-component"


# --- request size (§10) -------------------------------------------------------------------

def _client(**limits: Any) -> Any:
    server = create_app(DemoSource(seed=0), limits=ServerLimits(**limits) if limits else None)
    client = server.test_client()
    client.get("/")
    return client


def test_a_body_over_the_limit_is_413_with_one_sentence() -> None:
    client = _client()
    big = b"x" * (MAX_REQUEST_BYTES + 1)
    response = client.post(DASH_POST, data=big, content_type="application/json")
    assert response.status_code == 413
    assert response.mimetype == "text/plain"
    text = response.get_data(as_text=True)
    assert text == ("The request is larger than this server accepts (4 MiB; "
                    "QUEUELENS_MAX_REQUEST_SIZE).\n")
    assert "<html" not in text.lower()


def test_a_body_without_a_length_is_cut_at_the_limit() -> None:
    """Chunked upload (no Content-Length, the input ended by the server, as gunicorn says
    with ``wsgi.input_terminated``): refused once the limit is read, not buffered."""
    server = create_app(DemoSource(seed=0), limits=ServerLimits(max_request_bytes=64 * 1024))
    client = server.test_client()
    stream = io.BytesIO(b"[" + b"1," * 100_000 + b"1]")
    response = client.post(DASH_POST, input_stream=stream, content_type="application/json",
                           headers={"Transfer-Encoding": "chunked"},
                           environ_overrides={"wsgi.input_terminated": True})
    assert response.status_code == 413
    assert "64 KiB" in response.get_data(as_text=True)


def test_the_limit_is_a_create_app_argument_or_an_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    small = _client(max_request_bytes=64 * 1024)
    assert small.post(DASH_POST, data=b"x" * 70_000,
                      content_type="application/json").status_code == 413
    monkeypatch.setenv("QUEUELENS_MAX_REQUEST_SIZE", "8MiB")
    server = create_app(DemoSource(seed=0))
    assert server.config["MAX_CONTENT_LENGTH"] == 8 * 1024 * 1024
    assert server.extensions["queuelens"]["limits"].max_request_bytes == 8 * 1024 * 1024
    monkeypatch.setenv("QUEUELENS_MAX_REQUEST_SIZE", "lots")
    with pytest.raises(ConfigError, match="QUEUELENS_MAX_REQUEST_SIZE: not a size: 'lots'"):
        create_app(DemoSource(seed=0))
    monkeypatch.setenv("QUEUELENS_MAX_REQUEST_SIZE", "1k")
    with pytest.raises(ConfigError, match="at least 64 KiB"):
        create_app(DemoSource(seed=0))


@pytest.mark.parametrize(("text", "size"), [
    ("4194304", 4194304), ("4MiB", 4 * 1024 ** 2), ("4 mib", 4 * 1024 ** 2), ("512k", 524288),
    ("1.5MB", 1_500_000), ("1G", 1024 ** 3)])
def test_byte_sizes(text: str, size: int) -> None:
    assert parse_byte_size(text) == size


def _largest_key_trace() -> str:
    """The key-trace page's costliest legitimate trace: as many distinct keys, each added once
    with a long name, as the page's limits allow — its 5,000 characters and its key places
    (n adds hold n·(n + 1) places: each key is queued and dirty at every later step)."""
    from dashboard.pages.keys import MAX_TRACE_CHARS
    from models.limits import KEY_TRACE_PAGE_MAX_CELLS

    ops: list[str] = []
    while True:
        n = len(ops) + 1
        name = f"{n:x}".rjust(max(1, MAX_TRACE_CHARS // n - 6), "k")
        candidate = [f"add {f'{i:x}'.rjust(len(name), 'k')}" for i in range(n)]
        if len("; ".join(candidate)) > MAX_TRACE_CHARS or n * (n + 1) > KEY_TRACE_PAGE_MAX_CELLS:
            return "; ".join(ops)
        ops = candidate


def test_the_largest_legitimate_callback_post_fits_under_the_default() -> None:
    """The key trace's store is sent back with every step: for the costliest trace the page
    accepts it is about 1 MB, and it must pass the default limit."""
    from dashboard.pages.keys import keys_control

    _, _, state, _ = keys_control("keys-trace", _largest_key_trace(), None, None, False)
    assert state["steps"], state["error"]
    body = json.dumps({
        "output": "keys-store.data", "outputs": {"id": "keys-store", "property": "data"},
        "inputs": [{"id": "keys-step", "property": "n_clicks", "value": 1}],
        "changedPropIds": ["keys-step.n_clicks"],
        "state": [{"id": "keys-store", "property": "data", "value": state}],
    }).encode()
    assert len(body) < MAX_REQUEST_BYTES
    response = _client().post(DASH_POST, data=body, content_type="application/json")
    assert response.status_code != 413


# --- export jobs (§8) ---------------------------------------------------------------------

def _slow_export(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Make every export job (a fork of this process) take ``seconds``."""
    def slow(*_args: Any, **_kwargs: Any) -> tuple[None, str]:
        time.sleep(seconds)
        return None, "done"

    monkeypatch.setattr(report, "export_payload", slow)


class _Exports:
    """An app and the HTTP conversation the export control has with it."""

    def __init__(self, **limits: Any) -> None:
        self.server = create_app(DemoSource(seed=0), limits=ServerLimits(**limits))
        self.app = dash_app_of(self.server)
        self.manager = self.app._background_manager
        self.client = self.server.test_client()
        self.client.get("/")
        self.token = export_token(self.server.extensions["queuelens"]["context"])

    def body(self, n_clicks: int) -> dict[str, Any]:
        return {
            "output": EXPORT_OUTPUT,
            "outputs": [{"id": "export-download", "property": "data"},
                        {"id": "export-status", "property": "children"}],
            "inputs": [{"id": "export-button", "property": "n_clicks", "value": n_clicks}],
            "state": [{"id": "export-format", "property": "value", "value": "csv"},
                      {"id": "export-app", "property": "data", "value": self.token}],
            "changedPropIds": ["export-button.n_clicks"],
        }

    def click(self, n_clicks: int) -> dict[str, str]:
        """Press "Export report": the signed handles of the job Dash started."""
        response = self.client.post(DASH_POST, json=self.body(n_clicks))
        assert response.status_code == 200, response.get_data(as_text=True)
        handles: dict[str, str] = response.get_json()
        return handles

    def poll(self, n_clicks: int, handles: dict[str, str]) -> Any:
        """One progress/result poll, as the browser sends every EXPORT_POLL_MS."""
        from urllib.parse import urlencode

        query = urlencode({"cacheKey": handles["cacheKey"], "job": handles["job"]})
        response = self.client.post(f"{DASH_POST}?{query}", json=self.body(n_clicks))
        assert response.status_code in (200, 204), response.get_data(as_text=True)
        return response.get_json() if response.status_code == 200 else None

    def status(self, n_clicks: int, handles: dict[str, str]) -> str | None:
        answer = self.poll(n_clicks, handles)
        found = (answer or {}).get("response", {}).get("export-status", {})
        children: str | None = found.get("children")
        return children

    def jobs(self) -> dict[int, str]:
        jobs: ExportJobs = self.manager.jobs
        return jobs.jobs()

    def stop_all(self) -> None:
        for pid in list(self.jobs()):
            self.manager.jobs.terminate(pid)


@pytest.fixture
def exports() -> Iterator[Callable[..., _Exports]]:
    made: list[_Exports] = []

    def make(**limits: Any) -> _Exports:
        made.append(_Exports(**limits))
        return made[-1]

    yield make
    for e in made:
        e.stop_all()


def _alive(pid: int) -> bool:
    """A running process (a zombie is not running: it is what a missing reap leaves)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _zombie(pid: int) -> bool:
    try:
        proc = psutil.Process(pid)
        return proc.status() == psutil.STATUS_ZOMBIE and proc.ppid() == os.getpid()
    except psutil.NoSuchProcess:
        return False


def _wait(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def test_a_third_export_is_refused_with_a_sentence_and_starts_no_process(
    monkeypatch: pytest.MonkeyPatch, exports: Callable[..., _Exports],
) -> None:
    _slow_export(monkeypatch, 60)
    e = exports(export_jobs=2)
    before = {p.pid for p in psutil.Process().children()}
    first, second, third = e.click(1), e.click(2), e.click(3)
    started = {p.pid for p in psutil.Process().children()} - before
    assert len(started) == 2, f"{len(started)} export processes for 3 clicks"
    assert all(_alive(pid) for pid in started)
    busy = EXPORT_BUSY.format(jobs=2)
    assert busy.startswith("An export is already running; try again when it finishes")
    assert e.status(3, third) == busy
    # the two that run are still running (their polls carry no result yet)
    assert e.status(1, first) is None
    assert e.status(2, second) is None
    # one finishes (here: is cancelled) → a new click starts a job again
    e.manager.jobs.terminate(int(next(iter(e.jobs()))))
    fourth = e.click(4)
    assert e.status(4, fourth) is None
    assert len([s for s in e.jobs().values() if s == "running"]) == 2


def test_an_unpolled_finished_job_is_reaped_and_forgotten(
    monkeypatch: pytest.MonkeyPatch, exports: Callable[..., _Exports],
) -> None:
    _slow_export(monkeypatch, 0)
    e = exports(export_abandon_s=0.5)
    before = {p.pid for p in psutil.Process().children()}
    e.click(1)  # nobody polls it: the tab was closed at once
    (pid,) = {p.pid for p in psutil.Process().children()} - before
    assert _wait(lambda: not _alive(pid), 10), "the job never finished"
    # without the reaper a finished job stays a zombie until its result is fetched
    assert _wait(lambda: not _zombie(pid), 5), "the finished job was left a zombie"
    assert _wait(lambda: not e.jobs(), 5)
    keys = [k for k in e.manager.handle.iterkeys() if not str(k).startswith("__dash")]
    assert keys == [], f"the abandoned job left {keys} in the store"


def test_an_unpolled_running_job_is_cancelled(
    monkeypatch: pytest.MonkeyPatch, exports: Callable[..., _Exports],
) -> None:
    _slow_export(monkeypatch, 60)
    e = exports(export_abandon_s=0.5)
    handles = e.click(1)
    (pid,) = e.jobs()
    assert _alive(pid)
    assert _wait(lambda: not _alive(pid), 5), "an export nobody polls ran on"
    assert not _zombie(pid)
    assert e.jobs() == {}
    assert e.status(1, handles) is None  # a late poll finds nothing and ends quietly


def test_a_polled_job_is_stopped_at_its_time_limit_with_a_sentence(
    monkeypatch: pytest.MonkeyPatch, exports: Callable[..., _Exports],
) -> None:
    _slow_export(monkeypatch, 60)
    e = exports(export_timeout_s=1.0, export_abandon_s=30)
    handles = e.click(1)
    (pid,) = e.jobs()
    seen: list[str | None] = []

    def stopped() -> bool:
        seen.append(e.status(1, handles))  # the browser keeps polling
        return seen[-1] is not None

    assert _wait(stopped, 8), "the job ran past its time limit"
    assert seen[-1] == export_timeout_text(1.0)
    assert "longer than 1 s" in seen[-1]
    assert not _alive(pid)
    assert not _zombie(pid)
    assert e.jobs() == {}


def test_a_job_also_stops_itself_after_its_limit() -> None:
    """The job process carries its own alarm: it ends even if the server is gone."""
    from multiprocess import Process

    limit_s = 1.0
    proc = Process(target=report._bounded_job, args=(time.sleep, (30,), limit_s))
    t0 = time.monotonic()
    proc.start()
    proc.join(timeout=10)
    assert not proc.is_alive()
    assert time.monotonic() - t0 < 5
    assert proc.exitcode == -signal.SIGALRM  # killed by its own alarm


def test_only_our_own_jobs_are_ever_signalled(exports: Callable[..., _Exports]) -> None:
    """A job handle is a PID; once a job is reaped its PID may be someone else's: the
    manager never signals a PID it did not start and still knows."""
    import subprocess
    import sys

    e = exports()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        e.manager.terminate_job(str(other.pid))
        e.manager.terminate_unhealthy_job(str(other.pid))
        assert e.manager.job_running(str(other.pid)) is False
        time.sleep(0.2)
        assert other.poll() is None
    finally:
        other.kill()
        other.wait(timeout=10)


@pytest.mark.parametrize(("var", "value", "fragment"), [
    ("QUEUELENS_EXPORT_JOBS", "many", "QUEUELENS_EXPORT_JOBS"),
    ("QUEUELENS_EXPORT_JOBS", "0", "at least 1 export job"),
    ("QUEUELENS_EXPORT_TIMEOUT", "soon", "QUEUELENS_EXPORT_TIMEOUT"),
    ("QUEUELENS_EXPORT_ABANDON", "-1", "QUEUELENS_EXPORT_ABANDON"),
])
def test_bad_export_limits_are_a_config_error(var: str, value: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        ServerLimits.from_env({var: value})


def test_limits_from_the_environment() -> None:
    limits = ServerLimits.from_env({"QUEUELENS_EXPORT_JOBS": "1", "QUEUELENS_EXPORT_TIMEOUT": "2m",
                                    "QUEUELENS_EXPORT_ABANDON": "90s",
                                    "QUEUELENS_MAX_REQUEST_SIZE": ""})
    assert limits == ServerLimits(export_jobs=1, export_timeout_s=120.0, export_abandon_s=90.0)
    assert ServerLimits.from_env({}) == ServerLimits()
    assert ServerLimits() == ServerLimits(4 * 1024 * 1024, 2, 600.0, 120.0)


# --- /health and the banner (§16) ---------------------------------------------------------

class _Switchable:
    """A source whose reads succeed, fail as unreachable, or are refused, on demand."""

    def __init__(self, mode: str = "up") -> None:
        self.mode = mode

    @property
    def name(self) -> str:
        return "http://prom:9090"

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        if self.mode == "down":
            raise PrometheusUnreachable(
                "connection refused by http://admin:hunter2@prom:9090")
        if self.mode == "refused":
            raise BadQuery("Prometheus rejected the query: parse error")
        return Snapshot(at=at, window_s=window_s, source=self.name, queues=[])

    def range(self, start: float, end: float, step_s: float,
              queues: Sequence[str] | None = None, signals: object = None) -> RangeData:
        raise AssertionError("not read here")


def _cached(inner: _Switchable, clock: list[float]) -> CachedSource:
    return CachedSource(inner, ttl_s=1, align_s=1, error_ttl_s=0,
                        monotonic=lambda: clock[0], wall=lambda: clock[0])


def _read(cached: CachedSource, clock: list[float], at: float) -> None:
    clock[0] = at
    with contextlib.suppress(PrometheusUnreachable, BadQuery):
        cached.snapshot(at, 300)


def _health(server: flask.Flask) -> dict[str, Any]:
    response = server.test_client().get("/health")
    assert response.status_code == 200  # liveness: the server answers, whatever the source
    body: dict[str, Any] = response.get_json()
    assert body["status"] == "ok"
    assert "hunter2" not in response.get_data(as_text=True)
    return body


def test_health_reports_the_source_state_and_stays_live() -> None:
    inner, clock = _Switchable("up"), [1000.0]
    cached = _cached(inner, clock)
    server = create_app(cached)
    assert _health(server)["source_state"] == "unknown"  # nothing read yet
    _read(cached, clock, 1000.0)
    body = _health(server)
    assert body == {"status": "ok", "source": "http://prom:9090", "source_state": "ok",
                    "last_error": None, "stale_since": None, "last_success_at": 1000.0}
    inner.mode = "down"
    _read(cached, clock, 1010.0)
    body = _health(server)
    assert body["source_state"] == "stale"
    assert body["stale_since"] == 1010.0
    assert body["last_success_at"] == 1000.0
    assert body["last_error"] == "connection refused by http://prom:9090"  # no user:pass@
    inner.mode = "refused"
    _read(cached, clock, 1020.0)
    assert _health(server)["source_state"] in ("error", "stale")
    inner.mode = "up"
    _read(cached, clock, 1030.0)
    assert _health(server)["source_state"] == "ok"


def test_health_says_unreachable_when_nothing_was_ever_read() -> None:
    inner, clock = _Switchable("down"), [1000.0]
    cached = _cached(inner, clock)
    _read(cached, clock, 1000.0)
    body = _health(create_app(cached))
    assert body["source_state"] == "unreachable"
    assert body["last_success_at"] is None
    assert "connection refused" in body["last_error"]


def test_health_says_error_when_the_source_refuses_a_query() -> None:
    inner, clock = _Switchable("refused"), [1000.0]
    cached = _cached(inner, clock)
    _read(cached, clock, 1000.0)
    body = _health(create_app(cached))
    assert body["source_state"] == "error"
    assert "parse error" in body["last_error"]


def test_the_banner_does_not_promise_data_that_was_never_read() -> None:
    inner, clock = _Switchable("down"), [1000.0]
    cached = _cached(inner, clock)
    _read(cached, clock, 1000.0)
    text = stale_banner_text(cached)
    assert text == ("No data could be read yet: connection refused by http://prom:9090. "
                    "Retrying at every refresh.")
    assert "last good data" not in text
    inner.mode = "up"
    _read(cached, clock, 1010.0)
    assert stale_banner_text(cached) == ""
    inner.mode = "down"
    _read(cached, clock, 1020.0)
    assert stale_banner_text(cached).startswith("Stale data since 1970-01-01 00:17:00 UTC: "
                                                "showing the last good data.")


# --- a queue name with a line break (§16) -------------------------------------------------

NEWLINE_NAME = "team-a\nreconciler"


class _NewlineSource:
    """One queue whose name (a Prometheus label value) holds a line break."""

    name = "newline-source"

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        return Snapshot(at=at, window_s=window_s, source=self.name, queues=[
            QueueSnapshot(queue=NEWLINE_NAME, arrival_rate_per_s=2.0, throughput_per_s=2.0,
                          service_mean_s=0.5, busy_workers=1.0, workers=2.0,
                          utilization=0.5, depth_current=1.0, depth_mean=1.0)])

    def range(self, start: float, end: float, step_s: float,
              queues: Sequence[str] | None = None, signals: object = None) -> RangeData:
        rows = [{"queue": NEWLINE_NAME, "signal": "arrival_rate_per_s", "t": start,
                 "value": 2.0}]
        return RangeData.from_frame(start=start, end=end, step_s=step_s, source=self.name,
                                    frame=pd.DataFrame(rows))


@pytest.mark.parametrize("path", ["/queue/team-a%0Areconciler", "/queue/a%0A%2Fb%0D",
                                  "/queue/%0A"])
def test_a_queue_name_with_a_line_break_gets_its_page(path: str) -> None:
    client = create_app(_NewlineSource()).test_client()
    response = client.get(path)
    assert response.status_code == 200, "a bare 404 for a name with a line break"
    assert b"_dash-config" in response.data


def test_the_page_finds_the_queue_and_shows_the_break_as_an_escape() -> None:
    from dashboard.pages.queue import layout, queue_view

    page = layout(name="team-a%0Areconciler")
    heading = page.children[0].children[1]
    assert heading.id == "queue-name"
    assert heading.children == "team-a\\nreconciler"
    view = queue_view(_NewlineSource(), NEWLINE_NAME, "1h", 1_767_225_600.0)
    assert "There is no queue" not in view.message
    assert view.queue == NEWLINE_NAME
