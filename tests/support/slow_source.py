"""A source that is slow per batch: the overview's streaming cold start made visible.

:class:`SlowBatches` wraps a source that can be read in batches (:class:`dashboard.streaming.
BatchSource`: the demo, a Prometheus source) and sleeps before every read of named queues —
each batch's snapshot and range read — so a test (or a screenshot) sees the progress line and
the partial grid before the last batch lands. Whole-fleet reads are not slowed. ``delay_s``
may be changed while a stream runs; a read of a batch holding one of the ``fast`` queues is
not slowed (the first batch lands at once, the rest wait: a progress state that holds for a
screenshot); :meth:`release` ends every sleep at once (a test's teardown).
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from models.measurements import RangeData, Snapshot


class SlowBatches:
    def __init__(self, source: Any, delay_s: float, fast: Collection[str] = ()) -> None:
        self.source = source
        self.delay_s = delay_s
        self.fast = frozenset(fast)
        self.batch_reads = 0
        self._lock = threading.Lock()
        self._released = threading.Event()

    def release(self) -> None:
        """No read sleeps any more (those sleeping wake now)."""
        self._released.set()

    @property
    def name(self) -> str:
        return str(self.source.name)

    @property
    def profile(self) -> Any:
        return getattr(self.source, "profile", None)

    def _slow(self, queues: Sequence[str] | None) -> None:
        if queues and not self.fast.intersection(queues):
            with self._lock:
                self.batch_reads += 1
            self._released.wait(self.delay_s)

    def queue_processes(self, at: float, span_s: float) -> Mapping[str, Sequence[str]]:
        result: Mapping[str, Sequence[str]] = self.source.queue_processes(at, span_s)
        return result

    def snapshot(self, at: float, window_s: float, queues: Sequence[str] | None = None
                 ) -> Snapshot:
        self._slow(queues)
        result: Snapshot = self.source.snapshot(at, window_s, queues)
        return result

    def range(self, start: float, end: float, step_s: float,
              queues: Sequence[str] | None = None,
              signals: Collection[str] | None = None) -> RangeData:
        self._slow(queues)
        result: RangeData = self.source.range(start, end, step_s, queues, signals)
        return result
