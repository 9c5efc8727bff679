"""The embedded demo source: each regime's signature, checked against its parameters with
formulas written out here (not the fleet's code), plus shapes, the big fleet and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from collectors.demo import DemoSource
from collectors.errors import ConfigError
from dashboard.advice import histories_from_range
from models import fleet as fl
from models import queueing
from models.measurements import QueueSnapshot
from models.plan import check_change

AT = 1_704_067_200.0 + 14 * 3600  # 2024-01-01T14:00:00Z, the daily peak
WINDOW = 300.0
BLOCK_S = 45 * 60.0
"""deployment runs 5 workers, then 3, in turn, each for 45 min from 00:00 UTC."""


@pytest.fixture(scope="module")
def demo() -> DemoSource:
    return DemoSource()


@pytest.fixture(scope="module")
def snap(demo: DemoSource) -> dict[str, QueueSnapshot]:
    return {q.queue: q for q in demo.snapshot(AT, WINDOW).queues}


def erlang_c(c: int, a: float) -> float:
    """P(wait) of M/M/c by the direct sum (Kleinrock vol. 1, eq. 3.40)."""
    rho = a / c
    head = sum(a**k / math.factorial(k) for k in range(c))
    tail = a**c / (math.factorial(c) * (1 - rho))
    return tail / (head + tail)


def num(value: float | None) -> float:
    assert value is not None
    return value


def deployment_workers(t: float) -> int:
    """The deployment queue's worker count at unix time t, from its documented schedule:
    5 in the even 45-min blocks of the UTC day, 3 in the odd ones (16 cycles a day)."""
    return (5, 3)[int((t % 86_400) // BLOCK_S) % 2]


def workers_at(p: fl.QueueParams, t: float) -> int:
    """A queue's worker count at t from its parameters: its schedule's block at t, cycling
    from 00:00 UTC (the demo's days start there), else the constant count."""
    if not p.workers_schedule:
        return p.workers
    block = int(((t - fl.EPOCH_S) % 86_400) // p.workers_block_s)
    return p.workers_schedule[block % len(p.workers_schedule)]


def test_fleet_has_distinct_regimes_with_controller_names(snap: dict[str, QueueSnapshot]) -> None:
    assert len(snap) >= 6
    regimes = {q.labels["regime"] for q in snap.values()}
    assert {"healthy", "saturated", "api_throttled", "retry_storm", "hot_key",
            "over_provisioned"} <= regimes
    assert len(regimes) == len(snap)


def test_every_queue_is_internally_consistent(
    demo: DemoSource, snap: dict[str, QueueSnapshot]
) -> None:
    for name, q in snap.items():
        p = demo.params(name)
        c = workers_at(p, AT)
        arrival, x, busy = num(q.arrival_rate_per_s), num(q.throughput_per_s), num(q.busy_workers)
        assert x == pytest.approx(arrival, rel=0.01), name  # a stable queue completes its adds
        assert busy <= c
        assert num(q.workers) == c
        assert num(q.utilization) == pytest.approx(busy / c)
        assert num(q.service_mean_s) == pytest.approx(busy / x, rel=1e-6)
        results = q.reconcile_results_per_s
        assert sum(results.values()) == pytest.approx(x, rel=0.01), name
        assert num(q.errors_per_s) <= sum(results.values())
        assert num(q.errors_per_s) == pytest.approx(results["error"], abs=0.01)
        # retries count every AddAfter: error retries, requeues and planned requeue_after
        assert num(q.retries_per_s) >= results["requeue_after"] - 0.01
        assert num(q.retries_per_s) == pytest.approx(
            results["error"] + results["requeue"] + results["requeue_after"], abs=0.02)
        # Little's law on the queue: mean depth ≈ λ·Wq
        assert num(q.littles_law_ratio) == pytest.approx(1.0, abs=0.03), name
        # the arrival rate stays inside the regime's daily band
        band = p.daily_amplitude + p.noise_amplitude
        ordinary = arrival - (1 / p.hot_key_pass_s if p.hot_key_pass_s else 0)
        assert (1 - band) * p.arrival_rate_per_s <= ordinary <= (1 + band) * p.arrival_rate_per_s
        for field in ("queue_wait_p50_s", "queue_wait_p99_s", "work_p50_s", "work_p99_s"):
            assert getattr(q, field) is not None
        assert num(q.queue_wait_p50_s) <= num(q.queue_wait_p95_s) <= num(q.queue_wait_p99_s)


def test_utilization_matches_parameters(demo: DemoSource, snap: dict[str, QueueSnapshot]) -> None:
    """ρ = λ·E[S]/c with E[S] from the regime parameters (error passes take their own time)."""
    for name in ("deployment", "replicaset", "dnsrecord", "secret", "cronjob", "volumesnapshot"):
        p, q = demo.params(name), snap[name]
        e = p.error_fraction if p.error_service_mean_s else 0.0
        mean_s = (1 - e) * p.service_mean_s + e * (p.error_service_mean_s or 0.0)
        expected = num(q.arrival_rate_per_s) * mean_s / workers_at(p, AT)
        assert num(q.utilization) == pytest.approx(expected, rel=0.01), name


def test_healthy(snap: dict[str, QueueSnapshot]) -> None:
    q = snap["deployment"]
    assert deployment_workers(AT) == 5  # 14:00 is in a 5-worker block (13:30–14:15)
    assert num(q.workers) == 5
    assert 0.2 < num(q.utilization) < 0.6
    assert num(q.queue_wait_mean_s) < 0.05 * num(q.service_mean_s)
    assert num(q.errors_per_s) < 0.01 * num(q.throughput_per_s)


# --- deployment: the worker count changes every 45 min ---------------------------------------

def test_deployment_worker_count_alternates_in_45_minute_blocks(demo: DemoSource) -> None:
    start = AT - 3600  # 13:00 … 15:00: blocks 12:45–13:30 (3), 13:30–14:15 (5), 14:15–15:00 (3)
    r = demo.range(start, start + 7200, 60, queues=["deployment"])
    t, w = r.t, r.signals["workers"][0]
    assert len(t) == 121
    assert w.tolist() == [float(deployment_workers(x)) for x in t]
    assert set(w.tolist()) == {3.0, 5.0}
    changes = t[1:][np.diff(w) != 0]
    assert changes.tolist() == [AT - 1800, AT + 900, AT + 3600]  # 13:30, 14:15, 15:00
    assert np.diff(changes).tolist() == [BLOCK_S, BLOCK_S]  # a whole block between changes
    # utilization follows the count: busy workers (which do not depend on c) over c
    busy, util = r.signals["busy_workers"][0], r.signals["utilization"][0]
    assert util == pytest.approx(busy / w, rel=1e-9)
    at3 = (t > AT + 900 + 300) & (t < AT + 3600)  # well inside the 3-worker block
    assert util[at3].min() > 0.45
    assert util[at3].max() < 0.75
    assert np.all(busy[at3] < 3)  # ρ < 1 at the smaller count


def allen_cunneen_wait_s(lam: float, service_s: float, cv2: float, c: int) -> float:
    """G/G/c mean wait, Allen–Cunneen: Wq(M/M/c)·(ca² + cs²)/2 with Poisson arrivals
    (ca² = 1); Wq(M/M/c) = C(c, λS)/(c/S − λ), C from models.queueing (checked against
    the direct Erlang C sum written out above)."""
    p_wait = float(queueing.erlang_c(lam, 1.0 / service_s, c).p_wait)
    assert p_wait == pytest.approx(erlang_c(c, lam * service_s), rel=1e-9)
    return p_wait / (c / service_s - lam) * (1 + cv2) / 2


def test_deployment_waits_more_at_3_workers_as_allen_cunneen_says(demo: DemoSource) -> None:
    p = demo.params("deployment")
    # 5-min windows well inside a block: 13:55–14:00 (5 workers), 14:35–14:40 (3 workers)
    at5, at3 = AT, AT + 40 * 60
    assert (deployment_workers(at5 - WINDOW), deployment_workers(at5)) == (5, 5)
    assert (deployment_workers(at3 - WINDOW), deployment_workers(at3)) == (3, 3)
    q5 = {q.queue: q for q in demo.snapshot(at5, WINDOW).queues}["deployment"]
    q3 = {q.queue: q for q in demo.snapshot(at3, WINDOW).queues}["deployment"]
    assert (num(q5.workers), num(q3.workers)) == (5, 3)
    w5, w3 = num(q5.queue_wait_mean_s), num(q3.queue_wait_mean_s)
    assert w3 > 10 * w5  # ~50 ms against ~2.5 ms at almost the same demand
    # Tolerance 5 %: the model's wait is the G/G/c wait at each minute's λ, averaged over the
    # window (λ moves a few % in 5 min and Wq is convex in λ), plus a 20 µs wake-up of the
    # items that do not wait; here it is computed once at the window's mean λ.
    for q, c in ((q5, 5), (q3, 3)):
        lam = num(q.arrival_rate_per_s)
        assert num(q.service_mean_s) == pytest.approx(p.service_mean_s, rel=1e-3)  # counts
        expected = allen_cunneen_wait_s(lam, p.service_mean_s, p.service_cv**2, c)
        assert num(q.queue_wait_mean_s) == pytest.approx(expected, rel=0.05), c
        # Little: the mean depth is λ·W at either count
        assert num(q.depth_mean) == pytest.approx(lam * num(q.queue_wait_mean_s), rel=0.03), c
    assert 0.45 < num(q3.utilization) < 0.75
    assert num(q3.queue_wait_p95_s) < 1.0  # still within the advisor's default 1 s SLO


def test_check_change_finds_the_deployment_worker_change(demo: DemoSource) -> None:
    end = AT + 40 * 60  # 12:40 … 14:40: the last change is 5 → 3 at 14:15
    h = histories_from_range(demo.range(end - 7200, end, 60, queues=["deployment"]))
    change = check_change(h["deployment"])
    assert change is not None
    assert (change.workers_before, change.workers_after) == (5, 3)
    assert change.at == AT + 900
    assert change.points_after == 26  # 14:15 … 14:40
    assert change.points_before == 45  # the whole 13:30–14:15 block
    # a stable queue's throughput is its demand: the prediction is λ after (< 3/E[S] = 15/s)
    assert change.predicted_throughput_per_s == pytest.approx(
        change.observed_throughput_per_s, rel=0.10)
    assert change.service_mean_before_s == pytest.approx(0.2, rel=1e-3)


def test_every_two_hour_window_holds_a_checkable_change(demo: DemoSource) -> None:
    """Whatever the alignment, a 2 h window at a 60 s step holds a worker-count change with
    at least 6 points of the same count on each side (plan.CHANGE_MIN_POINTS)."""
    for offset_s in [*np.arange(0, 5400, 60.0), 30.0, 2730.0 + 17.0]:
        end = AT + float(offset_s)
        h = histories_from_range(demo.range(end - 7200, end, 60, queues=["deployment"]))
        change = check_change(h["deployment"])
        assert change is not None, offset_s
        assert {change.workers_before, change.workers_after} == {3, 5}, offset_s
        assert change.points_before >= 6, offset_s
        assert change.points_after >= 6, offset_s
        assert 0 <= change.at % BLOCK_S < 60, offset_s  # the first point of a new block
        assert change.workers_after == deployment_workers(change.at), offset_s
        assert change.predicted_throughput_per_s == pytest.approx(
            change.observed_throughput_per_s, rel=0.10), offset_s


def test_saturated_wait_is_queueing_and_matches_erlang_c(
    demo: DemoSource, snap: dict[str, QueueSnapshot]
) -> None:
    p, q = demo.params("replicaset"), snap["replicaset"]
    lam, s = num(q.arrival_rate_per_s), p.service_mean_s
    assert 0.85 < num(q.utilization) < 1.0
    assert num(q.queue_wait_mean_s) > num(q.service_mean_s)  # wait dominated by queueing
    # Allen–Cunneen G/G/c with Poisson arrivals: Wq = C(c, λS)/(cμ − λ) · (1 + cs²)/2
    wq = erlang_c(p.workers, lam * s) / (p.workers / s - lam) * (1 + p.service_cv**2) / 2
    assert num(q.queue_wait_mean_s) == pytest.approx(wq, rel=0.05)
    assert num(q.depth_mean) > 3
    # one more worker: the same load at c+1 waits far less (adding workers helps)
    wq_more = erlang_c(p.workers + 1, lam * s) / ((p.workers + 1) / s - lam)
    assert wq_more < 0.25 * wq


def test_api_throttled_shows_limiter_time_429s_and_inflated_service(
    demo: DemoSource, snap: dict[str, QueueSnapshot]
) -> None:
    p, q = demo.params("certificate"), snap["certificate"]
    assert num(q.throttle_s_per_s) > 0.5
    classes = q.api_calls_by_class_per_s
    assert classes["429"] / num(q.api_calls_per_s) > 0.05
    assert num(q.service_mean_s) > 1.2 * p.service_mean_s
    # USL: E[S](N) = s0·(1 + σ(N−1) + κN(N−1)) at N = busy workers
    n = num(q.busy_workers)
    usl = p.service_mean_s * (1 + p.usl_sigma * (n - 1) + p.usl_kappa * n * (n - 1))
    assert num(q.service_mean_s) == pytest.approx(usl, rel=0.01)
    # throttle seconds per second = X·(E[S] − s0): the time above s0 is in the limiter
    assert num(q.throttle_s_per_s) == pytest.approx(
        num(q.throughput_per_s) * (num(q.service_mean_s) - p.service_mean_s), rel=0.02)


def test_contention_history_recovers_usl_parameters(demo: DemoSource) -> None:
    """Fit N/X = s0 + s0σ(N−1) + s0κN(N−1) by least squares on a day of history."""
    p = demo.params("certificate")
    data = demo.range(AT - 86_400, AT, 300, queues=["certificate"]).frame
    wide = data.pivot_table(index="t", columns="signal", values="value")
    n, x = wide["busy_workers"].to_numpy(), wide["throughput_per_s"].to_numpy()
    design = np.column_stack([np.ones_like(n), n - 1, n * (n - 1)])
    (s0, s0_sigma, s0_kappa), *_ = np.linalg.lstsq(design, n / x, rcond=None)
    assert s0 == pytest.approx(p.service_mean_s, rel=0.05)
    assert s0_sigma / s0 == pytest.approx(p.usl_sigma, rel=0.15)
    assert s0_kappa / s0 == pytest.approx(p.usl_kappa, rel=0.15)
    # throughput per busy worker falls as busy workers rise: flattening
    lo, hi = np.argmin(n), np.argmax(n)
    assert n[hi] > 1.8 * n[lo]
    assert x[hi] / n[hi] < 0.85 * x[lo] / n[lo]


def test_retry_storm(demo: DemoSource, snap: dict[str, QueueSnapshot]) -> None:
    p, q = demo.params("dnsrecord"), snap["dnsrecord"]
    x = num(q.throughput_per_s)
    assert num(q.errors_per_s) / x == pytest.approx(p.error_fraction, abs=0.01)
    assert num(q.retries_per_s) / num(q.arrival_rate_per_s) > 0.8
    assert num(q.external_effects_per_s) == pytest.approx(x * (1 - p.error_fraction), rel=0.05)
    assert "external_effects_per_s" not in q.missing


def test_hot_key(demo: DemoSource, snap: dict[str, QueueSnapshot]) -> None:
    p, q = demo.params("ingress"), snap["ingress"]
    assert num(q.depth_mean) == pytest.approx(1.0, abs=0.1)  # the hot key, always dirty
    assert p.workers - num(q.busy_workers) > 3  # ... while workers sit idle
    assert num(q.utilization) < 0.3
    assert num(q.queue_wait_mean_s) > 5 * p.service_mean_s
    assert num(q.queue_wait_p99_s) > 1.0


def test_over_provisioned(snap: dict[str, QueueSnapshot]) -> None:
    q = snap["secret"]
    assert num(q.workers) >= 10
    assert num(q.utilization) < 0.05


def test_requeue_misuse_and_long_passes(snap: dict[str, QueueSnapshot]) -> None:
    q = snap["cronjob"]
    assert num(q.errors_per_s) == 0
    assert q.reconcile_results_per_s["requeue_after"] / num(q.throughput_per_s) > 0.8
    long = snap["volumesnapshot"]
    assert num(long.work_p99_s) > 10 * num(long.work_p50_s)


def test_missing_signals_have_reasons(snap: dict[str, QueueSnapshot]) -> None:
    for name, q in snap.items():
        if name != "dnsrecord":
            assert q.external_effects_per_s is None
            assert "external" in q.missing["external_effects_per_s"]
        if name in ("dnsrecord", "ingress", "secret", "volumesnapshot"):
            assert q.throttle_s_per_s is None
            assert "rest_client_rate_limiter_duration_seconds" in q.missing["throttle_s_per_s"]
        for field, value in vars(q).items():
            if isinstance(value, float):
                assert math.isfinite(value), (name, field)


def test_api_calls_are_per_process(snap: dict[str, QueueSnapshot]) -> None:
    same_pod = [q for q in snap.values() if q.labels["pod"] == "apps-controller-manager-0"]
    assert len(same_pod) == 3
    assert len({q.api_calls_per_s for q in same_pod}) == 1
    q = snap["certificate"]
    assert sum(q.api_calls_by_class_per_s.values()) == pytest.approx(num(q.api_calls_per_s))


def test_counters_monotone_and_buckets_ordered() -> None:
    fleet = DemoSource().fleet
    times = AT + np.sort(np.random.default_rng(1).uniform(-86_400 * 3, 0, 400))
    c = fleet.counters(times)
    assert np.all(np.diff(c, axis=2) >= 0)
    for prefix in ("qd", "wd", "rt", "lim"):
        rows, count_row, _ = fl.hist_rows(prefix)
        cum = c[:, [*rows, count_row], :]
        assert np.all(np.diff(cum, axis=1) >= 0)
    assert np.all(c[:, fl.INTEGER_SIGNAL, :] == np.floor(c[:, fl.INTEGER_SIGNAL, :]))


def test_rates_change_gently_over_the_day(demo: DemoSource) -> None:
    data = demo.range(AT - 86_400, AT, 600, queues=["deployment"]).frame
    arrivals = data[data.signal == "arrival_rate_per_s"]["value"].to_numpy()
    p = demo.params("deployment")
    assert arrivals.max() / arrivals.min() > 1 + p.daily_amplitude  # the daily wave
    assert np.max(np.abs(np.diff(arrivals))) < 0.1 * arrivals.mean()  # no jumps


def test_range_shape(demo: DemoSource) -> None:
    r = demo.range(AT - 3600, AT, 60)
    assert list(r.frame.columns) == ["queue", "signal", "t", "value"]
    assert r.source == "demo"
    assert r.step_s == 60
    assert set(r.frame.queue) == set(demo.queue_names)
    assert np.isfinite(r.frame.value).all()
    per = r.frame.groupby(["queue", "signal"]).size()
    assert per.loc[("replicaset", "arrival_rate_per_s")] == 61
    assert ("deployment", "external_effects_per_s") not in per.index
    assert {"reconcile_results_per_s.error", "api_calls_by_class_per_s.429",
            "queue_wait_p99_s", "depth_mean", "utilization"} <= set(r.frame.signal)
    one = demo.range(AT - 600, AT, 60, queues=["ingress"])
    assert set(one.frame.queue) == {"ingress"}
    # a range point equals a snapshot with the range's window at that time
    w = max(60 + 15, 60)
    snap = {q.queue: q for q in demo.snapshot(AT, w).queues}["ingress"]
    last = one.frame[(one.frame.t == AT) & (one.frame.signal == "busy_workers")]["value"]
    assert float(last.iloc[0]) == pytest.approx(num(snap.busy_workers))


def test_large_fleet() -> None:
    big = DemoSource(queues=500, seed=3)
    snap = big.snapshot(AT, WINDOW)
    assert len(snap.queues) == 500
    names = [q.queue for q in snap.queues]
    assert len(set(names)) == 500
    assert names[6] == "cronjob-006"
    regimes = [q.labels["regime"] for q in snap.queues]
    assert regimes[:8] == list(fl.REGIMES)
    assert regimes[8] == regimes[0]
    utilization = np.array([num(q.utilization) for q in snap.queues])
    assert np.all(utilization < 1)
    # deployment variants scale the 5/3 schedule with their worker count (×1–3)
    for q in snap.queues:
        p = big.params(q.queue)
        if p.controller == "deployment":
            mult = p.workers // 5
            assert p.workers_schedule == (5 * mult, 3 * mult), q.queue
    assert np.ptp(utilization) > 0.5
    assert len({round(num(q.arrival_rate_per_s), 3) for q in snap.queues}) > 400
    r = big.range(AT - 600, AT, 60, queues=names[:3])
    assert set(r.frame.queue) == set(names[:3])


@pytest.mark.parametrize(
    ("kwargs", "call", "message"),
    [
        ({"scenario": "nope"}, None, "unknown demo scenario 'nope'"),
        ({"queues": 0}, None, "at least 1 queue"),
        ({}, ("snapshot", AT, 0.0), "window must be a positive"),
        ({}, ("snapshot", 1_000_000_000.0, 300.0), "start at 2020-01-01"),
        ({}, ("range", AT, AT - 10, 60.0), "before its start"),
        ({}, ("range", AT - 600, AT, -1.0), "step must be a positive"),
    ],
)
def test_bad_input_is_a_clear_error(
    kwargs: dict[str, object], call: tuple[object, ...] | None, message: str
) -> None:
    if call is None:
        with pytest.raises(ConfigError, match=message):
            DemoSource(**kwargs)  # type: ignore[arg-type]
        return
    method = getattr(DemoSource(**kwargs), str(call[0]))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=message):
        method(*call[1:])


def test_unknown_queue_in_range() -> None:
    with pytest.raises(ConfigError, match="no queue named 'missing'"):
        DemoSource().range(AT - 600, AT, 60, queues=["missing"])


def test_scenario_selects_one_regime() -> None:
    only = DemoSource(scenario="hot_key").snapshot(AT, WINDOW)
    assert [q.queue for q in only.queues] == ["ingress"]
    assert [q.queue for q in DemoSource(scenario="replicaset").snapshot(AT, WINDOW).queues] == [
        "replicaset"
    ]
