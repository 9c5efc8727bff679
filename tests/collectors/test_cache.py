"""CachedSource: TTL, alignment, in-flight de-duplication, stale fallback and recovery."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pandas as pd
import pytest

from collectors.cache import CachedSource
from collectors.errors import BadQuery, PrometheusTimeout, PrometheusUnreachable
from models.measurements import QueueSnapshot, RangeData, Snapshot


class CountingSource:
    """A Source stand-in that counts calls and can be told to fail or block."""

    name = "counting"

    def __init__(self) -> None:
        self.calls: list[tuple[object, ...]] = []
        self.fail: Exception | None = None
        self.gate: threading.Event | None = None
        self.lock = threading.Lock()

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        with self.lock:
            self.calls.append(("snapshot", at, window_s))
        if self.gate is not None:
            self.gate.wait(5)
        if self.fail is not None:
            raise self.fail
        return Snapshot(at=at, window_s=window_s, source=self.name,
                        queues=[QueueSnapshot(queue="q", arrival_rate_per_s=float(at))])

    def range(self, start: float, end: float, step_s: float,
              queues: Sequence[str] | None = None, signals: object = None) -> RangeData:
        with self.lock:
            self.calls.append(("range", start, end, step_s))
        if self.fail is not None:
            raise self.fail
        return RangeData.from_frame(start=start, end=end, step_s=step_s, source=self.name,
                         frame=pd.DataFrame({"queue": [], "signal": [], "t": [], "value": []}))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_same_slot_is_served_from_cache_until_ttl() -> None:
    src, clock = CountingSource(), Clock()
    cache = CachedSource(src, ttl_s=10, align_s=5, monotonic=clock)
    a = cache.snapshot(1001.0, 300)
    b = cache.snapshot(1004.9, 300)  # same 5 s slot
    assert a is b
    assert len(src.calls) == 1
    assert src.calls[0] == ("snapshot", 1000.0, 300)  # the aligned time is queried
    cache.snapshot(1004.0, 60)  # another window: another key
    assert len(src.calls) == 2
    clock.now += 10.1
    cache.snapshot(1001.0, 300)
    assert len(src.calls) == 3


def test_concurrent_callers_share_one_fetch() -> None:
    src = CountingSource()
    src.gate = threading.Event()
    cache = CachedSource(src, ttl_s=30)
    results: list[Snapshot] = []
    threads = [threading.Thread(target=lambda: results.append(cache.snapshot(2000.0, 300)))
               for _ in range(10)]
    for t in threads:
        t.start()
    time.sleep(0.1)
    src.gate.set()
    for t in threads:
        t.join(5)
    assert len(results) == 10
    assert len(src.calls) == 1
    assert all(r is results[0] for r in results)


def test_unavailable_serves_last_good_marks_stale_and_recovers() -> None:
    src, clock = CountingSource(), Clock()
    wall = Clock()
    cache = CachedSource(src, ttl_s=5, error_ttl_s=3, monotonic=clock, wall=wall)
    good = cache.snapshot(1000.0, 300)
    assert cache.health().ok
    clock.now += 6
    src.fail = PrometheusUnreachable("Prometheus at http://p:9090 is unreachable: refused")
    stale = cache.snapshot(1010.0, 300)
    assert stale.queues == good.queues
    assert stale.at == good.at
    assert any("stale data" in w and "unreachable" in w for w in stale.warnings)
    health = cache.health()
    assert not health.ok
    assert health.stale_since == wall.now
    assert "unreachable" in (health.last_error or "")
    # within error_ttl a down source is not asked again
    calls = len(src.calls)
    cache.snapshot(1010.0, 300)
    assert len(src.calls) == calls
    clock.now += 3.1
    src.fail = None
    fresh = cache.snapshot(1010.0, 300)
    assert fresh.at == 1010.0
    assert cache.health().ok
    assert cache.health().stale_since is None


def test_an_unavailable_source_serves_the_last_range_read_marked_stale() -> None:
    src, clock = CountingSource(), Clock()
    cache = CachedSource(src, ttl_s=5, error_ttl_s=3, monotonic=clock)
    good = cache.range(400.0, 1000.0, 60.0)
    clock.now += 6
    src.fail = PrometheusUnreachable("Prometheus at http://p:9090 is unreachable: refused")
    stale = cache.range(460.0, 1060.0, 60.0)
    assert (stale.start, stale.end) == (good.start, good.end)
    assert any("stale data" in w and "unreachable" in w for w in stale.warnings)


def test_unavailable_without_history_raises() -> None:
    src = CountingSource()
    src.fail = PrometheusUnreachable("down")
    with pytest.raises(PrometheusUnreachable):
        CachedSource(src).snapshot(1000.0, 300)


def test_bad_query_is_never_masked_by_stale_data() -> None:
    src = CountingSource()
    cache = CachedSource(src, ttl_s=1)
    cache.range(0, 600, 60)
    src.fail = BadQuery("rejected")
    with pytest.raises(BadQuery):
        cache.range(600, 1200, 60)
    assert not cache.health().ok


def test_bounded_size() -> None:
    src = CountingSource()
    cache = CachedSource(src, max_entries=3)
    for i in range(5):
        cache.snapshot(1000.0 + 10 * i, 300)
    cache.snapshot(1000.0, 300)  # evicted: fetched again
    assert len(src.calls) == 6


def test_remembered_failures_and_fallbacks_stay_bounded_during_a_long_outage() -> None:
    src, clock = CountingSource(), Clock()
    cache = CachedSource(src, ttl_s=5, align_s=5, error_ttl_s=3, max_entries=4, monotonic=clock)
    for window in range(1, 11):  # ten kinds of snapshot, each with its own last-good result
        cache.snapshot(1000.0, float(window))
    assert len(cache._last_good) == 4
    src.fail = PrometheusUnreachable("down")
    for i in range(200):  # Prometheus down while the clock ticks: a new slot every call
        clock.now += 5
        try:
            cache.snapshot(1000.0 + 5 * i, 10.0)
        except PrometheusUnreachable:
            pytest.fail("the last good snapshot of that window should have been served")
    assert len(cache._errors) <= 1


def test_repeated_failure_without_history_does_not_grow_the_traceback() -> None:
    src = CountingSource()
    src.fail = PrometheusUnreachable("down")
    cache = CachedSource(src, error_ttl_s=60)
    depths = []
    for _ in range(5):
        with pytest.raises(PrometheusUnreachable) as info:
            cache.snapshot(1000.0, 300)
        tb, n = info.value.__traceback__, 0
        while tb is not None:
            n, tb = n + 1, tb.tb_next
        depths.append(n)
    assert len(src.calls) == 1  # remembered for error_ttl_s
    assert depths[-1] == depths[1]


class SlowSource(CountingSource):
    """Each snapshot takes ``cost_s`` seconds of the (fake) monotonic clock."""

    def __init__(self, clock: Clock, cost_s: float) -> None:
        super().__init__()
        self.clock, self.cost_s = clock, cost_s

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        self.clock.now += self.cost_s
        return super().snapshot(at, window_s)


def test_cache_life_adapts_to_a_slow_source() -> None:
    clock = Clock()
    src = SlowSource(clock, cost_s=20.0)  # slower than the 15 s refresh
    cache = CachedSource(src, ttl_s=15, align_s=5, adapt=4, monotonic=clock)
    first = cache.snapshot(1000.0, 300)
    clock.now += 30
    again = cache.snapshot(1030.0, 300)  # a newer slot, but within 4 × 20 s of the fetch
    assert again is first
    assert len(src.calls) == 1
    clock.now += 51  # 81 s after the fetch finished: past 4 × its 20 s
    newer = cache.snapshot(1081.0, 300)
    assert len(src.calls) == 2
    assert newer.at == 1080.0


def test_fast_source_keeps_the_plain_ttl() -> None:
    clock = Clock()
    src = SlowSource(clock, cost_s=0.05)
    cache = CachedSource(src, ttl_s=15, align_s=5, adapt=4, monotonic=clock)
    cache.snapshot(1000.0, 300)
    cache.snapshot(1005.0, 300)  # a new slot: 4 × 0.05 s is far below the ttl
    assert len(src.calls) == 2


# --- issue 12: waiting with a deadline -------------------------------------------------------


def _blocked_fetch(cache: CachedSource, src: CountingSource) -> threading.Thread:
    """Start an owner fetch that blocks on ``src.gate`` until the test releases it."""
    src.gate = threading.Event()
    owner = threading.Thread(target=lambda: cache.snapshot(2000.0, 300), daemon=True)
    owner.start()
    deadline = time.monotonic() + 5
    while not src.calls and time.monotonic() < deadline:
        time.sleep(0.01)
    assert src.calls
    return owner


def test_a_waiter_gives_up_at_its_own_deadline_not_at_the_fetch() -> None:
    src = CountingSource()
    cache = CachedSource(src, ttl_s=30)
    owner = _blocked_fetch(cache, src)
    t0 = time.monotonic()
    with cache.deadline(0.3), pytest.raises(PrometheusTimeout) as info:
        cache.snapshot(2000.0, 300)
    assert time.monotonic() - t0 < 2.0
    assert "0.3 s budget of this page refresh" in str(info.value)
    assert len(src.calls) == 1  # it waited for the fetch in flight, it did not start its own
    src.gate.set()  # type: ignore[union-attr]
    owner.join(5)


def test_a_waiter_without_a_deadline_waits_at_most_max_wait_s_and_gets_the_last_good() -> None:
    src, clock = CountingSource(), Clock()
    cache = CachedSource(src, ttl_s=1, max_wait_s=0.3, monotonic=clock)
    cache.snapshot(1000.0, 300)
    clock.now += 2
    owner = _blocked_fetch(cache, src)
    t0 = time.monotonic()
    stale = cache.snapshot(2000.0, 300)
    assert time.monotonic() - t0 < 2.0
    assert stale.at == 1000.0
    assert any("stale data" in w and "in progress" in w for w in stale.warnings)
    src.gate.set()  # type: ignore[union-attr]
    owner.join(5)
    assert cache.health().ok  # a waiter's impatience is not a source failure


def test_a_read_after_the_budget_is_spent_is_not_sent() -> None:
    src = CountingSource()
    cache = CachedSource(src, ttl_s=30)
    good = cache.range(0, 600, 60)
    with cache.deadline(0.05):
        time.sleep(0.1)
        stale = cache.range(600, 1200, 60)
        with pytest.raises(PrometheusTimeout, match="was spent before"):
            cache.snapshot(1000.0, 300)
    assert len(src.calls) == 1
    assert stale.start == good.start
    assert any("budget" in w for w in stale.warnings)


def test_the_page_budget_defaults_to_the_source_timeout() -> None:
    class Timed(CountingSource):
        timeout_s = 7.0

    with CachedSource(Timed()).deadline() as d:
        assert d is not None
        assert d.budget_s == 7.0
    assert CachedSource(Timed()).max_wait_s == 7.0
    with CachedSource(CountingSource()).deadline() as none:  # the demo states no timeout
        assert none is None
    with pytest.raises(ValueError, match="max_wait_s"):
        CachedSource(CountingSource(), max_wait_s=0)
