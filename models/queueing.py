"""Classical queueing formulas: M/M/1, M/M/c (Erlang C) and the G/G/c approximation.

Every result here is conditional on the model's stochastic assumptions (for M/M/·: Poisson
arrivals and exponentially distributed service times, FIFO, infinite waiting room).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from models.errors import ModelInputError


@dataclass(frozen=True)
class MM1Result:
    """M/M/1 steady state. Waits and lengths are None when the queue is unstable (λ ≥ μ)."""

    arrival_rate_per_s: float
    service_rate_per_s: float
    utilization: float
    stable: bool
    residence_mean_s: float | None
    """W = 1/(μ − λ): mean time in system (wait + service)."""
    wait_mean_s: float | None
    """Wq = ρ/(μ − λ)."""
    in_system_mean: float | None
    """L = ρ/(1 − ρ)."""
    in_queue_mean: float | None
    """Lq = ρ²/(1 − ρ)."""


def mm1(arrival_rate_per_s: float, service_rate_per_s: float) -> MM1Result:
    """M/M/1 (Kleinrock, *Queueing Systems* vol. 1, 1975, §3.2): ρ = λ/μ, W = 1/(μ − λ),
    Wq = ρ/(μ − λ), L = ρ/(1 − ρ), Lq = ρ²/(1 − ρ). Unstable (all None) when λ ≥ μ."""
    lam, mu = arrival_rate_per_s, service_rate_per_s
    if not (math.isfinite(lam) and lam >= 0):
        raise ModelInputError(f"arrival rate must be a finite non-negative number, got {lam!r}.")
    if not (math.isfinite(mu) and mu > 0):
        raise ModelInputError(f"service rate must be a finite positive number, got {mu!r}.")
    rho = lam / mu
    if lam >= mu:
        return MM1Result(lam, mu, rho, False, None, None, None, None)
    return MM1Result(
        arrival_rate_per_s=lam,
        service_rate_per_s=mu,
        utilization=rho,
        stable=True,
        residence_mean_s=1.0 / (mu - lam),
        wait_mean_s=rho / (mu - lam),
        in_system_mean=rho / (1.0 - rho),
        in_queue_mean=rho * rho / (1.0 - rho),
    )
