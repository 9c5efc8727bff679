"""The Dash app factory.

    create_app(source=None, *, refresh_s=15, config=None, at=None, settings=None,
               limits=None, refresh_budget_s=None, allowed_hosts=None) -> flask.Flask
    build_dash_app(...same...) -> dash.Dash

``queuelens serve`` (:mod:`dashboard.commands.serve`: waitress, one process, threads) serves
the dashboard in production, the Dockerfile's and the Deployment's command. Without an
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
when the app is garbage-collected or the process that made it exits). Run one process
(``queuelens serve`` does): a second worker would have its own store and
could not answer the polls for a job started in the first.

Limits (:class:`ServerLimits`; ``limits=`` or, by default, the ``QUEUELENS_*`` environment
variables of :meth:`ServerLimits.from_env`): a request body over ``max_request_bytes``
(Flask's ``MAX_CONTENT_LENGTH``) is refused with 413 and one sentence — before it is read
when it states its length, once the limit is read when it is chunked — so a 100 MB POST costs
nothing; at most ``export_jobs`` report exports run at a time, each for at
most ``export_timeout_s``, and one nobody polls for ``export_abandon_s`` is cancelled
(:class:`dashboard.report.ExportJobs`).

Probes: ``/livez`` is the liveness check — ``{"status": "ok"}`` whenever this process answers,
looking at nothing else (no lock, no source). ``/readyz`` (and ``/health``, its older name) is
HTTP 200 with ``"status": "ok"`` too whenever this server answers, whatever the data source
does — restarting the dashboard, or taking it out of the Service, does not mend Prometheus, and
the pages show the last good data under a banner. ``queuelens serve`` answers the three on
worker threads of their own (:data:`PROBE_PATHS`), so callbacks waiting on a hung Prometheus
never delay them. The body of ``/readyz`` also tells how the source is doing, from what the
pages last read through the shared cache (it never queries Prometheus itself, so it answers at
once even when Prometheus hangs): ``source_state`` ``ok`` · ``stale`` (the last read failed;
the pages show the last good data) · ``unreachable`` (reads fail and nothing was ever read) ·
``error`` (the source answered but refused a query) · ``unknown`` (nothing has been read yet),
with ``last_error`` (the collector's sentence, which never carries credentials),
``stale_since`` and ``last_success_at``. Use ``source_state`` for readiness or alerting, not
for restarts.

``/metrics`` is each queue's capacity plan (``advise``'s) and the plans' refresh health as
Prometheus series (:mod:`dashboard.plan_metrics`); a scrape waits a bounded time for a
refresh in progress and never reads the source itself (:mod:`dashboard.plan_refresh`).

Security (see README): Dash debug mode and all dev tools are forced off here, whatever
``DASH_DEBUG`` / ``DASH_UI`` / ``FLASK_DEBUG`` say, so a failing callback returns a bare 500,
never a traceback or the Werkzeug console. Page text is rendered by Dash components (escaped);
no component uses ``dangerously_allow_html``.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import dash
import flask
from dash import Input, Output, dcc, html

from collectors.cache import CachedSource
from collectors.config import QueuelensConfig
from collectors.types import Source
from dashboard.context import MAX_REFRESH_S, AppContext
from dashboard.report import (
    EXPORT_ABANDON_S,
    EXPORT_MAX_JOBS,
    EXPORT_TIMEOUT_S,
    export_control,
    export_manager,
    register_export_callbacks,
)
from models.settings import AnalysisSettings

PAGE_MODULES: tuple[str, ...] = ("overview", "queue", "whatif", "lab", "keys", "retries",
                                 "doctor", "not_found")
"""Modules in dashboard/pages/, each with ``register(app, ctx)``; registration order."""

_ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets")

MAX_REQUEST_BYTES = 4 * 1024 * 1024
"""Default largest request body (4 MiB). The largest legitimate one is a key-trace page
callback: its store holds every step of a trace within the page's limits (5,000 characters,
50,000 key places) — about 1 MB for 223 distinct keys added one by one
(tests/dashboard/test_server_limits.py builds it); every other callback sends well under
10 kB. The headroom keeps a raised page limit from needing a raised request limit."""

_BYTE_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(b|kb|kib|k|mb|mib|m|gb|gib|g)?\s*", re.IGNORECASE)
_BYTE_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1000, "kib": 1024, "m": 1024 ** 2,
               "mb": 1000 ** 2, "mib": 1024 ** 2, "g": 1024 ** 3, "gb": 1000 ** 3,
               "gib": 1024 ** 3}


def parse_byte_size(text: str) -> int:
    """'4194304', '4MiB', '512k', '1.5MB' -> bytes (k/M/G without B are binary)."""
    m = _BYTE_SIZE.fullmatch(text)
    if m is None:
        raise ValueError(f"not a size: {text!r} (use e.g. 4MiB, 512KiB or a number of bytes)")
    return int(float(m.group(1)) * _BYTE_UNITS[(m.group(2) or "").lower()])


CONNECTION_LIMIT = 1000
"""Default most open connections (``QUEUELENS_CONNECTION_LIMIT``). Beyond it the server stops
accepting until some close (new ones wait in the listen backlog). A browser tab holds a few
connections; 1,000 leaves room for 200 tabs and an attacker's idle sockets while staying
under the usual 1,024-descriptor limit once ``serve`` raises it (it asks for the limit plus
:data:`dashboard.commands.serve.FD_HEADROOM`)."""
MAX_CONNECTION_LIMIT = 65536
IDLE_TIMEOUT_S = 60.0
"""Default seconds a connection may send nothing, between requests or before its first one,
before it is closed (``QUEUELENS_IDLE_TIMEOUT``): a browser reuses a kept-alive connection
within the refresh period (15 s by default) and reopens one at no cost after."""
REQUEST_READ_TIMEOUT_S = 30.0
"""Default seconds one request may take to arrive, head and body
(``QUEUELENS_REQUEST_READ_TIMEOUT``): the largest legitimate one (about 1 MB,
:data:`MAX_REQUEST_BYTES`) needs 35 kB/s for it; a client that drips its head or body is
closed at the deadline, and never holds a worker thread meanwhile (requests are buffered
before a thread sees them: :func:`dashboard.commands.serve.run_server`)."""
MAX_TIMEOUT_S = 3600.0
"""The largest accepted idle or read timeout: a longer one is no longer a deadline."""


@dataclass(frozen=True)
class ServerLimits:
    """What one request, one connection or one export may cost the dashboard server (see
    module doc).

    Environment (:meth:`from_env`): ``QUEUELENS_MAX_REQUEST_SIZE`` (default 4MiB),
    ``QUEUELENS_EXPORT_JOBS`` (2), ``QUEUELENS_EXPORT_TIMEOUT`` (10m),
    ``QUEUELENS_EXPORT_ABANDON`` (2m), ``QUEUELENS_CONNECTION_LIMIT`` (1000),
    ``QUEUELENS_IDLE_TIMEOUT`` (60s), ``QUEUELENS_REQUEST_READ_TIMEOUT`` (30s)."""

    max_request_bytes: int = MAX_REQUEST_BYTES
    export_jobs: int = EXPORT_MAX_JOBS
    export_timeout_s: float = EXPORT_TIMEOUT_S
    export_abandon_s: float = EXPORT_ABANDON_S
    connection_limit: int = CONNECTION_LIMIT
    idle_timeout_s: float = IDLE_TIMEOUT_S
    request_read_timeout_s: float = REQUEST_READ_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.max_request_bytes < 64 * 1024:
            raise ValueError(f"the request size limit must be at least 64 KiB (the dashboard's "
                             f"own callbacks need it), got {self.max_request_bytes} bytes.")
        if self.export_jobs < 1:
            raise ValueError(f"at least 1 export job must be allowed, got {self.export_jobs}.")
        for name, value in (("export timeout", self.export_timeout_s),
                            ("export abandon time", self.export_abandon_s)):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"the {name} must be a positive duration, got {value!r}.")
        from dashboard.report.export import MAX_EXPORT_TIMEOUT_S

        if self.export_timeout_s > MAX_EXPORT_TIMEOUT_S:  # QUEUELENS_EXPORT_TIMEOUT
            raise ValueError(f"the export timeout (QUEUELENS_EXPORT_TIMEOUT) must be at most "
                             f"1d, got {self.export_timeout_s:g} s.")
        if not 16 <= self.connection_limit <= MAX_CONNECTION_LIMIT:
            raise ValueError(f"the connection limit must be 16-{MAX_CONNECTION_LIMIT}, "
                             f"got {self.connection_limit}.")
        for name, value in (("idle timeout", self.idle_timeout_s),
                            ("request read timeout", self.request_read_timeout_s)):
            if not (math.isfinite(value) and 1 <= value <= MAX_TIMEOUT_S):
                raise ValueError(f"the {name} must be 1s-{MAX_TIMEOUT_S:g}s, got {value!r}.")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ServerLimits:
        """The limits from ``QUEUELENS_*`` variables (unset or empty: the default); a bad
        value is a :class:`collectors.errors.ConfigError` naming the variable."""
        from collectors.errors import ConfigError
        from collectors.timeparse import parse_duration

        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        parsers: tuple[tuple[str, str, Any], ...] = (
            ("QUEUELENS_MAX_REQUEST_SIZE", "max_request_bytes", parse_byte_size),
            ("QUEUELENS_EXPORT_JOBS", "export_jobs", int),
            ("QUEUELENS_EXPORT_TIMEOUT", "export_timeout_s", parse_duration),
            ("QUEUELENS_EXPORT_ABANDON", "export_abandon_s", parse_duration),
            ("QUEUELENS_CONNECTION_LIMIT", "connection_limit", int),
            ("QUEUELENS_IDLE_TIMEOUT", "idle_timeout_s", parse_duration),
            ("QUEUELENS_REQUEST_READ_TIMEOUT", "request_read_timeout_s", parse_duration),
        )
        for var, field_name, parse in parsers:
            text = env.get(var, "").strip()
            if text:
                try:
                    values[field_name] = parse(text)
                except ValueError as exc:
                    raise ConfigError(f"{var}: {exc}") from None
        try:
            return cls(**values)
        except ValueError as exc:
            raise ConfigError(f"server limits from the environment: {exc}") from None


def size_text(n_bytes: int) -> str:
    """4194304 -> '4 MiB', 1500 -> '1500 bytes'."""
    for unit, size in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if n_bytes >= size and n_bytes % size == 0:
            return f"{n_bytes // size} {unit}"
    return f"{n_bytes} bytes"


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
    """(refresh period to use, note or None): never below the source's scrape step, never
above :data:`dashboard.context.MAX_REFRESH_S`."""
    step = scrape_step_s(source)
    if step is None or refresh_s >= step:
        return float(refresh_s), None
    if step > MAX_REFRESH_S:  # e.g. scrape_interval: 30d — no browser timer runs that long
        return MAX_REFRESH_S, (
            f"queuelens: note: refresh {refresh_s:g}s is below the scrape interval {step:g}s "
            f"of the profile; refreshing every {MAX_REFRESH_S:g}s instead (at most "
            f"{MAX_REFRESH_S:g}s, the longest a browser timer is trusted with).")
    return step, (f"queuelens: note: refresh {refresh_s:g}s is below the scrape interval "
                  f"{step:g}s of the profile; refreshing every {step:g}s instead.")


def build_dash_app(
    source: Source | None = None,
    *,
    refresh_s: float = 15.0,
    config: QueuelensConfig | None = None,
    at: float | None = None,
    settings: AnalysisSettings | None = None,
    limits: ServerLimits | None = None,
    refresh_budget_s: float | None = None,
    allowed_hosts: Collection[str] | None = None,
) -> dash.Dash:
    """Build the multi-page Dash app reading from ``source`` (see module docstring).
    ``settings``: the analysis settings of every page (default: the config file's
    ``analysis:`` section, else the defaults). ``limits``: request size and export jobs
    (default: :meth:`ServerLimits.from_env`). ``refresh_budget_s``: the wall-clock budget of
    one page refresh's reads (default: the source's query timeout, the banner's figure).
    ``allowed_hosts``: the host names (or addresses) a request's ``Host`` may name, else 400
    (:func:`_register_host_check`); None: any (``queuelens serve`` passes the loopback
    names when bound to loopback)."""
    import importlib
    import math

    if not 0 < refresh_s <= MAX_REFRESH_S:
        raise ValueError(f"refresh period must be positive and at most {MAX_REFRESH_S:g} s "
                         f"(a browser timer overflows beyond 24.8 days), got {refresh_s!r}.")
    if at is not None and not math.isfinite(at):
        raise ValueError(f"evaluation time must be a finite unix time, got {at!r}.")
    if limits is None:
        limits = ServerLimits.from_env()
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
                     settings=settings, refresh_budget_s=refresh_budget_s)

    app = dash.Dash(
        "queuelens",
        use_pages=True,
        pages_folder="",  # pages are registered explicitly below, one app at a time
        assets_folder=_ASSETS,
        title="queuelens",
        update_title="",  # falsy: the tab title does not flash "Updating..."
        suppress_callback_exceptions=True,
        serve_locally=True,
        background_callback_manager=export_manager(
            max_jobs=limits.export_jobs, timeout_s=limits.export_timeout_s,
            abandon_s=limits.export_abandon_s),
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
    server.config.update(DEBUG=False, TESTING=False, PROPAGATE_EXCEPTIONS=False,
                         MAX_CONTENT_LENGTH=limits.max_request_bytes)
    server.extensions["queuelens"] = {"dash": app, "context": ctx, "limits": limits}
    _register_host_check(server, allowed_hosts)
    _register_too_large(server, limits)
    _register_security_headers(server)
    _register_callback_check(server, app)

    for name in PAGE_MODULES:
        module = importlib.import_module(f"dashboard.pages.{name}")
        module.register(app, ctx)

    app.layout = _shell(ctx)
    _register_shell_callbacks(app, ctx)
    register_export_callbacks(app)
    _register_health(server, ctx)
    _register_metrics(server, ctx)
    return app


def create_app(
    source: Source | None = None,
    *,
    refresh_s: float = 15.0,
    config: QueuelensConfig | None = None,
    at: float | None = None,
    settings: AnalysisSettings | None = None,
    limits: ServerLimits | None = None,
    refresh_budget_s: float | None = None,
    allowed_hosts: Collection[str] | None = None,
) -> flask.Flask:
    """The WSGI app (the Dash app's Flask server), e.g. for ``queuelens serve``."""
    server: flask.Flask = build_dash_app(source, refresh_s=refresh_s, config=config,
                                         at=at, settings=settings, limits=limits,
                                         refresh_budget_s=refresh_budget_s,
                                         allowed_hosts=allowed_hosts).server
    return server


def dash_app_of(server: flask.Flask) -> dash.Dash:
    """The Dash app behind a server made by :func:`create_app`."""
    app: dash.Dash = server.extensions["queuelens"]["dash"]
    return app


def _theme_toggle() -> html.Div:
    """Auto / Light / Dark: assets/theme.js applies and remembers the choice (no callback)."""
    tips = {"auto": "Follow the browser's light/dark preference", "light": "Light theme",
            "dark": "Dark theme"}
    buttons = []
    for choice, tip in tips.items():
        choice_attr: dict[str, Any] = {"data-theme-choice": choice}
        buttons.append(html.Button(choice.capitalize(), id=f"theme-{choice}", type="button",
                                   title=tip, **choice_attr))
    label: dict[str, Any] = {"aria-label": "Colour theme"}
    return html.Div(buttons, className="ql-theme", role="group", **label)


def _shell(ctx: AppContext) -> html.Div:
    links = [
        dcc.Link("Fleet", href="/", id="nav-overview"),
        dcc.Link("What-if", href="/whatif", id="nav-whatif"),
        dcc.Link("Queue lab", href="/lab", id="nav-lab"),
        dcc.Link("Key trace", href="/keys", id="nav-keys"),
        dcc.Link("Retry storm", href="/retries", id="nav-retries"),
        dcc.Link("Doctor", href="/doctor", id="nav-doctor"),
    ]
    return html.Div(
        [
            html.Nav(
                [html.Span("queuelens", className="ql-brand"), *links,
                 html.Span(f"source: {ctx.source_name}", id="nav-source",
                           className="ql-source"),
                 _theme_toggle(), export_control(ctx)],
                className="ql-nav",
            ),
            html.Div(id="stale-banner", className="ql-banner", role="status"),
            # the banner looks again soon after the page opens: the page's first read may
            # fail after the banner's first look, and it is the one place that says so
            dcc.Interval(id="stale-banner-soon", interval=1500, max_intervals=4),
            html.Main(dash.page_container, className="ql-main"),
            dcc.Interval(id="refresh-interval", interval=int(ctx.refresh_s * 1000)),
        ]
    )


def stale_banner_text(source: Source | None) -> str:
    """'' when the data are fresh; else the stale-data sentence with the error in words —
    or, when nothing was ever read, that no data could be read yet (there is no "last good
    data" to show).

    Reads :meth:`collectors.cache.CachedSource.health`; other sources have no staleness.
    """
    if not isinstance(source, CachedSource):
        return ""
    health = source.health()
    if health.ok:
        return ""
    error = _public_error(health.last_error) or "the data source did not answer"
    if getattr(health, "last_success_at", None) is None:
        return f"No data could be read yet: {error}. Retrying at every refresh."
    when = "the last refresh" if health.stale_since is None else _clock(health.stale_since)
    return (
        f"Stale data since {when}: showing the last good data. Reason: {error}. "
        "Retrying at every refresh."
    )


_USERINFO = re.compile(r"(?<=://)[^/\s@]*@")
MAX_ERROR_CHARS = 500
"""The longest error text /health and the banner show (a collector's sentence is short;
this only bounds a pathological one)."""


def _public_error(error: str | None) -> str | None:
    """A collector error for the page and /health: collector messages carry no credentials
    by contract; as a second line of defence any ``user:pass@`` left in a URL is removed,
    and the text is bounded."""
    if not error:
        return None
    from collectors.errors import redact  # and any configured secret a server echoed

    text = _USERINFO.sub("", redact(error))
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS - 1] + "…"


def source_status(source: Source | None) -> dict[str, Any]:
    """How the data source is doing, for /health (see the module doc): ``source_state``,
    ``last_error``, ``stale_since``, ``last_success_at`` — from the shared cache's record of
    the pages' reads; nothing is queried here."""
    if not isinstance(source, CachedSource):
        state = "ok" if source is not None else "unknown"
        return {"source_state": state, "last_error": None, "stale_since": None,
                "last_success_at": None}
    health = source.health()
    last_success = getattr(health, "last_success_at", None)
    stale_since = getattr(health, "stale_since", None)
    if health.ok:
        state = "ok" if last_success is not None else "unknown"
    elif stale_since is None:
        state = "error"  # the source answered but refused (bad query, bad config)
    else:
        state = "stale" if last_success is not None else "unreachable"
    return {"source_state": state, "last_error": _public_error(health.last_error),
            "stale_since": stale_since, "last_success_at": last_success}


def _clock(unix_s: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(unix_s, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _register_shell_callbacks(app: dash.Dash, ctx: AppContext) -> None:
    @app.callback(
        Output("stale-banner", "children"),
        Input("refresh-interval", "n_intervals"),
        Input("stale-banner-soon", "n_intervals"),
    )
    def _banner(_n: int | None, _soon: int | None) -> str:
        return stale_banner_text(ctx.source)


PROBE_PATHS = frozenset({"/livez", "/readyz", "/health"})
"""The probe endpoints. ``queuelens serve`` runs them on threads of their own
(:func:`dashboard.commands.serve.make_server`), so page callbacks waiting on a hung
Prometheus, however many, never keep a probe waiting (issue 23 item 5)."""


def _register_health(server: flask.Flask, ctx: AppContext) -> None:
    def livez() -> flask.Response:
        # liveness: this process answers; nothing else is looked at (no lock, no source)
        return flask.jsonify({"status": "ok"})

    def health() -> flask.Response:
        # readiness: 200 and "ok" while this server answers; the source's state is data
        return flask.jsonify({"status": "ok", "source": ctx.source_name,
                              **source_status(ctx.source)})

    server.add_url_rule("/livez", "queuelens_livez", livez, methods=["GET"])
    server.add_url_rule("/readyz", "queuelens_readyz", health, methods=["GET"])
    server.add_url_rule("/health", "queuelens_health", health, methods=["GET"])


def _register_metrics(server: flask.Flask, ctx: AppContext) -> None:
    """``GET /metrics``: each queue's plan and the refresh health
    (:mod:`dashboard.plan_metrics`)."""
    from dashboard.plan_metrics import metrics_view
    from dashboard.plan_refresh import PlanRefresher

    refresher = PlanRefresher(ctx)
    server.extensions["queuelens"]["plans"] = refresher
    server.add_url_rule("/metrics", "queuelens_metrics",
                        metrics_view(refresher, lambda: source_status(ctx.source)),
                        methods=["GET"])


SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
}
"""Sent with every answer: no page may frame the dashboard (clickjacking; a rebound name
reading it through a frame), and no answer is sniffed into another type."""


def host_name(header: str) -> str | None:
    """The host name of a ``Host`` header, lower-case, without port or trailing dot
    ('LocalHost.:8050' -> 'localhost', '[::1]:8050' -> '::1'); None when it is not one."""
    text = header.strip().lower()
    if text.startswith("["):
        name, sep, rest = text[1:].partition("]")
        if not sep or (rest and not re.fullmatch(r":\d{1,5}", rest)):
            return None
        return name or None
    name, _, port = text.partition(":")
    if port and not port.isdigit():
        return None
    name = name.rstrip(".")
    return name if name and re.fullmatch(r"[a-z0-9._-]+", name) else None


def _register_host_check(server: flask.Flask, allowed: Collection[str] | None) -> None:
    """400 with one sentence for a request whose ``Host`` is not one of ``allowed``: a page
    on another name rebound to this address (DNS rebinding) cannot read the dashboard.
    ``/livez`` answers any host (it says only "ok"; probes come by pod address)."""
    if allowed is None:
        return
    names = frozenset(n.strip().lower().strip("[]").rstrip(".") for n in allowed)

    def check_host() -> flask.Response | None:
        request = flask.request
        if request.path == "/livez":
            return None
        if host_name(request.headers.get("Host", "")) in names:
            return None
        return flask.Response("This dashboard does not answer for that host name (queuelens "
                              "serve --allowed-hosts lists the names it answers for).\n",
                              status=400, mimetype="text/plain")

    server.before_request(check_host)


def _register_callback_check(server: flask.Flask, app: dash.Dash) -> None:
    """A forged callback request is answered 400 with one sentence, not a bare 500 with a
    traceback in the log (issue 23, Low; found by tests/fuzz): a body that is not a callback
    request, an output whose callback runs in the browser (Dash's server has no function for
    it and raises KeyError), and a page address (Dash's own ``_pages_location`` inputs, which
    Dash's router takes for text) that is not text. The pages' callbacks check their own
    values."""

    def refuse(sentence: str) -> flask.Response:
        return flask.Response(sentence + "\n", status=400, mimetype="text/plain")

    def check_callback() -> flask.Response | None:
        request = flask.request
        if request.method != "POST" or not request.path.endswith("/_dash-update-component"):
            return None
        body = request.get_json(silent=True)
        if not isinstance(body, dict) or not isinstance(body.get("output"), str):
            return refuse("This is not a dashboard callback request.")
        entry = app.callback_map.get(body["output"])
        if entry is None or "callback" not in entry:
            return refuse("This dashboard has no server callback for that output.")
        prefix = str(app.config.requests_pathname_prefix)
        for item in body.get("inputs") or []:
            if not isinstance(item, dict) or item.get("id") != "_pages_location":
                continue
            value = item.get("value")
            if not isinstance(value, str) or (item.get("property") == "pathname"
                                              and not value.startswith(prefix)):
                return refuse("The page address is not text under this dashboard's path.")
        return None

    server.before_request(check_callback)


def _register_security_headers(server: flask.Flask) -> None:
    def add_headers(response: flask.Response) -> flask.Response:
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    server.after_request(add_headers)


def _register_too_large(server: flask.Flask, limits: ServerLimits) -> None:
    """413 with one sentence (not Werkzeug's HTML page) for a body over the limit."""
    sentence = (f"The request is larger than this server accepts "
                f"({size_text(limits.max_request_bytes)}; QUEUELENS_MAX_REQUEST_SIZE).\n")

    def too_large(_error: Exception) -> flask.Response:
        return flask.Response(sentence, status=413, mimetype="text/plain")

    def refuse_unsized_body() -> None:
        # A chunked body has no Content-Length to check up front; Werkzeug then reads at
        # most the limit and hands the callback a truncated body (a bare 400). Read it here,
        # bounded, and answer 413 when it reaches the limit.
        request = flask.request
        unsized = (request.content_length is None
                   and request.method in ("POST", "PUT", "PATCH")
                   and request.environ.get("wsgi.input_terminated"))
        if unsized and len(request.get_data(cache=True)) >= limits.max_request_bytes:
            flask.abort(413)

    server.register_error_handler(413, too_large)
    server.before_request(refuse_unsized_body)
