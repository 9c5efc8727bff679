"""The fleet's presence answer (:meth:`collectors.snapshot.PrometheusSource._presence_answer`):
asked once by reads that ask at once, handed to a read of named queues only when known, and a
failure handed to the reads waiting for it — with a client whose query blocks until released,
so the overlaps are the test's, not the scheduler's."""

from __future__ import annotations

import threading
import time
from typing import Any, cast

import pytest

from collectors.config import ConnectionSettings
from collectors.errors import PrometheusServerError
from collectors.prom_client import InstantResult, PrometheusClient
from collectors.snapshot import PrometheusSource


class _Gated:
    """A client whose queries wait for :attr:`release` and count themselves."""

    def __init__(self, fail: bool = False) -> None:
        self.settings = ConnectionSettings(url="http://127.0.0.1:9", timeout_s=10.0)
        self.release = threading.Event()
        self.asked: list[str] = []
        self.fail = fail

    def query(self, promql: str, at: float) -> InstantResult:
        self.asked.append(promql)
        assert self.release.wait(10.0)
        if self.fail:
            raise PrometheusServerError("HTTP 503 from Prometheus")
        return InstantResult([])


def _source(client: _Gated) -> PrometheusSource:
    return PrometheusSource(cast(PrometheusClient, client))


def _waiters(source: PrometheusSource, n: int) -> tuple[list[threading.Thread], list[Any]]:
    out: list[Any] = []

    def ask() -> None:
        try:
            out.append(source._fleet_presence("count(x)", 100.0))
        except Exception as exc:
            out.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(n)]
    for t in threads:
        t.start()
    return threads, out


def _waiting_on_the_request(source: PrometheusSource, n: int) -> None:
    """Until ``n`` reads wait on the one pending request's answer (the threads blocked in its
    Future's condition: CPython's ``Condition._waiters``), so that what the test asserts next
    is the sharing, not a late thread finding the answer kept."""
    def count() -> int:
        with source._presence_lock:
            pending = list(source._presence_pending.values())
        conditions: list[Any] = [f._condition for f in pending]
        return sum(len(c._waiters) for c in conditions)
    _until(lambda: count() >= n)


def _until(cond: Any) -> None:
    deadline = time.monotonic() + 10.0
    while not cond():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_reads_asking_at_once_share_one_request() -> None:
    client = _Gated()
    source = _source(client)
    threads, got = _waiters(source, 3)
    _until(lambda: client.asked)
    _waiting_on_the_request(source, 2)  # the other two wait on the first one's request
    client.release.set()
    for t in threads:
        t.join(10.0)
    assert client.asked == ["count(x)"]
    assert len(got) == 3
    assert all(isinstance(g, InstantResult) for g in got)
    assert source._fleet_presence("count(x)", 100.0) is got[0]  # kept for the instant
    assert client.asked == ["count(x)"]
    assert source._fleet_presence("count(x)", 160.0) is not None  # another instant: asked
    assert len(client.asked) == 2


def test_a_read_of_named_queues_gets_the_answer_only_when_it_is_known() -> None:
    client = _Gated()
    source = _source(client)
    assert source._known_presence("count(x)", 100.0) is None  # asked in the background
    _until(lambda: client.asked)
    assert source._known_presence("count(x)", 100.0) is None  # still not known: no wait
    client.release.set()
    _until(lambda: source._known_presence("count(x)", 100.0) is not None)
    assert client.asked == ["count(x)"]


def test_a_failed_request_is_every_waiters_error_and_is_asked_again() -> None:
    client = _Gated(fail=True)
    source = _source(client)
    threads, got = _waiters(source, 2)
    _until(lambda: client.asked)
    _waiting_on_the_request(source, 1)  # a failure is not kept: a late read would ask again
    client.release.set()
    for t in threads:
        t.join(10.0)
    assert len(got) == 2
    assert all(isinstance(g, PrometheusServerError) for g in got)
    assert client.asked == ["count(x)"]
    # a named read after a failed background answer reads raw (None) and asks again
    assert source._known_presence("count(x)", 100.0) is None
    _until(lambda: len(client.asked) == 2)
    with pytest.raises(PrometheusServerError):
        source._fleet_presence("count(x)", 100.0)
