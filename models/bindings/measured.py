"""What a binding limit's ceiling is measured from, and what the measurement gives.

Each limit of :mod:`models.bindings` that can have a ceiling declares a measure
(:attr:`models.bindings.registry.BindingLimit.measure`): a function of one queue's
:class:`CeilingInputs` — the signals of its own mechanism — to a :class:`MeasuredCeiling`: the
most items/s the limit allows with its range, how it was measured, or, when it cannot be
measured here, why not and no number. A ceiling is never what the queue completes now: a
queue that keeps up completes its demand, which says nothing about where a limit lies
(issue 35: the demo's certificate queue had "ceiling = what it completes now").

:mod:`models.bindings.headroom` compares each measured ceiling with the queue's peak demand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from models.bindings.ceiling import StationFit
from models.contention import UslFit
from models.verdicts.inputs import ProcessTotals, QueueHistory
from models.verdicts.thresholds import AdvisorThresholds

__all__ = ["CeilingInputs", "MeasuredCeiling", "Scope"]

Scope = Literal["queue", "process"]
"""Whose ceiling it is: the queue's own, or its process's (shared by every controller of the
process: the API client's token bucket, the cores)."""


@dataclass(frozen=True)
class MeasuredCeiling:
    """One limit's ceiling as measured for one queue (module docstring)."""

    limit: str
    ceiling_per_s: float | None
    """Most items/s the limit allows (for this queue: a process-wide ceiling is the queue's
    part of it); None when it could not be measured here (:attr:`basis` says why)."""
    lo_per_s: float | None
    """The lowest ceiling the measurement allows (None: no range is known)."""
    hi_per_s: float | None
    """The highest ceiling the measurement allows (None: no range is known, or unbounded)."""
    basis: str
    """How it was measured, in words — or why it could not be."""
    scope: Scope = "queue"
    binds_share: float | None = None
    """The share of the range's points at which the limit was at its ceiling (the demand's
    peaks), where the limit's own signal tells (a core at its cores, a key at its serial
    rate); None where it does not."""
    service_free_s: float | None = None
    """The pass time without waiting for this limit, where its measure found it (S₀ of the
    shared station the pass times show): the rows' pass time under the ceiling."""

    def __post_init__(self) -> None:
        for name in ("ceiling_per_s", "lo_per_s", "hi_per_s"):
            v = getattr(self, name)
            if v is not None and not (math.isfinite(v) and v > 0):
                raise ValueError(f"{self.limit}: {name} must be a positive number, got {v!r}")

    @property
    def measured(self) -> bool:
        return self.ceiling_per_s is not None


@dataclass(frozen=True)
class CeilingInputs:
    """One queue's figures a limit's measure reads (each measure reads its own).

    Figures are SI: items/s, seconds, cores; None where not measured."""

    workers: int | None
    service_mean_s: float | None
    """The queue's mean work time now."""
    throughput_per_s: float | None
    """The queue's throughput now."""
    demand_peak_per_s: float | None
    """The design demand: max(λ now, the design quantile of λ over the range)."""
    history: QueueHistory | None
    process: ProcessTotals
    thresholds: AdvisorThresholds
    cores_available: float | None = None
    """min(GOMAXPROCS, the container's CPU limit) of the queue's process."""
    cores_used: float | None = None
    """The process's CPU now (cores)."""
    throttled_share: float | None = None
    """The share of the container's CFS periods the kernel throttled."""
    api_calls_per_pass: float | None = None
    """The process's API calls per completed pass."""
    client_qps: float | None = None
    """The client's token bucket QPS: configured, or measured while it throttled."""
    client_qps_basis: str | None = None
    limiter_read: bool = False
    """Whether the client's rate-limiter wait is exported (``rest_client_rate_limiter_
    duration_seconds``)."""
    share_429: float | None = None
    """The share of the process's API calls answered 429."""
    apf_level: str | None = None
    apf_seat_limit: float | None = None
    apf_seats_in_use: float | None = None
    usl: UslFit | None = None
    """The USL fit of the range, when one was made and passed the gate."""
    station: StationFit | None = None
    """The shared resource that best explains how the range's pass times grew with load
    (:func:`models.bindings.ceiling.fit_station`), when it was fitted."""
    station_note: str | None = None
    """Why no station was fitted, when it was not."""
    pass_quiet_s: float | None = None
    """The mean work time at the quietest fifth of the range's points, when the pass times
    rise with throughput (something the passes wait for fills with load)."""

    def queue_share(self) -> float:
        """This queue's part of its process's passes now (1 when alone or not known)."""
        px, x = self.process.throughput_per_s, self.throughput_per_s
        if self.process.queues <= 1 or not px or x is None or px <= 0:
            return 1.0
        return min(max(x / px, 0.0), 1.0)
