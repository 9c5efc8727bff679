"""Retry storm: a quarter or more of the passes fail, so the queue's load is partly its own
retries (failures from ``reconcile_errors_total`` or ``result="error"`` — never from
``retries_total``, which counts planned requeues too). The verdict names the cause and its
binding limit (:mod:`models.bindings.failures`: 409 conflicts, 429s, 5xx, refused requests
or the reconciler's own errors), whose fix comes first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from models.bindings.failures import CAUSES, failure_cause
from models.formatting import number_text, percent_text
from models.verdicts.context import Ctx, error_rate, paired, results_total
from models.verdicts.verdict import Kind, Severity, Verdict, make_verdict, margin_conf, num

__all__ = ["headline", "retry_storm"]


def retry_storm(ctx: Ctx, found: Mapping[Kind, Verdict]) -> Verdict | None:
    s, th = ctx.s, ctx.th
    errors = error_rate(s)
    recs = num(s.throughput_per_s)
    if recs is None:
        recs = results_total(s)
    if errors is None or recs is None:
        ctx.notes["retry_storm"] = "needs errors_per_s (or reconcile results) and throughput_per_s"
        return None
    if recs <= 0:
        return None
    share = errors / recs
    if share < th.error_share_storm:
        return None
    adds = num(s.arrival_rate_per_s)
    retries = num(s.retries_per_s)
    retry_share = retries / adds if retries is not None and adds else None
    persist = None
    p = paired(ctx.h, "errors_per_s", "throughput_per_s")
    if p is not None and p[0].size >= th.min_history_points:
        ok = p[2] > 0
        if ok.any():
            persist = float(np.mean(p[1][ok] / p[2][ok] >= th.error_share_storm))
    conf = margin_conf(share / th.error_share_storm)
    if retry_share is not None and retry_share >= th.retry_share_storm:
        conf += 0.05
    if persist is not None and persist >= th.persist_fraction:
        conf += 0.05
    severity: Severity = ("critical" if share >= 0.8 or (persist or 0) >= th.persist_fraction
                          else "warning")
    lasting = (f"; it has lasted over {percent_text(persist)} of the range"
               if persist is not None and persist >= th.persist_fraction else "")
    proc_x = ctx.process_totals().throughput_per_s
    found_cause = failure_cause(
        errors, {k: v for k, v in (s.api_calls_by_class_per_s or {}).items()
                 if num(v) is not None},
        recs / proc_x if proc_x else 1.0)
    cause = found_cause.cause
    summary = (
        f"{percent_text(share)} of reconciles fail ({number_text(errors, '/s')}){lasting}"
        + (f", and retries make up {percent_text(retry_share)} of adds"
           if retry_share is not None else "")
        + f". The cause: {cause.words}"
        + (f" — {percent_text(found_cause.explained_share)} of the failing passes"
           if found_cause.explained_share is not None else "")
        + f". Fix: {cause.fix}; more workers would only retry faster against it."
    )
    return make_verdict(
        Kind.RETRY_STORM, severity, summary,
        {"error_share": share, "errors_per_s": errors, "reconciles_per_s": recs,
         "retries_per_s": retries, "retry_share_of_adds": retry_share,
         "persistent_fraction_of_range": persist, "failure_cause": cause.name,
         "failure_cause_words": cause.words,
         "failure_cause_share": found_cause.explained_share,
         "failure_shares_by_response": dict(found_cause.shares),
         "binding_limit": cause.binding},
        {"action": "fix_failure_not_workers",
         "steps": [cause.fix,
                   "for non-retriable failures (auth, invalid spec) set a status condition and "
                   "wait for a change instead of retrying forever",
                   "add a global or per-dependency rate limit with jitter so thousands of keys "
                   "do not retry together",
                   "call Forget on success so a later failure starts from the base delay",
                   "do not add workers"]},
        conf, headline,
    )


def headline(evidence: Mapping[str, Any], recommendation: Mapping[str, Any]) -> str:
    share = evidence.get("error_share")
    cause = evidence.get("failure_cause")
    words = CAUSES[cause].words if isinstance(cause, str) and cause in CAUSES \
        and cause != "reconciler" else None
    return ("Fix the failures, not the worker count"
            + (f": {percent_text(share)} of passes fail" if isinstance(share, float) else "")
            + (f", from {words}" if words else ""))
