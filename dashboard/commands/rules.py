"""`queuelens rules`: write Prometheus recording and alerting rules for the work queues.

    queuelens rules [-o FILE] [--window 5m] [--by LABELS] [--runbook-url URL] [--config FILE]
                    [--recording [--range 2h] [--scrape-interval 15s]]

The expressions come from the metric profile (``--config``: metric names, label selector,
worker counts), so the rules read exactly what the dashboard reads. The recorded series keep
the aggregation labels (``--by``, else the config's ``analysis.aggregate_by``, else
``cluster,namespace,job,name``) and the queue label; each alert's ``runbook_url`` is an
anchor of ``--runbook-url`` (default: the project's docs/operations.md). Without ``-o`` the
YAML goes to stdout.

``--recording`` adds the group the reads use (:func:`dashboard.rules.build_read_group`): the
rates of the snapshot at ``--window`` and of the range read at the step of ``--range`` (the
config's ``analysis.range``, else 2 h: a 60 s step), sized for the scrape interval
(``--scrape-interval``, else the profile's ``scrape_interval``, else 15 s), evaluated every
step (:func:`dashboard.rules.read_interval_s`).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from dashboard.cliutil import (
    BARE_SECONDS,
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
    add_settings_arguments(parser, window=False, history=True, slo=False, thresholds=False,
                           aggregate_by=True)
    parser.add_argument("--recording", action="store_true",
                        help="also record every rate the snapshot and the range read send "
                             "(per queue, controller and process; histogram buckets too), so "
                             "the reads use them instead of the raw counters")
    parser.add_argument("--scrape-interval", type=parse_duration, default=None,
                        metavar="DURATION",
                        help="with --recording: the targets' scrape interval the range read's "
                             "rate window is sized for (default: the profile's "
                             f"scrape_interval, else 15s; {BARE_SECONDS})")
    parser.add_argument("--runbook-url", type=runbook_base, default=None, metavar="URL",
                        help="page of the alerts' runbooks; each alert links to its anchor "
                             "(default: the project's docs/operations.md)")
    parser.add_argument("--config", metavar="FILE",
                        help="YAML profile (metric names, selector, worker counts) and "
                             "analysis.aggregate_by")
    parser.set_defaults(func=handle)


def command_args(window_s: float, config: str | None, by: tuple[str, ...] | None = None,
                 runbook_url: str | None = None, *, recording: bool = False,
                 range_s: float | None = None, scrape_interval_s: float | None = None) -> str:
    """The arguments echoed in the file header (no output path: it does not change the text);
    ``--by``, ``--runbook-url``, ``--range`` and ``--scrape-interval`` only when given."""
    from dashboard.rules import prometheus_duration

    args = f" --window {prometheus_duration(window_s)}"
    if by:
        args += f" --by {','.join(by)}"
    if runbook_url:
        args += f" --runbook-url {runbook_url}"
    if recording:
        args += " --recording"
    if range_s is not None:
        args += f" --range {prometheus_duration(range_s)}"
    if scrape_interval_s is not None:
        args += f" --scrape-interval {prometheus_duration(scrape_interval_s)}"
    return args + (f" --config {os.path.basename(config)}" if config else "")


def handle(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from collectors.config import load_config
    from dashboard.rules import (
        DEFAULT_RUNBOOK_URL,
        DEFAULT_SCRAPE_INTERVAL_S,
        RecordingRule,
        build_read_group,
        build_rule_groups,
        read_interval_s,
        read_windows,
        render_yaml,
    )

    if not 1 <= args.window <= 86400:
        raise CliError(f"--window must be between 1s and 1d, got {args.window:g}s.")
    if args.output:
        check_output_path(args.output, "-o")
    for flag, given in (("--scrape-interval", args.scrape_interval),
                        ("--range", args.range_s)):
        if given is not None and not args.recording:
            raise CliError(f"{flag} sizes the read group's windows: give it with --recording.")
    if args.scrape_interval is not None and not 1 <= args.scrape_interval <= 3600:
        raise CliError(f"--scrape-interval must be between 1s and 1h, got "
                       f"{args.scrape_interval:g}s.")
    config = load_config(args.config)
    settings = settings_from_args(args, config)
    by = settings.aggregate_by
    profile = replace(config.profile, recorded_by=by)
    groups = build_rule_groups(profile, args.window, by=by,
                               runbook_url=args.runbook_url or DEFAULT_RUNBOOK_URL)
    if args.recording:
        scrape = (args.scrape_interval or profile.scrape_interval_s
                  or DEFAULT_SCRAPE_INTERVAL_S)
        interval = read_interval_s(settings.step_s)
        recorded = [r.record for g in groups for r in g.rules if isinstance(r, RecordingRule)]
        groups = [replace(groups[0], interval_s=interval), *groups[1:],
                  build_read_group(profile, read_windows(args.window, settings.step_s, scrape),
                                   interval, exclude=recorded)]
    if not any(q.signal == "utilization" for q in profile.derived_queries(args.window)):
        warn("no worker count for any queue (no controller_runtime_max_concurrent_reconciles "
             "in this profile and no workers: in the config), so no utilization rule and no "
             "saturation alert.")
    text = render_yaml(groups, command_args(args.window, args.config, args.aggregate_by,
                                            args.runbook_url, recording=args.recording,
                                            range_s=args.range_s,
                                            scrape_interval_s=args.scrape_interval),
                       read_step_s=settings.step_s if args.recording else None)
    if not args.output:
        sys.stdout.write(text)
        return 0
    write_text_atomically(args.output, text)
    sys.stderr.write(f"queuelens: wrote {sum(len(g.rules) for g in groups)} rules to "
                     f"{terminal_text(args.output)}\n")
    return 0
