"""M/M/c (Erlang C): published values, a second formulation, and a seeded simulation."""

from __future__ import annotations

import heapq
import math
from fractions import Fraction

import numpy as np
import pytest

from models.errors import ModelInputError
from models.queueing import (
    ErlangCWorkspace,
    erlang_c,
    erlang_c_wait_percentiles,
    erlang_c_wait_quantile,
    erlang_c_wait_tail,
)


def erlang_c_direct(a: float, c: int) -> float:
    """Textbook form C = (A^c/c!)·(c/(c−A)) / (Σ_{k<c} A^k/k! + (A^c/c!)·(c/(c−A))), summed in
    log space with lgamma: an independent formulation of the same quantity."""
    logs = [k * math.log(a) - math.lgamma(k + 1) for k in range(c)]
    top = c * math.log(a) - math.lgamma(c + 1) + math.log(c / (c - a))
    m = max([*logs, top])
    s = sum(math.exp(x - m) for x in logs)
    t = math.exp(top - m)
    return t / (s + t)


def erlang_c_exact(a: Fraction, c: int) -> Fraction:
    """Exact rational arithmetic for small c (fractions, no floating point at all)."""
    terms = [a**k / math.factorial(k) for k in range(c)]
    top = a**c / math.factorial(c) * Fraction(c) / (c - a)
    return top / (sum(terms) + top)


def test_cran_erlangc_example() -> None:
    # CRAN package ErlangC, documented example: 10 Erlangs offered to 14 agents.
    r = erlang_c(10.0, 1.0, 14)
    assert float(r.p_wait) == pytest.approx(0.1741319, abs=5e-8)


@pytest.mark.parametrize(("a", "c"), [(0.5, 1), (2.4, 3), (10.0, 14), (47.5, 50), (180.0, 200)])
def test_matches_direct_sum(a: float, c: int) -> None:
    r = erlang_c(a * 2.0, 2.0, c)  # λ = 2A, μ = 2
    assert float(r.p_wait) == pytest.approx(erlang_c_direct(a, c), rel=1e-10)
    assert float(r.wait_mean_s) == pytest.approx(erlang_c_direct(a, c) / (2.0 * (c - a)), rel=1e-10)


def test_matches_exact_fractions() -> None:
    for a_num, c in [(7, 4), (5, 9), (39, 20)]:
        a = Fraction(a_num, 2)
        exact = erlang_c_exact(a, c)
        assert float(erlang_c(float(a), 1.0, c).p_wait) == pytest.approx(float(exact), rel=1e-12)


def test_little_and_response_relations() -> None:
    r = erlang_c(7.0, 2.0, [4, 5, 8])
    np.testing.assert_allclose(r.response_mean_s, r.wait_mean_s + 0.5)
    np.testing.assert_allclose(r.queue_length_mean, 7.0 * r.wait_mean_s)
    np.testing.assert_allclose(r.in_system_mean, 7.0 * r.response_mean_s)


def test_broadcast_queues_by_worker_counts() -> None:
    lam = np.array([[1.0], [5.0], [9.0]])
    c = np.arange(1, 13)
    r = erlang_c(lam, 1.0, c)
    assert r.p_wait.shape == (3, 12)
    for i, lam_i in enumerate(lam[:, 0]):
        for j, cj in enumerate(c):
            if lam_i < cj:
                c_direct = erlang_c_direct(lam_i, int(cj))
                assert r.p_wait[i, j] == pytest.approx(c_direct, rel=1e-10)
                wq = c_direct / (cj - lam_i)  # Wq = C / (cμ − λ) with μ = 1
                assert r.wait_mean_s[i, j] == pytest.approx(wq, rel=1e-10)
                assert r.response_mean_s[i, j] == pytest.approx(wq + 1.0, rel=1e-10)
                assert r.in_system_mean[i, j] == pytest.approx(lam_i * (wq + 1.0), rel=1e-10)
                assert r.utilization[i, j] == pytest.approx(lam_i / cj)
            else:
                assert not r.stable[i, j]
                assert r.p_wait[i, j] == 1.0
                assert np.isposinf(r.wait_mean_s[i, j])
    # Same answer when loads vary along the worker axis (general path).
    r2 = erlang_c(np.array([5.0, 5.0, 9.0]), 1.0, np.array([6, 9, 10]))
    for k, (lam_k, cj) in enumerate([(5.0, 6), (5.0, 9), (9.0, 10)]):
        assert r2.p_wait[k] == pytest.approx(erlang_c_direct(lam_k, cj), rel=1e-10)


def test_unstable_is_defined_not_nan() -> None:
    r = erlang_c([3.0, 4.0, 10.0], 1.0, 3)  # λ = cμ and beyond
    assert not r.stable.any()
    np.testing.assert_array_equal(r.p_wait, 1.0)
    assert np.all(np.isposinf(r.wait_mean_s))
    assert np.all(np.isposinf(r.queue_length_mean))
    assert not np.isnan(r.response_mean_s).any()
    assert np.all(np.isposinf(erlang_c_wait_quantile(r, 0.95)))
    np.testing.assert_array_equal(erlang_c_wait_tail(r, 1.0), 1.0)


def test_large_c_is_finite_and_sane() -> None:
    c = 10_000
    r = erlang_c([9000.0, 9900.0, 9990.0], 1.0, c)
    assert r.stable.all()
    assert np.all(np.isfinite(r.wait_mean_s))
    assert np.all(r.wait_mean_s >= 0)
    assert np.all(np.diff(r.p_wait) > 0)  # more load, more waiting
    assert float(r.p_wait[2]) == pytest.approx(erlang_c_direct(9990.0, c), rel=1e-8)
    assert float(erlang_c(9999.0, 1.0, c).p_wait) == pytest.approx(
        erlang_c_direct(9999.0, c), rel=1e-7
    )


def test_tail_and_quantiles_from_exact_tail() -> None:
    r = erlang_c(10.0, 1.0, 14)
    cfrac = float(r.p_wait)
    # P(Wq > t) = C·exp(−(cμ − λ)t): 4/s decay here.
    assert float(erlang_c_wait_tail(r, 0.5)) == pytest.approx(cfrac * math.exp(-2.0))
    p = erlang_c_wait_percentiles(r)
    assert set(p) == {"p50", "p90", "p95", "p99"}
    assert float(p["p50"]) == 0.0  # C < 0.5: at least half never wait
    assert float(p["p95"]) == pytest.approx(math.log(cfrac / 0.05) / 4.0)
    assert float(erlang_c_wait_tail(r, float(p["p99"]))) == pytest.approx(0.01)


def _simulate_mmc(lam: float, mu: float, c: int, n: int, seed: int) -> np.ndarray:
    """FIFO M/M/c by the Kiefer–Wolfowitz recursion: each arrival starts on the server that
    frees first. Returns the waits of customers after a warm-up."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / lam, n))
    services = rng.exponential(1.0 / mu, n)
    free = [0.0] * c
    waits = np.empty(n)
    for i in range(n):
        start = max(arrivals[i], free[0])
        waits[i] = start - arrivals[i]
        heapq.heapreplace(free, start + services[i])
    return waits[n // 10 :]


def test_seeded_simulation_agrees() -> None:
    lam, mu, c = 2.4, 1.0, 3
    waits = _simulate_mmc(lam, mu, c, 200_000, seed=11)
    r = erlang_c(lam, mu, c)
    assert waits.mean() == pytest.approx(float(r.wait_mean_s), rel=0.06)
    assert (waits > 0).mean() == pytest.approx(float(r.p_wait), rel=0.03)
    t95 = float(erlang_c_wait_quantile(r, 0.95))
    assert np.quantile(waits, 0.95) == pytest.approx(t95, rel=0.06)


@pytest.mark.parametrize(
    ("lam", "mu", "c"), [(-1.0, 1.0, 1), (1.0, 0.0, 1), (1.0, 1.0, 0), (1.0, 1.0, 1.5)]
)
def test_bad_input(lam: float, mu: float, c: float) -> None:
    with pytest.raises(ModelInputError):
        erlang_c(lam, mu, c)


def test_bad_quantile() -> None:
    with pytest.raises(ModelInputError):
        erlang_c_wait_quantile(erlang_c(1.0, 1.0, 2), 1.0)


# --- the queues × worker-counts grid and its reusable workspace ---------------------------

_GRID_FIELDS = ("utilization", "p_wait", "wait_mean_s", "response_mean_s", "queue_length_mean",
                "in_system_mean")


def _grid_inputs(seed: int, n: int, workers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """λ, μ columns with offered loads from 1e-3 to 1.5·max(c), some of them whole numbers
    (ρ = 1 exactly at c = A) and some zero."""
    rng = np.random.default_rng(seed)
    mu = rng.uniform(0.05, 40.0, size=(n, 1))
    load = np.exp(rng.uniform(math.log(1e-3), math.log(1.5 * float(workers.max())), size=(n, 1)))
    load[: n // 4] = np.ceil(load[: n // 4])
    load[-1] = 0.0
    return load * mu, mu


@pytest.mark.parametrize(
    ("seed", "workers"),
    [
        (1, np.arange(1, 65)),
        (2, np.array([7, 3, 3, 1, 40, 12, 12, 2])),  # unsorted, repeated
        (3, np.arange(30, 130)),
        (4, np.array([1, 2, 5000, 10_000])),
    ],
)
def test_grid_matches_the_elementwise_path(seed: int, workers: np.ndarray) -> None:
    lam, mu = _grid_inputs(seed, 257, workers)
    grid = erlang_c(lam, mu, workers)  # column × row: the grid sweep
    shape = (lam.shape[0], workers.size)
    # The same cells as full 2-D arrays take the general (elementwise) path.
    ref = erlang_c(np.broadcast_to(lam, shape).copy(), np.broadcast_to(mu, shape).copy(),
                   np.broadcast_to(workers, shape).copy())
    np.testing.assert_array_equal(grid.stable, ref.stable)
    assert grid.stable.any()
    assert not grid.stable.all()
    for name in _GRID_FIELDS:
        got, want = getattr(grid, name), getattr(ref, name)
        assert got.shape == shape
        assert not np.isnan(got).any(), name
        np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want), err_msg=name)
        finite = np.isfinite(want)
        # Relative agreement; below 1e-300 (subnormal P(wait) of tiny loads on many workers)
        # only the absolute difference of a few 1e-324 is meaningful.
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-12, atol=1e-300,
                                   err_msg=name)
    unstable = ~grid.stable
    np.testing.assert_array_equal(grid.p_wait[unstable], 1.0)  # exactly 1, not 1 − 1e-16
    assert np.all(np.isposinf(grid.wait_mean_s[unstable]))
    assert np.all(np.isposinf(grid.in_system_mean[unstable]))
    assert np.all(grid.p_wait[grid.stable] <= 1.0)


def test_grid_large_c_matches_direct_sum() -> None:
    c = np.array([9_000, 10_000])
    lam = np.array([[8_950.0], [9_990.0], [9_999.0]])
    r = erlang_c(lam, 1.0, c)
    assert bool(r.stable[0, 0])
    assert not bool(r.stable[1, 0])
    for i, j in [(0, 0), (0, 1), (1, 1), (2, 1)]:
        expect = erlang_c_direct(float(lam[i, 0]), int(c[j]))
        assert float(r.p_wait[i, j]) == pytest.approx(expect, rel=1e-7)


def test_workspace_gives_the_same_numbers_and_is_reused() -> None:
    workers = np.arange(1, 33)
    ws = ErlangCWorkspace(100, workers.size)
    lam1, mu1 = _grid_inputs(5, 100, workers)
    lam2, mu2 = _grid_inputs(6, 100, workers)
    fresh1 = erlang_c(lam1, mu1, workers)
    fresh2 = erlang_c(lam2, mu2, workers)
    r1 = erlang_c(lam1, mu1, workers, workspace=ws)
    for name in (*_GRID_FIELDS, "stable"):
        np.testing.assert_array_equal(getattr(r1, name), getattr(fresh1, name))
    r2 = erlang_c(lam2, mu2, workers, workspace=ws)  # overwrites r1's buffers
    for name in (*_GRID_FIELDS, "stable"):
        np.testing.assert_array_equal(getattr(r2, name), getattr(fresh2, name))
        assert np.shares_memory(getattr(r1, name), getattr(r2, name))
    assert r2.p_wait.shape == (100, 32)


def test_workspace_must_fit_the_call() -> None:
    ws = ErlangCWorkspace(3, 4)
    with pytest.raises(ModelInputError):
        erlang_c([[1.0], [2.0]], 1.0, [1, 2, 3, 4], workspace=ws)  # 2 queues, not 3
    with pytest.raises(ModelInputError):
        erlang_c(2.0, 1.0, [1, 2, 3, 4], workspace=ws)  # not the column × row layout
    with pytest.raises(ModelInputError):
        ErlangCWorkspace(0, 4)
