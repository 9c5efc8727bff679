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


# --- issue 12 --------------------------------------------------------------------------------

def _main(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_a_15_minute_outage_with_a_1_s_cap_no_longer_overflows(
        capsys: pytest.CaptureFixture[str]) -> None:
    # the command: base · 2^n overflowed a float after 1,024 failures of one key
    assert _main(["retries", "--keys", "10", "--outage", "15m", "--retry", "exp:0.005:1",
                  "--format", "json"]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    storms = {v["variant"]: v["storm"] for v in json.loads(out.out)["variants"]}
    # without jitter: 8 doublings from 5 ms to the 1 s cap, then a failure every 1.05 s
    assert storms["no jitter, no bucket"]["failures_per_key_median"] == 864
    assert storms["full jitter, no bucket"]["failures_per_key_median"] > 1024
    assert all(s["penalty_without_forget_s"] == 1.0 for s in storms.values())


@pytest.mark.parametrize(("argv", "needle"), [
    (["--retry", "exp:1e-300:1e-300", "--attempt-time", "0"], "more than 50,000,000 steps"),
    (["--seed", "-1"], "argument --seed"),
    (["--seed", str(2**64)], "argument --seed"),
    (["--global-qps", "1e308"], "argument --global-qps"),
    (["--workers", "9" * 400, "--healthy-rate", "1"], "argument --workers"),
    (["--outage", "1e308"], "too long for the default horizon"),
])
def test_hostile_numbers_are_one_line_exit_2(argv: list[str], needle: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(["retries", "--keys", "10", "--outage", "10s", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err
    assert err.count("\n") == 1
    assert "Traceback" not in err
