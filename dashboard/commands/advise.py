"""``queuelens advise``: per-queue capacity plans — will more workers help, or only add
contention?

    queuelens advise [--demo | --prometheus URL] [--at TIME] [--window 5m] [--range 2h]
                     [--queue NAME [--keys N]] [--slo 1s] [--slo-quantile 0.95]
                     [--threshold NAME=VALUE ...] [--config FILE]
                     [--format table|json|yaml|csv]

Reads one snapshot (rates over ``--window``) and one range (``--range`` of history, one point
per max(range/120, 15 s)) for all queues, runs the advisor on each queue and builds its
capacity plan (:mod:`models.plan`): the same plan the dashboard and the reports show.
The table has one line per queue: the severity of its first verdict, the verdict in words,
the worker count now → recommended, the binding limit, the least headroom (how far the demand
can grow before a limit binds), the design demand and the confidence;
on a terminal (or with ``$COLUMNS``) it fits the width, cutting the widest text column with
an ellipsis (never a number). CSV: the table's columns, every text cell guarded against
spreadsheet formulas (:func:`dashboard.cliutil.format_csv`). YAML: the JSON's fields. JSON:
``{"at", "window_s",
"range_s", "source", "slo_wait_s", "settings", "queues": [{"queue", "plan": {...},
"verdicts": [{"kind", "severity", "headline", "summary", "confidence", "evidence": {...},
"recommendation": {...}}]}], "warnings"}``; SI units, ``null`` where a number does not exist.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from dashboard.cliutil import (
    CliError,
    add_format_argument,
    add_settings_arguments,
    emit,
    parse_time,
    positive_int,
    settings_from_args,
    utc_text,
)

TABLE_COLUMNS = ("queue", "severity", "verdict", "workers", "headroom", "demand", "confidence",
                 "tags")
"""The headroom cell names the limit nearest to binding ('1.13× workers', 'binds: hot key'): the
binding limit of the JSON's plan, with how far the demand can grow before it binds."""
FIT_COLUMNS = ("verdict", "queue", "tags", "headroom")
"""The text columns a table narrower than its terminal cuts (widest first; the headroom's
number leads its cell, so a cut keeps it); the workers, demand, confidence and the severity
word never."""


def register(subparsers: Any) -> None:
    from dashboard.source_args import add_source_arguments
    from models.verdicts.kinds import Kind

    kinds = [k.value for k in Kind]  # the verdict registry's kinds, in the order of impact
    parser = subparsers.add_parser(
        "advise",
        help="per-queue verdicts: add workers, contention, retry storm, hot key, ...",
        description=(
            "Tell, for each work queue, whether more workers would help or only add "
            f"contention: {', '.join(kinds[:-1])} or {kinds[-1]}, each with its evidence "
            "and a recommendation. "
            "Without --prometheus (or $QUEUELENS_PROMETHEUS_URL) it reads the embedded demo."
        ),
    )
    add_source_arguments(parser)
    parser.add_argument("--at", type=parse_time, default=None, metavar="TIME",
                        help="evaluation time: unix seconds or RFC 3339 (default: now)")
    parser.add_argument("--queue", metavar="NAME", default=None,
                        help="only this queue (default: every queue)")
    parser.add_argument("--keys", type=positive_int, default=None, metavar="N",
                        help="distinct keys of the --queue, if known: sizing then uses the "
                             "finite-key model M/M/c//K")
    add_settings_arguments(parser)
    add_format_argument(parser, ("table", "json", "yaml", "csv"))
    parser.set_defaults(func=handle)


def table_rows(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """One line per queue, from its plan (the words and numbers of the dashboard's card) and
    the severity of its first verdict (the verdicts come in order of impact; as the report's
    table)."""
    from dashboard.plan_words import plan_cells

    return [{"queue": q["queue"],
             "severity": q["verdicts"][0]["severity"] if q["verdicts"] else "ok",
             **plan_cells(q["plan"])} for q in payload["queues"] if q["plan"] is not None]


def handle(args: argparse.Namespace) -> int:
    from collectors.config import load_config
    from collectors.connect import close_source
    from dashboard.advice import advise_fleet
    from dashboard.source_args import source_from_args

    if args.keys is not None and args.queue is None:
        raise CliError("--keys needs --queue (the key count of one queue).")
    keys = {args.queue: args.keys} if args.keys is not None else None
    config = load_config(args.config)
    settings = settings_from_args(args, config)
    source = source_from_args(args, config=config)
    at = time.time() if args.at is None else args.at
    try:
        advice = advise_fleet(source, at, settings, args.queue, keys=keys)
    finally:
        close_source(source)
    payload = advice.payload()
    when = utc_text(advice.at)
    header = f"at {when}: {advice.describe()}"
    footer = "\n".join(f"warning: {w}" for w in advice.warnings)
    emit(args.format, payload, table_rows(payload), TABLE_COLUMNS, header=header, footer=footer,
         fit=FIT_COLUMNS)
    return 0
