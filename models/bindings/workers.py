"""The worker count binds: items wait for a free worker (queueing).

Rows: M/M/c at the design demand, or the finite-key model M/M/c//K where the key count is
known (:mod:`models.whatif`). Ceiling: c·μ = c / S at the current count, with S the pass time
the workers themselves take — S₀ of the shared resource the pass times show
(:func:`models.bindings.ceiling.fit_station`: what the passes wait for at a lock or a pool is
another limit's, and more workers do not shorten it), else the work time at the quietest
fifth of the range where the pass times rise with load (the CPU, a limiter), else the median
of the range's mean work times (a pass time that does not grow with load: the range's
typical one, not the last window's), else the work time now. Named by the capacity verdicts
(more workers, a growing backlog) and by priority starvation (every priority's demand shares
the same workers).
"""

from __future__ import annotations

import math

import numpy as np

from models.bindings.measured import CeilingInputs, MeasuredCeiling
from models.bindings.registry import BindingLimit, Option, register
from models.formatting import number_text
from models.verdicts.kinds import Kind

__all__ = ["LIMIT", "worker_pass_s"]


def worker_pass_s(i: CeilingInputs) -> tuple[float, str] | None:
    """The pass time the workers themselves take (module docstring) and where it came from."""
    st = i.station
    if st is not None and st.shown:
        return st.free_s, "the pass time without waiting for the shared resource"
    if i.pass_quiet_s is not None:
        return i.pass_quiet_s, "the work time at the quietest fifth of the range, as the " \
            "pass times rise with load"
    h = i.history
    if h is not None:
        svc = h.service_mean_s[np.isfinite(h.service_mean_s) & (h.service_mean_s > 0)]
        if svc.size >= i.thresholds.min_history_points:
            return float(np.median(svc)), "the range's median work time"
    if i.service_mean_s is not None and math.isfinite(i.service_mean_s) \
            and i.service_mean_s > 0:
        return i.service_mean_s, "the work time now"
    return None


def _measure(i: CeilingInputs) -> MeasuredCeiling | None:
    found = worker_pass_s(i)
    if i.workers is None or found is None:
        return None
    svc, where = found
    if not math.isfinite(i.workers / svc):
        return None
    return MeasuredCeiling(
        "workers", i.workers / svc, None, None,
        f"{i.workers} workers ÷ {number_text(svc, 's')} per pass ({where}): c·μ")


LIMIT = register(BindingLimit(
    name="workers",
    words="the worker count: items wait for a free worker (queueing)",
    label="workers",
    options=(
        Option("raise the worker count to the recommended one",
               "each worker adds concurrent API calls and memory; the API client's budget is "
               "shared by every controller of the process"),
        Option("shorten each pass (read from the informer cache, skip no-op writes)",
               "a code change, but it lowers the work time at every worker count"),
    ),
    rows="queueing",
    kinds=(Kind.ADD_WORKERS, Kind.BACKLOG_GROWING, Kind.PRIORITY_STARVATION),
    knobs=("workers",),
    measure=_measure,
))
