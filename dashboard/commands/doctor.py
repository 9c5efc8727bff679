"""``queuelens doctor``: the metric-contract doctor — per process and queue, which signals are
present, missing, empty or malformed, what was detected, what each gap costs, and the fix.

    queuelens doctor [--demo | --prometheus URL] [--at TIME] [--range 1h] [--config FILE]
                     [--selector '{...}'] [--timeout 30s] [--deadline 10m]
                     [--format table|json]

Reads what exists in seven queries for the whole fleet (:mod:`collectors.doctor`) — or the demo
fleet's metrics as exposition text — and judges it against the contract
(:func:`models.contract.diagnose`). JSON: ``{"source", "at", "range_s", "selector", "summary",
"processes": [{"labels", "queues": [{"name", "missing", "empty", "malformed", "priorities"}],
"detected": {"framework", "evidence", "version_hints", "priority_queue",
"rest_client_metrics", "apiserver": {"reachable", "generation", ...}}, "signals": [{"signal",
"status", "detail", "fix", "metric", "costs", "cost"}]}], "signals": [...fleet-wide...],
"queries", "warnings", "recorded": {"windows", "expected", "unusable", "query"}}``
(``recorded``: the recorded series of ``queuelens rules --recording`` the reads would use, one
more query; not there for the demo).

Exit 0 whatever is missing (it is a report), 3 when Prometheus cannot be read (unreachable,
timed out, an HTTP error, a rejected query), 2 with one line for bad input.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from dashboard.cliutil import (
    CliError,
    add_format_argument,
    dump_json,
    format_table,
    jsonable,
    parse_duration,
    parse_time,
    terminal_lines,
    terminal_text,
    utc_text,
)

TABLE_COLUMNS = ("signal", "status", "detail")


def register(subparsers: Any) -> None:
    from dashboard.source_args import add_source_arguments

    parser = subparsers.add_parser(
        "doctor",
        help="check the metric contract: what is present, missing, empty or malformed, "
             "and the fix",
        description=(
            "Per process and queue: which signals of the metric contract are present, "
            "missing, empty (never changed over the range) or malformed (a histogram "
            "without _count or +Inf, a bound spelled two ways), what was detected "
            "(controller-runtime, component-base or a bare client-go queue; the priority "
            "queue; the REST client's opt-in metrics; the API server's metrics), what each "
            "gap costs and the exact fix. Exit 0 as a report, 3 when Prometheus cannot be "
            "read. Without --prometheus (or $QUEUELENS_PROMETHEUS_URL) it reads the demo."
        ),
    )
    add_source_arguments(parser)
    parser.add_argument("--at", type=parse_time, default=None, metavar="TIME",
                        help="evaluation time: unix seconds or RFC 3339 (default: now)")
    parser.add_argument("--range", dest="range_s", type=parse_duration, default=None,
                        metavar="DURATION",
                        help="how far back to look for series and changes, e.g. 30m (bare "
                             "number = seconds; default 1h)")
    add_format_argument(parser, ("table", "json"))
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from collectors.config import load_config
    from collectors.connect import close_source
    from collectors.doctor import DEFAULT_RANGE_S, MIN_RANGE_S, read_contract, read_recorded
    from collectors.profile import parse_selector
    from dashboard.source_args import source_from_args
    from models.contract import diagnose

    range_s = DEFAULT_RANGE_S if args.range_s is None else args.range_s
    if range_s < MIN_RANGE_S:
        raise CliError(f"--range must be at least {MIN_RANGE_S:g}s, got {range_s:g}s.")
    config = load_config(args.config)
    profile = config.profile
    if args.selector:
        profile = profile.with_selector(parse_selector(args.selector))
    source = source_from_args(args, config=config)
    at = time.time() if args.at is None else args.at
    try:
        reading = read_contract(source, at, range_s, profile)
        recorded = read_recorded(source, at)
    finally:
        close_source(source)
    report = diagnose(reading)
    if args.format == "json":
        payload = jsonable(report)
        if recorded is not None:
            payload["recorded"] = jsonable(recorded)
        dump_json(payload)
    else:
        sys.stdout.write(render_table(report, recorded))
    return 0


def recorded_line(recorded: Any) -> str | None:
    """One line on the recorded series of ``queuelens rules --recording``
    (:class:`collectors.doctor.RecordedPresence`); None for a source without them (demo)."""
    if recorded is None:
        return None
    head = "recorded series (queuelens rules --recording): "
    if recorded.unusable:
        return head + f"not used: {recorded.unusable}"
    if not recorded.windows:
        return head + "none found; every read sends the raw counters"
    found = ", ".join(f"{w} ({n} of {recorded.expected} rates)"
                      for w, n in recorded.windows.items())
    return head + (f"present at {found}; a read whose rate window is one of these reads "
                   "them, any other reads raw")


def _signal_rows(signals: Sequence[Any]) -> list[dict[str, str]]:
    return [{"signal": s.signal, "status": s.status, "detail": s.detail} for s in signals]


def _fixes(signals: Sequence[Any]) -> list[str]:
    """The fix and the cost of every signal that is not ok, each under its signal's name."""
    out: list[str] = []
    for s in signals:
        if s.status == "ok":
            continue
        out.append(f"  [{s.signal}] {s.status} — {s.cost}")
        if s.costs:
            out.append(f"    cannot be given: {', '.join(s.costs)}")
        if s.fix:
            out.append("    fix:")
            out.extend("      " + line for line in s.fix.split("\n"))
    return out


def _detected_lines(process: Any) -> list[str]:
    lines = [f"{what}: {found}" for what, found in process.detected.facts()]
    names = [q.name for q in process.queues]
    lines.append(f"queues ({len(names)}): {', '.join(names)}")
    return lines


def render_table(report: Any, recorded: Any = None) -> str:
    """The report for a terminal: every line through :func:`terminal_text` (label values are
    hostile text), the tables through :func:`format_table`; ``recorded``: the line of
    :func:`recorded_line` under the summary."""
    line = recorded_line(recorded)
    parts = [terminal_text(f"source: {report.source}   at: {utc_text(report.at)}   range: "
                           f"{report.range_s:g} s"
                           + (f"   selector: {report.selector}" if report.selector else "")),
             terminal_text(report.summary), *([terminal_text(line)] if line else []),
             "", "fleet:",
             format_table(_signal_rows(report.signals), TABLE_COLUMNS)]
    fixes = _fixes(report.signals)
    if fixes:
        parts += ["fixes:", terminal_lines("\n".join(fixes))]
    for process in report.processes:
        parts += ["", terminal_text(f"== process {process.labels_text}")]
        parts += [terminal_text("   " + line) for line in _detected_lines(process)]
        parts.append(format_table(_signal_rows(process.signals), TABLE_COLUMNS))
        fixes = _fixes(process.signals)
        if fixes:
            parts += ["fixes:", terminal_lines("\n".join(fixes))]
    parts += [terminal_text(f"warning: {w}") for w in report.warnings]
    return "\n".join(parts) + "\n"
