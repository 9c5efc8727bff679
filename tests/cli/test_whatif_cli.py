"""`queuelens whatif`: JSON shape, null-not-NaN, formats, and bad input → exit 2."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest

from dashboard.cli import main
from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
ROW_KEYS = {
    "workers",
    "utilization",
    "stable",
    "p_wait",
    "wait_mean_s",
    "response_mean_s",
    "wait_p95_s",
    "p_wait_over_slo",
    "throughput_per_s",
}


run = run_cli


def test_json_shape_and_values() -> None:
    proc = run(
        "whatif",
        "--arrival-rate",
        "5",
        "--service-mean",
        "0.5",
        "--slo",
        "0.2",
        "--workers",
        "1-8",
        "--format",
        "json",
    )
    assert proc.returncode == 0, proc.stderr
    assert "NaN" not in proc.stdout
    assert "Infinity" not in proc.stdout
    doc = json.loads(proc.stdout)
    assert set(doc) >= {"inputs", "rows", "recommendation"}
    assert doc["inputs"]["arrival_rate_per_s"] == 5.0
    assert [r["workers"] for r in doc["rows"]] == list(range(1, 9))
    for row in doc["rows"]:
        assert set(row) == ROW_KEYS
    unstable = doc["rows"][1]  # c=2, ρ = 1.25
    assert unstable["stable"] is False
    assert unstable["wait_mean_s"] is None
    assert unstable["p_wait"] is None
    # c=3: Erlang C with A = 2.5 is 0.702247…; Wq = C/(cμ − λ) = C/1.
    a, c = 2.5, 3
    pc = (a**c / math.factorial(c) * c / (c - a)) / (
        sum(a**k / math.factorial(k) for k in range(c)) + a**c / math.factorial(c) * c / (c - a)
    )
    assert doc["rows"][2]["p_wait"] == pytest.approx(pc)
    assert doc["rows"][2]["wait_mean_s"] == pytest.approx(pc)
    assert doc["recommendation"]["workers"] == 5
    assert doc["recommendation"]["reason"]


def test_unstable_everywhere_gives_null_recommendation() -> None:
    proc = run("whatif", "--arrival-rate", "100", "--service-mean", "1", "--format", "json")
    doc = json.loads(proc.stdout)
    assert doc["recommendation"]["workers"] is None
    assert "unstable at every worker count" in doc["recommendation"]["reason"]


def test_usl_and_keys_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "whatif",
                "--arrival-rate",
                "5",
                "--service-mean",
                "0.5",
                "--sigma",
                "0.05",
                "--kappa",
                "0.02",
                "--format",
                "json",
            ]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)["rows"]
    waits = {r["workers"]: r["wait_mean_s"] for r in rows}
    assert waits[12] > waits[8]
    assert (
        main(
            [
                "whatif",
                "--arrival-rate",
                "10",
                "--service-mean",
                "1",
                "--keys",
                "50",
                "--workers",
                "2-4",
                "--format",
                "json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["inputs"]["keys"] == 50
    assert all(r["stable"] for r in doc["rows"])


def test_table_and_csv(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["whatif", "--arrival-rate", "5", "--service-mean", "0.5", "--workers", "3-4"]) == 0
    out = capsys.readouterr().out
    assert "recommendation:" in out
    assert "wait_p95_s" in out
    assert (
        main(
            [
                "whatif",
                "--arrival-rate",
                "5",
                "--service-mean",
                "0.5",
                "--workers",
                "2-4",
                "--format",
                "csv",
            ]
        )
        == 0
    )
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["workers"] for r in rows] == ["2", "3", "4"]
    assert rows[0]["wait_mean_s"] == ""  # unstable: empty cell, not nan


@pytest.mark.parametrize(
    "argv",
    [
        ["--arrival-rate", "-1", "--service-mean", "1"],
        ["--arrival-rate", "1", "--service-mean", "0"],
        ["--arrival-rate", "abc", "--service-mean", "1"],
        ["--arrival-rate", "1", "--service-mean", "1", "--workers", "8-2"],
        ["--arrival-rate", "1", "--service-mean", "1", "--sigma", "0.1"],
        ["--arrival-rate", "1", "--service-mean", "1", "--keys", "10", "--service-cv2", "2"],
        ["--arrival-rate", "1", "--service-mean", "1", "--slo", "-3"],
    ],
)
def test_bad_input_one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["whatif", *argv])
    except SystemExit as exc:  # argparse-level errors
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_bad_input_subprocess() -> None:
    proc = run("whatif", "--arrival-rate", "1", "--service-mean", "0")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
