"""Live refresh never below the scrape step, and the app's one clock (``AppContext.now``)."""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path
from typing import Any

import flask
import pytest

from collectors.cache import CachedSource
from collectors.config import QueuelensConfig, parse_config
from collectors.connect import open_source
from collectors.demo import DemoSource
from collectors.types import Source
from dashboard.app import create_app, effective_refresh_s, scrape_step_s
from dashboard.cliutil import OneLineParser
from dashboard.commands import serve
from dashboard.context import AppContext
from models.measurements import RangeData, Snapshot

PAGES = Path(__file__).resolve().parents[2] / "dashboard" / "pages"
UNREACHABLE = "http://127.0.0.1:9"  # never contacted: building a source does no I/O


def _config(scrape: str | None) -> QueuelensConfig:
    text = f"profile:\n  scrape_interval: {scrape}\n" if scrape else "profile: {}\n"
    return parse_config(text, "test.yaml")


def _prometheus(scrape: str | None) -> Source:
    return open_source(UNREACHABLE, False, _config(scrape), env={})


def _ctx(server: flask.Flask) -> AppContext:
    ctx: AppContext = server.extensions["queuelens"]["context"]
    return ctx


def test_scrape_step_comes_from_a_prometheus_profile_only() -> None:
    assert scrape_step_s(_prometheus("30s")) == 30.0
    assert scrape_step_s(CachedSource(_prometheus("1m"))) == 60.0
    assert scrape_step_s(_prometheus(None)) is None
    assert scrape_step_s(DemoSource(seed=0)) is None
    assert scrape_step_s(None) is None


@pytest.mark.parametrize(
    ("requested", "scrape", "expected", "noted"),
    [(5.0, "30s", 30.0, True), (30.0, "30s", 30.0, False), (60.0, "30s", 60.0, False),
     (1.0, None, 1.0, False)],
)
def test_effective_refresh(requested: float, scrape: str | None, expected: float,
                           noted: bool) -> None:
    value, note = effective_refresh_s(requested, _prometheus(scrape))
    assert value == expected
    assert (note is not None) is noted


def test_demo_keeps_a_short_refresh() -> None:
    assert effective_refresh_s(1.0, DemoSource(seed=0)) == (1.0, None)


def test_create_app_raises_refresh_to_the_scrape_interval_with_one_note(
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = create_app(_prometheus("30s"), refresh_s=5)
    ctx = _ctx(server)
    assert ctx.refresh_s == 30.0
    assert isinstance(ctx.source, CachedSource)
    assert ctx.source.ttl_s == 30.0  # the shared cache follows the refresh period
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "refresh 5s is below the scrape interval 30s" in err
    assert "every 30s" in err


def test_create_app_at_or_above_the_scrape_interval_is_quiet(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _ctx(create_app(_prometheus("30s"), refresh_s=45)).refresh_s == 45.0
    assert _ctx(create_app(DemoSource(seed=0), refresh_s=1)).refresh_s == 1.0
    assert capsys.readouterr().err == ""


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = OneLineParser(prog="queuelens")
    sub = parser.add_subparsers(dest="command", parser_class=OneLineParser)
    serve.register(sub)
    return parser.parse_args(["serve", *argv])


def test_serve_refresh_below_scrape_interval_is_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "q.yaml"
    cfg.write_text("profile:\n  scrape_interval: 20s\n")
    served: list[Any] = []
    monkeypatch.setattr(serve, "run_server", lambda app, host, port: served.append(app))
    monkeypatch.delenv("QUEUELENS_PROMETHEUS_URL", raising=False)
    args = _parse(["--prometheus", UNREACHABLE, "--config", str(cfg), "--refresh", "2s"])
    assert serve.handle(args) == 0
    (server,) = served
    assert _ctx(server).refresh_s == 20.0
    err = capsys.readouterr().err
    assert "queuelens: note: refresh 2s is below the scrape interval 20s" in err


def test_serve_demo_keeps_the_one_second_minimum(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    served: list[Any] = []
    monkeypatch.setattr(serve, "run_server", lambda app, host, port: served.append(app))
    assert serve.handle(_parse(["--demo", "--refresh", "1s"])) == 0
    assert _ctx(served[0]).refresh_s == 1.0
    assert "note" not in capsys.readouterr().err
    from dashboard.cliutil import CliError

    with pytest.raises(CliError, match="at least 1s"):
        serve.handle(_parse(["--demo", "--refresh", "500ms"]))


def test_serve_at_parses_a_fixed_time(monkeypatch: pytest.MonkeyPatch) -> None:
    args = _parse(["--demo", "--at", "2024-01-01T00:50:00Z"])
    assert args.at == 1704067200 + 3000
    served: list[Any] = []
    monkeypatch.setattr(serve, "run_server", lambda app, host, port: served.append(app))
    serve.handle(args)
    assert _ctx(served[0]).at == 1704067200 + 3000
    assert _parse(["--demo"]).at is None


def test_context_now_is_fixed_or_the_wall_clock() -> None:
    assert AppContext(source=None, at=1234.5).now() == 1234.5
    before = time.time()
    now = AppContext(source=None).now()
    assert before <= now <= time.time()


def test_app_rejects_a_non_finite_time() -> None:
    with pytest.raises(ValueError, match="evaluation time"):
        create_app(DemoSource(seed=0), at=float("nan"))


class _Recorder:
    """A source that records the times it is asked for (answers from the demo)."""

    name = "recorder"

    def __init__(self) -> None:
        self.inner = DemoSource(seed=0)
        self.snapshot_at: list[float] = []

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        self.snapshot_at.append(at)
        return self.inner.snapshot(at, window_s)

    def range(self, start: float, end: float, step_s: float,
              queues: Any = None, signals: Any = None) -> RangeData:
        return self.inner.range(start, end, step_s, queues, signals)


def test_pages_read_at_the_fixed_time() -> None:
    from dashboard.pages import whatif

    recorder = _Recorder()
    at = 1_704_067_200.0
    ctx = AppContext(source=recorder, at=at)
    assert whatif._queue_names(ctx) == sorted(DemoSource(seed=0).queue_names)
    assert recorder.snapshot_at == [at]


def test_no_page_reads_the_wall_clock_directly() -> None:
    """Every page asks ``ctx.now()``, so a fixed evaluation time holds on every page."""
    offenders = [f"{p.name}:{n}" for p in sorted(PAGES.glob("*.py"))
                 for n, line in enumerate(p.read_text().splitlines(), 1)
                 if re.search(r"\btime\.time\(\)", line)]
    assert offenders == []
