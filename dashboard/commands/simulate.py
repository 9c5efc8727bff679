"""`queuelens simulate`: discrete-event simulation of a controller and its work queue."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

from dashboard.cliutil import (
    BARE_SECONDS,
    CliError,
    ProgressBar,
    add_format_argument,
    check_output_path,
    duration_or_zero,
    emit,
    fraction,
    jsonable,
    non_negative_duration,
    non_negative_float,
    parse_duration,
    parse_time,
    positive_float,
    warn,
    write_atomically,
)
from models.formatting import number_text

COLUMNS = ("metric", "value")

# (result field, label, when the row is shown: None = always, else the mechanism's name)
_ROWS: tuple[tuple[str, str, str | None], ...] = (
    ("raw_events", "raw events", None),
    ("coalesced_events", "coalesced raw events", None),
    ("adds", "counted adds (adds_total)", None),
    ("coalescing_ratio", "raw events per counted add", None),
    ("completed", "completed reconciles", None),
    ("failed", "failed reconciles", None),
    ("throughput_per_s", "throughput /s", None),
    ("wait_mean_s", "queue wait mean s", None),
    ("wait_p95_s", "queue wait p95 s", None),
    ("wait_p99_s", "queue wait p99 s", None),
    ("work_mean_s", "work time mean s", None),
    ("lock_wait_mean_s", "lock wait mean s (per pass)", "lock"),
    ("pool_wait_mean_s", "pool slot wait mean s (per pass)", "pool"),
    ("cpu_wait_mean_s", "CPU wait for a core mean s (per pass)", "cpu"),
    ("cpu_busy_cores_mean", "CPU cores busy (mean)", "cpu"),
    ("requeue_after", "requeue_after reconciles (RequeueAfter)", "poll"),
    ("workers_mean", "workers (time mean)", "workers_schedule"),
    ("busy_workers_mean", "busy workers (mean)", None),
    ("utilization", "utilization", None),
    ("depth_mean", "depth mean", None),
    ("depth_max", "depth max", None),
    ("retries", "retries (AddRateLimited)", None),
    ("dependency_rate_mean_per_s", "dependency requests /s mean", None),
    ("dependency_rate_peak_per_s", "dependency requests /s peak (per bin)", None),
    ("api_calls", "API calls", "api"),
    ("api_limiter_wait_mean_s", "API client limiter wait mean s (per call)", "api_qps"),
    ("api_attempts", "API requests (every attempt)", "server"),
    ("api_retries", "API retries (after a 429)", "apf"),
    ("api_429", "API 429 answers", "apf"),
    ("api_409", "API 409 conflicts", "conflicts"),
    ("api_failed_calls", "API calls failed (each failed its pass)", "server"),
    ("api_writes_ok", "API writes stored (200)", "writes"),
    ("apf_dispatched", "APF requests dispatched (with background)", "apf"),
    ("apf_rejected_queue_full", "APF rejected: queue full", "apf"),
    ("apf_rejected_timeout", "APF rejected: wait limit", "apf"),
    ("apf_wait_mean_s", "APF queue wait mean s", "apf"),
    ("apf_busy_seats_mean", "APF seats busy (mean)", "apf"),
    ("webhook_admissions", "webhook admissions", "webhook"),
    ("webhook_wait_mean_s", "webhook slot wait mean s", "webhook"),
    ("admission_mean_s", "webhook admission mean s", "webhook"),
    ("healthy_wait_mean_s", "healthy keys wait mean s", None),
    ("healthy_wait_p99_s", "healthy keys wait p99 s", None),
    ("failing_wait_mean_s", "failing keys wait mean s", None),
    ("failing_wait_p99_s", "failing keys wait p99 s", None),
    ("hot_key_throughput_per_s", "key 0 (hot key) throughput /s", None),
    ("events", "simulated events", None),
)

DEFAULT_SCRAPE_INTERVAL_S = 15.0
MIN_SCRAPE_INTERVAL_S = 0.01
"""Prometheus keeps milliseconds (promtool truncates): closer scrapes would collide."""
MAX_SCRAPES = 100_000
"""Scrapes per emitted file (about 60–90 samples each: ~1 GB of text at the limit)."""
DEFAULT_QUEUE_NAME = "simulated"
DEFAULT_POD = "simulated-0"
DEFAULT_START_UNIX = 1704067200.0
"""2024-01-01T00:00:00Z, on a 2-hour boundary (promtool cuts one block per 2 h)."""

_MAX_START_UNIX = 253402300799.0  # 9999-12-31T23:59:59Z

_duration = parse_duration
_schedule_time = duration_or_zero
"""A schedule step's or a retry spec's time for :mod:`models` (ValueError on bad input)."""
_non_negative_duration = non_negative_duration


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def _hot_share(text: str) -> float:
    value = fraction(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must be at least 0 and below 1, got {text!r}")
    return value


def _coherence(text: str) -> tuple[float, float]:
    """'SIGMA' or 'SIGMA:KAPPA' -> (σ, κ), each a number in [0, 10]."""
    parts = text.split(":")
    if len(parts) > 2:
        raise argparse.ArgumentTypeError(f"use SIGMA or SIGMA:KAPPA, got {text!r}")
    try:
        values = [non_negative_float(p) for p in parts]
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (use SIGMA or SIGMA:KAPPA)") from None
    if any(v > 10 for v in values):
        raise argparse.ArgumentTypeError(f"σ and κ must be at most 10, got {text!r}")
    return values[0], values[1] if len(values) == 2 else 0.0


MAX_SEED = 2**64 - 1


def seed(text: str) -> int:
    """A random seed: a whole number from 0 to 2^64 − 1 (numpy's SeedSequence takes no
    negative number; issue 12: ``--seed -1`` was a traceback)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text[:40]!r}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be a whole number from 0 to 2^64 − 1, "
                                         f"got {text[:40]!r}")
    return value


MAX_KEYS = 2**62
"""--keys / --failing-keys: the simulator holds keys as 64-bit integers (numpy draws them below
the key count)."""
MAX_WORKERS = 1_000_000
"""--workers: the simulator's counters are 64-bit; no controller runs a million workers."""
MAX_TRACE_EVENTS = 200_000
"""--trace: most events kept. Measured (issue 23): each traced event costs about 1.7 KB at
its peak — the loop's row, its :class:`models.simulate.SimEvent`, its JSON object and its
text — 200,000 events raised the peak RSS from 175 MB to 506 MB (22.6 MB of JSON), so at
most about 350 MB above the run itself (the earlier 10,000,000 cap, stated as 320 MB, was
about 17 GB). Only ``--format json`` prints the trace; the table and CSV do not compute it."""
MAX_QPS = 1e12
"""--global-qps / --dependency-qps / --api-qps: a token bucket refilled faster than this is no
limit; its default burst (10 s or 1 s of tokens) stays a finite whole number."""
MAX_BURST = 10**15
"""--burst / --api-burst: token counts are doubles, exact up to 2^53 ≈ 9e15."""
MAX_API_CALLS = 1000
"""--api-writes: at most the API calls per pass, which the simulator caps at 1000."""
MAX_APF_SEATS = 10_000
MAX_APF_QUEUE_LIMIT = 1_000_000
MAX_APF_WAIT_LIMIT_S = 60.0
"""The API server's hard limit on a request's timeout."""
MAX_APF_BACKGROUND_LATENCY_S = 3600.0
MAX_RETRY_AFTER_S = 3600
MAX_API_RETRIES = 100
MAX_WEBHOOK_LATENCY_S = 30.0
"""The longest timeout an admission webhook can have (timeoutSeconds ≤ 30)."""
MAX_WEBHOOK_CONCURRENCY = 10_000
MAX_CONFLICT_OBJECTS = 10_000_000
"""The caps of :func:`models.simulate.simulate` for the API server side, checked here so that
a bad size is the flag's error."""
MAX_POOL_SIZE = 100_000
MAX_CPU_CORES = 10_000
MAX_REQUEUE_AFTER_S = 365 * 86400.0
"""The simulator's caps on the pool, the cores and the RequeueAfter period (a year), spelled
out so that ``--help`` does not import the model (:func:`test_station_caps_are_the_simulators`
keeps them equal)."""
_MECHANISM_FIELDS = {"pool_wait_mean_s": "pool", "cpu_wait_mean_s": "cpu",
                     "cpu_busy_cores_mean": "cpu", "requeue_after": "poll"}
"""Result fields of the pool, the CPU and polling: left out of the JSON when the mechanism is
off, so that a run without them prints what it printed before they existed."""

DEFAULT_APF_QUEUE_LIMIT = 50
DEFAULT_APF_WAIT_LIMIT_S = 15.0
"""A quarter of the request's 60 s timeout, as the API server."""
DEFAULT_APF_BACKGROUND_LATENCY_S = 0.05
DEFAULT_API_MAX_RETRIES = 10
"""client-go ``rest/request.go`` ``maxRetries: 10``."""
APISERVER_GENERATIONS: tuple[str, ...] = ("1.36", "1.37")
""":data:`collectors.openmetrics.APISERVER_GENERATIONS`, spelled out so that ``--help`` does not
import the writer (and numpy)."""
DEFAULT_APISERVER_GENERATION = "1.37"


def bounded_int(most: int, *, minimum: int = 1) -> Callable[[str], int]:
    """An argparse type: a whole number from ``minimum`` to ``most`` (issue 12: a 400-digit
    --workers overflowed the simulator's 64-bit state with a traceback)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text[:40]!r}") from None
        if not minimum <= value <= most:
            raise argparse.ArgumentTypeError(
                f"must be a whole number from {minimum:,} to {most:,}, got {text[:40]!r}")
        return value

    return parse


def bounded_duration(most_s: float, *, zero: bool = False) -> Callable[[str], float]:
    """An argparse type: a duration (units, or a bare number of seconds) of at most
    ``most_s`` seconds; above 0, or also 0 with ``zero``."""

    def parse(text: str) -> float:
        value = _non_negative_duration(text) if zero else parse_duration(text)
        if value > most_s:
            raise argparse.ArgumentTypeError(f"must be at most {most_s:g}s, got {text[:40]!r}")
        return value

    return parse


def _retry_after(text: str) -> int:
    """A fixed Retry-After: whole seconds from 1 to :data:`MAX_RETRY_AFTER_S` (the header is an
    integer), with units (``2m``) or bare."""
    value = parse_duration(text)
    if not value.is_integer() or not 1 <= value <= MAX_RETRY_AFTER_S:
        raise argparse.ArgumentTypeError(
            f"must be whole seconds from 1 to {MAX_RETRY_AFTER_S} (the header is an integer), "
            f"got {text[:40]!r}")
    return int(value)


def _background_rate(text: str) -> float:
    """A rate of requests per second, 0 (none) up to :data:`MAX_QPS`."""
    value = non_negative_float(text)
    if value > MAX_QPS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_QPS:g} per second, got {text!r}")
    return value


def bounded_rate(text: str) -> float:
    """A positive rate of at most :data:`MAX_QPS` per second."""
    value = positive_float(text)
    if value > MAX_QPS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_QPS:g} per second, got {text!r}")
    return value


def _label(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def _start(text: str) -> float:
    value = parse_time(text)
    if not 0 <= value <= _MAX_START_UNIX:
        raise argparse.ArgumentTypeError(f"must be within 1970-01-01…9999-12-31, got {text!r}")
    return value


def add_retry_arguments(parser: argparse.ArgumentParser, default: str) -> None:
    """--retry/--jitter/--global-qps/--burst, shared with `queuelens retries`."""
    parser.add_argument("--retry", default=default, metavar="SPEC",
                        help="retry policy: exp:BASE:CAP, e.g. exp:5ms:1000s, const:DELAY, "
                             "client-go or controller-runtime (delays take units, "
                             f"{BARE_SECONDS}; default {default})")
    parser.add_argument("--jitter", choices=("none", "full", "equal", "decorrelated"),
                        default="none", help="jitter on the exponential delay (default none)")
    parser.add_argument("--global-qps", type=bounded_rate, default=None, metavar="Q",
                        help="add a shared token bucket of Q retries/s (MaxOf, as client-go)")
    parser.add_argument("--burst", type=bounded_int(MAX_BURST), default=None, metavar="B",
                        help="bucket size for --global-qps (default 10 s of tokens)")


def retry_policy_from(args: argparse.Namespace) -> Any:
    from models.ratelimit import parse_retry_spec

    if args.burst is not None and args.global_qps is None and args.retry != "client-go":
        raise CliError("--burst needs --global-qps (or --retry client-go).")
    return parse_retry_spec(args.retry, jitter=args.jitter, global_qps=args.global_qps,
                            burst=args.burst, duration=duration_or_zero)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="simulate a controller: coalescing, workers, failures, retries",
        description=(
            "Discrete-event simulation of raw events over K keys feeding a client-go work queue "
            "(coalescing via dirty/processing, one worker per key at a time), c workers, "
            "failures with rate-limited retries and an optional dependency QPS limit; "
            "optionally load and workers over time, a hot key, a serial section under a "
            "process-wide lock, a connection pool, CPU work on N cores, polling "
            "(RequeueAfter), a coherency cost (USL), the API client's token bucket, the "
            "API server beyond it (an APF priority level with 429s and client retries, an "
            "admission webhook on writes, 409 write conflicts), and the scraped /metrics as "
            "OpenMetrics for promtool. Durations take units "
            "(250ms, 90s, 5m, 1h); a bare number is seconds."
        ),
    )
    load = parser.add_argument_group("load and workers")
    load.add_argument("--arrival-rate", type=non_negative_float, default=None, metavar="L",
                      help="raw events per second over all keys (or give --rate-schedule)")
    load.add_argument("--rate-schedule", default=None, metavar="SPEC",
                      help="arrival rate over time instead of --arrival-rate: T0:R0,T1:R1,... "
                           "(R_i events/s from time T_i; T0 = 0), e.g. 0:10,10m:40,20m:10, or "
                           "sine:MEAN:AMPLITUDE:PERIOD (MEAN events/s, AMPLITUDE 0-1), e.g. "
                           f"sine:20:0.5:10m; times and PERIOD take units, {BARE_SECONDS}")
    load.add_argument("--keys", type=bounded_int(MAX_KEYS), required=True, metavar="K",
                      help="number of distinct keys")
    load.add_argument("--zipf", type=non_negative_float, default=0.0, metavar="S",
                      help="Zipf exponent for key popularity (0 = uniform; key 0 is hottest)")
    load.add_argument("--hot-key-share", type=_hot_share, default=0.0, metavar="H",
                      help="share of raw events on key 0, 0 <= H < 1 (the rest uniform over "
                           "the other keys; not with --zipf)")
    load.add_argument("--workers", type=bounded_int(MAX_WORKERS), default=None, metavar="C",
                      help="worker count (or give --workers-schedule)")
    load.add_argument("--workers-schedule", default=None, metavar="SPEC",
                      help="worker count over time instead of --workers: T0:C0,T1:C1,... "
                           "(C_i workers from time T_i; T0 = 0, C0 the initial count), e.g. "
                           "0:4,5m:8 (times take units, bare number = seconds); a worker that "
                           "leaves finishes its pass first")
    svc = parser.add_argument_group("reconciles")
    svc.add_argument("--service-mean", type=_duration, required=True, metavar="S",
                     help="mean reconcile time, e.g. 0.1 or 100ms (bare number = seconds)")
    svc.add_argument("--service-dist", choices=("exp", "const", "lognormal"), default="exp")
    svc.add_argument("--service-cv", type=non_negative_float, default=1.0, metavar="X",
                     help="coefficient of variation for lognormal service (default 1)")
    svc.add_argument("--lock-fraction", type=fraction, default=0.0, metavar="F",
                     help="fraction 0-1 of each pass's work done under one process-wide lock "
                          "(throughput ceiling 1/(F x service mean))")
    svc.add_argument("--pool-size", type=bounded_int(MAX_POOL_SIZE), default=None, metavar="K",
                     help="a connection pool (counting semaphore) of K slots, FIFO; a worker "
                          f"waiting for a slot is held (1 to {MAX_POOL_SIZE:,}; K = 1 is a "
                          "lock); needs --pool-fraction")
    svc.add_argument("--pool-fraction", type=fraction, default=None, metavar="F",
                     help="fraction 0-1 of each pass's work that holds a pool slot, after the "
                          "lock's part (throughput ceiling K/(F x service mean)); needs "
                          "--pool-size")
    svc.add_argument("--cpu-cores", type=bounded_int(MAX_CPU_CORES), default=None, metavar="N",
                     help="the process's cores (GOMAXPROCS), a FIFO each CPU part runs on to "
                          f"completion (1 to {MAX_CPU_CORES:,}); needs --cpu-fraction")
    svc.add_argument("--cpu-fraction", type=fraction, default=None, metavar="F",
                     help="fraction 0-1 of each pass's work that is CPU work, after the lock's "
                          "and the pool's parts (throughput ceiling N/(F x service mean)); "
                          "the scraped metrics gain process_cpu_seconds_total and go_sched_*; "
                          "needs --cpu-cores")
    svc.add_argument("--requeue-after", type=bounded_duration(MAX_REQUEUE_AFTER_S),
                     default=None, metavar="DURATION",
                     help="every successful reconcile returns RequeueAfter: DURATION (Forget, "
                          "then AddAfter): a key polls from its first event on, e.g. 30s or 5m "
                          "(bare number = seconds; at most 365 days)")
    svc.add_argument("--coherence", type=_coherence, default=(0.0, 0.0),
                     metavar="SIGMA[:KAPPA]",
                     help="coherency cost (USL): the unlocked work is stretched by "
                          "1 + σ(n-1) + κn(n-1), n = passes in flight; e.g. 0.05 or 0.05:0.002 "
                          "(dimensionless, default 0:0)")
    svc.add_argument("--fail-prob", type=fraction, default=0.0, metavar="P",
                     help="probability that a reconcile of a failing key fails")
    svc.add_argument("--failing-keys", type=bounded_int(MAX_KEYS), default=None, metavar="M",
                     help="only keys 0..M-1 use the dependency and can fail (default all)")
    svc.add_argument("--outage", type=_duration, default=None, metavar="T",
                     help="failures only during the first T of the run (a dependency outage; "
                          "units, bare number = seconds)")
    add_retry_arguments(parser, "controller-runtime")
    parser.add_argument("--dependency-qps", type=bounded_rate, default=None, metavar="Q",
                        help="the dependency admits Q requests/s; a reconcile waits for a token")
    api = parser.add_argument_group("API client (client-go token bucket, shared by the workers)")
    api.add_argument("--api-calls", type=_non_negative_int, default=0, metavar="N",
                     help="API calls each pass makes after its work, one after the other "
                          "(default 0: none)")
    api.add_argument("--api-qps", type=bounded_rate, default=None, metavar="Q",
                     help="the client's limit in calls/s (default: no limit); needs --api-calls")
    api.add_argument("--api-burst", type=bounded_int(MAX_BURST), default=None, metavar="B",
                     help="the bucket size in calls (default 1 s of tokens); needs --api-qps")
    api.add_argument("--api-latency", type=_non_negative_duration, default=0.0,
                     metavar="DURATION",
                     help="latency of each API call, e.g. 20ms (bare number = seconds; "
                          "default 0); needs --api-calls")
    add_server_arguments(parser)
    run = parser.add_argument_group("run")
    run.add_argument("--duration", type=_duration, required=True, metavar="T",
                     help="simulated time, e.g. 600 or 10m (bare number = seconds)")
    run.add_argument("--warmup", type=_non_negative_duration, default=0.0, metavar="W",
                     help="time excluded from waits/throughput, e.g. 60 or 1m (bare number = "
                          "seconds; default 0)")
    run.add_argument("--seed", type=seed, default=0, metavar="N",
                     help="random seed, 0 to 2^64 − 1 (default 0)")
    run.add_argument("--trace", type=bounded_int(MAX_TRACE_EVENTS, minimum=0), default=0,
                     metavar="N",
                     help=f"keep the first N events as a per-event log, at most "
                          f"{MAX_TRACE_EVENTS:,} (--format json only: 'trace'; the table and "
                          "CSV do not print it, and do not compute it)")
    add_format_argument(parser, ("table", "json", "csv"))
    om = parser.add_argument_group(
        "scraped metrics (OpenMetrics for `promtool tsdb create-blocks-from openmetrics`)")
    om.add_argument("--emit-openmetrics", default=None, metavar="FILE",
                    help="write what a scrape of the controller's /metrics would have read "
                         "(workqueue_*, controller_runtime_*, rest_client_*) to FILE")
    om.add_argument("--scrape-interval", type=_duration, default=None, metavar="DURATION",
                    help=f"time between scrapes (default {DEFAULT_SCRAPE_INTERVAL_S:g}s; bare "
                         "number = seconds); needs --emit-openmetrics")
    om.add_argument("--queue-name", type=_label, default=None, metavar="NAME",
                    help=f"the series' name/controller label (default {DEFAULT_QUEUE_NAME})")
    om.add_argument("--pod", type=_label, default=None, metavar="NAME",
                    help=f"the series' pod label (default {DEFAULT_POD})")
    om.add_argument("--start", type=_start, default=None, metavar="UNIX",
                    help="time of the first scrape: unix seconds or RFC 3339 (default "
                         f"{DEFAULT_START_UNIX:.0f} = 2024-01-01T00:00:00Z, on a 2-hour "
                         "boundary)")
    om.add_argument("--apiserver-generation", choices=APISERVER_GENERATIONS, default=None,
                    help="the modelled API server's metric names: 1.37 (default) or 1.36, "
                         "which also has the pre-1.37 apiserver_flowcontrol_request_concurrency_"
                         "limit / _in_use gauges; needs --apf-seats or --api-writes")
    parser.set_defaults(func=handle)


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """The API server side of :func:`models.simulate.simulate`, each off by default."""
    srv = parser.add_argument_group(
        "API server (priority level, admission webhook, write conflicts)")
    srv.add_argument("--api-writes", type=bounded_int(MAX_API_CALLS, minimum=0), default=0,
                     metavar="N",
                     help="of the --api-calls of a pass, the last N are writes (PUT), the rest "
                          "reads (default 0); needs --api-calls")
    srv.add_argument("--apf-seats", type=bounded_int(MAX_APF_SEATS), default=None, metavar="N",
                     help="an API Priority and Fairness priority level of N seats, one per "
                          "request in execution (one FIFO queue; a rejection is a 429); "
                          f"1 to {MAX_APF_SEATS:,}; needs --api-calls")
    srv.add_argument("--apf-queue-limit", type=bounded_int(MAX_APF_QUEUE_LIMIT, minimum=0),
                     default=None, metavar="N",
                     help="requests that may wait for a seat, 0 = no queue (default "
                          f"{DEFAULT_APF_QUEUE_LIMIT}); one more is rejected (queue full); "
                          "needs --apf-seats")
    srv.add_argument("--apf-wait-limit", type=bounded_duration(MAX_APF_WAIT_LIMIT_S),
                     default=None, metavar="DURATION",
                     help="a request still waiting after this is rejected (time-out), e.g. 5s "
                          f"(bare number = seconds; default {DEFAULT_APF_WAIT_LIMIT_S:g}s, at "
                          f"most {MAX_APF_WAIT_LIMIT_S:g}s); needs --apf-seats")
    srv.add_argument("--apf-background-rate", type=_background_rate, default=None, metavar="R",
                     help="the level's other clients: Poisson requests at R/s, each holding a "
                          "seat --apf-background-latency (default 0: none); needs --apf-seats")
    srv.add_argument("--apf-background-latency",
                     type=bounded_duration(MAX_APF_BACKGROUND_LATENCY_S), default=None,
                     metavar="DURATION",
                     help="seat time of each background request, e.g. 50ms (bare number = "
                          f"seconds; default {DEFAULT_APF_BACKGROUND_LATENCY_S * 1000:g}ms); "
                          "needs --apf-background-rate")
    srv.add_argument("--apf-retry-after", type=_retry_after, default=None, metavar="DURATION",
                     help="a fixed Retry-After on the 429s, whole seconds, e.g. 1 or 2s (bare "
                          f"number = seconds; 1 to {MAX_RETRY_AFTER_S}); omit for the API "
                          "server's dynamic one (1s, doubled up to 32s while the level keeps "
                          "dropping); needs --apf-seats")
    srv.add_argument("--api-max-retries", type=bounded_int(MAX_API_RETRIES, minimum=0),
                     default=None, metavar="N",
                     help="client-go retries of a 429, sleeping the Retry-After and holding "
                          f"the worker (default {DEFAULT_API_MAX_RETRIES}, at most "
                          f"{MAX_API_RETRIES}); needs --apf-seats")
    srv.add_argument("--webhook-latency", type=bounded_duration(MAX_WEBHOOK_LATENCY_S, zero=True),
                     default=0.0, metavar="DURATION",
                     help="an admission webhook on the writes taking this per admission, e.g. "
                          "20ms (bare number = seconds; default 0: none; at most "
                          f"{MAX_WEBHOOK_LATENCY_S:g}s); needs --api-writes")
    srv.add_argument("--webhook-concurrency", type=bounded_int(MAX_WEBHOOK_CONCURRENCY),
                     default=None, metavar="N",
                     help="the webhook serves N admissions at a time, FIFO (default: "
                          "unlimited); needs --webhook-latency")
    srv.add_argument("--conflict-objects", type=bounded_int(MAX_CONFLICT_OBJECTS), default=None,
                     metavar="N",
                     help="key k's pass reads and writes shared object k mod N: a write after "
                          "another pass's write since the read is a 409 and fails the pass "
                          f"(1 to {MAX_CONFLICT_OBJECTS:,}); needs --api-writes")


def _check_server_flags(args: argparse.Namespace) -> None:
    """Each API server flag without its prerequisite is a one-line error."""
    apf_given = (("--apf-queue-limit", args.apf_queue_limit is not None),
                 ("--apf-wait-limit", args.apf_wait_limit is not None),
                 ("--apf-background-rate", args.apf_background_rate is not None),
                 ("--apf-background-latency", args.apf_background_latency is not None),
                 ("--apf-retry-after", args.apf_retry_after is not None),
                 ("--api-max-retries", args.api_max_retries is not None))
    for flag, given in (("--api-writes", args.api_writes > 0),
                        ("--apf-seats", args.apf_seats is not None), *apf_given):
        if given and args.api_calls == 0:
            raise CliError(f"{flag} needs --api-calls N (API calls per pass).")
    if args.api_writes > args.api_calls:
        raise CliError(f"--api-writes {args.api_writes} cannot exceed --api-calls "
                       f"{args.api_calls} (the writes are the last calls of a pass).")
    if args.apf_background_latency is not None and args.apf_background_rate is None:
        raise CliError("--apf-background-latency needs --apf-background-rate R.")
    for flag, given in apf_given:
        if given and args.apf_seats is None:
            raise CliError(f"{flag} needs --apf-seats N (the priority level's seats).")
    for flag, given in (("--webhook-latency", args.webhook_latency > 0),
                        ("--conflict-objects", args.conflict_objects is not None)):
        if given and args.api_writes == 0:
            raise CliError(f"{flag} needs --api-writes N (writes per pass).")
    if args.webhook_concurrency is not None and args.webhook_latency == 0:
        raise CliError("--webhook-concurrency needs --webhook-latency DURATION.")
    if args.apiserver_generation is not None:
        if args.emit_openmetrics is None:
            raise CliError("--apiserver-generation needs --emit-openmetrics FILE.")
        if not _server_on(args):
            raise CliError("--apiserver-generation needs a modelled API server "
                           "(--apf-seats N or --api-writes N).")


def _check_station_flags(args: argparse.Namespace) -> None:
    """The pool's and the CPU's flags come in pairs; the parts of a pass add up to at most 1."""
    for size, size_flag, part, part_flag in (
            (args.pool_size, "--pool-size K", args.pool_fraction, "--pool-fraction F"),
            (args.cpu_cores, "--cpu-cores N", args.cpu_fraction, "--cpu-fraction F")):
        if size is not None and not part:
            raise CliError(f"{size_flag.split()[0]} needs {part_flag} above 0 (the share of "
                           "each pass that holds it).")
        if part is not None and size is None:
            raise CliError(f"{part_flag.split()[0]} needs {size_flag}.")
    parts = args.lock_fraction + (args.pool_fraction or 0.0) + (args.cpu_fraction or 0.0)
    if parts > 1:
        raise CliError(f"--lock-fraction + --pool-fraction + --cpu-fraction is {parts:g}: they "
                       "are parts of one pass and add up to at most 1.")


def _station_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The pool's, the CPU's and polling's keyword arguments of
    :func:`models.simulate.simulate` (defaults: off)."""
    return {"pool_size": args.pool_size, "pool_fraction": args.pool_fraction or 0.0,
            "cpu_cores": args.cpu_cores, "cpu_fraction": args.cpu_fraction or 0.0,
            "requeue_after_s": args.requeue_after}


def _server_on(args: argparse.Namespace) -> bool:
    """Whether the run models the API server (the webhook and conflicts need writes)."""
    return args.api_writes > 0 or args.apf_seats is not None


def _server_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The API server side's keyword arguments of :func:`models.simulate.simulate`, defaults
    filled in (:func:`test_server_defaults_are_the_simulators` keeps them equal)."""
    return {
        "api_writes": args.api_writes,
        "apf_seats": args.apf_seats,
        "apf_queue_limit": (DEFAULT_APF_QUEUE_LIMIT if args.apf_queue_limit is None
                            else args.apf_queue_limit),
        "apf_wait_limit_s": args.apf_wait_limit or DEFAULT_APF_WAIT_LIMIT_S,
        "apf_background_rate_per_s": args.apf_background_rate or 0.0,
        "apf_background_latency_s": (args.apf_background_latency
                                     or DEFAULT_APF_BACKGROUND_LATENCY_S),
        "apf_retry_after_s": (None if args.apf_retry_after is None
                              else float(args.apf_retry_after)),
        "api_max_retries": (DEFAULT_API_MAX_RETRIES if args.api_max_retries is None
                            else args.api_max_retries),
        "webhook_latency_s": args.webhook_latency,
        "webhook_concurrency": args.webhook_concurrency,
        "conflict_objects": args.conflict_objects,
    }


def _server_payload(args: argparse.Namespace, kwargs: dict[str, Any]) -> dict[str, Any]:
    """payload["inputs"] of the API server side: the values the run used, None for a part
    that is off (``apf_retry_after_s`` None with APF on: the API server's dynamic one)."""
    apf = args.apf_seats is not None
    background = kwargs["apf_background_rate_per_s"] > 0
    hook = args.webhook_latency > 0
    return {
        "api_writes": args.api_writes,
        "apf_seats": args.apf_seats,
        "apf_queue_limit": kwargs["apf_queue_limit"] if apf else None,
        "apf_wait_limit_s": kwargs["apf_wait_limit_s"] if apf else None,
        "apf_background_rate_per_s": kwargs["apf_background_rate_per_s"] if apf else None,
        "apf_background_latency_s": kwargs["apf_background_latency_s"] if background else None,
        "apf_retry_after_s": kwargs["apf_retry_after_s"] if apf else None,
        "api_max_retries": kwargs["api_max_retries"] if apf else None,
        "webhook_latency_s": args.webhook_latency if hook else None,
        "webhook_concurrency": args.webhook_concurrency if hook else None,
        "conflict_objects": args.conflict_objects,
    }


def _check_flags(args: argparse.Namespace) -> None:
    if args.trace < 0:
        raise CliError("--trace must be 0 or more events.")
    if args.arrival_rate is not None and args.rate_schedule is not None:
        raise CliError("use either --arrival-rate or --rate-schedule, not both.")
    if args.arrival_rate is None and args.rate_schedule is None:
        raise CliError("give the load: --arrival-rate L or --rate-schedule SPEC.")
    if args.workers is not None and args.workers_schedule is not None:
        raise CliError("use either --workers or --workers-schedule, not both.")
    if args.workers is None and args.workers_schedule is None:
        raise CliError("give the workers: --workers C or --workers-schedule SPEC.")
    if args.hot_key_share > 0 and args.zipf > 0:
        raise CliError("use either --hot-key-share or --zipf, not both.")
    _check_station_flags(args)
    for flag, given in (("--api-qps", args.api_qps is not None),
                        ("--api-burst", args.api_burst is not None),
                        ("--api-latency", args.api_latency > 0)):
        if given and args.api_calls == 0:
            raise CliError(f"{flag} needs --api-calls N (API calls per pass).")
    if args.api_burst is not None and args.api_qps is None:
        raise CliError("--api-burst needs --api-qps.")
    _check_server_flags(args)
    if args.emit_openmetrics is None:
        for flag, value in (("--scrape-interval", args.scrape_interval),
                            ("--queue-name", args.queue_name), ("--pod", args.pod),
                            ("--start", args.start)):
            if value is not None:
                raise CliError(f"{flag} needs --emit-openmetrics FILE.")
        return
    check_output_path(args.emit_openmetrics, "--emit-openmetrics")
    step = args.scrape_interval or DEFAULT_SCRAPE_INTERVAL_S
    if step > args.duration:
        default = "" if args.scrape_interval else " (the default)"
        raise CliError(f"--scrape-interval {step:g}s{default} is longer than --duration "
                       f"{args.duration:g}s: the file would hold only the scrape at the start.")
    if step < MIN_SCRAPE_INTERVAL_S:
        raise CliError(f"--scrape-interval must be at least {MIN_SCRAPE_INTERVAL_S * 1000:g}ms "
                       "(Prometheus keeps milliseconds).")
    if args.duration / step > MAX_SCRAPES:
        raise CliError(f"--duration {args.duration:g}s at --scrape-interval {step:g}s is over "
                       f"{MAX_SCRAPES:,} scrapes; use a longer --scrape-interval.")


def _emit_openmetrics(args: argparse.Namespace, metrics: Any) -> dict[str, Any]:
    from collectors.openmetrics import simulated_families, write_families

    queue = args.queue_name or DEFAULT_QUEUE_NAME
    pod = args.pod or DEFAULT_POD
    start = DEFAULT_START_UNIX if args.start is None else args.start
    generation = args.apiserver_generation or DEFAULT_APISERVER_GENERATION
    families = simulated_families([(queue, pod, metrics)], start,
                                  apiserver_generation=generation)
    write_atomically(args.emit_openmetrics, lambda fh: write_families(fh, families),
                     "--emit-openmetrics")
    scrapes = len(metrics.t_s)
    series = sum(len(f.series) for f in families)
    last = float(metrics.t_s[-1])
    sys.stderr.write(f"queuelens: wrote {scrapes} scrapes of {series} series to "
                     f"{args.emit_openmetrics}\n")
    if not math.isclose(last, args.duration, rel_tol=1e-9, abs_tol=1e-9):
        sys.stderr.write(f"queuelens: note: the last scrape is at {last:g}s, before the end of "
                         f"the run ({args.duration:g}s): it does not see the events after it\n")
    return {"file": args.emit_openmetrics, "queue_name": queue, "pod": pod,
            "start_unix": start, "scrape_interval_s": metrics.scrape_interval_s,
            "scrapes": scrapes, "series": series, "last_scrape_s": last,
            **({"apiserver_generation": generation} if metrics.server is not None else {})}


def handle(args: argparse.Namespace) -> int:
    from models.errors import ModelInputError
    from models.load import parse_rate_schedule, parse_workers_schedule
    from models.simulate import RUN_COMPILE_ESTIMATE_S, compile_notice, simulate

    _check_flags(args)
    policy = retry_policy_from(args)
    rate: Any = args.arrival_rate
    workers: Any = args.workers
    try:
        if args.rate_schedule is not None:
            flag = "--rate-schedule"
            rate = parse_rate_schedule(args.rate_schedule, _schedule_time)
        if args.workers_schedule is not None:
            flag = "--workers-schedule"
            workers = parse_workers_schedule(args.workers_schedule, _schedule_time)
    except ModelInputError as exc:
        raise CliError(f"{flag}: {exc}") from None
    emit_om = args.emit_openmetrics is not None
    scrape_s = (args.scrape_interval or DEFAULT_SCRAPE_INTERVAL_S) if emit_om else None
    server = _server_kwargs(args)
    bar = ProgressBar(sys.stderr, tty=True)
    progress = partial(bar.fraction, "simulating") if sys.stderr.isatty() else None
    def compiling() -> None:  # only when numba compiles: the first run of these mechanisms
        bar.close()
        warn(f"first run compiles the simulator (~{RUN_COMPILE_ESTIMATE_S} s, once)", "note")

    with compile_notice(compiling):
        try:
            result = simulate(
                arrival_rate_per_s=rate,
                keys=args.keys,
                workers=workers,
                service_mean_s=args.service_mean,
                duration_s=args.duration,
                seed=args.seed,
                zipf_s=args.zipf,
                service_dist=args.service_dist,
                service_cv=args.service_cv,
                fail_prob=args.fail_prob,
                failing_keys=args.failing_keys,
                fail_window_s=(0.0, args.outage) if args.outage is not None else None,
                retry=policy,
                dependency_qps=args.dependency_qps,
                warmup_s=args.warmup,
                trace_limit=args.trace if args.format == "json" else 0,
                progress=progress,
                hot_key_share=args.hot_key_share,
                lock_fraction=args.lock_fraction,
                coherence=args.coherence,
                api_calls=args.api_calls,
                api_qps=args.api_qps,
                api_burst=args.api_burst,
                api_latency_s=args.api_latency,
                scrape_interval_s=scrape_s,
                **server,
                **_station_kwargs(args),
            )
        finally:
            bar.close()
    on = {
        "lock": args.lock_fraction > 0,
        "pool": args.pool_size is not None,
        "cpu": args.cpu_cores is not None,
        "poll": args.requeue_after is not None,
        "workers_schedule": args.workers_schedule is not None,
        "api": args.api_calls > 0,
        "api_qps": args.api_calls > 0 and args.api_qps is not None,
        "server": _server_on(args),
        "writes": args.api_writes > 0,
        "apf": args.apf_seats is not None,
        "webhook": args.webhook_latency > 0,
        "conflicts": args.conflict_objects is not None,
    }
    payload = jsonable(result)
    payload.pop("metrics", None)
    for name, mechanism in _MECHANISM_FIELDS.items():
        if not on[mechanism]:
            payload.pop(name, None)
    if not args.trace:
        payload.pop("trace", None)
    if emit_om:
        assert result.metrics is not None  # scrape_interval_s was given
        payload["openmetrics"] = _emit_openmetrics(args, result.metrics)
    rate_mean = (args.arrival_rate if args.rate_schedule is None
                 else rate.mean_per_s(args.duration))
    payload["inputs"] = {
        "arrival_rate_per_s": args.arrival_rate, "rate_schedule": args.rate_schedule,
        "arrival_rate_mean_per_s": rate_mean,
        "keys": args.keys, "zipf_s": args.zipf, "hot_key_share": args.hot_key_share,
        "workers": args.workers, "workers_schedule": args.workers_schedule,
        "service_mean_s": args.service_mean,
        "service_dist": args.service_dist, "service_cv": args.service_cv,
        "lock_fraction": args.lock_fraction,
        **({"pool_size": args.pool_size, "pool_fraction": args.pool_fraction} if on["pool"]
           else {}),
        **({"cpu_cores": args.cpu_cores, "cpu_fraction": args.cpu_fraction} if on["cpu"]
           else {}),
        **({"requeue_after_s": args.requeue_after} if on["poll"] else {}),
        "coherence_sigma": args.coherence[0], "coherence_kappa": args.coherence[1],
        "fail_prob": args.fail_prob, "failing_keys": args.failing_keys,
        "outage_s": args.outage, "retry": policy.describe(),
        "dependency_qps": args.dependency_qps,
        "api_calls": args.api_calls, "api_qps": args.api_qps, "api_burst": args.api_burst,
        "api_latency_s": args.api_latency,
        **_server_payload(args, server),
        "scrape_interval_s": scrape_s, "duration_s": args.duration,
        "warmup_s": args.warmup, "seed": args.seed,
    }
    rows = [{"metric": label, "value": payload.get(name)} for name, label, when in _ROWS
            if when is None or on[when]]
    footer = ("--trace: the per-event log is printed with --format json only; it was not "
              "computed" if args.trace and args.format != "json" else "")
    emit(args.format, payload, rows, COLUMNS, header=_header(args, policy, rate_mean),
         footer=footer)
    return 0


def _header(args: argparse.Namespace, policy: Any, rate_mean: float) -> str:
    load = (f"λ={args.arrival_rate:g}/s" if args.rate_schedule is None
            else f"λ {args.rate_schedule} (mean {number_text(rate_mean, '/s')})")
    keys = (f" (Zipf {args.zipf:g})" if args.zipf
            else f" (hot key {args.hot_key_share:g})" if args.hot_key_share else "")
    workers = f"c={args.workers}" if args.workers_schedule is None else (
        f"c {args.workers_schedule}")
    extras = []
    if args.lock_fraction:
        extras.append(f"lock fraction {args.lock_fraction:g}")
    if args.pool_size is not None:
        extras.append(f"pool {args.pool_size} slots x fraction {args.pool_fraction:g}")
    if args.cpu_cores is not None:
        cores = "1 core" if args.cpu_cores == 1 else f"{args.cpu_cores} cores"
        extras.append(f"CPU fraction {args.cpu_fraction:g} on {cores}")
    if args.requeue_after is not None:
        extras.append(f"RequeueAfter {args.requeue_after:g}s")
    if args.coherence != (0.0, 0.0):
        extras.append(f"coherence σ={args.coherence[0]:g} κ={args.coherence[1]:g}")
    if args.api_calls:
        qps = f" at {args.api_qps:g}/s" if args.api_qps is not None else ""
        extras.append(f"{args.api_calls} API calls/pass{qps}")
    extras.extend(_server_header(args))
    more = f"; {', '.join(extras)}" if extras else ""
    return (f"simulate: {load} over {args.keys} keys{keys}, {workers}, "
            f"service {args.service_dist} mean {args.service_mean:g}s{more}, "
            f"{args.duration:g}s simulated, seed {args.seed}; retry: {policy.describe()}")


def _server_header(args: argparse.Namespace) -> list[str]:
    """The header's fragments of the API server side (none when it is off)."""
    out = []
    if args.api_writes:
        out.append(f"{args.api_writes} of them writes")
    if args.apf_seats is not None:
        limit = (DEFAULT_APF_QUEUE_LIMIT if args.apf_queue_limit is None
                 else args.apf_queue_limit)
        wait = args.apf_wait_limit or DEFAULT_APF_WAIT_LIMIT_S
        seats = "1 seat" if args.apf_seats == 1 else f"{args.apf_seats} seats"
        level = f"APF {seats} (queue {limit}, wait limit {wait:g}s"
        if args.apf_background_rate:
            latency = args.apf_background_latency or DEFAULT_APF_BACKGROUND_LATENCY_S
            level += f", background {args.apf_background_rate:g}/s x {latency:g}s"
        retry_after = ("dynamic" if args.apf_retry_after is None
                       else f"{args.apf_retry_after}s")
        retries = (DEFAULT_API_MAX_RETRIES if args.api_max_retries is None
                   else args.api_max_retries)
        out.append(f"{level}; Retry-After {retry_after}, {retries} client retries)")
    if args.webhook_latency:
        slots = ("" if args.webhook_concurrency is None
                 else f" x {args.webhook_concurrency} slots")
        out.append(f"webhook {args.webhook_latency:g}s{slots}")
    if args.conflict_objects is not None:
        out.append(f"{args.conflict_objects} shared objects (409s)")
    return out
