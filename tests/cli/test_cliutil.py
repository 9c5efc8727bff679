"""The shared CLI plumbing: the progress bar, atomic writes, and the escaping of hostile text
in every output format."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from dashboard.cliutil import (
    CliError,
    OneLineParser,
    ProgressBar,
    dump_json,
    emit,
    format_csv,
    format_table,
    terminal_text,
    write_text_atomically,
)


def test_fraction_redraws_only_when_the_whole_percent_changes() -> None:
    stream = io.StringIO()
    bar = ProgressBar(stream, tty=True)
    for value in (0.0, 0.001, 0.004, 0.5, 0.503, 1.0, 1.2):
        bar.fraction("simulating", value)
    bar.close()
    frames = stream.getvalue().split("\r")[1:]
    drawn = [f.split("] ")[1].split(" ")[0] for f in frames[:-2]]
    assert drawn == ["0/100", "50/100", "100/100"]
    assert frames[-2].strip() == ""  # the line is blanked at the end
    assert frames[-1] == ""


def test_atomic_write_replaces_and_refuses_missing_directory(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    write_text_atomically(str(target), "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temp file left behind
    with pytest.raises(CliError, match="does not exist"):
        write_text_atomically(str(tmp_path / "nope" / "x.txt"), "x")


# --- hostile text: terminals, spreadsheets (issue 12 §13, §14) ----------------------------

def test_terminal_text_shows_every_control_character_as_an_escape() -> None:
    assert terminal_text("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert terminal_text("x\ny\rz\tw") == "x\\ny\\rz\\tw"
    assert terminal_text("\x00\x07\x08\x7f") == "\\x00\\x07\\x08\\x7f"
    assert terminal_text("c1\x9b31m\x9d") == "c1\\x9b31m\\x9d"  # 8-bit CSI, OSC
    assert terminal_text("evil\u202egnp.exe") == "evil\\u202egnp.exe"  # bidi override
    plain = "kube-system/deployment — µs ünïcode 日本"
    assert terminal_text(plain) == plain


def test_the_table_escapes_cells_and_aligns_on_the_escaped_text() -> None:
    text = format_table([{"queue": "a\x1b[2J", "n": 1.0}, {"queue": "bb", "n": None}],
                        ["queue", "n"])
    assert "\x1b" not in text
    lines = text.splitlines()
    assert lines[2] == "a\\x1b[2J  1"
    assert lines[3] == "bb        -"


def test_emit_escapes_header_and_footer_but_keeps_their_lines() -> None:
    out = io.StringIO()
    emit("table", {}, [{"q": "x"}], ["q"], header="source: \x1b]0;t\x07\nat: now",
         footer="warning: one\x1b[1A\nwarning: two", out=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "source: \\x1b]0;t\\x07"
    assert lines[1] == "at: now"
    assert lines[-2:] == ["warning: one\\x1b[1A", "warning: two"]


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_csv_to_a_terminal_is_escaped_and_to_a_file_is_exact() -> None:
    rows = [{"queue": "a\x1b[2Jb"}]
    to_file, to_tty = io.StringIO(), _Tty()
    emit("csv", {}, rows, ["queue"], out=to_file)
    emit("csv", {}, rows, ["queue"], out=to_tty)
    assert to_file.getvalue() == "queue\na\x1b[2Jb\n"
    assert to_tty.getvalue() == "queue\na\\x1b[2Jb\n"


def test_csv_guards_formulas_in_text_only_and_quotes_a_carriage_return() -> None:
    import csv

    rows = [{"t": "=1+1", "n": -1.5}, {"t": "@x", "n": 2}, {"t": "+a", "n": None},
            {"t": "-b", "n": 0}, {"t": "\tc", "n": 1}, {"t": "\rd", "n": 1},
            {"t": "mid\rdle", "n": 1}, {"t": "ok", "n": 1}]
    text = format_csv(rows, ["t", "n"])
    back = list(csv.DictReader(io.StringIO(text)))
    assert [r["t"] for r in back] == ["'=1+1", "'@x", "'+a", "'-b", "'\tc", "'\rd", "mid\rdle",
                                      "ok"]
    assert [r["n"] for r in back] == ["-1.5", "2", "", "0", "1", "1", "1", "1"]


def test_json_escapes_what_a_terminal_would_obey() -> None:
    import json

    out = io.StringIO()
    dump_json({"q": "a\x1b[2J\x7f\x9b\u202eb", "ok": "ünï"}, out)
    text = out.getvalue()
    assert not [c for c in text if c not in "\n" and (ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f
                                                      or c == "\u202e")]
    assert "ünï" in text  # other text stays readable (ensure_ascii=False)
    assert json.loads(text) == {"q": "a\x1b[2J\x7f\x9b\u202eb", "ok": "ünï"}


def test_usage_errors_and_progress_labels_are_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    parser = OneLineParser(prog="queuelens")
    with pytest.raises(SystemExit):
        parser.error("bad value \x1b[2J\nforged")
    assert capsys.readouterr().err == "queuelens: error: bad value \\x1b[2J\\nforged\n"
    stream = io.StringIO()
    ProgressBar(stream, tty=False)("analysing q\x1b[2J", 1, 2)
    assert stream.getvalue() == "queuelens: analysing q\\x1b[2J (1/2)\n"
