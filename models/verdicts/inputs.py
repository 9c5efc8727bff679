"""What the advisor reads: one queue's signals, its history and its process's totals.

The snapshot is the measurement vocabulary's :class:`models.measurements.QueueSnapshot`
(the collectors fill it in); range data come as an optional
:class:`QueueHistory` of numpy arrays for the contention fit and the trend rules. Metric
semantics follow ``workqueue-metrics.md`` §6 (see :mod:`models.advisor`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models.errors import ModelInputError

__all__ = [
    "CORE_FIELDS",
    "HISTORY_FIELDS",
    "SATURATED_BUSY_SHARE",
    "FloatArray",
    "ProcessTotals",
    "QueueHistory",
    "histories_from_table",
]

FloatArray = npt.NDArray[np.float64]

SATURATED_BUSY_SHARE = 0.9
"""Busy workers ÷ workers from which every worker is taken: the time-average of busy workers
reaches c only when none ever idles, and within a 5-minute window a queue that is behind
still has moments between passes (0.9 is the saturation of the regime matrix's step
regimes, ``step_busy_share_min``)."""

CORE_FIELDS: tuple[str, ...] = ("arrival_rate_per_s", "service_mean_s", "workers")
"""Without these the capacity rules (add workers, backlog, over-provisioned) cannot run."""


HISTORY_FIELDS: tuple[str, ...] = (
    "arrival_rate_per_s",
    "throughput_per_s",
    "busy_workers",
    "workers",
    "service_mean_s",
    "depth",
    "queue_wait_mean_s",
    "unfinished_work_s",
    "longest_running_s",
    "errors_per_s",
    "retries_per_s",
    "api_calls_per_s",
    "api_409_per_s",
    "api_429_per_s",
    "throttle_s_per_s",
    "cpu_used_cores",
)
"""The series of a :class:`QueueHistory`, each aligned with ``t_s``."""


@dataclass(frozen=True, eq=False)
class QueueHistory:
    """One queue's signals over a time range, aligned on ``t_s`` (unix seconds, increasing).

    Each array has the length of ``t_s``; NaN marks a point that was not measured (this is the
    only place NaN is allowed, and nothing computed from it reaches a verdict as NaN).
    ``depth`` is the mean depth over each point's window; ``api_409_per_s`` and
    ``api_429_per_s`` are the process's conflict and throttled responses;
    ``cpu_used_cores`` the process's CPU (``rate(process_cpu_seconds_total)``, summed over the
    processes running the queue like the snapshot's).
    """

    t_s: FloatArray
    arrival_rate_per_s: FloatArray
    throughput_per_s: FloatArray
    busy_workers: FloatArray
    workers: FloatArray
    service_mean_s: FloatArray
    depth: FloatArray
    queue_wait_mean_s: FloatArray
    unfinished_work_s: FloatArray
    longest_running_s: FloatArray
    errors_per_s: FloatArray
    retries_per_s: FloatArray
    api_calls_per_s: FloatArray
    api_409_per_s: FloatArray
    api_429_per_s: FloatArray
    throttle_s_per_s: FloatArray
    cpu_used_cores: FloatArray

    def __post_init__(self) -> None:
        t = np.asarray(self.t_s, dtype=np.float64)
        if t.ndim != 1:
            raise ModelInputError("history times must be a one-dimensional array.")
        if not np.all(np.isfinite(t)):
            raise ModelInputError("history times must be finite numbers.")
        if t.size > 1 and np.any(np.diff(t) <= 0):
            raise ModelInputError("history times must be strictly increasing.")
        object.__setattr__(self, "t_s", t)
        for name in HISTORY_FIELDS:
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            if arr.shape != t.shape:
                raise ModelInputError(
                    f"history series {name} has {arr.size} points but there are {t.size} times."
                )
            if np.any(np.isinf(arr)):
                raise ModelInputError(f"history series {name} contains an infinite value.")
            object.__setattr__(self, name, arr)

    def saturated(self, workers: float | None = None) -> npt.NDArray[np.bool_]:
        """The points at which the queue was behind: every worker busy (≥
        :data:`SATURATED_BUSY_SHARE` of ``workers``, else of each point's own count) and
        items waiting (a mean depth of at least one). There the adds are a lower bound of the
        demand (client-go coalesces the keys already waiting), and a limit's throughput is
        its ceiling."""
        c = self.workers if workers is None else workers
        with np.errstate(invalid="ignore"):
            out: npt.NDArray[np.bool_] = (self.busy_workers >= SATURATED_BUSY_SHARE * c) \
                & (self.depth >= 1.0)
        return out

    @classmethod
    def from_columns(cls, t_s: npt.ArrayLike, **columns: npt.ArrayLike) -> QueueHistory:
        """Build from the series that exist; absent series become all-NaN (not measured)."""
        t = np.asarray(t_s, dtype=np.float64)
        unknown = sorted(set(columns) - set(HISTORY_FIELDS))
        if unknown:
            raise ModelInputError(f"unknown history series: {', '.join(unknown)}.")
        values = {
            name: np.asarray(columns[name], dtype=np.float64)
            if name in columns
            else np.full(t.shape, np.nan)
            for name in HISTORY_FIELDS
        }
        return cls(t_s=t, **values)

    @property
    def points(self) -> int:
        return int(self.t_s.size)

    def available(self, name: str) -> int:
        """How many measured (finite) points a series has."""
        return int(np.count_nonzero(np.isfinite(getattr(self, name))))


def histories_from_table(
    t_s: npt.ArrayLike, lengths: npt.ArrayLike, columns: Mapping[str, npt.ArrayLike]
) -> list[QueueHistory]:
    """Many histories from padded 2-D arrays, checked once for all of them.

    Row ``i`` of ``t_s`` (shape (N, L)) and of each column holds history ``i``'s first
    ``lengths[i]`` points (the rest of the row is ignored); absent series are all-NaN. The
    checks are those of :class:`QueueHistory` (finite, strictly increasing times; no infinite
    value), run as a few array operations instead of 16 small ones per history, which is what
    makes 500 histories cost a millisecond instead of tens of them.
    """
    t = np.asarray(t_s, dtype=np.float64)
    n = np.asarray(lengths, dtype=np.int64)
    if t.ndim != 2 or n.shape != t.shape[:1] or np.any(n < 0) or np.any(n > t.shape[1]):
        raise ModelInputError(
            "history tables need times of shape (histories, points) and one length per "
            "history, at most the number of points.")
    unknown = sorted(set(columns) - set(HISTORY_FIELDS))
    if unknown:
        raise ModelInputError(f"unknown history series: {', '.join(unknown)}.")
    used = np.arange(t.shape[1]) < n[:, np.newaxis]
    if not np.all(np.isfinite(t[used])):
        raise ModelInputError("history times must be finite numbers.")
    if t.shape[1] > 1 and np.any((np.diff(t, axis=1) <= 0) & used[:, 1:]):
        raise ModelInputError("history times must be strictly increasing.")
    values: dict[str, FloatArray] = {}
    for name in HISTORY_FIELDS:
        if name not in columns:
            continue
        arr = np.asarray(columns[name], dtype=np.float64)
        if arr.shape != t.shape:
            raise ModelInputError(
                f"history series {name} has shape {arr.shape} but the times have {t.shape}.")
        if np.any(np.isinf(arr[used])):
            raise ModelInputError(f"history series {name} contains an infinite value.")
        values[name] = arr
    out = []
    for i, k in enumerate(n.tolist()):
        h = object.__new__(QueueHistory)  # checked above, for every history at once
        object.__setattr__(h, "t_s", t[i, :k])
        for name in HISTORY_FIELDS:
            col = values.get(name)
            object.__setattr__(h, name, col[i, :k] if col is not None else np.full(k, np.nan))
        out.append(h)
    return out


@dataclass(frozen=True)
class ProcessTotals:
    """Sums over every queue of the process (job/instance or pod) running this queue.

    The API client (``rest_client_*``) and its rate limiter belong to the process, so API
    calls per reconcile, the limiter's share of busy time and the API ceiling are computed
    against these totals, not against one queue's figures."""

    throughput_per_s: float | None = None
    busy_workers: float | None = None
    arrival_rate_per_s: float | None = None
    queues: int = 1

    def __post_init__(self) -> None:
        for name in ("throughput_per_s", "busy_workers", "arrival_rate_per_s"):
            v = getattr(self, name)
            if v is not None and not (math.isfinite(v) and v >= 0):
                raise ModelInputError(f"process {name} must be a non-negative number, got {v!r}.")

