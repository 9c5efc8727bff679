"""Issue 23: ``report`` to stdout never writes a raw terminal control from a label value
(reset, C1, right-to-left override, NUL), in every format, and each format's own escaping
still holds (JSON valid and exact, CSV formula guard, HTML escaped)."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import pytest

from tests.dashboard.test_report import HostileSource
from tests.support.cli import run_main

CONTROL_NAMES = ("reset\x1b[0m-q", "c1\x9b31m-q", "rlo\u202eevil-q", "nul\x00x-q",
                 "=cmd\x1b[2J", "bell\x07\x7f-q")
RAW = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Every control the terminal escaping covers, except the line feed the formats use."""


@pytest.fixture
def hostile(monkeypatch: pytest.MonkeyPatch) -> None:
    import dashboard.source_args

    def source(*args: Any, **kwargs: Any) -> HostileSource:
        return HostileSource(CONTROL_NAMES)

    monkeypatch.setattr(dashboard.source_args, "source_from_args", source)


@pytest.mark.parametrize("fmt", ["md", "csv", "json", "html"])
def test_report_to_stdout_writes_no_raw_control(fmt: str, hostile: None,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(["report", "--format", fmt, "--at", "1700000000",
                               "--range", "1h"], capsys)
    assert code == 0, err
    if fmt == "html":  # the inlined plotly.js bundle has tabs and controls of its own
        scripts = re.findall(r"<script type=\"text/javascript\">.*?</script>", out, re.S)
        out = out.replace(max(scripts, key=len), "<script></script>")
    found = sorted({f"U+{ord(c):04X}" for c in RAW.findall(out)})
    assert found == [], found
    if fmt == "json":  # valid, and the names are exact once decoded
        doc = json.loads(out)
        assert {q["queue"] for q in doc["queues"]} == set(CONTROL_NAMES)
    elif fmt == "csv":
        names = {r["queue"] for r in csv.DictReader(io.StringIO(out))}
        assert "'=cmd\\x1b[2J" in names  # the formula guard, then the escape
        assert "reset\\x1b[0m-q" in names
    elif fmt == "html":
        assert "rlo\\u202eevil-q" in out
    else:
        assert "reset\\\\x1b\\[0m-q" in out or "reset\\x1b[0m-q" in out


def test_report_to_a_file_keeps_the_exact_names_in_json(
        hostile: None, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "r.json"
    code, _out, err = run_main(["report", "--format", "json", "--at", "1700000000",
                                "--range", "1h", "-o", str(target)], capsys)
    assert code == 0, err
    text = target.read_text()
    assert RAW.findall(text) == []  # JSON writes them as \\u escapes, lossless
    assert {q["queue"] for q in json.loads(text)["queues"]} == set(CONTROL_NAMES)
