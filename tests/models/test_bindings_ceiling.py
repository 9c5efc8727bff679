"""The shared-ceiling rows model (models.bindings.ceiling) against independent values: a
brute-force Markov chain of the closed network, Erlang C and M/M/1 at its limits, and the
simulated mechanism (a lock, a rate limiter) at worker counts nothing was fitted on."""

from __future__ import annotations

import numpy as np
import pytest

from models.bindings.ceiling import CeilingModel, closed_throughput, fit_station
from models.errors import ModelInputError
from models.queueing import erlang_c
from models.simulate import simulate
from models.whatif import WhatIfInputs, whatif_tables


def _closed_chain_throughput(n: int, delay_s: float, demand_s: float) -> float:
    """The closed network as a birth-death chain over k = passes at the station: up-rate
    (n − k) / Z (each pass in its own work finishes at rate 1/Z), down-rate 1/D; X = P(k>0)/D."""
    w = [1.0]
    for k in range(1, n + 1):
        w.append(w[-1] * ((n - k + 1) / delay_s) * demand_s)
    p = np.array(w) / sum(w)
    return float((1.0 - p[0]) / demand_s)


@pytest.mark.parametrize(("delay_s", "demand_s"), [(0.04, 0.06), (0.5, 0.01), (0.01, 0.2)])
def test_mva_is_the_markov_chain_of_the_closed_network(delay_s: float, demand_s: float) -> None:
    x = closed_throughput(12, delay_s, demand_s)
    for n in range(1, 13):
        assert x[n - 1] == pytest.approx(_closed_chain_throughput(n, delay_s, demand_s),
                                         rel=1e-9)
    assert np.all(x <= 1.0 / demand_s + 1e-12)


def test_a_rate_limiter_never_passes_its_ceiling() -> None:
    x = closed_throughput(40, 0.149, 1 / 7.98, station_cv2=0.0)
    assert x.max() <= 7.98 + 1e-9
    assert x[-1] == pytest.approx(7.98, rel=1e-6)


def test_a_far_ceiling_is_erlang_c() -> None:
    # D → 0: every pass is its own work (Z = S₀), the flow-equivalent server is M/M/c
    model = CeilingModel(1e9, 0.1)
    c = np.arange(2, 12)
    cols = model.columns(35.0, c)
    ref = erlang_c(35.0, 10.0, c)
    stable = cols["stable"] != 0
    assert stable.tolist() == (c > 3.5).tolist()
    assert cols["wait_mean_s"][stable] == pytest.approx(np.asarray(ref.wait_mean_s)[stable],
                                                        rel=1e-6)
    assert cols["p_wait"][stable] == pytest.approx(np.asarray(ref.p_wait)[stable], rel=1e-6)


def test_one_worker_is_mm1_with_the_whole_pass() -> None:
    model = CeilingModel(1 / 0.06, 0.1)  # Z = 0.04, D = 0.06: one pass at a time takes 0.1 s
    cols = model.columns(6.0, np.array([1]))
    rho = 6.0 * 0.1
    assert cols["wait_mean_s"][0] == pytest.approx(rho * 0.1 / (1 - rho), rel=1e-9)
    assert cols["pass_mean_s"][0] == pytest.approx(0.1, rel=1e-9)


def test_demand_at_or_past_what_the_workers_can_do_grows_the_backlog() -> None:
    model = CeilingModel(10.0, 0.05)
    c = np.arange(1, 20)
    cols = model.columns(12.0, c)
    assert not cols["stable"].any()
    assert np.all(cols["throughput_per_s"] <= 10.0 + 1e-9)
    assert np.all(np.isinf(cols["wait_mean_s"]))


def test_the_sweep_obeys_the_ceiling_and_refuses_what_it_cannot_model() -> None:
    (table,) = whatif_tables([WhatIfInputs(9.5, 0.07, workers_min=1, workers_max=16,
                                           slo_wait_s=1.0, ceiling_per_s=9.0)])
    assert not table.stable.any()
    assert table.throughput_per_s.max() <= 9.0 + 1e-9
    assert not table.meets_slo(0.95).any()
    with pytest.raises(ModelInputError, match="not both"):
        whatif_tables([WhatIfInputs(5, 0.1, ceiling_per_s=9.0, sigma=0.1, kappa=0.01)])
    with pytest.raises(ModelInputError, match="key count"):
        whatif_tables([WhatIfInputs(5, 0.1, ceiling_per_s=9.0, keys=100)])
    with pytest.raises(ModelInputError, match="ceiling"):
        whatif_tables([WhatIfInputs(5, 0.1, ceiling_per_s=-1.0)])


@pytest.mark.parametrize(("workers", "wait_rel"), [(3, 0.25), (8, 0.15), (16, 0.15)])
def test_a_lock_matches_the_simulated_mechanism(workers: int, wait_rel: float) -> None:
    # 60 % of each exponential 0.1 s pass under one FIFO lock: X* = 1 / 0.06 s, S₀ = 0.1 s.
    # Measured (3 seeds × 40,000 s): c=3 wait 0.308 s vs 0.258–0.263 s simulated (the lock's
    # hold and the rest of the pass are one exponential draw, not independent as the
    # product-form network assumes: the pass is 3.6 % long, and at 80 % busy the wait
    # amplifies it); c=8 0.103 vs 0.094–0.106; c=16 0.0256 vs 0.0235–0.0258.
    sim = simulate(arrival_rate_per_s=14.0, keys=1_000_000, workers=workers,
                   service_mean_s=0.1, duration_s=30_000.0, seed=7, lock_fraction=0.6,
                   warmup_s=600.0)
    (table,) = whatif_tables([WhatIfInputs(14.0, 0.1, workers_min=workers,
                                           workers_max=workers, ceiling_per_s=1 / 0.06)])
    row = table.row(workers)
    assert row is not None
    assert row.stable
    assert row.utilization == pytest.approx(sim.utilization, rel=0.05)
    assert 1 / row.service_rate_per_worker_per_s == pytest.approx(sim.work_mean_s, rel=0.05)
    assert row.wait_mean_s == pytest.approx(sim.wait_mean_s, rel=wait_rel)


@pytest.mark.parametrize("workers", [2, 6])
def test_a_saturated_rate_limit_matches_the_simulated_mechanism(workers: int) -> None:
    # an external 12/s limit (a token bucket of burst 1) on 0.1 s passes, offered 20/s
    sim = simulate(arrival_rate_per_s=20.0, keys=1_000_000, workers=workers,
                   service_mean_s=0.1, duration_s=3_000.0, seed=3, dependency_qps=12.0,
                   dependency_burst=1, warmup_s=300.0)
    (table,) = whatif_tables([WhatIfInputs(20.0, 0.1, workers_min=1, workers_max=workers,
                                           ceiling_per_s=12.0, ceiling_cv2=0.0)])
    row = table.row(workers)
    assert row is not None
    assert not row.stable
    assert row.throughput_per_s == pytest.approx(sim.throughput_per_s, rel=0.1)


def _operating_points(rates: list[float], **mechanism: object) -> tuple[np.ndarray, ...]:
    """(throughput, pass time, busy workers, workers) of steady runs of the mechanism at each
    rate."""
    runs = [simulate(arrival_rate_per_s=r, keys=1_000_000, duration_s=2_000.0, seed=11,
                     warmup_s=200.0, **mechanism)  # type: ignore[arg-type]
            for r in rates]
    return (np.array([r.throughput_per_s for r in runs]),
            np.array([r.work_mean_s for r in runs]),
            np.array([r.busy_workers_mean for r in runs]),
            np.array([r.workers_mean for r in runs]))


def test_the_ceiling_is_fitted_from_how_pass_times_grew() -> None:
    # a lock held for 60 % of 0.1 s passes, 4 workers: X* = 16.7/s, S₀ = 0.1 s
    x, s, _, c = _operating_points([9.0, 10.0, 11.0, 12.5, 13.5, 14.0, 14.5], workers=4,
                                service_mean_s=0.1, lock_fraction=0.6)
    found = fit_station(x, s, c)
    assert found is not None
    assert found.shown
    assert found.ceiling_per_s is not None
    assert found.ceiling_per_s == pytest.approx(1 / 0.06, rel=0.10)
    assert found.lo_per_s <= found.ceiling_per_s
    assert found.hi_per_s is None or found.hi_per_s >= found.ceiling_per_s
    # What matters is the pass at a count the points never ran: 8 workers, 0.307–0.309 s
    # simulated (the 15 % for rows)
    (table,) = whatif_tables([WhatIfInputs(14.0, found.free_s, workers_min=8, workers_max=8,
                                           ceiling_per_s=found.ceiling_per_s)])
    row = table.row(8)
    assert row is not None
    assert 1 / row.service_rate_per_worker_per_s == pytest.approx(0.308, rel=0.15)


def test_a_webhook_of_two_slots_is_fitted() -> None:
    # one write per 50 ms pass through a webhook of 2 slots × 100 ms: 20 writes/s
    x, s, _, c = _operating_points([8.0, 11.0, 14.0, 16.0, 17.5, 18.5], workers=8,
                                service_mean_s=0.05, api_calls=1, api_writes=1,
                                api_latency_s=0.01, webhook_latency_s=0.1,
                                webhook_concurrency=2)
    found = fit_station(x, s, c)
    assert found is not None
    assert found.shown
    assert found.ceiling_per_s is not None
    # 22.4/s: a station of two slots is one of half the hold plus a delay (Seidmann's
    # reduction), exact only at its limits, and six points near it pull the fit up
    assert found.ceiling_per_s == pytest.approx(20.0, rel=0.15)


def test_a_lock_far_below_its_ceiling_is_placed_with_its_range() -> None:
    # the same lock at a quarter to half of its ceiling (4–8/s of 16.7/s), where a queue
    # keeps up and lives: the fit places it, and its interval holds the mechanism's ceiling
    x, s, _, c = _operating_points([4.0, 5.0, 6.0, 7.0, 8.0, 8.5], workers=4,
                                service_mean_s=0.1, lock_fraction=0.6)
    found = fit_station(x, s, c)
    assert found is not None
    assert found.shown
    assert found.ceiling_per_s is not None
    # 18.6/s (18.1–19.9): +12 %. The simulated pass holds the lock for 60 % of one
    # exponential time, so its own part and its lock part are one variable, where the
    # network takes them independent: far from the ceiling that tilts the fit a little high
    assert found.ceiling_per_s == pytest.approx(1 / 0.06, rel=0.15)
    assert found.lo_per_s <= 1.15 / 0.06


def test_independent_passes_show_no_ceiling_and_one_point_shows_nothing() -> None:
    x, s, _, c = _operating_points([10.0, 20.0, 30.0, 40.0, 50.0, 55.0], workers=8,
                                service_mean_s=0.1)
    found = fit_station(x, s, c)
    assert found is None or not found.shown
    if found is not None:  # what it rules out: no shared limit just over the busiest point
        assert found.lo_per_s > 55.0
    assert fit_station(np.full(10, 14.0), np.full(10, 0.2), np.full(10, 4.0)) is None
