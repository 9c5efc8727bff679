"""Slow and idle HTTP clients of our own, against a server on this machine (127.0.0.1 only).

The attacks of issue 23 item 2, each a set of plain sockets that one daemon thread feeds:

* *slow headers* — a request line, then one header line every ``interval_s``, never the blank
  line that ends the head (slowloris);
* *slow bodies* — a complete head announcing a body of :data:`SLOW_BODY_BYTES`, then one body
  byte every ``interval_s``;
* *idle* — connect and send nothing.

::

    with SlowClients(port, slow_headers=8, slow_bodies=8, idle=200):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)

Bounded: the feeding thread stops by itself after ``max_duration_s`` and every socket is closed
when the ``with`` block ends (or on :meth:`SlowClients.stop`). A socket the server closed is
counted in :attr:`SlowClients.closed_by_server` and not fed again.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from dataclasses import dataclass, field
from types import TracebackType

SLOW_BODY_BYTES = 100_000
"""What a slow body announces (under the dashboard's 4 MiB request limit, so it is not refused
up front)."""
LOOPBACK = "127.0.0.1"


@dataclass
class _Client:
    sock: socket.socket
    kind: str
    sent: int = 0


@dataclass
class SlowClients:
    """Open the sockets at construction (``connect`` each), feed them from one thread."""

    port: int
    slow_headers: int = 0
    slow_bodies: int = 0
    idle: int = 0
    interval_s: float = 5.0
    max_duration_s: float = 120.0
    path: str = "/_dash-update-component"
    closed_by_server: int = 0
    _clients: list[_Client] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        host = f"{LOOPBACK}:{self.port}"
        try:
            for kind, count in (("header", self.slow_headers), ("body", self.slow_bodies),
                                ("idle", self.idle)):
                for _ in range(count):
                    sock = socket.create_connection((LOOPBACK, self.port), timeout=5)
                    sock.settimeout(1.0)
                    if kind == "header":
                        sock.sendall(f"POST {self.path} HTTP/1.1\r\nHost: {host}\r\n".encode())
                    elif kind == "body":
                        sock.sendall(f"POST {self.path} HTTP/1.1\r\nHost: {host}\r\n"
                                     "Content-Type: application/json\r\n"
                                     f"Content-Length: {SLOW_BODY_BYTES}\r\n\r\n{{".encode())
                    self._clients.append(_Client(sock, kind))
        except OSError:
            self._close_all()
            raise
        self._thread = threading.Thread(target=self._feed, name="slow-clients", daemon=True)
        self._thread.start()

    @property
    def open_sockets(self) -> int:
        return len(self._clients)

    def idle_closed_by_server(self) -> int:
        """How many of the idle sockets the server has closed (they are never fed, so this
        looks at each: a read that ends at once)."""
        return sum(_server_closed(c.sock) for c in list(self._clients) if c.kind == "idle")

    def __enter__(self) -> SlowClients:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._close_all()

    def _feed(self) -> None:
        deadline = time.monotonic() + self.max_duration_s
        while not self._stop.wait(self.interval_s) and time.monotonic() < deadline:
            for client in list(self._clients):
                if client.kind == "idle":
                    continue
                data = f"X-Slow-{client.sent}: 1\r\n".encode() if client.kind == "header" \
                    else b" "
                try:
                    client.sock.sendall(data)
                    client.sent += 1
                except OSError:
                    self._drop(client)

    def _drop(self, client: _Client) -> None:
        with contextlib.suppress(ValueError):
            self._clients.remove(client)
            self.closed_by_server += 1
        client.sock.close()

    def _close_all(self) -> None:
        for client in self._clients:
            client.sock.close()
        self._clients = []


def _server_closed(sock: socket.socket) -> bool:
    """Whether the peer has closed ``sock`` (a read returns end-of-file or an error)."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
