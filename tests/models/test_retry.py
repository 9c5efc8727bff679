"""Retry storm what-if: synchronisation, jitter, global bucket, penalty without Forget."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest

from models.errors import ModelInputError
from models.ratelimit import ItemExponential, parse_retry_spec
from models.retry import healthy_impact, policy_variants, retry_storm, seconds_over_limit


def test_no_jitter_retries_in_lockstep_and_jitter_spreads_them() -> None:
    # 1000 keys, base 1 s: every key's first retry is at exactly 0.05 + 1 s without jitter
    plain = retry_storm(1000, parse_retry_spec("exp:1:60"), 10.0, bin_s=0.1, horizon_s=120.0)
    full = retry_storm(1000, parse_retry_spec("exp:1:60", jitter="full"), 10.0, bin_s=0.1,
                       horizon_s=120.0, seed=3)
    assert plain.peak_rate_per_s == pytest.approx(1000 / 0.1)  # all 1000 in one 0.1 s bin
    # full jitter spreads the first retry uniformly over 1 s: ≈ 100 per 0.1 s bin
    assert full.peak_rate_per_s < plain.peak_rate_per_s / 3
    # without jitter all keys recover at the same instant: attempts at 0, 1.05, 3.10, 7.15 s
    # (each fails 0.05 s later, then waits 1, 2, 4, 8 s), so the 5th attempt is at 15.20 s,
    # 5.20 s after the outage ends
    assert plain.recovery_lag_p50_s == pytest.approx(5.2)
    assert plain.recovery_lag_max_s == pytest.approx(5.2)
    assert plain.failures_per_key_median == 4
    # without Forget the next unrelated failure waits 1 s · 2^4 = 16 s instead of 1 s
    assert plain.penalty_without_forget_s == pytest.approx(16.0)
    assert plain.penalty_with_forget_s == pytest.approx(1.0)


def test_global_bucket_caps_the_retry_rate_and_queues_a_debt() -> None:
    pol = parse_retry_spec("exp:0.005:1000", global_qps=10.0, burst=100)
    r = retry_storm(1000, pol, 60.0, bin_s=1.0, horizon_s=600.0)
    # after the burst of 100 tokens the bucket admits 10 retries/s
    assert r.outage_mean_rate_per_s == pytest.approx(10.0, rel=0.25)
    # the 1000th first retry waits (1000 − 100)/10 = 90 s of bucket debt
    assert r.recovery_lag_max_s is not None
    assert r.recovery_lag_max_s >= 90.0 - 60.0


def test_variants_and_bad_input() -> None:
    names = [n for n, _ in policy_variants(parse_retry_spec("exp:0.005:1000"))]
    assert names == ["no jitter, no bucket", "full jitter, no bucket", "no jitter, bucket",
                     "full jitter, bucket"]
    with pytest.raises(ModelInputError):
        retry_storm(0, parse_retry_spec("exp:1:2"), 10.0)
    with pytest.raises(ModelInputError):
        retry_storm(10, parse_retry_spec("exp:1:2"), 10.0, horizon_s=5.0)


def test_healthy_keys_wait_behind_a_tight_loop_but_not_behind_backoff() -> None:
    tight = healthy_impact(20, parse_retry_spec("const:0"), 60.0, healthy_rate_per_s=10.0,
                           workers=2, service_mean_s=0.05, seed=1)
    expo = healthy_impact(20, parse_retry_spec("exp:0.005:1000"), 60.0,
                          healthy_rate_per_s=10.0, workers=2, service_mean_s=0.05, seed=1)
    assert tight.baseline_wait_mean_s == expo.baseline_wait_mean_s  # same healthy arrivals
    assert tight.healthy_wait_mean_s is not None
    assert expo.healthy_wait_mean_s is not None
    assert tight.healthy_wait_mean_s > 5 * expo.healthy_wait_mean_s


def test_seconds_over_limit_counts_whole_and_partial_bins() -> None:
    storm = retry_storm(keys=10, outage_s=1.0, policy=parse_retry_spec("exp:0.1:1"))
    fake = dataclasses.replace(storm, request_rate_per_s=(0.0, 5.0, 20.0, 30.0), bin_s=0.5,
                               horizon_s=1.8)
    # bins [0.5, 1) and [1, 1.5) and the partial last one [1.5, 1.8) exceed 4 req/s
    assert seconds_over_limit(fake, 4.0) == pytest.approx(0.5 + 0.5 + 0.3)
    assert seconds_over_limit(fake, 100.0) == 0
    assert seconds_over_limit(fake, None) is None


# --- issue 12: the delay past 1,024 failures, and the work bounded by steps --------------------

def _one_key_by_hand(base: float, cap: float, attempt: float, outage: float) -> tuple[int, float]:
    """(failures, lag after recovery) of one key with no jitter, by the rule: attempt at t,
    fail at t + attempt, wait min(cap, base·2^n), attempt again; the first attempt started at
    or after the end of the outage succeeds. Exact rational arithmetic for 2^n."""
    t, n = 0.0, 0
    while t < outage:
        t = t + attempt + float(min(Fraction(cap), Fraction(base) * 2**n))
        n += 1
    return n, t - outage


@pytest.mark.parametrize("n", [0, 7, 8, 1023, 1024, 1025, 1100, 5000, 10**6])
def test_the_exponential_delay_is_min_of_cap_and_base_times_2_to_the_n(n: int) -> None:
    # base · 2^n by exact rational arithmetic, then the cap (client-go: maxDelay once the
    # float backoff exceeds it); before the fix n ≥ 1024 raised OverflowError
    for base, cap in ((0.005, 1.0), (0.005, 1e308), (5e-324, 1.7976931348623157e308), (3.0, 3.0)):
        exact = min(Fraction(cap), Fraction(base) * 2**n)
        assert ItemExponential(base, cap).unjittered(n) == float(exact)


def test_a_15_minute_outage_with_a_1_s_cap_runs_past_1024_failures() -> None:
    # issue 12: `queuelens retries --keys 10 --outage 15m --retry exp:0.005:1` overflowed
    plain = retry_storm(10, parse_retry_spec("exp:0.005:1"), 900.0)
    failures, lag = _one_key_by_hand(0.005, 1.0, 0.05, 900.0)
    assert plain.failures_per_key_median == failures == 864
    assert plain.failed_attempts == 10 * failures
    assert plain.recovery_lag_max_s == pytest.approx(lag, abs=1e-9)
    assert plain.penalty_without_forget_s == 1.0
    full = retry_storm(10, parse_retry_spec("exp:0.005:1", jitter="full"), 900.0, seed=1)
    assert full.failures_per_key_median > 1024  # mean delay ½ s: about 900 / 0.55 failures
    assert full.failures_per_key_median == pytest.approx(900 / (0.05 + 0.5), rel=0.05)
    assert full.recovered == 10


def test_the_storm_stops_at_its_step_budget_with_a_sentence() -> None:
    policy = parse_retry_spec("exp:1e-300:1e-300")  # attempt time 0: the clock never moves
    with pytest.raises(ModelInputError, match="more than 1,000 steps"):
        retry_storm(10, policy, 10.0, attempt_s=0.0, max_steps=1000)
    r = retry_storm(10, parse_retry_spec("exp:0.5:60"), 10.0, max_steps=1000)
    assert r.attempts + r.failed_attempts <= 1000
    with pytest.raises(ModelInputError, match="step budget"):
        retry_storm(10, parse_retry_spec("exp:1:2"), 10.0, max_steps=0)


@pytest.mark.parametrize(("kw", "needle"), [
    ({"outage_s": 1e308}, "too long for the default horizon"),
    ({"outage_s": 10.0, "horizon_s": 1e10, "bin_s": 1e-300}, "too many rate bins"),
])
def test_absurd_times_are_sentences(kw: dict[str, float], needle: str) -> None:
    with pytest.raises(ModelInputError, match=needle):
        retry_storm(10, parse_retry_spec("exp:1:2"), **kw)  # type: ignore[arg-type]
