"""``queuelens advise``: per-queue verdicts — will more workers help, or only add contention?

    queuelens advise [--demo | --prometheus URL] [--at TIME] [--window 5m] [--range 2h]
                     [--queue NAME [--keys N]] [--slo 1s] [--config FILE]
                     [--format table|json]

Reads one snapshot (rates over ``--window``) and one range (``--range`` of history for the
contention fit and the trend rules) for all queues, then runs the advisor on each queue.
JSON: ``{"at", "window_s", "range_s", "source", "slo_wait_s", "queues": [{"queue", "verdicts":
[{"kind", "severity", "headline", "summary", "confidence", "evidence": {...},
"recommendation": {...}}]}],
"warnings"}``; values in SI units, ``null`` where a number does not exist.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from dashboard.cliutil import (
    CliError,
    add_format_argument,
    emit,
    parse_duration,
    parse_time,
    positive_int,
)

TABLE_COLUMNS = ("queue", "severity", "verdict", "kind", "workers", "confidence")


def register(subparsers: Any) -> None:
    from collectors.connect import add_source_arguments

    parser = subparsers.add_parser(
        "advise",
        help="per-queue verdicts: add workers, contention, retry storm, hot key, ...",
        description=(
            "Tell, for each work queue, whether more workers would help or only add "
            "contention: add_workers, backlog_growing, contention, retry_storm, "
            "requeue_misuse, hot_key, long_passes, stuck_workers, over_provisioned, "
            "insufficient_data or healthy, each with its evidence and a recommendation. "
            "Without --prometheus (or $QUEUELENS_PROMETHEUS_URL) it reads the embedded demo."
        ),
    )
    add_source_arguments(parser)
    parser.add_argument("--at", type=parse_time, default=None, metavar="TIME",
                        help="evaluation time: unix seconds or RFC 3339 (default: now)")
    parser.add_argument("--window", type=parse_duration, default=300.0, metavar="DURATION",
                        help="rate window of the snapshot (default 5m)")
    parser.add_argument("--range", dest="range_s", type=parse_duration, default=7200.0,
                        metavar="DURATION",
                        help="history read for the contention fit and trend rules (default 2h)")
    parser.add_argument("--queue", metavar="NAME", default=None,
                        help="only this queue (default: every queue)")
    parser.add_argument("--keys", type=positive_int, default=None, metavar="N",
                        help="distinct keys of the --queue, if known: sizing then uses the "
                             "finite-key model M/M/c//K")
    parser.add_argument("--slo", type=parse_duration, default=1.0, metavar="DURATION",
                        help="queue-wait objective: p95 wait within it (default 1s)")
    add_format_argument(parser, ("table", "json"))
    parser.set_defaults(func=handle)


def table_rows(payload: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for q in payload["queues"]:
        for v in q["verdicts"]:
            rec = v["recommendation"]
            rows.append({"queue": q["queue"], "severity": v["severity"],
                         "verdict": v["headline"], "kind": v["kind"],
                         "workers": rec.get("workers"),
                         "confidence": f"{100 * v['confidence']:.0f} %"})
    return rows


def handle(args: argparse.Namespace) -> int:
    from collectors.connect import close_source, source_from_args
    from dashboard.advice import advise_fleet

    if args.keys is not None and args.queue is None:
        raise CliError("--keys needs --queue (the key count of one queue).")
    keys = {args.queue: args.keys} if args.keys is not None else None
    source = source_from_args(args)
    at = time.time() if args.at is None else args.at
    try:
        advice = advise_fleet(source, at, args.window, args.range_s, args.slo, args.queue,
                              keys=keys)
    finally:
        close_source(source)
    payload = advice.payload()
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(advice.at))
    header = (f"source: {advice.source}   at: {when}   window: {advice.window_s:g} s   "
              f"range: {args.range_s:g} s   SLO: p95 wait ≤ {args.slo:g} s")
    footer = "\n".join(f"warning: {w}" for w in advice.warnings)
    emit(args.format, payload, table_rows(payload), TABLE_COLUMNS, header=header, footer=footer)
    return 0
