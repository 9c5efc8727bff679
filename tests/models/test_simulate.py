"""The simulator against theory (closed forms computed here, independently of the code)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from models.errors import ModelInputError
from models.ratelimit import RetryPolicy, parse_retry_spec
from models.retry import retry_storm
from models.simulate import simulate

UNIQUE = 10**15  # keys never repeat: no coalescing


def erlang_c_wait(lam: float, mu: float, c: int) -> float:
    """Textbook Erlang C: P(wait) = (a^c/c!)·(c/(c−a)) / (Σ_{k<c} a^k/k! + that); Wq = P/(cμ−λ)."""
    a = lam / mu
    top = a**c / math.factorial(c) * c / (c - a)
    p_wait = top / (sum(a**k / math.factorial(k) for k in range(c)) + top)
    return p_wait / (c * mu - lam)


@pytest.mark.parametrize(("lam", "mean_s", "c"), [(3.0, 0.25, 1), (9.0, 0.25, 3)])
def test_unique_keys_exponential_service_match_erlang_c(lam: float, mean_s: float, c: int) -> None:
    theory = erlang_c_wait(lam, 1 / mean_s, c)
    runs = [simulate(arrival_rate_per_s=lam, keys=UNIQUE, workers=c, service_mean_s=mean_s,
                     duration_s=6000.0, warmup_s=100.0, seed=s) for s in range(4)]
    means = np.array([r.wait_mean_s for r in runs], dtype=float)
    # tolerance: 4 independent runs of ~54k customers each; the batch standard error of the
    # mean wait at ρ = 0.75 is ≈ 3–4 % per run, so 8 % on the average of four is > 3 σ.
    assert means.mean() == pytest.approx(theory, rel=0.08)
    r = runs[0]
    assert r.coalesced_events == 0
    assert r.coalescing_ratio == 1.0
    assert r.utilization == pytest.approx(lam * mean_s / c, rel=0.03)
    # Little's law on the queue: mean depth = throughput × mean wait
    assert r.depth_mean == pytest.approx(r.throughput_per_s * r.wait_mean_s, rel=0.02)


def _exact_key_chain(keys: int, theta: float, mu: float, c: int) -> float:
    """Exact mean queue wait of the simulator's semantics for K exchangeable keys, each with
    Poisson events at rate θ, c workers, exponential service at rate μ — solved here as a
    CTMC over (q waiting, b in service, d in service and re-dirtied):

      idle-key event        (K−q−b)θ : b+1 if b < c else q+1
      event on clean b      (b−d)θ   : d+1        (client-go: dirty, re-queued at Done)
      completion, dirty     dμ       : d−1        (re-queued; a worker takes the head)
      completion, clean     (b−d)μ   : q−1 if q > 0 else b−1
    Depth = q + d (dirty keys not handed out); adds/s = E[(K−q−b)θ + (b−d)θ]; Wq = E[depth]/adds.
    """
    states = [(q, b, d) for b in range(c + 1) for d in range(b + 1) for q in range(keys - b + 1)
              if (q == 0 or b == c) and q + b <= keys]
    index = {s: i for i, s in enumerate(states)}
    n = len(states)
    Q = np.zeros((n, n))
    for (q, b, d), i in index.items():
        def move(to: tuple[int, int, int], rate: float, i: int = i) -> None:
            if rate > 0:
                Q[i, index[to]] += rate
        idle = keys - q - b
        move((q, b + 1, d) if b < c else (q + 1, b, d), idle * theta)
        move((q, b, d + 1), (b - d) * theta)
        move((q, b, d - 1), d * mu)
        move((q - 1, b, d) if q > 0 else (q, b - 1, d), (b - d) * mu)
    np.fill_diagonal(Q, -Q.sum(axis=1))
    A = np.vstack([Q.T, np.ones(n)])
    rhs = np.zeros(n + 1)
    rhs[-1] = 1.0
    p = np.linalg.lstsq(A, rhs, rcond=None)[0]
    depth = sum(p[i] * (q + d) for (q, b, d), i in index.items())
    adds = sum(p[i] * ((keys - q - b) + (b - d)) * theta for (q, b, d), i in index.items())
    return float(depth / adds)


def test_finite_keys_match_the_exact_key_chain() -> None:
    K, theta, mean_s, c = 12, 0.6, 0.2, 2  # heavy per-key load: coalescing matters
    theory = _exact_key_chain(K, theta, 1 / mean_s, c)
    runs = [simulate(arrival_rate_per_s=K * theta, keys=K, workers=c, service_mean_s=mean_s,
                     duration_s=8000.0, warmup_s=100.0, seed=s) for s in range(3)]
    sim = float(np.mean([r.wait_mean_s for r in runs]))
    assert sim == pytest.approx(theory, rel=0.06)  # ~40k adds per run, 3 runs
    assert runs[0].coalesced_events > 0


def test_finite_keys_close_to_mmc_k_when_reads_during_service_are_rare() -> None:
    """M/M/c//K (machine repairman) ignores re-adds during service; with θ·E[S] = 1 % that
    changes the arrival rate by about 1 %, so the simulator must be within ~8 %."""
    K, theta, mean_s, c = 40, 0.1, 0.1, 1  # offered load Kθ/μ = 0.4… with queueing at c = 1
    mu = 1 / mean_s
    # birth–death chain: λ_n = (K−n)θ, μ_n = min(n, c)μ
    w = [1.0]
    for n in range(1, K + 1):
        w.append(w[-1] * (K - n + 1) * theta / (min(n, c) * mu))
    p = np.array(w) / sum(w)
    ns = np.arange(K + 1)
    lq = float(np.sum(np.maximum(ns - c, 0) * p))
    x = float(np.sum(np.minimum(ns, c) * mu * p))
    theory = lq / x
    runs = [simulate(arrival_rate_per_s=K * theta, keys=K, workers=c, service_mean_s=mean_s,
                     duration_s=8000.0, warmup_s=100.0, seed=s) for s in range(3)]
    sim = float(np.mean([r.wait_mean_s for r in runs]))
    assert sim == pytest.approx(theory, rel=0.08)
    try:
        from models.finite_keys import finite_keys
    except ImportError:
        return
    fk = finite_keys(K, K * theta, mu, [c])
    assert float(fk.wait_mean_s[0]) == pytest.approx(theory, rel=1e-6)


def test_hot_key_is_serial_and_capped_at_one_over_service_time() -> None:
    r = simulate(arrival_rate_per_s=400.0, keys=50, zipf_s=1.5, workers=8, service_mean_s=0.05,
                 service_dist="const", duration_s=30.0, seed=3, trace_limit=200_000)
    starts: list[float] = []
    ends: list[float] = []
    for e in r.trace:
        if e.key == 0 and e.kind == "start":
            starts.append(e.time_s)
        elif e.key == 0 and e.kind in ("success", "failure"):
            ends.append(e.time_s)
    assert len(starts) > 100
    # never two workers on key 0: each start comes at or after the previous end
    for prev_end, nxt in zip(ends, starts[1:], strict=False):
        assert nxt >= prev_end - 1e-12
    assert r.hot_key_throughput_per_s <= 1 / 0.05 + 1e-9
    # key 0 receives ~30 % of 400 events/s ≈ 120/s, far above what one serial key can take:
    # its notifications coalesce instead of running in parallel
    raw0 = sum(1 for e in r.trace if e.key == 0 and e.kind in ("arrival", "coalesced"))
    span = r.trace[-1].time_s
    assert raw0 / span > 5 * r.hot_key_throughput_per_s
    assert r.coalescing_ratio is not None
    assert r.coalescing_ratio > 1.5


def _storm(policy: RetryPolicy, *, fail: bool = True) -> float:
    r = simulate(arrival_rate_per_s=10.0, keys=20 + 10**12, failing_keys=20, workers=2,
                 service_mean_s=0.05, duration_s=120.0, seed=7, initial_burst=True,
                 fail_prob=1.0 if fail else 0.0, fail_window_s=(0.0, 120.0), retry=policy)
    assert r.healthy_wait_mean_s is not None
    return r.healthy_wait_mean_s


def test_healthy_key_starvation_and_its_cures() -> None:
    """20 keys of a dead dependency retried with add_after(0) occupy the two workers: healthy
    keys queue behind them. Per-key exponential backoff (± jitter) or a global bucket cures it."""
    baseline = _storm(parse_retry_spec("const:0"), fail=False)
    tight = _storm(parse_retry_spec("const:0"))
    expo = _storm(parse_retry_spec("exp:0.005:1000"))
    jitter = _storm(parse_retry_spec("exp:0.005:1000", jitter="full"))
    bucket = _storm(parse_retry_spec("const:0", global_qps=2.0, burst=1))
    assert baseline < 0.05
    # tight loop: 20 failing keys always queued ahead: ≈ 20 × 0.05 s / 2 workers ≈ 0.5 s
    assert tight > 10 * baseline
    assert tight > 0.3
    for cured in (expo, jitter, bucket):
        assert cured < tight / 5


def test_dependency_limit_and_retries_are_counted() -> None:
    r = simulate(arrival_rate_per_s=100.0, keys=UNIQUE, workers=50, service_mean_s=0.01,
                 duration_s=60.0, dependency_qps=20.0, seed=1)
    # 100 events/s but the dependency admits 20/s: reconciles are paced at 20/s
    assert r.throughput_per_s == pytest.approx(20.0, rel=0.05)
    assert r.dependency_rate_mean_per_s == pytest.approx(20.0, rel=0.05)
    f = simulate(arrival_rate_per_s=50.0, keys=UNIQUE, workers=4, service_mean_s=0.01,
                 duration_s=60.0, fail_prob=0.2, seed=2)
    assert f.retries == f.failed
    assert f.failed / max(1, f.completed) == pytest.approx(0.2, abs=0.03)


def test_deterministic_and_bad_input() -> None:
    kw = {"arrival_rate_per_s": 20.0, "keys": 30, "workers": 2, "service_mean_s": 0.05,
          "duration_s": 50.0}
    a = simulate(**kw, seed=5)  # type: ignore[arg-type]
    b = simulate(**kw, seed=5)  # type: ignore[arg-type]
    assert a == b
    seen: list[float] = []
    simulate(**kw, seed=5, progress=seen.append)  # type: ignore[arg-type]
    assert seen
    assert seen[-1] == 1.0
    for bad in ({"workers": 0}, {"service_mean_s": -1.0}, {"fail_prob": 1.5},
                {"warmup_s": 60.0}, {"service_dist": "pareto"}, {"failing_keys": 31}):
        with pytest.raises(ModelInputError):
            simulate(**{**kw, **bad})  # type: ignore[arg-type]


# --- the compiled event loop reproduces the interpreted one exactly -------------------------
# The values below were computed by the pure-Python simulator (before the loop moved to
# models/_simcore.py) for the same inputs and seeds; the compiled loop must give the very
# same floats, not approximately equal ones.

PINNED: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (  # fail_dep
        {"arrival_rate_per_s": 30.0, "keys": 200, "workers": 4, "service_mean_s": 0.05,
         "duration_s": 600.0, "seed": 6, "fail_prob": 0.3, "failing_keys": 10,
         "dependency_qps": 5.0, "warmup_s": 50.0},
        {"events": 36745, "coalesced_events": 7, "adds": 18369, "completed": 16869, "failed": 415,
         "retries": 415, "depth_max": 6, "dependency_requests": 1284,
         "wait_mean_s": 0.0020471870429403494, "wait_p99_s": 0.04903767728555352,
         "work_mean_s": 0.05105319676716044, "busy_workers_mean": 1.5654129413450184,
         "depth_mean": 0.06278164336959068, "dependency_rate_peak_per_s": 6.333333333333333,
         "healthy_wait_mean_s": 0.002012359845488254, "failing_wait_p99_s": 0.05293572058010897},
    ),
    (  # burst_window_jitter_bucket
        {"arrival_rate_per_s": 10.0, "keys": 200 + 10**9, "workers": 4, "service_mean_s": 0.05,
         "duration_s": 120.0, "seed": 7, "fail_prob": 1.0, "failing_keys": 200,
         "fail_window_s": (0.0, 30.0), "initial_burst": True,
         "retry": parse_retry_spec("exp:0.01:5", jitter="full", global_qps=20.0)},
        {"events": 4624, "coalesced_events": 0, "adds": 2312, "completed": 2312, "failed": 999,
         "retries": 999, "depth_max": 217, "dependency_requests": 1199,
         "wait_mean_s": 0.527135725003307, "wait_p99_s": 2.990476819893457,
         "work_mean_s": 0.050028714779675555, "busy_workers_mean": 0.963886571421749,
         "depth_mean": 10.156148301730381, "dependency_rate_peak_per_s": 95.0,
         "healthy_wait_mean_s": 0.1052788423741696, "failing_wait_p99_s": 3.0014133934181517},
    ),
    (  # decorrelated
        {"arrival_rate_per_s": 25.0, "keys": 300, "workers": 3, "service_mean_s": 0.05,
         "duration_s": 400.0, "seed": 9, "fail_prob": 0.4, "failing_keys": 50, "zipf_s": 1.0,
         "retry": parse_retry_spec("exp:0.005:2", jitter="decorrelated")},
        {"events": 28248, "coalesced_events": 232, "adds": 13967, "completed": 13965,
         "failed": 4414, "retries": 4414, "depth_max": 8, "dependency_requests": 11075,
         "wait_mean_s": 0.011420295546942965, "wait_p99_s": 0.12111567974865949,
         "work_mean_s": 0.04987597101553594, "busy_workers_mean": 1.7414405695754545,
         "depth_mean": 0.398768169760381, "dependency_rate_peak_per_s": 39.5,
         "healthy_wait_mean_s": 0.009556115979504903, "failing_wait_p99_s": 0.1256699936849488},
    ),
    (  # equal_clientgo
        {"arrival_rate_per_s": 50.0, "keys": 1000, "workers": 5, "service_mean_s": 0.05,
         "duration_s": 300.0, "seed": 10, "fail_prob": 0.5,
         "retry": parse_retry_spec("client-go", jitter="equal"),
         "dependency_qps": 30.0, "dependency_burst": 3, "bin_s": 0.5},
        {"events": 26670, "coalesced_events": 7245, "adds": 9468, "completed": 9001,
         "failed": 4575, "retries": 4575, "depth_max": 539, "dependency_requests": 9001,
         "wait_mean_s": 15.581243719941709, "wait_p99_s": 17.701867945282206,
         "work_mean_s": 0.16656766412950313, "busy_workers_mean": 4.998675955356574,
         "depth_mean": 479.36797949680556, "dependency_rate_peak_per_s": 32.0,
         "healthy_wait_mean_s": None, "failing_wait_p99_s": None},
    ),
    (  # overload_split
        {"arrival_rate_per_s": 100.0, "keys": 100 + 10**9, "workers": 2, "service_mean_s": 0.05,
         "duration_s": 200.0, "seed": 24, "failing_keys": 100, "fail_prob": 0.5,
         "retry": parse_retry_spec("client-go")},
        {"events": 27825, "coalesced_events": 0, "adds": 19904, "completed": 7921, "failed": 0,
         "retries": 0, "depth_max": 11981, "dependency_requests": 0,
         "wait_mean_s": 60.07762225098233, "wait_p99_s": 118.54282676302046,
         "work_mean_s": 0.05048855607067835, "busy_workers_mean": 1.9999803495873874,
         "depth_mean": 5925.47731175313, "dependency_rate_peak_per_s": 0.0,
         "healthy_wait_mean_s": 60.07762225098233, "failing_wait_p99_s": None},
    ),
    (  # lognorm_zipf_warm
        {"arrival_rate_per_s": 60.0, "keys": 5000, "workers": 6, "service_mean_s": 0.08,
         "duration_s": 800.0, "seed": 4, "zipf_s": 0.8, "service_dist": "lognormal",
         "service_cv": 2.0, "warmup_s": 100.0},
        {"events": 95520, "coalesced_events": 631, "adds": 47447, "completed": 41499, "failed": 0,
         "retries": 0, "depth_max": 56, "dependency_requests": 47447,
         "wait_mean_s": 0.050995169730306225, "wait_p99_s": 0.4800584616412298,
         "work_mean_s": 0.080082443331095, "busy_workers_mean": 4.747141874619212,
         "depth_mean": 3.022347523065637, "dependency_rate_peak_per_s": 70.0,
         "healthy_wait_mean_s": None, "failing_wait_p99_s": None},
    ),
]

TRACE_BURST_HEAD = [
    (0.0, "arrival", 0, ""),
    (0.0, "start", 0, "waited 0 s"),
    (0.0, "arrival", 1, ""),
    (0.0, "start", 1, "waited 0 s"),
    (0.0, "arrival", 2, ""),
    (0.0, "arrival", 3, ""),
    (0.0, "arrival", 4, ""),
    (0.1282091469630436, "failure", 1, "retry in 0.1 s"),
    (0.1282091469630436, "start", 2, "waited 0.128209 s"),
    (0.1847557147748289, "arrival", 15, ""),
    (0.22820914696304362, "retry-ready", 1, ""),
    (0.2658501768423959, "failure", 0, "retry in 0.1 s"),
]
TRACE_BURST_WAIT_MEAN = 0.01769394001730198

PINNED_STORMS: list[tuple[int, RetryPolicy, float, dict[str, Any], dict[str, Any]]] = [
    (  # s_exp
        2000, parse_retry_spec("exp:0.005:1000"), 120.0, {},
        {"attempts": 32000, "failed_attempts": 30000, "peak_rate_per_s": 4838.709677419354,
         "outage_mean_rate_per_s": 233.33333333333334, "recovered": 2000,
         "recovery_lag_p50_s": 44.58500000000001, "recovery_lag_p99_s": 44.58500000000001,
         "recovery_lag_max_s": 44.58500000000001, "failures_per_key_median": 15.0},
    ),
    (  # s_full
        2000, parse_retry_spec("exp:0.005:1000", jitter="full"), 120.0, {},
        {"attempts": 34345, "failed_attempts": 32345, "peak_rate_per_s": 5313.440860215053,
         "outage_mean_rate_per_s": 252.675, "recovered": 2000,
         "recovery_lag_p50_s": 66.32080791602591, "recovery_lag_p99_s": 395.2916912911959,
         "recovery_lag_max_s": 597.4239240960663, "failures_per_key_median": 16.0},
    ),
    (  # s_equal_bucket
        3000, parse_retry_spec("exp:0.01:60", jitter="equal", global_qps=10.0, burst=100), 60.0,
        {"bin_s": 0.5},
        {"attempts": 6699, "failed_attempts": 3699, "peak_rate_per_s": 208.0,
         "outage_mean_rate_per_s": 11.65, "recovered": 3000, "recovery_lag_p50_s": 150.0,
         "recovery_lag_p99_s": 296.9510000000003, "recovery_lag_max_s": 299.95000000000033,
         "failures_per_key_median": 1.0},
    ),
    (  # s_decor
        1500, parse_retry_spec("exp:0.01:30", jitter="decorrelated"), 100.0, {"attempt_s": 0.0},
        {"attempts": 57569, "failed_attempts": 56069, "peak_rate_per_s": 6148.108108108107,
         "outage_mean_rate_per_s": 545.57, "recovered": 1500,
         "recovery_lag_p50_s": 10.32900991307477, "recovery_lag_p99_s": 29.385472800924752,
         "recovery_lag_max_s": 29.952069060363954, "failures_per_key_median": 31.0},
    ),
    (  # s_clientgo
        5000, parse_retry_spec("client-go"), 300.0, {"seed": 3},
        {"attempts": 13099, "failed_attempts": 8099, "peak_rate_per_s": 35.38461538461539,
         "outage_mean_rate_per_s": 10.21, "recovered": 5000,
         "recovery_lag_p50_s": 249.99999999999994, "recovery_lag_p99_s": 494.9510000000001,
         "recovery_lag_max_s": 499.95000000000005, "failures_per_key_median": 2.0},
    ),
]


@pytest.mark.parametrize(("kw", "expected"), PINNED, ids=[
    "fail+dependency", "burst+outage+jitter+bucket", "zipf+decorrelated", "equal+client-go",
    "overload+residuals", "lognormal+zipf+warmup"])
def test_compiled_loop_gives_the_interpreted_values(kw: dict[str, Any],
                                                    expected: dict[str, Any]) -> None:
    seen: list[float] = []
    r = simulate(**kw, progress=seen.append)
    assert {name: getattr(r, name) for name in expected} == expected
    assert seen[-1] == 1.0
    assert simulate(**kw) == r  # the progress callback only observes


def test_compiled_loop_gives_the_interpreted_trace() -> None:
    r = simulate(arrival_rate_per_s=5.0, keys=20, workers=2, service_mean_s=0.1, duration_s=20.0,
                 seed=14, fail_prob=1.0, failing_keys=5, fail_window_s=(0.0, 3.0),
                 initial_burst=True, trace_limit=200, retry=parse_retry_spec("exp:0.1:1"))
    assert len(r.trace) == 200
    assert [(e.time_s, e.kind, e.key, e.detail) for e in r.trace[:12]] == TRACE_BURST_HEAD
    assert r.wait_mean_s == TRACE_BURST_WAIT_MEAN


def test_the_exponential_delay_past_1024_failures_is_the_cap() -> None:
    # issue 12: base · 2^n overflowed a float from the 1,025th failure of one key on; the delay
    # is the cap from then on, as in client-go (maxDelay once the float backoff exceeds it).
    # One key, constant 10 ms passes, failing for 20 s: exp 1 ms → 1 ms fails once per 11 ms,
    # so about 1,818 times, every retry after 1 ms.
    r = simulate(arrival_rate_per_s=0.0, keys=1, workers=1, service_mean_s=0.01,
                 service_dist="const", duration_s=20.0, fail_prob=1.0, initial_burst=True,
                 retry=parse_retry_spec("exp:0.001:0.001"))
    assert r.retries == pytest.approx(20.0 / 0.011, abs=2)
    storm = retry_storm(3, parse_retry_spec("exp:0.001:0.001", jitter="full"), 10.0,
                        attempt_s=0.001)
    assert storm.failures_per_key_median > 1100  # past 1,024 failures of each key
    assert storm.recovered == 3


@pytest.mark.parametrize(("keys", "policy", "outage_s", "kw", "expected"), PINNED_STORMS,
                         ids=["exp", "full", "equal+bucket", "decorrelated", "client-go"])
def test_compiled_storm_gives_the_interpreted_values(
    keys: int, policy: RetryPolicy, outage_s: float, kw: dict[str, Any], expected: dict[str, Any]
) -> None:
    r = retry_storm(keys, policy, outage_s, **kw)
    assert {name: getattr(r, name) for name in expected} == expected


@pytest.mark.parametrize("spec", [
    ("exp:0.005:1000", "none", None), ("exp:0.01:5", "full", None), ("const:0.5", "none", None),
    ("exp:0.01:5", "equal", 20.0), ("exp:0.02:3", "decorrelated", None),
    ("const:0", "none", 50.0)])
def test_storm_shortcuts_equal_the_exact_loop(spec: tuple[str, str, float | None]) -> None:
    """The failure-only loop and the one-key replication (no jitter, no bucket) against the
    loop with both kinds of events, which is the interpreted loop as it was."""
    from models import _simcore as core

    text, jitter, qps = spec
    pol = parse_retry_spec(text, jitter=jitter, global_qps=qps)
    runs = []
    for exact in (False, True):
        runs.append(core.run_storm(
            keys=300, lim=core.limiter_record(pol.kind, pol.base_s, pol.cap_s, pol.jitter,
                                              pol.global_qps, pol.burst),
            bucket=core.new_bucket(pol.burst), outage_s=20.0, attempt_s=0.01, horizon_s=200.0,
            bin_s=0.5, nbins=400, budget=50_000_000, seed=4, replicate=not exact, exact=exact))
    fast, exact_run = runs
    assert fast.attempts == exact_run.attempts
    assert fast.failed == exact_run.failed
    assert fast.attempts > 300
    np.testing.assert_array_equal(fast.bins, exact_run.bins)
    np.testing.assert_array_equal(np.sort(fast.lags), np.sort(exact_run.lags))
    np.testing.assert_array_equal(fast.counts, exact_run.counts)


def test_compiled_fsum_is_math_fsum() -> None:
    from models._simcore import fsum

    rng = np.random.default_rng(3)
    cases = [np.array([]), np.array([1e16, 1.0, 1e-16]), np.array([1.0, 1e100, 1.0, -1e100]),
             np.array([2.0**53, 1.0, 2.0**-52]), np.array([1.0, 2.0**-53, 2.0**-106]),
             rng.exponential(1.0, 100_000)]
    for _ in range(300):
        n = int(rng.integers(1, 60))
        cases.append(rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n))
    for x in cases:
        assert fsum(x) == math.fsum(x.tolist())
