"""The JSON report: ``{"schema_version": 1, ...}``; a number that does not exist is ``null``."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from dashboard.advice import verdict_payload
from dashboard.cliutil import escape_json_controls, jsonable

if TYPE_CHECKING:

    pass
from dashboard.report.model import (
    SCHEMA_VERSION,
    Report,
)

# --------------------------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------------------------


def report_payload(report: Report) -> dict[str, Any]:
    """The JSON document (plain values; NaN/Inf already None)."""
    payload = {
        "schema_version": SCHEMA_VERSION,
        "generated_at": report.generated_at,
        "source": report.source,
        "time_range": {"start": report.start, "end": report.end, "at": report.at,
                       "range_s": report.range_s, "step_s": report.step_s,
                       "window_s": report.window_s},
        "slo": {"wait_s": report.slo_wait_s, "quantile": report.slo_quantile},
        "settings": report.settings.payload(),
        "described": report.described,
        "summary": {"queues": len(report.queues), "by_severity": report.severity_counts(),
                    "by_verdict": report.kind_counts()},
        "queues": [
            {
                "queue": q.row.queue,
                "labels": dict(q.labels),
                "row": q.row.cells() | {"verdicts": list(q.row.verdicts)},
                "plan": q.plan.payload() if q.plan is not None else None,
                "verdicts": [verdict_payload(v) for v in q.verdicts],
                "whatif": None if q.plan is None or not q.plan.rows else {
                    "model": q.plan.model,
                    "recommended_workers": q.plan.recommended_workers,
                    "band_source": q.plan.band_source,
                    "rows": q.plan.rows_payload(),
                },
                "missing": dict(q.missing),
            }
            for q in report.queues
        ],
        "assumptions": [
            {"model": a.model, "used_for": a.used_for, "assumes": a.assumes, "source": a.source}
            for a in report.assumptions
        ],
        "thresholds": [dict(t) for t in report.thresholds],
        "warnings": list(report.warnings),
    }
    result: dict[str, Any] = jsonable(payload)
    return result


def render_json(report: Report) -> str:
    """The document; DEL, C1 and bidirectional controls in label values as ``\\u`` escapes
    (:func:`dashboard.cliutil.escape_json_controls`: the same values, nothing a terminal
    obeys)."""
    return escape_json_controls(json.dumps(report_payload(report), indent=2,
                                           allow_nan=False, ensure_ascii=False)) + "\n"
