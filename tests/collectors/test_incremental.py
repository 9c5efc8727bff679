"""Range reads that read only what is new (collectors.incremental, issue 22), against a source
whose every column is a function of the samples before it — as a Prometheus range query's is —
so a fresh full read is the independent reference the merged read must equal."""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence

import numpy as np
import pytest

from collectors.cache import CachedSource
from collectors.incremental import MAX_STEP_S, step_grid
from models.measurements import RangeData, Snapshot
from tests.support.equality import assert_same_range

STEP = 15.0
LENGTH = 600.0


class _Columns:
    """Evaluates each column at its own time (a sine per queue, NaN in a scrape gap), like
    ``query_range``; records every range asked for; its past can be rewritten."""

    name = "fake-prometheus"
    incremental_range = True

    def __init__(self, queues: Sequence[str] = ("a", "b", "c")) -> None:
        self.queues = tuple(queues)
        self.asked: list[tuple[float, float]] = []
        self.offset = 0.0
        self.gap: tuple[float, float] | None = None
        self.errors_until = 1_699_999_700.0

    def value(self, i: int, t: np.ndarray) -> np.ndarray:
        v = 1.0 + i + np.sin(t / 97.0 + i) + self.offset
        if self.gap is not None:
            v = np.where((t >= self.gap[0]) & (t <= self.gap[1]), np.nan, v)
        return v

    def snapshot(self, at: float, window_s: float) -> Snapshot:  # pragma: no cover - unused
        raise NotImplementedError

    def range(self, start: float, end: float, step_s: float,
              queues: Sequence[str] | None = None,
              signals: Collection[str] | None = None) -> RangeData:
        self.asked.append((start, end))
        t = (start + step_s * np.arange(round((end - start) / step_s) + 1)).astype(np.float64)
        rows = self.queues if not queues else tuple(q for q in self.queues if q in queues)
        m = np.stack([self.value(self.queues.index(q), t) for q in rows])
        signals = {"arrival_rate_per_s": m, "busy_workers": 2 * m,
                   # a burst of errors early on, quiet since: a read that has no point of a
                   # signal leaves it out, as PrometheusSource does
                   "errors_per_s": np.where(t < self.errors_until, m / 10, np.nan)}
        signals = {k: v for k, v in signals.items() if np.isfinite(v).any()}
        # the points a scrape gap dropped, as derive() marks them (every queue's row)
        gap = None
        if self.gap is not None and len(rows):
            gap = np.broadcast_to((t >= self.gap[0]) & (t <= self.gap[1]), m.shape).copy()
        return RangeData(start=start, end=end, step_s=step_s, source=self.name, queues=rows,
                         t=t, signals=signals, notes=("an answer's warning",),
                         gap=gap if gap is not None and gap.any() else None)


class _Cache(CachedSource):
    """A cache whose clock moves an hour before each range read (and stands still during
    one): no entry is reused by age, so each read reaches the source — through the
    incremental path."""

    def __init__(self, source: _Columns) -> None:
        self.clock = 0.0
        super().__init__(source, ttl_s=60.0, monotonic=lambda: self.clock)

    def range(self, *args: object, **kwargs: object) -> RangeData:
        self.clock += 3600.0
        return super().range(*args, **kwargs)  # type: ignore[arg-type]


def _cache(source: _Columns) -> CachedSource:
    return _Cache(source)


_same = functools.partial(assert_same_range, rtol=1e-12, atol=0.0)
"""The merged read equals the full one (the fake source's columns are exact), warnings and
scrape-gap mask included."""


def test_refreshes_read_only_the_new_steps_and_equal_a_full_read() -> None:
    source = _Columns()
    cache = _cache(source)
    end = 1_699_999_995.0  # on the 15 s grid
    for k in range(8):
        now = end + 37.0 * k  # refreshes off the step grid: the read is put on it
        got = cache.range(now - LENGTH, now, STEP)
        start, stop = source.asked[-1]
        if k:  # only the new steps and the three columns read again
            assert stop - start <= 37.0 + 3 * STEP + STEP
        fresh = _Columns().range(got.start, got.end, STEP)
        _same(got, fresh)
        # the grid of a direct read (plan_range): start rounded down, end up
        assert got.end == np.ceil(now / STEP) * STEP
        assert got.start == np.floor((now - LENGTH) / STEP) * STEP
    assert cache.range_reads == {"full": 1, "delta": 7}


def test_a_rewritten_past_forces_a_full_read() -> None:
    source = _Columns()
    cache = _cache(source)
    now = 1_700_000_000.0
    cache.range(now - LENGTH, now, STEP)
    source.offset = 1e-6  # a backfill changed the samples under every column
    got = cache.range(now + 60 - LENGTH, now + 60, STEP)
    assert cache.range_reads == {"full": 2}
    source_now = _Columns()
    source_now.offset = 1e-6
    _same(got, source_now.range(got.start, got.end, STEP))


def test_a_new_gap_in_the_overlap_forces_a_full_read_and_an_old_one_is_kept() -> None:
    source = _Columns()
    cache = _cache(source)
    now = 1_699_999_995.0  # on the 15 s grid
    source.gap = (now - 200, now - 150)  # a scrape gap well inside the range: columns NaN
    cache.range(now - LENGTH, now, STEP)
    got = cache.range(now + 30 - LENGTH, now + 30, STEP)
    assert cache.range_reads == {"full": 1, "delta": 1}
    assert np.isnan(got.matrix("arrival_rate_per_s")[:, (got.t >= now - 200)
                                                     & (got.t <= now - 150)]).all()
    # the merged read counts the gap's points as one full read does: each once
    fresh = _Columns()
    fresh.gap = source.gap
    _same(got, fresh.range(got.start, got.end, STEP))
    assert "a: 4 point(s) dropped from rate signals" in got.warnings[1]
    assert got.warnings[0] == "an answer's warning"
    assert len(got.warnings) == 4
    for k in range(1, 30):  # the gap's columns expire: its count falls, then it is gone
        got = cache.range(now + 30 + 15 * k - LENGTH, now + 30 + 15 * k, STEP)
        _same(got, fresh.range(got.start, got.end, STEP))
    assert got.gap is None
    assert got.warnings == ("an answer's warning",)
    assert cache.range_reads == {"full": 1, "delta": 30}
    cache = _cache(source)
    cache.range(now - LENGTH, now, STEP)
    cache.range(now + 30 - LENGTH, now + 30, STEP)
    source.gap = (now, now)  # the column compared in the overlap became NaN
    cache.range(now + 45 - LENGTH, now + 45, STEP)
    assert cache.range_reads == {"full": 2, "delta": 1}


def test_a_changed_queue_set_an_old_read_and_a_step_change_read_in_full() -> None:
    source = _Columns()
    cache = _cache(source)
    now = 1_700_000_000.0
    cache.range(now - LENGTH, now, STEP)
    source.queues = ("a", "b", "c", "d")  # a new controller
    got = cache.range(now + 15 - LENGTH, now + 15, STEP)
    assert got.queues == ("a", "b", "c", "d")
    assert cache.range_reads == {"full": 2}
    cache.range(now + 15 + LENGTH - LENGTH, now + 15 + LENGTH, STEP)  # nothing left to keep
    assert cache.range_reads == {"full": 3}
    cache.range(now + 15 + LENGTH - LENGTH, now + 30 + LENGTH, 30.0)  # another view
    assert cache.range_reads == {"full": 4}


def test_long_steps_and_other_sources_are_read_as_before() -> None:
    assert step_grid(0.0, 100.0, MAX_STEP_S + 1) is None
    assert step_grid(0.0, 100.0, 2.5) is None
    assert step_grid(7.0, 607.0, 15.0) == (0.0, 615.0)

    class Plain(_Columns):
        incremental_range = False

    source = Plain()
    cache = _cache(source)
    now = 1_700_000_007.0
    cache.range(now - LENGTH, now, STEP)
    cache.range(now + 30 - LENGTH, now + 30, STEP)
    assert [e - s for s, e in source.asked] == [pytest.approx(LENGTH)] * 2
    assert cache.range_reads == {}


def test_a_refresh_within_the_step_and_a_quiet_signal_stay_deltas() -> None:
    """The dashboard refreshes every 15 s on a 60 s step: a refresh on the same grid end
    reads the overlap alone; a signal quiet over the last steps (absent from the short read)
    is NaN there, not a reason to read everything again — and the result still equals a full
    read, the quiet signal dropped once it has no point left in the range."""
    source = _Columns()
    cache = _cache(source)
    now = 1_699_999_995.0  # on the 15 s grid
    first = cache.range(now + 1 - LENGTH, now + 1, STEP)
    assert "errors_per_s" in first.signals
    same = cache.range(now + 5 - LENGTH, now + 5, STEP)  # the same grid (end rounded up)
    assert (same.start, same.end) == (first.start, first.end)
    assert cache.range_reads == {"full": 1, "delta": 1}
    _same(same, _Columns().range(same.start, same.end, STEP))
    for k in range(1, 40):  # until the error burst leaves the 600 s range
        got = cache.range(now + 15 * k - LENGTH, now + 15 * k, STEP)
        _same(got, _Columns().range(got.start, got.end, STEP))
    assert "errors_per_s" not in got.signals
    assert cache.range_reads == {"full": 1, "delta": 40}
