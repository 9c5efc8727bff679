"""`queuelens simulate` end to end."""

from __future__ import annotations

import json

import pytest

from dashboard.cli import main


def test_simulate_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--arrival-rate", "20", "--keys", "50", "--zipf", "1.1", "--workers", "2",
            "--service-mean", "0.05", "--fail-prob", "0.1", "--retry", "exp:0.005:1000",
            "--jitter", "full", "--global-qps", "5", "--dependency-qps", "30",
            "--duration", "60s", "--seed", "4", "--format", "json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["raw_events"] > 1000
    assert data["coalescing_ratio"] >= 1.0
    assert data["retries"] == data["failed"] > 0
    assert "trace" not in data
    assert "full jitter" in data["inputs"]["retry"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == data  # same seed, same answer


def test_simulate_table_and_trace(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--arrival-rate", "5", "--keys", "3", "--workers", "1",
                 "--service-mean", "0.1", "--duration", "10", "--trace", "20"]) == 0
    out = capsys.readouterr().out
    assert "queue wait mean s" in out
    assert "raw events" in out
    assert main(["simulate", "--arrival-rate", "5", "--keys", "3", "--workers", "1",
                 "--service-mean", "0.1", "--duration", "10", "--trace", "20",
                 "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["trace"]) == 20


@pytest.mark.parametrize("extra", [
    ["--retry", "linear:1"],
    ["--burst", "5"],
    ["--jitter", "full", "--retry", "const:0"],
])
def test_simulate_bad_input(extra: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--arrival-rate", "5", "--keys", "3", "--workers", "1",
            "--service-mean", "0.1", "--duration", "10", *extra]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("queuelens: error:")


def test_simulate_argparse_rejects_bad_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--arrival-rate", "5", "--keys", "0", "--workers", "1",
              "--service-mean", "0.1", "--duration", "10"])
    assert exc.value.code == 2
