"""The app factory: pages, /health, debug always off, escaping of shell text."""

from __future__ import annotations

import json
from collections.abc import Sequence

import dash
import pytest

from collectors.cache import CachedSource
from collectors.errors import PrometheusUnreachable
from dashboard.app import build_dash_app, create_app, dash_app_of, stale_banner_text
from models.measurements import RangeData, Snapshot


class _NamedSource:
    """The smallest Source for factory tests that do not read data."""

    def __init__(self, name: str = "test-source") -> None:
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        raise AssertionError("not read in these tests")

    def range(self, start: float, end: float, step_s: float,
              queues: Sequence[str] | None = None, signals: object = None) -> RangeData:
        raise AssertionError("not read in these tests")


_OUTPUTS = (("lab-graph", "figure"), ("lab-time", "children"), ("lab-backlog", "children"),
            ("lab-prediction", "children"), ("lab-mm1", "children"))
_LAB_RENDER_OUTPUTS = {
    # Dash's wire format for a multi-output callback: "..a.p...b.q.."
    "output": "..{}..".format("...".join(f"{i}.{p}" for i, p in _OUTPUTS)),
    "outputs": [{"id": i, "property": p} for i, p in _OUTPUTS],
}


def test_health_reports_ok_and_the_source() -> None:
    client = create_app(_NamedSource("demo"), refresh_s=15).test_client()
    response = client.get("/health")
    assert response.status_code == 200
    # nothing has been read through the app's cache yet (the source state: see
    # tests/dashboard/test_server_limits.py)
    assert response.get_json() == {"status": "ok", "source": "demo", "source_state": "unknown",
                                   "last_error": None, "stale_since": None,
                                   "last_success_at": None}


def test_pages_are_registered_at_their_paths() -> None:
    build_dash_app(_NamedSource())
    paths = {p["path"] for p in dash.page_registry.values()}
    templates = {p["path_template"] for p in dash.page_registry.values()}
    assert {"/", "/whatif", "/lab"} <= paths
    assert "/queue/<name>" in templates


@pytest.mark.parametrize("path", ["/", "/lab", "/whatif", "/queue/kube-system%2Fdeployment"])
def test_every_page_url_serves_the_app(path: str) -> None:
    client = create_app(_NamedSource()).test_client()
    response = client.get(path)
    assert response.status_code == 200
    assert b"_dash-config" in response.data


def test_debug_stays_off_even_with_dash_debug_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("DASH_DEBUG", "DASH_UI", "DASH_PRUNE_ERRORS", "FLASK_DEBUG"):
        monkeypatch.setenv(var, "true")
    server = create_app(_NamedSource())
    app = dash_app_of(server)
    assert server.debug is False
    assert app._dev_tools.ui is False
    assert app._dev_tools.hot_reload is False
    # a callback that fails on the server (the pages' own callbacks answer forged input with
    # a sentence now, so the test brings its own): bare 500, no traceback
    from dash import Input, Output

    @app.callback(Output("nav-source", "title"), Input("refresh-interval", "disabled"))
    def _fails(_disabled: object) -> str:
        raise RuntimeError("secret=hunter2")

    client = server.test_client()
    client.get("/")  # first request sets up the callbacks
    body = {
        "output": "nav-source.title", "outputs": {"id": "nav-source", "property": "title"},
        "inputs": [{"id": "refresh-interval", "property": "disabled", "value": False}],
        "changedPropIds": ["refresh-interval.disabled"],
        "state": [],
    }
    response = client.post("/_dash-update-component", data=json.dumps(body),
                           content_type="application/json")
    assert response.status_code == 500
    assert b"Callback function not found" not in response.data
    assert b"Traceback" not in response.data
    assert b"hunter2" not in response.data
    assert b"Werkzeug" not in response.data


def test_lab_callback_answers_over_http() -> None:
    server = create_app(_NamedSource())
    client = server.test_client()
    client.get("/")
    body = {
        **_LAB_RENDER_OUTPUTS,
        "inputs": [
            {"id": "lab-state", "property": "data", "value": {
                "t": 0, "backlog": 4.0, "arrival_rate": 2.0, "service_rate": 3.0,
                "origin_t": 0, "origin_backlog": 4.0, "history": [[0, 4.0]]}},
            {"id": "lab-arrival-rate", "property": "value", "value": 2},
            {"id": "lab-service-rate", "property": "value", "value": 3}],
        "changedPropIds": ["lab-state.data"],
        "state": [],
    }
    response = client.post("/_dash-update-component", data=json.dumps(body),
                           content_type="application/json")
    assert response.status_code == 200
    payload = response.get_json()["response"]
    assert payload["lab-prediction"]["children"] == "clears at t = 4"
    assert payload["lab-backlog"]["children"] == "4"


def test_source_name_in_the_nav_is_escaped_text() -> None:
    server = create_app(_NamedSource('<img src=x onerror="alert(1)">'))
    layout = server.test_client().get("/_dash-layout").get_json()
    text = json.dumps(layout)
    # Dash renders children as text nodes; the name appears only as a JSON string value
    assert 'source: <img src=x onerror=\\"alert(1)\\">' in text
    assert "dangerously_allow_html" not in text


def test_refresh_must_be_positive() -> None:
    with pytest.raises(ValueError, match="refresh period"):
        create_app(_NamedSource(), refresh_s=0)


class _FlakySource(_NamedSource):
    """Answers once, then Prometheus is down."""

    def __init__(self) -> None:
        super().__init__("http://prom:9090")
        self.up = True

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        if not self.up:
            raise PrometheusUnreachable("connection refused by http://prom:9090")
        return Snapshot(at=at, window_s=window_s, source=self.name, queues=[])


def test_stale_banner_appears_with_the_error_and_clears_on_recovery() -> None:
    assert stale_banner_text(_NamedSource()) == ""
    inner = _FlakySource()
    clock = [1000.0]
    cached = CachedSource(inner, ttl_s=1, align_s=1, error_ttl_s=0,
                          monotonic=lambda: clock[0], wall=lambda: clock[0])
    cached.snapshot(1000.0, 300)
    assert stale_banner_text(cached) == ""
    inner.up = False
    clock[0] = 1010.0
    cached.snapshot(1010.0, 300)  # last good data, marked stale
    text = stale_banner_text(cached)
    assert text.startswith("Stale data since 1970-01-01 00:16:50 UTC")
    assert "connection refused by http://prom:9090" in text
    inner.up = True
    clock[0] = 1020.0
    cached.snapshot(1020.0, 300)
    assert stale_banner_text(cached) == ""


def test_factory_wraps_the_source_in_the_shared_cache() -> None:
    server = create_app(_NamedSource("x"))
    ctx = server.extensions["queuelens"]["context"]
    assert isinstance(ctx.source, CachedSource)
    assert ctx.source.name == "x"
