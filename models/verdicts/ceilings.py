"""Every limit's ceiling for one queue, and its headroom: built once per queue from the
evaluation context and kept on it, for the rules (contention at the demand's peaks, healthy
with its headroom) and for the plan (:attr:`models.advisor.Assessment.ceilings`).

The inputs each limit's measure reads (:class:`models.bindings.measured.CeilingInputs`) are
the context's figures; the one costly figure, the shared station of the pass times
(:func:`models.bindings.ceiling.fit_station`), is fitted only where the range's pass times
rise with throughput at all (:data:`STATION_GATE_T`): on a fleet most queues' do not, and the
fit costs milliseconds a queue.
"""

from __future__ import annotations

import numpy as np

from models.bindings.ceiling import StationFit, fit_station
from models.bindings.cpu import cores_available
from models.bindings.headroom import Headroom, headrooms, measure_all
from models.bindings.measured import CeilingInputs, MeasuredCeiling
from models.contention import UslFit
from models.verdicts.contention_reasons import duration_rise, limiter_history
from models.verdicts.context import Ctx, steady_points
from models.verdicts.verdict import num

__all__ = ["STATION_GATE_T", "ceiling_inputs", "ceilings", "queue_headroom"]

STATION_GATE_T = 1.0
"""The t statistic of the pass time's elasticity to throughput (log-log least squares over
the range) from which the shared station is fitted: under it the pass times do not rise with
load beyond noise and the fit would find nothing (on the recordings: t ≤ −0.1 for the queues
with nothing shared, 1.2–5.8 for those with a lock, a pool, a rate limit or a CPU; lock-b,
with its lock at 45 % at the peaks, 1.95)."""


def ceiling_inputs(ctx: Ctx) -> CeilingInputs:
    """The figures every limit's measure reads, from the context (module docstring)."""
    s, th, h = ctx.s, ctx.th, ctx.h
    proc = ctx.process_totals()
    calls = num(s.api_calls_per_s)
    px = proc.throughput_per_s
    per_pass = calls / px if calls is not None and calls > 0 and px else None
    classes = s.api_calls_by_class_per_s or {}
    share_429 = ((num(classes.get("429")) or 0.0) / calls
                 if calls is not None and calls > 0 else None)
    qps, qps_basis = ctx.client_qps, "configured" if ctx.client_qps is not None else None
    if qps is None:
        hist = limiter_history(ctx, proc)
        if hist is not None and hist[1] is not None:
            qps, qps_basis = hist[1], "the most calls/s it sent while its limiter held it"
    usl = ctx.usl if isinstance(ctx.usl, UslFit) and ctx.usl.r2 >= th.usl_r2_min else None
    station, note = _station(ctx)
    rise = duration_rise(ctx) if h is not None else None
    quiet = rise[4] if isinstance(rise, tuple) and rise[0] > 0 \
        and rise[1] >= STATION_GATE_T else None
    return CeilingInputs(
        workers=ctx.c, service_mean_s=ctx.svc, throughput_per_s=num(s.throughput_per_s),
        demand_peak_per_s=ctx.lam_design if ctx.lam_design is not None else ctx.lam,
        history=h, process=proc, thresholds=th,
        cores_available=cores_available(num(getattr(s, "cpu_gomaxprocs", None)),
                                        num(getattr(s, "cpu_limit_cores", None))),
        cores_used=num(getattr(s, "cpu_used_cores", None)),
        throttled_share=num(getattr(s, "cpu_throttled_share", None)),
        api_calls_per_pass=per_pass, client_qps=qps, client_qps_basis=qps_basis,
        limiter_read=num(s.throttle_s_per_s) is not None, share_429=share_429,
        apf_level=s.apf_priority_level, apf_seat_limit=num(s.apf_seat_limit),
        apf_seats_in_use=num(s.apf_seats_in_use_mean), usl=usl, station=station,
        station_note=note, pass_quiet_s=quiet)


def _station(ctx: Ctx) -> tuple[StationFit | None, str | None]:
    """The shared station of the range's pass times (without points with failures or
    re-adds), or why it was not fitted."""
    h = ctx.h
    if h is None:
        return None, None
    rise = duration_rise(ctx)
    if isinstance(rise, str) or rise is None:
        return None, None
    if rise[1] < STATION_GATE_T:
        return None, ("no shared limit shows in the pass times: they do not grow with "
                      "throughput over the range")
    steady = steady_points(ctx)
    return fit_station(np.where(steady, h.throughput_per_s, np.nan), h.service_mean_s,
                       h.workers), None


def ceilings(ctx: Ctx) -> tuple[MeasuredCeiling, ...]:
    """Every limit's measured ceiling for the queue (kept on the context)."""
    if ctx.ceilings is None:
        ctx.ceilings = measure_all(ceiling_inputs(ctx))
    return ctx.ceilings


def queue_headroom(ctx: Ctx) -> tuple[Headroom, ...]:
    """The headroom to each measured ceiling at the design demand, smallest first."""
    demand = ctx.lam_design if ctx.lam_design is not None else ctx.lam
    lam = ctx.h.arrival_rate_per_s if ctx.h is not None else None
    return headrooms(ceilings(ctx), demand, lam)
