"""Small misbehaving HTTP servers of our own, on 127.0.0.1, each in a daemon thread.

They stand in for a broken Prometheus, proxy or network — what a real Prometheus will not do on
request: answer headers and then drip one byte a second, accept and never answer, send a body
larger than any limit (with or without ``Content-Length``), send a 200 whose envelope says
``"status": "error"``, send bytes that are not JSON, or send its headers one byte at a time.

Every server is a :class:`FaultServer` running one *behaviour* per connection: a function of
(the parsed request, the connection socket, the server's stop event). The behaviours here write
raw HTTP/1.1 on the socket, so the server can misbehave at any byte. ``stop()`` (or leaving the
``with`` block) sets the stop event and closes every connection, so a dripping or hanging
behaviour ends at once and no thread outlives the test::

    with FaultServer(drip(interval_s=1.0)) as server:
        main(["snapshot", "--prometheus", server.url, "--timeout", "2s"])

:func:`route` picks a behaviour by the PromQL of the request (e.g. hang only the bucket
queries, answer the rest), for tests of what happens to the sibling queries of a snapshot.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from urllib.parse import parse_qs, urlsplit

MAX_HEAD_BYTES = 65536
"""A request head larger than this is answered 431 (the servers read it into memory)."""


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    """The path without the query string (``/api/v1/query``)."""
    params: dict[str, str]
    """Query-string parameters (first value of each)."""
    headers: dict[str, str]

    @property
    def promql(self) -> str:
        return self.params.get("query", "")


Behaviour = Callable[[Request, socket.socket, threading.Event], None]


@dataclass
class FaultServer:
    """A threaded TCP server on 127.0.0.1 (a free port) running ``behaviour`` per connection."""

    behaviour: Behaviour
    requests: list[Request] = field(default_factory=list)
    """Every request received, in order."""

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.settimeout(0.1)
        self.port = int(self._listener.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self._acceptor = threading.Thread(target=self._accept, name="fault-accept",
                                          daemon=True)
        self._acceptor.start()

    def __enter__(self) -> FaultServer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._acceptor.join(5)
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            _close(conn)
        for thread in list(self._threads):
            thread.join(5)
        self._listener.close()

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._conns)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            with self._lock:
                self._conns.add(conn)
            thread = threading.Thread(target=self._serve, args=(conn,), name="fault-conn",
                                      daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(10.0)
            request = _read_request(conn)
            if request is None:
                return
            self.requests.append(request)
            conn.settimeout(None)
            self.behaviour(request, conn, self._stop)
        except OSError:
            pass  # the client went away: what these servers are for
        finally:
            with self._lock:
                self._conns.discard(conn)
            _close(conn)


def _close(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)
    conn.close()


def _read_request(conn: socket.socket) -> Request | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return None
        data += chunk
        if len(data) > MAX_HEAD_BYTES:
            conn.sendall(b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
                         b"Content-Length: 0\r\nConnection: close\r\n\r\n")
            return None
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    line, *header_lines = head.split("\r\n")
    method, target, _version = [*line.split(" "), "", ""][:3]
    parts = urlsplit(target)
    params = {k: v[0] for k, v in parse_qs(parts.query).items()}
    headers = {}
    for h in header_lines:
        name, _, value = h.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Request(method=method, path=parts.path, params=params, headers=headers)


def _head(status: int = 200, reason: str = "OK", headers: Sequence[tuple[str, str]] = ()
          ) -> bytes:
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


# --- behaviours -----------------------------------------------------------------------------


def empty_answer(request: Request) -> bytes:
    """A valid, empty Prometheus answer for the request's endpoint."""
    kind = "matrix" if request.path.endswith("query_range") else "vector"
    return json.dumps({"status": "success", "data": {"resultType": kind, "result": []}}).encode()


def answer(status: int = 200, body: bytes | None = None,
           content_type: str = "application/json") -> Behaviour:
    """A fixed answer (``body`` None: a valid empty Prometheus answer), then close."""

    def run(request: Request, conn: socket.socket, stop: threading.Event) -> None:
        data = empty_answer(request) if body is None else body
        conn.sendall(_head(status, "Whatever", [("Content-Type", content_type),
                                                ("Content-Length", str(len(data))),
                                                ("Connection", "close")]) + data)

    return run


def ok() -> Behaviour:
    """A healthy, empty Prometheus."""
    return answer()


def status_error(error_type: str = "bad_data", error: str = "parse error: unexpected <EOF>"
                 ) -> Behaviour:
    """HTTP 200 whose envelope says ``status: error`` (some proxies and older
    Prometheus-compatible servers do this)."""
    return answer(200, json.dumps({"status": "error", "errorType": error_type,
                                   "error": error}).encode())


def garbage(content_type: str = "application/json") -> Behaviour:
    """HTTP 200 with bytes that are not JSON."""
    return answer(200, b"\x00\xff<html>this is not JSON at all", content_type)


def hang() -> Behaviour:
    """Accept, read the request, never answer (until the server stops, or the client closes
    its side: then the connection ends here too, so ``open_connections`` shows whether the
    client let go)."""

    def run(request: Request, conn: socket.socket, stop: threading.Event) -> None:
        conn.settimeout(0.05)
        while not stop.is_set():
            try:
                if not conn.recv(4096):
                    return
            except TimeoutError:
                continue

    return run


def drip(interval_s: float = 1.0, content_length: int | None = 10**6) -> Behaviour:
    """Valid headers at once, then one byte of a valid-looking body every ``interval_s`` (a
    byte arrives well within any per-read timeout, so only a wall-clock deadline ends it)."""
    prefix = b'{"status":"success","data":{"resultType":"vector","result":['

    def run(request: Request, conn: socket.socket, stop: threading.Event) -> None:
        headers = [("Content-Type", "application/json")]
        if content_length is not None:
            headers.append(("Content-Length", str(content_length)))
        conn.sendall(_head(200, "OK", headers))
        body = itertools.chain(prefix, itertools.repeat(ord(" ")))
        while not stop.wait(interval_s):
            conn.sendall(bytes([next(body)]))

    return run


def slow_headers(interval_s: float = 0.5) -> Behaviour:
    """The status line, then the headers one byte every ``interval_s``, never finishing."""

    def run(request: Request, conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: ")
        while not stop.wait(interval_s):
            conn.sendall(b"a")

    return run


def huge(size_bytes: int, content_length: bool = True) -> Behaviour:
    """A valid Prometheus vector answer of about ``size_bytes``, sent as fast as the client
    reads it: with an exact ``Content-Length``, or without one (ended by closing)."""
    item = (b'{"metric":{"name":"queue-0000000000","le":"0.001"},"value":[1704070200,"1.5"]}')
    prefix = b'{"status":"success","data":{"resultType":"vector","result":['
    suffix = b"]}}"
    count = max(1, (size_bytes - len(prefix) - len(suffix)) // (len(item) + 1))
    total = len(prefix) + len(suffix) + count * len(item) + (count - 1)

    def chunks() -> Iterator[bytes]:
        yield prefix
        block = 1000
        for start in range(0, count, block):
            n = min(block, count - start)
            yield (b"," if start else b"") + b",".join([item] * n)
        yield suffix

    def run(request: Request, conn: socket.socket, stop: threading.Event) -> None:
        headers = [("Content-Type", "application/json"), ("Connection", "close")]
        if content_length:
            headers.append(("Content-Length", str(total)))
        conn.sendall(_head(200, "OK", headers))
        for chunk in chunks():
            if stop.is_set():
                return
            conn.sendall(chunk)

    return run


def delayed(seconds: float, then: Behaviour) -> Behaviour:
    """Wait ``seconds``, then behave as ``then`` (a slow but working Prometheus)."""

    def run(request: Request, conn: socket.socket, stop: threading.Event) -> None:
        if not stop.wait(seconds):
            then(request, conn, stop)

    return run


def route(rules: Sequence[tuple[str, Behaviour]], default: Behaviour | None = None
          ) -> Behaviour:
    """The behaviour of the first rule whose text occurs in the request's PromQL or path
    (``"query_range"``: every range query); else ``default`` (a healthy empty answer)."""
    fallback = default or ok()

    def run(request: Request, conn: socket.socket, stop: threading.Event) -> None:
        for needle, behaviour in rules:
            if needle in request.promql or needle in request.path:
                behaviour(request, conn, stop)
                return
        fallback(request, conn, stop)

    return run


def wait_until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    """Poll ``predicate`` every 20 ms for up to ``timeout_s`` (for server-side counts)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()
