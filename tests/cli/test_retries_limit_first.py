"""Issue 23 (Low): ``retries`` computed for 57 s before refusing an over-limit run — the
first variants ran in full and the fourth met the step limit. Now every variant's expected
steps (:func:`models.retry.storm_steps_estimate`) are checked before any runs."""

from __future__ import annotations

from typing import Any

import pytest

from models.limits import STORM_MAX_STEPS
from models.ratelimit import RetryPolicy
from models.retry import retry_storm, storm_steps_estimate
from tests.support.cli import run_main


def _never(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the storm was computed before the limit was checked")


def test_over_limit_run_is_refused_before_any_computation(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import models.retry

    monkeypatch.setattr(models.retry, "retry_storm", _never)
    monkeypatch.setattr(models.retry, "healthy_impact", _never)
    # 1,000,000 keys, a 2 h outage: 49 steps a key without jitter (within the limit),
    # about 65 with full jitter (over it) — the variant that used to be reached last
    code, out, err = run_main(["retries", "--keys", "1000000", "--outage", "2h",
                               "--retry", "exp:5ms:1000s", "--jitter", "full"], capsys)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert f"{STORM_MAX_STEPS:,}" in lines[0]
    assert "full jitter" in lines[0]


@pytest.mark.parametrize("jitter", ["none", "full", "equal"])
def test_the_estimate_is_the_count_the_storm_takes(jitter: str) -> None:
    policy = RetryPolicy(jitter=jitter)  # type: ignore[arg-type]
    run = retry_storm(1000, policy, 7200.0, attempt_s=0.05)
    taken = run.attempts + run.failed_attempts
    estimate = storm_steps_estimate(1000, policy, 7200.0, 0.05)
    assert abs(estimate - taken) <= 0.02 * taken, (estimate, taken)
    if jitter == "none":
        assert estimate == taken  # no randomness: exact


def test_a_run_within_the_limit_still_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(["retries", "--keys", "100", "--outage", "60s",
                               "--retry", "exp:5ms:1000s", "--format", "json"], capsys)
    assert code == 0, err
    assert '"variants"' in out
