"""What every source (Prometheus or the embedded demo) is: :class:`Source`. The data it
returns are the models' measurement vocabulary (:mod:`models.measurements`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from models.measurements import RangeData, Snapshot

__all__ = ["Source"]


class Source(Protocol):
    """What the dashboard, CLI and reports read from: Prometheus or the embedded demo."""

    @property
    def name(self) -> str: ...

    def snapshot(self, at: float, window_s: float) -> Snapshot: ...

    def range(
        self, start: float, end: float, step_s: float, queues: Sequence[str] | None = None,
        signals: Collection[str] | None = None,
    ) -> RangeData:
        """Signals over [start, end] every ``step_s``; ``queues``/``signals``: only those (a
        source may read less for fewer signals; it returns at most the ones asked for)."""
        ...
