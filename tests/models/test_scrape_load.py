"""models.scrape (what a /metrics scrape would read) and models.load (rates and workers over
time, and their spec parsers), against values worked out by hand or rebuilt here from the
run's own event trace."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np
import pytest

from collectors.timeparse import parse_duration
from models._simcore import LOG, LOG_ADD, LOG_CALL, LOG_FAIL_DELAY, LOG_FAIL_NOW, LOG_GET, LOG_OK
from models.errors import ModelInputError
from models.load import (
    MAX_STEPS,
    PiecewiseRate,
    SineRate,
    WorkerSchedule,
    parse_rate_schedule,
    parse_workers_schedule,
)
from models.ratelimit import parse_retry_spec
from models.scrape import API_BUCKETS, WORKQUEUE_BUCKETS, ScrapedHistogram, ScrapedMetrics
from models.scrape import scrape_metrics as scrape
from models.simulate import SimEvent, simulate

UNIQUE = 10**15
FloatFn = Callable[[np.ndarray], np.ndarray]


def const_workers(c: float) -> FloatFn:
    return lambda t: np.full(t.shape, c)


def make_log(rows: list[tuple[float, int, float]]) -> np.ndarray:
    log = np.zeros(len(rows), dtype=LOG)
    for i, row in enumerate(rows):
        log[i] = row
    return log


def cumulative(obs: list[tuple[float, float]], t_s: np.ndarray,
               bounds: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The definition, by brute force: at scrape s, observations made at t ≤ s with value
    ≤ bound; count; sum."""
    b = np.array([[sum(1 for t, v in obs if t <= s and v <= le) for le in bounds] for s in t_s],
                 dtype=float)
    c = np.array([sum(1 for t, _ in obs if t <= s) for s in t_s], dtype=float)
    total = np.array([math.fsum(v for t, v in obs if t <= s) for s in t_s])
    return b, c, total


def check_histogram(h: ScrapedHistogram, obs: list[tuple[float, float]], t_s: np.ndarray) -> None:
    b, c, total = cumulative(obs, t_s, h.bounds)
    np.testing.assert_array_equal(h.buckets, b)
    np.testing.assert_array_equal(h.count, c)
    np.testing.assert_allclose(h.sum, total, rtol=1e-12, atol=1e-12)


# === a hand-built metric log ==================================================================
# Three workers, L = 0.1 s per API call, T = 4 s, a scrape every second:
#   A: add 0.5, Get 0.7, an API call at 1.5 delayed 0.25 (granted 1.75, answered 1.85),
#      Done (success) at 2.0 — exactly on a scrape.
#   B: add 1.0 (on a scrape), Get 1.2, fails at 2.2 and is re-added at once (AddRateLimited,
#      delay 0), Get 2.2, fails at 3.4 with a delay.
#   C: add 2.5, Get 3.0 (on a scrape), an API call at 3.9 delayed 0.05 (granted 3.95,
#      answered 4.05 — after the last scrape); still in its pass at T.
#   D: add 2.9; still queued at T.
L_CALL = 0.1
HAND_LOG = [
    (0.5, LOG_ADD, 0.0), (0.7, LOG_GET, 0.2),
    (1.0, LOG_ADD, 0.0), (1.2, LOG_GET, 0.2),
    (1.5, LOG_CALL, 0.25),
    (2.0, LOG_OK, 0.7),
    (2.2, LOG_FAIL_NOW, 1.2), (2.2, LOG_ADD, 0.0), (2.2, LOG_GET, 0.0),
    (2.5, LOG_ADD, 0.0), (2.9, LOG_ADD, 0.0),
    (3.0, LOG_GET, 0.5),
    (3.4, LOG_FAIL_DELAY, 2.2),
    (3.9, LOG_CALL, 0.05),
]


def test_hand_built_log_gives_the_hand_computed_samples() -> None:
    m = scrape(make_log(HAND_LOG), duration_s=4.0, scrape_interval_s=1.0,
               workers_at=const_workers(3.0), call_latency_s=L_CALL, api_calls=True)
    assert isinstance(m, ScrapedMetrics)
    assert m.api_calls
    assert m.t_s.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert m.scrape_interval_s == 1.0
    c, g = m.counters, m.gauges
    assert c["adds"].tolist() == [0, 2, 2, 5, 5]
    assert c["reconcile_success"].tolist() == [0, 0, 1, 1, 1]
    assert c["reconcile_error"].tolist() == [0, 0, 0, 1, 2]
    # client-go's AddAfter counts a retry before it looks at the delay: both failures count
    assert c["retries"].tolist() == [0, 0, 0, 1, 2]
    assert c["api_requests"].tolist() == [0, 0, 1, 1, 1]  # the 2nd is answered at 4.05
    assert g["depth"].tolist() == [0, 1, 0, 1, 1]  # B queued at 1; D from 2.9
    assert g["active_workers"].tolist() == [0, 1, 1, 2, 1]  # A done at 2.0 is not in flight
    assert g["max_concurrent_reconciles"].tolist() == [3] * 5
    # in flight: s=1 A (0.3 old); s=2 B (0.8); s=3 B (0.8) + C (0); s=4 C (1.0)
    np.testing.assert_allclose(g["unfinished_work_s"], [0, 0.3, 0.8, 0.8, 1.0], atol=1e-12)
    np.testing.assert_allclose(g["longest_running_s"], [0, 0.3, 0.8, 0.8, 1.0], atol=1e-12)

    h = m.histograms
    assert set(h) == {"queue_duration", "work_duration", "reconcile_time", "api_limiter",
                      "api_request"}
    q = h["queue_duration"]
    assert q.count.tolist() == [0, 1, 2, 4, 4]  # = Gets so far
    np.testing.assert_allclose(q.sum, [0, 0.2, 0.4, 0.9, 0.9], atol=1e-12)
    le_01 = q.bounds.index(min(q.bounds, key=lambda b: abs(b - 0.1)))  # ≈ 0.1
    assert q.buckets[:, le_01].tolist() == [0, 0, 0, 1, 1]  # only B's 0-second wait
    w = h["work_duration"]
    assert w.count.tolist() == [0, 0, 1, 2, 3]
    np.testing.assert_allclose(w.sum, [0, 0, 1.3, 2.3, 3.5], atol=1e-12)
    lim = h["api_limiter"]  # observed when granted: 1.75 and 3.95
    assert lim.count.tolist() == [0, 0, 1, 1, 2]
    np.testing.assert_allclose(lim.sum, [0, 0, 0.25, 0.25, 0.3], atol=1e-12)
    # le is inclusive: the 0.25 s delay is in the 0.25 bucket, not in the 0.1 one
    assert lim.bounds[2:4] == (0.1, 0.25)
    assert lim.buckets[:, 2].tolist() == [0, 0, 0, 0, 1]
    assert lim.buckets[:, 3].tolist() == [0, 0, 1, 1, 2]
    req = h["api_request"]
    assert req.count.tolist() == [0, 0, 1, 1, 1]
    np.testing.assert_allclose(req.sum, [0, 0, 0.1, 0.1, 0.1], atol=1e-12)

    t_s = m.t_s
    check_histogram(q, [(0.7, 0.2), (1.2, 0.2), (2.2, 0.0), (3.0, 0.5)], t_s)
    works = [(2.0, 2.0 - 0.7), (2.2, 2.2 - 1.2), (3.4, 3.4 - 2.2)]
    check_histogram(w, works, t_s)
    check_histogram(h["reconcile_time"], works, t_s)
    check_histogram(lim, [(1.5 + 0.25, 0.25), (3.9 + 0.05, 0.05)], t_s)
    check_histogram(req, [(1.5 + 0.25 + L_CALL, L_CALL), (3.9 + 0.05 + L_CALL, L_CALL)], t_s)


def test_hand_built_log_without_api_calls_and_a_partial_last_interval() -> None:
    """Two passes start together (their Gets have the same time) and only one ends: the one
    left running at T is found by matching the Dones' start times against the Gets as
    multisets. The duration is not a multiple of the interval: the last scrape is at 2.0."""
    log = make_log([(1.0, LOG_ADD, 0.0), (1.0, LOG_ADD, 0.0), (1.0, LOG_GET, 0.0),
                    (1.0, LOG_GET, 0.0), (1.5, LOG_OK, 1.0),
                    (1.6, LOG_ADD, 0.0), (1.6, LOG_GET, 0.0), (2.4, LOG_OK, 1.6)])
    m = scrape(log, duration_s=2.5, scrape_interval_s=1.0, workers_at=const_workers(2.0),
               call_latency_s=0.0, api_calls=False)
    assert m.t_s.tolist() == [0.0, 1.0, 2.0]
    assert not m.api_calls
    assert "api_requests" not in m.counters
    assert set(m.histograms) == {"queue_duration", "work_duration", "reconcile_time"}
    assert m.counters["adds"].tolist() == [0, 2, 3]
    assert m.gauges["active_workers"].tolist() == [0, 2, 2]
    # at 2.0: the pass left from 1.0 (1.0 s old) and the one from 1.6 (0.4 s)
    np.testing.assert_allclose(m.gauges["longest_running_s"], [0.0, 0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(m.gauges["unfinished_work_s"], [0.0, 0.0, 1.4], atol=1e-12)
    assert m.counters["reconcile_success"].tolist() == [0, 0, 1]  # 2.4 is after the last


def test_passes_running_with_no_done_at_all() -> None:
    """Regression: a log with Gets and no Done yet (a pass longer than the run so far) made
    the multiset matching index an empty array (IndexError)."""
    log = make_log([(0.5, LOG_ADD, 0.0), (0.5, LOG_GET, 0.0)])
    m = scrape(log, duration_s=2.0, scrape_interval_s=1.0, workers_at=const_workers(1.0),
               call_latency_s=0.0, api_calls=False)
    assert m.gauges["active_workers"].tolist() == [0, 1, 1]
    assert m.gauges["longest_running_s"].tolist() == [0.0, 0.5, 1.5]
    r = simulate(arrival_rate_per_s=1.0, keys=10, workers=1, service_mean_s=100.0,
                 service_dist="const", duration_s=10.0, seed=1, scrape_interval_s=1.0)
    assert r.metrics is not None
    assert r.completed == 0
    g = r.metrics.gauges
    assert g["active_workers"][-1] == 1
    assert g["longest_running_s"][-1] == g["unfinished_work_s"][-1] > 0


def test_empty_log() -> None:
    m = scrape(make_log([]), duration_s=3.0, scrape_interval_s=1.5,
               workers_at=const_workers(1.0), call_latency_s=0.0, api_calls=True)
    assert m.t_s.tolist() == [0.0, 1.5, 3.0]
    for series in (*m.counters.values(), *m.gauges.values()):
        assert series.shape == (3,)
    for name in ("adds", "retries", "api_requests"):
        assert m.counters[name].tolist() == [0, 0, 0]
    assert m.gauges["longest_running_s"].tolist() == [0, 0, 0]
    assert m.histograms["queue_duration"].buckets.shape == (3, len(WORKQUEUE_BUCKETS))


def test_in_flight_gauges_compare_with_the_scrape_times_themselves() -> None:
    """Regression: the scrapes a pass spans were found by dividing by the interval, and
    k·Δ in floating point is not what k rounds from: a pass done exactly at the scrape
    3·0.1 = 0.30000000000000004 still counted as running there (longest 0.2 s with no pass in
    flight), and one started just after 0.9 counted at the scrape 0.9 (a negative age)."""
    step = 0.1
    t_s = np.arange(11) * step
    start2 = float(np.nextafter(t_s[9], 1.0))  # just after the scrape at 0.9
    assert math.ceil(start2 / step) == 9  # what the division said
    log = make_log([(t_s[1], LOG_GET, 0.0), (t_s[3], LOG_OK, t_s[1]),
                    (start2, LOG_GET, 0.0), (t_s[10], LOG_OK, start2)])
    m = scrape(log, duration_s=1.0, scrape_interval_s=step, workers_at=const_workers(1.0),
               call_latency_s=0.0, api_calls=False)
    np.testing.assert_array_equal(m.t_s, t_s)
    active = m.gauges["active_workers"]
    longest = m.gauges["longest_running_s"]
    assert active.tolist() == [0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0]
    assert longest[3] == 0.0
    assert longest[9] == 0.0
    assert np.all(longest >= 0)
    assert np.all(longest[active == 0] == 0)
    assert longest[2] == pytest.approx(0.1, abs=1e-15)


# === scrapes of real runs =====================================================================

def _reference_in_flight(trace: tuple[SimEvent, ...], t_s: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From the trace: passes (Get → Done) in flight at each scrape (start ≤ s < done), the
    sum of their ages and the oldest."""
    running: dict[int, float] = {}
    passes: list[tuple[float, float]] = []
    for e in trace:
        if e.kind == "start":
            running[e.key] = e.time_s
        elif e.kind in ("success", "failure"):
            passes.append((running.pop(e.key), e.time_s))
    passes += [(s, math.inf) for s in running.values()]
    n = np.zeros(t_s.size)
    total = np.zeros(t_s.size)
    oldest = np.zeros(t_s.size)
    for i, s in enumerate(t_s):
        ages = [s - a for a, d in passes if a <= s < d]
        n[i] = len(ages)
        total[i] = math.fsum(ages)
        oldest[i] = max(ages, default=0.0)
    return n, total, oldest


def _monotone(h: ScrapedHistogram) -> None:
    assert np.all(np.diff(h.buckets, axis=0) >= 0)  # counters never go down
    assert np.all(np.diff(h.buckets, axis=1) >= 0)  # cumulative in le
    assert np.all(h.buckets[:, -1] <= h.count)
    assert np.all(np.diff(h.count) >= 0)
    assert np.all(np.diff(h.sum) >= -1e-9)  # observations are ≥ 0


def test_scrape_of_a_run_agrees_with_the_result_and_the_trace() -> None:
    T, step, c, L = 30.0, 0.5, 3, 0.004
    r = simulate(arrival_rate_per_s=25.0, keys=40, workers=c, service_mean_s=0.03,
                 duration_s=T, seed=12, fail_prob=0.2, retry=parse_retry_spec("exp:0.005:1"),
                 lock_fraction=0.3, coherence=(0.05, 0.01), api_calls=2, api_qps=60.0,
                 api_burst=2, api_latency_s=L, scrape_interval_s=step, trace_limit=10**6)
    m = r.metrics
    assert m is not None
    assert len(r.trace) < 10**6
    np.testing.assert_allclose(m.t_s, np.arange(61) * step)
    cn, g, h = m.counters, m.gauges, m.histograms
    # warmup 0 and a last scrape at T: the final samples are the run's totals
    assert cn["adds"][-1] == r.adds
    assert cn["reconcile_success"][-1] + cn["reconcile_error"][-1] == r.completed
    assert cn["reconcile_error"][-1] == r.failed > 0
    assert cn["retries"][-1] == r.retries == r.failed
    for series in cn.values():
        assert np.all(np.diff(series) >= 0)
    # gauges
    assert np.all(g["depth"] >= 0)
    assert g["max_concurrent_reconciles"].tolist() == [c] * m.t_s.size
    q = h["queue_duration"]
    n_ref, total_ref, oldest_ref = _reference_in_flight(r.trace, m.t_s)
    np.testing.assert_array_equal(g["active_workers"], n_ref)
    np.testing.assert_allclose(g["unfinished_work_s"], total_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g["longest_running_s"], oldest_ref, rtol=1e-12, atol=1e-12)
    idle = g["active_workers"] == 0
    assert idle.any()
    assert np.all(g["unfinished_work_s"][idle] == 0)
    assert np.all(g["longest_running_s"][idle] == 0)
    assert np.all(g["longest_running_s"] >= 0)
    assert np.all(g["longest_running_s"] <= g["unfinished_work_s"] + 1e-12)
    assert np.all(g["unfinished_work_s"]
                  <= g["active_workers"] * g["longest_running_s"] + 1e-12)
    assert np.all(g["active_workers"] <= c)
    # histograms
    for hist in h.values():
        _monotone(hist)
    w = h["work_duration"]
    assert w.count[-1] == r.completed
    assert r.work_mean_s is not None
    assert r.wait_mean_s is not None
    assert w.sum[-1] / w.count[-1] == pytest.approx(r.work_mean_s, rel=1e-9)
    assert q.sum[-1] / q.count[-1] == pytest.approx(r.wait_mean_s, rel=1e-9)
    np.testing.assert_array_equal(h["reconcile_time"].count, w.count)
    np.testing.assert_allclose(h["reconcile_time"].sum, w.sum, rtol=1e-12)
    # API: answered ≤ asked; at most one call per worker in flight at T
    assert r.api_calls - c <= cn["api_requests"][-1] <= r.api_calls
    req = h["api_request"]
    np.testing.assert_array_equal(req.count, cn["api_requests"])
    np.testing.assert_allclose(req.sum, req.count * L, rtol=1e-12)
    lim = h["api_limiter"]
    assert np.all(lim.count >= req.count)  # granted before answered
    assert r.api_limiter_wait_mean_s is not None
    assert lim.sum[-1] / lim.count[-1] == pytest.approx(r.api_limiter_wait_mean_s, rel=0.05)


def test_trace_reconstructs_depth_and_adds_without_failures() -> None:
    """No failures: counted adds are the trace's "arrival" lines and Gets its "start" lines."""
    r = simulate(arrival_rate_per_s=40.0, keys=15, workers=2, service_mean_s=0.04,
                 duration_s=20.0, seed=3, hot_key_share=0.4, scrape_interval_s=0.25,
                 trace_limit=10**6)
    m = r.metrics
    assert m is not None
    adds = np.array([e.time_s for e in r.trace if e.kind == "arrival"])
    gets = np.array([e.time_s for e in r.trace if e.kind == "start"])
    n_adds = np.array([np.sum(adds <= s) for s in m.t_s], dtype=float)
    n_gets = np.array([np.sum(gets <= s) for s in m.t_s], dtype=float)
    np.testing.assert_array_equal(m.counters["adds"], n_adds)
    np.testing.assert_array_equal(m.gauges["depth"], n_adds - n_gets)
    assert r.coalesced_events > 0  # coalesced events are not adds
    assert m.counters["adds"][-1] == r.raw_events - r.coalesced_events


def test_immediate_retries_are_counted_as_retries() -> None:
    """const:0: every failure is re-added at once (AddAfter with delay 0 → Add), which
    client-go still counts in workqueue_retries_total."""
    r = simulate(arrival_rate_per_s=20.0, keys=10, workers=2, service_mean_s=0.02,
                 duration_s=20.0, seed=4, fail_prob=0.3, retry=parse_retry_spec("const:0"),
                 scrape_interval_s=1.0)
    m = r.metrics
    assert m is not None
    assert r.failed > 0
    assert m.counters["retries"][-1] == r.retries == r.failed
    assert m.counters["adds"][-1] == r.adds


def test_bucket_layouts() -> None:
    assert len(WORKQUEUE_BUCKETS) == 12
    for i, b in enumerate(WORKQUEUE_BUCKETS):
        assert b == pytest.approx(1e-8 * 10**i, rel=1e-12)
    assert API_BUCKETS == (0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60)


# === rate profiles and the worker schedule ====================================================

def _integral(f: FloatFn, a: float, b: float, n: int = 200_000) -> float:
    """Midpoint rule (independent of the classes' closed forms)."""
    x = a + (np.arange(n) + 0.5) * (b - a) / n
    return float(np.sum(f(x)) * (b - a) / n)


def test_piecewise_rate() -> None:
    p = PiecewiseRate((0.0, 20.0, 50.0), (50.0, 200.0, 10.0))
    t = np.array([0.0, 19.999, 20.0, 49.9, 50.0, 1e6])
    assert p.rate_at(t).tolist() == [50, 50, 200, 200, 10, 10]
    assert p.peak_per_s == 200.0
    assert p.mean_per_s(80.0) == pytest.approx((50 * 20 + 200 * 30 + 10 * 30) / 80, rel=1e-12)
    assert p.mean_per_s(30.0) == pytest.approx((50 * 20 + 200 * 10) / 30, rel=1e-12)
    assert p.mean_per_s(10.0) == pytest.approx(50.0, rel=1e-12)
    for T in (7.0, 35.0, 123.0):
        assert p.mean_per_s(T) == pytest.approx(_integral(p.rate_at, 0, T) / T, rel=1e-4)


@pytest.mark.parametrize("phase", [0.0, 1.0, -2.5])
def test_sine_rate(phase: float) -> None:
    mean, amp, P = 30.0, 0.6, 40.0
    s = SineRate(mean, amp, P, phase)
    assert s.peak_per_s == pytest.approx(mean * (1 + amp))
    t = np.linspace(0, 3 * P, 10_001)
    assert np.all(s.rate_at(t) <= s.peak_per_s * (1 + 1e-12))
    assert np.all(s.rate_at(t) >= mean * (1 - amp) * (1 - 1e-12))
    assert s.mean_per_s(2 * P) == pytest.approx(mean, rel=1e-9)
    for T in (P / 2, 0.3 * P, 2.7 * P):
        assert s.mean_per_s(T) == pytest.approx(_integral(s.rate_at, 0, T) / T, rel=1e-6)
    if phase == 0.0:
        assert s.rate_at(np.array([P / 4]))[0] == pytest.approx(mean * (1 + amp))
        assert s.mean_per_s(P / 2) == pytest.approx(mean * (1 + 2 * amp / math.pi), rel=1e-12)


def test_worker_schedule() -> None:
    w = WorkerSchedule((0.0, 10.0, 20.0), (2, 6, 3))
    assert w.at(np.array([0.0, 9.99, 10.0, 19.0, 20.0, 500.0])).tolist() == [2, 2, 6, 6, 3, 3]
    assert w.changes() == ((10.0, 1),) * 4 + ((20.0, -1),) * 3
    assert w.mean(0.0, 30.0) == pytest.approx(110 / 30, rel=1e-12)
    assert w.mean(5.0, 15.0) == pytest.approx(4.0, rel=1e-12)
    assert w.mean(25.0, 30.0) == pytest.approx(3.0, rel=1e-12)
    assert w.mean(12.0, 12.5) == pytest.approx(6.0, rel=1e-12)
    assert WorkerSchedule((0.0,), (4,)).changes() == ()


@pytest.mark.parametrize("make", [
    lambda: PiecewiseRate((0.0, 1.0), (1.0,)),
    lambda: PiecewiseRate((1.0, 2.0), (1.0, 2.0)),
    lambda: PiecewiseRate((0.0, 2.0, 2.0), (1.0, 2.0, 3.0)),
    lambda: PiecewiseRate((0.0,), (-1.0,)),
    lambda: PiecewiseRate((0.0,), (math.nan,)),
    lambda: PiecewiseRate((), ()),
    lambda: SineRate(10.0, 1.01, 60.0),
    lambda: SineRate(10.0, -0.1, 60.0),
    lambda: SineRate(10.0, 0.5, 0.0),
    lambda: SineRate(-1.0, 0.5, 60.0),
    lambda: SineRate(10.0, 0.5, 60.0, math.inf),
    lambda: WorkerSchedule((0.0,), (0,)),
    lambda: WorkerSchedule((0.0,), (10_001,)),
    lambda: WorkerSchedule((0.0,), (True,)),
    lambda: WorkerSchedule((0.0, 5.0), (1,)),
    lambda: WorkerSchedule((0.0, -5.0), (1, 2)),
    lambda: WorkerSchedule(tuple(float(i) for i in range(MAX_STEPS + 1)),
                           (1,) * (MAX_STEPS + 1)),
])
def test_bad_profiles_are_refused(make: Callable[[], object]) -> None:
    with pytest.raises(ModelInputError) as err:
        make()
    _one_sentence(str(err.value))


# === spec parsers =============================================================================

_ZERO = re.compile(r"0+(\.0*)?(ms|s|m|h|d|w)?")


def duration(text: str) -> float:
    """A schedule time: 0 (with or without a unit) or a duration like 90s, 10m."""
    return 0.0 if _ZERO.fullmatch(text.strip()) else parse_duration(text)


def _one_sentence(msg: str) -> None:
    assert msg
    assert "\n" not in msg
    assert re.search(r"[.!?]\s+[A-Z]", msg) is None, msg  # no second sentence


def test_parse_rate_schedule() -> None:
    p = parse_rate_schedule("0:10,10m:40", duration)
    assert p == PiecewiseRate((0.0, 600.0), (10.0, 40.0))
    assert parse_rate_schedule(" 0s:5, 90s:0 ,1h:2.5, ", duration) == PiecewiseRate(
        (0.0, 90.0, 3600.0), (5.0, 0.0, 2.5))
    assert parse_rate_schedule("sine:10:0.5:1m", duration) == SineRate(10.0, 0.5, 60.0)
    assert parse_rate_schedule("sine:0:1:30s", duration) == SineRate(0.0, 1.0, 30.0)
    steps = ",".join(f"{i}s:1" for i in range(MAX_STEPS))  # "0s:1,1s:1,…": exactly the limit
    assert len(parse_rate_schedule(steps, duration).rates_per_s) == MAX_STEPS  # type: ignore[attr-defined]


def test_parse_workers_schedule() -> None:
    assert parse_workers_schedule("0:2, 90s:6,1h:1", duration) == WorkerSchedule(
        (0.0, 90.0, 3600.0), (2, 6, 1))
    assert parse_workers_schedule("0:4", duration) == WorkerSchedule((0.0,), (4,))


@pytest.mark.parametrize(("spec", "words"), [
    ("", "empty"),
    (" , ", "empty"),
    ("5m:10", "start at time 0"),
    ("0:10,5m:20,2m:5", "increase"),
    ("0:10,5m:20,5m:5", "increase"),
    ("0:-1", "≥ 0"),
    ("0:nan", "finite"),
    ("0:abc", "not a number"),
    ("10", "TIME:VALUE"),
    ("x:10", "not a duration"),
    ("sine:10:1.5:60", "0…1"),
    ("sine:10:-0.1:60", "≥ 0"),
    ("sine:10:0.5", "sine:MEAN:AMPLITUDE:PERIOD"),
    ("sine:10:0.5:0", "period"),
    (",".join(f"{i}s:1" for i in range(MAX_STEPS + 1)), "at most 1000 steps"),
])
def test_parse_rate_schedule_refuses_bad_specs(spec: str, words: str) -> None:
    with pytest.raises(ModelInputError) as err:
        parse_rate_schedule(spec, duration)
    assert words in str(err.value)
    _one_sentence(str(err.value))


@pytest.mark.parametrize(("spec", "words"), [
    ("", "empty"),
    ("1m:2", "start at time 0"),
    ("0:2,2m:3,1m:4", "increase"),
    ("0:0", "1…10000"),
    ("0:2.5", "whole number"),
    ("0:2,1m:x", "whole number"),
    (",".join(f"{i}s:1" for i in range(MAX_STEPS + 1)), "at most 1000 steps"),
])
def test_parse_workers_schedule_refuses_bad_specs(spec: str, words: str) -> None:
    with pytest.raises(ModelInputError) as err:
        parse_workers_schedule(spec, duration)
    assert words in str(err.value)
    _one_sentence(str(err.value))
