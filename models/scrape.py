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
  ``rest_client_requests_total{code="200"}``, at the response;
* with polling, ``controller_runtime_reconcile_total{result="requeue_after"}`` (a success
  that returned ``RequeueAfter``; controller-runtime counts it there, not as success) and its
  ``AddAfter`` in ``workqueue_retries_total``;
* with the CPU modelled, the process's ``process_cpu_seconds_total`` (the CPU parts run so
  far, in clock ticks), ``go_sched_gomaxprocs_threads`` (the cores) and
  ``go_sched_latencies_seconds`` (each CPU part's wait for a core, with the bounds client_golang
  v1.23.2 exposes; its ``_sum`` is the exact sum here, where client_golang estimates it from
  the runtime's finer buckets).

When the simulator models the API server side (writes, APF, a webhook, conflicts), the REST
client's series come from its log of attempts (:data:`ATTEMPT_LOG`), by verb GET / PUT and by
code, as client-go counts them (``rest/request.go``, ``rest/with_retry.go``):
``rest_client_requests_total{code, method}`` every attempt; ``rest_client_request_retries_total
{code, verb}`` attempts 2…N, each with its own code; the token bucket's delay of every attempt;
the request duration once per call, from the first attempt's grant to the final response
(retry sleeps included). The API server's (k8s.io/apiserver): the APF level's
``apiserver_flowcontrol_*`` (``pkg/util/flowcontrol/metrics/metrics.go``: the wait of every
request — dispatched at dispatch, rejected at rejection — the dispatched and rejected
counters, the requests waiting and executing at each scrape), counting the controller's and
the background requests; ``apiserver_request_duration_seconds`` (APF wait + execution),
``apiserver_request_sli_duration_seconds`` (execution minus the webhook) and
``apiserver_request_total`` of the controller's requests (``pkg/endpoints/metrics``), and the
webhook's admission durations (``pkg/admission/metrics``). Gauges are the state at the scrape
instant.

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
    "ADMISSION_WEBHOOK_BUCKETS",
    "APF_WAIT_BUCKETS",
    "API_BUCKETS",
    "ATTEMPT_LOG",
    "BACKGROUND_LOG",
    "GO_SCHED_LATENCY_BUCKETS",
    "LOG_KINDS",
    "REQUEST_DURATION_BUCKETS",
    "REQUEST_SLI_BUCKETS",
    "WORKQUEUE_BUCKETS",
    "ScrapedApi",
    "ScrapedHistogram",
    "ScrapedMetrics",
    "ScrapedServer",
    "ServerSpec",
    "scrape_metrics",
]

FloatArray = npt.NDArray[np.float64]

WORKQUEUE_BUCKETS = go_exponential_buckets(10e-9, 10, 12)
"""controller-runtime ≥ 0.17's workqueue histograms: 1e-8 … 1000 s (``ExponentialBuckets``)."""
API_BUCKETS = LIMITER_BUCKETS
"""client-go's REST-client latency and rate-limiter histograms: 5 ms … 60 s."""

LOG_KINDS: tuple[str, ...] = ("add", "get", "ok", "fail_delay", "fail_now", "call",
                              "ok_after", "cpu_wait", "cpu_run")
"""The metric log's record kinds, by code (``kind`` of a record): a counted add; a Get
(value: its queue wait); a Done after success / after a failure re-added with a delay / after
a failure re-added at once (value: the pass's start); an API call (t: when it asked the
client's token bucket, value: the bucket's delay); a Done after a success that returned
``RequeueAfter`` (value: the pass's start); a pass's CPU part getting its core (t: then;
value: its wait for the core) and the same part's run (t: then; value: its CPU seconds). The
one definition: the compiled loop (``models/_simcore.py``) writes these codes."""
(_ADD, _GET, _OK, _FAIL_DELAY, _FAIL_NOW, _CALL, _OK_AFTER, _CPU_WAIT,
 _CPU_RUN) = range(len(LOG_KINDS))

ATTEMPT_LOG = np.dtype([
    ("t", np.float64), ("lim", np.float64), ("wait", np.float64), ("exec", np.float64),
    ("hook", np.float64), ("resp", np.float64), ("dur", np.float64), ("write", np.int64),
    ("code", np.int64), ("attempt", np.int64), ("final", np.int64),
])
"""One API request attempt, when the simulator models the API server side (writes, APF, a
webhook or conflicts): asked for at ``t``, left the client's token bucket ``lim`` later
(arrival at the server t + lim), waited ``wait`` in the APF queue (for a 429: 0 when the queue
was full, the wait limit on a time-out), executed ``exec`` (0 for a 429) of which ``hook`` in
the admission webhook (its queue included), answered at ``resp`` with HTTP ``code`` (200, 409,
429); ``attempt`` 1, 2, … of its call; ``final`` on the call's last attempt, whose ``dur`` is
the call's duration from the first attempt's grant to this response (retry sleeps included).
The compiled loop (``models/_simcore.py``) writes these records."""

BACKGROUND_LOG = np.dtype([
    ("arr", np.float64), ("start", np.float64), ("end", np.float64), ("outcome", np.int64),
])
"""One background request of the APF priority level: arrival, dispatch (or rejection) time,
end of its seat time (= the rejection time for a rejected one), and the outcome (0 dispatched,
1 rejected queue-full, 2 rejected time-out)."""

APF_WAIT_BUCKETS: tuple[float, ...] = (0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30)
"""``apiserver_flowcontrol_request_wait_duration_seconds`` (k8s.io/apiserver
``pkg/util/flowcontrol/metrics/metrics.go`` ``requestDurationSecondsBuckets``)."""
REQUEST_DURATION_BUCKETS: tuple[float, ...] = (
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20,
    30, 45, 60)
"""``apiserver_request_duration_seconds`` (``pkg/endpoints/metrics/metrics.go``)."""
REQUEST_SLI_BUCKETS: tuple[float, ...] = (
    0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60)
"""``apiserver_request_sli_duration_seconds`` (same file)."""
ADMISSION_WEBHOOK_BUCKETS: tuple[float, ...] = (0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25)
"""``apiserver_admission_webhook_admission_duration_seconds`` (``pkg/admission/metrics``)."""
GO_SCHED_LATENCY_BUCKETS: tuple[float, ...] = (
    6.399999999999999e-08, 6.399999999999999e-07, 7.167999999999999e-06,
    8.191999999999999e-05, 0.0009175039999999999, 0.010485759999999998, 0.11744051199999998)
"""``go_sched_latencies_seconds``: the bounds a controller-runtime v0.24.1 binary exposes
(client_golang v1.23.2's Go collector re-buckets the runtime's ``/sched/latencies:seconds``
histogram to these; ``/work/shared/reference/expositions``), printed by Go as written here."""
USER_HZ = 100
"""``process_cpu_seconds_total`` comes from ``/proc/self/stat`` (utime + stime in clock ticks,
client_golang/procfs divide by USER_HZ = 100): it moves in steps of 10 ms."""
VERBS = ("GET", "PUT")
"""Reads and writes, as client-go's ``verb``/``method`` and the apiserver's ``verb`` label."""


@dataclass(frozen=True)
class ScrapedHistogram:
    """A histogram at every scrape: cumulative counts per finite bound, count (+Inf), sum."""

    bounds: tuple[float, ...]
    buckets: FloatArray
    """Shape (scrapes, len(bounds)): observations ≤ each bound so far."""
    count: FloatArray
    sum: FloatArray


@dataclass(frozen=True)
class ScrapedApi:
    """The REST client's series by label, when the API server side is modelled (client-go
    ``rest/request.go`` and ``rest/with_retry.go``; component-base's restclient metrics)."""

    requests: Mapping[tuple[str, str], FloatArray]
    """``rest_client_requests_total`` by (code, method): every attempt, at its response."""
    retries: Mapping[tuple[str, str], FloatArray]
    """``rest_client_request_retries_total`` by (code, verb): attempts 2…N, each with its own
    code (a retry that succeeds counts as code 200), at its response."""
    request_duration: Mapping[str, ScrapedHistogram]
    """``rest_client_request_duration_seconds`` by verb: once per call (``request()``), from
    the first attempt's grant to the final response — APF waits, executions, Retry-After
    sleeps and the retries' token-bucket waits included (upstream's observation also starts
    before the first token-bucket wait; this one, as the series without a server, does not)."""
    limiter: Mapping[str, ScrapedHistogram]
    """``rest_client_rate_limiter_duration_seconds`` by verb: every attempt's token-bucket
    wait (``tryThrottle`` runs before each attempt), when it ends."""


@dataclass(frozen=True)
class ScrapedServer:
    """The controller's API server, when it is modelled: its APF priority level (controller
    and background requests together) and the controller's own requests and admissions."""

    apf_seats: int | None
    """The level's seat limit (nominal = current); None without APF (then the ``apf_*``
    series are empty)."""
    apf_wait: Mapping[str, ScrapedHistogram]
    """``apiserver_flowcontrol_request_wait_duration_seconds`` by ``execute`` ("true": at
    dispatch, the queue wait; "false": at rejection, 0 when the queue was full, the wait limit
    on a time-out)."""
    apf_dispatched: FloatArray
    apf_rejected: Mapping[str, FloatArray]
    """By reason: queue-full (concurrency-limit for a level without a queue), and time-out
    when any request timed out."""
    apf_inqueue: FloatArray
    apf_executing: FloatArray
    """Requests executing (one seat each, so also the seats in use)."""
    request_duration: Mapping[str, ScrapedHistogram]
    """``apiserver_request_duration_seconds`` by verb: the controller's executed requests (APF
    wait + execution, webhook included), at the response; 429s are not observed."""
    request_sli: Mapping[str, ScrapedHistogram]
    """``apiserver_request_sli_duration_seconds`` by verb: execution minus the webhook."""
    request_total: Mapping[tuple[str, str], FloatArray]
    """``apiserver_request_total`` by (verb, code): every attempt of the controller."""
    webhook: ScrapedHistogram | None
    """``apiserver_admission_webhook_admission_duration_seconds``: every admission of a
    controller write (queue at the webhook + its service), when it ends."""


@dataclass(frozen=True)
class ServerSpec:
    """What of the API server side a run modelled (for :func:`scrape_metrics`)."""

    apf_seats: int | None
    apf_queue_limit: int
    """0: a level without a queue (upstream LimitResponse type Reject)."""
    webhook: bool
    reads: bool
    """Whether passes make reads (GET) and writes (PUT); a verb's series exist if it does."""
    writes: bool
    server: bool
    """Whether the API server itself is modelled (APF, a webhook or conflicts): then the
    ``apiserver_*`` series exist; with writes alone only the client's series split by verb."""


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
    api: ScrapedApi | None = None
    """The REST client's series by code and verb, when the API server side is modelled (the
    ``api_*`` counters and histograms above then hold their totals over every label)."""
    server: ScrapedServer | None = None
    """The API server's series, when it is modelled."""


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
    attempts: npt.NDArray[np.void] | None = None,
    background: npt.NDArray[np.void] | None = None,
    spec: ServerSpec | None = None,
    requeue_after: bool = False,
    cpu_cores: int | None = None,
) -> ScrapedMetrics:
    """The series at scrapes 0, Δ, 2Δ, … ≤ ``duration_s`` from the simulator's metric log.

    ``workers_at(t)``: the worker count at each time (``max_concurrent_reconciles``);
    ``call_latency_s``: the latency of every API call. With ``spec`` (the API server side
    modelled), the REST client's series come from the ``attempts`` log (:data:`ATTEMPT_LOG`)
    and the APF level's also from the ``background`` log (:data:`BACKGROUND_LOG`).

    ``requeue_after``: the reconciles return ``RequeueAfter`` — each success is counted in
    ``reconcile_requeue_after`` (controller-runtime's ``result="requeue_after"``), not in
    ``reconcile_success``, and its ``AddAfter`` in ``retries`` (client-go's ``AddAfter`` calls
    ``metrics.retry()`` on every call). ``cpu_cores`` N: the process's CPU series, from the
    log's CPU parts — ``process_cpu_seconds`` (the CPU seconds run by each scrape, a part in
    progress counted up to the scrape, in steps of 1 / :data:`USER_HZ`), ``gomaxprocs`` (N) and
    ``sched_latencies`` (one observation per CPU part, its wait for a core, when it gets it;
    :data:`GO_SCHED_LATENCY_BUCKETS`)."""
    step = float(scrape_interval_s)
    t_s = np.arange(math.floor(duration_s / step + 1e-9) + 1, dtype=np.float64) * step
    t, kind, value = log["t"], log["kind"], log["value"]
    adds = t[kind == _ADD]
    get_t, get_w = t[kind == _GET], value[kind == _GET]
    done_mask = (kind == _OK) | (kind == _FAIL_DELAY) | (kind == _FAIL_NOW)
    if requeue_after:
        done_mask |= kind == _OK_AFTER
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

    # every AddRateLimited, and every AddAfter of a RequeueAfter
    requeues = fail_mask | (kind == _OK_AFTER) if requeue_after else fail_mask
    counters = {
        "adds": n_adds,
        "retries": _counts_at(t[requeues], t_s),
        "reconcile_success": _counts_at(t[kind == _OK], t_s),
        "reconcile_error": _counts_at(t[fail_mask], t_s),
    }
    if requeue_after:
        counters["reconcile_requeue_after"] = _counts_at(t[kind == _OK_AFTER], t_s)
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
    if cpu_cores is not None:
        _cpu_series(t, kind, value, t_s, cpu_cores, counters, gauges, hists)
    api = server = None
    if api_calls and spec is not None and attempts is not None:
        api, server = _api_series(attempts, background, spec, t_s, counters, hists)
    elif api_calls:
        call_t, call_d = t[kind == _CALL], value[kind == _CALL]
        granted = call_t + call_d
        answered = granted + call_latency_s
        counters["api_requests"] = _counts_at(answered, t_s)
        hists["api_limiter"] = _histogram(granted, call_d, t_s, API_BUCKETS)
        hists["api_request"] = _histogram(answered, np.full(answered.size, call_latency_s),
                                          t_s, API_BUCKETS)
    return ScrapedMetrics(t_s, step, counters, gauges, hists, api_calls, api, server)


def _cpu_series(t: FloatArray, kind: npt.NDArray[np.int64], value: FloatArray, t_s: FloatArray,
                cores: int, counters: dict[str, FloatArray], gauges: dict[str, FloatArray],
                hists: dict[str, ScrapedHistogram]) -> None:
    """The process's CPU series (see :func:`scrape_metrics`): CPU seconds by scrape s =
    Σ hold over the parts ended by s + Σ (s − start) over the parts running at s."""
    run = kind == _CPU_RUN
    start, hold = t[run], value[run]
    end = start + hold
    order = np.argsort(end, kind="stable")
    ended = np.concatenate(([0.0], np.cumsum(hold[order])))
    done = ended[np.searchsorted(end[order], t_s, side="right")]
    running, _ = _in_flight_ages(start, end, t_s)
    # whole clock ticks (the kernel's utime + stime); the guard keeps k/100 from reading k − 1
    counters["process_cpu_seconds"] = np.floor((done + running) * USER_HZ + 1e-6) / USER_HZ
    gauges["gomaxprocs"] = np.full(t_s.size, float(cores))
    wait = kind == _CPU_WAIT
    hists["sched_latencies"] = _histogram(t[wait], value[wait], t_s, GO_SCHED_LATENCY_BUCKETS)


def _api_series(
    a: npt.NDArray[np.void], bg: npt.NDArray[np.void] | None, spec: ServerSpec, t_s: FloatArray,
    counters: dict[str, FloatArray], hists: dict[str, ScrapedHistogram],
) -> tuple[ScrapedApi, ScrapedServer | None]:
    """The REST client's and the API server's series from the attempt log (and the APF
    level's background log); also fills the label-less totals of ``counters``/``hists``."""
    resp, code, write = a["resp"], a["code"], a["write"].astype(bool)
    granted = a["t"] + a["lim"]  # the request leaves the client's token bucket and arrives
    final = a["final"].astype(bool)
    retry = a["attempt"] >= 2
    verbs = [(v, write == (v == "PUT")) for v, on in zip(VERBS, (spec.reads, spec.writes),
                                                         strict=True) if on]
    codes = [str(c) for c in sorted({200, *np.unique(code).tolist()})]
    requests: dict[tuple[str, str], FloatArray] = {}
    retries: dict[tuple[str, str], FloatArray] = {}
    duration: dict[str, ScrapedHistogram] = {}
    limiter: dict[str, ScrapedHistogram] = {}
    for verb, vm in verbs:
        for c in codes:
            m = vm & (code == int(c))
            if c == "200" or m.any():
                requests[(c, verb)] = _counts_at(resp[m], t_s)
            if (m & retry).any():
                retries[(c, verb)] = _counts_at(resp[m & retry], t_s)
        duration[verb] = _histogram(resp[vm & final], a["dur"][vm & final], t_s, API_BUCKETS)
        limiter[verb] = _histogram(granted[vm], a["lim"][vm], t_s, API_BUCKETS)
    counters["api_requests"] = _counts_at(resp, t_s)
    hists["api_limiter"] = _histogram(granted, a["lim"], t_s, API_BUCKETS)
    hists["api_request"] = _histogram(resp[final], a["dur"][final], t_s, API_BUCKETS)
    api = ScrapedApi(requests, retries, duration, limiter)
    if not spec.server:
        return api, None

    rejected = code == 429
    executed = ~rejected
    start = granted + a["wait"]  # dispatch (executed) or rejection (429) time
    empty = np.zeros(t_s.size)
    apf_wait: dict[str, ScrapedHistogram] = {}
    rejects: dict[str, FloatArray] = {}
    dispatched = inqueue = executing = empty
    if spec.apf_seats is not None:
        b = bg if bg is not None else np.zeros(0, dtype=BACKGROUND_LOG)
        b_ok = b["outcome"] == 0
        # every request of the level: arrival, leaving the queue, end of its seat time, outcome
        arr = np.concatenate((granted, b["arr"]))
        leave = np.concatenate((start, b["start"]))
        end = np.concatenate((resp, b["end"]))
        ok = np.concatenate((executed, b_ok))
        timeout = np.concatenate((rejected & (a["wait"] > 0), b["outcome"] == 2))
        waited = leave - arr
        apf_wait = {
            "true": _histogram(leave[ok], waited[ok], t_s, APF_WAIT_BUCKETS),
            "false": _histogram(leave[~ok], waited[~ok], t_s, APF_WAIT_BUCKETS),
        }
        dispatched = _counts_at(leave[ok], t_s)
        full = "queue-full" if spec.apf_queue_limit > 0 else "concurrency-limit"
        rejects = {full: _counts_at(leave[~ok & ~timeout], t_s)}
        if timeout.any():
            rejects["time-out"] = _counts_at(leave[timeout], t_s)
        inqueue = _counts_at(arr, t_s) - _counts_at(leave, t_s)
        executing = _counts_at(leave[ok], t_s) - _counts_at(end[ok], t_s)
    total = a["wait"] + a["exec"]
    sli = a["exec"] - a["hook"]
    req_duration: dict[str, ScrapedHistogram] = {}
    req_sli: dict[str, ScrapedHistogram] = {}
    req_total: dict[tuple[str, str], FloatArray] = {}
    for verb, vm in verbs:
        m = vm & executed
        req_duration[verb] = _histogram(resp[m], total[m], t_s, REQUEST_DURATION_BUCKETS)
        req_sli[verb] = _histogram(resp[m], sli[m], t_s, REQUEST_SLI_BUCKETS)
        for c in codes:
            mc = vm & (code == int(c))
            if c == "200" or mc.any():
                req_total[(verb, c)] = _counts_at(resp[mc], t_s)
    webhook = None
    if spec.webhook:
        m = write & executed
        webhook = _histogram(start[m] + a["hook"][m], a["hook"][m], t_s,
                             ADMISSION_WEBHOOK_BUCKETS)
    return api, ScrapedServer(spec.apf_seats, apf_wait, dispatched, rejects, inqueue, executing,
                              req_duration, req_sli, req_total, webhook)
