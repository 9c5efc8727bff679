"""The typed data every source (Prometheus or the embedded demo) returns.

All rates are per second, all durations in seconds. A value that could not be measured is
``None`` and the reason is recorded in ``QueueSnapshot.missing[field]`` — never NaN, never 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import pandas as pd


@dataclass(frozen=True)
class QueueSnapshot:
    """One queue's signals over the window ending at the snapshot time."""

    queue: str
    labels: Mapping[str, str] = field(default_factory=dict)
    arrival_rate_per_s: float | None = None
    """rate(workqueue_adds_total): distinct adds after coalescing (raw events are invisible)."""
    throughput_per_s: float | None = None
    """rate(workqueue_work_duration_seconds_count): completed passes per second."""
    service_mean_s: float | None = None
    """Mean reconcile (work) duration: rate(_sum)/rate(_count)."""
    busy_workers: float | None = None
    """Time-average busy workers: rate(workqueue_work_duration_seconds_sum) (Little's law)."""
    workers: float | None = None
    """Worker count c: controller_runtime_max_concurrent_reconciles or the config."""
    utilization: float | None = None
    """busy_workers / workers."""
    depth_mean: float | None = None
    depth_current: float | None = None
    queue_wait_mean_s: float | None = None
    queue_wait_p50_s: float | None = None
    queue_wait_p95_s: float | None = None
    queue_wait_p99_s: float | None = None
    work_p50_s: float | None = None
    work_p95_s: float | None = None
    work_p99_s: float | None = None
    retries_per_s: float | None = None
    """rate(workqueue_retries_total): every delayed re-add, planned requeues included."""
    errors_per_s: float | None = None
    reconcile_results_per_s: Mapping[str, float] = field(default_factory=dict)
    """controller_runtime_reconcile_total by result: success, error, requeue, requeue_after."""
    api_calls_per_s: float | None = None
    """rest_client_requests_total of the process (job/pod) running this queue: shared by all
    controllers in that process, not this queue's own calls."""
    api_calls_by_class_per_s: Mapping[str, float] = field(default_factory=dict)
    """The same by code class: 2xx, 4xx, 409, 429, 5xx."""
    throttle_s_per_s: float | None = None
    """Seconds per second spent in the client-side rate limiter (rest_client_rate_limiter_...)."""
    external_effects_per_s: float | None = None
    unfinished_work_s: float | None = None
    unfinished_work_growth: float | None = None
    """deriv(workqueue_unfinished_work_seconds): ≈ number of in-flight items not completing."""
    longest_running_s: float | None = None
    littles_law_ratio: float | None = None
    """depth_mean / (arrival_rate_per_s · queue_wait_mean_s); ≈ 1 when the data are coherent."""
    missing: Mapping[str, str] = field(default_factory=dict)
    """field name -> why it is None."""


@dataclass(frozen=True)
class Snapshot:
    at: float
    """Unix seconds of the evaluation time."""
    window_s: float
    source: str
    """Where the data came from, credentials removed (a URL or 'demo')."""
    queues: Sequence[QueueSnapshot]
    warnings: Sequence[str] = ()


@dataclass(frozen=True)
class RangeData:
    """The same signals as time series.

    ``frame`` is long-format with columns ``queue`` (str), ``signal`` (str, a QueueSnapshot
    field name such as ``arrival_rate_per_s``), ``t`` (float unix seconds) and ``value``
    (float; missing points are absent rows, never NaN).
    """

    start: float
    end: float
    step_s: float
    source: str
    frame: pd.DataFrame
    warnings: Sequence[str] = ()


class Source(Protocol):
    """What the dashboard, CLI and reports read from: Prometheus or the embedded demo."""

    @property
    def name(self) -> str: ...

    def snapshot(self, at: float, window_s: float) -> Snapshot: ...

    def range(
        self, start: float, end: float, step_s: float, queues: Sequence[str] | None = None
    ) -> RangeData: ...
