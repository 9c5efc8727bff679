"""The bucket a histogram quantile fell in, and what that bucket supports.

Expected bounds are read off hand-written cumulative counts; the distributions behind the
"mechanism" tests (exponential waits, the M/M/c wait with its atom at 0) are written out here
in closed form, and their true quantiles are compared with the bucket the code reports. The
PromQL values themselves are re-derived by a scalar transcription of quantile.go below, not by
the code under test (hand-worked cases are in tests/collectors/test_histogram.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.histogram import EXACT_RATIO, bucket_quantile, classify_quantile

INF = math.inf
DECADES = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, INF)
"""controller-runtime's workqueue buckets: ExponentialBuckets(10e-9, 10, 12) and +Inf."""


def promql_quantile(q: float, bounds: list[float], cum: list[float]) -> float:
    """prometheus/promql/quantile.go bucketQuantile for sorted, monotone, de-duplicated
    buckets, one row, as a loop."""
    total = cum[-1]
    if total == 0:
        return math.nan
    rank = q * total
    b = next(i for i, c in enumerate(cum) if c >= rank)  # sort.Search
    if b == len(bounds) - 1:
        return bounds[-2]
    if b == 0 and bounds[0] <= 0:
        return bounds[0]
    start, end, count = 0.0, bounds[b], cum[b]
    if b > 0:
        start, count, rank = bounds[b - 1], cum[b] - cum[b - 1], rank - cum[b - 1]
    ratio = rank / count if count else math.nan  # Go: 0/0 is NaN (q = 0 on an empty bucket)
    return start + (end - start) * ratio


# --- the bucket's bounds, from hand-written counts ---------------------------------------


def test_bounds_of_the_bucket_each_rank_falls_in() -> None:
    # le 0.1, 1, 10, +Inf with cumulative 50, 90, 99, 100: per-bucket 50, 40, 9, 1
    bounds = (0.1, 1.0, 10.0, INF)
    cum = np.array([[50.0, 90.0, 99.0, 100.0]])
    cases = {  # q: (lo, hi) — rank q·100 against 50, 90, 99
        0.2: (0.0, 0.1),    # rank 20 ≤ 50: the first bucket, from 0
        0.5: (0.0, 0.1),    # rank 50 reaches 50 exactly: still the first bucket
        0.51: (0.1, 1.0),   # rank 51 > 50
        0.95: (1.0, 10.0),  # rank 95: 90 < 95 ≤ 99
        0.99: (1.0, 10.0),  # rank 99 reaches 99
        0.995: (10.0, INF),  # rank 99.5 > 99: the +Inf bucket
    }
    for q, (lo, hi) in cases.items():
        res = bucket_quantile(q, bounds, cum)
        assert (res.bucket_lo[0], res.bucket_hi[0]) == (lo, hi), q
        assert res.bucket_lo[0] <= res.values[0] <= res.bucket_hi[0]
    top = bucket_quantile(0.995, bounds, cum)
    assert top.values[0] == 10.0  # PromQL's value there: the highest finite bound …
    assert bool(top.lower_bound[0])  # … a lower bound, as before


def test_bounds_follow_sorting_merging_and_rows() -> None:
    # Shuffled columns, '1' split over two series, NaN bucket; three independent rows.
    bounds = (INF, 1.0, 0.1, 1.0)
    cum = np.array([[100.0, 40.0, 50.0, 50.0],   # merged: 50, 90, 100
                    [4.0, 0.0, 0.0, 0.0],        # everything above 1
                    [0.0, 0.0, 0.0, 0.0]])       # no observations
    res = bucket_quantile(0.7, bounds, cum)
    assert res.bucket_lo.tolist()[:2] == [0.1, 1.0]
    assert res.bucket_hi.tolist()[:2] == [1.0, INF]
    assert math.isnan(res.bucket_lo[2])
    assert math.isnan(res.bucket_hi[2])
    assert math.isnan(res.values[2])


def test_first_bucket_at_or_below_zero_has_no_lower_bound() -> None:
    # le=0 counts zero durations: PromQL returns 0, the bucket is (−inf, 0]
    res = bucket_quantile(0.25, (0.0, 1.0, INF), np.array([[10.0, 20.0, 20.0]]))
    assert res.values[0] == 0.0
    assert res.bucket_lo[0] == -INF
    assert res.bucket_hi[0] == 0.0


def test_structural_problems_have_no_bounds() -> None:
    for bounds, counts in (((0.1, 1.0), [[1.0, 2.0]]), ((INF,), [[3.0]])):
        res = bucket_quantile(0.5, bounds, np.array(counts))
        assert math.isnan(res.bucket_lo[0])
        assert math.isnan(res.bucket_hi[0])


def test_values_match_a_transcription_of_promql() -> None:
    """PromQL parity of the value is unchanged by the bounds: random decade histograms."""
    rng = np.random.default_rng(11)
    bounds = list(DECADES)
    per_bucket = rng.integers(0, 30, size=(200, len(bounds))).astype(float)
    per_bucket[rng.random(per_bucket.shape) < 0.4] = 0.0
    cum = np.cumsum(per_bucket, axis=1)
    for q in (0.0, 0.5, 0.9, 0.95, 0.99, 1.0):
        res = bucket_quantile(q, bounds, cum)
        for i in range(len(cum)):
            want = promql_quantile(q, bounds, cum[i].tolist())
            if math.isnan(want):
                assert math.isnan(res.values[i])
            else:
                assert res.values[i] == pytest.approx(want, rel=1e-12, abs=1e-300)


# --- the bucket holds the true quantile: closed-form distributions -----------------------


def exp_counts(mean: float, n: float = 1e6) -> np.ndarray:
    """Cumulative counts of n exponential observations at the decade bounds: n·F(le)."""
    return np.array([[n * (1 - math.exp(-b / mean)) if b < INF else n for b in DECADES]])


@pytest.mark.parametrize("mean", [3e-6, 4e-4, 0.02, 0.35, 2.0, 40.0])
@pytest.mark.parametrize("q", [0.5, 0.95, 0.99])
def test_true_exponential_quantile_lies_in_the_reported_bucket(mean: float, q: float) -> None:
    res = bucket_quantile(q, DECADES, exp_counts(mean))
    true = -mean * math.log(1 - q)
    assert res.bucket_lo[0] < true <= res.bucket_hi[0]
    # and a decade bucket is ×10 wide: only a range is supported
    assert classify_quantile(res.bucket_lo[0], res.bucket_hi[0]).kind == "range"


# --- the classification rule -------------------------------------------------------------


def test_exact_only_up_to_twice_wide() -> None:
    assert EXACT_RATIO == 2.0
    assert classify_quantile(0.5, 1.0).kind == "exact"  # ×2
    assert classify_quantile(0.5, 0.6).kind == "exact"  # reconcile_time's fine buckets
    assert classify_quantile(0.1, 0.2 + 1e-12).kind == "exact"  # float noise of a printed le
    assert classify_quantile(0.01, 0.025).kind == "range"  # ×2.5
    assert classify_quantile(9.999999999999999e-06, 9.999999999999999e-05).kind == "range"
    first = classify_quantile(0.0, 1e-8)  # the first bucket: (0, 10 ns]
    assert first.kind == "range"
    assert "at most" in first.reason


def test_inf_bucket_is_unsupported() -> None:
    c = classify_quantile(1000.0, INF)
    assert c.kind == "unsupported"
    assert "+Inf" in c.reason
    assert classify_quantile(math.nan, math.nan).kind == "unsupported"


def test_a_mean_that_contradicts_the_buckets_makes_the_quantile_unsupported() -> None:
    # p99 in (1, 10]: more than 1 % of the observations exceed 1 s, so the mean is > 0.01 s.
    assert classify_quantile(1.0, 10.0, q=0.99, mean=0.005).kind == "unsupported"
    assert classify_quantile(1.0, 10.0, q=0.99, mean=0.0101).kind == "range"
    # The bound is tight: 1.000001 % of the items just above 1 s, the rest at 0.
    share = 0.0100001
    assert classify_quantile(1.0, 10.0, q=0.99, mean=share * 1.0).kind == "range"
    # No mean, no check.
    assert classify_quantile(1.0, 10.0, q=0.99).kind == "range"


def test_a_bucket_below_the_mean_is_flagged_not_hidden() -> None:
    """M/M/c wait: P(W = 0) = 1 − C, P(W > t) = C·e^(−(cμ−λ)t). With C < 5 % the p95 wait is
    0 while the mean wait C/(cμ−λ) is not: the buckets are right to say so."""
    lam, mu, c = 8.0, 1.0, 20  # a = 8 Erlangs on 20 workers
    a = lam / mu
    top = a**c / math.factorial(c) * c / (c - a)
    erlang_c = top / (sum(a**k / math.factorial(k) for k in range(c)) + top)
    assert erlang_c < 0.05  # the precondition, from the textbook sum
    theta = c * mu - lam
    mean = erlang_c / theta
    n = 1e6
    cum = np.array([[n * (1 - erlang_c * math.exp(-theta * b)) if b < INF else n
                     for b in DECADES]])
    res = bucket_quantile(0.95, DECADES, cum)
    lo, hi = float(res.bucket_lo[0]), float(res.bucket_hi[0])
    assert (lo, hi) == (0.0, 1e-8)  # the true p95 (0) is in the first bucket
    c95 = classify_quantile(lo, hi, q=0.95, mean=mean)
    assert c95.kind == "range"  # still shown ("at most 10 ns"): it is a measured fact
    assert c95.below_mean
    # the p50 of the same waits is below the mean too, but that is ordinary: no flag
    assert not classify_quantile(lo, hi, q=0.5, mean=mean).below_mean


@pytest.mark.parametrize("mean", np.geomspace(2e-8, 500.0, 40).tolist())
def test_log_concave_waits_never_flag_below_mean(mean: float) -> None:
    """The documented theorem: for a log-concave distribution (here exponential) the
    q-quantile is at least the mean for q > 1 − 1/e, so its bucket cannot lie below it."""
    for q in (0.7, 0.95, 0.99):
        res = bucket_quantile(q, DECADES, exp_counts(mean))
        c = classify_quantile(float(res.bucket_lo[0]), float(res.bucket_hi[0]), q=q, mean=mean)
        assert not c.below_mean
        assert c.kind != "unsupported" or math.isinf(res.bucket_hi[0])
