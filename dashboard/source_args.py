"""The command-line flags that choose the data source — ``--demo | --prometheus URL``,
``--config``, ``--selector``, ``--timeout``, ``--deadline``, the auth, TLS and header flags —
and the source they ask for: the CLI's side of :func:`collectors.connect.open_source`, which
takes plain values and decides nothing about flags or terminals.

:func:`add_source_arguments` / :func:`source_from_args` give every command the same flags. A
command that falls back to the demo without ``--demo`` says so on stderr (:data:`DEMO_NOTICE`):
the demo fleet's names look real.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from collectors.connect import DEFAULT_COMMAND_DEADLINE_S, open_source
from dashboard.cliutil import parse_duration

if TYPE_CHECKING:  # imported where used, so `queuelens --help` loads neither yaml nor numpy
    from collectors.config import QueuelensConfig
    from collectors.types import Source

__all__ = ["DEMO_NOTICE", "add_source_arguments", "source_from_args"]


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """--demo | --prometheus URL, --config, --selector, --timeout, auth/TLS/header flags."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--demo", action="store_true",
                       help="use the embedded demo fleet (default when no Prometheus URL is set)")
    group.add_argument("--prometheus", metavar="URL",
                       help="Prometheus-compatible API base URL (env QUEUELENS_PROMETHEUS_URL)")
    parser.add_argument("--config", metavar="FILE", help="YAML config (connection and profile)")
    parser.add_argument("--selector", metavar="'{...}'",
                        help="extra label matchers for every series, e.g. '{namespace=\"x\"}'")
    parser.add_argument("--timeout", metavar="DURATION", type=parse_duration,
                        help="wall-clock limit of each Prometheus query, e.g. 30s (bare number "
                             "= seconds; default 30s)")
    parser.add_argument("--deadline", metavar="DURATION", type=parse_duration, default=None,
                        help="wall-clock limit of all of a command's queries together, e.g. "
                             "10m (bare number = seconds; default "
                             f"{DEFAULT_COMMAND_DEADLINE_S / 60:g}m); for serve, of "
                             "one page refresh's (default: --timeout)")
    parser.add_argument("--prometheus-token-file", metavar="FILE",
                        help="bearer token file (or env QUEUELENS_PROMETHEUS_TOKEN)")
    parser.add_argument("--prometheus-ca", metavar="FILE",
                        help="CA bundle to verify the server (env QUEUELENS_PROMETHEUS_CA)")
    parser.add_argument("--prometheus-header", metavar="NAME=VALUE", action="append",
                        default=[], help="extra HTTP header, e.g. X-Scope-OrgID=tenant (repeat)")


def source_from_args(
    args: argparse.Namespace,
    env: Mapping[str, str] | None = None,
    *,
    config: QueuelensConfig | None = None,
    one_shot: bool | None = None,
) -> Source:
    """The source the flags of :func:`add_source_arguments` ask for (``config``: the already
    loaded ``--config`` file, else it is read here). ``one_shot`` (default: every command but
    ``serve``, from ``args.command``): the reads share one deadline, ``--deadline``."""
    from collectors.config import load_config, parse_headers

    if config is None:
        config = load_config(getattr(args, "config", None))
    headers: dict[str, str] = {}
    for item in getattr(args, "prometheus_header", None) or []:
        headers.update(parse_headers(item, "--prometheus-header"))
    source = open_source(
        getattr(args, "prometheus", None),
        bool(getattr(args, "demo", False)),
        config,
        selector=getattr(args, "selector", None),
        token_file=getattr(args, "prometheus_token_file", None),
        ca_file=getattr(args, "prometheus_ca", None),
        headers=headers,
        timeout_s=getattr(args, "timeout", None),
        env=env,
        budget_s=(getattr(args, "deadline", None) or DEFAULT_COMMAND_DEADLINE_S)
        if (getattr(args, "command", None) != "serve" if one_shot is None else one_shot)
        else None,
    )
    if not getattr(args, "demo", False) and source.name == "demo":
        # the demo fleet's names look real: never read it without saying so
        print(DEMO_NOTICE, file=sys.stderr)
    return source


DEMO_NOTICE = ("queuelens: no Prometheus given (--prometheus URL, QUEUELENS_PROMETHEUS_URL "
               "or prometheus.url in --config): reading the built-in demo fleet; pass --demo "
               "to choose it")
"""Said on stderr when a command falls back to the demo without ``--demo``."""
