"""Deadlines, query groups and the watchdog: the one wall-clock bound on every query.

* :class:`Deadline` and :func:`deadline_scope`: a point on the monotonic clock and whose budget
  it is (a command's, a page refresh's, a query's own timeout); a scope never extends the
  deadline of the scope around it.
* :class:`QueryGroup` and :func:`query_group`: the queries of one read; the first failure
  cancels the others (their sockets are shut down, the ones not sent fail at once).
* :class:`Watch` and the watchdog thread: ``requests``' timeout is per socket operation, so a
  server sending one byte a second never trips it; the watchdog shuts a query's socket down
  (``shutdown(SHUT_RDWR)`` wakes a thread blocked in ``recv``) when its deadline passes, found
  through urllib3 connection classes of our own (:data:`WATCHED_POOLS`) that note which query
  uses them — as Go's ``http.Client.Timeout`` covers the whole exchange.

Used by :mod:`collectors.prom_client` (each query runs in a :class:`Watch`) and
:mod:`collectors.query_pool` (a read's queries share its group and deadline)."""

from __future__ import annotations

import contextvars
import heapq
import itertools
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

__all__ = [
    "WATCHED_POOLS",
    "Deadline",
    "QueryGroup",
    "Watch",
    "current_deadline",
    "current_group",
    "current_watch",
    "deadline_scope",
    "query_group",
]


@dataclass(frozen=True)
class Deadline:
    """A point on the monotonic clock by which some work must be done, and whose budget it is
    (for messages: the error must state the real budget, not the per-query timeout when a
    page refresh's budget is what ran out)."""

    expires: float
    budget_s: float
    what: str | None = None
    """'this command', 'this page refresh'…; None: the query's own timeout."""
    hint: str | None = None
    """What sets the budget, for messages ('--timeout')."""

    @classmethod
    def after(cls, seconds: float, what: str | None = None, hint: str | None = None
              ) -> Deadline:
        return cls(time.monotonic() + seconds, seconds, what, hint)

    def remaining(self) -> float:
        return self.expires - time.monotonic()

    def describe(self) -> str:
        """'the 2 s query timeout' or 'the 30 s budget of this page refresh'."""
        if self.what is None:
            return f"the {self.budget_s:g} s query timeout"
        return f"the {self.budget_s:g} s budget of {self.what}"

    def note(self, detail: str) -> str:
        """``detail`` and what sets the budget, for the parentheses of a message."""
        return f"{detail}; set by {self.hint}" if self.hint else detail


class QueryGroup:
    """The queries of one read (a snapshot, a range read): the first failure is kept and
    cancels every other query of the group — the ones in flight have their sockets shut
    down, the ones not yet sent fail at once — so nobody waits for siblings whose answer will
    be thrown away."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watches: set[Watch] = set()
        self.error: BaseException | None = None
        """The first failure (the one to report)."""
        self.cancelled = False

    def fail(self, exc: BaseException) -> None:
        """Record ``exc`` (if it is the first) and cancel the rest of the group."""
        with self._lock:
            if self.error is None:
                self.error = exc
        self.cancel()

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            watches = list(self._watches)
        for watch in watches:
            watch.fire(cancelled=True)

    def _add(self, watch: Watch) -> bool:
        """Register an in-flight query; False when the group is already cancelled."""
        with self._lock:
            if self.cancelled:
                return False
            self._watches.add(watch)
            return True

    def _discard(self, watch: Watch) -> None:
        with self._lock:
            self._watches.discard(watch)


@dataclass(frozen=True)
class _Scope:
    deadline: Deadline | None = None
    group: QueryGroup | None = None


_NO_SCOPE = _Scope()
_SCOPE: contextvars.ContextVar[_Scope] = contextvars.ContextVar("queuelens_query_scope",
                                                                default=_NO_SCOPE)
"""The caller's deadline and query group. A context variable, so it follows the work into
the worker threads of a read when they run in a copy of the caller's context
(:func:`contextvars.copy_context`, as :mod:`collectors.snapshot` does)."""


def current_deadline() -> Deadline | None:
    """The deadline of the innermost :func:`deadline_scope` (None outside any)."""
    return _SCOPE.get().deadline


def current_group() -> QueryGroup | None:
    """The group of the innermost :func:`query_group` (None outside any)."""
    return _SCOPE.get().group


@contextmanager
def deadline_scope(budget: float | Deadline | None, what: str = "this read",
                   hint: str | None = None) -> Iterator[Deadline | None]:
    """Every Prometheus query made inside — in this thread, or in workers running in a copy of
    this context — ends by one wall-clock deadline: ``budget`` seconds from now (or the given
    :class:`Deadline`, to share one across several scopes), or the enclosing scope's deadline
    if that is sooner. ``None`` leaves the current deadline as it is.

    A query that would start after the deadline fails at once (:class:`PrometheusTimeout`,
    naming the budget); a query in flight is cut off at the deadline. Use it around a page
    refresh (snapshot + range read) or a command, so a hung Prometheus costs one budget, not
    one timeout per read."""
    outer = _SCOPE.get()
    if budget is None:
        yield outer.deadline
        return
    mine = (budget if isinstance(budget, Deadline)
            else Deadline.after(float(budget), what, hint))
    if outer.deadline is not None and outer.deadline.expires <= mine.expires:
        mine = outer.deadline
    token = _SCOPE.set(_Scope(mine, outer.group))
    try:
        yield mine
    finally:
        _SCOPE.reset(token)


@contextmanager
def query_group() -> Iterator[QueryGroup]:
    """A new :class:`QueryGroup` for the queries made inside (same context rules as
    :func:`deadline_scope`); the deadline is inherited."""
    group = QueryGroup()
    token = _SCOPE.set(_Scope(_SCOPE.get().deadline, group))
    try:
        yield group
    finally:
        _SCOPE.reset(token)


_WATCH_LOCK = threading.Lock()
"""Guards which query owns which connection (:attr:`_WatchedConnection._ql_watch`), so a
watchdog firing late can never shut down a connection another query has taken from the pool."""
_LOCAL = threading.local()
"""``_LOCAL.watch``: the query this thread is sending right now (read by the connections)."""


def _shutdown(conn: Any) -> None:
    """Shut down the socket of ``conn``: its live one, or the one it connected last, which a
    read-until-close answer is still being read from after ``http.client`` has handed it to
    the response (``HTTPConnection.getresponse`` sets ``sock`` to None when the answer will
    close the connection)."""
    sock = conn.sock if conn.sock is not None else getattr(conn, "_ql_sock", None)
    if sock is None:
        return
    try:
        if sock.fileno() != -1:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class Watch:
    """One HTTP attempt's deadline and the connection it is using."""

    __slots__ = ("cancelled", "closed", "conn", "deadline", "fired", "fired_phase", "group",
                 "phase", "received", "started")

    def __init__(self, deadline: Deadline, group: QueryGroup | None) -> None:
        self.deadline = deadline
        self.group = group
        self.conn: Any = None
        self.fired = False
        self.cancelled = False
        self.closed = False
        self.phase = "connecting"
        """'connecting', 'waiting' (for the headers) or 'body'."""
        self.fired_phase = ""
        """The phase when the deadline passed (a socket shut mid-headers can make http.client
        see the headers as complete, so ``phase`` may move on after that)."""
        self.received = 0
        """Body bytes read so far."""
        self.started = time.monotonic()

    def attach(self, conn: Any) -> None:
        """``conn`` now carries this attempt; shut it at once if the deadline already passed."""
        with _WATCH_LOCK:
            if self.closed:
                return
            self.conn = conn
            conn._ql_watch = self
            if self.fired:
                _shutdown(conn)

    def fire(self, cancelled: bool = False) -> None:
        with _WATCH_LOCK:
            if self.closed or self.fired:
                return
            self.fired = True
            self.cancelled = cancelled
            self.fired_phase = self.phase
            conn = self.conn
            if conn is not None and getattr(conn, "_ql_watch", None) is self:
                _shutdown(conn)

    def close(self) -> None:
        with _WATCH_LOCK:
            self.closed = True
            conn = self.conn
            if conn is not None and getattr(conn, "_ql_watch", None) is self:
                conn._ql_watch = None
            self.conn = None

    def __enter__(self) -> Watch:
        if self.group is not None and not self.group._add(self):
            self.fired = self.cancelled = True
            self.fired_phase = self.phase
        _LOCAL.watch = self
        _WATCHDOG.add(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _LOCAL.watch = None
        self.close()
        if self.group is not None:
            self.group._discard(self)


class _Watchdog:
    """One daemon thread firing the watches whose deadline has passed (a heap by expiry;
    finished watches are dropped lazily, and the heap is rebuilt when they dominate it)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Watch]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, watch: Watch) -> None:
        with self._cond:
            seq = next(self._seq)
            heapq.heappush(self._heap, (watch.deadline.expires, seq, watch))
            if seq % 256 == 255:  # drop finished watches (amortized: once per 256 queries)
                self._heap = [e for e in self._heap if not e[2].closed]
                heapq.heapify(self._heap)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="queuelens-watchdog",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0][2].closed:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait(60.0)
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(min(wait, 60.0))
                    continue
                _, _, due = heapq.heappop(self._heap)
            due.fire()


_WATCHDOG = _Watchdog()


def current_watch() -> Watch | None:
    watch: Watch | None = getattr(_LOCAL, "watch", None)
    return watch


class _WatchedConnection:
    """Mixin for urllib3's connection classes: the query sending on this thread owns the
    connection while it connects and sends (``connect`` / ``request`` run in that thread), so
    its watch can shut the socket down at the deadline. A TLS handshake is the one phase it
    cannot cut short (urllib3 hands the socket to ``ssl`` before assigning it); the per-read
    timeout still bounds every read of it."""

    _ql_watch: Watch | None = None
    _ql_sock: Any = None
    sock: Any

    def connect(self) -> None:
        watch = current_watch()
        self._ql_sock = None
        if watch is not None:
            watch.phase = "connecting"
            watch.attach(self)
        super().connect()  # type: ignore[misc]
        self._ql_sock = self.sock
        if watch is not None:
            watch.phase = "waiting"
            watch.attach(self)  # the socket exists now: shut at once if already past due

    def request(self, *args: Any, **kwargs: Any) -> None:
        watch = current_watch()
        if watch is not None:
            watch.attach(self)
        super().request(*args, **kwargs)  # type: ignore[misc]
        if watch is not None:
            watch.phase = "waiting"


class _WatchedHTTPConnection(_WatchedConnection, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_WatchedConnection, HTTPSConnection):
    pass


class _WatchedPool:
    """Mixin for urllib3's pools: a connection going back to the pool belongs to no query any
    more, so a watchdog firing late (the answer was complete just at the deadline) cannot shut
    it down under the next query that takes it."""

    def _put_conn(self, conn: Any) -> None:
        if conn is not None:
            with _WATCH_LOCK:
                conn._ql_watch = None
        super()._put_conn(conn)  # type: ignore[misc]


class _WatchedHTTPPool(_WatchedPool, HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(_WatchedPool, HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


WATCHED_POOLS = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}
