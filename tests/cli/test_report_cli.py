"""`queuelens report`: every format to a file from the demo, progress, and exit codes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from collectors.demo import DemoSource
from dashboard.cli import main
from dashboard.report import CHART_CLASS, CHART_DATA_ID

AT = "2023-11-14T16:00:00Z"
NAMES = DemoSource(seed=0).queue_names


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("fmt", ["html", "md", "json", "csv"])
def test_each_format_to_a_file(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / f"report.{fmt}"
    code, out, err = _run(capsys, "report", "--demo", "--at", AT, "--range", "2h",
                          "--format", fmt, "-o", str(path))
    assert code == 0, err
    assert out == ""
    assert f"to {path}" in err
    assert "rendering" not in err
    text = path.read_text(encoding="utf-8")
    if fmt == "json":
        doc = json.loads(text)
        assert doc["schema_version"] == 1
        assert doc["source"] == "demo"
        assert doc["time_range"]["range_s"] == 7200
        assert {q["queue"] for q in doc["queues"]} == set(NAMES)
    elif fmt == "csv":
        rows = list(csv.DictReader(text.splitlines()))
        assert sorted(r["queue"] for r in rows) == sorted(NAMES)
    else:
        assert all(name in text for name in NAMES)
        if fmt == "html":
            assert text.startswith("<!DOCTYPE html>")
            assert text.count("Plotly.newPlot") == 1  # one draw function for every chart
            blob = text.split(f'<script type="application/json" id="{CHART_DATA_ID}">', 1)[1]
            charts = json.loads(blob.split("</script>", 1)[0])["charts"]
            assert len(charts) == 16  # two per demo queue, their data embedded once
            assert text.count(f'class="{CHART_CLASS}') == 16
        else:
            assert text.startswith("# queuelens capacity report")


def test_stdout_and_verbose_progress(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "report", "--demo", "--at", AT, "--range", "1h",
                          "--format", "html", "--verbose")
    assert code == 0
    assert out.startswith("<!DOCTYPE html>")
    lines = err.splitlines()
    assert lines[0] == "queuelens: reading the source (0/1)"
    for name in NAMES:
        assert f"queuelens: rendering {name} " in err
    assert lines[-1] == f"queuelens: rendered ({len(NAMES)}/{len(NAMES)})"


def test_failed_run_leaves_an_existing_file_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.json"
    path.write_text("previous")
    code, _, err = _run(capsys, "report", "--demo", "--at", "100", "--format", "json",
                        "-o", str(path))
    assert code == 2
    assert "2020-01-01" in err
    assert "Traceback" not in err
    assert path.read_text() == "previous"


@pytest.mark.parametrize(("argv", "message"), [
    (["--format", "pdf"], "invalid choice"),
    ([], "--format"),
    (["--format", "csv", "--range", "0"], "--range"),
    (["--format", "csv", "--slo", "-1s"], "--slo"),
    (["--format", "csv", "--at", "yesterday"], "--at"),
    (["--format", "csv", "--demo", "--prometheus", "http://127.0.0.1:9"], "not allowed"),
])
def test_bad_input_exits_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "report", *argv)
    assert code == 2
    assert message in err
    assert "Traceback" not in err
    assert out == ""


def test_output_into_a_missing_directory_or_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "report", "--demo", "--at", AT, "--format", "csv",
                        "-o", str(tmp_path / "nope" / "r.csv"))
    assert code == 2
    assert "does not exist" in err
    code, _, err = _run(capsys, "report", "--demo", "--at", AT, "--format", "csv",
                        "-o", str(tmp_path))
    assert code == 2
    assert "is a directory" in err


def test_unreachable_prometheus_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "report", "--prometheus", "http://127.0.0.1:9",
                          "--timeout", "2s", "--at", AT, "--format", "json")
    assert code == 3, err
    assert out == ""
    assert "Traceback" not in err


def test_tty_progress_bar_redraws_one_line_and_clears_it() -> None:
    import io

    from dashboard.cliutil import ProgressBar

    stream = io.StringIO()
    bar = ProgressBar(stream, tty=True)
    bar("rendering a", 0, 4)
    bar("rendering b", 2, 4)
    bar("rendered", 4, 4)
    bar.close()
    text = stream.getvalue()
    assert "\n" not in text
    frames = text.split("\r")[1:]
    assert frames[0].startswith("[" + " " * 24 + "] 0/4 rendering a")
    assert frames[1].startswith("[" + "#" * 12 + " " * 12 + "] 2/4 rendering b")
    assert frames[2].startswith("[" + "#" * 24 + "] 4/4 rendered")
    assert frames[-1] == ""  # cleared at the end
