"""One entry for every format: :func:`render` and the file name of a report."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

if TYPE_CHECKING:

    pass
from dashboard.report.csv_format import (
    render_csv,
)
from dashboard.report.html_page import (
    render_html,
)
from dashboard.report.json_format import (
    render_json,
)
from dashboard.report.markdown import (
    render_markdown,
)
from dashboard.report.model import (
    EXTENSIONS,
    FORMATS,
    Progress,
    Report,
)

# --------------------------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------------------------


def render(report: Report, fmt: str, progress: Progress | None = None,
           terminal: bool = False) -> str:
    """The report in ``fmt`` (one of :data:`FORMATS`). ``terminal``: the text goes to stdout,
    where a terminal may read it: CSV cells show control characters as escapes (HTML,
    Markdown and JSON never write them raw)."""
    if fmt == "html":
        return render_html(report, progress)
    if fmt == "md":
        return render_markdown(report)
    if fmt == "json":
        return render_json(report)
    if fmt == "csv":
        return render_csv(report, terminal)
    raise ValueError(f"unknown report format {fmt!r}: choose one of {', '.join(FORMATS)}.")


def default_filename(report: Report, fmt: str) -> str:
    stamp = dt.datetime.fromtimestamp(report.at, tz=dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"queuelens-report-{stamp}.{EXTENSIONS[fmt]}"
