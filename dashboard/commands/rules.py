"""`queuelens rules`: write Prometheus recording and alerting rules for the work queues.

    queuelens rules [-o FILE] [--window 5m] [--by LABELS] [--runbook-url URL] [--config FILE]

The expressions come from the metric profile (``--config``: metric names, label selector,
worker counts), so the rules read exactly what the dashboard reads. The recorded series keep
the aggregation labels (``--by``, else the config's ``analysis.aggregate_by``, else
``cluster,namespace,job,name``) and the queue label; each alert's ``runbook_url`` is an
anchor of ``--runbook-url`` (default: the project's docs/operations.md). Without ``-o`` the
YAML goes to stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from dashboard.cliutil import (
    CliError,
    add_settings_arguments,
    check_output_path,
    parse_duration,
    settings_from_args,
    terminal_text,
    warn,
    write_text_atomically,
)

DEFAULT_WINDOW_S = 300.0
MAX_URL_CHARS = 2048
"""The longest ``--runbook-url`` accepted (what browsers and most proxies take)."""


def runbook_base(text: str) -> str:
    """``--runbook-url``: an absolute http(s) URL without a fragment (the alert's anchor is
    appended), without spaces or control characters, and without ``{{``/``}}``: Prometheus
    expands annotations as Go templates."""
    from urllib.parse import urlsplit

    if len(text) > MAX_URL_CHARS:
        raise argparse.ArgumentTypeError(f"at most {MAX_URL_CHARS} characters")
    if any(c.isspace() or not c.isprintable() for c in text):
        raise argparse.ArgumentTypeError("a URL cannot hold spaces or control characters")
    if "{{" in text or "}}" in text:
        raise argparse.ArgumentTypeError("'{{' and '}}' would be read as a Prometheus template")
    try:
        parts = urlsplit(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise argparse.ArgumentTypeError(f"expected an http(s) URL, got {text!r}")
    if parts.fragment or text.endswith("#"):
        raise argparse.ArgumentTypeError("give the page without a #fragment (each alert "
                                         "adds its own anchor)")
    return text


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
    add_settings_arguments(parser, window=False, history=False, slo=False, thresholds=False,
                           aggregate_by=True)
    parser.add_argument("--runbook-url", type=runbook_base, default=None, metavar="URL",
                        help="page of the alerts' runbooks; each alert links to its anchor "
                             "(default: the project's docs/operations.md)")
    parser.add_argument("--config", metavar="FILE",
                        help="YAML profile (metric names, selector, worker counts) and "
                             "analysis.aggregate_by")
    parser.set_defaults(func=handle)


def command_args(window_s: float, config: str | None, by: tuple[str, ...] | None = None,
                 runbook_url: str | None = None) -> str:
    """The arguments echoed in the file header (no output path: it does not change the text);
    ``--by`` and ``--runbook-url`` only when given."""
    from dashboard.rules import prometheus_duration

    args = f" --window {prometheus_duration(window_s)}"
    if by:
        args += f" --by {','.join(by)}"
    if runbook_url:
        args += f" --runbook-url {runbook_url}"
    return args + (f" --config {os.path.basename(config)}" if config else "")


def handle(args: argparse.Namespace) -> int:
    from collectors.config import load_config
    from dashboard.rules import DEFAULT_RUNBOOK_URL, build_rule_groups, render_yaml

    if not 1 <= args.window <= 86400:
        raise CliError(f"--window must be between 1s and 1d, got {args.window:g}s.")
    if args.output:
        check_output_path(args.output, "-o")
    config = load_config(args.config)
    profile = config.profile
    by = settings_from_args(args, config).aggregate_by
    groups = build_rule_groups(profile, args.window, by=by,
                               runbook_url=args.runbook_url or DEFAULT_RUNBOOK_URL)
    if not any(q.signal == "utilization" for q in profile.derived_queries(args.window)):
        warn("no worker count for any queue (no controller_runtime_max_concurrent_reconciles "
             "in this profile and no workers: in the config), so no utilization rule and no "
             "saturation alert.")
    text = render_yaml(groups, command_args(args.window, args.config, args.aggregate_by,
                                            args.runbook_url))
    if not args.output:
        sys.stdout.write(text)
        return 0
    write_text_atomically(args.output, text)
    sys.stderr.write(f"queuelens: wrote {sum(len(g.rules) for g in groups)} rules to "
                     f"{terminal_text(args.output)}\n")
    return 0
