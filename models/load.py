"""Load and worker count over time, for the simulator: piecewise rates, a sine, a schedule.

A rate profile is an object with ``rate_at(t)`` (events/s at each time, vectorized), its
``peak_per_s`` (an upper bound, for thinning) and ``mean_per_s(T)`` (the average over
[0, T]). Arrivals of a time-varying Poisson process are drawn by thinning (Lewis & Shedler,
"Simulation of nonhomogeneous Poisson processes by thinning", 1979): a homogeneous process at
the peak rate, each point kept with probability rate(t) / peak.

Spec strings (the CLI's ``--rate-schedule`` and ``--workers-schedule``), times with units
(``90s``, ``5m``) or bare seconds:

* ``T0:R0,T1:R1,…`` — rate R_i from time T_i (T0 must be 0), e.g. ``0:10,10m:40,20m:10``;
* ``sine:MEAN:AMPLITUDE:PERIOD`` — MEAN·(1 + AMPLITUDE·sin(2πt/PERIOD)), 0 ≤ AMPLITUDE ≤ 1;
* workers: ``T0:C0,T1:C1,…`` — C_i workers from T_i (T0 = 0).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from models.errors import ModelInputError

__all__ = [
    "PiecewiseRate",
    "RateProfile",
    "SineRate",
    "WorkerSchedule",
    "parse_rate_schedule",
    "parse_workers_schedule",
]

FloatArray = npt.NDArray[np.float64]
MAX_STEPS = 1000
"""Pieces a schedule may have (a spec is typed by a person; more is a mistake or an attack)."""


class RateProfile(Protocol):
    """Arrival rate over time."""

    @property
    def peak_per_s(self) -> float: ...

    def rate_at(self, t_s: FloatArray) -> FloatArray: ...

    def mean_per_s(self, duration_s: float) -> float: ...


def _finite(name: str, v: float, low: float = 0.0) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < low:
        raise ModelInputError(f"{name} must be a finite number ≥ {low:g}, got {v!r}.")
    return float(v)


def _steps(times: tuple[float, ...], what: str) -> None:
    if not times or times[0] != 0:
        raise ModelInputError(f"a {what} schedule must start at time 0.")
    if len(times) > MAX_STEPS:
        raise ModelInputError(f"a {what} schedule may have at most {MAX_STEPS} steps.")
    if any(b <= a for a, b in itertools.pairwise(times)):
        raise ModelInputError(f"the times of a {what} schedule must increase.")


@dataclass(frozen=True)
class PiecewiseRate:
    """``rates_per_s[i]`` from ``times_s[i]`` until the next time (the last one forever)."""

    times_s: tuple[float, ...]
    rates_per_s: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.times_s) != len(self.rates_per_s):
            raise ModelInputError("a rate schedule needs one rate per time.")
        for v in self.times_s:
            _finite("a schedule time", v)
        for v in self.rates_per_s:
            _finite("a scheduled rate", v)
        _steps(self.times_s, "rate")

    @property
    def peak_per_s(self) -> float:
        return max(self.rates_per_s)

    def rate_at(self, t_s: FloatArray) -> FloatArray:
        i = np.searchsorted(np.asarray(self.times_s), t_s, side="right") - 1
        out: FloatArray = np.asarray(self.rates_per_s, dtype=np.float64)[np.maximum(i, 0)]
        return out

    def mean_per_s(self, duration_s: float) -> float:
        edges = [*(min(t, duration_s) for t in self.times_s), duration_s]
        area = sum(r * (b - a) for r, a, b in zip(self.rates_per_s, edges, edges[1:],
                                                  strict=False))
        return area / duration_s


@dataclass(frozen=True)
class SineRate:
    """mean·(1 + amplitude·sin(2π t / period + phase))."""

    mean: float
    amplitude: float
    period_s: float
    phase: float = 0.0

    def __post_init__(self) -> None:
        _finite("the sine's mean rate", self.mean)
        if not 0 <= _finite("the sine's amplitude", self.amplitude) <= 1:
            raise ModelInputError(f"the sine's amplitude must be within 0…1, got "
                                  f"{self.amplitude!r}.")
        if _finite("the sine's period", self.period_s) <= 0:
            raise ModelInputError("the sine's period must be positive.")
        _finite("the sine's phase", self.phase, low=-math.inf)

    @property
    def peak_per_s(self) -> float:
        return self.mean * (1.0 + self.amplitude)

    def rate_at(self, t_s: FloatArray) -> FloatArray:
        out: FloatArray = self.mean * (
            1.0 + self.amplitude * np.sin(2.0 * np.pi * t_s / self.period_s + self.phase))
        return out

    def mean_per_s(self, duration_s: float) -> float:
        w = 2.0 * math.pi / self.period_s
        integral = (math.cos(self.phase) - math.cos(w * duration_s + self.phase)) / w
        return self.mean * (1.0 + self.amplitude * integral / duration_s)


@dataclass(frozen=True)
class WorkerSchedule:
    """``workers[i]`` workers from ``times_s[i]`` (the first time is 0)."""

    times_s: tuple[float, ...]
    workers: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.times_s) != len(self.workers):
            raise ModelInputError("a workers schedule needs one worker count per time.")
        for v in self.times_s:
            _finite("a schedule time", v)
        for c in self.workers:
            if isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= 10_000:
                raise ModelInputError(f"a scheduled worker count must be a whole number "
                                      f"within 1…10000, got {c!r}.")
        _steps(self.times_s, "workers")

    def at(self, t_s: FloatArray) -> FloatArray:
        i = np.searchsorted(np.asarray(self.times_s), t_s, side="right") - 1
        out: FloatArray = np.asarray(self.workers, dtype=np.float64)[np.maximum(i, 0)]
        return out

    def changes(self) -> tuple[tuple[float, int], ...]:
        """(time, +1 or −1) for every worker that joins or leaves after t = 0."""
        out: list[tuple[float, int]] = []
        for i in range(1, len(self.workers)):
            delta = self.workers[i] - self.workers[i - 1]
            out.extend([(self.times_s[i], 1 if delta > 0 else -1)] * abs(delta))
        return tuple(out)

    def mean(self, start_s: float, end_s: float) -> float:
        """The time-average worker count over [start, end]."""
        edges = [*(min(max(t, start_s), end_s) for t in self.times_s), end_s]
        area = sum(c * (b - a) for c, a, b in zip(self.workers, edges, edges[1:], strict=False))
        return area / (end_s - start_s)


def _pairs(spec: str, what: str, duration: Callable[[str], float]) -> list[tuple[float, str]]:
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if not parts:
        raise ModelInputError(f"empty {what} schedule.")
    if len(parts) > MAX_STEPS:
        raise ModelInputError(f"a {what} schedule may have at most {MAX_STEPS} steps.")
    out = []
    for p in parts:
        when, sep, value = p.rpartition(":")
        if not sep or not when:
            raise ModelInputError(f"{what} schedule step {p!r} is not TIME:VALUE.")
        try:
            out.append((duration(when), value))
        except ValueError as exc:
            raise ModelInputError(f"{what} schedule step {p!r}: {exc}") from None
    return out


def _number(text: str, what: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ModelInputError(f"{what} {text!r} is not a number.") from None
    return v


def parse_rate_schedule(spec: str, duration: Callable[[str], float]) -> RateProfile:
    """A :class:`RateProfile` from ``T:R,…`` or ``sine:MEAN:AMPLITUDE:PERIOD``;
    ``duration`` parses a time (with units) into seconds, raising ValueError."""
    text = spec.strip()
    if text.startswith("sine:"):
        bits = text.split(":")
        if len(bits) != 4:
            raise ModelInputError(f"rate schedule {spec!r}: use sine:MEAN:AMPLITUDE:PERIOD.")
        try:
            period = duration(bits[3])
        except ValueError as exc:
            raise ModelInputError(f"rate schedule {spec!r}: {exc}") from None
        return SineRate(_number(bits[1], "the sine's mean"),
                        _number(bits[2], "the sine's amplitude"), period)
    pairs = _pairs(text, "rate", duration)
    return PiecewiseRate(tuple(t for t, _ in pairs),
                         tuple(_number(v, "a scheduled rate") for _, v in pairs))


def parse_workers_schedule(spec: str, duration: Callable[[str], float]) -> WorkerSchedule:
    """A :class:`WorkerSchedule` from ``T:C,…``."""
    pairs = _pairs(spec.strip(), "workers", duration)
    counts = []
    for _, v in pairs:
        try:
            counts.append(int(v))
        except ValueError:
            raise ModelInputError(f"worker count {v!r} is not a whole number.") from None
    return WorkerSchedule(tuple(t for t, _ in pairs), tuple(counts))
