"""`queuelens serve`: run the dashboard.

    queuelens serve [--demo | --prometheus URL] [--host 127.0.0.1] [--port 8050]
                    [--config FILE] [--refresh 15s] [--at TIME]

No URL and no ``QUEUELENS_PROMETHEUS_URL`` → the embedded demo fleet. Binds 127.0.0.1 unless
told otherwise (the ``HOST`` environment variable is ignored on purpose). Debug mode is never
on. The app is served by gunicorn (one worker process, so one shared query cache, and
threads for concurrent requests) — the same server as the production command
``gunicorn 'dashboard.app:create_app()'``.

``--refresh`` is at least 1 s; with Prometheus and a profile that states its
``scrape_interval`` it is also never below the scrape interval: a shorter value is raised to
it, with a one-line note on stderr (reading faster than Prometheus scrapes shows the same
samples again). ``--at TIME`` shows the fleet at a fixed moment (RFC 3339 or unix seconds)
instead of now — e.g. to look back at an incident.

The address is bound *before* "serving …" is printed (:func:`bind_listener`), and gunicorn is
handed that socket (``fd://``): a port in use, a host that does not resolve or an address
this machine does not have is one line on stderr and exit code 2 — the same as
``queuelens exporter`` — not "serving …" followed by gunicorn's retry errors and exit 1; and
no other process can take the port between the check and gunicorn's start.

The server's limits (request size, export jobs) are the app's: :class:`dashboard.app.ServerLimits`
from ``QUEUELENS_*`` environment variables.

The simulator's compiled loops (the Retry storm page, the What-if page's simulation) are
compiled — or loaded from numba's disk cache — at start-up, in a background thread of the
gunicorn worker (:func:`warm_simulator`), so the first view that simulates does not pay the
one-time compile of every copy of the loops (about 12 s on a new machine;
:data:`models.simulate.COMPILE_ESTIMATE_S`).
Only when it does compile does it say so on stderr, at the start and at the end.
"""

from __future__ import annotations

import argparse
import ipaddress
import socket
import sys
import threading
import time
from typing import Any

from dashboard.cliutil import (
    CliError,
    add_settings_arguments,
    parse_duration,
    parse_time,
    settings_from_args,
    terminal_text,
    warn,
)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8050
DEFAULT_REFRESH_S = 15.0
MIN_REFRESH_S = 1.0
THREADS = 8
BACKLOG = 2048
"""Listen backlog (gunicorn's default)."""


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="run the dashboard in the browser (embedded demo by default)",
        description=(
            "Serve the queuelens dashboard. Without --prometheus (or $QUEUELENS_PROMETHEUS_URL) "
            "it shows the embedded demo fleet. Binds 127.0.0.1 by default; never runs in "
            "debug mode."
        ),
    )
    from dashboard.source_args import add_source_arguments

    add_source_arguments(parser)
    parser.add_argument("--host", default=DEFAULT_HOST,
                        help="address to bind (default: 127.0.0.1; 0.0.0.0 only behind an "
                             "authenticating proxy)")
    parser.add_argument("--port", type=_port, default=DEFAULT_PORT,
                        help="TCP port (default: 8050)")
    parser.add_argument("--refresh", type=parse_duration, default=DEFAULT_REFRESH_S,
                        metavar="DURATION",
                        help="live refresh period, e.g. 30s or 1m (bare number = seconds; "
                             "default: 15s, min 1s; never below the profile's scrape_interval)")
    parser.add_argument("--at", type=parse_time, default=None, metavar="TIME",
                        help="show the fleet at this fixed time (RFC 3339 or unix seconds) "
                             "instead of now")
    add_settings_arguments(parser)
    parser.set_defaults(func=handle)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 1-65535, got {text!r}")
    return value


def handle(args: argparse.Namespace) -> int:
    from dashboard.app import create_app

    if args.refresh < MIN_REFRESH_S:
        raise CliError(f"--refresh must be at least {MIN_REFRESH_S:g}s, got {args.refresh:g}s.")
    from collectors.config import load_config
    from dashboard.source_args import source_from_args

    config = load_config(args.config)
    settings = settings_from_args(args, config)
    source = source_from_args(args, config=config)
    server = create_app(source, refresh_s=args.refresh, config=config, at=args.at,
                        settings=settings, refresh_budget_s=args.deadline)
    run_server(server, args.host, args.port)
    return 0


def bind_listener(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (SO_REUSEADDR, as gunicorn binds), or a
    :class:`CliError` (exit 2) naming the address and the cause: the port is in use, the
    host does not resolve, the address is not this machine's, the port needs privileges."""
    shown = f"{_url_host(terminal_text(host))}:{port}"
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        cause = exc.strerror if isinstance(exc, socket.gaierror) else "not a valid host name"
        raise CliError(f"cannot listen on {shown}: {cause} (check --host)") from None
    family, kind, proto, _, address = infos[0]
    listener = socket.socket(family, kind, proto)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(BACKLOG)
    except OSError as exc:
        listener.close()
        raise CliError(f"cannot listen on {shown}: {exc.strerror or exc}") from None
    return listener


def run_server(app: Any, host: str, port: int) -> None:
    """Bind ``host:port`` (:func:`bind_listener`: a failure is a :class:`CliError`), say
    "serving …" on stderr, then serve the WSGI ``app`` with gunicorn (gthread worker, one
    process) on that socket until Ctrl-C."""
    from gunicorn.app.base import BaseApplication

    listener = bind_listener(host, port)
    if not _is_loopback(host):
        warn(f"binding {host} exposes the dashboard to the network without "
             "authentication; put it behind an authenticating proxy.")
    context = getattr(app, "extensions", {}).get("queuelens", {}).get("context")
    source = getattr(context, "source_name", "unknown")
    sys.stderr.write(
        f"queuelens: serving http://{_url_host(terminal_text(host))}:{port}/ "
        f"(source: {terminal_text(source)}; Ctrl-C to stop)\n"
    )
    sys.stderr.flush()
    listener.set_inheritable(True)
    # gunicorn adopts the descriptor (and closes it when done): detach it from this object so
    # it is not closed twice — a second close could hit an unrelated file reusing the number
    fd = listener.detach()
    options = {
        "bind": f"fd://{fd}",
        "workers": 1,
        "worker_class": "gthread",
        "threads": THREADS,
        "timeout": 120,
        "accesslog": None,
        "errorlog": "-",
        "loglevel": "warning",
        "post_worker_init": _warm_in_background,
    }

    class _Server(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            return app

    _Server().run()


def _warm_in_background(worker: Any) -> None:
    """gunicorn's ``post_worker_init`` hook: :func:`warm_simulator` in a daemon thread of the
    worker process, which serves the pages. (Not of the arbiter: the worker is forked from
    it, and a fork while the compile holds numba's compiler lock would leave the worker a lock
    that no thread of it ever releases.)"""
    threading.Thread(target=warm_simulator, name="queuelens-warm-up", daemon=True).start()


def warm_simulator() -> None:
    """Compile, or load from the disk cache, the simulator's loops
    (:func:`models.simulate.warm_up`); a page that simulates meanwhile waits for the same
    compile (numba compiles under one lock) rather than starting its own. One note on stderr
    when the compile starts and one when it ends — none when the loops load from the cache. A
    failure is one warning: each simulation then compiles what it needs itself."""
    from models.simulate import COMPILE_ESTIMATE_S, compile_notice, warm_up

    started = time.monotonic()
    compiled = False

    def compiling() -> None:
        nonlocal compiled
        compiled = True
        warn(f"compiling the simulator in the background (one time, ~{COMPILE_ESTIMATE_S} s)",
             "note")
        sys.stderr.flush()

    try:
        with compile_notice(compiling):
            warm_up()
    except Exception as exc:
        warn(f"could not compile the simulator ahead ({type(exc).__name__}: {exc}); "
             "the first simulation will")
        return
    if compiled:
        warn(f"the simulator is compiled ({time.monotonic() - started:.0f} s)", "note")
    sys.stderr.flush()


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _bind_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _url_host(host: str) -> str:
    return _bind_host(host)
