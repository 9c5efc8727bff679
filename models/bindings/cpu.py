"""The controller's own CPU as the binding limit.

A Go controller runs its goroutines on GOMAXPROCS cores (``go_sched_gomaxprocs_threads``; Go ≥
1.25 lowers it to the container's CPU limit, older Go uses the node's cores while the kernel's
CFS quota still throttles the container at its limit). When the process uses them all
(``rate(process_cpu_seconds_total)`` at the cores available) — or the kernel throttles the
container in many of its CFS periods (cAdvisor ``container_cpu_cfs_throttled_periods_total`` /
``container_cpu_cfs_periods_total``) — a pass's CPU part waits for a core (the run-queue wait
``go_sched_latencies_seconds``) and more workers only lengthen that wait: the CPU is a shared
station of as many servers as cores, held for the CPU seconds of each pass.

Ceiling (the utilization law, Denning and Buzen, "The operational analysis of queueing network
models", *Computing Surveys* 10, 1978: U = X·D): with C cores available and D CPU seconds per
pass, X* = C / D, where D = the process's CPU rate / its throughput (every controller of the
process shares the cores, so the ceiling is the process's, like the API client's). The rows
follow :mod:`models.bindings.ceiling` with that ceiling (a station of C servers, Seidmann's
reduction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from models.bindings.measured import CeilingInputs, MeasuredCeiling
from models.bindings.registry import BindingLimit, Option, register
from models.formatting import number_text, percent_text, sig

__all__ = [
    "CPU_BUSY_SHARE_MIN",
    "CPU_BUSY_SHARE_SHARED",
    "CPU_PEAK_QUANTILE",
    "CPU_THROTTLED_SHARE_MIN",
    "LIMIT",
    "CpuFinding",
    "CpuPeaks",
    "cores_available",
    "cpu_finding",
    "cpu_peaks",
]

CPU_BUSY_SHARE_MIN = 0.9
"""Cores in use / cores available at which the CPU binds: a station of C servers past 90 %
busy queues most arrivals once C is small (Erlang C at C = 2, ρ = 0.9: 85 % wait), and the
window's mean hides the busier instants; below it a pass rarely waits for a core."""

CPU_BUSY_SHARE_SHARED = 0.75
"""Cores in use / available at which the CPU is named as the shared resource the passes
already wait on — when the contention rule found that the passes stretch with load (work
time rising with throughput, a USL fit, a worker-count step): one core 75 % busy queues a
pass's CPU part three times its length on average (M/M/1), enough to be "something shared
fills up", and the window's mean at the snapshot can sit well under the range's peaks (a
sine load read 82–84 % on a core saturated at its peaks)."""

CPU_THROTTLED_SHARE_MIN = 0.25
"""Throttled CFS periods / all periods at which the container's CPU limit binds even when the
mean use is under it: the kernel stops the container for the rest of each 100 ms period in
which it used its quota, so a quarter of the periods throttled is a quarter of the time in
which every runnable goroutine waits — a mean under the limit is bursts over it."""


CPU_PEAK_QUANTILE = 0.9
"""The quantile of the range's CPU use the limit is judged at: a core busy only at the
demand's peaks binds there, and a window's mean hides it (issue 35: a CPU-bound controller
read 66 % of its one core in the last 30 s while its 30-s windows over the range sat at
90–96 %, a backlog of 1,000 items built at those peaks)."""


@dataclass(frozen=True)
class CpuPeaks:
    """The process's CPU over the range (:func:`cpu_peaks`)."""

    cores_used_peak: float
    """The :data:`CPU_PEAK_QUANTILE` of the range's CPU use (cores)."""
    busy_share_of_points: float | None
    """The share of the range's points at which the process used at least
    :data:`CPU_BUSY_SHARE_MIN` of its cores (None: the cores are not known)."""
    cpu_s_per_pass: float | None
    """CPU seconds per pass of the process at the busiest half of the points (its base CPU —
    GC, informers — weighs least there); None without the throughput."""
    cpu_s_per_pass_range: tuple[float, float] | None
    """Their quartiles."""
    points: int


def cpu_peaks(cores_used: np.ndarray, process_throughput_per_s: np.ndarray,
              cores: float | None, min_points: int) -> CpuPeaks | None:
    """The CPU of a range (:class:`CpuPeaks`); None with fewer than ``min_points`` points."""
    used = np.asarray(cores_used, dtype=np.float64)
    ok = np.isfinite(used) & (used >= 0)
    if np.count_nonzero(ok) < min_points:
        return None
    peak = float(np.quantile(used[ok], CPU_PEAK_QUANTILE))
    share = (float(np.mean(used[ok] >= CPU_BUSY_SHARE_MIN * cores))
             if cores is not None and cores > 0 else None)
    px = np.asarray(process_throughput_per_s, dtype=np.float64)
    both = ok & np.isfinite(px) & (px > 0)
    per: float | None = None
    spread: tuple[float, float] | None = None
    if np.count_nonzero(both) >= min_points:
        busy_half = both & (px >= np.median(px[both]))
        ratios = used[busy_half] / px[busy_half]
        per = float(np.median(ratios))
        q1, q3 = np.quantile(ratios, [0.25, 0.75]).tolist()
        spread = (q1, q3)
    good = per is not None and per > 0 and spread is not None and spread[0] > 0
    return CpuPeaks(peak, share, per if good else None, spread if good else None,
                    int(np.count_nonzero(ok)))


def _measure(i: CeilingInputs) -> MeasuredCeiling | None:
    """The CPU ceiling: the cores available ÷ the process's CPU seconds per pass, the queue's
    part of it; the share of the range's points at its cores (module docstring)."""
    h = i.history
    share = i.queue_share()
    cores = i.cores_available
    peaks = None
    if h is not None:
        # the process's passes at each point: this queue's, over its share of the process
        peaks = cpu_peaks(h.cpu_used_cores, h.throughput_per_s / share, cores,
                          int(i.thresholds.min_history_points))
    if cores is None:
        if peaks is None and i.cores_used is None:
            return None
        return MeasuredCeiling("cpu", None, None, None, "the cores available are not known (no "
                               "GOMAXPROCS or CPU limit series)", "process")
    if peaks is not None and peaks.cpu_s_per_pass is not None:
        per, spread = peaks.cpu_s_per_pass, peaks.cpu_s_per_pass_range
        where = "at the busiest half of the range's points"
    else:
        px = i.process.throughput_per_s
        if i.cores_used is None or not px or px <= 0 or i.cores_used <= 0:
            return MeasuredCeiling("cpu", None, None, None, "the process's CPU seconds per "
                                   "pass are not known (no CPU rate or no throughput)",
                                   "process")
        per, spread, where = i.cores_used / px, None, "now"
    ceiling = cores / per * share
    lo = hi = None
    if spread is not None:
        lo, hi = cores / spread[1] * share, cores / spread[0] * share
    part = "" if share >= 1.0 else f", this queue's {percent_text(share)} of the process's passes"
    return MeasuredCeiling(
        "cpu", ceiling, lo, hi,
        f"{cores:g} {'core' if cores == 1 else 'cores'} available ÷ {number_text(per, 's')} "
        f"of CPU per pass ({where}{part})",
        "process", peaks.busy_share_of_points if peaks is not None else None)


@dataclass(frozen=True)
class CpuFinding:
    """What the CPU signals of a queue's process say."""

    cores_used: float
    cores_available: float | None
    """min(GOMAXPROCS, the container's CPU limit), whichever are known."""
    busy_share: float | None
    """cores_used / cores_available."""
    throttled_share: float | None
    cpu_s_per_pass: float | None
    """The process's CPU seconds per completed pass (None without its throughput)."""
    ceiling_per_s: float | None
    """cores_available / cpu_s_per_pass: passes/s of the whole process (under throttling
    with the mean below the cores: the process's throughput, which the quota holds)."""
    sched_latency_mean_s: float | None
    binds: bool
    reason: str
    """The finding in words (why it binds, or why not)."""


def cores_available(gomaxprocs: float | None, limit_cores: float | None) -> float | None:
    """The cores the process can use at once: the smaller of GOMAXPROCS and the container's
    CPU limit, whichever are known and positive."""
    known = [v for v in (gomaxprocs, limit_cores)
             if v is not None and math.isfinite(v) and v > 0]
    return min(known) if known else None


def cpu_finding(cores_used: float | None, gomaxprocs: float | None,
                limit_cores: float | None, throttled_share: float | None,
                sched_latency_mean_s: float | None,
                process_throughput_per_s: float | None, *, stretching: bool = False,
                peaks: CpuPeaks | None = None) -> CpuFinding | None:
    """The CPU limit's detector and ceiling (module docstring); None without the CPU rate.
    ``stretching``: the passes were found to stretch with load (another contention reason):
    the CPU then binds from :data:`CPU_BUSY_SHARE_SHARED`. ``peaks``: the range's CPU
    (:func:`cpu_peaks`, read with the process's cores): the CPU is judged at its
    :data:`CPU_PEAK_QUANTILE` when that is above the window's, and its CPU per pass is the
    range's."""
    if peaks is None and (cores_used is None or not math.isfinite(cores_used)
                          or cores_used < 0):
        return None
    avail = cores_available(gomaxprocs, limit_cores)
    now = cores_used if cores_used is not None and math.isfinite(cores_used) \
        and cores_used >= 0 else None
    at_peak = peaks is not None and (now is None or peaks.cores_used_peak > now)
    used = peaks.cores_used_peak if at_peak and peaks is not None else (now or 0.0)
    busy = used / avail if avail else None
    if peaks is not None and peaks.cpu_s_per_pass is not None:
        per_pass: float | None = peaks.cpu_s_per_pass
    else:
        per_pass = (now / process_throughput_per_s if now is not None
                    and process_throughput_per_s and process_throughput_per_s > 0 else None)
    ceiling = avail / per_pass if avail and per_pass else None
    throttled = throttled_share if throttled_share is not None \
        and math.isfinite(throttled_share) else None
    full = busy is not None and (busy >= CPU_BUSY_SHARE_MIN
                                 or (stretching and busy >= CPU_BUSY_SHARE_SHARED))
    choked = throttled is not None and throttled >= CPU_THROTTLED_SHARE_MIN
    cores_used = used
    if full and busy is not None and at_peak and peaks is not None:
        why = (f"at its peaks (the {CPU_PEAK_QUANTILE * 100:.0f}th percentile of the range's "
               f"windows) the process uses {sig(used)} of its {avail:g} cores "
               f"({percent_text(busy)})"
               + (f", at {percent_text(CPU_BUSY_SHARE_MIN)} or more in "
                  f"{percent_text(peaks.busy_share_of_points)} of them"
                  if peaks.busy_share_of_points else ""))
    elif full and busy is not None:
        why = (f"the process uses {sig(cores_used)} of its {avail:g} cores "
               f"({percent_text(busy)})")
    elif choked and throttled is not None:
        why = (f"the kernel throttles the container in {percent_text(throttled)} of its CFS "
               "periods (its CPU limit)")
    elif busy is not None:
        why = (f"the process uses {percent_text(busy)} of its {avail:g} cores"
               + (f" at its peaks (the {CPU_PEAK_QUANTILE * 100:.0f}th percentile of the "
                  "range's windows)" if at_peak else "") + ": the CPU does not bind")
    else:
        why = "the cores available are not known (no GOMAXPROCS or CPU limit series)"
    if (full or choked) and per_pass is not None:
        why += f"; each pass costs {number_text(per_pass, 's')} of CPU"
    if (full or choked) and sched_latency_mean_s is not None:
        why += (f" and a runnable goroutine waits {number_text(sched_latency_mean_s, 's')} on "
                "average for a core")
    if choked and not full:
        # held at the quota under a mean below it: the cores ÷ CPU a pass would promise what
        # the quota does not give; what the process does while throttled is the ceiling
        ceiling = process_throughput_per_s
    return CpuFinding(cores_used, avail, busy, throttled, per_pass, ceiling,
                      sched_latency_mean_s, full or choked, why)


LIMIT = register(BindingLimit(
    name="cpu",
    words="the controller's CPU (every core the process may use is busy: passes wait for a "
          "core)",
    label="CPU",
    options=(
        Option("raise the container's CPU limit (resources.limits.cpu; Go ≥ 1.25 sets "
               "GOMAXPROCS from it, older Go needs GOMAXPROCS set to match), or run fewer "
               "controllers in the process",
               "more CPU per pod, or more pods: the quota is the pod's"),
        Option("lower the CPU of each pass (a CPU profile: pprof's /debug/pprof/profile; "
               "serialisation, deep copies, regexes, logging at high verbosity)",
               "a code change; it raises the ceiling for every worker count"),
        Option("do not add workers: they wait for a core",
               "none: the throughput is the cores'"),
    ),
    rows="ceiling",
    ceiling_cv2=1.0,
    headline="the controller's CPU binds (its cores are all busy)",
    reasons=frozenset({"cpu"}),
    precedence=45,
    knobs=("cpu",),
    measure=_measure,
))
"""Named by the contention reason ``cpu`` (:func:`cpu_finding` binds), after write conflicts
and before coherency: a process at its cores slows every pass whatever else they share."""
