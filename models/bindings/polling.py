"""A polling controller's period: the one it asked for against the one it gets.

controller-runtime's ``Result{RequeueAfter: P}`` makes the worker call ``Forget`` and
``AddAfter(key, P)`` at the end of the pass (``internal/controller/controller.go``,
``reconcileHandler``); the delaying queue adds the key back after P (``workqueue``
``delaying_queue.go``), where it waits for a worker like any other item. So one poll of a key
follows the last after

    T = S + P + W_q

(its pass, the requested delay, its wait in the queue): the effective period. The poll is
late by S + W_q; the pass time is the key's own, the wait is what more workers remove.

The keys in the loop follow from Little's law on it: K = X_poll · T, with X_poll the rate of
``result="requeue_after"``. With workers that keep up the same K keys would come every
S + P, an arrival rate λ* = K / (S + P) (plus the queue's other adds); the worker count that
brings the period back is the sweep's at λ* (:func:`restoring_demand`).

The requested P is not in any metric: it comes from the profile (``poll_periods``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["OVERRUN_SHARE_MIN", "PollOverrun", "poll_overrun"]

OVERRUN_SHARE_MIN = 0.1
"""The wait in the queue, as a share of the requested period, at which the polls are called
late: under a tenth of P a poll's lateness is within the jitter operators accept for a
timer (controller-runtime itself adds none), above it the workers set the period."""


@dataclass(frozen=True)
class PollOverrun:
    """The requested and effective poll periods of a queue."""

    requested_s: float
    effective_s: float
    """S + P + W_q."""
    late_s: float
    """effective − requested: the pass plus the queue wait."""
    wait_share: float
    """W_q / P: the part of the lateness more workers remove, against the period."""
    keys: float
    """K = X_poll · T: the keys in the loop (Little's law)."""
    demand_restored_per_s: float
    """λ* = K / (S + P) + the queue's other adds: the arrival rate with the period restored."""
    overrun: bool
    """wait_share ≥ :data:`OVERRUN_SHARE_MIN`."""


def poll_overrun(requested_s: float, polls_per_s: float, service_mean_s: float,
                 queue_wait_mean_s: float, adds_per_s: float) -> PollOverrun | None:
    """The poll period of a queue (module docstring); None where the inputs cannot give one
    (no polls, a period or a time that is not a positive number)."""
    values = (requested_s, polls_per_s, service_mean_s, queue_wait_mean_s, adds_per_s)
    if not all(math.isfinite(v) for v in values) or requested_s <= 0 or polls_per_s <= 0 \
            or service_mean_s <= 0 or queue_wait_mean_s < 0:
        return None
    effective = service_mean_s + requested_s + queue_wait_mean_s
    keys = polls_per_s * effective
    other = max(adds_per_s - polls_per_s, 0.0)
    restored = keys / (service_mean_s + requested_s) + other
    share = queue_wait_mean_s / requested_s
    return PollOverrun(requested_s, effective, effective - requested_s, share, keys, restored,
                       share >= OVERRUN_SHARE_MIN)
