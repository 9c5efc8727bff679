"""What-if sweep: model choice, USL degradation, recommendation rules, bad input."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from models.errors import ModelInputError
from models.whatif import WhatIfInputs, whatif_sweep, whatif_tables


def erlang_c_direct(a: float, c: int) -> float:
    terms = [a**k / math.factorial(k) for k in range(c)]
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(terms) + top)


def test_mmc_rows_match_closed_form() -> None:
    res = whatif_sweep(WhatIfInputs(arrival_rate_per_s=5.0, service_mean_s=0.5, slo_wait_s=0.2))
    assert res.model.startswith("M/M/c")
    rows = {r.workers: r for r in res.rows}
    assert [r.workers for r in res.rows] == list(range(1, 17))
    assert not rows[2].stable
    assert rows[2].wait_mean_s is None
    assert rows[2].wait_p95_s is None
    a = 2.5  # λ·E[S]
    for c in (3, 4, 5, 8):
        pc = erlang_c_direct(a, c)
        assert rows[c].p_wait == pytest.approx(pc)
        assert rows[c].wait_mean_s == pytest.approx(pc / (2.0 * c - 5.0))
        decay = 2.0 * c - 5.0
        assert rows[c].p_wait_over_slo == pytest.approx(pc * math.exp(-decay * 0.2))
        p95 = max(0.0, math.log(pc / 0.05) / decay) if pc > 0.05 else 0.0
        assert rows[c].wait_p95_s == pytest.approx(p95)
    # c=4: P(wait>0.2) ≈ 0.18 > 0.05; c=5: ≈ 0.048 ≤ 0.05.
    assert res.recommendation.workers == 5
    assert "P(wait > 0.2 s)" in res.recommendation.reason


def test_unreachable_slo_reports_lowest_quantile_by_closed_form() -> None:
    # p90 criterion (not the precomputed p95 column), SLO far out of reach: the sweep names
    # the stable c with the lowest p90 wait, t_90 = ln(C/0.1)/(c·μ − λ) (λ = 5, μ = 2).
    inp = WhatIfInputs(5.0, 0.5, workers_max=4, slo_wait_s=0.001, slo_quantile=0.9)
    res = whatif_sweep(inp)
    p90 = {c: math.log(erlang_c_direct(2.5, c) / 0.1) / (2.0 * c - 5.0) for c in (3, 4)}
    assert p90[4] < p90[3]
    assert res.recommendation.workers == 4
    assert f"lowest p90 wait ({p90[4]:.3g} s)" in res.recommendation.reason
    (table,) = whatif_tables([inp])
    assert table.wait_quantile_s(4, 0.9) == pytest.approx(p90[4], rel=1e-10)
    p99 = math.log(erlang_c_direct(2.5, 3) / 0.01) / 1.0
    assert table.wait_quantile_s(3, 0.99) == pytest.approx(p99, rel=1e-10)
    assert table.wait_quantile_s(2, 0.9) is None  # unstable: λ = c·μ
    assert table.wait_quantile_s(5, 0.9) is None  # outside the swept range


def test_mean_criterion_when_no_quantile() -> None:
    res = whatif_sweep(WhatIfInputs(5.0, 0.5, slo_wait_s=0.2, slo_quantile=None))
    # Mean waits: c=3 → 0.70 s, c=4 → 0.107 s.
    assert res.recommendation.workers == 4
    assert "mean wait" in res.recommendation.reason


def test_usl_contention_makes_more_workers_worse() -> None:
    inputs = WhatIfInputs(5.0, 0.5, sigma=0.05, kappa=0.02, workers_max=16, slo_wait_s=0.05)
    res = whatif_sweep(inputs)
    waits = [(r.workers, r.wait_mean_s) for r in res.rows if r.stable]
    by_c = dict(waits)
    assert by_c[12] > by_c[8]  # wait rises with c past the USL peak
    # Capacity c·μ_c follows the USL curve, computed here by hand.
    for r in res.rows:
        slowdown = 1 + 0.05 * (r.workers - 1) + 0.02 * r.workers * (r.workers - 1)
        assert r.service_rate_per_worker_per_s == pytest.approx(2.0 / slowdown)
    assert not {r.workers: r for r in res.rows}[16].stable  # capacity fell below λ again
    # SLO unreachable: the stable c with the lowest p95 wait, with a reason.
    assert res.recommendation.workers is not None
    assert "cannot be met" in res.recommendation.reason


def test_unstable_everywhere() -> None:
    res = whatif_sweep(WhatIfInputs(100.0, 1.0))
    assert res.recommendation.workers is None
    assert "unstable at every worker count" in res.recommendation.reason
    assert all(r.wait_mean_s is None and r.p_wait is None for r in res.rows)
    assert res.rows[-1].throughput_per_s == pytest.approx(16.0)  # saturated at c·μ


def test_ggc_scales_mean_wait() -> None:
    base = whatif_sweep(WhatIfInputs(5.0, 0.5))
    bursty = whatif_sweep(WhatIfInputs(5.0, 0.5, service_cv2=3.0))
    assert bursty.model.startswith("G/G/c")
    for b, g in zip(base.rows, bursty.rows, strict=True):
        if b.stable:
            assert g.wait_mean_s == pytest.approx(2.0 * (b.wait_mean_s or 0.0))
            assert g.p_wait == pytest.approx(b.p_wait)


def test_finite_keys_bounded_where_mmc_is_unstable() -> None:
    res = whatif_sweep(WhatIfInputs(10.0, 1.0, keys=50, workers_max=8))
    assert res.model.startswith("M/M/c//K")
    assert all(r.stable for r in res.rows)
    assert all(r.wait_mean_s is not None and np.isfinite(r.wait_mean_s) for r in res.rows)
    waits = [r.wait_mean_s or 0.0 for r in res.rows]
    assert all(x >= y for x, y in itertools.pairwise(waits))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"arrival_rate_per_s": -1.0, "service_mean_s": 1.0},
        {"arrival_rate_per_s": 1.0, "service_mean_s": 0.0},
        {"arrival_rate_per_s": 1.0, "service_mean_s": 1.0, "workers_min": 5, "workers_max": 2},
        {"arrival_rate_per_s": 1.0, "service_mean_s": 1.0, "sigma": 0.1},
        {"arrival_rate_per_s": 1.0, "service_mean_s": 1.0, "sigma": 2.0, "kappa": 0.0},
        {"arrival_rate_per_s": 1.0, "service_mean_s": 1.0, "keys": 10, "service_cv2": 2.0},
        {"arrival_rate_per_s": float("nan"), "service_mean_s": 1.0},
    ],
)
def test_bad_input(kwargs: dict[str, float]) -> None:
    with pytest.raises(ModelInputError):
        whatif_sweep(WhatIfInputs(**kwargs))  # type: ignore[arg-type]
