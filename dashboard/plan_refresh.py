"""The fleet's plans as the server last computed them: what ``/metrics`` exposes.

The dashboard's pages compute their plans in their own callbacks, when a browser asks; a
scrape must neither wait for a page nor run the advisor itself. :class:`PlanRefresher` keeps
the last :class:`dashboard.advice.FleetAdvice` of the app — one
:func:`dashboard.advice.advise_fleet` call with the app's source, evaluation time and settings,
the call ``queuelens advise`` makes, so the plans are ``advise``'s — and its cost.

**When it refreshes.** When a reader asks (:meth:`PlanRefresher.latest`) and the plans are
older than the app's refresh period (``serve --refresh``, the pages' own period; none yet
counts as old), one refresh starts in a background thread; a reader waits for it at most the
time it is given, then takes what is there (the previous plans, or none). So nothing is read
while nobody scrapes, a scrape every second costs at most one set of reads per refresh
period, and a hung Prometheus delays a scrape by the wait, never by the read. The thread is
started by the first reader, not when the app is built: a WSGI server that forks its
workers after loading the app (gunicorn) would not carry a thread started before the fork.

**Reads.** Through the app's shared cache (:class:`collectors.cache.CachedSource`), under the
refresh budget of the pages (:meth:`dashboard.context.AppContext.refresh_budget`): the fleet
overview and a refresh in the same cache slot share their snapshot and range reads (the
overview's range asks for the same signals). ``advise_fleet`` gets the wrapped
source's ``profile`` (the cache has none) so the plans carry the knobs and ``RequeueAfter``
periods of the profile, as ``advise``'s do.

**Failures.** A read that raises (:class:`collectors.errors.CollectorError`) and an advisor
that refuses its input (:class:`models.errors.ModelInputError`) are counted, the previous
plans stay (their age says how old), and the next refresh is one refresh period later — a
down Prometheus is not asked again by every scrape. Anything else is logged with its
traceback and counted as a refresh error.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from collectors.cache import CachedSource
from collectors.errors import CollectorError
from collectors.types import Source
from dashboard.advice import FleetAdvice, advise_fleet
from dashboard.context import AppContext
from models.errors import ModelInputError
from models.measurements import RangeData, Snapshot

__all__ = ["PlanRefresher", "RefreshState", "TimedReads"]

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class RefreshState:
    """What the last refreshes left, as one reader sees it (None: not yet)."""

    advice: FleetAdvice | None
    """The plans of the last refresh that computed them."""
    computed_at: float | None
    """Unix time at which those plans were computed (the refresh's end)."""
    age_s: float | None
    """Seconds since then, when this state was taken (monotonic clock)."""
    duration_s: float | None
    """Wall time of the last refresh, failed or not: reads plus advisor."""
    read_s: float | None
    """Of which, in the source's reads (a cache hit costs about nothing)."""
    refreshes: int = 0
    """Refreshes finished since the server started, failed ones included."""
    source_errors: int = 0
    """Refreshes whose reads raised (the source was unavailable or refused a query)."""
    refresh_errors: int = 0
    """Refreshes that failed otherwise (the advisor refused its input, or a bug)."""
    running: bool = False
    """A refresh is in progress."""


class TimedReads:
    """A source for one refresh: the app's source, with the time its reads take added up in
    :attr:`read_s`, and ``profile`` of the source behind the cache (what ``advise_fleet``
    reads the framework and the poll periods from)."""

    def __init__(self, source: Source) -> None:
        self.source = source
        inner = source.source if isinstance(source, CachedSource) else source
        self.profile: Any = getattr(inner, "profile", None)
        self.read_s = 0.0

    @property
    def name(self) -> str:
        return self.source.name

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        started = time.perf_counter()
        try:
            return self.source.snapshot(at, window_s)
        finally:
            self.read_s += time.perf_counter() - started

    def range(
        self, start: float, end: float, step_s: float, queues: Sequence[str] | None = None,
        signals: Collection[str] | None = None,
    ) -> RangeData:
        started = time.perf_counter()
        try:
            return self.source.range(start, end, step_s, queues, signals)
        finally:
            self.read_s += time.perf_counter() - started


class PlanRefresher:
    """The app's last fleet plans, refreshed on demand in a background thread (module doc).

    ``max_age_s``: how old the plans may be before a reader's request starts a refresh
    (default: the app's refresh period). ``clock``/``wall``: the monotonic and unix clocks."""

    def __init__(self, ctx: AppContext, *, max_age_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        max_age = ctx.refresh_s if max_age_s is None else max_age_s
        if not (math.isfinite(max_age) and max_age > 0):
            raise ValueError(f"the plans' maximum age must be a positive duration, "
                             f"got {max_age!r}.")
        self.ctx = ctx
        self.max_age_s = float(max_age)
        self._clock = clock
        self._wall = wall
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._done.set()
        self._running = False
        self._advice: FleetAdvice | None = None
        self._computed_mono: float | None = None
        self._computed_at: float | None = None
        self._attempted_mono: float | None = None
        self._duration_s: float | None = None
        self._read_s: float | None = None
        self._refreshes = 0
        self._source_errors = 0
        self._refresh_errors = 0

    def state(self) -> RefreshState:
        """What is there now; never reads, never waits for a refresh."""
        with self._lock:
            age = (None if self._computed_mono is None
                   else max(0.0, self._clock() - self._computed_mono))
            return RefreshState(
                advice=self._advice, computed_at=self._computed_at, age_s=age,
                duration_s=self._duration_s, read_s=self._read_s, refreshes=self._refreshes,
                source_errors=self._source_errors, refresh_errors=self._refresh_errors,
                running=self._running)

    def latest(self, wait_s: float) -> RefreshState:
        """Start a refresh when the plans are due (older than ``max_age_s``, or none, and
        none in progress); wait at most ``wait_s`` seconds for the one in progress; then
        :meth:`state`."""
        with self._lock:
            last = self._attempted_mono
            due = last is None or self._clock() - last >= self.max_age_s
            if due and not self._running:
                self._running = True
                self._done.clear()
                threading.Thread(target=self._run, name="queuelens-plan-refresh",
                                 daemon=True).start()
            done = self._done
        if wait_s > 0:
            done.wait(wait_s)
        return self.state()

    def refresh(self) -> RefreshState:
        """One refresh now in this thread, whatever the plans' age — or, when one is in
        progress, the end of that one; then :meth:`state`."""
        with self._lock:
            if self._running:
                done = self._done
            else:
                self._running = True
                self._done.clear()
                done = None
        if done is not None:
            done.wait()
        else:
            self._run()
        return self.state()

    def _run(self) -> None:
        started = self._clock()
        reads: TimedReads | None = None
        advice: FleetAdvice | None = None
        failed: str | None = None
        try:
            source = self.ctx.source
            if source is None:
                failed = "source"
            else:
                reads = TimedReads(source)
                with self.ctx.refresh_budget():
                    advice = advise_fleet(reads, self.ctx.now(), self.ctx.settings)
        except CollectorError:
            failed = "source"
        except ModelInputError:
            failed = "refresh"
        except Exception:  # a bug: keep serving the last plans, say it in the server's log
            _LOG.exception("queuelens: the plans for /metrics could not be refreshed")
            failed = "refresh"
        finally:
            ended = self._clock()
            with self._lock:
                self._attempted_mono = ended
                self._duration_s = ended - started
                self._read_s = reads.read_s if reads is not None else None
                self._refreshes += 1
                if failed == "source":
                    self._source_errors += 1
                elif failed == "refresh":
                    self._refresh_errors += 1
                if advice is not None:
                    self._advice = advice
                    self._computed_mono = ended
                    self._computed_at = self._wall()
                self._running = False
                self._done.set()
