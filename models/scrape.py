"""What a Prometheus scrape of a simulated controller would have read, every scrape interval.

:func:`scrape_metrics` turns the simulator's metric log (one record per counted add, Get,
Done and API call, in event order) into the series a controller-runtime process exposes,
sampled at ``0, Δ, 2Δ, …`` — the same definitions as the real code:

* ``workqueue_adds_total``: counted adds (client-go ``queue.go`` ``Add`` calls
  ``metrics.add`` only for a key that is not already dirty); ``workqueue_depth`` = adds − Gets
  (the dirty keys not yet handed out, processing-and-dirty ones included, as client-go counts);
  ``workqueue_retries_total``: every ``AddRateLimited`` (``delaying_queue.go`` ``AddAfter``
  calls ``metrics.retry()`` before it looks at the delay, so a delay ≤ 0 — a plain ``Add`` —
  counts too);
* ``workqueue_queue_duration_seconds``: first counted add → Get, observed at the Get;
  ``workqueue_work_duration_seconds`` and ``controller_runtime_reconcile_time_seconds``: Get →
  Done, observed at the Done; ``workqueue_unfinished_work_seconds`` = Σ (now − start) over the
  passes in flight; ``workqueue_longest_running_processor_seconds`` = the oldest of them;
* ``controller_runtime_reconcile_total{result}`` (success / error),
  ``controller_runtime_reconcile_errors_total``, ``controller_runtime_active_workers`` (passes
  in flight), ``controller_runtime_max_concurrent_reconciles`` (the worker count);
* ``rest_client_rate_limiter_duration_seconds``: the token bucket's delay, observed when the
  call leaves the limiter; ``rest_client_request_duration_seconds``: the call's latency and
  ``rest_client_requests_total{code="200"}``, at the response.

A sample at scrape time s counts every event at t ≤ s. Histogram buckets hold the
observations ≤ their bound (``le``), cumulative, as client_golang exposes them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models.fleet import LIMITER_BUCKETS, RECONCILE_BUCKETS, go_exponential_buckets

__all__ = [
    "API_BUCKETS",
    "LOG_KINDS",
    "WORKQUEUE_BUCKETS",
    "ScrapedHistogram",
    "ScrapedMetrics",
    "scrape_metrics",
]

FloatArray = npt.NDArray[np.float64]

WORKQUEUE_BUCKETS = go_exponential_buckets(10e-9, 10, 12)
"""controller-runtime ≥ 0.17's workqueue histograms: 1e-8 … 1000 s (``ExponentialBuckets``)."""
API_BUCKETS = LIMITER_BUCKETS
"""client-go's REST-client latency and rate-limiter histograms: 5 ms … 60 s."""

LOG_KINDS: tuple[str, ...] = ("add", "get", "ok", "fail_delay", "fail_now", "call")
"""The metric log's record kinds, by code (``kind`` of a record): a counted add; a Get
(value: its queue wait); a Done after success / after a failure re-added with a delay / after
a failure re-added at once (value: the pass's start); an API call (t: when it asked the
client's token bucket, value: the bucket's delay). The one definition: the compiled loop
(``models/_simcore.py``) writes these codes."""
_ADD, _GET, _OK, _FAIL_DELAY, _FAIL_NOW, _CALL = range(len(LOG_KINDS))


@dataclass(frozen=True)
class ScrapedHistogram:
    """A histogram at every scrape: cumulative counts per finite bound, count (+Inf), sum."""

    bounds: tuple[float, ...]
    buckets: FloatArray
    """Shape (scrapes, len(bounds)): observations ≤ each bound so far."""
    count: FloatArray
    sum: FloatArray


@dataclass(frozen=True)
class ScrapedMetrics:
    """The series of one simulated controller at ``t_s`` (seconds from the start of the run)."""

    t_s: FloatArray
    scrape_interval_s: float
    counters: Mapping[str, FloatArray]
    """adds, retries, reconcile_success, reconcile_error, api_requests (cumulative)."""
    gauges: Mapping[str, FloatArray]
    """depth, active_workers, max_concurrent_reconciles, unfinished_work_s, longest_running_s."""
    histograms: Mapping[str, ScrapedHistogram]
    """queue_duration, work_duration, reconcile_time, and with API calls api_limiter and
    api_request."""
    api_calls: bool
    """Whether the controller made API calls (the REST-client series exist)."""


def _counts_at(times: FloatArray, t_s: FloatArray) -> FloatArray:
    """How many of ``times`` (any order) are ≤ each scrape time."""
    return np.searchsorted(np.sort(times), t_s, side="right").astype(np.float64)


def _histogram(t_obs: FloatArray, values: FloatArray, t_s: FloatArray,
               bounds: tuple[float, ...]) -> ScrapedHistogram:
    S, B = t_s.size, len(bounds)
    j = np.searchsorted(t_s, t_obs, side="left")  # the first scrape that sees it
    b = np.searchsorted(np.asarray(bounds), values, side="left")  # the first bound ≥ value
    keep = j < S
    j, b, v = j[keep], b[keep], values[keep]
    grid = np.bincount(j * (B + 1) + b, minlength=S * (B + 1)).reshape(S, B + 1)
    cum = np.cumsum(np.cumsum(grid, axis=0), axis=1).astype(np.float64)
    sums = np.cumsum(np.bincount(j, weights=v, minlength=S)).astype(np.float64)
    return ScrapedHistogram(bounds, cum[:, :B], cum[:, B], sums)


def _in_flight_ages(start: FloatArray, done: FloatArray,
                    t_s: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Per scrape s: Σ (s − start) and max (s − start) over the passes in flight at s
    (start ≤ s < done), 0 when none is. The scrapes a pass spans are found by comparing with
    the scrape times themselves, as the counters do (dividing by the interval does not give
    the same answer when a time is k·Δ rounded), and the ages are summed one by one: the
    difference of two running sums of start times loses the small ages to rounding (it read
    ~1e-8 s with nothing in flight, and less than the longest pass)."""
    lo = np.searchsorted(t_s, start, side="left")  # the first scrape at or after the start
    hi = np.searchsorted(t_s, done, side="left") - 1  # the last scrape before the Done
    span = hi - lo + 1
    ok = span > 0
    lo, span, first = lo[ok], span[ok], start[ok]
    total = np.zeros(t_s.size)
    oldest = np.zeros(t_s.size)
    if span.size:
        idx = np.repeat(lo, span) + (np.arange(int(span.sum())) - np.repeat(
            np.cumsum(span) - span, span))
        age = t_s[idx] - np.repeat(first, span)  # ≥ 0: start ≤ s
        total = np.bincount(idx, weights=age, minlength=t_s.size).astype(np.float64)
        np.maximum.at(oldest, idx, age)
    return total, oldest


def scrape_metrics(
    log: npt.NDArray[np.void],
    *,
    duration_s: float,
    scrape_interval_s: float,
    workers_at: Callable[[FloatArray], FloatArray],
    call_latency_s: float,
    api_calls: bool,
) -> ScrapedMetrics:
    """The series at scrapes 0, Δ, 2Δ, … ≤ ``duration_s`` from the simulator's metric log.

    ``workers_at(t)``: the worker count at each time (``max_concurrent_reconciles``);
    ``call_latency_s``: the latency of every API call."""
    step = float(scrape_interval_s)
    t_s = np.arange(math.floor(duration_s / step + 1e-9) + 1, dtype=np.float64) * step
    t, kind, value = log["t"], log["kind"], log["value"]
    adds = t[kind == _ADD]
    get_t, get_w = t[kind == _GET], value[kind == _GET]
    done_mask = (kind == _OK) | (kind == _FAIL_DELAY) | (kind == _FAIL_NOW)
    done_t, starts_done = t[done_mask], value[done_mask]
    work = done_t - starts_done
    fail_mask = (kind == _FAIL_DELAY) | (kind == _FAIL_NOW)

    n_adds = _counts_at(adds, t_s)
    n_gets = _counts_at(get_t, t_s)
    n_done = _counts_at(done_t, t_s)
    in_flight = n_gets - n_done
    # passes still running at the end: the Gets whose start no Done carries (a Done logs its
    # pass's start, the very float of its Get), matched as multisets
    g_sorted, s_sorted = np.sort(get_t), np.sort(starts_done)
    g_vals, g_counts = np.unique(g_sorted, return_counts=True)
    s_vals, s_counts = np.unique(s_sorted, return_counts=True)
    pos = np.searchsorted(s_vals, g_vals)
    matched = np.zeros_like(g_counts)
    if s_vals.size:  # (no Done yet: every Get is still running)
        hit = (pos < s_vals.size) & (s_vals[np.minimum(pos, s_vals.size - 1)] == g_vals)
        matched[hit] = s_counts[pos[hit]]
    open_starts = np.repeat(g_vals, np.maximum(g_counts - matched, 0))
    unfinished, longest = _in_flight_ages(
        np.concatenate((starts_done, open_starts)),
        np.concatenate((done_t, np.full(open_starts.size, np.inf))), t_s)

    counters = {
        "adds": n_adds,
        "retries": _counts_at(t[fail_mask], t_s),  # every AddRateLimited
        "reconcile_success": _counts_at(t[kind == _OK], t_s),
        "reconcile_error": _counts_at(t[fail_mask], t_s),
    }
    gauges = {
        "depth": n_adds - n_gets,
        "active_workers": in_flight,
        "max_concurrent_reconciles": np.asarray(workers_at(t_s), dtype=np.float64),
        "unfinished_work_s": unfinished,
        "longest_running_s": longest,
    }
    hists = {
        "queue_duration": _histogram(get_t, get_w, t_s, WORKQUEUE_BUCKETS),
        "work_duration": _histogram(done_t, work, t_s, WORKQUEUE_BUCKETS),
        "reconcile_time": _histogram(done_t, work, t_s, RECONCILE_BUCKETS),
    }
    if api_calls:
        call_t, call_d = t[kind == _CALL], value[kind == _CALL]
        granted = call_t + call_d
        answered = granted + call_latency_s
        counters["api_requests"] = _counts_at(answered, t_s)
        hists["api_limiter"] = _histogram(granted, call_d, t_s, API_BUCKETS)
        hists["api_request"] = _histogram(answered, np.full(answered.size, call_latency_s),
                                          t_s, API_BUCKETS)
    return ScrapedMetrics(t_s, step, counters, gauges, hists, api_calls)
