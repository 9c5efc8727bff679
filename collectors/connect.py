"""Pick the data source: a Prometheus-compatible API, or the embedded demo.

``open_source(prometheus_url, demo, config)``: ``demo=True`` -> the embedded demo; otherwise a
URL from the argument, ``QUEUELENS_PROMETHEUS_URL`` or the config file -> a
:class:`~collectors.snapshot.PrometheusSource`; no URL anywhere -> the demo (the embedded default
a new user sees; its ``name`` is ``demo`` so nobody mistakes it for live data). An empty URL
given explicitly (``--prometheus ''``) is a :class:`ConfigError`, not the demo.

:func:`add_source_arguments` / :func:`source_from_args` give every command the same flags.
Every query has its own wall-clock deadline (``--timeout``, default 30 s). A one-shot command
(every command but ``serve``) also gets a source whose reads share one deadline, ``--deadline``
(default :data:`DEFAULT_COMMAND_DEADLINE_S`): its snapshot and its range read together end
within that budget, so a Prometheus that stops answering between them ends the command at the
budget (issue 12). It is separate from ``--timeout`` because a command over a large fleet
sends hundreds of queries (``advise`` at 10,000 queues: 545, about two minutes); the dashboard
sets its budget per page refresh instead (:meth:`collectors.cache.CachedSource.deadline`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from collectors.errors import ConfigError
from collectors.timeparse import parse_duration

if TYPE_CHECKING:  # imported where used, so `queuelens --help` loads neither yaml nor numpy
    from collectors.config import QueuelensConfig
    from collectors.types import Source


DEFAULT_COMMAND_DEADLINE_S = 600.0
"""All of one command's queries end within 10 minutes unless ``--deadline`` says otherwise:
five times the longest measured command (``advise`` at 10,000 queues, about 2 minutes), so a
fleet that size is not cut off, while a Prometheus that answers each query just under its
timeout cannot keep a command running for hours."""


def open_source(
    prometheus_url: str | None,
    demo: bool,
    config: QueuelensConfig | None = None,
    *,
    selector: str | None = None,
    token_file: str | None = None,
    ca_file: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
    env: Mapping[str, str] | None = None,
    demo_scenario: str = "all",
    budget_s: float | None = None,
) -> Source:
    """Build the source. Raises ConfigError for inconsistent or invalid settings.
    ``budget_s``: every read of the source shares one deadline of that many seconds (a
    command's reads, ``--deadline``), counted from the first read; None: each query only."""
    from collectors.config import QueuelensConfig, connection_settings
    from collectors.profile import parse_selector

    config = config or QueuelensConfig()
    if demo and prometheus_url is not None:
        raise ConfigError("choose either --demo or --prometheus URL, not both")
    settings = None
    if not demo:
        settings = connection_settings(
            config, url=prometheus_url, token_file=token_file, ca_file=ca_file,
            headers=headers, timeout_s=timeout_s, env=env,
        )
    if settings is None:
        from collectors.demo import DemoSource  # created by the demo module's owner

        return DemoSource(scenario=demo_scenario)
    from collectors.prom_client import PrometheusClient
    from collectors.snapshot import PrometheusSource

    profile = config.profile
    if selector:
        profile = profile.with_selector(parse_selector(selector))
    return PrometheusSource(PrometheusClient(settings), profile, budget_s=budget_s,
                            budget_what="this command", budget_hint="--deadline")


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
    parser.add_argument("--timeout", metavar="DURATION", type=_duration,
                        help="wall-clock limit of each Prometheus query, e.g. 30s (bare number "
                             "= seconds; default 30s)")
    parser.add_argument("--deadline", metavar="DURATION", type=_duration, default=None,
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


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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
    if not getattr(args, "demo", False) and type(source).__name__ == "DemoSource":
        # the demo fleet's names look real: never read it without saying so
        print(DEMO_NOTICE, file=sys.stderr)
    return source


DEMO_NOTICE = ("queuelens: no Prometheus given (--prometheus URL, QUEUELENS_PROMETHEUS_URL "
               "or prometheus.url in --config): reading the built-in demo fleet; pass --demo "
               "to choose it")
"""Said on stderr when a command falls back to the demo without ``--demo``."""


__all__: Sequence[Any] = ["add_source_arguments", "open_source", "source_from_args"]


def close_source(source: object) -> None:
    """Close a source's connections if it has any (the Prometheus source does, the demo not):
    what every command does once its reads are done."""
    close = getattr(source, "close", None)
    if callable(close):
        close()
