"""The worker count binds: items wait for a free worker (queueing).

Rows: M/M/c at the design demand, or the finite-key model M/M/c//K where the key count is
known (:mod:`models.whatif`). Ceiling: c·μ = c / E[S] at the current count. Named by the
capacity verdicts (more workers, a growing backlog) and by priority starvation (every
priority's demand shares the same workers).
"""

from __future__ import annotations

from models.bindings.registry import BindingLimit, Option, register
from models.verdicts.kinds import Kind

__all__ = ["LIMIT"]


def _ceiling(service_mean_s: float, workers: int | None) -> tuple[float, str] | None:
    if workers is None:
        return None
    return workers / service_mean_s, "workers ÷ mean work time (c·μ) at the current count"


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
    ceiling=_ceiling,
))
