"""The overview's streaming cold start (issue 22 §2): the first view of a large fleet fills
batch by batch instead of after one read of everything.

A cold overview of 10,000 queues read everything first — one snapshot and one range read of
the whole fleet, about 80 s on a real Prometheus — then planned every queue, and showed
nothing until then. Here, when the app's cache (:class:`collectors.cache.CachedSource`) holds
no read of the view, one background job per app (:class:`ColdStart`):

1. lists the queues with the processes running them (``queue_processes``: the topology, one
   instant query) over the settings' range plus the rate window;
2. cuts them into batches of about :attr:`StreamSettings.batch_queues` queues, **keeping the
   queues of one process together** (:func:`process_batches`): the plans share a process's
   ceilings (the API client's limiter, its CPU) out between its queues
   (:func:`dashboard.advice.process_totals`), so a batch holding every queue of its processes
   plans them exactly as the whole-fleet read does;
3. reads each batch — its ``snapshot(…, queues=batch)`` and ``range(…, batch, …)`` in
   parallel, :attr:`StreamSettings.in_flight` batches at a time, so Prometheus always has the
   next batch's queries while the last one's answers are decoded and planned — at the times
   the cache itself would read (:meth:`CachedSource.read_times`);
4. plans a batch when both its reads are complete (never from half of its data) and
   publishes the batch's advice (:class:`Progress`), which the overview shows with "Reading
   queues: 2,500 of 10,000 — about 40 s left" (:func:`models.formatting.progress_text`);
5. when the last batch lands, merges the batches into the whole-fleet snapshot and range read
   (:func:`merge_snapshots`, :func:`merge_ranges`: the queues in the order the whole-fleet
   read lists them) and hands them to the cache (:meth:`CachedSource.store`) as if it had
   read them itself: the next refresh is the normal one, the range read extended by its new
   steps (:mod:`collectors.incremental`).

**When it streams** (:attr:`StreamSettings.above_queues`, ``QUEUELENS_STREAM_ABOVE``, default
500): when the fleet has more queues than that. The grid is smooth at 500 queues and a cold
read of 500 takes a few seconds (bench_scale: 1,000 queues ≈ 8 s cold), so a smaller fleet
is read in one go as before, with no progress line. ``0`` streams every cold start.

**Bounded.** One job per app: a second tab joins the running job (it never starts
another); at most ``in_flight`` batches are read at once (each read is itself
``prometheus.parallelism`` queries wide); the job's reads share one wall-clock deadline
(``QUEUELENS_STREAM_DEADLINE``, default 10 min, the ``--deadline`` of a command — the reads of
one batch end by it, no batch starts after it) and a job nobody has asked about for
``QUEUELENS_STREAM_ABANDON`` (default 1 min: a tab polls every second while it streams) is
cancelled. :meth:`StreamJob.cancel` stops it between batches (the reads in flight end by
their own timeout; their answers are dropped). A failed or cut job keeps the rows it had, says
why, and is retried one refresh period later — a down Prometheus is not asked again by every
poll.

**Source requirements**: ``queue_processes(at, span_s)`` and ``snapshot(at, window_s,
queues)`` (:class:`collectors.snapshot.PrometheusSource` and :class:`collectors.demo.DemoSource`
have both); any other source is read in one go.
"""

from __future__ import annotations

import contextvars
import itertools
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from collectors.cache import CachedSource
from collectors.deadlines import Deadline, deadline_scope
from collectors.errors import CollectorError, ConfigError
from dashboard.advice import FleetAdvice
from models.errors import ModelInputError
from models.formatting import count_text, duration_text, progress_text
from models.measurements import RangeData, Snapshot
from models.settings import AnalysisSettings

__all__ = ["BatchSource", "ColdStart", "Progress", "StreamJob", "StreamSettings",
           "merge_ranges", "merge_snapshots", "process_batches"]

_LOG = logging.getLogger(__name__)
T = TypeVar("T")

MAX_BATCH_QUEUES = 2000
"""The largest batch asked for (a batch's queue names go into each query's URL: 250 names of
60 characters are ~15 kB, 2,000 ~120 kB, over common proxies' 64 kB — the default stays at
the range read's own 250, :data:`collectors.snapshot.RANGE_BATCH_QUEUES`)."""
MAX_IN_FLIGHT = 8
MAX_DEADLINE_S = 86400.0
_JOB_NUMBERS = itertools.count(1)
POLL_S = 0.1
"""How often the job looks at its cancel flag and deadline while waiting for a batch."""


@dataclass(frozen=True)
class StreamSettings:
    """When and how the overview's cold start streams (module docstring)."""

    above_queues: int = 500
    """Stream when the fleet has more queues than this (0: always)."""
    batch_queues: int = 250
    """Queues per batch (a process with more queues is one larger batch)."""
    first_batch_queues: int = 25
    """Queues of the first batch (at most ``batch_queues``), each next one twice the last up
    to ``batch_queues``: the
    first rows wait for the reads of 25 queues, not 250 (bench_stream: 1,000 queues, batches
    of 250 from the start, two in flight, showed the first rows after half the whole read)."""
    in_flight: int = 2
    """Batches read at once."""
    deadline_s: float = 600.0
    """Wall-clock budget of all the job's reads."""
    abandon_s: float = 60.0
    """A job nobody has polled for this long is cancelled."""

    def __post_init__(self) -> None:
        if self.above_queues < 0:
            raise ValueError(f"the stream threshold must be ≥ 0 queues, got {self.above_queues}")
        if self.first_batch_queues < 1:
            raise ValueError(f"the first batch must hold at least 1 queue, got "
                             f"{self.first_batch_queues}")
        if not 1 <= self.batch_queues <= MAX_BATCH_QUEUES:
            raise ValueError(f"the batch must hold 1 to {MAX_BATCH_QUEUES:,} queues, got "
                             f"{self.batch_queues}")
        if not 1 <= self.in_flight <= MAX_IN_FLIGHT:
            raise ValueError(f"1 to {MAX_IN_FLIGHT} batches can be in flight, got "
                             f"{self.in_flight}")
        for name, value in (("deadline", self.deadline_s), ("abandon time", self.abandon_s)):
            if not (math.isfinite(value) and 0 < value <= MAX_DEADLINE_S):
                raise ValueError(f"the {name} must be in (0, {MAX_DEADLINE_S:g}] s, got "
                                 f"{value!r}")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> StreamSettings:
        """From ``QUEUELENS_STREAM_ABOVE``, ``_BATCH``, ``_FIRST_BATCH``, ``_DEADLINE`` and
        ``_ABANDON`` (unset
        or empty: the default); a bad value is a :class:`ConfigError` naming the variable."""
        from collectors.timeparse import parse_duration

        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        parsers: tuple[tuple[str, str, Callable[[str], Any]], ...] = (
            ("QUEUELENS_STREAM_ABOVE", "above_queues", int),
            ("QUEUELENS_STREAM_BATCH", "batch_queues", int),
            ("QUEUELENS_STREAM_FIRST_BATCH", "first_batch_queues", int),
            ("QUEUELENS_STREAM_DEADLINE", "deadline_s", parse_duration),
            ("QUEUELENS_STREAM_ABANDON", "abandon_s", parse_duration),
        )
        for var, name, parse in parsers:
            text = env.get(var, "").strip()
            if not text:
                continue
            try:
                values[name] = parse(text)
            except ValueError as exc:
                raise ConfigError(f"{var}: {exc}") from None
        try:
            return cls(**values)
        except ValueError as exc:
            raise ConfigError(f"the overview's streaming settings: {exc}.") from None


@runtime_checkable
class BatchSource(Protocol):
    """A source the cold start can read in batches."""

    @property
    def name(self) -> str: ...

    def queue_processes(self, at: float, span_s: float) -> Mapping[str, Sequence[str]]: ...

    def snapshot(self, at: float, window_s: float, queues: Sequence[str] | None = None
                 ) -> Snapshot: ...

    def range(self, start: float, end: float, step_s: float,
              queues: Sequence[str] | None = None,
              signals: Collection[str] | None = None) -> RangeData: ...


def process_batches(listing: Mapping[str, Sequence[str]], size: int,
                    first: int | None = None) -> list[list[str]]:
    """The queues of ``listing`` ({queue: processes running it}, in its order) in batches of
    about ``size``: queues that share a process — directly or through another queue run by
    both — are never split (union-find over the processes), each group goes whole into the
    current batch, and a batch is closed once it holds its size or more (a group larger than
    that is one batch of its own). A queue whose process is not known is a group of one.
    Groups are placed in the order of their first queue.

    ``first``: the first batch's size, each next one twice the last, up to ``size`` (the
    first rows come after the reads of a few queues, not of a whole batch)."""
    if size < 1 or (first is not None and first < 1):
        raise ValueError(f"a batch holds at least one queue, got {first or size}")
    target = min(size, first) if first is not None else size
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    owner: dict[str, str] = {}
    for q, procs in listing.items():
        parent.setdefault(q, q)
        for p in procs:
            if p in owner:
                a, b = find(owner[p]), find(q)
                if a != b:
                    parent[b] = a
            else:
                owner[p] = q
    groups: dict[str, list[str]] = {}
    for q in listing:
        groups.setdefault(find(q), []).append(q)
    batches: list[list[str]] = []
    current: list[str] = []
    for group in groups.values():
        if current and len(current) + len(group) > target:
            batches.append(current)
            current, target = [], min(size, 2 * target)
        current.extend(group)
        if len(current) >= target:
            batches.append(current)
            current, target = [], min(size, 2 * target)
    if current:
        batches.append(current)
    return batches


def _union(parts: Sequence[Sequence[str]]) -> tuple[str, ...]:
    out: dict[str, None] = {}
    for part in parts:
        out.update(dict.fromkeys(part))
    return tuple(out)


def _ordered(names: Collection[str], order: Mapping[str, int]) -> list[str]:
    """``names`` in the whole-fleet read's order (names it does not list last, sorted)."""
    end = len(order)
    return sorted(names, key=lambda q: (order.get(q, end), q if q not in order else ""))


def merge_snapshots(parts: Sequence[Snapshot], order: Mapping[str, int]) -> Snapshot:
    """One snapshot of the batches' queues, in the whole-fleet read's ``order``."""
    if not parts:
        raise ValueError("no snapshot to merge")
    by_name = {q.queue: q for s in parts for q in s.queues}
    first = parts[0]
    return Snapshot(at=first.at, window_s=first.window_s, source=first.source,
                    queues=[by_name[q] for q in _ordered(by_name, order)],
                    warnings=_union([s.warnings for s in parts]))


def merge_ranges(parts: Sequence[RangeData], order: Mapping[str, int]) -> RangeData:
    """One range read of the batches' queues (same start, end, step and times), in the
    whole-fleet read's ``order``; a signal a batch does not have is NaN in its rows (a
    whole-fleet read keeps a signal when any queue has a value of it, NaN elsewhere)."""
    if not parts:
        raise ValueError("no range read to merge")
    first = parts[0]
    for p in parts[1:]:
        if (p.start, p.end, p.step_s) != (first.start, first.end, first.step_s) or not \
                np.array_equal(p.t, first.t):
            raise ValueError("the batches' range reads are not on the same time grid")
    where = {q: (k, i) for k, p in enumerate(parts) for i, q in enumerate(p.queues)}
    names = _ordered(where, order)
    dest: list[list[int]] = [[] for _ in parts]
    src: list[list[int]] = [[] for _ in parts]
    for r, q in enumerate(names):
        k, i = where[q]
        dest[k].append(r)
        src[k].append(i)
    signals: dict[str, np.ndarray] = {}
    for name in _union([tuple(p.signals) for p in parts]):
        out = np.full((len(names), len(first.t)), np.nan)
        for k, p in enumerate(parts):
            m = p.signals.get(name)
            if m is not None and dest[k]:
                out[dest[k]] = m[src[k]]
        signals[name] = out
    gap = None
    if any(p.gap is not None for p in parts):
        gap = np.zeros((len(names), len(first.t)), dtype=bool)
        for k, p in enumerate(parts):
            if p.gap is not None and dest[k]:
                gap[dest[k]] = p.gap[src[k]]
    return RangeData(start=first.start, end=first.end, step_s=first.step_s,
                     source=first.source, queues=tuple(names), t=first.t, signals=signals,
                     notes=_union([p.notes for p in parts]), gap=gap)


def merge_advice(parts: Sequence[FleetAdvice], snapshot: Snapshot,
                 data: RangeData) -> FleetAdvice:
    """The batches' advice as one fleet's, queues in the merged ``snapshot``'s order."""
    by_name = {qa.queue: qa for a in parts for qa in a.queues}
    first = parts[0]
    warnings = list(snapshot.warnings)
    warnings += [w for w in data.warnings if w not in warnings]
    return replace(first, queues=tuple(by_name[q.queue] for q in snapshot.queues
                                       if q.queue in by_name), warnings=tuple(warnings))


@dataclass(frozen=True)
class Batch:
    """One batch's reads and the advice computed from them."""

    index: int
    queues: tuple[str, ...]
    snapshot: Snapshot
    data: RangeData
    advice: FleetAdvice | None
    note: str = ""
    """Why there is no advice (the advisor refused the batch's input), or empty."""


@dataclass(frozen=True)
class Progress:
    """What a job has published, as one poll sees it."""

    job: int
    """The job's number (unique in the process: the jobs of every app count on one)."""
    version: int
    """Grows with every batch published (and when the job ends)."""
    at: float
    """The time the job reads the source at."""
    total: int | None
    """Queues listed (None: not listed yet)."""
    done: int
    """Queues of the batches published."""
    left_s: float | None
    """Estimated seconds left (None: no batch has landed yet; :meth:`StreamJob.progress`)."""
    batches: tuple[Batch, ...]
    """The batches landed (once finished with every batch planned: none, the merged
    ``snapshot``, ``data`` and ``advice`` hold them)."""
    finished: bool = False
    """Every batch landed, and the whole result went into the cache."""
    error: str | None = None
    """Why the job stopped early (its rows stay)."""
    streamed: bool = True
    """False: the fleet is small enough to be read in one go (the overview does that)."""
    advice: FleetAdvice | None = None
    snapshot: Snapshot | None = None
    data: RangeData | None = None
    """The merged whole-fleet advice, snapshot and range read, once finished."""

    @property
    def running(self) -> bool:
        return self.streamed and not self.finished and self.error is None

    def text(self) -> str:
        """The progress line ('' once finished)."""
        if self.finished or not self.streamed:
            return ""
        if self.total is None:
            what = "Listing the queues"
            return f"{what} (the first rows follow)…" if self.error is None else \
                f"{what} stopped: {self.error}"
        line = progress_text("Reading queues", self.done, self.total,
                             self.left_s if self.error is None else None)
        if self.error is not None:
            return f"{line} — stopped: {self.error} The rows read are shown; the next " \
                   "refresh tries again."
        return line


Plan = Callable[[Snapshot, RangeData], FleetAdvice]
"""Plans and verdicts of a batch from its snapshot and range read (no source call)."""


class StreamJob:
    """One cold start's background read (:class:`ColdStart` starts and joins it)."""

    def __init__(self, number: int, cache: CachedSource, source: BatchSource,
                 settings: AnalysisSettings, stream: StreamSettings, at: float,
                 signals: Collection[str], plan: Plan,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.number = number
        self.cache = cache
        self.source = source
        self.settings = settings
        self.stream = stream
        self.signals = frozenset(signals)
        self.plan = plan
        self._mono = monotonic
        self.view = (settings, self.signals)
        self.at = at
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._cancel_reason = ""
        self.listed = threading.Event()
        """Set once the queues are listed (or the listing failed)."""
        self.ended = threading.Event()
        self.ended_at: float | None = None
        self.last_poll = monotonic()
        self._started = monotonic()
        self._first_read: float | None = None
        self._progress = Progress(number, 0, at, None, 0, None, ())
        self._thread = threading.Thread(target=self._run, name=f"overview-stream-{number}",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def progress(self) -> Progress:
        """What was published, with the time left estimated now: the rate so far (queues
        read ÷ time since the first batch was asked for) applied to the queues left, so a
        batch that takes longer than the last ones makes the estimate grow, not stall."""
        with self._lock:
            p = self._progress
            first = self._first_read
        if not p.running or not p.done or first is None or p.total is None:
            return p
        return replace(p, left_s=(self._mono() - first) / p.done * (p.total - p.done))

    def touch(self) -> None:
        """Someone is watching (a poll): the job is not abandoned."""
        with self._lock:
            self.last_poll = self._mono()

    def cancel(self, reason: str = "it was cancelled") -> None:
        """Stop between batches (the reads in flight end by their timeout, unused)."""
        with self._lock:
            if not self._cancel_reason:
                self._cancel_reason = reason
        self._cancel.set()

    def join(self, timeout_s: float) -> bool:
        return self.ended.wait(timeout_s)

    # --- the job ------------------------------------------------------------------------

    def _publish(self, **changes: Any) -> None:
        with self._lock:
            p = self._progress
            self._progress = replace(p, version=p.version + 1, **changes)

    def _end(self, **changes: Any) -> None:
        self._publish(**changes)
        with self._lock:
            self.ended_at = self._mono()
        self.listed.set()
        self.ended.set()

    def _run(self) -> None:
        s = self.settings
        budget = Deadline.after(self.stream.deadline_s, "the overview's cold start",
                                "QUEUELENS_STREAM_DEADLINE")
        pool = ThreadPoolExecutor(max_workers=2 * self.stream.in_flight,
                                  thread_name_prefix=f"overview-stream-{self.number}")
        try:
            with deadline_scope(budget):
                self._stream(s, budget, pool)
        except (CollectorError, ConfigError) as exc:
            self._end(error=_sentence(str(exc)))
        except _Stopped as exc:
            self._end(error=_sentence(str(exc)))
        except Exception as exc:  # a bug: logged with its traceback, the page says so
            _LOG.exception("the overview's cold start failed")
            self._end(error=f"Reading in batches failed ({type(exc).__name__}).")
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def _check(self, budget: Deadline) -> None:
        if self._cancel.is_set():
            raise _Stopped(f"The read stopped: {self._cancel_reason}.")
        with self._lock:
            idle = self._mono() - self.last_poll
        if idle > self.stream.abandon_s:
            raise _Stopped(f"The read stopped: nobody has looked at it for "
                           f"{duration_text(idle, 2)}.")
        if budget.remaining() <= 0:
            raise _Stopped(f"The read stopped: {budget.describe()} was spent (set by "
                           f"{budget.hint})")

    def _wait(self, future: Future[T], budget: Deadline) -> T:
        while True:
            self._check(budget)
            done, _ = wait([future], timeout=POLL_S)
            if done:
                return future.result()

    def _stream(self, s: AnalysisSettings, budget: Deadline, pool: ThreadPoolExecutor) -> None:
        at, start, end = self.cache.read_times(self.at, self.at - s.range_s, self.at,
                                               s.step_s)
        listing = self.source.queue_processes(at, s.range_s + s.step_s + s.window_s)
        total = len(listing)
        if total <= self.stream.above_queues:
            self._end(total=total, streamed=False)
            return
        self._publish(total=total, at=at)
        self.listed.set()
        order = {q: i for i, q in enumerate(listing)}
        batches = process_batches(listing, self.stream.batch_queues,
                                  self.stream.first_batch_queues)
        signals = sorted(self.signals)

        def submit(batch: list[str]) -> tuple[Future[Snapshot], Future[RangeData]]:
            # each read in its own copy of this context: it carries the job's deadline
            snap = pool.submit(contextvars.copy_context().run, self.source.snapshot, at,
                               s.window_s, batch)
            rng = pool.submit(contextvars.copy_context().run, self.source.range, start, end,
                              s.step_s, batch, signals)
            return snap, rng

        with self._lock:
            self._first_read = self._mono()
        pending = [submit(b) for b in batches[:self.stream.in_flight]]
        landed: list[Batch] = []
        done = 0
        for k, batch in enumerate(batches):
            snap_f, rng_f = pending.pop(0)
            snapshot = self._wait(snap_f, budget)
            data = self._wait(rng_f, budget)
            nxt = k + self.stream.in_flight
            if nxt < len(batches):
                pending.append(submit(batches[nxt]))
            self._check(budget)
            try:
                advice: FleetAdvice | None = self.plan(snapshot, data)
                note = ""
            except (ModelInputError, CollectorError) as exc:
                advice, note = None, f"No advisor verdicts for {count_text(len(batch))} " \
                    f"queues: {exc}"
            landed.append(Batch(k, tuple(batch), snapshot, data, advice, note))
            done += len(batch)
            self._publish(done=done, batches=tuple(landed))
        merged_snap = merge_snapshots([b.snapshot for b in landed], order)
        merged_data = merge_ranges([b.data for b in landed], order)
        advices = [b.advice for b in landed]
        merged_advice = (merge_advice([a for a in advices if a is not None], merged_snap,
                                      merged_data)
                         if advices and all(a is not None for a in advices) else None)
        self.cache.store(self.at, s.window_s, merged_snap, self.at - s.range_s, self.at,
                         s.step_s, self.signals, merged_data,
                         took_s=self._mono() - self._started)
        # the batches' own reads are dropped once the merged ones hold everything (their
        # matrices are as large as the whole read's); kept when a batch has no advice, whose
        # rows say so
        self._end(finished=True, left_s=0.0, advice=merged_advice, snapshot=merged_snap,
                  data=merged_data, batches=() if merged_advice is not None else tuple(landed))


class _Stopped(Exception):
    """The job was cancelled, abandoned or out of time (the message says which)."""


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


class ColdStart:
    """The overview's cold starts of one app: at most one :class:`StreamJob` at a time."""

    def __init__(self, cache: CachedSource, settings: AnalysisSettings,
                 stream: StreamSettings | None = None, *, retry_s: float = 15.0,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        """``retry_s``: how long a finished job's result is shown before the normal path
        takes over, and how long a failed job is shown before the next one starts (the
        app's refresh period)."""
        self.cache = cache
        self.settings = settings
        self.stream = stream or StreamSettings()
        self.retry_s = retry_s
        self._mono = monotonic
        self._lock = threading.Lock()
        self._job: StreamJob | None = None

    @property
    def job(self) -> StreamJob | None:
        with self._lock:
            return self._job

    def batch_source(self) -> BatchSource | None:
        inner = self.cache.source
        return inner if isinstance(inner, BatchSource) else None

    def poll(self, at: float, signals: Collection[str], plan: Plan,
             wait_listing_s: float | None = None) -> Progress | None:
        """The running (or just ended) job's progress — joining it, or starting one when
        the cache holds no read of the view — or None: read the view the normal way (the
        cache holds it, the fleet is small, or the source cannot be read in batches).

        A new job lists the queues first; this waits for the listing at most
        ``wait_listing_s`` (default: the source's query timeout) to tell a small fleet
        (None: read it the normal way) from a large one."""
        s = self.settings
        view = (s, frozenset(signals))
        with self._lock:
            job = self._job
            if job is not None and job.view == view:
                job.touch()
                p = job.progress()
                if p.running:
                    return p
                ended = job.ended_at if job.ended_at is not None else self._mono()
                if self._mono() - ended < self.retry_s:
                    # the whole result or the error, for a refresh period; a small fleet's
                    # listing is not repeated by every poll meanwhile
                    return p if p.streamed else None
        if self.cache.holds(s.window_s, at - s.range_s, at, s.step_s, signals):
            return None
        source = self.batch_source()
        if source is None:
            return None
        with self._lock:
            job = self._job
            if job is not None and job.view == view and job.progress().running:
                return job.progress()  # another tab started it meanwhile
            if job is not None:
                job.cancel("another view is read")
            job = StreamJob(next(_JOB_NUMBERS), self.cache, source, s, self.stream, at, signals,
                            plan, self._mono)
            self._job = job
            job.start()
        limit = wait_listing_s if wait_listing_s is not None else float(
            getattr(source, "timeout_s", 30.0) or 30.0)
        job.listed.wait(limit)
        p = job.progress()
        if not p.streamed:
            return None
        return p

    def cancel(self) -> None:
        with self._lock:
            job = self._job
        if job is not None:
            job.cancel()

