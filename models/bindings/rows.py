"""The what-if inputs of a plan's rows: the sizing sweep, under the limit the plan names.

The advisor sizes a queue with M/M/c at the design demand (:func:`models.advisor.
sizing_inputs`). When the plan's binding limit is not the worker count, the rows of every
surface must follow that limit's model instead (:mod:`models.bindings`):

* a limit with a measured ceiling (:data:`models.bindings.CEILING_LIMITS`): the same sweep with
  the ceiling (:mod:`models.bindings.ceiling`) and the pass time without waiting for the shared
  resource, S₀ (:func:`free_pass_time`);
* ``coherency``: the USL fitted on the range — μ at one worker is the fit's γ (the throughput of
  one worker alone), stretched by 1 + σ(c − 1) + κc(c − 1);
* any other limit: the sweep as it is.

A ceiling of the whole process (the API client's token bucket is shared by every controller
of the process) leaves this queue what the other queues of the process do not use at their
current rate, and at least its share of the process's demand (a saturated FIFO limiter serves
its clients in proportion to their requests).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from models.bindings import CEILING_LIMITS
from models.bindings.measured import MeasuredCeiling
from models.bindings.registry import limits
from models.contention import UslFit
from models.formatting import number_text
from models.verdicts.inputs import QueueHistory
from models.whatif import WhatIfInputs, whatif_tables

__all__ = ["REFUTED_BASIS", "LimitSizing", "free_pass_time", "limit_prediction",
           "limit_sizing"]

NO_CEILING_BASIS = (
    "no ceiling could be measured ({why}): the rows are the worker-count model's, and past "
    "the shared limit's ceiling more workers will not deliver them")
"""The rows' basis under a ceiling-type limit whose ceiling is not known."""

REFUTED_BASIS = (
    "the estimated ceiling of {x} ({basis}) is below what the queue completes now ({now}): "
    "it is not the ceiling")
"""Why a ceiling below the measured throughput is not used (the queue does more than it)."""

REFUTE_TOLERANCE = 1.1
"""Throughput now ÷ ceiling up to which a ceiling is kept, raised to the throughput: a
saturated limit's ceiling is measured at its throughput, and a 30-s window of a token bucket
can run a few per cent over QPS ÷ calls (its burst); beyond 10 % the estimate is wrong."""

FREE_PASS_QUANTILE = 0.1
"""The quantile of the range's mean work times taken for the pass time without waiting: the
quietest tenth of the range is where the passes waited least for the shared resource, and a
quantile rather than the minimum is not set by one noisy point."""


@dataclass(frozen=True)
class LimitSizing:
    """The inputs of the rows, and how the limit was put in them."""

    inputs: WhatIfInputs
    ceiling_per_s: float | None
    """The ceiling the rows obey (this queue's part of it); None: no ceiling in the rows."""
    service_free_s: float | None
    """S₀, the pass time without waiting for the shared resource, when a ceiling applies."""
    basis: str
    """How the rows model the limit, in words."""
    ceiling_basis: str | None = None
    """How the ceiling was measured, when the rows took it from the limit's own measure (the
    contention verdict gave none)."""


def free_pass_time(service_now_s: float, evidence: Mapping[str, Any],
                   history: QueueHistory | None) -> float:
    """S₀: the smallest of the measured work time now, the duration at the quietest
    throughput of the contention rule (``duration_at_quiet_s``) and the
    :data:`FREE_PASS_QUANTILE` of the range's mean work times."""
    candidates = [service_now_s]
    quiet = evidence.get("duration_at_quiet_s")
    if isinstance(quiet, float) and math.isfinite(quiet) and quiet > 0:
        candidates.append(quiet)
    if history is not None:
        svc = history.service_mean_s[np.isfinite(history.service_mean_s)
                                     & (history.service_mean_s > 0)]
        if svc.size:
            candidates.append(float(np.quantile(svc, FREE_PASS_QUANTILE)))
    return min(candidates)


def limit_sizing(binding: str, sizing: WhatIfInputs, contention: Mapping[str, Any] | None,
                 history: QueueHistory | None, fit: UslFit | None,
                 throughput_now_per_s: float | None,
                 measured: MeasuredCeiling | None = None,
                 station_free_s: float | None = None) -> LimitSizing:
    """The sweep inputs under ``binding`` (module docstring). The ceiling is the contention
    verdict's, else the limit's own measure (``measured``, with the station's S₀
    ``station_free_s`` when the pass times gave it). A ceiling under what the queue completes
    now (``throughput_now_per_s``) by more than :data:`REFUTE_TOLERANCE` is wrong and not
    used; within it, it is raised to the throughput (the rows must reproduce the present). A
    key count is not modelled behind a ceiling: those rows drop it and say so."""
    ev: Mapping[str, Any] = contention or {}
    ceiling = ev.get("ceiling_reconciles_per_s")
    basis_text = str(ev.get("ceiling_basis") or "")
    own = False
    if binding in CEILING_LIMITS and not (isinstance(ceiling, float) and ceiling > 0) \
            and measured is not None and measured.ceiling_per_s is not None:
        ceiling, basis_text, own = measured.ceiling_per_s, measured.basis, True
    if binding in CEILING_LIMITS and isinstance(ceiling, float) and ceiling > 0:
        share = ceiling if own else _queue_share(ceiling, ev, throughput_now_per_s)
        now = throughput_now_per_s
        if now is not None and math.isfinite(now) and now > share:
            if now > REFUTE_TOLERANCE * share:
                why = REFUTED_BASIS.format(x=number_text(share, "/s"), basis=basis_text,
                                           now=number_text(now, "/s"))
                return LimitSizing(sizing, None, None, NO_CEILING_BASIS.format(why=why))
            share = now  # the queue does this much now: the ceiling is at least that
        free = station_free_s if own and station_free_s is not None \
            else free_pass_time(sizing.service_mean_s, ev, history)
        inputs = replace(sizing, service_mean_s=free, ceiling_per_s=share,
                         ceiling_cv2=CEILING_LIMITS[binding], sigma=None, kappa=None,
                         keys=None)
        part = ("" if share == ceiling else
                f" (this queue's part of the process's {number_text(ceiling, '/s')})"
                if share < ceiling
                else f" (the {number_text(ceiling, '/s')} measured, raised to what the queue "
                     "does now)")
        if sizing.keys is not None:
            part += "; the key count is not modelled behind a ceiling"
        return LimitSizing(
            inputs, share, free,
            f"the rows obey the ceiling of {number_text(share, '/s')}{part}: throughput never "
            f"above it, the pass time ({number_text(free, 's')} without waiting) stretched by "
            "the wait for the "
            "shared resource as the workers queue on it",
            basis_text if own else None)
    if binding in CEILING_LIMITS:
        why = (measured.basis if measured is not None else
               "the verdict gave none and the range's pass times show none")
        return LimitSizing(sizing, None, None, NO_CEILING_BASIS.format(why=why))
    if binding == "coherency" and fit is not None and fit.gamma > 0:
        inputs = replace(sizing, service_mean_s=1.0 / fit.gamma, sigma=fit.sigma,
                         kappa=fit.kappa)
        return LimitSizing(inputs, None, None,
                           "the rows follow the USL fitted on the range (throughput falls "
                           "past its peak)")
    lim = limits().get(binding)
    if lim is not None and lim.unmeasured is not None:
        # a limit the workers cannot lift whose ceiling no metric gives (one hot key): the
        # rows cannot be its model; they say what they are instead of reading as a remedy
        return LimitSizing(sizing, None, None, NO_CEILING_BASIS.format(why=lim.unmeasured)
                           .replace("the shared limit's ceiling", f"the {lim.label}'s ceiling"))
    return LimitSizing(sizing, None, None, "")


def _queue_share(ceiling: float, ev: Mapping[str, Any], throughput_now: float | None
                 ) -> float:
    """This queue's part of a process-wide ceiling: what the process's other queues leave
    at their current throughput, and at least the queue's share of the process's passes (a
    saturated FIFO limiter serves its clients in proportion to their requests)."""
    if ev.get("ceiling_scope") != "process":
        return ceiling
    queues = ev.get("process_queues")
    px = ev.get("process_reconciles_per_s")
    if not isinstance(queues, int) or queues <= 1 or throughput_now is None \
            or not isinstance(px, float) or px <= 0:
        return ceiling
    others = max(px - throughput_now, 0.0)
    proportional = ceiling * min(throughput_now / px, 1.0)
    return max(ceiling - others, proportional, 1e-9)


def limit_prediction(sizing: WhatIfInputs | None
                     ) -> Callable[[int, float, float], tuple[float, float | None]] | None:
    """The change check's prediction under the plan's limit (:func:`models.change.
    check_change`'s ``predict``): the rows' own model at the new count and the demand that
    came — the shared ceiling with the plan's pass time without waiting (the work time
    measured before the change already holds the wait for the resource), or the USL curve;
    None where the rows are plain M/M/c (the check's default)."""
    if sizing is None or (sizing.ceiling_per_s is None and sizing.sigma is None):
        return None
    model = sizing

    def predict(workers: int, demand_per_s: float, service_mean_s: float
                ) -> tuple[float, float | None]:
        del service_mean_s  # the limit's model carries its own pass time
        (table,) = whatif_tables([replace(model, arrival_rate_per_s=demand_per_s,
                                          workers_min=workers, workers_max=workers)])
        row = table.row(workers)
        assert row is not None
        return row.throughput_per_s, row.wait_mean_s

    return predict
