"""The one derive of queue signals: raw per-queue matrices in, every reported signal out.

Every source — the Prometheus snapshot (one time column), the Prometheus range read (one column
per step) and the embedded demo (either) — decodes what it measured into a
:class:`RawSignals` of ``(queues × times)`` float matrices (NaN = no value) and calls
:func:`derive`, so service time, utilization, quantiles, Little's-law ratio, scrape-gap masks
and the per-process totals of API calls are written once:

* ``service_mean_s = busy_workers / throughput_per_s`` where throughput > 0 (Little's law on the
  work histogram: rate(_sum) / rate(_count));
* ``workers``: the measured gauge, else the configured count (``configured_workers``);
  ``utilization = busy_workers / workers`` where workers > 0;
* p50/p95/p99 of each histogram by :func:`models.histogram.bucket_quantile` over all
  queues × times in one call (PromQL ``histogram_quantile``), with the ``+Inf``-bucket flag
  and the bounds ``(lo, hi]`` of the bucket each quantile fell in
  (:attr:`DerivedSignals.bucket_bounds`, NaN wherever the quantile is NaN, masked ones
  included); a source that already has the quantiles (e.g. asked Prometheus for
  ``histogram_quantile``) passes them as plain matrices and they are used as they are, with
  no bounds (none are known);
* ``littles_law_ratio = depth_mean / (arrival_rate_per_s · queue_wait_mean_s)`` where the
  product is > 0 (≈ 1 for coherent data; Little, 1961);
* scrape gaps: where a queue's window holds fewer than :data:`MIN_COVERAGE` of the expected
  samples, every rate signal (:data:`RATE_FIELDS`, the reconcile results) is NaN, because
  ``rate()`` over a half-empty window under-reports;
* per-process series (``rest_client_*`` has no controller label) summed per process once, then
  given to each queue of that process through a (queue, process) incidence list: linear in
  series + pairs, never series × queues.

Pure numpy; no I/O. All rates per second, durations in seconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from models.histogram import QUANTILES, bucket_quantile

__all__ = [
    "ALWAYS",
    "HISTOGRAMS",
    "MIN_COVERAGE",
    "RATE_FIELDS",
    "DerivedSignals",
    "Histogram",
    "ProcessSeries",
    "RawSignals",
    "derive",
    "raw_inputs",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

MIN_COVERAGE = 0.9
"""A rate window with fewer than this share of the expected samples is a scrape gap: 10 % is
one missed scrape in a 5 m window at 30 s, the smallest loss that biases a rate visibly."""

HISTOGRAMS: Mapping[str, str] = {"queue_wait": "queue wait", "work": "work duration"}
"""Histogram prefixes (``queue_wait_p95_s`` …) and what they measure."""

RATE_FIELDS: tuple[str, ...] = (
    "arrival_rate_per_s", "throughput_per_s", "busy_workers", "service_mean_s", "utilization",
    "queue_wait_mean_s", "depth_mean", "retries_per_s", "errors_per_s", "unfinished_work_growth",
    "littles_law_ratio",
    *(f"{h}_{p}_s" for h in HISTOGRAMS for p, _ in QUANTILES),
)
"""Signals computed from a rate window: set to NaN where the window has a scrape gap."""

RESULTS_PREFIX = "reconcile_results_per_s."
"""Matrices named ``reconcile_results_per_s.<result>`` are rates too (gap-masked)."""


ALWAYS: frozenset[str] = frozenset({"samples_in_window"})
"""Raw inputs every read needs: the sample counts behind the scrape-gap masks."""

_DERIVED_FROM: Mapping[str, tuple[str, ...]] = {
    "service_mean_s": ("busy_workers", "throughput_per_s"),
    "utilization": ("busy_workers", "workers"),
    "littles_law_ratio": ("depth_mean", "arrival_rate_per_s", "queue_wait_mean_s"),
    **{f"{h}_{p}_s": (f"histogram:{h}",) for h in HISTOGRAMS for p, _ in QUANTILES},
    "api_calls_per_s": ("process:api_calls_per_s",),
    "throttle_s_per_s": ("process:throttle_s_per_s",),
    "cpu_used_cores": ("process:cpu_used_cores",),
}


def raw_inputs(signals: Iterable[str]) -> frozenset[str]:
    """The raw inputs :func:`derive` needs to produce ``signals``: direct matrix names,
    ``histogram:<prefix>`` and ``process:<total field>`` (a source reads only those), plus
    :data:`ALWAYS`. ``<field>.<key>`` names need their mapping field
    (``api_calls_by_class_per_s.429`` → the API-call process series)."""
    out = set(ALWAYS)
    for name in signals:
        field_name = name.split(".", 1)[0]
        if field_name == "api_calls_by_class_per_s":
            field_name = "api_calls_per_s"
        out.update(_DERIVED_FROM.get(field_name, (field_name,)))
    return frozenset(out)


@dataclass(frozen=True)
class Histogram:
    """Cumulative bucket rates (or increases) of one histogram, for queues of one bucket
    layout (queues with other ``le`` sets go in another :class:`Histogram`: a bucket one queue
    lacks is unknown, not empty)."""

    bounds: FloatArray
    """The ``le`` values, ``+Inf`` included, any order."""
    counts: FloatArray
    """Shape (rows, times, len(bounds)); NaN = bucket absent."""
    rows: IntArray | None = None
    """(rows,) queue index of each row; None: row i is queue i (all queues)."""


@dataclass(frozen=True)
class ProcessSeries:
    """Series of one process-wide metric: each row belongs to a process (and a class)."""

    process: IntArray
    """(S,) index of the process of each row."""
    values: FloatArray
    """(S, times); NaN = no point."""
    total_field: str
    """Output matrix name of the per-queue total, e.g. ``api_calls_per_s``."""
    class_of: IntArray | None = None
    """(S,) index into ``classes`` (e.g. code class of ``rest_client_requests_total``)."""
    classes: tuple[str, ...] = ()
    class_field: str = ""
    """Output prefix of the per-class totals: ``<class_field>.<class>``."""


@dataclass(frozen=True)
class RawSignals:
    """What a source measured, as (queues × times) matrices; NaN where nothing was measured."""

    queues: tuple[str, ...]
    t: FloatArray
    """(T,) evaluation times, unix seconds."""
    direct: Mapping[str, FloatArray]
    """Signals taken as measured: ``arrival_rate_per_s``, ``throughput_per_s``,
    ``busy_workers``, ``workers``, ``depth_mean`` … each (Q, T)."""
    histograms: Mapping[str, Sequence[Histogram]] = field(default_factory=dict)
    """``queue_wait`` / ``work`` bucket matrices, one per bucket layout (quantiles not already
    in ``direct``)."""
    configured_workers: FloatArray | None = None
    """(Q,) worker counts from the config, NaN where none; used where no gauge was read."""
    samples_in_window: FloatArray | None = None
    """(Q, T) samples of a counter per rate window (``count_over_time``), for gap masks."""
    expected_samples: float | FloatArray | None = None
    """Samples a full window holds: one number (window ÷ scrape interval), one per time (T,),
    or one per queue and time ((Q, T) or (Q, 1): each queue's own scrape rate, as queues of
    one fleet are scraped every 15 s, 30 s or 60 s); None: the most each queue has over the
    read's times (its full window)."""
    processes: int = 0
    """Number of processes the per-process series and ``queue_process`` refer to."""
    queue_process: tuple[IntArray, IntArray] | None = None
    """(queue index, process index) pairs: which process(es) run each queue."""
    process_series: Sequence[ProcessSeries] = ()


@dataclass(frozen=True)
class DerivedSignals:
    queues: tuple[str, ...]
    t: FloatArray
    values: Mapping[str, FloatArray]
    """Every signal, (Q, T), NaN where undefined or masked."""
    lower_bound: Mapping[str, BoolArray]
    """Quantile name -> (Q, T) True where it fell in the +Inf bucket (a lower bound)."""
    coverage: FloatArray | None
    """(Q, T) share of the expected samples in each window (None: not measured)."""
    gap: BoolArray
    """(Q, T) True where the rate signals were masked for a scrape gap."""
    bucket_bounds: Mapping[str, tuple[FloatArray, FloatArray]] = field(default_factory=dict)
    """Quantile name -> ((Q, T) lower, (Q, T) upper) bound of the histogram bucket the
    quantile fell in (:func:`models.histogram.bucket_quantile`: the true quantile lies in
    ``(lo, hi]``; hi = +inf for the +Inf bucket); NaN where the quantile is NaN. Only the
    quantiles derive computed from buckets have an entry."""

    def quantile_bounds(self, row: int, col: int) -> dict[str, tuple[float, float]]:
        """``{quantile name: (lo, hi)}`` at one queue row and time column, for the quantiles
        that have a value there (what :class:`models.measurements.QueueSnapshot` carries)."""
        out: dict[str, tuple[float, float]] = {}
        for name, (lo, hi) in self.bucket_bounds.items():
            a, b = float(lo[row, col]), float(hi[row, col])
            if not (math.isnan(a) or math.isnan(b)):
                out[name] = (a, b)
        return out


def _ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _coverage(raw: RawSignals) -> FloatArray | None:
    n = raw.samples_in_window
    if n is None:
        return None
    # A queue whose counter has samples elsewhere in the read but none in this window has
    # 0 of them, not an unknown count: VictoriaMetrics answers such a window's rate() with
    # 0 where Prometheus answers nothing, and count_over_time with nothing on both — the 0
    # must not read as a measured rate (it reads as a scrape gap).
    n = np.where(np.isnan(n) & np.isfinite(n).any(axis=1, keepdims=True), 0.0, n)
    if raw.expected_samples is not None:
        e = np.asarray(raw.expected_samples, dtype=np.float64)
        expected = np.broadcast_to(e if e.ndim == 2 else e.reshape(1, -1), n.shape)
    else:
        most = np.max(np.where(np.isfinite(n), n, -np.inf), axis=1, initial=-np.inf,
                      keepdims=True)
        expected = np.broadcast_to(np.where(np.isfinite(most), most, np.nan), n.shape)
    out = np.full(n.shape, np.nan)
    np.divide(n, expected, out=out, where=expected > 0)
    out = np.where((expected <= 0) & np.isfinite(n), 1.0, out)
    return np.asarray(np.minimum(out, 1.0), dtype=np.float64)


def _group_sum(values: FloatArray, groups: IntArray, n_groups: int
               ) -> tuple[FloatArray, FloatArray]:
    """(sum of the finite values, how many there were) of the rows of ``values`` by group:
    one sort and two ``add.reduceat`` (``ufunc.at`` on rows is ~100× slower)."""
    n_t = values.shape[1]
    total = np.zeros((n_groups, n_t))
    count = np.zeros((n_groups, n_t))
    if len(groups) == 0:
        return total, count
    order = np.argsort(groups, kind="stable")
    g = groups[order]
    v = values[order]
    ok = np.isfinite(v)
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    total[g[starts]] = np.add.reduceat(np.where(ok, v, 0.0), starts, axis=0)
    count[g[starts]] = np.add.reduceat(ok.astype(np.float64), starts, axis=0)
    return total, count


def _attribute(raw: RawSignals, shape: tuple[int, int]) -> dict[str, FloatArray]:
    """Per-process sums, each given to the queues of the process (NaN where no row had a
    point: a missing value is never 0)."""
    out: dict[str, FloatArray] = {}
    if raw.queue_process is None:
        return out
    q_idx, p_idx = raw.queue_process

    def to_queues(total: FloatArray, count: FloatArray) -> FloatArray:
        q_sum, _ = _group_sum(total[p_idx], q_idx, shape[0])
        q_n, _ = _group_sum(count[p_idx], q_idx, shape[0])
        return np.where(q_n > 0, q_sum, np.nan)

    for ps in raw.process_series:
        total, count = _group_sum(ps.values, ps.process, raw.processes)
        out[ps.total_field] = to_queues(total, count)
        if ps.class_of is not None and ps.classes:
            n_c = len(ps.classes)
            c_total, c_count = _group_sum(ps.values, ps.process * n_c + ps.class_of,
                                          raw.processes * n_c)
            by_total = c_total.reshape(raw.processes, n_c, -1)
            by_count = c_count.reshape(raw.processes, n_c, -1)
            for k, name in enumerate(ps.classes):
                out[f"{ps.class_field}.{name}"] = to_queues(by_total[:, k], by_count[:, k])
    return out


def derive(raw: RawSignals) -> DerivedSignals:
    """Every reported signal from the raw matrices (the rules are in the module docstring)."""
    shape = (len(raw.queues), len(raw.t))
    nan = np.full(shape, np.nan)
    d: dict[str, FloatArray] = {k: np.asarray(v, dtype=np.float64) for k, v in raw.direct.items()}
    for k, v in d.items():
        if v.shape != shape:
            raise ValueError(f"signal {k!r} has shape {v.shape}, expected {shape}")

    def get(name: str) -> FloatArray:
        return d.get(name, nan)

    busy, thr = get("busy_workers"), get("throughput_per_s")
    d.setdefault("service_mean_s", _ratio(busy, thr))
    workers = get("workers")
    if raw.configured_workers is not None:
        conf = np.asarray(raw.configured_workers, dtype=np.float64)[:, None]
        workers = np.where(np.isfinite(workers), workers, conf)
        if np.isfinite(workers).any():
            d["workers"] = workers
    d.setdefault("utilization", _ratio(busy, workers))
    lower: dict[str, BoolArray] = {}
    bounds: dict[str, tuple[FloatArray, FloatArray]] = {}
    for prefix, layouts in raw.histograms.items():
        for label, q in QUANTILES:
            name = f"{prefix}_{label}_s"
            if name in d:
                continue
            values = np.full(shape, np.nan)
            low = np.zeros(shape, dtype=bool)
            b_lo = np.full(shape, np.nan)
            b_hi = np.full(shape, np.nan)
            for hist in layouts:
                rows = slice(None) if hist.rows is None else hist.rows
                flat = hist.counts.reshape(-1, len(hist.bounds))
                res = bucket_quantile(q, hist.bounds.tolist(), flat)
                values[rows] = res.values.reshape(-1, shape[1])
                low[rows] = res.lower_bound.reshape(-1, shape[1])
                b_lo[rows] = res.bucket_lo.reshape(-1, shape[1])
                b_hi[rows] = res.bucket_hi.reshape(-1, shape[1])
            d[name] = values
            lower[name] = low
            bounds[name] = (b_lo, b_hi)
    d.setdefault("littles_law_ratio", _ratio(
        get("depth_mean"), get("arrival_rate_per_s") * get("queue_wait_mean_s")))
    d.update(_attribute(raw, shape))

    coverage = _coverage(raw)
    gap = np.zeros(shape, dtype=bool)
    if coverage is not None:
        with np.errstate(invalid="ignore"):
            gap = np.isfinite(coverage) & (coverage < MIN_COVERAGE)
        if gap.any():
            for name in list(d):
                if name in RATE_FIELDS or name.startswith(RESULTS_PREFIX):
                    d[name] = np.where(gap, np.nan, d[name])
    for name, arr in d.items():
        if not np.isfinite(arr).all():
            d[name] = np.where(np.isfinite(arr), arr, np.nan)
    for name, (b_lo, b_hi) in list(bounds.items()):
        gone = np.isnan(d[name])  # masked for a scrape gap, or never defined
        if gone.any():
            bounds[name] = (np.where(gone, np.nan, b_lo), np.where(gone, np.nan, b_hi))
    return DerivedSignals(queues=raw.queues, t=np.asarray(raw.t, dtype=np.float64), values=d,
                          lower_bound=lower, coverage=coverage, gap=gap,
                          bucket_bounds=bounds)
