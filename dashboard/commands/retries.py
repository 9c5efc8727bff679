"""`queuelens retries`: retry-policy what-if for N keys failing together (a retry storm)."""

from __future__ import annotations

import argparse
from typing import Any

from dashboard.cliutil import (
    BARE_SECONDS,
    add_format_argument,
    emit,
    non_negative_duration,
    parse_duration,
    positive_float,
    positive_int,
)
from dashboard.commands.simulate import (
    MAX_WORKERS,
    add_retry_arguments,
    bounded_int,
    retry_policy_from,
    seed,
)

COLUMNS = (
    "variant",
    "retries",
    "peak_rate_per_s",
    "outage_mean_rate_per_s",
    "recovery_lag_p50_s",
    "recovery_lag_max_s",
    "failures_per_key_median",
    "penalty_without_forget_s",
    "healthy_wait_mean_s",
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "retries",
        help="retry storm what-if: N keys failing together against one dependency",
        description=(
            "N keys fail together while a dependency is down. For the policy ± jitter and ± a "
            "global token bucket: the retry rate the dependency sees (peak per bin and mean), "
            "the lag from recovery to each key's next attempt, the penalty a key keeps without "
            "Forget, and (with --healthy-rate) the queue wait of healthy keys sharing the "
            "workers, by simulation."
        ),
    )
    parser.add_argument("--keys", type=positive_int, required=True, metavar="N",
                        help="keys failing together")
    parser.add_argument("--outage", type=parse_duration, required=True, metavar="T",
                        help=f"how long the dependency is down, e.g. 60s or 5m ({BARE_SECONDS})")
    add_retry_arguments(parser, "controller-runtime")
    parser.add_argument("--attempt-time", type=non_negative_duration, default=0.05,
                        metavar="DURATION",
                        help=f"duration of one failing attempt, e.g. 50ms ({BARE_SECONDS}; "
                             "default 50ms)")
    parser.add_argument("--horizon", type=parse_duration, default=None, metavar="T",
                        help=f"how long to follow the storm ({BARE_SECONDS}; default "
                             "max(10×outage, outage+1h))")
    parser.add_argument("--bin", type=parse_duration, default=None, metavar="DURATION",
                        help=f"rate bin width, e.g. 1s or 500ms ({BARE_SECONDS}; default "
                             "horizon/1000)")
    parser.add_argument("--healthy-rate", type=positive_float, default=None, metavar="L",
                        help="also simulate healthy keys arriving at L/s on the same queue")
    parser.add_argument("--workers", type=bounded_int(MAX_WORKERS), default=2, metavar="C",
                        help="workers for the healthy-key simulation (default 2)")
    parser.add_argument("--service-mean", type=parse_duration, default=0.05,
                        metavar="DURATION",
                        help="mean reconcile time for the healthy-key simulation, e.g. 250ms "
                             f"({BARE_SECONDS}; default 50ms)")
    parser.add_argument("--seed", type=seed, default=0, metavar="N",
                        help="random seed of the jitter, 0 to 2^64 − 1 (default 0)")
    add_format_argument(parser, ("table", "json"))
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from dashboard.numbers import number_text
    from models.retry import check_storm_budget, healthy_impact, policy_variants, retry_storm

    policy = retry_policy_from(args)
    variants = policy_variants(policy)
    # every variant's limit before any of them runs (an over-limit fourth variant was refused
    # after the first three had computed for a minute)
    check_storm_budget(args.keys, [pol for _, pol in variants], args.outage, args.attempt_time,
                       horizon_s=args.horizon, bin_s=args.bin)
    results: list[dict[str, Any]] = []
    rows = []
    storms = []
    impacts = []
    for name, pol in variants:
        storm = retry_storm(args.keys, pol, args.outage, attempt_s=args.attempt_time,
                            horizon_s=args.horizon, bin_s=args.bin, seed=args.seed)
        impact = None
        if args.healthy_rate is not None:
            impact = healthy_impact(
                args.keys, pol, args.outage, healthy_rate_per_s=args.healthy_rate,
                workers=args.workers, service_mean_s=args.service_mean, seed=args.seed,
            )
        results.append({"variant": name, "storm": storm, "healthy": impact})
        storms.append(storm)
        impacts.append(impact)
        rows.append({
            "variant": name,
            "retries": storm.failed_attempts,
            "peak_rate_per_s": storm.peak_rate_per_s,
            "outage_mean_rate_per_s": storm.outage_mean_rate_per_s,
            "recovery_lag_p50_s": storm.recovery_lag_p50_s,
            "recovery_lag_max_s": storm.recovery_lag_max_s,
            "failures_per_key_median": storm.failures_per_key_median,
            "penalty_without_forget_s": storm.penalty_without_forget_s,
            "healthy_wait_mean_s": impact.healthy_wait_mean_s if impact else None,
        })
    first = storms[0]
    header = (f"retry storm: {args.keys} keys, dependency down {args.outage:g}s, attempts take "
              f"{args.attempt_time:g}s; rates per {first.bin_s:g}s bin over {first.horizon_s:g}s")
    footer_lines = [
        "penalty_without_forget_s: delay of a later unrelated failure if Forget is never "
        f"called (with Forget: {number_text(first.penalty_with_forget_s, 's')}).",
    ]
    if impacts[0] is not None:
        base = impacts[0].baseline_wait_mean_s
        footer_lines.append("healthy keys' mean wait without the storm: "
                            f"{number_text(base, 's')} "
                            f"({args.workers} workers, service mean {args.service_mean:g}s).")
    payload = {
        "inputs": {"keys": args.keys, "outage_s": args.outage, "retry": policy.describe(),
                   "attempt_s": args.attempt_time, "healthy_rate_per_s": args.healthy_rate,
                   "workers": args.workers, "service_mean_s": args.service_mean,
                   "seed": args.seed},
        "variants": results,
    }
    emit(args.format, payload, rows, COLUMNS, header=header, footer="\n".join(footer_lines))
    return 0
