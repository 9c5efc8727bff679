"""`queuelens whatif`: capacity what-if for one work queue over a range of worker counts."""

from __future__ import annotations

import argparse
from typing import Any

from dashboard.cliutil import (
    CliError,
    add_format_argument,
    emit,
    fraction,
    jsonable,
    non_negative_float,
    parse_duration,
    parse_int_range,
    positive_float,
    positive_int,
)

COLUMNS = (
    "workers",
    "utilization",
    "stable",
    "p_wait",
    "wait_mean_s",
    "response_mean_s",
    "wait_p95_s",
    "p_wait_over_slo",
    "throughput_per_s",
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "whatif",
        help="capacity what-if: waits and utilization for each worker count",
        description=(
            "Evaluate a work queue for every worker count in a range: utilization, stability, "
            "P(wait), mean and p95 wait, P(wait > SLO), throughput, and the smallest worker "
            "count meeting the SLO. Uses M/M/c (Erlang C); G/G/c (Allen–Cunneen) when a cv² "
            "is not 1; the finite-key model M/M/c//K with --keys; USL contention with "
            "--sigma/--kappa. Results are conditional on those models' assumptions."
        ),
    )
    parser.add_argument(
        "--arrival-rate",
        type=non_negative_float,
        required=True,
        metavar="L",
        help="arrival rate λ of distinct ready keys, per second",
    )
    parser.add_argument(
        "--service-mean",
        type=positive_float,
        required=True,
        metavar="S",
        help="mean reconcile (service) time per item, seconds",
    )
    parser.add_argument(
        "--service-cv2",
        type=non_negative_float,
        default=1.0,
        metavar="X",
        help="squared coefficient of variation of service time (default 1)",
    )
    parser.add_argument(
        "--arrival-cv2",
        type=non_negative_float,
        default=1.0,
        metavar="Y",
        help="squared coefficient of variation of inter-arrival time (default 1)",
    )
    parser.add_argument(
        "--keys",
        type=positive_int,
        default=None,
        metavar="K",
        help="number of distinct keys: use the finite-key (coalescing) model; "
        "λ is then the total rate if every key were idle",
    )
    parser.add_argument(
        "--sigma",
        type=fraction,
        default=None,
        metavar="s",
        help="USL contention σ in [0,1] (needs --kappa)",
    )
    parser.add_argument(
        "--kappa",
        type=fraction,
        default=None,
        metavar="k",
        help="USL coherency κ in [0,1] (needs --sigma)",
    )
    parser.add_argument(
        "--workers",
        type=parse_int_range,
        default=(1, 16),
        metavar="A-B",
        help="worker counts to evaluate, e.g. 1-16 (default) or 8",
    )
    parser.add_argument(
        "--slo",
        type=parse_duration,
        default=None,
        metavar="SECONDS",
        help="wait SLO (seconds, or e.g. 250ms); met when P(wait > SLO) ≤ 1 − q",
    )
    parser.add_argument(
        "--slo-quantile",
        type=float,
        default=0.95,
        metavar="Q",
        help="quantile the SLO applies to (default 0.95)",
    )
    add_format_argument(parser)
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from models.whatif import WhatIfInputs, whatif_sweep

    if (args.sigma is None) != (args.kappa is None):
        raise CliError("--sigma and --kappa go together: give both or neither")
    if not 0.0 < args.slo_quantile < 1.0:
        raise CliError(f"--slo-quantile must be between 0 and 1, got {args.slo_quantile!r}")
    low, high = args.workers
    inputs = WhatIfInputs(
        arrival_rate_per_s=args.arrival_rate,
        service_mean_s=args.service_mean,
        service_cv2=args.service_cv2,
        arrival_cv2=args.arrival_cv2,
        keys=args.keys,
        sigma=args.sigma,
        kappa=args.kappa,
        workers_min=low,
        workers_max=high,
        slo_wait_s=args.slo,
        slo_quantile=args.slo_quantile,
    )
    result = whatif_sweep(inputs)
    rows = [{c: getattr(r, c) for c in COLUMNS} for r in result.rows]
    payload = {
        "inputs": jsonable(inputs),
        "model": result.model,
        "rows": rows,
        "recommendation": jsonable(result.recommendation),
    }
    rec = result.recommendation
    header = (
        f"model: {result.model}   λ={inputs.arrival_rate_per_s:g}/s  "
        f"E[S]={inputs.service_mean_s:g}s  (waits are conditional on the model's assumptions)"
    )
    footer = f"recommendation: {rec.workers if rec.workers is not None else 'none'} — {rec.reason}"
    emit(args.format, payload, rows, COLUMNS, header=header, footer=footer)
    return 0
