"""`queuelens simulate`: discrete-event simulation of a controller and its work queue."""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

from collectors import timeparse
from dashboard.cliutil import (
    CliError,
    ProgressBar,
    add_format_argument,
    check_output_path,
    emit,
    fraction,
    jsonable,
    non_negative_float,
    parse_duration,
    parse_time,
    positive_float,
    write_atomically,
)

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
_ZERO_DURATION = re.compile(r"0+(?:\.0*)?(?:ms|s|m|h|d|w)?")


def _duration(text: str) -> float:
    return parse_duration(text)


def _schedule_time(text: str) -> float:
    """A duration or zero ('0', '0s', '0ms'): a schedule step's time for :mod:`models.load`
    (ValueError on bad input, as it expects)."""
    if _ZERO_DURATION.fullmatch(text.strip()):
        return 0.0
    return timeparse.parse_duration(text)


def _non_negative_duration(text: str) -> float:
    """:func:`_schedule_time` for argparse (a flag's error, not a ValueError)."""
    try:
        return _schedule_time(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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
MAX_TRACE_EVENTS = 10_000_000
"""--trace: 32 bytes an event kept, so at most 320 MB."""
MAX_QPS = 1e12
"""--global-qps / --dependency-qps / --api-qps: a token bucket refilled faster than this is no
limit; its default burst (10 s or 1 s of tokens) stays a finite whole number."""
MAX_BURST = 10**15
"""--burst / --api-burst: token counts are doubles, exact up to 2^53 ≈ 9e15."""


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
                        help="retry policy: exp:BASE:CAP (seconds), const:DELAY, client-go or "
                             f"controller-runtime (default {default})")
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
                            burst=args.burst)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="simulate a controller: coalescing, workers, failures, retries",
        description=(
            "Discrete-event simulation of raw events over K keys feeding a client-go work queue "
            "(coalescing via dirty/processing, one worker per key at a time), c workers, "
            "failures with rate-limited retries and an optional dependency QPS limit; "
            "optionally load and workers over time, a hot key, a serial section under a "
            "process-wide lock, a coherency cost (USL), the API client's token bucket, and "
            "the scraped /metrics as OpenMetrics for promtool. Durations take units "
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
                           "sine:20:0.5:10m")
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
                           "0:4,5m:8; a worker that leaves finishes its pass first")
    svc = parser.add_argument_group("reconciles")
    svc.add_argument("--service-mean", type=_duration, required=True, metavar="S",
                     help="mean reconcile time, e.g. 0.1 or 100ms (bare number = seconds)")
    svc.add_argument("--service-dist", choices=("exp", "const", "lognormal"), default="exp")
    svc.add_argument("--service-cv", type=non_negative_float, default=1.0, metavar="X",
                     help="coefficient of variation for lognormal service (default 1)")
    svc.add_argument("--lock-fraction", type=fraction, default=0.0, metavar="F",
                     help="fraction 0-1 of each pass's work done under one process-wide lock "
                          "(throughput ceiling 1/(F x service mean))")
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
    run = parser.add_argument_group("run")
    run.add_argument("--duration", type=_duration, required=True, metavar="T",
                     help="simulated time, e.g. 600 or 10m (bare number = seconds)")
    run.add_argument("--warmup", type=_non_negative_duration, default=0.0, metavar="W",
                     help="time excluded from waits/throughput, e.g. 60 or 1m (default 0)")
    run.add_argument("--seed", type=seed, default=0, metavar="N",
                     help="random seed, 0 to 2^64 − 1 (default 0)")
    run.add_argument("--trace", type=bounded_int(MAX_TRACE_EVENTS, minimum=0), default=0,
                     metavar="N",
                     help="keep the first N events as a per-event log (JSON: 'trace')")
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
    parser.set_defaults(func=handle)


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
    for flag, given in (("--api-qps", args.api_qps is not None),
                        ("--api-burst", args.api_burst is not None),
                        ("--api-latency", args.api_latency > 0)):
        if given and args.api_calls == 0:
            raise CliError(f"{flag} needs --api-calls N (API calls per pass).")
    if args.api_burst is not None and args.api_qps is None:
        raise CliError("--api-burst needs --api-qps.")
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
    families = simulated_families([(queue, pod, metrics)], start)
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
            "scrapes": scrapes, "series": series, "last_scrape_s": last}


def handle(args: argparse.Namespace) -> int:
    from models.errors import ModelInputError
    from models.load import parse_rate_schedule, parse_workers_schedule
    from models.simulate import simulate

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
    bar = ProgressBar(sys.stderr, tty=True)
    progress = partial(bar.fraction, "simulating") if sys.stderr.isatty() else None
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
            trace_limit=args.trace,
            progress=progress,
            hot_key_share=args.hot_key_share,
            lock_fraction=args.lock_fraction,
            coherence=args.coherence,
            api_calls=args.api_calls,
            api_qps=args.api_qps,
            api_burst=args.api_burst,
            api_latency_s=args.api_latency,
            scrape_interval_s=scrape_s,
        )
    finally:
        bar.close()
    payload = jsonable(result)
    payload.pop("metrics", None)
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
        "coherence_sigma": args.coherence[0], "coherence_kappa": args.coherence[1],
        "fail_prob": args.fail_prob, "failing_keys": args.failing_keys,
        "outage_s": args.outage, "retry": policy.describe(),
        "dependency_qps": args.dependency_qps,
        "api_calls": args.api_calls, "api_qps": args.api_qps, "api_burst": args.api_burst,
        "api_latency_s": args.api_latency,
        "scrape_interval_s": scrape_s, "duration_s": args.duration,
        "warmup_s": args.warmup, "seed": args.seed,
    }
    on = {
        "lock": args.lock_fraction > 0,
        "workers_schedule": args.workers_schedule is not None,
        "api": args.api_calls > 0,
        "api_qps": args.api_calls > 0 and args.api_qps is not None,
    }
    rows = [{"metric": label, "value": payload.get(name)} for name, label, when in _ROWS
            if when is None or on[when]]
    emit(args.format, payload, rows, COLUMNS, header=_header(args, policy, rate_mean))
    return 0


def _header(args: argparse.Namespace, policy: Any, rate_mean: float) -> str:
    load = (f"λ={args.arrival_rate:g}/s" if args.rate_schedule is None
            else f"λ {args.rate_schedule} (mean {rate_mean:.4g}/s)")
    keys = (f" (Zipf {args.zipf:g})" if args.zipf
            else f" (hot key {args.hot_key_share:g})" if args.hot_key_share else "")
    workers = f"c={args.workers}" if args.workers_schedule is None else (
        f"c {args.workers_schedule}")
    extras = []
    if args.lock_fraction:
        extras.append(f"lock fraction {args.lock_fraction:g}")
    if args.coherence != (0.0, 0.0):
        extras.append(f"coherence σ={args.coherence[0]:g} κ={args.coherence[1]:g}")
    if args.api_calls:
        qps = f" at {args.api_qps:g}/s" if args.api_qps is not None else ""
        extras.append(f"{args.api_calls} API calls/pass{qps}")
    more = f"; {', '.join(extras)}" if extras else ""
    return (f"simulate: {load} over {args.keys} keys{keys}, {workers}, "
            f"service {args.service_dist} mean {args.service_mean:g}s{more}, "
            f"{args.duration:g}s simulated, seed {args.seed}; retry: {policy.describe()}")
