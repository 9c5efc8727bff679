"""The CSV report: the per-queue table, every text cell guarded against formulas."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dashboard.cliutil import format_csv

if TYPE_CHECKING:

    pass
from dashboard.report.model import (
    CSV_COLUMNS,
    Report,
)

# --------------------------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------------------------

def render_csv(report: Report, terminal: bool = False) -> str:
    """The per-queue table; :func:`dashboard.cliutil.format_csv` guards every text cell
    against formulas (:func:`dashboard.cliutil.csv_text`, the guard ``snapshot`` and every
    other CSV use too). ``terminal``: for stdout, control characters in cells as escapes."""
    return format_csv([q.row.cells() for q in report.queues], CSV_COLUMNS, terminal=terminal)
