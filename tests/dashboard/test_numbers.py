"""dashboard.numbers: a quantile as text, as far as its bucket supports it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dashboard.numbers import (
    number_text,
    quantile_note,
    quantile_text,
    snapshot_quantile_note,
    snapshot_quantile_text,
)
from models.histogram import bucket_quantile
from models.measurements import QueueSnapshot

INF = math.inf
GO_1E5 = 9.999999999999999e-06  # how Go prints the 1e-5 bucket of ExponentialBuckets
GO_1E4 = 9.999999999999999e-05


@pytest.mark.parametrize(("value", "unit", "text"), [
    (None, "s", "no data"), (math.nan, "s", "no data"), (INF, "s", "no data"),
    (0.0, "s", "0 s"), (0.42, "s", "0.42 s"), (0.7151, "s", "0.715 s"), (670.2, "s", "11.2 min"),
    (0.0999999, "s", "0.1 s"),  # rounded first, then the unit chosen
    (0.0454, "s", "45.4 ms"), (4.04e-4, "s", "404 µs"), (GO_1E5, "s", "10 µs"),
    (5e-9, "s", "5 ns"), (2.5, "/s", "2.5/s"), (0.001234, "", "0.00123"),
])
def test_number_text(value: float | None, unit: str, text: str) -> None:
    assert number_text(value, unit) == text


@pytest.mark.parametrize(("args", "text"), [
    ((0.42, 0.4, 0.5), "0.42 s"),  # ×1.25 bucket: the value
    ((0.75, 0.5, 1.0), "0.75 s"),  # ×2: still the value
    ((0.55, 0.1, 1.0), "between 0.1 s and 1 s"),  # decade bucket
    ((4.6, 1.0, 10.0), "between 1 s and 10 s"),
    ((9.4e-5, GO_1E5, GO_1E4), "between 10 µs and 100 µs"),
    ((5e-4, 1e-4, 1e-3), "between 0.1 ms and 1 ms"),  # one unit for both ends
    ((0.05, 0.01, 0.1), "between 0.01 s and 0.1 s"),
    ((0.5, 1e-5, 1.0), "between 10 µs and 1 s"),  # too wide for one unit
    ((5e-9, 0.0, 1e-8), "at most 10 ns"),  # the first bucket, from 0
    ((1000.0, 1000.0, INF), "above 16.7 min"),  # the +Inf bucket: PromQL's value is lo
    ((None, 0.1, 1.0), "no data"),
    ((0.3, None, None), "0.3 s"),  # no bucket known: the value as given
    ((2.0, 3.0, 4.0, "/s"), "2/s"),
])
def test_quantile_text(args: tuple[object, ...], text: str) -> None:
    assert quantile_text(*args) == text  # type: ignore[arg-type]


def test_quantile_text_refuses_a_bucket_the_mean_contradicts() -> None:
    # p99 "between 1 s and 10 s" needs more than 1 % of the items above 1 s: a mean ≥ 10 ms.
    assert quantile_text(4.0, 1.0, 10.0, q=0.99, mean=0.005).startswith("unknown")
    assert quantile_text(4.0, 1.0, 10.0, q=0.99, mean=0.5) == "between 1 s and 10 s"


def test_the_below_mean_note_quotes_a_bound() -> None:
    # 96 % of the waits ≤ 100 µs, 4 % near 1 s: mean ≈ 0.04 s, p95 in (10 µs, 100 µs]
    assert quantile_note(GO_1E5, GO_1E4, 0.95, 0.04) != ""
    note = quantile_note(GO_1E5, GO_1E4, 0.95, 0.04, "items")
    # the 95 % below add at most 0.95 × 100 µs to the mean: the rest carry ≥ 99.76 %
    assert "at least 99.7 %" in note
    assert "slowest 5 % of the items" in note
    assert quantile_note(0.1, 1.0, 0.95, 0.04) == ""  # bucket reaches above the mean
    assert quantile_note(None, None, 0.95, 0.04) == ""


def test_snapshot_fields_read_their_bucket_and_their_mean() -> None:
    # Bucket counts of 1000 waits: 960 ≤ 100 µs (of them 200 ≤ 10 µs), 40 in (0.1 s, 1 s].
    bounds = (GO_1E5, GO_1E4, 0.1, 1.0, INF)
    cum = np.array([[200.0, 960.0, 960.0, 1000.0, 1000.0]])
    p95 = bucket_quantile(0.95, bounds, cum)
    mean = (960 * 5e-5 + 40 * 0.5) / 1000  # one distribution with these counts
    q = QueueSnapshot(
        queue="x", queue_wait_p95_s=float(p95.values[0]), queue_wait_mean_s=mean,
        work_p95_s=0.3,
        quantile_bounds={"queue_wait_p95_s": (float(p95.bucket_lo[0]),
                                              float(p95.bucket_hi[0]))})
    assert snapshot_quantile_text(q, "queue_wait_p95_s") == "between 10 µs and 100 µs"
    assert "below the mean" in snapshot_quantile_note(q, "queue_wait_p95_s")
    assert snapshot_quantile_text(q, "work_p95_s") == "0.3 s"  # no bucket given
    assert snapshot_quantile_note(q, "work_p95_s") == ""
    assert snapshot_quantile_text(q, "work_p99_s") == "no data"
