"""A fast discrete-event simulator of a controller draining a client-go work queue.

Semantics are those of :mod:`models.keyqueue` (client-go ``util/workqueue``): a raw event for a
key that is already dirty is coalesced; an event for a key being processed marks it dirty and it
is queued again at ``Done`` (so a key is never processed by two workers at once); workers take
the FIFO head; a failed reconcile calls ``AddRateLimited`` (delay from a
:class:`models.ratelimit.RetryPolicy`; a delay ≤ 0 is an immediate add) and then ``Done``; a
successful one calls ``Forget`` then ``Done``. Delayed keys keep the earliest ready time and go
through ``Add`` when ready.

Model inputs: Poisson raw events at rate λ over K keys (uniform, or Zipf(s) with
P(key k) ∝ (k+1)^−s so key 0 is the hot key); c workers; service time constant, exponential or
lognormal(mean, CV) (σ² = ln(1 + CV²), μ = ln(mean) − σ²/2); the first ``failing_keys`` keys
(all keys if not given) call a shared dependency and fail with probability ``fail_prob``
(optionally only inside a dependency outage window); an optional token bucket on the dependency
(``dependency_qps``) that a reconcile waits on — holding its worker — before its request. That
limit is outside the API client (an external service's): no ``rest_client_*`` or other scraped
series names it; it shows only as longer passes.

The mechanisms of real controllers, each off by default:

* **load over time** (``arrival_rate_per_s`` a :class:`models.load.RateProfile`: piecewise or
  a sine; Poisson by thinning) and a **worker count over time**
  (:class:`models.load.WorkerSchedule`: a worker that leaves finishes its pass first);
* a **hot-key share** h: each raw event is on key 0 with probability h, else uniform over the
  other K − 1 keys;
* a **serial section**: a fraction F of each pass's work runs under one process-wide lock
  (FIFO; taken at the start of the pass, so a lock requested at t is granted at
  max(t, when it is next free)). At saturation the lock serves one pass per F·E[S]: the
  throughput ceiling is 1 / (F·E[S]) whatever the worker count;
* a **coherency cost**: the rest of the pass, (1 − F)·S, is stretched by
  1 + σ(n − 1) + κ·n(n − 1), n = the workers in a pass when it starts (itself included) —
  Gunther's Universal Scalability Law as a mechanism: with every worker busy, throughput is
  n / (E[S]·(1 + σ(n − 1) + κn(n − 1))), retrograde past n* = √((1 − σ)/κ);
* the **API client's token bucket**, shared by every worker of the process (client-go
  ``flowcontrol.NewTokenBucketRateLimiter(qps, burst)``: golang.org/x/time/rate, starting full;
  each call reserves a token and waits debt / QPS): after its work a pass makes
  ``api_calls`` calls one after the other, each waiting for its token and then
  ``api_latency_s``. The ceiling is QPS ÷ calls per pass;
* a **connection pool** (a counting semaphore): ``pool_fraction`` F of each pass holds one of
  ``pool_size`` K slots (FIFO; waiting for a slot holds the worker, as the lock does). The
  lock is the pool with K = 1 — one station code, a FIFO over k slots kept as a min-heap of
  their free times: a request at x is granted at max(x, the earliest free time). At
  saturation the slots serve K passes per F·E[S]: the ceiling is K / (F·E[S]);
* **CPU work against N cores** (GOMAXPROCS ``cpu_cores``): ``cpu_fraction`` F of each pass is
  CPU work, run on the same station code with N slots — a FIFO over N cores, each part run to
  completion once it has a core. That approximates the Go scheduler (which time-slices
  runnable goroutines every 10 ms, so with oversubscribed cores every part stretches rather
  than waits); the wait for a core is what ``go_sched_latencies_seconds`` observes, the
  parts run are ``process_cpu_seconds_total``. The ceiling is N / (F·E[S]); with N ≥ the
  workers no part ever waits. One observation per CPU part: a real process also observes
  every other goroutine's (informers, timers), mostly of microseconds;
* **polling** (controller-runtime ``Result{RequeueAfter: P}``, ``requeue_after_s``): after a
  successful pass the key is forgotten (``Forget``) and re-added with ``AddAfter(key, P)``,
  the delaying queue keeping the earliest ready time per key (a raw event in between is
  coalesced with it as usual); the pass counts as ``reconcile_total{result="requeue_after"}``
  and its ``AddAfter`` in ``workqueue_retries_total`` (client-go's ``AddAfter`` calls
  ``metrics.retry()`` on every call; controller-runtime's priority queue when the delay is
  > 0, so both do). A key polls from its first add on (with ``initial_burst``: every key
  from t = 0, an informer's initial list). With idle workers a key's period is P + its pass;
  when the workers cannot keep up it stretches to P + queue wait + pass, and the throughput
  is the workers' capacity.

A pass goes through its stations in this order: the lock, the pool, the CPU, then the rest of
its work (stretched by the coherency cost), then its API calls; the fractions are parts of one
pass and add up to at most 1. The first station is asked when the pass starts (after the
dependency's token, as the lock always was); each later one when the pass reaches it (a
``STAGE`` event), so every station after the first takes its requests in time order.

Beyond the queue, the API server side, each part off by default (with all of them off the
run is the one it was without them, bit for bit):

* **writes**: of a pass's ``api_calls`` calls the last ``api_writes`` are writes (PUT), the
  others reads (GET);
* an **API Priority and Fairness priority level** (k8s.io/apiserver
  ``pkg/util/flowcontrol``): ``apf_seats`` seats, each request taking one for its execution
  (``api_latency_s``, plus the webhook for a write). Modelled as one FIFO queue over the seats
  — fair queuing between flows (shuffle sharding over 128 queues of ``workload-low``) is not:
  the controller and the level's other clients wait in one line. A request arriving when no
  seat is free and ``apf_queue_limit`` requests already wait is rejected (reason queue-full;
  with a limit of 0 the level has no queue: concurrency-limit); one whose wait would pass
  ``apf_wait_limit_s`` (the API server: a quarter of the request's 60 s timeout) is rejected
  then (time-out). The level's other clients: Poisson arrivals at
  ``apf_background_rate_per_s``, each holding a seat ``apf_background_latency_s``; rejected
  ones are dropped. A rejection is an HTTP 429 with a Retry-After: by default the API
  server's (``dropped_requests_tracker.go``: 1 s, doubled up to 32 s while the level drops
  at least 3 × Retry-After requests in Retry-After seconds, lowered by 1 s per second with
  fewer drops than Retry-After), or a fixed ``apf_retry_after_s``;
* client-go's **retries** (``rest/with_retry.go``, ``rest/request.go`` ``maxRetries: 10``):
  after a 429 the client sleeps the Retry-After holding the worker, goes through the token
  bucket again and retries, up to ``api_max_retries`` times; every attempt is a request
  (``rest_client_requests_total``). A call whose last retry fails fails, and so does its pass
  (``AddRateLimited``, as a failed reconcile: controller-runtime returns the error);
* an **admission webhook** on writes (``pkg/admission/plugin/webhook``): the write's
  admission, at the start of its execution (holding its APF seat), takes the webhook's
  ``webhook_latency_s``; with ``webhook_concurrency`` k it is a FIFO over k slots, so a
  saturated webhook's admission is its queue wait + service, and writes are capped at
  k / latency per second;
* **write conflicts** (optimistic concurrency on resourceVersion): key k's pass reads shared
  object k mod ``conflict_objects`` at its start; its write is stored at its response unless
  the object was written (successfully) since the version the pass saw — then it gets a 409
  Conflict, is not a write, and the pass fails (``AddRateLimited``). A pass's own writes move
  its version on. Concurrent passes on one object conflict: the 409 share rises with the
  workers by mechanism.

Every request reaches the server in the order it left the client's token bucket (which grants
in reservation order), so the server side is computed when the call is made, in the compiled
loop (``models/_simcore.py``): the level's seats and the webhook's slots as min-heaps of free
times, the waiting requests as a ring of the times they leave the queue, the background
arrivals drawn up front and admitted up to each controller arrival.

With ``scrape_interval_s`` the run also returns what a scrape of the controller's /metrics
would have read every interval (:mod:`models.scrape`: ``workqueue_*``,
``controller_runtime_*``, ``rest_client_*``, with the CPU ``process_cpu_seconds_total`` and
``go_sched_*``) — and of its API server's when one is modelled
(``apiserver_flowcontrol_*``, ``apiserver_request_*``, ``apiserver_admission_webhook_*``),
ready to be written as OpenMetrics and put into a real Prometheus.

Measured quantities follow the client-go metric definitions (``workqueue-metrics.md`` §1.2):
queue wait = first counted add → ``Get`` (includes time blocked behind the same key in flight,
excludes the ``AddAfter`` delay); work = ``Get`` → ``Done``; depth = number of dirty keys not
yet handed out. Time averages use exact areas: depth via Σ(wait) over the window, busy workers
via Σ(work overlap).

An **event** is one processed occurrence of: a raw arrival, a reconcile completion, or a
delayed retry becoming ready (heap pops superseded by an earlier ready time included). Events
per second of wall time are measured in ``benchmarks/bench_simulate.py``, never here.

Implementation: the event loop is compiled (``models/_simcore.py``: numba, cached on disk,
compiled per mechanism — a run compiles only the code of the mechanisms it uses; that module
says why numba and how the compiled loop gives the interpreted loop's results bit for bit).
One binary heap of (time, kind, key) entries for completions, retries and the initial burst,
so ties pop in (time, kind, key) order (a completion's entry is replaced by the worker's next
job in one heap operation); per-key state (dirty + add time, processing + start time,
waiting retry, penalised, failure count) in one hash-table record per key; arrivals and all
random numbers drawn here in numpy blocks, in the order and block sizes of the interpreted
loop; dependency request times binned with numpy after the loop. The function is
pure: same inputs and seed → same result; the optional ``progress`` callback only observes.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from models.errors import ModelInputError
from models.formatting import sig
from models.load import RateProfile, WorkerSchedule
from models.ratelimit import RetryPolicy
from models.scrape import ScrapedMetrics, ServerSpec, scrape_metrics

ServiceDist = Literal["exp", "const", "lognormal"]
SERVICE_DISTS: tuple[str, ...] = ("exp", "const", "lognormal")

_BLOCK = 1 << 15
_INF = float("inf")
_INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class SimEvent:
    """One line of the optional per-event log."""

    time_s: float
    kind: str
    """arrival, coalesced, start, success, failure, retry-ready."""
    key: int
    detail: str = ""


@dataclass(frozen=True)
class SimResult:
    """What one simulation run measured. Waits/rates are over the window after ``warmup_s``;
    the counters (raw events, adds, retries, events) cover the whole run."""

    duration_s: float
    warmup_s: float
    events: int
    """Processed events: arrivals + completions + retry-ready pops."""
    raw_events: int
    coalesced_events: int
    """Raw events that found their key already dirty (no counted add)."""
    adds: int
    """Counted adds (client-go ``workqueue_adds_total``): raw-event adds + retry adds."""
    coalescing_ratio: float | None
    """raw_events / adds caused by raw events (≥ 1)."""
    completed: int
    """Passes that ended after the warmup, failed ones included."""
    failed: int
    """Failed passes over the whole run (so with a warmup it may exceed ``completed``)."""
    throughput_per_s: float
    wait_mean_s: float | None
    wait_p50_s: float | None
    wait_p95_s: float | None
    wait_p99_s: float | None
    work_mean_s: float | None
    busy_workers_mean: float
    utilization: float
    depth_mean: float
    depth_max: int
    retries: int
    """AddRateLimited calls (client-go ``workqueue_retries_total``)."""
    dependency_requests: int
    dependency_rate_mean_per_s: float
    dependency_rate_peak_per_s: float
    dependency_bin_s: float
    dependency_rate_per_s: tuple[float, ...]
    """Requests to the shared dependency per second, one value per bin from t = 0."""
    healthy_wait_mean_s: float | None
    """Keys ≥ failing_keys; the healthy/failing split is None unless failing_keys is given."""
    healthy_wait_p99_s: float | None
    failing_wait_mean_s: float | None
    failing_wait_p99_s: float | None
    hot_key_throughput_per_s: float
    """Completed reconciles of key 0 (the Zipf or hot-share key) per second."""
    workers_mean: float
    """Time-average worker count over the window (the count, when it does not change)."""
    lock_wait_mean_s: float | None
    """Mean wait for the serial section's lock per pass (None without a serial section)."""
    api_calls: int
    """API calls made in the window."""
    api_limiter_wait_mean_s: float | None
    """Mean wait per API call in the client's token bucket."""
    # --- the API server side (``api_writes``, ``apf_seats``, the webhook, ``conflict_objects``);
    # counted over the window by the time of each response, dispatch or admission, so with
    # no warmup each equals its scraped counter at the last scrape (at T)
    api_attempts: int = 0
    """Requests sent, every attempt (client-go ``rest_client_requests_total``)."""
    api_429: int = 0
    """Attempts rejected by the APF level (HTTP 429 with Retry-After)."""
    api_409: int = 0
    """Writes rejected by the optimistic-concurrency check (HTTP 409 Conflict)."""
    api_retries: int = 0
    """Attempts 2…N of a call (client-go ``rest_client_request_retries_total``)."""
    api_failed_calls: int = 0
    """Calls that failed (a 409, or a 429 after the last retry): each failed its pass."""
    api_writes_ok: int = 0
    """Writes that succeeded (code 200)."""
    apf_dispatched: int = 0
    """Requests the APF level dispatched, the controller's and the background's."""
    apf_rejected_queue_full: int = 0
    """Requests the level rejected (controller's and background) because its queue was full
    (reason concurrency-limit for a level without a queue, ``apf_queue_limit`` 0)."""
    apf_rejected_timeout: int = 0
    """… because their wait passed the wait limit (reason time-out)."""
    apf_wait_mean_s: float | None = None
    """Mean APF queue wait of the controller's dispatched requests."""
    apf_busy_seats_mean: float | None = None
    """Time-average number of the level's seats in use over the window."""
    webhook_admissions: int = 0
    """Admissions of the controller's writes by the webhook."""
    webhook_wait_mean_s: float | None = None
    """Mean wait for a webhook slot per admission (0 with an unlimited webhook)."""
    admission_mean_s: float | None = None
    """Mean admission duration (the wait for a slot + the webhook's service time)."""
    # --- the pool, the CPU and polling (``pool_size``, ``cpu_cores``, ``requeue_after_s``)
    pool_wait_mean_s: float | None = None
    """Mean wait for a connection-pool slot per pass started in the window (None without a
    pool)."""
    cpu_wait_mean_s: float | None = None
    """Mean wait for a core per CPU part of a pass started in the window (the scheduler
    latency; None without a CPU model)."""
    cpu_busy_cores_mean: float | None = None
    """Time-average number of cores running CPU parts over the window (CPU seconds / span)."""
    requeue_after: int = 0
    """Successful passes ended in the window that returned ``RequeueAfter`` (Forget, then
    ``AddAfter(key, P)``): controller-runtime's ``reconcile_total{result="requeue_after"}``.
    Each also counts in ``workqueue_retries_total`` (not in :attr:`retries`)."""
    trace: tuple[SimEvent, ...] = field(default=(), repr=False)
    metrics: ScrapedMetrics | None = field(default=None, repr=False)
    """The scraped series, with ``scrape_interval_s``."""


def _check(name: str, value: float, *, positive: bool = False, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ModelInputError(f"{name} must be a finite number, got {value!r}.")
    if value < 0 or (positive and value == 0) or (not allow_zero and value == 0):
        raise ModelInputError(f"{name} must be {'positive' if positive else 'non-negative'}, "
                              f"got {value!r}.")
    return float(value)


def _check_int(name: str, value: int, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ModelInputError(f"{name} must be a whole number of at least {low}, got {value!r}.")
    return int(value)


def _key_drawer(
    n_keys: int, zipf_s: float, rng: np.random.Generator, hot_share: float = 0.0
) -> Callable[[int], np.ndarray]:
    """Uniform keys 0…K−1, or Zipf(s): P(k) ∝ (k+1)^−s by inverse CDF (key 0 is hottest), or
    key 0 with probability ``hot_share`` and else uniform over 1…K−1."""
    if hot_share > 0:
        def hot(n: int) -> np.ndarray:
            on_hot = rng.random(n) < hot_share
            others = 1 + rng.integers(0, max(n_keys - 1, 1), size=n) if n_keys > 1 else 0
            out: np.ndarray = np.where(on_hot, 0, others)
            return out

        return hot
    if zipf_s <= 0:
        def uniform(n: int) -> np.ndarray:
            out: np.ndarray = rng.integers(0, n_keys, size=n)
            return out

        return uniform
    weights = np.arange(1, n_keys + 1, dtype=np.float64) ** -zipf_s
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]

    def draw(n: int) -> np.ndarray:
        idx: np.ndarray = np.searchsorted(cdf, rng.random(n), side="right")
        out: np.ndarray = np.minimum(idx, n_keys - 1)
        return out

    return draw


def _size_hint(arrivals: float) -> int:
    """The first size of the loop's per-pass arrays (waits, dependency requests): the expected
    arrivals and six standard deviations of their Poisson count, so that a run of up to
    2^25 arrivals does not stop to grow them (growing a 10M-arrival run's arrays took 0.4 s;
    untouched zeros cost no memory)."""
    return int(min(arrivals + 6.0 * math.sqrt(arrivals) + 1024.0, 1 << 25))


def _arrival_blocks(
    lam: float,
    until_s: float,
    end_t: float,
    rng: np.random.Generator,
    draw_keys: Callable[[int], np.ndarray],
    progress: Callable[[float], None] | None,
    count: list[int],
    profile: RateProfile | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Blocks (times, keys) of Poisson arrivals up to ``until_s``, then one end marker
    (``end_t``, key −1). Times are cumulative sums of exponential gaps, drawn per block;
    with a ``profile`` the gaps are at its peak rate ``lam`` and each point is kept with
    probability rate(t) / peak (thinning). ``count[0]`` is increased by the number of
    arrivals in each block as it is made."""
    t0 = 0.0
    while lam > 0:
        times = t0 + np.cumsum(rng.exponential(1.0 / lam, _BLOCK))
        ks = draw_keys(_BLOCK).astype(np.int64, copy=False)
        last = float(times[-1])
        if profile is not None:
            keep = rng.random(_BLOCK) * lam < profile.rate_at(times)
            times, ks = times[keep], ks[keep]
        if last > until_s:
            n = int(np.searchsorted(times, until_s, side="right"))
            count[0] += n
            yield times[:n], ks[:n]
            break
        t0 = last
        count[0] += times.size
        if times.size:
            yield times, ks
        if progress is not None:
            progress(t0 / until_s)
    yield np.array([end_t]), np.array([-1], dtype=np.int64)


def _trace_events(rows: np.ndarray) -> tuple[SimEvent, ...]:
    """The loop's trace rows (time, kind code, key, value) as SimEvents."""
    from models._simcore import T_FAILURE, T_START, T_SUCCESS, TRACE_KINDS

    out = []
    for t, kind, key, value in zip(rows["t"].tolist(), rows["kind"].tolist(),
                                   rows["key"].tolist(), rows["value"].tolist(), strict=True):
        detail = ""
        if kind == T_FAILURE:
            detail = f"retry in {value:.6g} s"
        elif kind == T_START:
            detail = f"waited {value:.6g} s"
        elif kind == T_SUCCESS and value > 0:
            detail = f"requeue after {value:.6g} s"
        out.append(SimEvent(t, TRACE_KINDS[kind], key, detail))
    return tuple(out)


@dataclass(frozen=True)
class _ServerInputs:
    """The API server side's inputs, checked (see :func:`simulate`)."""

    on: bool
    writes: int
    apf_seats: int
    """0 without APF."""
    queue_limit: int
    wait_limit_s: float
    background_rate_per_s: float
    background_latency_s: float
    retry_after_s: float
    """0: the API server's dynamic Retry-After."""
    max_retries: int
    webhook_latency_s: float
    webhook_slots: int
    """0: unlimited."""
    objects: int
    """0: no conflicts."""


def _server_inputs(
    *, n_calls: int, api_writes: int, apf_seats: int | None, apf_queue_limit: int,
    apf_wait_limit_s: float, apf_background_rate_per_s: float, apf_background_latency_s: float,
    apf_retry_after_s: float | None, api_max_retries: int, webhook_latency_s: float,
    webhook_concurrency: int | None, conflict_objects: int | None, duration_s: float,
    scraped: bool, calls_requested: float,
) -> _ServerInputs:
    writes = _check_int("API writes per pass", api_writes, 0)
    if writes > n_calls:
        raise ModelInputError(f"API writes per pass ({writes}) cannot exceed the API calls per "
                              f"pass ({n_calls}).")
    seats = 0
    if apf_seats is not None:
        seats = _check_int("APF seats", apf_seats, 1)
        if seats > 10_000:
            raise ModelInputError(f"APF seats must be at most 10,000, got {apf_seats!r}.")
        if n_calls == 0:
            raise ModelInputError("an APF priority level needs API calls per pass "
                                  "(api_calls ≥ 1).")
    limit = _check_int("APF queue limit", apf_queue_limit, 0)
    if limit > 1_000_000:
        raise ModelInputError(f"APF queue limit must be at most 1,000,000, got "
                              f"{apf_queue_limit!r}.")
    wait_limit = _check("APF wait limit", apf_wait_limit_s, positive=True)
    if wait_limit > 60:
        raise ModelInputError(f"APF wait limit must be at most 60 s (the API server's hard "
                              f"limit), got {apf_wait_limit_s!r}.")
    bg_rate = _check("APF background rate", apf_background_rate_per_s)
    bg_lat = _check("APF background latency", apf_background_latency_s, positive=True)
    if bg_lat > 3600:
        raise ModelInputError(f"APF background latency must be at most 3600 s, got "
                              f"{apf_background_latency_s!r}.")
    if bg_rate > 0 and seats == 0:
        raise ModelInputError("APF background requests need an APF priority level "
                              "(apf_seats).")
    if bg_rate * duration_s > (1e7 if scraped else 1e8):
        raise ModelInputError(
            f"about {sig(bg_rate * duration_s)} APF background requests requested; the limit is "
            f"{'1e7 with scraped metrics' if scraped else '1e8'} per run.")
    retry_after = 0.0
    if apf_retry_after_s is not None:
        retry_after = _check("APF Retry-After", apf_retry_after_s, positive=True)
        if retry_after != int(retry_after) or retry_after > 3600:
            raise ModelInputError(
                f"APF Retry-After must be a whole number of seconds from 1 to 3600 (the header "
                f"is an integer), got {apf_retry_after_s!r}.")
        if seats == 0:
            raise ModelInputError("an APF Retry-After needs an APF priority level (apf_seats).")
    retries = _check_int("API max retries", api_max_retries, 0)
    if retries > 100:
        raise ModelInputError(f"API max retries must be at most 100, got {api_max_retries!r}.")
    hook = _check("webhook latency", webhook_latency_s)
    if hook > 30:
        raise ModelInputError(f"webhook latency must be at most 30 s (the webhook timeout's "
                              f"maximum), got {webhook_latency_s!r}.")
    if hook > 0 and writes == 0:
        raise ModelInputError("an admission webhook needs API writes per pass "
                              "(api_writes ≥ 1).")
    slots = 0
    if webhook_concurrency is not None:
        slots = _check_int("webhook concurrency", webhook_concurrency, 1)
        if slots > 10_000:
            raise ModelInputError(f"webhook concurrency must be at most 10,000, got "
                                  f"{webhook_concurrency!r}.")
        if hook == 0:
            raise ModelInputError("a webhook concurrency needs a webhook latency "
                                  "(webhook_latency_s > 0).")
    objects = 0
    if conflict_objects is not None:
        objects = _check_int("conflict objects", conflict_objects, 1)
        if objects > 10_000_000:
            raise ModelInputError(f"conflict objects must be at most 10,000,000, got "
                                  f"{conflict_objects!r}.")
        if writes == 0:
            raise ModelInputError("conflict objects need API writes per pass (api_writes ≥ 1).")
    on = writes > 0 or seats > 0 or hook > 0 or objects > 0
    if on and scraped and calls_requested > 1e7:
        raise ModelInputError(
            f"about {sig(calls_requested)} API calls requested; with the API server side and "
            "scraped metrics the simulator keeps a record of every attempt (about 90 bytes), "
            "so its limit is 1e7 calls per run.")
    return _ServerInputs(on, writes, seats, limit, wait_limit, bg_rate, bg_lat, retry_after,
                         retries, hook, slots, objects)


def _poisson_times(rate: float, until_s: float, rng: np.random.Generator) -> np.ndarray:
    """Poisson arrival times at ``rate`` in [0, until_s], ascending: the arrivals' own block
    generator (:func:`_arrival_blocks`) without keys and without its end marker."""
    blocks = _arrival_blocks(rate, until_s, until_s, rng,
                             lambda n: np.zeros(n, dtype=np.int64), None, [0])
    kept: np.ndarray = np.concatenate([t for t, k in blocks if not (k.size == 1 and k[0] < 0)]
                                      or [np.empty(0)])
    return kept


def _server_results(st: dict[str, Any], srv: _ServerInputs, span: float) -> dict[str, Any]:
    """The SimResult fields of the API server side from the loop's final state."""
    if not srv.on:
        return {}

    def ratio(num: str, den: str) -> float | None:
        return float(st[num]) / int(st[den]) if st[den] else None

    return {
        "api_attempts": int(st["att_n"]), "api_429": int(st["n429"]),
        "api_409": int(st["n409"]), "api_retries": int(st["nretry"]),
        "api_failed_calls": int(st["nfailcall"]), "api_writes_ok": int(st["nwrite_ok"]),
        "apf_dispatched": int(st["apf_disp"]),
        "apf_rejected_queue_full": int(st["apf_rej_qf"]),
        "apf_rejected_timeout": int(st["apf_rej_to"]),
        "apf_wait_mean_s": ratio("apf_wait_sum", "apf_wait_n") if srv.apf_seats else None,
        "apf_busy_seats_mean": float(st["apf_busy"]) / span if srv.apf_seats else None,
        "webhook_admissions": int(st["hook_n"]),
        "webhook_wait_mean_s": ratio("hook_wait", "hook_n"),
        "admission_mean_s": ratio("hook_sum", "hook_n"),
    }


MAX_POOL_SIZE = 100_000
"""Connection-pool slots (a min-heap of free times): far above any real pool (database/sql and
HTTP transports run tens to hundreds)."""
MAX_CPU_CORES = 10_000
"""GOMAXPROCS: the largest machines have a few hundred hardware threads."""
MAX_REQUEUE_AFTER_S = 365 * 86400.0
"""A RequeueAfter of more than a year is no poll."""


def _station_inputs(what: str, size_name: str, size: int | None, fraction_name: str,
                    fraction: float, most: int) -> tuple[int, float]:
    """(slots, fraction) of the pool or the CPU, checked; (0, 0.0) when off. Each needs the
    other: a size without a fraction models nothing, a fraction without a size has no slots."""
    f = _check(fraction_name, fraction)
    if f > 1:
        raise ModelInputError(f"{fraction_name} must be between 0 and 1, got {fraction!r}.")
    if size is None:
        if f > 0:
            raise ModelInputError(f"a {fraction_name} needs the {size_name} ({what} slots).")
        return 0, 0.0
    k = _check_int(size_name, size, 1)
    if k > most:
        raise ModelInputError(f"{size_name} must be at most {most:,}, got {size!r}.")
    if f == 0:
        raise ModelInputError(f"{size_name} needs a {fraction_name} above 0 (the share of each "
                              "pass that holds a slot).")
    return k, f


def _station_results(st: dict[str, Any], pool_f: float, cpu_f: float, poll: float,
                     span: float) -> dict[str, Any]:
    """The SimResult fields of the pool, the CPU and polling from the loop's final state."""
    out: dict[str, Any] = {}
    if pool_f > 0:
        out["pool_wait_mean_s"] = (float(st["pool_wait"]) / int(st["pool_n"]) if st["pool_n"]
                                   else None)
    if cpu_f > 0:
        out["cpu_wait_mean_s"] = (float(st["cpu_wait"]) / int(st["cpu_n"]) if st["cpu_n"]
                                  else None)
        out["cpu_busy_cores_mean"] = float(st["cpu_busy"]) / span
    if poll > 0:
        out["requeue_after"] = int(st["requeue_n"])
    return out


def simulate(
    *,
    arrival_rate_per_s: float | RateProfile,
    keys: int,
    workers: int | WorkerSchedule,
    service_mean_s: float,
    duration_s: float,
    seed: int = 0,
    zipf_s: float = 0.0,
    service_dist: ServiceDist = "exp",
    service_cv: float = 1.0,
    fail_prob: float = 0.0,
    failing_keys: int | None = None,
    fail_window_s: tuple[float, float] | None = None,
    retry: RetryPolicy | None = None,
    forget_on_success: bool = True,
    dependency_qps: float | None = None,
    dependency_burst: int | None = None,
    initial_burst: bool = False,
    warmup_s: float = 0.0,
    bin_s: float | None = None,
    trace_limit: int = 0,
    progress: Callable[[float], None] | None = None,
    hot_key_share: float = 0.0,
    lock_fraction: float = 0.0,
    coherence: tuple[float, float] = (0.0, 0.0),
    api_calls: int = 0,
    api_qps: float | None = None,
    api_burst: int | None = None,
    api_latency_s: float = 0.0,
    scrape_interval_s: float | None = None,
    api_writes: int = 0,
    apf_seats: int | None = None,
    apf_queue_limit: int = 50,
    apf_wait_limit_s: float = 15.0,
    apf_background_rate_per_s: float = 0.0,
    apf_background_latency_s: float = 0.05,
    apf_retry_after_s: float | None = None,
    api_max_retries: int = 10,
    webhook_latency_s: float = 0.0,
    webhook_concurrency: int | None = None,
    conflict_objects: int | None = None,
    pool_size: int | None = None,
    pool_fraction: float = 0.0,
    cpu_cores: int | None = None,
    cpu_fraction: float = 0.0,
    requeue_after_s: float | None = None,
) -> SimResult:
    """Simulate ``duration_s`` seconds of a controller; see the module docstring for the model.

    ``failing_keys`` = m: keys 0…m−1 call the dependency and may fail; the rest are healthy
    (with Zipf the failing keys are the hottest). ``initial_burst`` adds keys 0…m−1 at t = 0
    (N keys failing together). ``fail_window_s`` = (start, end): failures only for attempts
    started inside it (a dependency outage). ``retry`` defaults to controller-runtime's
    exponential 5 ms → 1000 s. ``trace_limit`` > 0 keeps the first that many events in
    ``trace``. ``progress(fraction)`` is called now and then with simulated-time progress.

    ``coherence`` = (σ, κ) of the coherency stretch; ``api_calls`` per pass through the
    client's token bucket of ``api_qps`` (None: no limit) and ``api_burst`` (default 1 s of
    tokens, at least 1); ``scrape_interval_s`` fills :attr:`SimResult.metrics`.

    The API server side (module docstring, "beyond the queue"): ``api_writes`` of the
    ``api_calls`` (the last ones) are writes (PUT), the rest reads (GET); ``apf_seats`` seats
    of the APF priority level, a queue of ``apf_queue_limit``, a wait limit
    ``apf_wait_limit_s``, background requests at ``apf_background_rate_per_s`` each holding a
    seat ``apf_background_latency_s``, a fixed ``apf_retry_after_s`` (None: the API server's
    dynamic one), ``api_max_retries`` client retries of a 429; ``webhook_latency_s`` and
    ``webhook_concurrency`` (None: unlimited) of the admission webhook on writes;
    ``conflict_objects`` shared objects for the resourceVersion check.

    The pool, the CPU and polling (module docstring): ``pool_size`` slots of a connection
    pool holding ``pool_fraction`` of each pass; ``cpu_cores`` cores (GOMAXPROCS) running
    ``cpu_fraction`` of each pass; ``requeue_after_s`` P: every successful pass returns
    ``RequeueAfter: P``."""
    profile: RateProfile | None = None
    if isinstance(arrival_rate_per_s, int | float) or not hasattr(arrival_rate_per_s, "rate_at"):
        lam = _check("arrival rate", arrival_rate_per_s)  # type: ignore[arg-type]
    else:
        profile = arrival_rate_per_s
        lam = _check("peak arrival rate", profile.peak_per_s)
    K = _check_int("keys", keys, 1)
    schedule: WorkerSchedule | None = None
    if isinstance(workers, WorkerSchedule):
        schedule = workers
        c = workers.workers[0]
    else:
        c = _check_int("workers", workers, 1)
    mean_s = _check("service mean", service_mean_s, positive=True)
    T = _check("duration", duration_s, positive=True)
    W = _check("warmup", warmup_s)
    if W >= T:
        raise ModelInputError(f"warmup ({W} s) must be shorter than the duration ({T} s).")
    zs = _check("Zipf exponent", zipf_s)
    if service_dist not in SERVICE_DISTS:
        raise ModelInputError(
            f"service distribution must be one of {', '.join(SERVICE_DISTS)}, got {service_dist!r}."
        )
    cv = _check("service CV", service_cv)
    p_fail = _check("failure probability", fail_prob)
    if p_fail > 1:
        raise ModelInputError(f"failure probability must be between 0 and 1, got {fail_prob!r}.")
    m = K if failing_keys is None else _check_int("failing keys", failing_keys, 0)
    if m > K:
        raise ModelInputError(f"failing keys ({m}) cannot exceed the number of keys ({K}).")
    fw0, fw1 = (0.0, _INF) if fail_window_s is None else (
        _check("outage start", fail_window_s[0]), _check("outage end", fail_window_s[1]))
    policy = retry if retry is not None else RetryPolicy()
    dep_on = dependency_qps is not None
    dq = _check("dependency qps", dependency_qps, positive=True) if dependency_qps else 1.0
    if dependency_qps is not None and dependency_qps <= 0:
        raise ModelInputError(f"dependency qps must be positive, got {dependency_qps!r}.")
    dburst = float(_check_int("dependency burst", dependency_burst, 1)
                   if dependency_burst is not None else max(1, math.ceil(dq)))
    binw = (_check("bin width", bin_s, positive=True) if bin_s is not None
            else max(T / 200.0, 0.001))
    nbins = math.ceil(T / binw)
    if nbins > 1_000_000:
        raise ModelInputError("too many rate bins (over 1,000,000); use a larger bin width.")
    if schedule is not None and len(schedule.changes()) > 100_000:
        raise ModelInputError("the workers schedule changes more than 100,000 workers.")
    if scrape_interval_s is not None and lam * T > 1e7:
        raise ModelInputError(
            f"about {sig(lam * T)} raw events requested; with scraped metrics the simulator "
            "keeps a log of every add, Get, Done and API call (about 100 bytes per pass), so "
            "its limit is 1e7 per run.")
    if lam * T > 5e8:
        raise ModelInputError(
            f"about {sig(lam * T)} raw events requested; the simulator's limit is 5e8 per run."
        )
    if initial_burst and m > 10_000_000:
        raise ModelInputError("initial burst of more than 10,000,000 keys is not supported.")
    if zs > 0 and K > 10_000_000:
        raise ModelInputError("Zipf-skewed keys need keys ≤ 10,000,000 (a probability table).")
    n_trace = _check_int("trace limit", trace_limit, 0)
    hot = _check("hot-key share", hot_key_share)
    if hot >= 1:
        raise ModelInputError(f"hot-key share must be below 1, got {hot_key_share!r}.")
    if hot > 0 and zs > 0:
        raise ModelInputError("use either a hot-key share or a Zipf exponent, not both.")
    lock_f = _check("lock fraction", lock_fraction)
    if lock_f > 1:
        raise ModelInputError(f"lock fraction must be between 0 and 1, got {lock_fraction!r}.")
    pool_k, pool_f = _station_inputs("pool", "pool size", pool_size, "pool fraction",
                                     pool_fraction, MAX_POOL_SIZE)
    cpu_n, cpu_f = _station_inputs("CPU", "CPU cores", cpu_cores, "CPU fraction",
                                   cpu_fraction, MAX_CPU_CORES)
    if lock_f + pool_f + cpu_f > 1:
        raise ModelInputError(
            f"the lock, pool and CPU fractions are parts of one pass and must add up to at "
            f"most 1, got {lock_f:g} + {pool_f:g} + {cpu_f:g}.")
    poll = 0.0
    if requeue_after_s is not None:
        poll = _check("RequeueAfter period", requeue_after_s, positive=True)
        if poll > MAX_REQUEUE_AFTER_S:
            raise ModelInputError(f"RequeueAfter period must be at most {MAX_REQUEUE_AFTER_S:g} "
                                  f"s (a year), got {requeue_after_s!r}.")
    if len(coherence) != 2:
        raise ModelInputError("coherence is a pair (σ, κ).")
    sigma, kappa = (_check("coherence σ", coherence[0]), _check("coherence κ", coherence[1]))
    if sigma > 10 or kappa > 10:
        raise ModelInputError("coherence σ and κ must be at most 10 (a pass stretched by more "
                              "is not a controller).")
    n_calls = _check_int("API calls per pass", api_calls, 0)
    if n_calls > 1000:
        raise ModelInputError(f"API calls per pass must be at most 1000, got {api_calls!r}.")
    if api_qps is not None and _check("API QPS", api_qps) <= 0:
        raise ModelInputError(f"API QPS must be positive, got {api_qps!r}.")
    if (api_qps is not None or api_burst is not None) and n_calls == 0:
        raise ModelInputError("an API QPS or burst needs API calls per pass (api_calls ≥ 1).")
    if api_burst is not None and api_qps is None:
        raise ModelInputError("an API burst needs an API QPS.")
    aq = float(api_qps) if api_qps is not None else _INF
    aburst = (float(_check_int("API burst", api_burst, 1)) if api_burst is not None
              else float(max(1, math.ceil(aq))) if api_qps is not None else _INF)
    call_lat = _check("API call latency", api_latency_s)
    if call_lat > 0 and n_calls == 0:
        raise ModelInputError("an API call latency needs API calls per pass (api_calls ≥ 1).")
    if scrape_interval_s is not None:
        step = _check("scrape interval", scrape_interval_s, positive=True)
        if T / step > 1_000_000:
            raise ModelInputError("too many scrapes (over 1,000,000); use a longer interval.")
    srv = _server_inputs(
        n_calls=n_calls, api_writes=api_writes, apf_seats=apf_seats,
        apf_queue_limit=apf_queue_limit, apf_wait_limit_s=apf_wait_limit_s,
        apf_background_rate_per_s=apf_background_rate_per_s,
        apf_background_latency_s=apf_background_latency_s, apf_retry_after_s=apf_retry_after_s,
        api_max_retries=api_max_retries, webhook_latency_s=webhook_latency_s,
        webhook_concurrency=webhook_concurrency, conflict_objects=conflict_objects,
        duration_s=T, scraped=scrape_interval_s is not None, calls_requested=lam * T * n_calls)
    if poll > 0:
        # every key that was ever added is polled every P (+ its pass): a run of up to
        # min(K, adds) keys × T / P passes, beyond the raw events' own limit
        polled = min(float(K), lam * T + (m if initial_burst else 0))
        limit = 1e7 if scrape_interval_s is not None else 5e8
        if polled * T / poll > limit:
            raise ModelInputError(
                f"about {sig(polled * T / poll)} polling passes requested ({sig(polled)} keys "
                f"every {poll:g} s for {T:g} s); the simulator's limit is {limit:.0e} per run"
                f"{' with scraped metrics' if scrape_interval_s is not None else ''}.")
    ext_on = lock_f > 0 or sigma > 0 or kappa > 0 or n_calls > 0 or pool_f > 0 or cpu_f > 0

    # The event loop is compiled (models/_simcore.py, numba); it is imported here, not at the
    # top, so that importing this module stays cheap for the commands that never simulate.
    from models import _simcore as core

    rng = np.random.default_rng(seed)
    jitter_rng = np.random.default_rng(rng.integers(1 << 62))  # the limiter's generator

    # --- random streams (drawn here in blocks; the loop only reads them) -------------------
    arr_rng, key_rng, svc_rng, u_rng = rng.spawn(4)
    draw_keys = _key_drawer(K, zs, key_rng, hot)
    end_t = math.nextafter(T, _INF)

    draw_svc: Callable[[], npt.NDArray[np.float64]] | None
    if service_dist == "const" or (service_dist == "lognormal" and cv == 0):
        svc_const = True
        draw_svc = None
    elif service_dist == "exp":
        svc_const = False
        draw_svc = lambda: svc_rng.exponential(mean_s, _BLOCK)  # noqa: E731
    else:
        svc_const = False
        sig2 = math.log1p(cv * cv)
        mu_ln = math.log(mean_s) - sig2 / 2.0
        sigma_ln = math.sqrt(sig2)
        draw_svc = lambda: svc_rng.lognormal(mu_ln, sigma_ln, _BLOCK)  # noqa: E731
    draw_u = (lambda: u_rng.random(_BLOCK)) if p_fail else None
    jittered = policy.kind == "exp" and policy.jitter != "none"
    draw_jitter = (lambda: jitter_rng.random(_BLOCK)) if jittered else None

    params = np.zeros(1, dtype=core.SIM_PARAMS)
    params[0] = (W, p_fail, fw0, fw1, mean_s, dq, dburst,
                 min(m, _INT64_MAX),  # keys are drawn below 2^63, so k < m is unchanged
                 svc_const, dep_on, forget_on_success, n_trace,
                 ext_on, lock_f, sigma, kappa, n_calls, call_lat, aq, aburst,
                 scrape_interval_s is not None,
                 srv.on, srv.writes, srv.apf_seats > 0, srv.queue_limit, srv.wait_limit_s,
                 srv.retry_after_s, srv.background_latency_s, srv.max_retries,
                 srv.webhook_latency_s, srv.webhook_slots, srv.objects, T,
                 pool_f, cpu_f, poll, 5 if cpu_f > 0 else 3)
    lim = core.limiter_record(policy.kind, policy.base_s, policy.cap_s, policy.jitter,
                              policy.global_qps, policy.burst)
    n_arrivals = [0]
    blocks = _arrival_blocks(lam, T, end_t, arr_rng, draw_keys, progress, n_arrivals, profile)
    # the APF level's other clients: Poisson arrivals up to T, from their own stream (a new
    # child of the seed, so every other stream is the one it was without them)
    background = (_poisson_times(srv.background_rate_per_s, T, rng.spawn(1)[0])
                  if srv.background_rate_per_s > 0 else None)

    # --- the event loop (models/_simcore.py: _sim_run) -------------------------------------
    run = core.run_simulation(
        params=params, lim=lim, bucket=core.new_bucket(policy.burst), workers=c,
        burst_keys=m if initial_burst else 0,
        worker_changes=schedule.changes() if schedule is not None else (),
        api_burst=aburst, blocks=blocks, draw_svc=draw_svc, draw_u=draw_u,
        draw_jitter=draw_jitter, size_hint=_size_hint(lam * T), T=T,
        apf_seats=srv.apf_seats, hook_slots=srv.webhook_slots, objects=srv.objects,
        background=background, pool_slots=pool_k, cpu_slots=cpu_n,
    )

    if progress is not None:
        progress(1.0)

    st = run.state
    raw = st["raw"] + n_arrivals[0]
    coalesced = st["coalesced"]
    completed, failed, retries = int(st["completed"]), int(st["failed"]), int(st["retries"])
    ev_adds = raw - coalesced
    completions_all = completed + int(st["early_done"])
    wh, wf = run.wh, run.wf
    inv_bin = 1.0 / binw

    # --- residuals at the end of the window ----------------------------------------------
    busy_area = run.busy_area  # includes the reconciles still in flight, in heap order
    # ∫ depth dt over [W, T] = Σ (get − max(add, W)) over gets in the window + keys still dirty
    depth_area = core.fsum(wh) + core.fsum(wf) - float(st["depth_corr"])  # = math.fsum
    depth_area = core.dirty_residual(run.table, depth_area, T, W)
    # requests per bin; a request delayed past T by the token bucket lands in bin nbins
    bins = np.bincount(
        np.minimum(np.floor(run.dep * inv_bin), nbins).astype(np.int64),
        minlength=nbins + 1,
    ).tolist()
    dep_requests = sum(bins[:nbins])  # requests sent within [0, T]

    span = T - W
    c_mean = schedule.mean(W, T) if schedule is not None else float(c)
    metrics = None
    if scrape_interval_s is not None:
        metrics = scrape_metrics(
            run.log, duration_s=T, scrape_interval_s=float(scrape_interval_s),
            workers_at=schedule.at if schedule is not None else (
                lambda t: np.full(t.shape, float(c))),
            call_latency_s=call_lat, api_calls=n_calls > 0,
            attempts=run.attempts if srv.on else None, background=run.background,
            spec=ServerSpec(
                apf_seats=srv.apf_seats or None, apf_queue_limit=srv.queue_limit,
                webhook=srv.webhook_latency_s > 0,
                reads=srv.writes < n_calls, writes=srv.writes > 0,
                server=srv.apf_seats > 0 or srv.webhook_latency_s > 0 or srv.objects > 0,
            ) if srv.on else None,
            requeue_after=poll > 0, cpu_cores=cpu_n if cpu_f > 0 else None)
    split = failing_keys is not None  # healthy vs failing only when a failing subset is given
    waits = np.concatenate((wh, wf))
    rates = np.asarray(bins[:nbins], dtype=np.float64) * inv_bin
    last_bin = T - (nbins - 1) * binw  # the final bin may be shorter than binw
    if nbins and last_bin > 0:
        rates[-1] = bins[nbins - 1] / last_bin

    def q(arr: list[float] | np.ndarray, pct: float) -> float | None:
        return float(np.percentile(arr, pct)) if len(arr) else None

    # one partition for the three percentiles (the same values as three separate calls)
    p50, p95, p99 = (np.percentile(waits, [50.0, 95.0, 99.0]).tolist() if len(waits)
                     else (None, None, None))

    def mean(arr: list[float] | np.ndarray) -> float | None:
        return float(np.mean(arr)) if len(arr) else None

    return SimResult(
        duration_s=T,
        warmup_s=W,
        events=raw + completions_all + int(st["retry_pops"]),
        raw_events=raw,
        coalesced_events=coalesced,
        adds=ev_adds + int(st["retry_adds"]),
        coalescing_ratio=(raw / ev_adds) if ev_adds and raw else None,
        completed=completed,
        failed=failed,
        throughput_per_s=completed / span,
        wait_mean_s=mean(waits),
        wait_p50_s=p50,
        wait_p95_s=p95,
        wait_p99_s=p99,
        work_mean_s=(float(st["work_sum"]) / completed) if completed else None,
        busy_workers_mean=busy_area / span,
        utilization=busy_area / span / c_mean,
        depth_mean=depth_area / span,
        depth_max=int(st["depth_max"]),
        retries=retries,
        dependency_requests=dep_requests,
        dependency_rate_mean_per_s=dep_requests / T,
        dependency_rate_peak_per_s=float(rates.max()) if nbins else 0.0,
        dependency_bin_s=binw,
        dependency_rate_per_s=tuple(rates.tolist()),
        healthy_wait_mean_s=mean(wh) if split else None,
        healthy_wait_p99_s=q(wh, 99) if split else None,
        failing_wait_mean_s=mean(wf) if split else None,
        failing_wait_p99_s=q(wf, 99) if split else None,
        hot_key_throughput_per_s=int(st["hot_done"]) / span,
        workers_mean=c_mean,
        lock_wait_mean_s=(float(st["lock_wait"]) / int(st["lock_n"])) if st["lock_n"] else None,
        api_calls=int(st["api_n"]),
        api_limiter_wait_mean_s=(float(st["api_wait"]) / int(st["api_n"])) if st["api_n"]
        else None,
        **_server_results(st, srv, span),
        **_station_results(st, pool_f, cpu_f, poll, span),
        trace=_trace_events(run.trace),
        metrics=metrics,
    )


# --- compiling ahead (the compiled loops of models/_simcore.py) --------------------------------
#
# The loops are compiled on their first call and kept in numba's on-disk cache (``cache=True``
# in ``models._simcore._jit``: ``__pycache__`` beside that file, or ``$NUMBA_CACHE_DIR``, or
# numba's user cache directory when the package's folder is read-only), so a machine compiles
# them once per version of their source. A process that wants the compile behind it before
# anyone waits on it (``queuelens serve``, at start-up, in a background thread) calls
# :func:`warm_up`; one that wants to say a compile is under way (``queuelens simulate``) runs
# inside :func:`compile_notice`.

COMPILE_ESTIMATE_S = 12
"""How long :func:`warm_up` takes with an empty cache: every copy of the simulator's loop and
the storm's — 12.2 s measured on the 2-core development VM at load average 4.4 (numba 0.68,
Python 3.11; ``benchmarks/bench_simulate.py``; 13–17 s on a quiet machine before issue 22).
With the cache warm it takes about 1 s, most of it numba's import and start-up."""

RUN_COMPILE_ESTIMATE_S = 6
"""How long one run's compile takes with an empty cache: only the copy of the loop for the
mechanisms it uses (``models._simcore``, "compiled per mechanism"). The first ``queuelens
simulate`` of 1M arrivals (an M/M/4 queue alone) took 5.6 s as a whole process at load average
4.7, 7–9 s at load 5 (it was 15–24 s); a run with the stations, API calls or the server
compiles a larger copy, up to about twice that. ``queuelens simulate`` says so when it
compiles."""


def warm_up() -> None:
    """Compile, or load from the disk cache, every compiled loop of ``models._simcore``, on
    runs of a few thousand events (a few milliseconds once compiled).

    The loops are reached through the drivers real runs use (:func:`simulate` and
    ``_simcore.run_storm``), so they are compiled for the argument types of real runs. numba
    compiles a callee together with its caller, so what must be reached is every loop called
    from Python — ``_sim_run`` in each of its three copies (the queue alone; with the
    stations or API calls; with the API server side too), ``heapify`` (worker changes),
    ``rehash`` (more keys in play than the first table's 1,024 slots hold half full),
    ``_background_upto`` (an APF level), ``_busy_residual``, ``fsum``, ``_tree_build``,
    ``_storm_fast`` and ``_storm_run`` (``exact``); ``tests/cli/test_compile_ahead.py``
    checks that every one of :func:`compiled_loops` has been compiled after it, and that
    runs of each copy compile nothing more."""
    from models import _simcore as core

    # 2,000 events/s over 4,096 keys, one worker (100 passes/s) until a second joins at
    # 0.5 s: about 1,000 keys are dirty at once, so the key table grows
    run: dict[str, Any] = {
        "arrival_rate_per_s": 2000.0, "keys": 4096,
        "workers": WorkerSchedule((0.0, 0.5), (1, 2)), "service_mean_s": 0.01,
        "duration_s": 1.0, "seed": 0, "fail_prob": 0.1, "scrape_interval_s": 0.5}
    simulate(**run)  # the queue alone
    simulate(**run, lock_fraction=0.1, api_calls=1)  # the stations and API calls
    simulate(**run, api_calls=1, apf_seats=1, apf_background_rate_per_s=10.0)  # the server
    lim = core.limiter_record("exp", 0.005, 10.0, "full", 10.0, 100)
    for exact in (False, True):
        core.run_storm(keys=10, lim=lim, bucket=core.new_bucket(100), outage_s=5.0,
                       attempt_s=0.05, horizon_s=50.0, bin_s=0.05, nbins=1000,
                       budget=1_000_000, seed=0, exact=exact)


def compiled_loops() -> dict[str, Any]:
    """The compiled functions (numba dispatchers) of ``models._simcore``, by name."""
    import numba

    from models import _simcore as core

    return {name: fn for name, fn in vars(core).items()
            if isinstance(fn, numba.core.registry.CPUDispatcher)}


@contextmanager
def compile_notice(note: Callable[[], None]) -> Iterator[None]:
    """Within the block, call ``note`` once, when numba starts compiling one of
    ``models._simcore``'s loops — so only with a cold cache: a loop loaded from the disk cache
    is not compiled (numba raises its ``numba:compile`` event only after a cache miss). A
    compile in any thread counts: numba's event listeners are process-wide."""
    from numba.core import event

    from models import _simcore as core

    lock = threading.Lock()
    said = False

    class _First(event.Listener):
        def on_start(self, ev: Any) -> None:
            nonlocal said
            if getattr(ev.data["dispatcher"].py_func, "__module__", None) != core.__name__:
                return
            with lock:
                if said:
                    return
                said = True
            note()

        def on_end(self, ev: Any) -> None:
            pass

    with event.install_listener("numba:compile", _First()):
        yield
