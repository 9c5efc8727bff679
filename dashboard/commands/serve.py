"""`queuelens serve`: run the dashboard.

    queuelens serve [--demo | --prometheus URL] [--host 127.0.0.1] [--port 8050]
                    [--config FILE] [--refresh 15s] [--at TIME]

No URL and no ``QUEUELENS_PROMETHEUS_URL`` → the embedded demo fleet. Binds 127.0.0.1 unless
told otherwise (the ``HOST`` environment variable is ignored on purpose). Debug mode is never
on. The app is served by waitress in this one process (so one shared query cache), with
:data:`THREADS` worker threads for concurrent requests — the production command too (the
Dockerfile and the Kubernetes Deployment run ``queuelens serve``).

Why waitress (issue 23 item 2): its event loop reads each request, head and body, before a
worker thread sees it, so a client that sends a header line every few seconds, drips its body
or connects and says nothing holds a socket, not a thread; gunicorn's threaded worker gave each
such client a thread, and 8 of them took the dashboard down. Deadlines close them:
``QUEUELENS_IDLE_TIMEOUT`` of silence, ``QUEUELENS_REQUEST_READ_TIMEOUT`` for one request to
arrive, at most ``QUEUELENS_CONNECTION_LIMIT`` connections (:class:`dashboard.app.ServerLimits`,
docs/operations.md "Limits").

``--refresh`` is at least 1 s and at most :data:`dashboard.context.MAX_REFRESH_S` (1 day: a
browser timer longer than 2^31−1 ms fires at once, over and over); with Prometheus and a
profile that states its ``scrape_interval`` it is also never below the scrape interval: a
shorter value is raised to it, with a one-line note on stderr (reading faster than Prometheus
scrapes shows the same samples again). ``--at TIME`` shows the fleet at a fixed moment (RFC
3339 or unix seconds) instead of now — e.g. to look back at an incident.

The address is bound *before* "serving …" is printed (:func:`bind_listener`), and the server
is handed that socket: a port in use, a host that does not resolve or an address this machine
does not have is one line on stderr and exit code 2 — the same as ``queuelens exporter`` —
and no other process can take the port between the check and the server's start. Ctrl-C and
SIGTERM stop it cleanly (exit 0).

The server's limits (request size, connections, deadlines, export jobs) are the app's:
:class:`dashboard.app.ServerLimits` from ``QUEUELENS_*`` environment variables.

The simulator's compiled loops (the Retry storm page, the What-if page's simulation) are
compiled — or loaded from numba's disk cache — at start-up, in a background thread
(:func:`warm_simulator`), so the first view that simulates does not pay the
one-time compile of every copy of the loops (about 12 s on a new machine;
:data:`models.simulate.COMPILE_ESTIMATE_S`).
Only when it does compile does it say so on stderr, at the start and at the end.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import re
import signal
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from dashboard.cliutil import (
    CliError,
    add_settings_arguments,
    parse_duration,
    parse_time,
    settings_from_args,
    terminal_text,
    warn,
)

if TYPE_CHECKING:
    from dashboard.app import ServerLimits

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8050
DEFAULT_REFRESH_S = 15.0
MIN_REFRESH_S = 1.0
THREADS = 8
"""Worker threads: the requests served at once (the event loop reads the rest meanwhile)."""
PROBE_THREADS = 2
"""Threads that serve only the probes (``/livez``, ``/readyz``, ``/health``:
:data:`dashboard.app.PROBE_PATHS`); they answer from memory in well under a millisecond."""
BACKLOG = 2048
"""Listen backlog: connections the kernel queues while the connection limit is reached."""
FD_HEADROOM = 128
"""Descriptors beyond the connection limit: the listener, waitress's trigger pipe, log and
cache files, export jobs' pipes, Prometheus connections."""
CLEANUP_INTERVAL_S = 2
"""How often (seconds) idle connections and overdue requests are looked for: the idle and
read deadlines hold to within this."""
MAX_REQUEST_HEAD_BYTES = 64 * 1024
"""Largest request line + headers (waitress answers 431 beyond): the dashboard sends no
cookies and its longest URL is a queue page's (a label value) well under this."""


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
                             "default: 15s, min 1s, max 1d; never below the profile's "
                             "scrape_interval)")
    parser.add_argument("--allowed-hosts", type=_host_list, default=None, metavar="NAMES",
                        help="comma-separated host names or addresses the dashboard answers "
                             "for (the Host header; others get 400), or * for any (default: "
                             "the loopback names when bound to loopback, else any)")
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


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
"""The names a loopback-bound dashboard answers for by default (DNS rebinding: a page on
another name resolved to 127.0.0.1 sends that name as ``Host`` and is refused)."""
_HOST_NAME = re.compile(r"[A-Za-z0-9._-]+|\[?[0-9A-Fa-f:.]+\]?")


ANY_HOST = ("*",)


def _host_list(text: str) -> tuple[str, ...]:
    """'a.example, 10.0.0.5' -> ('a.example', '10.0.0.5'); '*' -> :data:`ANY_HOST`."""
    if text.strip() == "*":
        return ANY_HOST
    names = tuple(part.strip() for part in text.split(","))
    bad = next((n for n in names if not _HOST_NAME.fullmatch(n) or n.count(":") == 1), None)
    if not names or bad is not None:
        raise argparse.ArgumentTypeError(
            f"not a host name or address: {terminal_text(bad or text)!r} (give names "
            "without scheme, port or path, separated by commas, or *)")
    return names


def allowed_hosts(args: argparse.Namespace) -> tuple[str, ...] | None:
    """The host names the app answers for: ``--allowed-hosts``; else, bound to loopback, the
    loopback names and the bound host; else None (any: behind the proxy the deployment needs,
    which names the Host)."""
    given: tuple[str, ...] | None = getattr(args, "allowed_hosts", None)
    if given is not None:
        return None if given == ANY_HOST else given
    if _is_loopback(args.host):
        return tuple(dict.fromkeys((*LOOPBACK_NAMES, args.host.strip("[]").lower())))
    return None


def handle(args: argparse.Namespace) -> int:
    from dashboard.app import create_app
    from dashboard.context import MAX_REFRESH_S

    if args.refresh < MIN_REFRESH_S:
        raise CliError(f"--refresh must be at least {MIN_REFRESH_S:g}s, got {args.refresh:g}s.")
    if not args.refresh <= MAX_REFRESH_S:
        raise CliError(f"--refresh must be at most {MAX_REFRESH_S:g}s (1 day: a browser "
                       f"timer overflows beyond 24.8 days), got {args.refresh:g}s.")
    from collectors.config import load_config
    from dashboard.source_args import source_from_args

    config = load_config(args.config)
    settings = settings_from_args(args, config)
    source = source_from_args(args, config=config)
    server = create_app(source, refresh_s=args.refresh, config=config, at=args.at,
                        settings=settings, refresh_budget_s=args.deadline,
                        allowed_hosts=allowed_hosts(args))
    run_server(server, args.host, args.port)
    return 0


def bind_listener(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (SO_REUSEADDR), or a
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
    "serving …" on stderr, start the simulator's warm-up (:func:`warm_simulator`, a daemon
    thread), then serve the WSGI ``app`` with waitress on that socket until Ctrl-C or SIGTERM
    (both end it cleanly and the function returns).

    waitress reads every request — head and body — in its one event-loop thread and hands a
    worker thread (:data:`THREADS`) only a request that has fully arrived, so slow or idle
    connections cost a socket, never a worker (issue 23 item 2). The app's
    :class:`dashboard.app.ServerLimits` bound the rest: ``connection_limit`` open connections,
    ``idle_timeout_s`` of silence, ``request_read_timeout_s`` for one request to arrive, and
    ``max_request_bytes`` for a body (refused with 413 before it is buffered)."""
    from dashboard.app import ServerLimits

    extensions = getattr(app, "extensions", {}).get("queuelens", {})
    limits: ServerLimits = extensions.get("limits") or ServerLimits.from_env()
    listener = bind_listener(host, port)
    if not _is_loopback(host):
        warn(f"binding {host} exposes the dashboard to the network without "
             "authentication; put it behind an authenticating proxy.")
    context = extensions.get("context")
    source = getattr(context, "source_name", "unknown")
    _raise_descriptor_limit(limits.connection_limit + FD_HEADROOM)
    server = make_server(app, listener, limits)
    sys.stderr.write(
        f"queuelens: serving http://{_url_host(terminal_text(host))}:{port}/ "
        f"(source: {terminal_text(source)}; Ctrl-C to stop)\n"
    )
    sys.stderr.flush()
    threading.Thread(target=warm_simulator, name="queuelens-warm-up", daemon=True).start()
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        server.run()  # returns on KeyboardInterrupt / SystemExit, the workers stopped
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.probe_dispatcher.shutdown()
        server.close()


def _stop_on_sigterm(_signum: int, _frame: Any) -> None:
    """SIGTERM (``docker stop``, a pod's deletion) stops the server as Ctrl-C does."""
    raise SystemExit(0)


def make_server(app: Any, listener: socket.socket, limits: ServerLimits) -> Any:
    """A waitress server for ``app`` on the bound ``listener`` (it takes the socket over),
    with :func:`run_server`'s limits; ``run()`` serves until interrupted."""
    from waitress.adjustments import Adjustments
    from waitress.channel import HTTPChannel
    from waitress.server import TcpWSGIServer
    from waitress.task import ThreadedTaskDispatcher

    read_timeout_s = limits.request_read_timeout_s

    class _Channel(HTTPChannel):  # type: ignore[misc]
        """Remembers when the request being read began to arrive."""

        request_started = 0.0

        def received(self, data: bytes) -> bool:
            if self.request is None and data:
                self.request_started = time.time()
            return bool(super().received(data))

    class _Server(TcpWSGIServer):  # type: ignore[misc]
        channel_class = _Channel
        probe_dispatcher: Any = None

        def add_task(self, channel: Any) -> None:
            # a channel whose queued requests are all probes is served on the probe threads:
            # page callbacks holding every worker (a hung Prometheus) cannot delay a probe
            requests = channel.requests
            if self.probe_dispatcher is not None and requests and all(
                    _is_probe(r.command, r.path) for r in requests):
                self.probe_dispatcher.add_task(channel)
            else:
                super().add_task(channel)

        def maintenance(self, now: float) -> None:
            # waitress closes connections silent for channel_timeout; close as well those
            # whose request has been arriving for longer than the read deadline (a dripped
            # head or body keeps a connection "active" for ever)
            super().maintenance(now)
            cutoff = now - read_timeout_s
            for channel in list(self.active_channels.values()):
                if (channel.request is not None and not channel.requests
                        and getattr(channel, "request_started", now) < cutoff):
                    channel.will_close = True

    adj = Adjustments(
        sockets=[listener],
        threads=THREADS,
        backlog=BACKLOG,
        connection_limit=limits.connection_limit,
        channel_timeout=math.ceil(limits.idle_timeout_s),
        cleanup_interval=CLEANUP_INTERVAL_S,
        max_request_body_size=limits.max_request_bytes,
        max_request_header_size=MAX_REQUEST_HEAD_BYTES,
        asyncore_use_poll=True,  # select() fails past descriptor 1024
        expose_tracebacks=False,
        ident="queuelens",
    )
    sockinfo = (listener.family, listener.type, listener.proto, listener.getsockname())
    server = _Server(app, _sock=listener, adj=adj, sockinfo=sockinfo, bind_socket=False)
    server.probe_dispatcher = ThreadedTaskDispatcher()
    server.probe_dispatcher.set_thread_count(PROBE_THREADS)
    return server


def _is_probe(method: str | None, path: str | None) -> bool:
    from dashboard.app import PROBE_PATHS

    return method in ("GET", "HEAD") and path in PROBE_PATHS


def _raise_descriptor_limit(wanted: int) -> None:
    """Raise this process's open-file limit to ``wanted`` when the hard limit allows (the
    connection limit is worth nothing beyond it); a warning when it cannot."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):
        target = soft
    if target < wanted:
        warn(f"this process may open only {target} files; lower QUEUELENS_CONNECTION_LIMIT "
             f"to at most {max(target - FD_HEADROOM, 16)} or raise the limit (ulimit -n).")


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
