"""The Dash app factory.

    create_app(source=None, *, refresh_s=15, config=None, at=None) -> flask.Flask  (WSGI app)
    build_dash_app(source=None, *, refresh_s=15, config=None, at=None) -> dash.Dash

``gunicorn 'dashboard.app:create_app()'`` serves the dashboard in production. Without an
explicit source the app reads Prometheus at ``$QUEUELENS_PROMETHEUS_URL`` when that is set,
else the embedded demo fleet.

``refresh_s`` is the live refresh period. Reading Prometheus more often than it scrapes only
repeats the same samples, so when the source is Prometheus and its profile knows the scrape
interval (config ``profile.scrape_interval``), a shorter period is raised to the scrape
interval with a one-line note on stderr (:func:`effective_refresh_s`). ``at`` fixes the
evaluation time of every page (unix seconds; default: the wall clock) — see
:meth:`dashboard.context.AppContext.now`.

The "Export report" button runs as a Dash background callback (:mod:`dashboard.report`) on a
``DiskcacheManager`` whose store is a private temporary directory per app (mode 0700, removed
when the app is garbage-collected or the process that made it exits). Run one worker process
(the Dockerfile and ``queuelens serve`` do): a second worker would have its own store and
could not answer the polls for a job started in the first.

Security (see README): Dash debug mode and all dev tools are forced off here, whatever
``DASH_DEBUG`` / ``DASH_UI`` / ``FLASK_DEBUG`` say, so a failing callback returns a bare 500,
never a traceback or the Werkzeug console. Page text is rendered by Dash components (escaped);
no component uses ``dangerously_allow_html``.
"""

from __future__ import annotations

import os
import sys

import dash
import flask
from dash import Input, Output, dcc, html

from collectors.cache import CachedSource
from collectors.config import QueuelensConfig
from collectors.types import Source
from dashboard.context import AppContext
from dashboard.report import export_control, export_manager, register_export_callbacks
from models.settings import AnalysisSettings

PAGE_MODULES: tuple[str, ...] = ("overview", "queue", "whatif", "lab", "keys", "retries")
"""Modules in dashboard/pages/, each with ``register(app, ctx)``; registration order."""

_ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets")


def default_source() -> Source:
    """The source a bare ``create_app()`` uses: Prometheus from the environment, or the demo."""
    return open_dashboard_source(None)


def open_dashboard_source(
    prometheus_url: str | None, config: QueuelensConfig | None = None, *, demo: bool = False
) -> Source:
    """The embedded demo when ``demo``; else Prometheus at ``prometheus_url`` or, failing
    that, ``$QUEUELENS_PROMETHEUS_URL`` or the config file's URL; else the demo."""
    from collectors.connect import open_source

    return open_source(prometheus_url, demo, config)


def scrape_step_s(source: Source | None) -> float | None:
    """The scrape interval of a Prometheus source whose profile states it, else None (the
    demo, or a profile without ``scrape_interval``)."""
    from collectors.snapshot import PrometheusSource

    inner = source.source if isinstance(source, CachedSource) else source
    if isinstance(inner, PrometheusSource):
        step = inner.profile.scrape_interval_s
        return float(step) if step else None
    return None


def effective_refresh_s(refresh_s: float, source: Source | None) -> tuple[float, str | None]:
    """(refresh period to use, note or None): never below the source's scrape step."""
    step = scrape_step_s(source)
    if step is None or refresh_s >= step:
        return float(refresh_s), None
    return step, (f"queuelens: note: refresh {refresh_s:g}s is below the scrape interval "
                  f"{step:g}s of the profile; refreshing every {step:g}s instead.")


def build_dash_app(
    source: Source | None = None,
    *,
    refresh_s: float = 15.0,
    config: QueuelensConfig | None = None,
    at: float | None = None,
    settings: AnalysisSettings | None = None,
) -> dash.Dash:
    """Build the multi-page Dash app reading from ``source`` (see module docstring).
    ``settings``: the analysis settings of every page (default: the config file's
    ``analysis:`` section, else the defaults)."""
    import importlib
    import math

    if not refresh_s > 0:
        raise ValueError(f"refresh period must be positive, got {refresh_s!r}.")
    if at is not None and not math.isfinite(at):
        raise ValueError(f"evaluation time must be a finite unix time, got {at!r}.")
    if source is None:
        source = default_source() if config is None else open_dashboard_source(None, config)
    refresh_s, note = effective_refresh_s(refresh_s, source)
    if note:
        sys.stderr.write(note + "\n")
    if not isinstance(source, CachedSource):
        # one shared, time-bounded cache per app: ten tabs cost one set of queries
        source = CachedSource(source, ttl_s=float(refresh_s), align_s=min(5.0, refresh_s))
    if settings is None:
        settings = config.analysis if config is not None else AnalysisSettings()
    ctx = AppContext(source=source, refresh_s=float(refresh_s), config=config, at=at,
                     settings=settings)

    app = dash.Dash(
        "queuelens",
        use_pages=True,
        pages_folder="",  # pages are registered explicitly below, one app at a time
        assets_folder=_ASSETS,
        title="queuelens",
        update_title="",  # falsy: the tab title does not flash "Updating..."
        suppress_callback_exceptions=True,
        serve_locally=True,
        background_callback_manager=export_manager(),
    )
    # Dash reads DASH_DEBUG, DASH_UI, DASH_HOT_RELOAD... from the environment in its
    # constructor; pin every dev tool off so no environment can switch them on.
    app.enable_dev_tools(
        debug=False,
        dev_tools_ui=False,
        dev_tools_props_check=False,
        dev_tools_serve_dev_bundles=False,
        dev_tools_hot_reload=False,
        dev_tools_silence_routes_logging=False,
        dev_tools_prune_errors=True,
        dev_tools_validate_callbacks=False,
    )
    server: flask.Flask = app.server
    server.debug = False
    server.config.update(DEBUG=False, TESTING=False, PROPAGATE_EXCEPTIONS=False)
    server.extensions["queuelens"] = {"dash": app, "context": ctx}

    for name in PAGE_MODULES:
        module = importlib.import_module(f"dashboard.pages.{name}")
        module.register(app, ctx)

    app.layout = _shell(ctx)
    _register_shell_callbacks(app, ctx)
    register_export_callbacks(app)
    _register_health(server, ctx)
    return app


def create_app(
    source: Source | None = None,
    *,
    refresh_s: float = 15.0,
    config: QueuelensConfig | None = None,
    at: float | None = None,
    settings: AnalysisSettings | None = None,
) -> flask.Flask:
    """The WSGI app (the Dash app's Flask server), e.g. for gunicorn."""
    server: flask.Flask = build_dash_app(source, refresh_s=refresh_s, config=config,
                                         at=at, settings=settings).server
    return server


def dash_app_of(server: flask.Flask) -> dash.Dash:
    """The Dash app behind a server made by :func:`create_app`."""
    app: dash.Dash = server.extensions["queuelens"]["dash"]
    return app


def _shell(ctx: AppContext) -> html.Div:
    links = [
        dcc.Link("Fleet", href="/", id="nav-overview"),
        dcc.Link("What-if", href="/whatif", id="nav-whatif"),
        dcc.Link("Queue lab", href="/lab", id="nav-lab"),
        dcc.Link("Key trace", href="/keys", id="nav-keys"),
        dcc.Link("Retry storm", href="/retries", id="nav-retries"),
    ]
    return html.Div(
        [
            html.Nav(
                [html.Span("queuelens", className="ql-brand"), *links,
                 html.Span(f"source: {ctx.source_name}", id="nav-source",
                           className="ql-source"),
                 export_control(ctx)],
                className="ql-nav",
            ),
            html.Div(id="stale-banner", className="ql-banner", role="status"),
            html.Main(dash.page_container, className="ql-main"),
            dcc.Interval(id="refresh-interval", interval=int(ctx.refresh_s * 1000)),
        ]
    )


def stale_banner_text(source: Source | None) -> str:
    """'' when the data are fresh; else the stale-data sentence with the error in words.

    Reads :meth:`collectors.cache.CachedSource.health`; other sources have no staleness.
    """
    if not isinstance(source, CachedSource):
        return ""
    health = source.health()
    if health.ok:
        return ""
    when = "the last refresh" if health.stale_since is None else _clock(health.stale_since)
    error = health.last_error or "the data source did not answer"
    return (
        f"Stale data since {when}: showing the last good data. Reason: {error}. "
        "Retrying at every refresh."
    )


def _clock(unix_s: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(unix_s, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _register_shell_callbacks(app: dash.Dash, ctx: AppContext) -> None:
    @app.callback(
        Output("stale-banner", "children"),
        Input("refresh-interval", "n_intervals"),
    )
    def _banner(_n: int | None) -> str:
        return stale_banner_text(ctx.source)


def _register_health(server: flask.Flask, ctx: AppContext) -> None:
    def health() -> flask.Response:
        return flask.jsonify({"status": "ok", "source": ctx.source_name})

    server.add_url_rule("/health", "queuelens_health", health, methods=["GET"])
