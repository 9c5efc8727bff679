"""The simulator against theory (closed forms computed here, independently of the code)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.errors import ModelInputError
from models.ratelimit import RetryPolicy, parse_retry_spec
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
