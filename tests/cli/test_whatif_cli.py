"""`queuelens whatif`: JSON shape, null-not-NaN, formats, and bad input → exit 2."""

from __future__ import annotations

import csv
import io
import json
import math
import tracemalloc
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


# --- issue 12: finite keys in memory that does not grow with K ---------------------------------

def _main(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_ten_million_keys_and_a_hundred_worker_counts(capsys: pytest.CaptureFixture[str]) -> None:
    # issue 12: 102 s and 22.3 GB as (worker counts × K) float64 arrays
    tracemalloc.start()
    try:
        code = _main(["whatif", "--arrival-rate", "100", "--service-mean", "1", "--keys",
                      "10000000", "--workers", "1-100", "--slo", "1", "--format", "json"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["workers"] for r in rows] == list(range(1, 101))
    assert peak < 100 * 2**20
    # c workers of rate 1 saturate below λ = 100: the throughput is c (the workers' capacity)
    assert rows[9]["throughput_per_s"] == pytest.approx(10.0, rel=1e-6)


def test_a_sweep_over_the_finite_key_limit_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(["whatif", "--arrival-rate", "100", "--service-mean", "1", "--keys",
                  "10000000", "--workers", "1-101"]) == 2
    err = capsys.readouterr().err
    assert "at most 100 worker counts" in err
    assert err.count("\n") == 1
    assert _main(["whatif", "--arrival-rate", "1", "--service-mean", "1", "--keys",
                  "10000001"]) == 2
    assert "at most 10,000,000 keys" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["whatif", "--queue", "deployment", "--demo", "--keys", "10000000"],
    ["advise", "--demo", "--queue", "deployment", "--keys", "10000000"],
])
def test_measured_sizing_with_ten_million_keys(argv: list[str],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    # issue 12: `advise --queue X --keys 1e7` was a MemoryError traceback
    assert _main(argv) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    assert "deployment" in out.out


def test_a_time_past_the_demo_data_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    # a unix time past the year 9999 is refused by the flag itself, for every source
    assert _main(["whatif", "--queue", "deployment", "--demo", "--at", "1e20"]) == 2
    err = capsys.readouterr().err
    assert "unix seconds from 0 to 253402300799, the year 9999" in err
    assert err.count("\n") == 1
