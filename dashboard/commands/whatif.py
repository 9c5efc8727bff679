"""`queuelens whatif`: capacity what-if for one work queue over a range of worker counts.

Two forms:

* offline — ``--arrival-rate L --service-mean S [...]``: the models on typed inputs;
* live — ``--queue NAME`` with ``--demo`` or ``--prometheus URL`` (``--at``, ``--window``,
  ``--range``, ``--keys``, ``--slo``): the inputs the advisor sizes that queue with, measured
  (λ at the design demand, the mean work time, the worker count; see
  :func:`models.advisor.sizing_inputs`), from the same one snapshot and one range read as
  ``advise``; ``recommendation.workers`` is what ``advise`` recommends for the queue, with
  its reason and, for contention, the binding limit.
"""

from __future__ import annotations

import argparse
from typing import Any

from dashboard.cliutil import (
    CliError,
    add_format_argument,
    add_settings_arguments,
    emit,
    fraction,
    fraction_open,
    jsonable,
    non_negative_float,
    parse_duration,
    parse_int_range,
    parse_time,
    positive_float,
    positive_int,
    settings_from_args,
    work_duration,
)
from models.formatting import number_text

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


_DEFAULT_TARGET = 0.7
"""``AdvisorThresholds.util_target`` (checked by a test; not imported, to keep the CLI's
start-up light)."""


def _target(text: str) -> float | None:
    """A utilization target strictly between 0 and 1, or 'off' (the SLO alone decides)."""
    return None if text.strip().lower() == "off" else fraction_open(text)


def register(subparsers: Any) -> None:
    from dashboard.source_args import add_source_arguments

    parser = subparsers.add_parser(
        "whatif",
        help="capacity what-if: waits and utilization for each worker count",
        description=(
            "Evaluate a work queue for every worker count in a range: utilization, stability, "
            "P(wait), mean and p95 wait, P(wait > SLO), throughput, and the smallest worker "
            "count meeting the SLO. Uses M/M/c (Erlang C); G/G/c (Allen–Cunneen) when a cv² "
            "is not 1; the finite-key model M/M/c//K with --keys; USL contention with "
            "--sigma/--kappa. Results are conditional on those models' assumptions. With "
            "--queue NAME (and --demo or --prometheus URL) the inputs are measured: the ones "
            "`advise` sizes that queue with, and the recommendation is `advise`'s."
        ),
    )
    parser.add_argument(
        "--arrival-rate",
        type=non_negative_float,
        default=None,
        metavar="L",
        help="arrival rate λ of distinct ready keys, per second (offline form)",
    )
    parser.add_argument(
        "--service-mean",
        type=work_duration,
        default=None,
        metavar="DURATION",
        help="mean reconcile (service) time per item, e.g. 250ms or 0.25 (bare number = "
        "seconds; offline form)",
    )
    live = parser.add_argument_group("live form (measured inputs)")
    live.add_argument("--queue", metavar="NAME", default=None,
                      help="the measured queue: its inputs come from the source")
    live.add_argument("--at", type=parse_time, default=None, metavar="TIME",
                      help="evaluation time: unix seconds or RFC 3339 (default: now)")
    add_settings_arguments(live, slo=False)
    add_source_arguments(parser)
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
        "--ceiling",
        type=positive_float,
        default=None,
        metavar="X",
        help="a shared resource's ceiling in items/s (a lock, a pool, a rate limit): the "
        "rows never pass it, and --service-mean is then the pass time without waiting for "
        "it (offline form; not with --sigma/--kappa)",
    )
    parser.add_argument(
        "--ceiling-cv2",
        type=non_negative_float,
        default=1.0,
        metavar="X",
        help="cv² of the shared resource's service: 1 (default) for a resource held for a "
        "variable time, 0 for a rate limiter (needs --ceiling)",
    )
    parser.add_argument(
        "--workers",
        type=parse_int_range,
        default=None,
        metavar="A-B",
        help="worker counts to evaluate, e.g. 1-16 (offline default) or 8; live: the "
        "advisor's own range unless given",
    )
    parser.add_argument(
        "--slo",
        type=parse_duration,
        default=None,
        metavar="DURATION",
        help="wait SLO, e.g. 250ms or 1s (bare number = seconds); met when P(wait > SLO) "
        "≤ 1 − q (live default 1s, as advise)",
    )
    parser.add_argument(
        "--utilization-target",
        type=_target,
        default=_DEFAULT_TARGET,
        metavar="R",
        help="the recommendation also keeps utilization ≤ R (default "
        f"{_DEFAULT_TARGET:g}, the advisor's design cap; 'off': the SLO alone decides)",
    )
    parser.add_argument(
        "--slo-quantile",
        type=fraction_open,
        default=None,
        metavar="Q",
        help="quantile the SLO applies to (default 0.95)",
    )
    add_format_argument(parser)
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    if args.queue is not None:
        return _live(args)
    from models.whatif import WhatIfInputs, whatif_sweep

    if args.arrival_rate is None or args.service_mean is None:
        raise CliError("give --arrival-rate and --service-mean, or --queue NAME for a "
                       "measured queue.")
    if (args.sigma is None) != (args.kappa is None):
        raise CliError("--sigma and --kappa go together: give both or neither")
    if args.ceiling is not None and args.sigma is not None:
        raise CliError("--ceiling and --sigma/--kappa are two models of contention: give one")
    if args.ceiling is None and args.ceiling_cv2 != 1.0:
        raise CliError("--ceiling-cv2 needs --ceiling")
    quantile = 0.95 if args.slo_quantile is None else args.slo_quantile
    low, high = args.workers or (1, 16)
    inputs = WhatIfInputs(
        arrival_rate_per_s=args.arrival_rate,
        service_mean_s=args.service_mean,
        service_cv2=args.service_cv2,
        arrival_cv2=args.arrival_cv2,
        keys=args.keys,
        sigma=args.sigma,
        kappa=args.kappa,
        ceiling_per_s=args.ceiling,
        ceiling_cv2=args.ceiling_cv2,
        workers_min=low,
        workers_max=high,
        slo_wait_s=args.slo,
        slo_quantile=quantile,
        utilization_target=args.utilization_target,
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


_LIVE_SIGNALS = ("arrival_rate_per_s", "throughput_per_s", "busy_workers", "workers")
"""Measured inputs reported with their PromQL (the service time is busy / throughput)."""

LIVE_COLUMNS = (*COLUMNS, "wait_mean_lo_s", "wait_mean_hi_s", "wait_p95_lo_s",
                "wait_p95_hi_s", "utilization_lo", "utilization_hi", "throughput_fit_per_s")
"""The rows of a measured queue: the sweep's columns plus the plan's band (the same sweep
at the lowest and highest demand of the range) and the fitted USL curve, where known."""


def _live(args: argparse.Namespace) -> int:
    """The what-if of a measured queue (see the module docstring)."""
    import time

    from collectors.config import load_config
    from collectors.connect import close_source
    from dashboard.advice import queue_whatif
    from dashboard.source_args import source_from_args
    from models.plan import PlanRow

    for flag, value in (("--arrival-rate", args.arrival_rate),
                        ("--service-mean", args.service_mean), ("--sigma", args.sigma),
                        ("--kappa", args.kappa), ("--ceiling", args.ceiling)):
        if value is not None:
            raise CliError(f"{flag} is for the offline form; with --queue the inputs are "
                           "measured.")
    if args.service_cv2 != 1.0 or args.arrival_cv2 != 1.0:
        raise CliError("--service-cv2/--arrival-cv2 are for the offline form.")
    config = load_config(args.config)
    settings = settings_from_args(args, config)
    if args.utilization_target is not None and args.utilization_target != _DEFAULT_TARGET:
        settings = settings.with_overrides(
            thresholds={"util_target": args.utilization_target})
    source = source_from_args(args, config=config)
    at = time.time() if args.at is None else args.at
    try:
        found = queue_whatif(source, at, settings, args.queue, keys=args.keys,
                             workers=args.workers)
    finally:
        close_source(source)
    plan = found.plan
    assert plan is not None
    recommendation = {
        "workers": plan.recommended_workers,
        "workers_now": plan.workers_now,
        "rule": plan.rule,
        "reason": f"{plan.headline}. Rule: {plan.rule_text}.",
        "binding_limit": plan.binding_limit,
        "ceiling_per_s": plan.ceiling_per_s,
        "confidence": plan.confidence,
        "verdicts": [v.kind for v in plan.verdicts],
    }
    profile = getattr(source, "profile", None)
    promql = ({sq.signal: sq.promql for sq in profile.queries(settings.window_s)}
              if profile is not None else {})
    q = found.queue
    measured = {name: {"value": getattr(q, name), "promql": promql.get(name)}
                for name in _LIVE_SIGNALS}
    measured["service_mean_s"] = {"value": q.service_mean_s,
                                  "promql": "busy_workers / throughput_per_s"}
    inputs: dict[str, Any] = {
        "queue": args.queue, "source": found.advice.source, "at": found.advice.at,
        "window_s": settings.window_s, "range_s": settings.range_s,
        "step_s": settings.step_s, "slo_wait_s": settings.slo_wait_s,
        "slo_quantile": settings.slo_quantile, "described": found.advice.describe(),
        "measured": measured,
        "sized_with": jsonable(found.inputs) if found.inputs is not None else None,
    }
    result = found.result
    by_workers = {r.workers: r for r in plan.rows}
    rows = []
    for r in result.rows if result is not None else ():
        row = {c: getattr(r, c) for c in COLUMNS}
        band = by_workers.get(r.workers)
        for c in LIVE_COLUMNS[len(COLUMNS):]:
            row[c] = getattr(band, c) if isinstance(band, PlanRow) else None
        rows.append(row)
    payload = {"inputs": inputs, "model": result.model if result is not None else None,
               "rows": rows, "band_source": plan.band_source,
               "recommendation": recommendation, "plan": plan.payload(),
               "warnings": list(found.advice.warnings)}
    sized = found.inputs
    work = ("E[S] without the shared resource's wait" if sized is not None
            and sized.ceiling_per_s is not None else "E[S]")
    header = (f"queue: {args.queue}   {found.advice.describe()}\n"
              + (f"λ (design) = {number_text(sized.arrival_rate_per_s, '/s')}  {work} = "
                 f"{number_text(sized.service_mean_s, 's')}  model: "
                 f"{result.model if result else '—'}"
                 if sized is not None else "not enough data to size this queue")
              + (f"\n{plan.rows_basis}" if plan.rows_basis else ""))
    rec = plan.recommended_workers
    footer = (f"recommendation (as advise): {rec if rec is not None else 'no worker count'} "
              f"— {recommendation['reason']}")
    footer += "".join(f"\nwarning: {w}" for w in found.advice.warnings)
    columns = LIVE_COLUMNS if args.format != "table" else COLUMNS
    emit(args.format, payload, rows, columns, header=header, footer=footer)
    return 0
