"""`queuelens simulate`: discrete-event simulation of a controller and its work queue."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from typing import Any

from dashboard.cliutil import (
    CliError,
    ProgressBar,
    add_format_argument,
    emit,
    fraction,
    jsonable,
    non_negative_float,
    parse_duration,
    positive_float,
    positive_int,
)

COLUMNS = ("metric", "value")

_ROWS = (
    ("raw_events", "raw events"),
    ("coalesced_events", "coalesced raw events"),
    ("adds", "counted adds (adds_total)"),
    ("coalescing_ratio", "raw events per counted add"),
    ("completed", "completed reconciles"),
    ("failed", "failed reconciles"),
    ("throughput_per_s", "throughput /s"),
    ("wait_mean_s", "queue wait mean s"),
    ("wait_p95_s", "queue wait p95 s"),
    ("wait_p99_s", "queue wait p99 s"),
    ("work_mean_s", "work time mean s"),
    ("busy_workers_mean", "busy workers (mean)"),
    ("utilization", "utilization"),
    ("depth_mean", "depth mean"),
    ("depth_max", "depth max"),
    ("retries", "retries (AddRateLimited)"),
    ("dependency_rate_mean_per_s", "dependency requests /s mean"),
    ("dependency_rate_peak_per_s", "dependency requests /s peak (per bin)"),
    ("healthy_wait_mean_s", "healthy keys wait mean s"),
    ("healthy_wait_p99_s", "healthy keys wait p99 s"),
    ("failing_wait_mean_s", "failing keys wait mean s"),
    ("failing_wait_p99_s", "failing keys wait p99 s"),
    ("hot_key_throughput_per_s", "key 0 (hot key) throughput /s"),
    ("events", "simulated events"),
)


def _duration(text: str) -> float:
    return parse_duration(text)


def add_retry_arguments(parser: argparse.ArgumentParser, default: str) -> None:
    """--retry/--jitter/--global-qps/--burst, shared with `queuelens retries`."""
    parser.add_argument("--retry", default=default, metavar="SPEC",
                        help="retry policy: exp:BASE:CAP (seconds), const:DELAY, client-go or "
                             f"controller-runtime (default {default})")
    parser.add_argument("--jitter", choices=("none", "full", "equal", "decorrelated"),
                        default="none", help="jitter on the exponential delay (default none)")
    parser.add_argument("--global-qps", type=positive_float, default=None, metavar="Q",
                        help="add a shared token bucket of Q retries/s (MaxOf, as client-go)")
    parser.add_argument("--burst", type=positive_int, default=None, metavar="B",
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
            "failures with rate-limited retries and an optional dependency QPS limit."
        ),
    )
    parser.add_argument("--arrival-rate", type=non_negative_float, required=True, metavar="L",
                        help="raw events per second over all keys")
    parser.add_argument("--keys", type=positive_int, required=True, metavar="K",
                        help="number of distinct keys")
    parser.add_argument("--zipf", type=non_negative_float, default=0.0, metavar="S",
                        help="Zipf exponent for key popularity (0 = uniform; key 0 is hottest)")
    parser.add_argument("--workers", type=positive_int, required=True, metavar="C")
    parser.add_argument("--service-mean", type=positive_float, required=True, metavar="S",
                        help="mean reconcile time, seconds")
    parser.add_argument("--service-dist", choices=("exp", "const", "lognormal"), default="exp")
    parser.add_argument("--service-cv", type=non_negative_float, default=1.0, metavar="X",
                        help="coefficient of variation for lognormal service (default 1)")
    parser.add_argument("--fail-prob", type=fraction, default=0.0, metavar="P",
                        help="probability that a reconcile of a failing key fails")
    parser.add_argument("--failing-keys", type=positive_int, default=None, metavar="M",
                        help="only keys 0..M-1 use the dependency and can fail (default all)")
    parser.add_argument("--outage", type=_duration, default=None, metavar="T",
                        help="failures only during the first T of the run (dependency outage)")
    add_retry_arguments(parser, "controller-runtime")
    parser.add_argument("--dependency-qps", type=positive_float, default=None, metavar="Q",
                        help="the dependency admits Q requests/s; a reconcile waits for a token")
    parser.add_argument("--duration", type=_duration, required=True, metavar="T",
                        help="simulated time, e.g. 600 or 10m")
    parser.add_argument("--warmup", type=non_negative_float, default=0.0, metavar="W",
                        help="seconds excluded from waits/throughput (default 0)")
    parser.add_argument("--seed", type=int, default=0, metavar="N")
    parser.add_argument("--trace", type=int, default=0, metavar="N",
                        help="keep the first N events as a per-event log (JSON: 'trace')")
    add_format_argument(parser, ("table", "json"))
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from models.simulate import simulate

    if args.trace < 0:
        raise CliError("--trace must be 0 or more events.")
    policy = retry_policy_from(args)
    bar = ProgressBar(sys.stderr, tty=True)
    progress = partial(bar.fraction, "simulating") if sys.stderr.isatty() else None
    try:
        result = simulate(
            arrival_rate_per_s=args.arrival_rate,
            keys=args.keys,
            workers=args.workers,
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
        )
    finally:
        bar.close()
    payload = jsonable(result)
    if not args.trace:
        payload.pop("trace", None)
    payload["inputs"] = {
        "arrival_rate_per_s": args.arrival_rate, "keys": args.keys, "zipf_s": args.zipf,
        "workers": args.workers, "service_mean_s": args.service_mean,
        "service_dist": args.service_dist, "service_cv": args.service_cv,
        "fail_prob": args.fail_prob, "failing_keys": args.failing_keys,
        "outage_s": args.outage, "retry": policy.describe(),
        "dependency_qps": args.dependency_qps, "duration_s": args.duration,
        "warmup_s": args.warmup, "seed": args.seed,
    }
    rows = [{"metric": label, "value": payload.get(name)} for name, label in _ROWS]
    header = (f"simulate: λ={args.arrival_rate:g}/s over {args.keys} keys"
              f"{f' (Zipf {args.zipf:g})' if args.zipf else ''}, c={args.workers}, "
              f"service {args.service_dist} mean {args.service_mean:g}s, "
              f"{args.duration:g}s simulated, seed {args.seed}; retry: {policy.describe()}")
    emit(args.format, payload, rows, COLUMNS, header=header)
    return 0
