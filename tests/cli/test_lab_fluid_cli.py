"""`queuelens lab fluid`: the seed's two cases and the M/M/1 comparison, end to end."""

from __future__ import annotations

import json

import pytest

from dashboard.cli import main
from models.limits import FLUID_MAX_STEPS
from tests.support.cli import run_cli

run = run_cli


def test_overload_backlog_grows_as_4_plus_t() -> None:
    proc = run(
        "lab",
        "fluid",
        "--arrival-rate",
        "4",
        "--service-rate",
        "3",
        "--until",
        "6",
        "--format",
        "json",
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [(p["t"], p["backlog"]) for p in doc["points"]] == [(t, 4.0 + t) for t in range(7)]
    assert doc["growth_per_s"] == 1.0
    assert doc["clear_time_s"] is None
    assert doc["mm1"] == {"stable": False, "residence_mean_s": None}


def test_stable_case_clears_at_4_and_mm1_residence_is_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        main(["lab", "fluid", "--arrival-rate", "2", "--service-rate", "3", "--format", "json"])
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["clear_time_s"] == 4.0
    backlog = {p["t"]: p["backlog"] for p in doc["points"]}
    assert backlog[0.0] == 4.0
    assert backlog[2.0] == 2.0
    assert backlog[4.0] == 0.0
    assert doc["mm1"]["stable"] is True
    assert doc["mm1"]["residence_mean_s"] == pytest.approx(1.0)


def test_table_and_step(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "lab",
                "fluid",
                "--arrival-rate",
                "2",
                "--service-rate",
                "3",
                "--backlog",
                "1",
                "--until",
                "1",
                "--step",
                "0.5",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "clears at t=1s" in out
    assert "M/M/1" in out
    assert (
        main(
            [
                "lab",
                "fluid",
                "--arrival-rate",
                "2",
                "--service-rate",
                "3",
                "--until",
                "1",
                "--format",
                "csv",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.splitlines() == ["t,backlog", "0.0,4.0", "1.0,3.0"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--arrival-rate", "-2", "--service-rate", "3"],
        ["--arrival-rate", "2", "--service-rate", "0"],
        ["--arrival-rate", "2", "--service-rate", "x"],
        ["--arrival-rate", "2", "--service-rate", "3", "--step", "0"],
        ["--arrival-rate", "2", "--service-rate", "3", "--step", "1e-9"],
    ],
)
def test_bad_input_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["lab", "fluid", *argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_bad_input_subprocess() -> None:
    proc = run("lab", "fluid", "--arrival-rate", "-1", "--service-rate", "3")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# --- issue 12: the page's limits, shared through models.limits ------------------------------

def _main(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_a_long_clearing_time_picks_a_step_within_the_limit(
        capsys: pytest.CaptureFixture[str]) -> None:
    # the page's DoS inputs: clears at t = 10,000,000 (before: 10,000,003 steps, refused)
    assert _main(["lab", "fluid", "--arrival-rate", "0", "--service-rate", "1",
                  "--backlog", "10000000", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["inputs"]["step_s"] == 1000.0  # 10,000,002 / 1,000 ≤ 10,000 < / 500
    assert len(doc["points"]) <= FLUID_MAX_STEPS + 1
    assert doc["points"][0] == {"t": 0.0, "backlog": 1e7}
    assert {"t": 1e7, "backlog": 0.0} in doc["points"]
    assert doc["clear_time_s"] == 1e7


@pytest.mark.parametrize(("argv", "needle"), [
    (["--until", str(FLUID_MAX_STEPS + 1), "--step", "1"], f"more than {FLUID_MAX_STEPS:,}"),
    (["--until", "1e308", "--step", "5e-324"], f"more than {FLUID_MAX_STEPS:,}"),
    (["--backlog", "1e10"], "at most 1e+09"),
    (["--arrival-rate", "1e300"], "at most 1e+09"),
    (["--arrival-rate", "0", "--service-rate", "1e-300", "--backlog", "1e9"], "give --until"),
])
def test_the_shared_limits_are_one_line_exit_2(argv: list[str], needle: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    base = ["lab", "fluid", "--arrival-rate", "2", "--service-rate", "3"]
    assert _main([*base, *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_tiny_until_is_one_point(capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(["lab", "fluid", "--arrival-rate", "2", "--service-rate", "3",
                  "--until", "5e-324", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["points"] == [{"t": 0.0, "backlog": 4.0}]
