"""Finite-key (M/M/c//K) model against a CTMC linear solve, the earlier dense computation,
M/M/c limits, the overload plateau and a seeded event simulation with explicit keys."""

from __future__ import annotations

import heapq
import tracemalloc
from collections import deque
from decimal import Decimal, localcontext

import numpy as np
import pytest
from scipy.special import gammaincc
from scipy.stats import poisson

from models.errors import ModelInputError
from models.finite_keys import (
    _bd0,
    _row,
    _stirlerr,
    finite_keys,
    finite_keys_sweep,
    finite_keys_wait_quantile,
    finite_keys_wait_tail,
    window_bound,
)
from models.limits import FINITE_KEYS_MAX, FINITE_KEYS_MAX_CELLS
from models.queueing import erlang_c, erlang_c_wait_quantile, erlang_c_wait_tail


def _ctmc_stationary(keys: int, theta: float, mu: float, c: int) -> np.ndarray:
    """Stationary distribution from the generator matrix Q (πQ = 0, Σπ = 1), by least squares."""
    q = np.zeros((keys + 1, keys + 1))
    for n in range(keys + 1):
        if n < keys:
            q[n, n + 1] = (keys - n) * theta
        if n > 0:
            q[n, n - 1] = min(n, c) * mu
        q[n, n] = -q[n].sum()
    a = np.vstack([q.T, np.ones(keys + 1)])
    b = np.zeros(keys + 2)
    b[-1] = 1.0
    pi, *_ = np.linalg.lstsq(a, b, rcond=None)
    return np.asarray(pi)


def test_small_case_matches_generator_solve() -> None:
    keys, lam, mu, c = 6, 3.0, 1.0, 2
    theta = lam / keys
    pi = _ctmc_stationary(keys, theta, mu, c)
    n = np.arange(keys + 1)
    lq = float((np.maximum(n - c, 0) * pi).sum())
    throughput = float((np.minimum(n, c) * mu * pi).sum())
    arriving = (keys - n) * pi
    p_wait = float(arriving[n >= c].sum() / arriving.sum())
    r = finite_keys(keys, lam, mu, [c])
    assert r.queue_length_mean[0] == pytest.approx(lq, rel=1e-10)
    assert r.in_system_mean[0] == pytest.approx(float((n * pi).sum()), rel=1e-10)
    assert r.throughput_per_s[0] == pytest.approx(throughput, rel=1e-10)
    assert r.throughput_per_s[0] == pytest.approx(theta * (keys - float((n * pi).sum())))
    assert r.wait_mean_s[0] == pytest.approx(lq / throughput, rel=1e-10)
    assert r.p_wait[0] == pytest.approx(p_wait, rel=1e-10)


def test_large_key_count_converges_to_mmc() -> None:
    r = finite_keys(100_000, 2.4, 1.0, [3, 4, 6])
    m = erlang_c(2.4, 1.0, [3, 4, 6])
    np.testing.assert_allclose(r.wait_mean_s, m.wait_mean_s, rtol=2e-3)
    np.testing.assert_allclose(r.p_wait, m.p_wait, rtol=2e-3)
    np.testing.assert_allclose(
        finite_keys_wait_tail(100_000, 2.4, 1.0, [3, 4, 6], 0.7),
        erlang_c_wait_tail(m, 0.7),
        rtol=3e-3,
    )
    np.testing.assert_allclose(
        finite_keys_wait_quantile(100_000, 2.4, 1.0, [3, 4, 6], 0.95),
        erlang_c_wait_quantile(m, 0.95),
        rtol=3e-3,
    )


def test_overload_plateaus_near_fluid_level() -> None:
    # λ = 10/s offered by K keys, c·μ = 4/s: M/M/c would grow forever; here the backlog
    # saturates near K(1 − cμ/λ) − c.
    for keys in (1_000, 100_000):
        r = finite_keys(keys, 10.0, 1.0, [4])
        plateau = keys * (1 - 4 / 10) - 4
        assert r.queue_length_mean[0] == pytest.approx(plateau, rel=0.01)
        assert r.throughput_per_s[0] == pytest.approx(4.0, rel=1e-3)
        assert r.queue_length_mean[0] < keys
    assert not bool(erlang_c(10.0, 1.0, 4).stable)


def _simulate_keys(
    keys: int, theta: float, mu: float, c: int, horizon: float, seed: int
) -> tuple[float, float]:
    """Event simulation with explicit keys: each idle key becomes ready after Exp(θ); ready
    keys wait FIFO for one of c workers; service Exp(μ); then the key is idle again.
    Returns (time-average number waiting, mean wait)."""
    rng = np.random.default_rng(seed)
    events: list[tuple[float, int, int]] = []  # (time, kind 0=ready 1=done, key)
    for k in range(keys):
        heapq.heappush(events, (rng.exponential(1 / theta), 0, k))
    waiting: deque[tuple[int, float]] = deque()
    busy = 0
    now = 0.0
    area = 0.0
    waits: list[float] = []
    warm = horizon * 0.1
    while events:
        t, kind, key = heapq.heappop(events)
        if t > horizon:
            break
        if t > warm:
            area += len(waiting) * (t - max(now, warm))
        now = t
        if kind == 0:
            if busy < c:
                busy += 1
                if t > warm:
                    waits.append(0.0)
                heapq.heappush(events, (t + rng.exponential(1 / mu), 1, key))
            else:
                waiting.append((key, t))
        else:
            heapq.heappush(events, (t + rng.exponential(1 / theta), 0, key))
            if waiting:
                nxt, since = waiting.popleft()
                if since > warm:
                    waits.append(t - since)
                heapq.heappush(events, (t + rng.exponential(1 / mu), 1, nxt))
            else:
                busy -= 1
    return area / (horizon - warm), float(np.mean(waits))


def test_seeded_simulation_agrees() -> None:
    keys, lam, mu, c = 20, 3.0, 1.0, 2
    lq_sim, wq_sim = _simulate_keys(keys, lam / keys, mu, c, horizon=20_000.0, seed=5)
    r = finite_keys(keys, lam, mu, [c])
    assert lq_sim == pytest.approx(r.queue_length_mean[0], rel=0.06)
    assert wq_sim == pytest.approx(r.wait_mean_s[0], rel=0.06)


def test_bad_input() -> None:
    with pytest.raises(ModelInputError):
        finite_keys(0, 1.0, 1.0, [1])
    with pytest.raises(ModelInputError):
        finite_keys(10, -1.0, 1.0, [1])
    with pytest.raises(ModelInputError):
        finite_keys(10, 1.0, 0.0, [1])
    with pytest.raises(ModelInputError):
        finite_keys(10, 1.0, 1.0, [0])


@pytest.mark.parametrize("q", [0.0, 1.0, float("nan"), "p95"])
def test_bad_quantile_is_a_model_error(q: object) -> None:
    with pytest.raises(ModelInputError, match="strictly between 0 and 1"):
        finite_keys_wait_quantile(5, 1.0, 1.0, [1, 2], q)  # type: ignore[arg-type]


# --- issue 12: memory that does not grow with K --------------------------------------------------

def _dense(keys: int, lam: float, mu: float, c: int, t: float, q: float
           ) -> dict[str, float]:
    """The earlier dense computation, written out independently: log p_n for every n = 0..K
    by a cumulative sum, every arrival state's Erlang tail by the regularized incomplete gamma
    function, and the quantile by 200 bisection steps."""
    n = np.arange(keys + 1, dtype=np.float64)
    births = np.log((keys - n[:-1]) * (lam / keys)) if lam > 0 else np.full(keys, -np.inf)
    deaths = np.log(np.minimum(n[1:], c) * mu)
    logp = np.concatenate([[0.0], np.cumsum(births - deaths)])
    p = np.exp(logp - logp.max())
    p /= p.sum()
    w = p * (keys - n)
    w = w / w.sum()
    busy = float(p @ np.minimum(n, c))
    lq = float(p @ np.maximum(n - c, 0))
    ge = n >= c

    def tail(x: float) -> float:
        return float(np.sum(w[ge] * gammaincc(n[ge] - c + 1, x)))

    lo, hi = 0.0, keys + 10 * np.sqrt(keys) + 50.0
    if tail(0.0) > 1 - q:
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if tail(mid) > 1 - q else (lo, mid)
    return {"L": float(p @ n), "Lq": lq, "X": busy * mu, "p_wait": float(w[ge].sum()),
            "tail": tail(c * mu * t), "quantile": hi / (c * mu) if tail(0.0) > 1 - q else 0.0}


@pytest.mark.parametrize(("keys", "lam", "mu"), [
    (1, 3.0, 1.0), (2, 0.5, 2.0), (6, 3.0, 1.0), (20, 3.0, 1.0), (200, 150.0, 1.0),
    (1000, 2.4, 1.0), (5000, 1e4, 3.0), (5000, 0.01, 0.5), (3000, 1e6, 1e-3), (4000, 0.0, 1.0),
])
def test_small_key_counts_are_the_dense_computation_within_1e_9(keys: int, lam: float,
                                                                 mu: float) -> None:
    cs = [1, 2, 3, 7, 40]
    t, q = 0.7, 0.95
    r = finite_keys_sweep(keys, lam, mu, cs, quantile=q, slo_s=t)
    for i, c in enumerate(cs):
        ref = _dense(keys, lam, mu, c, t, q)
        got = {"L": r.result.in_system_mean[i], "Lq": r.result.queue_length_mean[i],
               "X": r.result.throughput_per_s[i], "p_wait": r.result.p_wait[i],
               "tail": r.wait_tail[i] if r.wait_tail is not None else None,
               "quantile": r.wait_quantile_s[i]}
        for name, value in got.items():
            assert value == pytest.approx(ref[name], rel=1e-9, abs=1e-12), (c, name)
    # the separate functions give the sweep's numbers
    np.testing.assert_array_equal(finite_keys(keys, lam, mu, cs).in_system_mean,
                                  r.result.in_system_mean)
    np.testing.assert_array_equal(finite_keys_wait_quantile(keys, lam, mu, cs, q),
                                  r.wait_quantile_s)
    assert r.wait_tail is not None
    np.testing.assert_array_equal(finite_keys_wait_tail(keys, lam, mu, cs, t), r.wait_tail)


def test_wait_tail_and_quantile_match_the_generator_solve() -> None:
    # π from the CTMC's generator (least squares), tail by the incomplete gamma function
    keys, lam, mu, c = 60, 9.0, 1.0, 4
    pi = _ctmc_stationary(keys, lam / keys, mu, c)
    n = np.arange(keys + 1)
    arriving = (keys - n) * pi
    arriving /= arriving.sum()
    tail = float(np.sum(arriving[n >= c] * gammaincc(n[n >= c] - c + 1, c * mu * 2.0)))
    assert finite_keys_wait_tail(keys, lam, mu, [c], 2.0)[0] == pytest.approx(tail, rel=1e-9)
    w95 = finite_keys_wait_quantile(keys, lam, mu, [c], 0.95)[0]
    at = float(np.sum(arriving[n >= c] * gammaincc(n[n >= c] - c + 1, c * mu * w95)))
    assert at == pytest.approx(0.05, rel=1e-9)


def test_ten_million_keys_take_megabytes_not_gigabytes() -> None:
    # issue 12: K = 10,000,000 × 100 worker counts took 22.3 GB as (workers × K) arrays
    tracemalloc.start()
    try:
        r = finite_keys_sweep(10_000_000, 100.0, 1.0, [1, 50, 99, 100, 101, 120], slo_s=1.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20
    # overload (c = 1, 50): the backlog plateaus near the fluid level K(1 − cμ/λ) − c
    for i, c in enumerate((1, 50)):
        fluid = 10_000_000 * (1 - c / 100) - c
        assert r.result.queue_length_mean[i] == pytest.approx(fluid, rel=1e-3)
        assert r.result.throughput_per_s[i] == pytest.approx(c, rel=1e-6)
    # well below the load (c = 120): the M/M/c values (K → ∞)
    m = erlang_c(100.0, 1.0, 120)
    assert r.result.wait_mean_s[5] == pytest.approx(float(m.wait_mean_s), rel=2e-3)
    assert r.wait_tail is not None
    assert r.wait_tail[5] == pytest.approx(float(erlang_c_wait_tail(m, 1.0)), rel=2e-3)


@pytest.mark.parametrize("keys", [10, 10_000, 1_000_000, 10_000_000])
@pytest.mark.parametrize(("lam", "mu", "c"), [
    (1e300, 1e-300, 1), (1e-300, 1e300, 3), (100.0, 1.0, 100), (99.99, 1.0, 100),
    (5.0, 1.0, 4), (1e6, 1.0, 7),
])
def test_the_kept_states_are_within_the_stated_bound(keys: int, lam: float, mu: float,
                                                     c: int) -> None:
    row = _row(keys, lam, mu, c)
    assert row.p.size <= window_bound(keys)
    assert row.w.size <= window_bound(keys)
    assert row.p.sum() == pytest.approx(1.0)
    assert row.w.sum() == pytest.approx(1.0)
    assert np.all(np.isfinite(finite_keys(keys, lam, mu, [c]).queue_length_mean))


def test_key_counts_and_sweeps_above_the_limits_are_sentences() -> None:
    with pytest.raises(ModelInputError, match="at most 10,000,000 keys"):
        finite_keys(FINITE_KEYS_MAX + 1, 1.0, 1.0, [1])
    most = FINITE_KEYS_MAX_CELLS // window_bound(FINITE_KEYS_MAX)
    assert most == 100  # the issue's `whatif --keys 10000000 --workers 1-100` fits
    with pytest.raises(ModelInputError, match="at most 100 worker counts"):
        finite_keys_wait_quantile(FINITE_KEYS_MAX, 1.0, 1.0, list(range(1, 102)), 0.5)


def _log_pois_decimal(j: int, x: float) -> float:
    """log(e^−x·x^j/j!) in 40-digit decimal arithmetic: log j! by the sum of logs up to 200,
    by Stirling's series with six terms beyond (error below 1e-30 there)."""
    with localcontext() as ctx:
        ctx.prec = 40
        dj, dx = Decimal(j), Decimal(x)
        if j <= 200:
            log_fact = sum((Decimal(i).ln() for i in range(2, j + 1)), Decimal(0))
        else:
            two_pi = 2 * Decimal("3.14159265358979323846264338327950288419716939937510")
            series = (Decimal(1) / (12 * dj) - Decimal(1) / (360 * dj**3)
                      + Decimal(1) / (1260 * dj**5) - Decimal(1) / (1680 * dj**7)
                      + Decimal(1) / (1188 * dj**9) - Decimal(691) / (360360 * dj**11))
            log_fact = (dj + Decimal("0.5")) * dj.ln() - dj + two_pi.ln() / 2 + series
        return float(dj * dx.ln() - dx - log_fact)


@pytest.mark.parametrize("x", [0.3, 7.0, 250.0, 1e4, 5e6])
def test_poisson_probabilities_by_the_saddle_point_method(x: float) -> None:
    # against 40-digit arithmetic, in the bulk and the tails (where log pois is −700)
    spread = 40 * np.sqrt(x) + 30
    js = np.unique(np.linspace(1, x + spread, 25).round()).astype(int)
    j = js.astype(np.float64)
    ours = -_stirlerr(j) - _bd0(j, x) - 0.5 * np.log(2 * np.pi * j)
    exact = np.array([_log_pois_decimal(int(k), x) for k in js])
    # log pois to 1e-12 absolute (a relative 1e-12 on the probability), −700 included
    np.testing.assert_allclose(ours, exact, rtol=4e-15, atol=1e-12)
    if x <= 250:  # where scipy's own formula is accurate too
        np.testing.assert_allclose(np.exp(ours), poisson.pmf(j, x), rtol=1e-11, atol=1e-300)
