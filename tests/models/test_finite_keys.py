"""Finite-key (M/M/c//K) model against a CTMC linear solve, M/M/c limits, the overload
plateau and a seeded event simulation with explicit keys."""

from __future__ import annotations

import heapq
from collections import deque

import numpy as np
import pytest

from models.errors import ModelInputError
from models.finite_keys import finite_keys, finite_keys_wait_quantile, finite_keys_wait_tail
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
