"""Fluid (deterministic, continuous) backlog model: the seed's queue lab.

Work is treated as a fluid: it arrives at a constant rate λ and drains at the total service
rate μ_total whenever there is backlog, so

    q(t) = max(0, q0 + (λ − μ_total) · t)

growing at λ − μ_total when λ > μ_total and reaching zero at t* = q0 / (μ_total − λ) when
μ_total > λ. This is the first-order (law of large numbers) approximation of any queue in
persistent imbalance; see e.g. Newell, *Applications of Queueing Theory* (1982), ch. 2. It has
no randomness and no key bookkeeping: no dirty set, Done, Forget, jitter or exponential retry.

Limits (:mod:`models.limits`, shared by the page and the CLI): at most
:data:`~models.limits.FLUID_MAX_STEPS` steps in a trace or points in a drawn line, and λ, μ,
q0 at most :data:`~models.limits.FLUID_MAX_VALUE` (:func:`check_lab_inputs`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models.errors import ModelInputError
from models.limits import FLUID_MAX_STEPS, FLUID_MAX_VALUE


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


def check_lab_inputs(
    initial_backlog: float, arrival_rate_per_s: float, service_rate_per_s: float
) -> None:
    """The lab's inputs are finite, non-negative and at most
    :data:`~models.limits.FLUID_MAX_VALUE` (the reason is stated there)."""
    _validate(initial_backlog, arrival_rate_per_s, service_rate_per_s)
    for name, value in (("initial backlog", initial_backlog), ("arrival rate", arrival_rate_per_s),
                        ("service rate", service_rate_per_s)):
        if value > FLUID_MAX_VALUE:
            raise ModelInputError(
                f"The {name} must be at most {FLUID_MAX_VALUE:.0e} (the lab's limit), "
                f"got {value:.6g}."
            )


def default_step(until_s: float) -> float:
    """The trace step when none is given: 1, or the smallest of 2, 5, 10, 20, 50, … that
    keeps the trace within :data:`~models.limits.FLUID_MAX_STEPS` steps of ``until_s``."""
    _check_rate("until", until_s)
    if until_s <= FLUID_MAX_STEPS:
        return 1.0
    decade = max(0, math.floor(math.log10(until_s / FLUID_MAX_STEPS)))
    while True:
        for mantissa in (1.0, 2.0, 5.0):
            step = mantissa * 10.0**decade
            if math.floor(until_s / step + 1e-9) <= FLUID_MAX_STEPS:
                return step
        decade += 1


def fluid_trace(
    initial_backlog: float,
    arrival_rate_per_s: float,
    service_rate_per_s: float,
    until_s: float,
    step_s: float = 1.0,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The lab's step-by-step trace: times 0, step, 2·step, … ≤ until and the backlog at each.

    Times are built as ``k · step`` (not by repeated addition) so that t = 4 is exactly 4. At
    most :data:`~models.limits.FLUID_MAX_STEPS` steps; inputs within
    :func:`check_lab_inputs`.
    """
    check_lab_inputs(initial_backlog, arrival_rate_per_s, service_rate_per_s)
    _check_rate("until", until_s)
    _check_rate("step", step_s, allow_zero=False)
    ratio = until_s / step_s  # inf when it overflows: compared before any int conversion
    if not ratio <= FLUID_MAX_STEPS + 1 or (n := math.floor(ratio + 1e-9)) > FLUID_MAX_STEPS:
        raise ModelInputError(
            f"too many steps ({until_s:.6g} / {step_s:.6g} is more than {FLUID_MAX_STEPS:,}, "
            "the limit); use a larger step."
        )
    t = np.arange(n + 1, dtype=np.float64) * step_s
    return t, fluid_backlog(initial_backlog, arrival_rate_per_s, service_rate_per_s, t)


def fluid_line(
    initial_backlog: float,
    arrival_rate_per_s: float,
    service_rate_per_s: float,
    span_s: float,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The prediction q(τ) = max(0, q0 + (λ − μ)·τ) drawn over 0 ≤ τ ≤ ``span_s``, in at most
    :data:`~models.limits.FLUID_MAX_STEPS` + 2 points: one per time unit (τ = 0, 1, …,
    ⌈span⌉) when that is within the limit, else the limit's number of evenly spaced points plus
    the clearing time. The line drawn through them is q(τ) exactly either way: q is linear on
    each side of the clearing time, so its points there and at the ends fix it."""
    _validate(initial_backlog, arrival_rate_per_s, service_rate_per_s)
    _check_rate("span", span_s)
    end = math.ceil(span_s)
    if end <= FLUID_MAX_STEPS:
        tau = np.arange(end + 1, dtype=np.float64)
    else:
        tau = np.linspace(0.0, float(end), FLUID_MAX_STEPS + 1)
        clear = fluid_summary(initial_backlog, arrival_rate_per_s, service_rate_per_s)
        if clear.clear_time_s is not None and 0 < clear.clear_time_s < end:
            tau = np.unique(np.append(tau, clear.clear_time_s))
    return tau, fluid_backlog(initial_backlog, arrival_rate_per_s, service_rate_per_s, tau)


def _validate(q0: float, lam: float, mu: float) -> None:
    _check_rate("initial backlog", q0)
    _check_rate("arrival rate", lam)
    _check_rate("service rate", mu)
