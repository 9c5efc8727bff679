"""The measurement vocabulary: one queue's signals over a window (:class:`QueueSnapshot`), a
fleet's at one time (:class:`Snapshot`), and the same signals as time series
(:class:`RangeData`) — what the collectors fill in and the models read.

All rates are per second, all durations in seconds. A value that could not be measured is
``None`` and the reason is recorded in ``QueueSnapshot.missing[field]`` — never NaN, never 0.
Plain frozen dataclasses and numpy arrays: no I/O (``RangeData.frame`` imports pandas only
when asked for the long form).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from models.signals import MIN_COVERAGE

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["QueueSnapshot", "RangeData", "Snapshot"]


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
    depth_while_idle: float | None = None
    """depth gauge × [active workers < max], paired at each instant and averaged over the
    instants (the zeros of busy instants included): client-go hands a queued key to an idle
    worker at once, so depth with a worker free is a key waiting behind its own pass."""
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
    api_request_s_per_s: float | None = None
    """rate(rest_client_request_duration_seconds_sum) of the process: seconds per second its
    workers spend waiting on API responses (opt-in in controller-runtime)."""
    api_retries_per_s: float | None = None
    """rate(rest_client_request_retries_total) of the process: attempts 2…N (client-go
    retries a 429 or 5xx that carries Retry-After, sleeping inside the pass)."""
    api_writes_per_s: float | None = None
    """rate(rest_client_requests_total{method=~"POST|PUT|PATCH|DELETE|APPLY"}) of the
    process: the calls that pass admission webhooks and can conflict."""
    served_webhook_s_per_s: float | None = None
    """rate(controller_runtime_webhook_latency_seconds_sum) of the process: seconds per
    second its own webhook server spends answering the API server (admission and
    conversion webhooks it serves; a slow one slows every write of the resources it
    guards, in every client)."""
    served_webhook_requests_per_s: float | None = None
    served_webhook_in_flight: float | None = None
    reconcile_panics_per_s: float | None = None
    reconcile_timeouts_per_s: float | None = None
    terminal_errors_per_s: float | None = None
    """controller_runtime_terminal_reconcile_errors_total: errors the controller will not
    retry (reconcile.TerminalError)."""
    depth_by_priority: Mapping[str, float] = field(default_factory=dict)
    """workqueue_depth by ``priority`` (controller-runtime's priority queue; empty for a
    plain queue, whose series have ``priority=""``)."""
    depth_min_by_priority: Mapping[str, float] = field(default_factory=dict)
    """The smallest depth of each priority over the window: a low priority above 0 all along
    had items waiting the whole window."""
    priority_series: float | None = None
    """How many ``priority`` values the queue's depth has (controller-runtime caps them at 25;
    ``exceeded_cardinality_limit`` is the overflow's value)."""
    apf_priority_level: str | None = None
    """The API Priority and Fairness level the ``apf_*`` fields describe (the profile's,
    ``workload-low`` unless configured). They are the level's, shared by every client in
    it: the API server's metrics name no client."""
    apf_wait_mean_s: float | None = None
    """Mean queue wait of the level's executed requests (request_wait_duration_seconds,
    execute="true")."""
    apf_rejected_per_s: float | None = None
    apf_rejected_by_reason: Mapping[str, float] = field(default_factory=dict)
    """queue-full, concurrency-limit, time-out."""
    apf_dispatched_per_s: float | None = None
    apf_inqueue_mean: float | None = None
    apf_seats_in_use_mean: float | None = None
    """current_executing_seats (or request_concurrency_in_use before 1.37), averaged."""
    apf_seat_limit: float | None = None
    """current_limit_seats, else nominal_limit_seats, else request_concurrency_limit."""
    apiserver_write_latency_mean_s: float | None = None
    """Mean apiserver_request_duration_seconds of mutating verbs in the cluster."""
    apiserver_write_sli_mean_s: float | None = None
    """The same without webhook time and APF wait (apiserver_request_sli_duration_seconds)."""
    admission_webhook_mean_s: Mapping[str, float] = field(default_factory=dict)
    """Mean admission duration per webhook ``name`` in the cluster."""
    cpu_used_cores: float | None = None
    """rate(process_cpu_seconds_total) of the process(es) running this queue: cores in use
    (CPU seconds per second), summed over its processes; shared by every controller of the
    process, like the API client."""
    cpu_gomaxprocs: float | None = None
    """go_sched_gomaxprocs_threads (last value in the window): the cores the Go runtime runs
    goroutines on at once, summed over the queue's processes (Go ≥ 1.25 lowers it to the
    container's CPU limit; older Go sets the node's core count)."""
    cpu_sched_latency_mean_s: float | None = None
    """Mean time a goroutine waited runnable before it ran, seconds (go_sched_latencies_seconds
    rate(_sum) ÷ rate(_count), pooled over the queue's processes): the process's CPU run
    queue."""
    cpu_sched_latency_p99_s: float | None = None
    """p99 of that wait, seconds, from the bucket rates (PromQL's interpolation; the buckets
    are about ×11 apart, so read it with its bucket in :attr:`quantile_bounds`)."""
    cpu_limit_cores: float | None = None
    """kube_pod_container_resource_limits{resource="cpu", unit="core"} of the controller's
    container (kube-state-metrics), cores, summed over the queue's pods; None without a
    limit (the reason says which)."""
    cpu_throttled_share: float | None = None
    """Share of the container's CFS periods in which it was throttled (cAdvisor:
    rate(container_cpu_cfs_throttled_periods_total) ÷ rate(container_cpu_cfs_periods_total),
    pooled over the queue's pods), 0…1."""
    external_effects_per_s: float | None = None
    unfinished_work_s: float | None = None
    unfinished_work_growth: float | None = None
    """deriv(workqueue_unfinished_work_seconds): ≈ number of in-flight items not completing."""
    longest_running_s: float | None = None
    littles_law_ratio: float | None = None
    """depth_mean / (arrival_rate_per_s · queue_wait_mean_s); ≈ 1 when the data are coherent."""
    missing: Mapping[str, str] = field(default_factory=dict)
    """field name -> why it is None."""
    process: str | None = None
    """The process that runs this queue, as ``label=value,…`` of the profile's process labels
    (``job``, ``instance``, ``pod`` by default; the demo: its pod); None when not known. Queues
    of one process share its API client, so the advisor sums their demand."""
    quantile_bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    """Quantile field name (``queue_wait_p95_s`` …) -> ``(lo, hi)``: the histogram bucket its
    rank fell in, so the true quantile lies in ``(lo, hi]`` while the field holds PromQL's
    linear interpolation inside it (:func:`models.histogram.bucket_quantile`). ``hi`` is +inf
    in the +Inf bucket (the field is then a lower bound; JSON ``null``), ``lo`` is 0 for the
    first bucket. Only quantiles with a value that were computed from buckets have an entry:
    the decade buckets of client-go make a quantile honest only as a range
    (:func:`models.histogram.classify_quantile`)."""


@dataclass(frozen=True)
class Snapshot:
    at: float
    """Unix seconds of the evaluation time."""
    window_s: float
    source: str
    """Where the data came from, credentials removed (a URL or 'demo')."""
    queues: Sequence[QueueSnapshot]
    warnings: Sequence[str] = ()


@dataclass(frozen=True, eq=False)
class RangeData:
    """The same signals as time series: one (queues × times) matrix per signal.

    ``t`` is the one time grid of the read (unix seconds, ascending); ``signals[name][i, j]`` is
    queue ``queues[i]`` at ``t[j]``, NaN where there is no point (never 0). Signal names are
    :class:`QueueSnapshot` field names (``arrival_rate_per_s`` …), with ``<field>.<key>`` for
    the mapping fields (``reconcile_results_per_s.error``, ``api_calls_by_class_per_s.429``).
    Read it with :meth:`matrix` (all queues) and :meth:`series` (one queue's finite points).

    ``gap`` is the (queues × times) mask of the points dropped from the rate signals for a
    scrape gap (:func:`models.signals.derive`), None when there is none; :attr:`warnings`
    counts them per queue from it, so a read put together from parts (an incremental refresh,
    a cold start's batches) says what one whole read says.
    """

    start: float
    end: float
    step_s: float
    source: str
    queues: tuple[str, ...] = ()
    t: npt.NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    signals: Mapping[str, npt.NDArray[np.float64]] = field(default_factory=dict)
    notes: Sequence[str] = ()
    """What the read as a whole has to say (a widened step, an answer's warning)."""
    gap: npt.NDArray[np.bool_] | None = None

    @cached_property
    def warnings(self) -> tuple[str, ...]:
        """The read's notes, then one sentence per queue with points dropped for a gap."""
        out = list(self.notes)
        if self.gap is not None:
            for q, n in zip(self.queues, self.gap.sum(axis=1).tolist(), strict=True):
                if n:
                    out.append(f"{q}: {n} point(s) dropped from rate signals: scrape gap "
                               f"(fewer than {100 * MIN_COVERAGE:.0f} % of the expected "
                               "samples in the rate window)")
        return tuple(out)

    @property
    def signal_names(self) -> tuple[str, ...]:
        return tuple(self.signals)

    def index(self, queue: str) -> int | None:
        """Row of ``queue`` in every matrix, or None when the read has no such queue."""
        return self._rows.get(queue)

    @cached_property
    def _rows(self) -> dict[str, int]:
        return {q: i for i, q in enumerate(self.queues)}

    def matrix(self, signal: str) -> npt.NDArray[np.float64]:
        """(queues × times) values of ``signal``; all NaN when the read does not have it."""
        m = self.signals.get(signal)
        if m is None:
            return np.full((len(self.queues), len(self.t)), np.nan)
        return m

    def series(self, queue: str, signal: str) -> tuple[npt.NDArray[np.float64],
                                                        npt.NDArray[np.float64]]:
        """(times, values) of one queue's finite points of ``signal`` (empty when absent)."""
        i = self.index(queue)
        m = self.signals.get(signal)
        if i is None or m is None:
            return np.empty(0), np.empty(0)
        row = m[i]
        ok = np.isfinite(row)
        return self.t[ok], row[ok]

    @cached_property
    def frame(self) -> pd.DataFrame:
        """The long form (``queue``, ``signal``, ``t``, ``value``; finite points only, sorted
        by queue, signal, t) — for ad-hoc analysis and tests; the pages read matrices."""
        import pandas as pd

        parts = []
        order = np.argsort(np.asarray(self.queues, dtype=object), kind="stable")
        names = np.asarray(self.queues, dtype=object)
        for signal in sorted(self.signals):
            m = self.signals[signal][order]
            qi, ti = np.nonzero(np.isfinite(m))
            if len(qi):
                parts.append((names[order][qi], signal, self.t[ti], m[qi, ti]))
        if not parts:
            return pd.DataFrame({"queue": pd.Series(dtype=str), "signal": pd.Series(dtype=str),
                                 "t": pd.Series(dtype=float), "value": pd.Series(dtype=float)})
        frame = pd.DataFrame({
            "queue": np.concatenate([p[0] for p in parts]).astype(str),
            "signal": np.concatenate([np.full(len(p[0]), p[1], dtype=object) for p in parts]),
            "t": np.concatenate([p[2] for p in parts]),
            "value": np.concatenate([p[3] for p in parts]),
        })
        return frame.sort_values(["queue", "signal", "t"], ignore_index=True, kind="stable")

    @classmethod
    def from_frame(cls, start: float, end: float, step_s: float, source: str,
                   frame: pd.DataFrame, notes: Sequence[str] = ()) -> RangeData:
        """Build from the long form (tests and adapters); times become one sorted grid."""
        if len(frame) == 0:
            return cls(start=start, end=end, step_s=step_s, source=source, notes=tuple(notes))
        queues = tuple(sorted({str(q) for q in frame["queue"]}))
        rows = {q: i for i, q in enumerate(queues)}
        t = np.unique(frame["t"].to_numpy(dtype=np.float64))
        qi = np.array([rows[str(q)] for q in frame["queue"]], dtype=np.int64)
        ti = np.searchsorted(t, frame["t"].to_numpy(dtype=np.float64))
        vals = frame["value"].to_numpy(dtype=np.float64)
        sig = frame["signal"].to_numpy(dtype=object)
        signals: dict[str, npt.NDArray[np.float64]] = {}
        for name in sorted({str(s) for s in sig}):
            sel = sig == name
            m = np.full((len(queues), len(t)), np.nan)
            m[qi[sel], ti[sel]] = vals[sel]
            signals[name] = m
        return cls(start=start, end=end, step_s=step_s, source=source, queues=queues, t=t,
                   signals=signals, notes=tuple(notes))
