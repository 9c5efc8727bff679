"""``CachedSource``: one shared, time-bounded cache in front of any :class:`Source`.

Ten browser tabs asking for "the snapshot now" must not become ten times the load on
Prometheus. So:

* ``at`` / ``start`` / ``end`` are aligned down to ``align_s`` and the *aligned* times are
  queried, so requests within the same slot share one key — (call, aligned time(s), window or
  step, queues);
* an entry lives ``ttl_s`` seconds (monotonic clock); the cache holds at most ``max_entries``
  (and at most as many last-good fallbacks);
* the cache life adapts to the source: when a fetch took ``D`` seconds, the newest result of
  the same kind is reused for ``adapt × D`` seconds (when that is longer than ``ttl_s``) even
  for a newer time slot, so a fleet whose reads take longer than the refresh period does not
  start cold on every refresh, and the source spends at most ``1/adapt`` of its time on it;
* concurrent callers of a key that is being fetched wait for that one fetch (in-flight
  de-duplication) instead of issuing their own — but never longer than their own deadline
  (:meth:`CachedSource.deadline`) or ``max_wait_s``: a waiter that gives up gets the last
  good result marked stale, or a :class:`~collectors.errors.PrometheusTimeout` (ten tabs
  waiting without a limit on one fetch from a drip-feeding Prometheus held every server
  thread for 20 minutes, issue 12);
* a page refresh runs its reads under one deadline: ``with cache.deadline(): snapshot …;
  range …`` (default budget: the source's query timeout), so a hung Prometheus costs the page
  one timeout, not one per read; a read asked for after the budget is spent is not sent at
  all (the last good result, marked stale, or the timeout error);
* when the source is unavailable (:class:`PrometheusUnavailable`) the last good result of the
  same kind (same window; same range length/step/queues) is returned with a warning, and
  :meth:`health` reports the error and since when data is stale, so the dashboard can show a
  banner; the next successful fetch clears it (self-recovery). A failure is itself remembered
  for ``error_ttl_s`` so a down Prometheus is not hammered by every tab.

Other errors (bad query, bad config) are raised to every caller: serving stale data would hide
a problem only the user can fix.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from collectors.deadlines import Deadline, current_deadline, deadline_scope
from collectors.errors import PrometheusTimeout, PrometheusUnavailable
from collectors.incremental import extend, step_grid
from collectors.types import Source
from models.measurements import RangeData, Snapshot

R = TypeVar("R", Snapshot, RangeData)

DEFAULT_WAIT_S = 30.0
"""How long a caller without a deadline waits for another caller's fetch, when the source
states no timeout of its own."""
MAX_WAIT_S = 86400.0


@dataclass(frozen=True)
class SourceHealth:
    ok: bool
    last_error: str | None = None
    stale_since: float | None = None
    """Unix time of the first failure since the last success (None when healthy)."""
    last_success_at: float | None = None


class _Flight:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self.started = time.monotonic()


class CachedSource:
    """A thread-safe caching wrapper; itself a :class:`Source`."""

    def __init__(
        self,
        source: Source,
        *,
        ttl_s: float = 15.0,
        align_s: float = 5.0,
        error_ttl_s: float = 5.0,
        max_entries: int = 256,
        adapt: float = 4.0,
        max_wait_s: float | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """``max_wait_s``: the longest a caller waits for another caller's fetch of the same
        key when it has no deadline of its own (default: the source's query timeout,
        ``source.timeout_s``, else 30 s)."""
        if ttl_s <= 0 or align_s <= 0 or error_ttl_s < 0 or max_entries < 1 or adapt < 1:
            raise ValueError("ttl_s and align_s must be > 0, error_ttl_s >= 0, max_entries >= 1, "
                             "adapt >= 1")
        if max_wait_s is None:
            max_wait_s = float(getattr(source, "timeout_s", None) or DEFAULT_WAIT_S)
        if not 0 < max_wait_s <= MAX_WAIT_S:
            raise ValueError(f"max_wait_s must be in (0, {MAX_WAIT_S:g}], got {max_wait_s!r}")
        self.max_wait_s = max_wait_s
        self.adapt = adapt
        self.source = source
        self.ttl_s = ttl_s
        self.align_s = align_s
        self.error_ttl_s = error_ttl_s
        self.max_entries = max_entries
        self._mono = monotonic
        self._wall = wall
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self._errors: dict[Hashable, tuple[float, BaseException]] = {}
        self._flights: dict[Hashable, _Flight] = {}
        self._last_good: OrderedDict[Hashable, Any] = OrderedDict()
        self._recent: dict[Hashable, tuple[float, float]] = {}
        """family -> (monotonic time the newest fetch finished, how long it took)."""
        self._last_error: str | None = None
        self._stale_since: float | None = None
        self._last_success: float | None = None
        self.fetches = 0
        """How many calls reached the wrapped source (for tests and metrics)."""
        self.range_reads: dict[str, int] = {}
        """Range reads by how they were made: 'full' or 'delta' (only the new steps)."""

    @property
    def profile(self) -> Any:
        """The wrapped source's metric profile (None for a source without one, the demo):
        the pages read the framework and the poll periods from it, as ``advise`` does."""
        return getattr(self.source, "profile", None)

    @property
    def name(self) -> str:
        return self.source.name

    @contextmanager
    def deadline(self, budget_s: float | None = None, what: str = "this page refresh",
                 hint: str | None = None) -> Iterator[Deadline | None]:
        """Run a page refresh's reads (``snapshot`` then ``range``…) under one wall-clock
        deadline of ``budget_s`` seconds (default: the wrapped source's query timeout, the
        figure the stale banner states; None for a source without one, e.g. the demo).

        Inside, a fetch is cut off at the deadline (the error names the budget, ``what`` and
        ``hint``: what sets it, e.g. ``"--timeout"``),
        a read asked for after it is not sent (the last good result marked stale, or a
        :class:`~collectors.errors.PrometheusTimeout`), and a wait for another caller's fetch
        ends by it. Nested scopes keep the sooner deadline. The deadline follows the reads
        into their worker threads (a context variable), not into threads the caller starts."""
        if budget_s is None:
            budget_s = getattr(self.source, "timeout_s", None)
        with deadline_scope(budget_s, what, hint) as d:
            yield d

    def health(self) -> SourceHealth:
        with self._lock:
            return SourceHealth(ok=self._last_error is None, last_error=self._last_error,
                                stale_since=self._stale_since,
                                last_success_at=self._last_success)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._errors.clear()

    def _align(self, t: float) -> float:
        return math.floor(t / self.align_s) * self.align_s

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        aligned = self._align(at)
        key, family = self._snapshot_keys(aligned, window_s)
        return self._get(key, family, lambda: self.source.snapshot(aligned, window_s))

    @staticmethod
    def _snapshot_keys(aligned: float, window_s: float) -> tuple[Hashable, Hashable]:
        return ("snapshot", aligned, window_s), ("snapshot", window_s)

    def _range_keys(self, start: float, end: float, step_s: float,
                    queues: Sequence[str] | None, signals: Collection[str] | None
                    ) -> tuple[Hashable, Hashable, tuple[float, float] | None, float, float]:
        """(key, family, step grid or None, start and end read) of a range read."""
        grid = (step_grid(start, end, step_s)
                if getattr(self.source, "incremental_range", False) else None)
        a, b = grid if grid is not None else (self._align(start), self._align(end))
        qkey = tuple(sorted(queues)) if queues else None
        skey = tuple(sorted(signals)) if signals is not None else None
        # one view is one family: the length asked for (the grid's rounding may add a step)
        family = ("range", round(end - start) if grid is not None else b - a, step_s, qkey,
                  skey)
        return ("range", a, b, step_s, qkey, skey), family, grid, a, b

    def read_times(self, at: float, start: float, end: float, step_s: float
                   ) -> tuple[float, float, float]:
        """(snapshot time, range start, range end) the cache reads the wrapped source at for
        ``snapshot(at, …)`` and ``range(start, end, step_s, …)``: a read made at these times
        elsewhere (the overview's streaming cold start, in batches) and handed to
        :meth:`store` is the one the cache would have made."""
        _, _, _, a, b = self._range_keys(start, end, step_s, None, None)
        return self._align(at), a, b

    def holds(self, window_s: float, start: float, end: float, step_s: float,
              signals: Collection[str] | None = None) -> bool:
        """Whether a last good snapshot of ``window_s`` and a last good range read of this
        view (all queues) are kept, the range one ending after ``start`` — so a read of the
        view now is a refresh (the range extended, :mod:`collectors.incremental`), not a
        cold read of the whole range."""
        _, family, _, _, _ = self._range_keys(start, end, step_s, None, signals)
        _, snap_family = self._snapshot_keys(0.0, window_s)
        with self._lock:
            data = self._last_good.get(family)
            return (snap_family in self._last_good and isinstance(data, RangeData)
                    and data.end > start)

    def store(self, at: float, window_s: float, snapshot: Snapshot, start: float, end: float,
              step_s: float, signals: Collection[str] | None, data: RangeData,
              took_s: float) -> None:
        """Keep a snapshot and a whole-fleet range read made elsewhere, at :meth:`read_times`,
        as if this cache had fetched them in ``took_s`` seconds: later calls of the same
        slot get them, an adapted life (``adapt × took_s``) reuses them for newer slots, and
        the next refresh extends the range read."""
        aligned = self._align(at)
        skey, sfamily = self._snapshot_keys(aligned, window_s)
        rkey, rfamily, _, _, _ = self._range_keys(start, end, step_s, None, signals)
        with self._lock:
            done = self._mono()
            for key, family, value in ((skey, sfamily, snapshot), (rkey, rfamily, data)):
                self._keep_locked(key, family, value, done, took_s)

    def _keep_locked(self, key: Hashable, family: Hashable, value: Any, done: float,
                     took_s: float) -> None:
        """Keep a good read (the lock held): its entry, its family's last good value and how
        long it took, the oldest evicted beyond :attr:`max_entries`; the source is healthy."""
        self._entries[key] = (done, value)
        self._entries.move_to_end(key)
        self._last_good[family] = value
        self._last_good.move_to_end(family)
        self._recent[family] = (done, took_s)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        while len(self._last_good) > self.max_entries:
            old_family, _ = self._last_good.popitem(last=False)
            self._recent.pop(old_family, None)
        self._last_error = None
        self._stale_since = None
        self._last_success = self._wall()

    def range(
        self, start: float, end: float, step_s: float, queues: Sequence[str] | None = None,
        signals: Collection[str] | None = None,
    ) -> RangeData:
        """The source's range read, shared as the module docstring says; of a source whose
        columns depend only on the samples before them (``incremental_range``), a read on
        the step grid extends the last read of the same view with the new steps only
        (:mod:`collectors.incremental`)."""
        key, family, grid, a, b = self._range_keys(start, end, step_s, queues, signals)

        def read(s: float, e: float) -> RangeData:
            return self.source.range(s, e, step_s, queues, signals)

        def fetch() -> RangeData:
            if grid is None:
                return read(a, b)
            with self._lock:
                prev = self._last_good.get(family)
            done = extend(prev, read, a, b, step_s)
            with self._lock:
                self.range_reads[done.mode] = self.range_reads.get(done.mode, 0) + 1
            return done.data

        return self._get(key, family, fetch)

    def _get(self, key: Hashable, family: Hashable, fetch: Callable[[], R]) -> R:
        while True:
            with self._lock:
                now = self._mono()
                entry = self._entries.get(key)
                if entry is not None and now - entry[0] < self.ttl_s:
                    self._entries.move_to_end(key)
                    cached: R = entry[1]
                    return cached
                recent = self._recent.get(family)
                if recent is not None and family in self._last_good:
                    life = self.adapt * recent[1]
                    if life > self.ttl_s and now - recent[0] < life:
                        reused: R = self._last_good[family]
                        return reused
                err = self._errors.get(key)
                if err is not None and now - err[0] < self.error_ttl_s:
                    stale: R = self._fallback(family, err[1])
                    return stale
                flight = self._flights.get(key)
                deadline = current_deadline()
                if flight is None:
                    if deadline is not None and deadline.remaining() <= 0:
                        spent: R = self._fallback(family, PrometheusTimeout(
                            f"{self.name} was not asked: {deadline.describe()} was spent "
                            "before this read could start"))
                        return spent
                    flight = _Flight()
                    self._flights[key] = flight
                    owner = True
                else:
                    owner = False
            if not owner:
                wait_s = self.max_wait_s
                if deadline is not None:
                    wait_s = min(wait_s, max(0.0, deadline.remaining()))
                if not flight.done.wait(wait_s):
                    waited = time.monotonic() - flight.started
                    limit = (deadline.describe() if deadline is not None
                             and deadline.remaining() <= 0 else f"{self.max_wait_s:g} s")
                    with self._lock:
                        late: R = self._fallback(family, PrometheusTimeout(
                            f"{self.name} did not answer within {limit}: the same read "
                            f"has been in progress for {waited:.0f} s"))
                        return late
                if flight.error is None:
                    shared: R = flight.result
                    return shared
                if isinstance(flight.error, PrometheusUnavailable):
                    with self._lock:
                        fallback: R = self._fallback(family, flight.error)
                        return fallback
                raise flight.error
            return self._fetch(key, family, fetch, flight)

    def _fetch(self, key: Hashable, family: Hashable, fetch: Callable[[], R], flight: _Flight) -> R:
        try:
            with self._lock:
                self.fetches += 1
            started = self._mono()
            result = fetch()
        except BaseException as exc:
            with self._lock:
                self._flights.pop(key, None)
                flight.error = exc
                if isinstance(exc, PrometheusUnavailable):
                    now = self._mono()
                    # Drop remembered failures that have expired: while Prometheus is down every
                    # new time slot is a new key, and the dict must not grow without bound.
                    for k in [k for k, (t, _) in self._errors.items()
                              if now - t >= self.error_ttl_s]:
                        del self._errors[k]
                    self._errors[key] = (now, exc)
                    self._last_error = str(exc)
                    if self._stale_since is None:
                        self._stale_since = self._wall()
                    flight.done.set()
                    old: R = self._fallback(family, exc)
                    return old
                self._last_error = str(exc)
                flight.done.set()
            raise
        with self._lock:
            self._flights.pop(key, None)
            self._errors.pop(key, None)
            done = self._mono()
            self._keep_locked(key, family, result, done, done - started)
            flight.result = result
            flight.done.set()
        return result

    def _fallback(self, family: Hashable, exc: BaseException) -> Any:
        """Caller holds the lock. The last good result of this kind, marked stale, or raise."""
        good = self._last_good.get(family)
        if good is None:
            # The same remembered exception is raised to many callers: drop the traceback so it
            # does not grow by a few frames with every raise.
            raise exc.with_traceback(None)
        since = self._stale_since
        when = time.strftime("%H:%M:%S", time.gmtime(since)) if since else "now"
        note = f"stale data: the source has been unavailable since {when} UTC ({exc})"
        if isinstance(good, RangeData):  # its warnings are its notes and its gap counts
            return dataclasses.replace(good, notes=(*good.notes, note))
        return dataclasses.replace(good, warnings=(*good.warnings, note))
