"""`queuelens retries` end to end."""

from __future__ import annotations

import json

import pytest

from dashboard.cli import main


def test_retries_json_four_variants(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["retries", "--keys", "200", "--outage", "30s", "--retry", "exp:0.5:60",
                 "--bin", "0.1", "--horizon", "120", "--healthy-rate", "5", "--workers", "2",
                 "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    variants = {v["variant"]: v for v in data["variants"]}
    assert len(variants) == 4
    plain = variants["no jitter, no bucket"]["storm"]
    jit = variants["full jitter, no bucket"]["storm"]
    # lock-step: 200 first retries in one 0.1 s bin = 2000/s; jitter spreads them
    assert plain["peak_rate_per_s"] == pytest.approx(2000.0)
    assert jit["peak_rate_per_s"] < plain["peak_rate_per_s"]
    assert variants["no jitter, bucket"]["healthy"]["healthy_wait_mean_s"] is not None


def test_retries_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["retries", "--keys", "50", "--outage", "10s", "--horizon", "60"]) == 0
    out = capsys.readouterr().out
    assert "penalty_without_forget_s" in out
    assert "no jitter, bucket" in out


def test_retries_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["retries", "--keys", "50", "--outage", "10s", "--horizon", "5"]) == 2
    assert "horizon" in capsys.readouterr().err
