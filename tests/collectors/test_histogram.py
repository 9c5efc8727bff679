"""The one histogram-quantile implementation (used by the Prometheus source and the demo).

Expected values are worked out by hand from PromQL's ``histogram_quantile`` rules
(prometheus/promql/quantile.go); the comparison with Prometheus's own function on real data is
in test_snapshot_prometheus.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from collectors.histogram import parse_le
from models.histogram import bucket_quantile

INF = math.inf


def test_interpolation_inf_bucket_and_empty_histogram() -> None:
    # le 0.1, 1, +Inf with 50, 90, 100 observations (cumulative)
    cum = np.array([[50.0, 90.0, 100.0]])
    bounds = (0.1, 1.0, INF)
    assert bucket_quantile(0.5, bounds, cum).values[0] == pytest.approx(0.1)
    assert bucket_quantile(0.7, bounds, cum).values[0] == pytest.approx(0.1 + 0.9 * 20 / 40)
    assert bucket_quantile(0.2, bounds, cum).values[0] == pytest.approx(0.1 * 20 / 50)
    top = bucket_quantile(0.99, bounds, cum)  # rank 99 > 90: in +Inf -> highest finite bound
    assert top.values[0] == pytest.approx(1.0)
    assert bool(top.lower_bound[0])
    assert not bucket_quantile(0.5, bounds, cum).lower_bound[0]
    empty = bucket_quantile(0.5, bounds, np.zeros((1, 3)))
    assert math.isnan(empty.values[0])
    assert empty.reason == "no observations in the window"


def test_rows_are_independent_and_match_single_row_calls() -> None:
    rows = np.array([[50.0, 90.0, 100.0], [0.0, 0.0, 4.0], [10.0, 10.0, 10.0]])
    got = bucket_quantile(0.5, (0.1, 1.0, INF), rows).values
    # row 2: everything above 1 -> 1 (lower bound); row 3: rank 5 in the first bucket -> 0.05
    assert got.tolist() == pytest.approx([0.1, 1.0, 0.05])


def test_unsorted_duplicate_and_absent_buckets() -> None:
    # The same histogram as above with the columns shuffled, '1' split over two series (two
    # label sets merged by sum would never do this, but duplicates must add) and a NaN bucket.
    bounds = (INF, 1.0, 0.1, 1.0)
    cum = np.array([[100.0, 40.0, 50.0, 50.0]])
    assert bucket_quantile(0.7, bounds, cum).values[0] == pytest.approx(0.1 + 0.9 * 20 / 40)
    missing = np.array([[50.0, np.nan, 100.0]])  # le=1 absent -> treated as 0, made monotonic
    # counts become 50, 50, 100: rank 70 lies in +Inf -> highest finite bound 1.0
    assert bucket_quantile(0.7, (0.1, 1.0, INF), missing).values[0] == pytest.approx(1.0)


def test_non_monotonic_counts_are_forced_monotonic() -> None:
    # 60 then 55 (a scrape race): PromQL uses max-so-far, i.e. 60, 60, 100.
    cum = np.array([[60.0, 55.0, 100.0]])
    assert bucket_quantile(0.5, (0.1, 1.0, INF), cum).values[0] == pytest.approx(0.1 * 50 / 60)


def test_first_bucket_at_or_below_zero_returns_its_bound() -> None:
    cum = np.array([[10.0, 20.0, 20.0]])
    assert bucket_quantile(0.25, (0.0, 1.0, INF), cum).values[0] == 0.0


def test_structural_problems_give_a_reason_not_a_number() -> None:
    no_inf = bucket_quantile(0.5, (0.1, 1.0), np.array([[1.0, 2.0]]))
    assert math.isnan(no_inf.values[0])
    assert no_inf.reason == "the histogram has no +Inf bucket"
    only_inf = bucket_quantile(0.5, (INF,), np.array([[3.0]]))
    assert math.isnan(only_inf.values[0])
    assert only_inf.reason == "the histogram has fewer than two buckets"
    with pytest.raises(ValueError, match="quantile must be in"):
        bucket_quantile(1.5, (0.1, INF), np.array([[1.0, 2.0]]))
    with pytest.raises(ValueError, match="3 bucket bounds but 2 counts"):
        bucket_quantile(0.5, (0.1, 1.0, INF), np.array([[1.0, 2.0]]))


def test_parse_le() -> None:
    assert parse_le("+Inf") == INF
    assert parse_le("9.999999999999999e-06") == pytest.approx(1e-5)
    assert parse_le("0.005") == 0.005
    assert parse_le("") is None
    assert parse_le("abc") is None
    assert parse_le("NaN") is None
