"""models.signals.derive on hand-built matrices, against values written out here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.signals import Histogram, ProcessSeries, RawSignals, derive, raw_inputs

NAN = math.nan


def _raw(**kw: object) -> RawSignals:
    base: dict[str, object] = {
        "queues": ("a", "b", "c"),
        "t": np.array([0.0, 60.0]),
        "direct": {
            "busy_workers": np.array([[2.0, 1.0], [0.0, NAN], [3.0, 3.0]]),
            "throughput_per_s": np.array([[4.0, 0.0], [1.0, 1.0], [6.0, 6.0]]),
            "workers": np.array([[4.0, 4.0], [NAN, NAN], [NAN, 6.0]]),
        },
    }
    base.update(kw)
    return RawSignals(**base)  # type: ignore[arg-type]


def test_service_time_utilization_and_configured_workers() -> None:
    d = derive(_raw(configured_workers=np.array([NAN, 2.0, 10.0])))
    svc = d.values["service_mean_s"]
    assert svc[0, 0] == 0.5  # 2 busy / 4 per s
    assert math.isnan(svc[0, 1])  # no completion: undefined, not 0 or inf
    util = d.values["utilization"]
    assert util[0, 0] == 0.5
    assert util[1, 0] == 0.0  # the configured 2 workers stand in for the missing gauge
    assert util[2, 0] == pytest.approx(0.3)  # configured 10 where the gauge has no point
    assert util[2, 1] == 0.5  # the gauge wins where it has one


def test_process_totals_reach_every_queue_of_the_process() -> None:
    # processes 0 and 1; queue b runs in both (two replicas), c in none
    api = ProcessSeries(
        process=np.array([0, 0, 1, 1]),
        values=np.array([[1.0, 2.0], [10.0, NAN], [100.0, 200.0], [NAN, NAN]]),
        total_field="api_calls_per_s", class_of=np.array([0, 1, 0, 1]), classes=("2xx", "429"),
        class_field="api_calls_by_class_per_s")
    d = derive(_raw(processes=2, queue_process=(np.array([0, 1, 1]), np.array([0, 0, 1])),
                    process_series=[api]))
    total = d.values["api_calls_per_s"]
    np.testing.assert_array_equal(total[0], [11.0, 2.0])
    np.testing.assert_array_equal(total[1], [111.0, 202.0])
    assert np.isnan(total[2]).all()  # a queue of no known process: missing, never 0
    c429 = d.values["api_calls_by_class_per_s.429"]
    np.testing.assert_array_equal(c429[0], [10.0, NAN])  # process 1's 429 row has no point
    np.testing.assert_array_equal(c429[1], [10.0, NAN])


def test_quantiles_per_bucket_layout_and_the_inf_flag() -> None:
    # queue a: 10 observations, 5 ≤ 1 s, all ≤ 2 s; queue c: other bounds, 90 % above 0.1 s
    h1 = Histogram(np.array([1.0, 2.0, math.inf]),
                   np.array([[[5.0, 10.0, 10.0], [5.0, 10.0, 10.0]]]), np.array([0]))
    h2 = Histogram(np.array([0.1, math.inf]), np.array([[[1.0, 10.0], [0.0, 0.0]]]),
                   np.array([2]))
    d = derive(_raw(histograms={"work": [h1, h2]}))
    p50 = d.values["work_p50_s"]
    assert p50[0, 0] == 1.0  # rank 5 reached exactly at the first bucket's bound
    assert d.values["work_p95_s"][0, 0] == pytest.approx(1.9)  # 1 + (9.5 − 5) / 5
    assert math.isnan(p50[1, 0])  # queue b has no histogram
    assert p50[2, 0] == 0.1  # in the +Inf bucket: the highest finite bound …
    assert d.lower_bound["work_p50_s"][2, 0]  # … flagged as a lower bound
    assert math.isnan(p50[2, 1])  # no observations in that window


def test_scrape_gap_masks_rates_only() -> None:
    d = derive(_raw(samples_in_window=np.array([[20.0, 20.0], [20.0, 12.0], [20.0, 20.0]]),
                    expected_samples=20.0,
                    direct={"throughput_per_s": np.ones((3, 2)),
                            "busy_workers": np.ones((3, 2)),
                            "depth_current": np.full((3, 2), 7.0),
                            "reconcile_results_per_s.error": np.ones((3, 2))}))
    assert d.gap.tolist() == [[False, False], [False, True], [False, False]]
    assert math.isnan(d.values["throughput_per_s"][1, 1])  # 60 % of the samples: masked
    assert math.isnan(d.values["service_mean_s"][1, 1])
    assert math.isnan(d.values["reconcile_results_per_s.error"][1, 1])
    assert d.values["depth_current"][1, 1] == 7.0  # a gauge's last value is not a rate
    assert d.values["throughput_per_s"][1, 0] == 1.0


def test_raw_inputs_name_what_a_signal_is_derived_from() -> None:
    need = raw_inputs(["service_mean_s", "api_calls_by_class_per_s.409", "queue_wait_p95_s"])
    assert need == {"samples_in_window", "busy_workers", "throughput_per_s",
                    "process:api_calls_per_s", "histogram:queue_wait"}


def test_quantile_bounds_are_the_bucket_of_each_quantile() -> None:
    # Decade buckets 0.1, 1, 10, +Inf. Queue a, first window: 60 of 100 waits ≤ 0.1 s, 90 ≤ 1 s,
    # 99 ≤ 10 s; second window: 30 waits, all ≤ 0.1 s. Queue b: no histogram. Queue c: 10
    # waits, 4 of them above 10 s.
    bounds = np.array([0.1, 1.0, 10.0, math.inf])
    ha = Histogram(bounds, np.array([[[60.0, 90.0, 99.0, 100.0], [30.0, 30.0, 30.0, 30.0]]]),
                   np.array([0]))
    hc = Histogram(bounds, np.array([[[0.0, 5.0, 6.0, 10.0], [0.0, 0.0, 0.0, 0.0]]]),
                   np.array([2]))
    d = derive(_raw(histograms={"queue_wait": [ha, hc]}))
    lo, hi = d.bucket_bounds["queue_wait_p95_s"]
    assert (lo[0, 0], hi[0, 0]) == (1.0, 10.0)  # rank 95: 90 < 95 ≤ 99
    assert (lo[0, 1], hi[0, 1]) == (0.0, 0.1)  # rank 28.5 ≤ 30 in the first bucket
    assert (lo[2, 0], hi[2, 0]) == (10.0, math.inf)  # rank 9.5 > 6: the +Inf bucket
    assert np.isnan(lo[1]).all()
    assert np.isnan(lo[2, 1])
    p50 = d.bucket_bounds["queue_wait_p50_s"]
    assert (p50[0][0, 0], p50[1][0, 0]) == (0.0, 0.1)  # rank 50 ≤ 60
    assert (p50[0][2, 0], p50[1][2, 0]) == (0.1, 1.0)  # rank 5 ≤ 5 (exactly at the bound)
    # one queue and time as QueueSnapshot carries it: only quantiles that have a value
    at_a = d.quantile_bounds(0, 0)
    assert at_a == {"queue_wait_p50_s": (0.0, 0.1), "queue_wait_p95_s": (1.0, 10.0),
                    "queue_wait_p99_s": (1.0, 10.0)}
    assert d.quantile_bounds(1, 0) == {}
    assert d.quantile_bounds(2, 1) == {}


def test_masked_or_given_quantiles_have_no_bounds() -> None:
    bounds = np.array([0.1, 1.0, math.inf])
    h = Histogram(bounds, np.tile([50.0, 90.0, 100.0], (3, 2, 1)))
    # queue b's second window is a scrape gap (12 of 20 samples): its quantiles are masked,
    # and so are their bounds
    d = derive(_raw(histograms={"work": [h]},
                    samples_in_window=np.array([[20.0, 20.0], [20.0, 12.0], [20.0, 20.0]]),
                    expected_samples=20.0))
    lo, hi = d.bucket_bounds["work_p95_s"]
    assert (lo[1, 0], hi[1, 0]) == (1.0, math.inf)  # rank 95 > 90
    assert math.isnan(d.values["work_p95_s"][1, 1])
    assert math.isnan(lo[1, 1])
    assert math.isnan(hi[1, 1])
    # a quantile the source already had (e.g. histogram_quantile asked of Prometheus): no
    # bucket is known, so no bounds are made up
    given = derive(_raw(histograms={"work": [h]},
                        direct={"work_p95_s": np.full((3, 2), 0.7)}))
    assert "work_p95_s" not in given.bucket_bounds
    assert "work_p95_s" not in given.quantile_bounds(0, 0)
    assert "work_p50_s" in given.quantile_bounds(0, 0)
