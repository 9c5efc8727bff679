"""`queuelens rules`: write Prometheus recording and alerting rules for the work queues.

    queuelens rules [-o FILE] [--window 5m] [--config FILE]

The expressions come from the metric profile (``--config``: metric names, label selector,
worker counts), so the rules read exactly what the dashboard reads. Without ``-o`` the YAML
goes to stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from dashboard.cliutil import (
    CliError,
    check_output_path,
    parse_duration,
    terminal_text,
    warn,
    write_text_atomically,
)

DEFAULT_WINDOW_S = 300.0


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "rules",
        help="print Prometheus recording + alerting rules for the work-queue signals",
        description=(
            "Generate Prometheus rules: recording rules for arrival rate, throughput, busy "
            "workers, utilization and mean queue wait per queue, and alerts for saturation, "
            "growing backlog, retry storms and stuck workers. Load the file with rule_files: "
            "in prometheus.yml or into a Thanos / Mimir ruler."
        ),
    )
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write the rules to FILE (default: stdout)")
    parser.add_argument("--window", type=parse_duration, default=DEFAULT_WINDOW_S,
                        metavar="DURATION",
                        help="rate window of the recorded series, e.g. 2m (bare number = "
                             "seconds; default: 5m)")
    parser.add_argument("--config", metavar="FILE",
                        help="YAML profile (metric names, selector, worker counts)")
    parser.set_defaults(func=handle)


def command_args(window_s: float, config: str | None) -> str:
    """The arguments echoed in the file header (no output path: it does not change the text)."""
    from dashboard.rules import prometheus_duration

    args = f" --window {prometheus_duration(window_s)}"
    return args + (f" --config {os.path.basename(config)}" if config else "")


def handle(args: argparse.Namespace) -> int:
    from collectors.config import load_config
    from dashboard.rules import build_rule_groups, render_yaml

    if not 1 <= args.window <= 86400:
        raise CliError(f"--window must be between 1s and 1d, got {args.window:g}s.")
    if args.output:
        check_output_path(args.output, "-o")
    profile = load_config(args.config).profile
    groups = build_rule_groups(profile, args.window)
    if not any(q.signal == "utilization" for q in profile.derived_queries(args.window)):
        warn("no worker count for any queue (no controller_runtime_max_concurrent_reconciles "
             "in this profile and no workers: in the config), so no utilization rule and no "
             "saturation alert.")
    text = render_yaml(groups, command_args(args.window, args.config))
    if not args.output:
        sys.stdout.write(text)
        return 0
    write_text_atomically(args.output, text)
    sys.stderr.write(f"queuelens: wrote {sum(len(g.rules) for g in groups)} rules to "
                     f"{terminal_text(args.output)}\n")
    return 0
