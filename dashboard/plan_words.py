"""The words of a capacity plan: the same short texts on every surface.

``advise --format table``, the overview, the queue page's card, the what-if page and the
reports all describe a plan with these functions, from the plan's JSON payload
(:meth:`models.plan.CapacityPlan.payload`), so a plan reads the same wherever it is shown:
"4 → 6", "API client limiter", "15.1/s", "76 %".
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from dashboard.numbers import sig

__all__ = ["BINDING_LABELS", "binding_label", "change_text", "confidence_text", "plan_cells",
           "plan_facts", "rate_text", "workers_text"]

BINDING_LABELS: Mapping[str, str] = MappingProxyType({
    "workers": "workers",
    "shared_resource": "shared resource (lock, pool, downstream)",
    "client_limiter": "API client limiter",
    "api_server": "API server (429)",
    "write_conflicts": "write conflicts (409)",
    "coherency": "coherency (past the peak)",
    "hot_key": "hot key",
    "retry_policy": "retry policy",
    "stuck_worker": "stuck worker",
    "none": "none",
    "unknown": "not known",
})
"""Short labels of the binding limits (the plan's ``binding_text`` says it in full)."""


def binding_label(code: str | None) -> str:
    return BINDING_LABELS.get(code or "unknown", str(code))


def workers_text(plan: Mapping[str, Any]) -> str:
    """'4 → 6' (a change), '4' (keep), '—' (no count)."""
    now, rec = plan.get("workers_now"), plan.get("recommended_workers")
    if rec is None:
        return "—" if now is None else f"{now}"
    if now is None or now == rec:
        return f"{rec}"
    return f"{now} → {rec}"


def rate_text(value: float | None, unit: str = "/s") -> str:
    """Three significant digits: '15.1/s', '0.0523/s'; 'no data' when missing."""
    if value is None:
        return "no data"
    return f"{sig(value)}{unit}"


def confidence_text(confidence: float | None) -> str:
    """The confidence as a whole percentage everywhere: '76 %'."""
    return "—" if confidence is None else f"{100 * confidence:.0f} %"


def plan_cells(plan: Mapping[str, Any]) -> dict[str, str]:
    """The table cells of one plan: verdict, workers, binding, demand, confidence, tags."""
    return {
        "verdict": str(plan.get("headline", "")),
        "workers": workers_text(plan),
        "binding": binding_label(plan.get("binding_limit")),
        "demand": rate_text(plan.get("demand_per_s")),
        "confidence": confidence_text(plan.get("confidence")),
        "tags": " ".join(str(t) for t in plan.get("tags", ())),
    }


def plan_facts(plan: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(label, value, note) lines of a plan, for the card and the reports: the worker count
    and its rule, the binding limit and its ceiling, the design demand, the confidence."""
    ceiling = plan.get("ceiling_per_s")
    basis = plan.get("ceiling_basis")
    limit_note = str(plan.get("binding_text", ""))
    if ceiling is not None:
        limit_note += f"; ceiling {rate_text(ceiling)}" + (f" ({basis})" if basis else "")
    return [
        ("workers", workers_text(plan), str(plan.get("rule_text", ""))),
        ("binding limit", binding_label(plan.get("binding_limit")), limit_note),
        ("design demand", rate_text(plan.get("demand_per_s")),
         f"demand now {rate_text(plan.get('demand_now_per_s'))}"),
        ("confidence", confidence_text(plan.get("confidence")), ""),
    ]


def change_text(change: Mapping[str, Any] | None) -> str:
    """'Check the change' in one sentence (reports), or '' without a change."""
    if not change:
        return ""
    wait = change.get("predicted_wait_mean_s")
    wait_text = "unstable" if wait is None else f"{wait:.3g} s"
    observed = change.get("observed_wait_mean_s")
    return (f"The worker count changed {change['workers_before']} → {change['workers_after']}:"
            f" the plan from the data before it predicted "
            f"{rate_text(change.get('predicted_throughput_per_s'))} and a mean wait of "
            f"{wait_text}; measured after: "
            f"{rate_text(change.get('observed_throughput_per_s'))} and "
            f"{'no data' if observed is None else f'{observed:.3g} s'}.")
