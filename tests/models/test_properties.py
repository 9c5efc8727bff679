"""Property tests (hypothesis) for the Erlang C model."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from models.queueing import erlang_c

rates = st.floats(min_value=0.01, max_value=500.0, allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(lam=rates, mu=rates)
def test_more_workers_never_raise_wait(lam: float, mu: float) -> None:
    c = np.arange(1, 200)
    r = erlang_c(lam, mu, c)
    w = r.wait_mean_s  # +inf while unstable, then finite and decreasing
    assert not np.isnan(w).any()
    assert np.all(w >= 0)
    assert np.all(w[1:] <= w[:-1] * (1 + 1e-12) + 1e-300)
    assert np.all(np.diff(r.p_wait) <= 1e-12)


@settings(max_examples=60, deadline=None)
@given(c=st.integers(min_value=1, max_value=2000), mu=rates)
def test_wait_diverges_as_rho_approaches_one(c: int, mu: float) -> None:
    rho = np.array([0.9, 0.99, 0.999, 0.9999, 0.99999])
    r = erlang_c(rho * c * mu, mu, c)
    w = r.wait_mean_s
    assert np.all(np.diff(w) > 0)
    # Wq ≥ (C/(cμ))/(1 − ρ) and C → 1 as ρ → 1: the last wait is huge relative to 1/μ.
    assert w[-1] * mu > 1000.0 / c
    assert not erlang_c(float(c), 1.0, c).stable  # ρ = 1 exactly


@settings(max_examples=40, deadline=None)
@given(rho=st.floats(min_value=0.0, max_value=0.99999), c=st.integers(9000, 10_000))
def test_huge_worker_counts_are_finite(rho: float, c: int) -> None:
    r = erlang_c(rho * c, 1.0, c)
    assert bool(r.stable)
    for v in (r.p_wait, r.wait_mean_s, r.response_mean_s, r.queue_length_mean):
        assert np.isfinite(v)
        assert v >= 0
    assert 0.0 <= float(r.p_wait) <= 1.0
