"""Capacity reports: one report model, rendered as HTML, Markdown, JSON or CSV.

:func:`build_report` reads the source through :func:`dashboard.advice.advise_fleet` (one
``snapshot`` and one ``range`` for every queue; the range read is memoised so the charts reuse
it) and runs the what-if sweep per queue for the "wait vs workers" chart. It returns a
:class:`Report`: fleet summary, one :class:`QueueRow` per queue, the advisor's verdicts with
their evidence, the assumptions of each model, the time range and the data source (the
source's ``name``, which never carries credentials).

Renderers (pure, no I/O):

* :func:`render_html` — one self-contained page: plotly.js inlined exactly once in a single
  ``<script>``; the charts' data embedded once, as one JSON document in a
  ``<script type="application/json">`` (every ``<``, ``>`` and ``&`` in it written as a
  ``\\u00XX`` escape, so no label value can end the script or open a comment), and a small
  inline script that draws a queue's charts when they scroll into view (IntersectionObserver;
  all of them before printing). No external URL, so it opens offline. Every label value goes
  through :func:`html.escape` in the page and :func:`dashboard.figures.plotly_text` in the
  charts.
* :func:`render_markdown` — for pull requests and tickets; label values are escaped for
  Markdown and inline HTML (:func:`md_text`), pipes included.
* :func:`render_json` — ``{"schema_version": 1, ...}``; a number that does not exist is
  ``null`` (never NaN).
* :func:`render_csv` — the per-queue table, one row per queue. A text cell that a spreadsheet
  would run as a formula (leading ``= + - @``, tab or CR) is prefixed with ``'``
  (:func:`dashboard.cliutil.csv_text`, the guard every CSV output shares).

The dashboard's "Export report" control (:func:`export_control`,
:func:`register_export_callbacks`) renders the same report from the app's source, as a Dash
background callback: a progress bar names the step (each queue analysed, then each queue
rendered), a Cancel button stops the job, and the export button is disabled while it runs.
Each export is a forked process, so :class:`ExportJobs` bounds them: at most
:data:`EXPORT_MAX_JOBS` at a time per app (a further click is told "an export is already
running"), each stopped after :data:`EXPORT_TIMEOUT_S`, one nobody polls cancelled after
:data:`EXPORT_ABANDON_S`, every finished one waited for (no zombies).
"""

from __future__ import annotations

from dashboard.report.csv_format import (
    render_csv,
)
from dashboard.report.export import (
    EXPORT_ABANDON_S,
    EXPORT_BUSY,
    EXPORT_KILL_GRACE_S,
    EXPORT_LABELS,
    EXPORT_MAX_JOBS,
    EXPORT_POLL_MS,
    EXPORT_REAP_S,
    EXPORT_TIMEOUT_S,
    ExportJobs,
    ExportProgress,
    export_control,
    export_manager,
    export_payload,
    export_timeout_text,
    export_token,
    progress_update,
    register_export_callbacks,
    run_export,
)
from dashboard.report.html_page import (
    CHART_CLASS,
    CHART_DATA_ID,
    CHART_HEIGHT,
    SHARED_X,
    ChartData,
    queue_figures,
    render_html,
    script_json,
)
from dashboard.report.json_format import (
    render_json,
    report_payload,
)
from dashboard.report.markdown import (
    md_text,
    render_markdown,
)
from dashboard.report.model import (
    ASSUMPTIONS,
    CSV_COLUMNS,
    EXTENSIONS,
    FORMATS,
    MIME_TYPES,
    SCHEMA_VERSION,
    SEVERITY_ORDER,
    Assumption,
    Progress,
    QueueReport,
    QueueRow,
    Report,
    build_report,
)
from dashboard.report.render import (
    default_filename,
    render,
)

__all__ = [
    "ASSUMPTIONS",
    "CHART_CLASS",
    "CHART_DATA_ID",
    "CHART_HEIGHT",
    "CSV_COLUMNS",
    "EXPORT_ABANDON_S",
    "EXPORT_BUSY",
    "EXPORT_KILL_GRACE_S",
    "EXPORT_LABELS",
    "EXPORT_MAX_JOBS",
    "EXPORT_POLL_MS",
    "EXPORT_REAP_S",
    "EXPORT_TIMEOUT_S",
    "EXTENSIONS",
    "FORMATS",
    "MIME_TYPES",
    "SCHEMA_VERSION",
    "SEVERITY_ORDER",
    "SHARED_X",
    "Assumption",
    "ChartData",
    "ExportJobs",
    "ExportProgress",
    "Progress",
    "QueueReport",
    "QueueRow",
    "Report",
    "build_report",
    "default_filename",
    "export_control",
    "export_manager",
    "export_payload",
    "export_timeout_text",
    "export_token",
    "md_text",
    "progress_update",
    "queue_figures",
    "register_export_callbacks",
    "render",
    "render_csv",
    "render_html",
    "render_json",
    "render_markdown",
    "report_payload",
    "run_export",
    "script_json",
]
