"""The words of a capacity plan: the same short texts on every surface.

``advise --format table``, the overview, the queue page's card, the what-if page and the
reports all describe a plan with these functions, from the plan's JSON payload
(:meth:`models.plan.CapacityPlan.payload`), so a plan reads the same wherever it is shown:
"4 → 6", "API client limiter", "15.1/s", "76 %".
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from dashboard.numbers import number_text, sig
from models.bindings import limits
from models.change import CHANGE_MIN_POINTS
from models.formatting import percent_text

__all__ = ["BINDING_LABELS", "binding_label", "change_notes", "change_text",
           "change_wait_text", "confidence_text", "demand_text", "evidence_label",
           "evidence_value", "headroom_cell", "headroom_words", "plan_cells", "plan_facts",
           "rate_text", "workers_text"]

BINDING_LABELS: Mapping[str, str] = MappingProxyType(
    {name: lim.label for name, lim in limits().items()})
"""Short labels of the binding limits (the plan's ``binding_text`` says it in full), as each
limit's module of :mod:`models.bindings` declares them."""


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
    """The one formatter's rate: '15.1/s', '0.0523/s'; 'no data' when missing."""
    return number_text(value, unit)


def confidence_text(confidence: float | None) -> str:
    """The confidence as a whole percentage everywhere: '76 %'."""
    return "—" if confidence is None else percent_text(confidence)


def headroom_cell(plan: Mapping[str, Any]) -> str:
    """The least headroom of a plan's payload in a cell (:func:`headroom_words`)."""
    return headroom_words(plan.get("headroom_ratio"), plan.get("headroom_limit"))


def headroom_words(ratio: Any, limit: str | None) -> str:
    """The least headroom in a cell: '2.36× shared resource', '0.94× CPU'; 'binds: hot key'
    for a binding limit whose ceiling is not measured; '—' without one
    (:mod:`models.bindings.headroom`)."""
    if limit is None:
        return "—"
    name = binding_label(str(limit)).split(" (")[0]
    if not isinstance(ratio, int | float) or not math.isfinite(ratio):
        return f"binds: {name}"  # its ceiling is not measured (the plan's headroom_text)
    return f"{sig(float(ratio))}× {name}"


def demand_text(plan: Mapping[str, Any]) -> str:
    """The design demand: '15.1/s', or '≥ 38.3/s' when it is a lower bound (the queue was
    saturated: client-go coalesces the adds of keys already waiting)."""
    text = rate_text(plan.get("demand_per_s"))
    return f"≥ {text}" if plan.get("demand_lower_bound") and plan.get("demand_per_s") \
        is not None else text


def plan_cells(plan: Mapping[str, Any]) -> dict[str, str]:
    """The table cells of one plan: verdict, workers, binding, headroom, demand, confidence,
    tags."""
    return {
        "verdict": str(plan.get("headline", "")),
        "workers": workers_text(plan),
        "binding": binding_label(plan.get("binding_limit")),
        "headroom": headroom_cell(plan),
        "demand": demand_text(plan),
        "confidence": confidence_text(plan.get("confidence")),
        "tags": " ".join(str(t) for t in plan.get("tags", ())),
    }


def plan_facts(plan: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(label, value, note) lines of a plan, for the card and the reports: the worker count
    and its rule, the binding limit and its ceiling, the least headroom, the design demand
    (a lower bound when the queue was saturated), the confidence."""
    ceiling = plan.get("ceiling_per_s")
    basis = plan.get("ceiling_basis")
    limit_note = str(plan.get("binding_text", ""))
    if ceiling is not None:
        limit_note += f"; ceiling {rate_text(ceiling)}" + (f" ({basis})" if basis else "")
    elif str(plan.get("rows_basis", "")).startswith("no ceiling"):
        limit_note += f"; {plan['rows_basis']}"
    demand_note = f"demand now {rate_text(plan.get('demand_now_per_s'))}"
    if plan.get("demand_lower_bound"):
        demand_note += ("; a lower bound: the queue was saturated, and client-go counts an add "
                        "only when the key is not already waiting")
    facts = [
        ("workers", workers_text(plan), str(plan.get("rule_text", ""))),
        ("binding limit", binding_label(plan.get("binding_limit")), limit_note),
    ]
    if plan.get("headroom_text"):
        facts.append(("headroom", headroom_cell(plan), str(plan["headroom_text"])))
    return [*facts,
            ("design demand", demand_text(plan), demand_note),
            ("confidence", confidence_text(plan.get("confidence")), "")]


def change_text(change: Mapping[str, Any] | None) -> str:
    """'Check the change' in words (reports), or '' without a change: the prediction against
    the measurement, the clean points of each side, the drain and what a too-short "after"
    cannot tell yet (:func:`change_notes`)."""
    if not change:
        return ""
    if change.get("predicted_throughput_per_s") is None:
        return " ".join([
            f"The worker count changed {change['workers_before']} → "
            f"{change['workers_after']}: there is no plan from before it to check; measured "
            f"after: {rate_text(change.get('observed_throughput_per_s'))} and "
            f"{change_wait_text(change.get('observed_wait_mean_s'))}.", *change_notes(change)])
    return " ".join([
        f"The worker count changed {change['workers_before']} → {change['workers_after']}:"
        f" the plan from the data before it predicted "
        f"{rate_text(change.get('predicted_throughput_per_s'))} and a mean wait of "
        f"{change_wait_text(change.get('predicted_wait_mean_s'), 'unstable')}; measured "
        f"after: {rate_text(change.get('observed_throughput_per_s'))} and "
        f"{change_wait_text(change.get('observed_wait_mean_s'))}.", *change_notes(change)])


def change_wait_text(wait: float | None, missing: str = "no data") -> str:
    """A mean wait of the change check: '7.58 ms'; ``missing`` where there is none
    ('unstable' for a prediction without a steady state)."""
    return missing if wait is None else number_text(wait, "s")


def change_notes(change: Mapping[str, Any]) -> list[str]:
    """The sentences under the check: how many clean points each side has (and how many were
    left out because their rate window reaches across the change), the drain of a backlog
    built before the change, reported apart, and — while the "after" is too short — what
    it cannot tell yet and about how long until it can (:mod:`models.change`)."""
    before, after = int(change.get("points_before") or 0), int(change.get("points_after") or 0)
    across = int(change.get("straddling_before") or 0) + int(change.get("straddling_after") or 0)
    window = change.get("window_s")
    text = (f"Measured from {before} clean point{'s' if before != 1 else ''} before the change "
            f"and {after} after it")
    if across:
        text += (f" ({across} left out: their {number_text(window, 's')} rate windows reach "
                 "across the change)")
    notes = [text + "."]
    drained = int(change.get("drain_points") or 0)
    status = change.get("status", "checked")
    depth = change.get("depth_at_change")
    deep = f" ({number_text(depth)} items deep)" if depth is not None else ""
    if drained and status == "draining":
        notes.append(f"The backlog from before the change{deep} is still draining: "
                     f"{drained} point{'s' if drained != 1 else ''} so far, left out of the "
                     "measured figures.")
    elif drained:
        notes.append(f"The backlog from before the change{deep} drained first: {drained} "
                     f"point{'s' if drained != 1 else ''} over "
                     f"{number_text(change.get('drain_s'), 's')} after it, left out of the "
                     "measured figures.")
    if status == "before_too_short":
        more = change.get("range_more_s")
        notes.append(
            f"Too few clean points before the change ({before} of {CHANGE_MIN_POINTS}) for a "
            "plan from before it: "
            + (f"a range starting about {number_text(more, 's')} earlier would hold them."
               if more is not None else
               "the count before it ran too briefly (between two changes) to measure."))
    elif status != "checked":
        c = change.get("workers_after")
        more = change.get("wait_more_s")
        when = (f" — about {number_text(more, 's')} more" if more is not None else
                " — when is not known yet: the backlog is not shrinking")
        why = ("the backlog from before the change is still draining" if status == "draining"
               else f"only {after} steady point{'s' if after != 1 else ''} after the change "
               f"({CHANGE_MIN_POINTS} needed)")
        notes.append(f"Too early to check: {why}, so the steady throughput and wait at {c} "
                     f"workers cannot be told yet{when}.")
    return notes


_EVIDENCE_LABELS: Mapping[str, str] = MappingProxyType({
    "p_wait_over_slo": "P(wait > SLO)", "p_wait": "P(wait)", "usl_r2": "USL fit R²",
    "usl_fit": "USL fit", "usl_sigma": "USL σ (contention)", "usl_kappa": "USL κ (coherency)",
    "usl_gamma_per_s": "USL γ (one worker's throughput)", "slo_wait_s": "wait SLO",
    "share_429": "429 share of API calls", "share_409": "409 share of API calls",
    "demand_cv": "demand variation (CV)", "keys": "distinct keys",
})
_UNIT_SUFFIXES = ("_per_s", "_s", "_pct")
_PERCENT_WORDS = ("utilization", "share", "efficiency")
"""Evidence keys whose values are fractions, shown in % ('utilization design' 0.9 → 90 %)."""
_IDENTIFIER = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)+\Z")


def evidence_label(key: str) -> str:
    """An evidence or recommendation key in words: 'utilization_design' → 'utilization
    design', 'expected_wait_p95_s' → 'expected wait p95', 'p_wait_over_slo' → 'P(wait >
    SLO)'. The unit goes with the value (:func:`evidence_value`)."""
    for prefix, words in (("expected_", "expected "), ("current_", "now: "),
                          ("observed_", "observed ")):
        if key.startswith(prefix) and key[len(prefix):] in _EVIDENCE_LABELS:
            return words + _EVIDENCE_LABELS[key[len(prefix):]]
    if key in _EVIDENCE_LABELS:
        return _EVIDENCE_LABELS[key]
    base = key
    for suffix in _UNIT_SUFFIXES:
        if base.endswith(suffix) and len(base) > len(suffix):
            base = base[: -len(suffix)]
            break
    return base.replace("_", " ")


def evidence_value(value: Any, key: str = "") -> str:
    """One evidence or recommendation value as text, with the unit its key names: seconds
    through :func:`dashboard.numbers.number_text` ('61.2 ms'), rates '/s', fractions of
    utilization, shares and efficiency in %, 3 significant digits, identifiers in words,
    'no data' for a missing or non-finite number; mappings and lists flattened."""
    if value is None:
        return "no data"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        v = float(value)
        if not math.isfinite(v):
            return "no data"
        if key.endswith("_per_s"):
            return f"{sig(v)}/s"
        if key.endswith("_s"):
            return number_text(v, "s")
        if key.endswith("_pct"):
            return f"{sig(v)} %"
        if any(w in key for w in _PERCENT_WORDS) and not key.endswith("_workers"):
            return f"{sig(100 * v)} %"
        return sig(v) if isinstance(value, float) else str(value)
    if isinstance(value, Mapping):
        return "; ".join(f"{evidence_label(str(k))}: {evidence_value(v, str(k))}"
                         for k, v in value.items()) or "—"
    if isinstance(value, list | tuple):
        return ", ".join(evidence_value(v) for v in value) or "—"
    text = str(value)
    return text.replace("_", " ") if _IDENTIFIER.match(text) else text
