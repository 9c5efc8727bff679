"""`queuelens exporter`: serve the demo fleet as real Prometheus metrics on /metrics."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType
from typing import Any

from dashboard.cliutil import CliError, non_negative_duration, positive_int
from dashboard.commands.simulate import bounded_duration, seed
from models.limits import EXPORTER_MAX_QUEUES


def queue_count(text: str) -> int:
    """--queues: a whole number from 1 to :data:`models.limits.EXPORTER_MAX_QUEUES` (every
    scrape evaluates every queue's series, so the fleet may not grow without bound)."""
    value = positive_int(text)
    if value > EXPORTER_MAX_QUEUES:
        raise argparse.ArgumentTypeError(
            f"at most {EXPORTER_MAX_QUEUES:,} queues (each scrape evaluates all of them), "
            f"got {value:,}")
    return value


def parse_listen(text: str) -> tuple[str, int]:
    """'127.0.0.1:9464', '[::1]:9464' or ':9464' (loopback) -> (host, port)."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"not HOST:PORT: {text!r} (e.g. 127.0.0.1:9464)")
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {port_text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0-65535, got {port}")
    return host, port


# Kept in step with collectors.exporter (a test checks it; importing it here would slow down
# `queuelens --help`, since it imports prometheus_client and the fleet).
MAX_CACHE_INTERVAL_S = 300.0
MAX_WAIT_S = 600.0


def cache_interval(text: str) -> float:
    """--cache-interval: 'auto' (-1: derived from the last computation) or a duration from 0
    to :data:`MAX_CACHE_INTERVAL_S`."""
    if text.strip().lower() == "auto":
        return -1.0
    value = non_negative_duration(text)
    if value > MAX_CACHE_INTERVAL_S:
        raise argparse.ArgumentTypeError(
            f"at most {MAX_CACHE_INTERVAL_S:g}s (staler values make a scraper's rates "
            f"meaningless), got {text!r}")
    return value


# The demo regimes and their controllers (models.fleet.DEMO_QUEUES; a test keeps this in
# step — importing the fleet here would slow down `queuelens --help`).
SCENARIOS = (
    "healthy (deployment), saturated (replicaset), api_throttled (certificate), "
    "retry_storm (dnsrecord), hot_key (ingress), over_provisioned (secret), "
    "requeue_misuse (cronjob), long_passes (volumesnapshot)"
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "exporter",
        help="serve the demo queues as Prometheus metrics",
        description=(
            "Serve the embedded demo fleet on http://HOST:PORT/metrics with the metric names, "
            "labels and bucket layouts of client-go's workqueue and controller-runtime's "
            "controller and REST-client metrics, so a real Prometheus can scrape it. "
            f"Scenarios: all, or one of {SCENARIOS}. Stops cleanly on SIGINT/SIGTERM."
        ),
    )
    parser.add_argument("--listen", type=parse_listen, default=("127.0.0.1", 9464),
                        metavar="HOST:PORT",
                        help="address to listen on (default 127.0.0.1:9464; loopback only "
                        "unless you name another interface)")
    parser.add_argument("--scenario", default="all", metavar="NAME",
                        help="'all' (default), a regime or a controller name")
    parser.add_argument("--queues", type=queue_count, default=None, metavar="N",
                        help="serve a larger synthetic fleet of N queues instead (at most "
                        f"{EXPORTER_MAX_QUEUES:,})")
    parser.add_argument("--cache-interval", type=cache_interval, default=-1.0,
                        metavar="auto|DURATION",
                        help="serve the last exposition to every scrape within this long of "
                        "its computation: 'auto' (default: as long as the last computation "
                        "took, at least 1s, at most 5m) or 0 to 5m; bare number = seconds")
    parser.add_argument("--scrape-wait", type=bounded_duration(MAX_WAIT_S), default=30.0,
                        metavar="DURATION",
                        help="how long a scrape waits for another scrape's computation (one "
                        "runs at a time) before it gets 503 (default 30s, at most 10m; "
                        "Prometheus's scrape timeout header shortens it); bare number = "
                        "seconds")
    parser.add_argument("--seed", type=seed, default=0,
                        help="seed of the demo noise, 0 to 2^64 − 1 (default 0)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from collectors.demo import DemoSource
    from collectors.exporter import serve

    source = DemoSource(scenario=args.scenario, seed=args.seed, queues=args.queues)
    host, port = args.listen
    try:
        server, thread = serve(source.fleet, host, port, cache_interval_s=args.cache_interval,
                               wait_s=args.scrape_wait)
    except OSError as exc:
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
    shown = f"[{host}]" if ":" in host else host
    sys.stderr.write(
        f"queuelens exporter: serving {len(source.fleet)} demo queues on "
        f"http://{shown}:{server.server_port}/metrics (Ctrl-C to stop)\n"
    )
    sys.stderr.flush()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
        for s, handler in previous.items():
            signal.signal(s, handler)
    sys.stderr.write("queuelens exporter: stopped\n")
    return 0
