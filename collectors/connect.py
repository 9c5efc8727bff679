"""Pick the data source: a Prometheus-compatible API, or the embedded demo.

``open_source(prometheus_url, demo, config)``: ``demo=True`` -> the embedded demo; otherwise a
URL from the argument, ``QUEUELENS_PROMETHEUS_URL`` or the config file -> a
:class:`~collectors.snapshot.PrometheusSource`; no URL anywhere -> the demo (the embedded default
a new user sees; its ``name`` is ``demo`` so nobody mistakes it for live data). An empty URL
given explicitly (``--prometheus ''``) is a :class:`ConfigError`, not the demo.

The command-line flags that choose it are the CLI's (:mod:`dashboard.source_args`). Every
query has its own wall-clock deadline (``--timeout``, default 30 s). A one-shot command
(every command but ``serve``) also gets a source whose reads share one deadline, ``--deadline``
(default :data:`DEFAULT_COMMAND_DEADLINE_S`): its snapshot and its range read together end
within that budget, so a Prometheus that stops answering between them ends the command at the
budget (issue 12). It is separate from ``--timeout`` because a command over a large fleet
sends hundreds of queries (``advise`` at 10,000 queues: 545, about two minutes); the dashboard
sets its budget per page refresh instead (:meth:`collectors.cache.CachedSource.deadline`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from collectors.errors import ConfigError

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


__all__ = ["DEFAULT_COMMAND_DEADLINE_S", "close_source", "open_source"]


def close_source(source: object) -> None:
    """Close a source's connections if it has any (the Prometheus source does, the demo not):
    what every command does once its reads are done."""
    close = getattr(source, "close", None)
    if callable(close):
        close()
