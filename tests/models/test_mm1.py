"""M/M/1 closed forms (Kleinrock vol. 1 §3.2), values worked out by hand."""

from __future__ import annotations

import pytest

from models.errors import ModelInputError
from models.queueing import erlang_c, mm1


def test_seed_residence_is_one_second() -> None:
    r = mm1(2, 3)
    assert r.stable
    assert r.residence_mean_s == pytest.approx(1.0)
    assert r.wait_mean_s == pytest.approx(2 / 3)  # ρ/(μ − λ) = (2/3)/1
    assert r.in_system_mean == pytest.approx(2.0)  # ρ/(1 − ρ)
    assert r.in_queue_mean == pytest.approx(4 / 3)  # ρ²/(1 − ρ)


def test_unstable_has_no_waits() -> None:
    r = mm1(3, 3)
    assert not r.stable
    assert r.residence_mean_s is None
    assert r.wait_mean_s is None


def test_erlang_c_with_one_worker_is_mm1() -> None:
    r = erlang_c(2.0, 3.0, 1)
    assert float(r.p_wait) == pytest.approx(2 / 3)  # P(wait) = ρ for M/M/1
    assert float(r.response_mean_s) == pytest.approx(1.0)


@pytest.mark.parametrize(("lam", "mu"), [(-1.0, 3.0), (1.0, 0.0), (float("nan"), 1.0)])
def test_bad_input(lam: float, mu: float) -> None:
    with pytest.raises(ModelInputError):
        mm1(lam, mu)
