"""The simulator's connection pool, CPU cores and polling (RequeueAfter) against theory written
here, and a rate limit outside the API client that no scraped series names.

Every expected value is a closed form (ceilings K/(F·E[S]) and N/(F·E[S]), Erlang C, the
renewal period P + E[S]), a bound, a reference value read off a real controller's /metrics
(``/work/shared/reference/expositions``, copied here by hand), a value recorded before these
mechanisms existed, or is recomputed from the run's own event trace; none is a value the
simulator produced through the code under test. Saturated runs use ``initial_burst`` over
many keys and no arrivals: every worker is always in a pass (a closed network).
"""

from __future__ import annotations

import dataclasses
import json
import math
import urllib.parse
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from collectors.openmetrics import render_families, simulated_families, write_families
from models.errors import ModelInputError
from models.scrape import ScrapedMetrics
from models.simulate import ServiceDist, SimResult, simulate
from tests.support.prometheus import backfill_file, start_prometheus

UNIQUE = 10**15  # keys never repeat: no coalescing
START = 1704067200.0


def backlog(*, workers: int, service_mean_s: float, duration_s: float, passes: int = 100_000,
            **kw: Any) -> SimResult:
    """``passes`` keys added at t = 0 and nothing else: a closed network of ``workers``."""
    r = simulate(arrival_rate_per_s=0.0, keys=passes, initial_burst=True, workers=workers,
                 service_mean_s=service_mean_s, duration_s=duration_s, **kw)
    assert r.completed < passes // 2, "the backlog must outlast the run"
    return r


def fields(r: SimResult, drop: tuple[str, ...] = ()) -> dict[str, str]:
    """Every result field as its repr (floats bit for bit), the scraped series as OpenMetrics."""
    out = {f.name: repr(getattr(r, f.name)) for f in dataclasses.fields(r)
           if f.name not in ("metrics", *drop)}
    if r.metrics is not None:
        out["metrics"] = render_families(simulated_families([("q", "p", r.metrics)], START))
    return out


def last(values: np.ndarray) -> float:
    return float(values[-1])


def erlang_c(n: int, a: float) -> float:
    """P(wait > 0) in M/M/n with offered load a = λ/μ < n (Erlang's C formula)."""
    top = a**n / math.factorial(n) * n / (n - a)
    return top / (sum(a**k / math.factorial(k) for k in range(n)) + top)


# === every new mechanism off: the run of before ==================================================

LOCK_RUN: dict[str, Any] = {
    "arrival_rate_per_s": 30, "keys": 200, "workers": 4, "service_mean_s": 0.1,
    "duration_s": 300, "lock_fraction": 0.3, "trace_limit": 500, "scrape_interval_s": 5.0}
DEP_RUN: dict[str, Any] = {
    "arrival_rate_per_s": 50, "keys": 200, "workers": 6, "service_mean_s": 0.1,
    "duration_s": 200, "lock_fraction": 0.2, "dependency_qps": 20, "failing_keys": 100,
    "fail_prob": 0.1, "scrape_interval_s": 5.0}
SERVER_RUN: dict[str, Any] = {
    "arrival_rate_per_s": 40, "keys": 300, "workers": 8, "service_mean_s": 0.05,
    "duration_s": 200, "api_calls": 3, "api_writes": 1, "apf_seats": 2,
    "apf_background_rate_per_s": 20, "webhook_latency_s": 0.02, "webhook_concurrency": 2,
    "conflict_objects": 50, "api_latency_s": 0.02, "scrape_interval_s": 5.0,
    "lock_fraction": 0.1}
OFF: dict[str, Any] = {"pool_size": None, "pool_fraction": 0.0, "cpu_cores": None,
                       "cpu_fraction": 0.0, "requeue_after_s": None}


def _sample(text: str, head: str) -> float:
    return float([line for line in text.splitlines() if line.startswith(head)][-1].split()[-2])


# recorded with the simulator as it was before the pool, the CPU and polling existed
@pytest.mark.parametrize(("run", "recorded"), [
    (LOCK_RUN, {"completed": 8529, "wait_mean_s": 0.4368072665323865,
                    "lock_wait_mean_s": 0.03334928909821171, "work_mean_s": 0.1363120464882485,
                    "busy_workers_mean": 3.8773006424019667, "depth_mean": 12.493146782177385,
                    "queue_sum": 3727.2764053208552, "unfinished": 0.5847482223186375,
                    "reconcile_sum": 1162.6054444982756}),
    (DEP_RUN, {"completed": 7660, "wait_mean_s": 1.474368103645935,
                   "lock_wait_mean_s": 0.035151832633613135, "work_mean_s": 0.15638264375887115,
                   "busy_workers_mean": 5.992236476987108, "depth_mean": 56.67984134755693,
                   "queue_sum": 11302.505882549738, "unfinished": 0.5562442044686122,
                   "reconcile_sum": 1197.8910511929535}),
    (SERVER_RUN, {"completed": 2448, "wait_mean_s": 16.299472170741478,
                      "lock_wait_mean_s": 0.0001364897951164087, "work_mean_s": 0.6510539326003604,
                      "busy_workers_mean": 7.993877474674937, "depth_mean": 210.34909123588372,
                      "apf_wait_mean_s": 0.17327586245027293, "api_409": 286,
                      "queue_sum": 40031.503651341074, "unfinished": 4.995467929305079,
                      "reconcile_sum": 1593.780027005683}),
], ids=["lock", "dependency", "server"])
def test_with_the_new_mechanisms_off_the_run_is_the_one_of_before(
    run: dict[str, Any], recorded: dict[str, Any]
) -> None:
    r = simulate(**run)
    explicit = simulate(**run, **OFF)
    assert fields(explicit) == fields(r)
    text = fields(r)["metrics"]
    scraped = {"queue_sum": "workqueue_queue_duration_seconds_sum{",
               "unfinished": "workqueue_unfinished_work_seconds{",
               "reconcile_sum": "controller_runtime_reconcile_time_seconds_sum{"}
    for name, value in recorded.items():
        got = _sample(text, scraped[name]) if name in scraped else getattr(r, name)
        assert got == value, name  # bit for bit
    for absent in ("process_cpu_seconds", "go_sched_", 'result="requeue_after"'):
        assert absent not in text
    assert (r.pool_wait_mean_s, r.cpu_wait_mean_s, r.cpu_busy_cores_mean, r.requeue_after) == (
        None, None, None, 0)


# === the connection pool =========================================================================

@pytest.mark.parametrize("extra", [
    {"arrival_rate_per_s": 30.0, "keys": 200, "workers": 4, "scrape_interval_s": 5.0,
     "trace_limit": 400},
    {"arrival_rate_per_s": 50.0, "keys": 200, "workers": 6, "dependency_qps": 20.0,
     "failing_keys": 100, "fail_prob": 0.1, "coherence": (0.05, 0.001), "api_calls": 2,
     "api_qps": 80.0},
    {"arrival_rate_per_s": 0.0, "keys": 20_000, "initial_burst": True, "workers": 7,
         "service_dist": "lognormal", "service_cv": 2.0, "warmup_s": 5.0},
], ids=["scraped", "dependency-usl-api", "saturated"])
def test_a_pool_of_one_slot_is_the_lock_bit_for_bit(extra: dict[str, Any]) -> None:
    """K = 1 is the lock: the same station code with one slot, so the same floats; only the
    name of the wait differs."""
    base: dict[str, Any] = {"service_mean_s": 0.1, "duration_s": 120.0, "seed": 5, **extra}
    lock = simulate(**base, lock_fraction=0.3)
    pool = simulate(**base, pool_size=1, pool_fraction=0.3)
    assert pool.pool_wait_mean_s is not None
    assert pool.pool_wait_mean_s > 0
    assert pool.pool_wait_mean_s == lock.lock_wait_mean_s
    assert pool.lock_wait_mean_s is None
    waits = ("lock_wait_mean_s", "pool_wait_mean_s")
    assert fields(pool, drop=waits) == fields(lock, drop=waits)


@pytest.mark.parametrize(("K", "F", "c"), [(2, 0.5, 8), (3, 0.6, 12), (5, 0.5, 25)])
def test_saturated_pool_serves_k_over_f_es(K: int, F: float, c: int) -> None:
    """c workers cycle through K FIFO slots (F·S each) and a delay of (1 − F)·S; with
    c·F > K the slots are the bottleneck: X = K / (F·E[S]), whatever the service law."""
    S, T, W = 0.01, 40.0, 5.0
    ceiling = K / (F * S)
    assert c / S > 1.5 * ceiling  # the workers alone could do much more
    r = backlog(workers=c, service_mean_s=S, duration_s=T, warmup_s=W, pool_size=K,
                pool_fraction=F)
    # exponential parts: the slots' count over 35 s is ~ceiling·35 ± √(ceiling·35) (≤ 1 %)
    assert r.throughput_per_s == pytest.approx(ceiling, rel=0.03)
    assert r.pool_wait_mean_s is not None
    # each pass waits for a slot: the cycle c/X = S + wait (Little on the closed loop)
    assert r.work_mean_s == pytest.approx(c / r.throughput_per_s, rel=0.02)
    const = backlog(workers=c, service_mean_s=S, service_dist="const", duration_s=20.0,
                    warmup_s=1.0, pool_size=K, pool_fraction=F)
    # constant passes: deterministic, off by at most one pass per slot at each end
    assert abs(const.completed - ceiling * 19.0) <= c


def test_a_small_pool_share_at_light_load_changes_nothing_measurable() -> None:
    lam, mean_s, T = 5.0, 0.1, 600.0
    kw: dict[str, Any] = {"arrival_rate_per_s": lam, "keys": UNIQUE, "workers": 4,
                          "service_mean_s": mean_s, "duration_s": T, "warmup_s": 20.0, "seed": 2}
    free = simulate(**kw)
    pooled = simulate(**kw, pool_size=2, pool_fraction=0.01)
    # the slots are busy λ·F·E[S]/K = 0.25 % of the time: a wait is rare and short
    assert pooled.pool_wait_mean_s is not None
    assert pooled.pool_wait_mean_s < 1e-5
    assert pooled.completed == free.completed
    assert pooled.work_mean_s == pytest.approx(free.work_mean_s, rel=1e-3)
    assert pooled.wait_mean_s == pytest.approx(free.wait_mean_s, rel=1e-2)


def test_pool_behind_the_lock_waits_in_time_order() -> None:
    """Lock then pool, both FIFO: with constant passes every worker's cycle is the same, so
    the two ceilings min(1/(F_lock·S), K/(F_pool·S)) decide."""
    S = 0.01
    r = backlog(workers=10, service_mean_s=S, service_dist="const", duration_s=20.0,
                warmup_s=2.0, lock_fraction=0.1, pool_size=2, pool_fraction=0.5)
    ceiling = min(1 / (0.1 * S), 2 / (0.5 * S))  # 400/s by the pool, the lock allows 1000/s
    assert r.throughput_per_s == pytest.approx(ceiling, rel=0.01)
    assert r.lock_wait_mean_s is not None
    assert r.pool_wait_mean_s is not None
    assert r.pool_wait_mean_s > 10 * r.lock_wait_mean_s


# === CPU work on N cores =========================================================================

def _cpu_metrics(r: SimResult) -> tuple[ScrapedMetrics, np.ndarray]:
    assert r.metrics is not None
    return r.metrics, r.metrics.counters["process_cpu_seconds"]


@pytest.mark.parametrize(("N", "F"), [(1, 0.5), (2, 0.4), (4, 0.8)])
def test_saturated_cores_serve_n_over_f_es_and_the_counter_is_the_energy(N: int, F: float) -> None:
    S, T, W, c = 0.01, 60.0, 5.0, 24
    r = backlog(workers=c, service_mean_s=S, duration_s=T, warmup_s=W, cpu_cores=N,
                cpu_fraction=F, scrape_interval_s=5.0)
    ceiling = N / (F * S)
    assert c / S > 2 * ceiling
    assert r.throughput_per_s == pytest.approx(ceiling, rel=0.03)
    m, cpu = _cpu_metrics(r)
    t = m.t_s
    rate = (last(cpu) - float(cpu[t == W][0])) / (T - W)
    # every core always busy: the counter grows at N CPU-seconds per second
    assert rate == pytest.approx(N, rel=0.002)
    assert r.cpu_busy_cores_mean == pytest.approx(N, rel=0.002)
    # energy balance: CPU seconds = passes × F·E[S]
    assert rate == pytest.approx(r.throughput_per_s * F * S, rel=0.03)
    assert np.all(np.diff(cpu) >= 0)
    assert np.allclose(cpu * 100, np.round(cpu * 100))  # whole clock ticks
    assert np.all(m.gauges["gomaxprocs"] == N)
    sched = m.histograms["sched_latencies"]
    assert r.cpu_wait_mean_s is not None
    assert r.cpu_wait_mean_s > 0
    # Little on the closed loop: a worker's cycle c/X = its wait for a core + E[S]
    assert last(sched.sum) / last(sched.count) == pytest.approx(c * F * S / N - S, rel=0.1)


def test_light_cpu_load_counter_rate_is_throughput_times_f_es() -> None:
    lam, S, F, T, W = 20.0, 0.05, 0.3, 300.0, 30.0
    r = simulate(arrival_rate_per_s=lam, keys=UNIQUE, workers=6, service_mean_s=S,
                 duration_s=T, warmup_s=W, cpu_cores=2, cpu_fraction=F, scrape_interval_s=15.0)
    m, cpu = _cpu_metrics(r)
    rate = (last(cpu) - float(cpu[m.t_s == W][0])) / (T - W)
    # the CPU parts are exponential with mean F·S: their sum over ~5400 passes is within
    # ~1.4 % (1/√n) of n·F·S; the throughput is the arrival rate (ρ per core 0.15)
    assert rate == pytest.approx(lam * F * S, rel=0.05)
    assert rate == pytest.approx(r.throughput_per_s * F * S, rel=0.05)
    assert r.throughput_per_s == pytest.approx(lam, rel=0.05)


@pytest.mark.parametrize("dist", ["exp", "const"])
def test_no_sched_latency_when_the_cores_are_never_oversubscribed(dist: ServiceDist) -> None:
    """N ≥ workers: a CPU part always finds a free core."""
    r = simulate(arrival_rate_per_s=60.0, keys=500, workers=4, service_mean_s=0.05,
                 service_dist=dist, duration_s=120.0, cpu_cores=4, cpu_fraction=0.9,
                 scrape_interval_s=10.0)
    m, _ = _cpu_metrics(r)
    sched = m.histograms["sched_latencies"]
    assert r.cpu_wait_mean_s == 0.0
    assert last(sched.count) > 1000
    assert last(sched.sum) == 0.0
    assert np.array_equal(sched.buckets[:, 0], sched.count)  # all in the first bucket


def test_cpu_station_at_light_load_is_mm_n() -> None:
    """50 workers, unique keys: a pass starts at its Poisson arrival, and its CPU part (the
    first station) is F·S, exponential with mean F·E[S]: the cores are an M/M/N FIFO queue.
    Erlang C gives the mean wait and the share of parts that do not wait."""
    lam, S, F, N = 30.0, 0.1, 0.5, 2
    mu = 1.0 / (F * S)
    a = lam / mu  # 1.5 on 2 cores: ρ = 0.75
    c_wait = erlang_c(N, a)  # 0.643
    wq = c_wait / (N * mu - lam)  # 0.0643 s
    waits, no_wait = [], []
    for seed in range(4):
        r = simulate(arrival_rate_per_s=lam, keys=UNIQUE, workers=50, service_mean_s=S,
                     duration_s=1200.0, warmup_s=30.0, cpu_cores=N, cpu_fraction=F, seed=seed,
                     scrape_interval_s=30.0)
        assert r.cpu_wait_mean_s is not None
        waits.append(r.cpu_wait_mean_s)
        m, _ = _cpu_metrics(r)
        h = m.histograms["sched_latencies"]
        no_wait.append(float(h.buckets[-1, 0] / h.count[-1]))  # ≤ 64 ns: a wait of 0
        assert r.busy_workers_mean < 10  # the workers never run out: the starts are Poisson
    # 4 × 35 000 parts; the run-to-run spread of the mean wait at ρ = 0.75 is ~3 % here
    assert float(np.mean(waits)) == pytest.approx(wq, rel=0.06)
    assert float(np.mean(no_wait)) == pytest.approx(1 - c_wait, abs=0.015)


def test_the_cpu_series_have_the_shape_a_real_controller_exposes() -> None:
    """Names, types, help texts, bounds and labels of controller-runtime v0.24.1's /metrics
    (client_golang v1.23.2), copied from the reference exposition."""
    r = simulate(arrival_rate_per_s=20.0, keys=100, workers=4, service_mean_s=0.05,
                 duration_s=60.0, cpu_cores=2, cpu_fraction=0.5, scrape_interval_s=15.0)
    assert r.metrics is not None
    text = render_families(simulated_families([("q", "p-0", r.metrics)], START))
    lines = text.splitlines()
    assert "# TYPE process_cpu_seconds counter" in lines
    assert "# HELP process_cpu_seconds Total user and system CPU time spent in seconds." in lines
    assert "# TYPE go_sched_gomaxprocs_threads gauge" in lines
    assert ("# HELP go_sched_gomaxprocs_threads The current runtime.GOMAXPROCS setting, or the "
            "number of operating system threads that can execute user-level Go code "
            "simultaneously. Sourced from /sched/gomaxprocs:threads.") in lines
    assert "# TYPE go_sched_latencies_seconds histogram" in lines
    assert ("# HELP go_sched_latencies_seconds Distribution of the time goroutines have spent in "
            "the scheduler in a runnable state before actually running. Bucket counts increase "
            "monotonically. Sourced from /sched/latencies:seconds.") in lines
    at_end = [line for line in lines if line.endswith(f" {int(START) + 60}")]
    les = [line.split('le="')[1].split('"')[0] for line in at_end
           if line.startswith("go_sched_latencies_seconds_bucket")]
    assert les == ["6.399999999999999e-08", "6.399999999999999e-07", "7.167999999999999e-06",
                   "8.191999999999999e-05", "0.0009175039999999999", "0.010485759999999998",
                   "0.11744051199999998", "+Inf"]
    assert f'go_sched_gomaxprocs_threads{{pod="p-0"}} 2 {int(START) + 60}' in at_end
    cpu = [line for line in at_end if line.startswith("process_cpu_seconds_total")]
    assert len(cpu) == 1
    assert cpu[0].startswith('process_cpu_seconds_total{pod="p-0"} ')


# === polling: RequeueAfter =======================================================================

def _starts_and_ends(r: SimResult) -> tuple[dict[int, list[float]], dict[int, list[float]]]:
    starts: dict[int, list[float]] = defaultdict(list)
    ends: dict[int, list[float]] = defaultdict(list)
    for e in r.trace:
        if e.kind == "start":
            starts[e.key].append(e.time_s)
        elif e.kind in ("success", "failure"):
            ends[e.key].append(e.time_s)
    return starts, ends


def test_polling_with_ample_workers_repeats_every_p_plus_the_pass() -> None:
    K, P, S, T, W = 40, 5.0, 0.2, 900.0, 60.0
    r = simulate(arrival_rate_per_s=0.0, keys=K, initial_burst=True, workers=K,
                 service_mean_s=S, duration_s=T, warmup_s=W, requeue_after_s=P,
                 trace_limit=100_000, scrape_interval_s=15.0)
    starts, _ = _starts_and_ends(r)
    gaps = np.concatenate([np.diff(v) for v in starts.values()])
    assert len(starts) == K
    # a key's period is P + its pass (a worker is always free): E = P + E[S], sd = E[S]
    assert gaps.min() >= P
    assert float(gaps.mean()) == pytest.approx(P + S, abs=4 * S / math.sqrt(gaps.size))
    assert r.wait_mean_s == 0.0
    # the requeue_after results: every pass, at K / (P + E[S]) per second
    assert r.requeue_after == r.completed
    assert r.requeue_after / (T - W) == pytest.approx(K / (P + S), rel=0.03)
    assert r.retries == 0
    assert r.failed == 0
    m = r.metrics
    assert m is not None
    c = m.counters
    assert last(c["reconcile_success"]) == 0
    done = last(c["reconcile_requeue_after"])
    # client-go counts every AddAfter in retries_total; each poll comes back as a counted add
    assert last(c["retries"]) == done
    assert last(c["adds"]) == r.adds
    assert r.adds == K + sum(1 for e in r.trace if e.kind == "retry-ready")
    text = render_families(simulated_families([("q", "p", m)], START))
    assert (f'controller_runtime_reconcile_total{{controller="q",pod="p",result="requeue_after"}}'
            f" {done:.0f} {int(START + T)}") in text


def test_polling_with_too_few_workers_stretches_and_serves_the_workers_capacity() -> None:
    K, P, S, c = 200, 1.0, 0.1, 2
    r = simulate(arrival_rate_per_s=0.0, keys=K, initial_burst=True, workers=c,
                 service_mean_s=S, duration_s=600.0, warmup_s=60.0, requeue_after_s=P)
    demand = K / (P + S)  # 182/s wanted, 20/s possible
    assert demand > 5 * c / S
    assert r.utilization == pytest.approx(1.0, abs=1e-9)
    assert r.work_mean_s is not None
    assert r.throughput_per_s == pytest.approx(c / r.work_mean_s, rel=0.01)
    assert r.throughput_per_s == pytest.approx(c / S, rel=0.05)
    # the effective period per key (Little: K keys each one pass per period) is ≫ P + E[S]
    period = K / r.throughput_per_s
    assert period > 8 * (P + S)
    assert r.wait_mean_s is not None
    assert r.wait_mean_s == pytest.approx(period - P - r.work_mean_s, rel=0.05)


def test_raw_events_between_polls_keep_the_earliest_ready_time() -> None:
    """A raw event during the delay passes the key at once; the AddAfter of that pass does not
    push the waiting entry later (the delaying queue keeps the earliest): with ample workers a
    key is back within P of the end of every pass, holds aside."""
    P = 2.0
    r = simulate(arrival_rate_per_s=10.0, keys=20, workers=20, service_mean_s=0.05,
                 duration_s=120.0, requeue_after_s=P, trace_limit=200_000, seed=1)
    starts, ends = _starts_and_ends(r)
    n_checked = early = 0
    for k, s in starts.items():
        e = ends[k]
        for i in range(min(len(s) - 1, len(e))):
            assert s[i + 1] <= e[i] + P + 1e-9, (k, i)
            n_checked += 1
            early += s[i + 1] < e[i] + P - 1e-6  # a raw event came first
    assert n_checked > 1000
    assert early > 100


def test_failed_passes_retry_rate_limited_not_requeue_after() -> None:
    r = simulate(arrival_rate_per_s=0.0, keys=50, initial_burst=True, workers=50,
                 service_mean_s=0.05, duration_s=300.0, requeue_after_s=3.0, fail_prob=0.2,
                 scrape_interval_s=10.0)
    m = r.metrics
    assert m is not None
    c = m.counters
    assert r.requeue_after == r.completed - r.failed > 0  # no warmup: the whole run
    assert last(c["reconcile_error"]) == r.failed == r.retries > 0
    assert last(c["retries"]) == r.retries + r.requeue_after


# === a rate limit outside the API client =========================================================

def test_a_dependency_rate_limit_is_invisible_in_the_metrics() -> None:
    """``dependency_qps`` holds the worker like an external service's limit: the passes get
    longer, and no series — REST client or other — counts or names it."""
    kw: dict[str, Any] = {"arrival_rate_per_s": 40.0, "keys": 500, "workers": 8,
                          "service_mean_s": 0.02, "duration_s": 120.0, "scrape_interval_s": 15.0,
                          "seed": 3}
    free = simulate(**kw)
    limited = simulate(**kw, dependency_qps=10.0)
    assert limited.work_mean_s is not None
    assert free.work_mean_s is not None
    assert limited.work_mean_s > 5 * free.work_mean_s  # the limit is felt
    assert limited.throughput_per_s == pytest.approx(10.0, rel=0.05)
    assert limited.metrics is not None
    assert free.metrics is not None
    fams_l = simulated_families([("q", "p", limited.metrics)], START)
    fams_f = simulated_families([("q", "p", free.metrics)], START)
    assert [f.name for f in fams_l] == [f.name for f in fams_f]
    text = render_families(fams_l)
    assert "rest_client" not in text
    assert "dependency" not in text.lower()
    # with API calls the client's series exist, and its limiter never sees the dependency
    with_api = simulate(**kw, dependency_qps=10.0, api_calls=1)
    assert with_api.metrics is not None
    assert last(with_api.metrics.histograms["api_limiter"].sum) == 0.0
    names = {f.name for f in simulated_families([("q", "p", with_api.metrics)], START)}
    assert {n for n in names if n.startswith("rest_client")} == {
        "rest_client_requests", "rest_client_rate_limiter_duration_seconds",
        "rest_client_request_duration_seconds"}


# === bad input ===================================================================================

@pytest.mark.parametrize(("kw", "says"), [
    ({"pool_fraction": 0.2}, "needs the pool size"),
    ({"pool_size": 3}, "pool fraction above 0"),
    ({"pool_size": 0, "pool_fraction": 0.2}, "pool size"),
    ({"pool_size": 100_001, "pool_fraction": 0.2}, "100,000"),
    ({"pool_size": 2.5, "pool_fraction": 0.2}, "whole number"),
    ({"pool_size": 2, "pool_fraction": 1.5}, "between 0 and 1"),
    ({"cpu_fraction": 0.2}, "needs the CPU cores"),
    ({"cpu_cores": 2}, "CPU fraction above 0"),
    ({"cpu_cores": 10_001, "cpu_fraction": 0.5}, "10,000"),
    ({"cpu_cores": 2, "cpu_fraction": float("nan")}, "finite"),
    ({"lock_fraction": 0.5, "pool_size": 2, "pool_fraction": 0.3, "cpu_cores": 1,
      "cpu_fraction": 0.3}, "at most 1"),
    ({"requeue_after_s": 0.0}, "positive"),
    ({"requeue_after_s": -1.0}, "positive"),
    ({"requeue_after_s": float("inf")}, "finite"),
    ({"requeue_after_s": 4e7}, "a year"),
    ({"requeue_after_s": 1e-3, "keys": 10**6, "arrival_rate_per_s": 1e5}, "polling passes"),
])
def test_bad_inputs_are_one_line_errors(kw: dict[str, Any], says: str) -> None:
    base: dict[str, Any] = {"arrival_rate_per_s": 5.0, "keys": 10, "workers": 2,
                            "service_mean_s": 0.1, "duration_s": 10.0}
    with pytest.raises(ModelInputError) as exc:
        simulate(**{**base, **kw})
    assert says in str(exc.value)
    assert "\n" not in str(exc.value)


# === in a real Prometheus ========================================================================

@pytest.mark.prometheus
def test_backfilled_cpu_and_polling_series_read_back_in_prometheus(tmp_path: Path) -> None:
    """The series as PromQL reads them: the CPU rate is the cores at saturation, GOMAXPROCS the
    cores, the requeue_after rate the throughput, the sched latency quantile above 0."""
    N, F, S = 2, 0.5, 0.01
    T = 1800.0
    r = simulate(arrival_rate_per_s=0.0, keys=1_000_000, initial_burst=True, workers=8,
                 service_mean_s=S, duration_s=T, cpu_cores=N, cpu_fraction=F,
                 requeue_after_s=3600.0, scrape_interval_s=15.0)
    assert r.metrics is not None
    om = tmp_path / "sim.om"
    with om.open("w") as out:
        write_families(out, simulated_families([("q", "p-0", r.metrics)], START))
    server = start_prometheus(tmp_path / "prom", tsdb=backfill_file(om, tmp_path))
    try:
        def query(promql: str) -> float:
            url = (f"{server.url}/api/v1/query?"
                   + urllib.parse.urlencode({"query": promql, "time": str(START + 1200)}))
            with urllib.request.urlopen(url, timeout=10) as resp:
                data = json.load(resp)
            assert data["status"] == "success", data
            return float(data["data"]["result"][0]["value"][1])

        assert query('rate(process_cpu_seconds_total{pod="p-0"}[5m])') == pytest.approx(
            N, rel=0.01)
        assert query('go_sched_gomaxprocs_threads{pod="p-0"}') == N
        assert query('sum(rate(controller_runtime_reconcile_total{result="requeue_after"}[5m]))'
                     ) == pytest.approx(N / (F * S), rel=0.05)
        assert query('rate(workqueue_retries_total[5m])') == pytest.approx(N / (F * S), rel=0.05)
        # every part waits about c·F·S/N − S = 10 ms for a core
        assert query("histogram_quantile(0.5, rate(go_sched_latencies_seconds_bucket[5m]))"
                     ) > 0.001
    finally:
        server.stop()
