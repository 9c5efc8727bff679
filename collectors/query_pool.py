"""The concurrency of one read's queries: a pool of daemon threads running them in the
caller's context (deadline and :class:`~collectors.deadlines.QueryGroup`), the wait for
their answers bounded by that deadline, and a timeout message naming the phase the late
queries were in (queued, waiting for Prometheus, decoding).

Used by :class:`collectors.snapshot.PrometheusSource` (a snapshot's queries, a range read's
pipelined batches), the presence queries and the overview's refresh (its range read beside its
snapshot, :func:`in_background`)."""

from __future__ import annotations

import contextlib
import contextvars
import queue
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_EXCEPTION, Future, wait
from typing import Any, TypeVar

from collectors.deadlines import QueryGroup, current_deadline, current_group, query_group
from collectors.errors import PrometheusTimeout
from collectors.prom_client import track_phase

__all__ = ["QueryPool", "gather", "in_background", "read_group", "run_all", "tracked",
           "wait_bound_s"]

T = TypeVar("T")


class QueryPool:
    """Daemon threads running the queries of one read, each job in a copy of the context it
    was submitted from (its deadline and :class:`~collectors.deadlines.QueryGroup`); a job's
    failure is recorded in the group first, which cancels its siblings.

    Not a :class:`~concurrent.futures.ThreadPoolExecutor`: its workers are joined when the
    interpreter exits (``concurrent.futures.thread._python_exit``), so a command that has
    already failed would wait there for queries nobody needs — the "hung Prometheus costs two
    timeouts" of issue 12; and a worker picks the next queued job between a failure and the
    pool's shutdown. Daemon threads are not joined, and a cancelled group fails a job that
    starts late at once."""

    def __init__(self, workers: int, group: QueryGroup) -> None:
        self._workers = max(1, workers)
        self._group = group
        self._jobs: queue.SimpleQueue[tuple[Future[Any], contextvars.Context,
                                            Callable[[], Any]] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        fut: Future[T] = Future()
        self._jobs.put((fut, contextvars.copy_context(), fn))
        if len(self._threads) < self._workers:
            thread = threading.Thread(target=self._work, name="queuelens-query", daemon=True)
            self._threads.append(thread)
            thread.start()
        return fut

    def _work(self) -> None:
        while True:
            item = self._jobs.get()
            if item is None:
                return
            fut, ctx, fn = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                result = ctx.run(fn)
            except BaseException as exc:  # handed to the waiting caller
                self._group.fail(exc)
                fut.set_exception(exc)
            else:
                fut.set_result(result)

    def close(self) -> None:
        """Cancel the jobs not started and let the threads end (without waiting for them)."""
        while True:
            try:
                item = self._jobs.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        for _ in self._threads:
            self._jobs.put(None)


def gather(futures: Mapping[str, Future[T]], group: QueryGroup, bound_s: float,
            phases: Mapping[str, list[str]] | None = None) -> dict[str, T]:
    """The results of already submitted queries. The first failure of the group is raised at
    once (not a sibling's "cancelled"); the wait itself is bounded (every query has its own
    deadline, ``bound_s`` is a backstop), and its message names the phase the unfinished
    queries were in (``phases``: :func:`tracked`)."""
    done, not_done = wait(list(futures.values()), timeout=bound_s,
                          return_when=FIRST_EXCEPTION)
    if group.error is not None:
        raise group.error
    for fut in done:
        exc = fut.exception()
        if exc is not None:
            raise exc
    if not_done:
        group.cancel()
        late = Counter((phases or {}).get(k, ["query"])[0]
                       for k, fut in futures.items() if fut in not_done)
        raise PrometheusTimeout(
            f"Prometheus queries did not finish within {bound_s:g} s: {_phase_text(late)}")
    return {k: fut.result() for k, fut in futures.items()}


def _phase_text(late: Mapping[str, int]) -> str:
    """Which phase the unfinished queries of a read were in, the slowest first."""
    parts = []
    if late.get("decode"):
        parts.append(f"Prometheus had answered {late['decode']} of them, whose answers were "
                     "still being decoded (phase: decode) — answers too large to read in "
                     "time: narrow the selector (--selector, profile.selector)")
    if late.get("query"):
        parts.append(f"{late['query']} still waiting for Prometheus's answer (phase: query)")
    if late.get("queued"):
        parts.append(f"{late['queued']} not sent yet (all connections busy)")
    return "; ".join(parts) or "no query was left"


def tracked(fn: Callable[[], T], cell: list[str]) -> Callable[[], T]:
    """``fn`` recording its phase in ``cell[0]``: ``queued``, then ``query`` while the
    request is out and ``decode`` once the whole answer is in (set by the client,
    :func:`collectors.prom_client.track_phase`), ``done``."""

    def run() -> T:
        track_phase(cell)
        cell[0] = "query"
        try:
            return fn()
        finally:
            cell[0] = "done"
            track_phase(None)

    return run


def wait_bound_s(jobs: int, workers: int, timeout_s: float) -> float:
    """How long ``jobs`` queries on ``workers`` connections can take at most: the caller's
    deadline, else one query timeout per round of parallel queries (plus slack)."""
    deadline = current_deadline()
    rounds = -(-jobs // max(1, workers))
    bound = timeout_s * (rounds + 1) + 5.0
    if deadline is not None:
        bound = min(bound, max(0.0, deadline.remaining()) + 2.0)
    return bound


def run_all(
    jobs: Mapping[str, Callable[[], T]], parallelism: int, timeout_s: float
) -> dict[str, T]:
    """Run the callables concurrently in the current query group (one is made if there is
    none); the first exception cancels the others and is raised at once."""
    if parallelism <= 1 or len(jobs) <= 1:
        return {k: fn() for k, fn in jobs.items()}
    with read_group() as group:
        pool = QueryPool(min(parallelism, len(jobs)), group)
        phases = {k: ["queued"] for k in jobs}
        try:
            futures = {k: pool.submit(tracked(fn, phases[k])) for k, fn in jobs.items()}
            return gather(futures, group, wait_bound_s(len(jobs), parallelism, timeout_s),
                           phases)
        finally:
            pool.close()


def in_background(fn: Callable[[], T], name: str = "queuelens-read") -> Callable[[], T]:
    """Start ``fn`` (a whole read: a range read beside a snapshot) on a daemon thread in a copy
    of the caller's context (its deadline and query group: a page refresh has a deadline and
    no group, so a failure of one read cancels nothing of the other), and return the function
    that waits for it and returns its result or raises its exception.

    The wait is bounded by the caller's deadline (plus the slack of :func:`wait_bound_s`);
    without one it is the read's own bound: every query of it has its timeout and every
    gather of its answers its backstop, so the thread ends."""
    fut: Future[T] = Future()
    context = contextvars.copy_context()

    def run() -> None:
        try:
            fut.set_result(context.run(fn))
        except BaseException as exc:  # handed to the waiting caller
            fut.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()

    def join() -> T:
        deadline = current_deadline()
        if deadline is None:
            return fut.result()
        try:
            return fut.result(timeout=max(0.0, deadline.remaining()) + 2.0)
        except TimeoutError:
            raise PrometheusTimeout(
                f"the read did not finish within {deadline.describe()}") from None
    return join


@contextlib.contextmanager
def read_group() -> Iterator[QueryGroup]:
    """The query group of the read in progress, or a new one."""
    current = current_group()
    if current is not None:
        yield current
        return
    with query_group() as group:
        yield group
