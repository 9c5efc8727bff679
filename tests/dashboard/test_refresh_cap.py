"""Issue 23 item 6: the refresh period is capped below the browser timer's limit.

A ``dcc.Interval`` longer than 2^31−1 ms (24.8 days) overflows the browser's timer, which then
fires at once, over and over (~105 callbacks a second per tab); ``--refresh 1e308`` was a
traceback. Beyond :data:`dashboard.context.MAX_REFRESH_S` the flag is one line and exit 2; a
profile's scrape interval above it raises the refresh to the cap only, with a note."""

from __future__ import annotations

from typing import Any

import pytest

from collectors.config import parse_config
from collectors.connect import open_source
from dashboard.app import create_app, effective_refresh_s
from dashboard.commands import serve
from dashboard.context import MAX_REFRESH_S, AppContext
from tests.support.cli import run_main

BROWSER_TIMER_MAX_MS = 2**31 - 1
UNREACHABLE = "http://127.0.0.1:9"  # never contacted: building a source does no I/O


def _intervals(server: Any) -> list[int]:
    """Every dcc.Interval period of the app's shell, and the one the pages hand back."""
    ctx: AppContext = server.extensions["queuelens"]["context"]
    layout = server.test_client().get("/_dash-layout").get_json()
    found: list[int] = [int(ctx.refresh_s * 1000)]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "Interval":
                found.append(node["props"]["interval"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(layout)
    return found


def test_the_cap_is_below_the_browser_timer_limit() -> None:
    assert MAX_REFRESH_S * 1000 < BROWSER_TIMER_MAX_MS


@pytest.mark.parametrize("value", ["30d", "25d", "1e308", str(MAX_REFRESH_S + 1)])
def test_serve_refuses_a_refresh_above_the_cap_in_one_line(
    value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    served: list[Any] = []
    monkeypatch.setattr(serve, "run_server", lambda app, host, port: served.append(app))
    code, _out, err = run_main(["serve", "--demo", "--refresh", value], capsys)
    assert code == 2
    assert not served
    (line,) = err.splitlines()
    assert line.startswith("queuelens: error:")
    assert "--refresh" in line
    assert "at most" in line
    assert "Traceback" not in err


def test_an_overflowing_refresh_is_one_line_too(capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run_main(["serve", "--demo", "--refresh", "1e400"], capsys)
    assert code == 2
    (line,) = err.splitlines()
    assert "--refresh" in line
    assert "not a finite duration" in line  # not "must be > 0"


def test_serve_at_the_cap_is_accepted(monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    served: list[Any] = []
    monkeypatch.setattr(serve, "run_server", lambda app, host, port: served.append(app))
    code, _out, _err = run_main(["serve", "--demo", "--refresh", f"{MAX_REFRESH_S:g}"], capsys)
    assert code == 0
    assert max(_intervals(served[0])) <= BROWSER_TIMER_MAX_MS


def test_a_scrape_interval_above_the_cap_raises_the_refresh_to_the_cap_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = parse_config("profile:\n  scrape_interval: 30d\n", "test.yaml")
    source = open_source(UNREACHABLE, False, config, env={})
    value, note = effective_refresh_s(15.0, source)
    assert value == MAX_REFRESH_S
    assert note is not None
    assert "at most" in note
    server = create_app(source, refresh_s=15.0, config=config)
    assert max(_intervals(server)) <= MAX_REFRESH_S * 1000 < BROWSER_TIMER_MAX_MS


@pytest.mark.parametrize("refresh", [MAX_REFRESH_S * 2, float("inf"), float("nan")])
def test_the_app_refuses_a_refresh_no_browser_can_keep(refresh: float) -> None:
    with pytest.raises(ValueError, match="refresh period"):
        create_app(open_source(None, True, None, env={}), refresh_s=refresh)
