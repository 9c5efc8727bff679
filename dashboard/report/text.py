"""Text helpers every report format shares (numbers by the one formatter, the headline, the
range and the SLO in words)."""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING, Any

from dashboard.rules import prometheus_duration
from models.formatting import count_text, number_text, percent_text, sig

if TYPE_CHECKING:

    pass
from dashboard.report.model import (
    Report,
)

# --------------------------------------------------------------------------------------------
# Shared text helpers
# --------------------------------------------------------------------------------------------


def _num(value: Any) -> str:
    """A table cell by the one formatter (:mod:`models.formatting`): a count as it is, a
    measurement to three significant digits; '—' when it does not exist."""
    if value is None or isinstance(value, bool):
        return "—" if value is None else ("yes" if value else "no")
    if isinstance(value, int):
        return count_text(value)
    if isinstance(value, float):
        return sig(value) if math.isfinite(value) else "—"
    return str(value)


def _pct(share: float | None) -> str:
    return "—" if share is None else percent_text(share)


def _utc(unix_s: float) -> str:
    return dt.datetime.fromtimestamp(unix_s, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _headline(report: Report) -> str:
    counts = report.severity_counts()
    parts = [f"{n} {s}" for s, n in counts.items() if n]
    return f"{len(report.queues)} queues: " + (", ".join(parts) if parts else "none")


def _range_text(report: Report) -> str:
    span, step, window = (prometheus_duration(s) for s in (report.range_s, report.step_s,
                                                           report.window_s))
    return (f"{_utc(report.start)} → {_utc(report.end)} ({span}, one point every {step}); "
            f"snapshot rates over {window}")


def _slo_text(report: Report) -> str:
    return f"p{report.slo_quantile * 100:g} queue wait ≤ {number_text(report.slo_wait_s, 's')}"
