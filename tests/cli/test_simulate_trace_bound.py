"""Issue 23 item 11: ``simulate --trace`` stated a 320 MB bound for 10,000,000 events that
cost ~1.7 KB each (17 GB at the cap), and the table format computed a trace it never
printed. The cap now follows the measured cost, and only JSON computes the trace."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dashboard.commands.simulate import MAX_TRACE_EVENTS
from tests.support.cli import run_main

BASE = ["simulate", "--arrival-rate", "5", "--keys", "3", "--workers", "1",
        "--service-mean", "0.1", "--duration", "10"]


def test_the_cap_keeps_the_trace_within_its_stated_memory() -> None:
    # about 1.7 KB an event at the peak (measured): the cap keeps the trace under 400 MB
    assert MAX_TRACE_EVENTS * 1_700 <= 400e6


def test_over_the_cap_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main([*BASE, "--trace", str(MAX_TRACE_EVENTS + 1)], capsys)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "--trace" in err


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_only_json_computes_the_trace(fmt: str, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    import models.simulate

    asked: list[int] = []
    real = models.simulate.simulate

    def spy(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs.get("trace_limit", 0))
        return real(*args, **kwargs)

    monkeypatch.setattr(models.simulate, "simulate", spy)
    code, out, err = run_main([*BASE, "--trace", "20", "--format", fmt], capsys)
    assert code == 0, err
    assert asked == ([20] if fmt == "json" else [0])
    if fmt == "json":
        assert len(json.loads(out)["trace"]) == 20
    if fmt == "table":
        assert "printed with --format json only" in out
