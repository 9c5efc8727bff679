"""Fluid (deterministic, continuous) backlog model: the seed's queue lab.

Work is treated as a fluid: it arrives at a constant rate λ and drains at the total service
rate μ_total whenever there is backlog, so

    q(t) = max(0, q0 + (λ − μ_total) · t)

growing at λ − μ_total when λ > μ_total and reaching zero at t* = q0 / (μ_total − λ) when
μ_total > λ. This is the first-order (law of large numbers) approximation of any queue in
persistent imbalance; see e.g. Newell, *Applications of Queueing Theory* (1982), ch. 2. It has
no randomness and no key bookkeeping: no dirty set, Done, Forget, jitter or exponential retry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models.errors import ModelInputError


def _check_rate(name: str, value: float, *, allow_zero: bool = True) -> None:
    if not math.isfinite(value):
        raise ModelInputError(f"{name} must be a finite number, got {value!r}.")
    if value < 0 or (value == 0 and not allow_zero):
        bound = "non-negative" if allow_zero else "positive"
        raise ModelInputError(f"{name} must be {bound}, got {value!r}.")


@dataclass(frozen=True)
class FluidSummary:
    """Closed-form description of the fluid backlog from one starting point."""

    initial_backlog: float
    arrival_rate_per_s: float
    service_rate_per_s: float
    growth_per_s: float
    """dq/dt while the backlog is positive: λ − μ_total (negative means draining)."""
    clear_time_s: float | None
    """Time at which the backlog reaches zero; 0 if it starts empty and never grows;
    None when it never clears (λ ≥ μ_total with a positive backlog)."""


def fluid_backlog(
    initial_backlog: float,
    arrival_rate_per_s: float,
    service_rate_per_s: float,
    t_s: npt.ArrayLike,
) -> npt.NDArray[np.float64]:
    """q(t) = max(0, q0 + (λ − μ)·t), vectorized over ``t_s`` (seconds, ≥ 0)."""
    _validate(initial_backlog, arrival_rate_per_s, service_rate_per_s)
    t = np.asarray(t_s, dtype=np.float64)
    if np.any(~np.isfinite(t)) or np.any(t < 0):
        raise ModelInputError("times must be finite and non-negative.")
    out: npt.NDArray[np.float64] = np.maximum(
        0.0, initial_backlog + (arrival_rate_per_s - service_rate_per_s) * t
    )
    return out


def fluid_summary(
    initial_backlog: float, arrival_rate_per_s: float, service_rate_per_s: float
) -> FluidSummary:
    """Growth rate and clearance time: t* = q0 / (μ − λ) when μ > λ."""
    _validate(initial_backlog, arrival_rate_per_s, service_rate_per_s)
    growth = arrival_rate_per_s - service_rate_per_s
    clear: float | None
    if initial_backlog == 0 and growth <= 0:
        clear = 0.0
    elif growth < 0:
        clear = initial_backlog / -growth
    else:
        clear = None
    return FluidSummary(
        initial_backlog=initial_backlog,
        arrival_rate_per_s=arrival_rate_per_s,
        service_rate_per_s=service_rate_per_s,
        growth_per_s=growth,
        clear_time_s=clear,
    )


def fluid_trace(
    initial_backlog: float,
    arrival_rate_per_s: float,
    service_rate_per_s: float,
    until_s: float,
    step_s: float = 1.0,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The lab's step-by-step trace: times 0, step, 2·step, … ≤ until and the backlog at each.

    Times are built as ``k · step`` (not by repeated addition) so that t = 4 is exactly 4.
    """
    _check_rate("until", until_s)
    _check_rate("step", step_s, allow_zero=False)
    n = math.floor(until_s / step_s + 1e-9)
    if n > 1_000_000:
        raise ModelInputError("too many steps (more than 1,000,000); use a larger step.")
    t = np.arange(n + 1, dtype=np.float64) * step_s
    return t, fluid_backlog(initial_backlog, arrival_rate_per_s, service_rate_per_s, t)


def _validate(q0: float, lam: float, mu: float) -> None:
    _check_rate("initial backlog", q0)
    _check_rate("arrival rate", lam)
    _check_rate("service rate", mu)
