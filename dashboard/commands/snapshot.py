"""``queuelens snapshot``: every queue's signals at one time, from Prometheus or the demo.

    queuelens snapshot [--demo | --prometheus URL] [--at TIME] [--window 5m]
                       [--selector '{...}'] [--config FILE] [--format table|json|csv]

JSON: ``{"at", "window_s", "source", "queues": [{"queue", "labels", <fields>, "missing",
"process", "quantile_bounds"}], "warnings": [...]}`` — values in SI units, ``null`` where not
measurable (the reason is in ``missing``); ``quantile_bounds`` maps each histogram quantile
field to ``[lo, hi]``, the bucket its rank fell in (the quantile lies in ``(lo, hi]``; ``hi``
is ``null`` in the +Inf bucket). The table writes each quantile as its bucket supports it
(:func:`dashboard.numbers.quantile_text`: "0.42 s", "between 0.1 s and 1 s", "above 10 s");
CSV keeps the numbers. Unreachable Prometheus: one line on stderr naming the URL and the cause,
exit 3.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from dashboard.cliutil import (
    add_format_argument,
    emit,
    parse_duration,
    parse_time,
    utc_text,
)

TABLE_COLUMNS = (
    "queue", "arrival_rate_per_s", "throughput_per_s", "service_mean_s", "busy_workers",
    "workers", "utilization", "depth_current", "queue_wait_mean_s", "queue_wait_p95_s",
    "queue_wait_p99_s", "retries_per_s", "errors_per_s", "api_calls_per_s",
)
QUANTILE_COLUMNS = tuple(c for c in TABLE_COLUMNS
                         if c.startswith(("queue_wait_p", "work_p")) and c.endswith("_s"))
"""Histogram quantile columns: the table writes them as
:func:`dashboard.numbers.snapshot_quantile_text`."""


def register(subparsers: Any) -> None:
    from dashboard.source_args import add_source_arguments

    parser = subparsers.add_parser(
        "snapshot",
        help="print every queue's signals at one time",
        description=(
            "Read the work-queue signals of every queue at one time (one PromQL query per "
            "signal for all queues). Without --prometheus (or $QUEUELENS_PROMETHEUS_URL) it "
            "reads the embedded demo fleet."
        ),
    )
    add_source_arguments(parser)
    parser.add_argument("--at", type=parse_time, default=None, metavar="TIME",
                        help="evaluation time: unix seconds or RFC 3339 (default: now)")
    parser.add_argument("--window", type=parse_duration, default=300.0, metavar="DURATION",
                        help="rate window, e.g. 90s or 5m (bare number = seconds; "
                             "default 5m)")
    add_format_argument(parser)
    parser.set_defaults(func=handle)


def snapshot_payload(snap: Any) -> dict[str, Any]:
    """The documented JSON shape (also used by the table/CSV rows)."""
    import dataclasses

    queues = []
    for q in snap.queues:
        row = {f.name: getattr(q, f.name) for f in dataclasses.fields(q)}
        queues.append(row)
    return {
        "at": snap.at,
        "window_s": snap.window_s,
        "source": snap.source,
        "queues": queues,
        "warnings": list(snap.warnings),
    }


def table_rows(snap: Any, payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The payload's queue rows with each quantile column as text its bucket supports."""
    from dashboard.numbers import snapshot_quantile_text

    return [{**row, **{c: snapshot_quantile_text(q, c) for c in QUANTILE_COLUMNS}}
            for q, row in zip(snap.queues, payload["queues"], strict=True)]


def handle(args: argparse.Namespace) -> int:
    from collectors.connect import close_source
    from dashboard.source_args import source_from_args

    source = source_from_args(args)
    at = time.time() if args.at is None else args.at
    try:
        snap = source.snapshot(at, args.window)
    finally:
        close_source(source)
    payload = snapshot_payload(snap)
    when = utc_text(snap.at)
    header = f"source: {snap.source}   at: {when}   window: {snap.window_s:g} s"
    footer = "\n".join(f"warning: {w}" for w in snap.warnings)
    rows = table_rows(snap, payload) if args.format == "table" else payload["queues"]
    emit(args.format, payload, rows, TABLE_COLUMNS, header=header, footer=footer)
    return 0
