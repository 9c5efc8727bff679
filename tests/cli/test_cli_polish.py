"""CLI polish (issue 21): ``advise --format csv|yaml``, the advise table fitted to the
terminal with a severity column, ``report --format html`` refusing a terminal, "did you mean"
for a mistyped command, ``whatif`` without ``--slo`` in plain words, and the note on a bare
work time that looks like milliseconds."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import subprocess
import sys
from typing import Any

import pytest
import yaml

from dashboard import cliutil
from dashboard.commands import advise as advise_cmd
from models import fleet as fl
from models.advisor import SEVERITIES
from tests.support.cli import ROOT, run_main

AT_DEMO = str(fl.EPOCH_S + 40 * 86400 + 14 * 3600)
ADVISE = ["advise", "--demo", "--at", AT_DEMO]


# --- advise: yaml, csv, severity, width -------------------------------------------------------


def test_advise_yaml_has_the_json_fields(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main([*ADVISE, "--format", "json"], capsys)
    assert code == 0, err
    as_json = json.loads(out)
    code, out, err = run_main([*ADVISE, "--format", "yaml"], capsys)
    assert code == 0, err
    as_yaml = yaml.safe_load(out)
    assert as_yaml == as_json
    assert as_yaml["queues"][1]["verdicts"][0]["kind"] == "add_workers"  # an enum, as its value


def test_advise_csv_is_the_table_with_a_severity(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main([*ADVISE, "--format", "csv"], capsys)
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    code, js, _ = run_main([*ADVISE, "--format", "json"], capsys)
    queues = json.loads(js)["queues"]
    assert list(rows[0]) == list(advise_cmd.TABLE_COLUMNS)
    assert [r["queue"] for r in rows] == [q["queue"] for q in queues]
    for row, q in zip(rows, queues, strict=True):
        assert row["severity"] == q["verdicts"][0]["severity"]
        assert row["severity"] in SEVERITIES
        assert row["verdict"] == q["plan"]["headline"]  # never cut: CSV is not a terminal
    replicaset = next(r for r in rows if r["queue"] == "replicaset")
    assert replicaset["workers"] == "4 → 6"
    assert replicaset["severity"] == "critical"


def test_advise_csv_guards_a_formula_in_a_queue_name() -> None:
    """The rows of ``advise --format csv`` go through the one CSV writer and its guard."""
    payload: dict[str, Any] = {"queues": [{
        "queue": "=HYPERLINK(\"http://x\")", "verdicts": [{"severity": "warning"}],
        "plan": {"headline": "@SUM(A1)", "tags": ["-1+1"]}}]}
    out = io.StringIO()
    cliutil.emit("csv", payload, advise_cmd.table_rows(payload), advise_cmd.TABLE_COLUMNS,
                 out=out)
    row = next(csv.DictReader(io.StringIO(out.getvalue())))
    assert row["queue"] == "'=HYPERLINK(\"http://x\")"
    assert row["verdict"] == "'@SUM(A1)"
    assert row["tags"] == "'-1+1"
    assert row["severity"] == "warning"


def _table_lines(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("queue "))
    return [line for line in lines[start:] if line and not line.startswith("warning")]


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_advise_table_fits_the_terminal_width(columns: int, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")
    code, out, _ = run_main(ADVISE, capsys)
    assert code == 0
    wide = _table_lines(out)
    assert max(len(line) for line in wide) > 120  # the full table needs the room
    assert cliutil.ELLIPSIS not in "\n".join(wide)
    monkeypatch.setenv("COLUMNS", str(columns))
    code, out, _ = run_main(ADVISE, capsys)
    assert code == 0
    narrow = _table_lines(out)
    assert len(narrow) == len(wide)  # cut, not wrapped
    assert max(len(line) for line in narrow) <= columns
    assert cliutil.ELLIPSIS in "\n".join(narrow)
    heads = narrow[0].split()
    assert heads == list(advise_cmd.TABLE_COLUMNS)
    # the numbers and the severity are never cut: the same words as the full table's
    for full, cut in zip(wide[2:], narrow[2:], strict=True):
        for needle in ("4 → 6", "/s", " %", "critical", "warning", " ok "):
            assert (needle in full) == (needle in cut), (needle, full, cut)
    replicaset = next(line for line in narrow if line.startswith("replica"))
    assert " 4 → 6 " in replicaset
    assert "15.3/s" in replicaset


def test_format_table_cuts_the_widest_text_column_first() -> None:
    rows = [{"name": "n" * 30, "text": "t" * 60, "count": 123456789}]
    table = cliutil.format_table(rows, ["name", "text", "count"], max_width=80,
                                 shrink=["name", "text"])
    lines = table.splitlines()
    assert max(len(line) for line in lines) == 80
    assert lines[2].endswith("123456789")
    assert lines[2].startswith("n" * 30)  # the narrower column is left alone while it can be
    assert lines[2].count(cliutil.ELLIPSIS) == 1
    # a width no cut can reach: every text column at its floor, the number whole
    tiny = cliutil.format_table(rows, ["name", "text", "count"], max_width=10,
                                shrink=["name", "text"]).splitlines()
    floor = cliutil.MIN_SHRUNK_WIDTH - 1
    assert tiny[2].split() == ["n" * floor + cliutil.ELLIPSIS, "t" * floor + cliutil.ELLIPSIS,
                               "123456789"]


def test_dump_yaml_escapes_what_a_terminal_would_obey() -> None:
    hostile = {"name\u202e": "a\x1b[2Jb\u2066c\x9bd", "plain": "→ fine"}
    out = io.StringIO()
    cliutil.dump_yaml(hostile, out)
    text = out.getvalue()
    assert cliutil.terminal_text(text) == text.replace("\n", "\\n")  # nothing raw but newlines
    assert yaml.safe_load(text) == hostile
    assert "→ fine" in text


# --- report html on a terminal --------------------------------------------------------------


def _report_html(stdout: int) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "dashboard.cli", "report", "--demo", "--at", AT_DEMO,
         "--range", "1h", "--format", "html"],
        cwd=ROOT, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "80"})
    return proc.returncode, proc.stderr


def test_report_html_refuses_a_terminal() -> None:
    leader, follower = pty.openpty()
    try:
        code, err = _report_html(follower)
        os.set_blocking(leader, False)
        try:
            written = os.read(leader, 4096)
        except BlockingIOError:
            written = b""
    finally:
        os.close(leader)
        os.close(follower)
    assert code == 2
    assert err == "queuelens: error: writing HTML to a terminal; use -o FILE or redirect\n"
    assert written == b""


def test_report_html_to_a_pipe_is_written() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "dashboard.cli", "report", "--demo", "--at", AT_DEMO,
         "--range", "1h", "--format", "html"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.lstrip().lower().startswith("<!doctype html>")


# --- did you mean ---------------------------------------------------------------------------


@pytest.mark.parametrize(("typed", "meant"), [("advize", "advise"), ("rule", "rules"),
                                              ("whatfi", "whatif"), ("reprot", "report")])
def test_a_mistyped_command_says_did_you_mean(typed: str, meant: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main([typed, "--demo"], capsys)
    assert code == 2
    assert out == ""
    assert err == f"queuelens: error: unknown command {typed!r}; did you mean {meant!r}?\n"


def test_nothing_close_keeps_argparse_s_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(["xyzzy"], capsys)
    assert code == 2
    assert err.count("\n") == 1
    assert "did you mean" not in err
    assert "invalid choice: 'xyzzy'" in err


# --- whatif: no SLO, and a work time that looks like milliseconds ---------------------------


def test_whatif_without_slo_says_so_plainly(capsys: pytest.CaptureFixture[str]) -> None:
    # λ·E[S] = 1.5: c=2 is the smallest stable count (ρ = 0.75), ρ ≤ 0.7 needs c=3
    code, out, err = run_main(["whatif", "--arrival-rate", "10", "--service-mean", "150ms",
                               "--workers", "1-6"], capsys)
    assert code == 0, err
    footer = out.splitlines()[-1]
    assert footer == ("recommendation: 3 — utilization design: ρ ≤ 0.7 at c=3 leaves headroom "
                      "for bursts and a lost pod (with no SLO given, the smallest stable worker "
                      "count in c=1..6 is c=2).")
    assert "the no SLO" not in out


@pytest.mark.parametrize(("value", "seconds", "note"), [
    ("250", 250.0, True), ("10", 10.0, True), ("12.5", 12.5, True),
    ("5", 5.0, False), ("250ms", 0.25, False), ("250s", 250.0, False), ("9.99", 9.99, False)])
def test_a_bare_work_time_that_looks_like_ms_gets_a_note(
        value: str, seconds: float, note: bool, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(["whatif", "--arrival-rate", "0.001", "--service-mean", value,
                               "--workers", "1-2", "--format", "json"], capsys)
    assert code == 0, err
    assert json.loads(out)["inputs"]["service_mean_s"] == seconds  # still seconds
    if note:
        assert err == f"queuelens: note: {value} s — did you mean {value}ms? (a bare number is " \
                      "seconds)\n"
    else:
        assert err == ""
