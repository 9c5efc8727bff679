"""``queuelens report``: a capacity report of every queue, as HTML, Markdown, JSON or CSV.

    queuelens report [--demo | --prometheus URL] [--at TIME] [--range 2h] [--window 5m]
                     [--slo 1s] [--slo-quantile Q] [--threshold NAME=VALUE ...]
                     [--config FILE] --format html|md|json|csv [-o FILE] [--verbose]

Reads one snapshot and one range for the whole fleet with the one analysis settings (the
config file's ``analysis:``, then the flags; the same defaults as ``advise`` and the
dashboard), through the advisor and the capacity plans (:mod:`dashboard.advice`), then
writes the report (:mod:`dashboard.report`) to ``FILE`` (atomically: a partial file never
replaces a good one) or to stdout with ``-o -``. No format writes a control character from
a label value raw to stdout (a terminal would obey it): JSON writes them as ``\\u`` escapes,
HTML and Markdown show them as ``\\x1b``-style escapes, CSV to stdout too (a file gets the
exact text). HTML to stdout is refused when stdout is a terminal (a page of markup and
inline scripts is of no use there): give ``-o FILE`` or redirect.
Progress goes to stderr: a bar when stderr is a terminal, plain lines with ``--verbose``
otherwise, nothing by default.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from dashboard.cliutil import (
    CliError,
    ProgressBar,
    add_settings_arguments,
    check_output_path,
    parse_time,
    settings_from_args,
    terminal_lines,
    write_text_atomically,
)


def register(subparsers: Any) -> None:
    from dashboard.source_args import add_source_arguments

    parser = subparsers.add_parser(
        "report",
        help="capacity report of every queue (HTML, Markdown, JSON or CSV)",
        description=(
            "Write a capacity report: fleet summary, per-queue verdicts with their evidence, "
            "demand vs capacity over the range and wait vs workers from the what-if sweep, "
            "the assumptions of each model, the time range and the data source. HTML is one "
            "self-contained file that opens offline; Markdown is for pull requests and "
            "tickets; JSON (with schema_version) for automation; CSV is the per-queue table. "
            "Without --prometheus (or $QUEUELENS_PROMETHEUS_URL) it reads the embedded demo."
        ),
    )
    add_source_arguments(parser)
    parser.add_argument("--at", type=parse_time, default=None, metavar="TIME",
                        help="end of the report range: unix seconds or RFC 3339 (default: now)")
    add_settings_arguments(parser)
    parser.add_argument("--format", required=True, choices=["html", "md", "json", "csv"],
                        help="report format")
    parser.add_argument("-o", "--output", metavar="FILE", default="-",
                        help="write the report to FILE (default '-': stdout)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print progress lines on stderr when it is not a terminal")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from collectors.config import load_config
    from collectors.connect import close_source
    from dashboard.report import build_report, render
    from dashboard.source_args import source_from_args

    if args.output != "-":
        check_output_path(args.output, "-o")  # before the work, not after it
    elif args.format == "html" and sys.stdout.isatty():
        raise CliError("writing HTML to a terminal; use -o FILE or redirect")
    tty = sys.stderr.isatty()
    bar = ProgressBar(sys.stderr, tty) if (tty or args.verbose) else None
    config = load_config(args.config)
    settings = settings_from_args(args, config)
    source = source_from_args(args, config=config)
    at = time.time() if args.at is None else args.at
    try:
        report = build_report(source, at, settings, progress=bar)
        text = render(report, args.format, progress=bar, terminal=args.output == "-")
    finally:
        if bar is not None:
            bar.close()
        close_source(source)
    if args.output == "-":
        if args.format == "md":  # a second guard: nothing but its line breaks is a control
            text = terminal_lines(text)
        sys.stdout.write(text)
        return 0
    write_text_atomically(args.output, text)
    sys.stderr.write(f"queuelens: wrote the {args.format} report of {len(report.queues)} queues "
                     f"to {args.output}\n")
    return 0
