"""The Markdown report, for pull requests and tickets: label values escaped for Markdown
and inline HTML (:func:`md_text`), pipes included."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from dashboard.cliutil import terminal_text
from dashboard.plan_words import change_text, evidence_label, evidence_value, plan_facts
from models.plan import CapacityPlan

if TYPE_CHECKING:

    pass
from dashboard.report.model import (
    Report,
)
from dashboard.report.text import (
    _headline,
    _num,
    _pct,
    _range_text,
    _slo_text,
    _utc,
)

# --------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~#!])")


def md_text(value: object) -> str:
    """A label value as inert Markdown text: Markdown punctuation backslash-escaped, inline
    HTML (``& < >``) as entities, pipes escaped (safe in table cells), newlines flattened."""
    text = terminal_text(" ".join(str(value).split()))
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _fence(text: str) -> str:
    """A Markdown code fence longer than any run of backticks in ``text`` (CommonMark closes
    a fence only with at least as many backticks), so the text cannot end it early."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _md_plan(plan: CapacityPlan | None) -> list[str]:
    """The queue's capacity plan in the words of the dashboard's card (:mod:`plan_words`)."""
    if plan is None:
        return []
    payload = plan.payload()
    lines = [f"**{md_text(plan.headline)}** "
             + " ".join(f"`{md_text(t)}`" for t in plan.tags), ""]
    lines += [_md_row(["Plan", "Value", "Why"]), _md_row(["---", "---", "---"])]
    lines += [_md_row([md_text(label), md_text(value), md_text(note)])
              for label, value, note in plan_facts(payload)]
    lines += ["", "What to do, best first:", ""]
    lines += [f"{i}. {md_text(o.action)} — trade-off: {md_text(o.tradeoff)}"
              for i, o in enumerate(plan.options, 1)]
    if plan.knobs:
        lines += ["", "Where to set it: " + "; ".join(
            f"`{md_text(k.setting)}` ({md_text(k.how)})" for k in plan.knobs)]
        for k in plan.knobs:
            if k.manifest:
                fence = _fence(k.manifest)
                lines += ["", f"{fence}yaml", *k.manifest.splitlines(), fence]
    change = change_text(payload["change"])
    if change:
        lines += ["", f"Check the change: {md_text(change)}"]
    if plan.caveats:
        lines += ["", "Caveats:", ""] + [f"- {md_text(c)}" for c in plan.caveats]
    return [*lines, ""]


def render_markdown(report: Report) -> str:
    lines = [
        "# queuelens capacity report",
        "",
        f"- **Source:** {md_text(report.source)}",
        f"- **Settings:** {md_text(report.described)}",
        f"- **Time range:** {md_text(_range_text(report))}",
        f"- **SLO:** {md_text(_slo_text(report))}",
        f"- **Generated:** {_utc(report.generated_at)}",
        f"- **Fleet:** {md_text(_headline(report))}",
        "",
        "## Fleet summary",
        "",
        _md_row(["Queue", "Severity", "Verdicts", "Workers", "Recommended", "Utilization",
                 "Arrivals /s", "Capacity /s", "p95 wait"]),
        _md_row(["---"] * 3 + ["---:"] * 6),
    ]
    for q in report.queues:
        r = q.row
        lines.append(_md_row([
            md_text(r.queue), md_text(r.severity), md_text(", ".join(r.verdicts)),
            _num(r.workers), _num(r.recommended_workers), _pct(r.utilization),
            _num(r.arrival_rate_per_s), _num(r.capacity_per_s), md_text(r.queue_wait_p95_text),
        ]))
    for q in report.queues:
        lines += ["", f"## {md_text(q.row.queue)}", ""]
        if q.labels:
            lines.append("Labels: " + ", ".join(f"{md_text(k)}={md_text(v)}"
                                                  for k, v in sorted(q.labels.items())))
            lines.append("")
        lines += _md_plan(q.plan)
        for v in q.verdicts:
            lines.append(f"### {md_text(v.headline)} — {md_text(v.severity)} · "
                         f"`{md_text(v.kind)}` (confidence {100 * v.confidence:.0f} %)")
            lines += ["", md_text(v.summary), ""]
            if v.recommendation:
                lines.append("Recommendation: " + md_text(evidence_value(dict(v.recommendation))))
                lines.append("")
            if v.evidence:
                lines += [_md_row(["Evidence", "Value"]), _md_row(["---", "---"])]
                lines += [_md_row([md_text(evidence_label(k)), md_text(evidence_value(val, k))])
                          for k, val in v.evidence.items()]
                lines.append("")
        lines.append(f"What-if: {md_text(q.whatif_note)}")
    lines += ["", "## Model assumptions", ""]
    for a in report.assumptions:
        lines.append(f"- **{md_text(a.model)}** ({md_text(a.used_for)}): {md_text(a.assumes)} "
                     f"Source: {md_text(a.source)}.")
    if report.warnings:
        lines += ["", "## Warnings", ""]
        lines += [f"- {md_text(w)}" for w in report.warnings]
    return "\n".join(lines) + "\n"
