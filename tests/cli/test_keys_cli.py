"""`queuelens lab keys` end to end through the real CLI entry point."""

from __future__ import annotations

import json

import pytest

from dashboard.cli import main


def test_trace_json_has_the_documented_fields(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "keys", "--trace", "add A; add A; get; add A; done A; get; done A",
                 "--format", "json"]) == 0
    steps = json.loads(capsys.readouterr().out)["steps"]
    assert len(steps) == 7
    for s in steps:
        assert {"op", "queue", "dirty", "processing", "delayed", "failures", "note"} <= s.keys()
    assert steps[1]["note"] == "A already dirty: coalesced"
    assert steps[3]["dirty"] == ["A"]
    assert steps[3]["processing"] == ["A"]
    assert steps[4]["queue"] == ["A"]


def test_example_table_and_listing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "keys", "--example", "tight-loop"]) == 0
    out = capsys.readouterr().out
    assert "add_after(0)" in out
    assert "lesson:" in out
    assert main(["lab", "keys", "--list-examples"]) == 0
    assert "stale-penalty" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [
    ["lab", "keys", "--trace", "add A; done B"],
    ["lab", "keys", "--trace", "add A; jump"],
    ["lab", "keys"],
    ["lab", "keys", "--example", "nope"],
])
def test_bad_trace_is_one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("queuelens: error:")
    assert "Traceback" not in err
    if "--trace" in argv:
        assert "step 2" in err


def test_a_trace_over_the_key_place_limit_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    # issue 12: 1,500 distinct adds keep 1,500·1,501 ≈ 2.25 million key places in the output
    trace = "; ".join(f"add k{i}" for i in range(1500))
    assert main(["lab", "keys", "--trace", trace, "--format", "json"]) == 2
    err = capsys.readouterr().err
    assert "more than 1,000,000 key places" in err
    assert err.count("\n") == 1
