"""The shared CLI plumbing: the progress bar and atomic writes."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from dashboard.cliutil import CliError, ProgressBar, write_text_atomically


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
