"""The API client's rate limiter binds: client-go's token bucket (``rest.Config`` QPS/Burst,
``flowcontrol``), shared by every controller of the process.

Named by the contention reason ``limiter`` (limiter seconds ≥ ``limiter_share_min`` of the
process's busy-worker time), before every other limit. Rows: the shared ceiling with cv² = 0
(the bucket spaces its tokens evenly: golang.org/x/time/rate). Knobs: QPS/Burst, then a
FlowSchema of the controller's own (raising QPS moves the wait to the API server).

Ceiling: the bucket's QPS ÷ the process's API calls per pass — the QPS configured, or the
most API calls/s the process sent at points where its limiter held it
(:data:`LIMITER_HELD_SHARE`: a client held by its bucket sends at its QPS) — and this queue's
part of it. Without either, no number: the limiter's wait alone
does not say where its QPS lies.
"""

from __future__ import annotations

from models.bindings.measured import CeilingInputs, MeasuredCeiling
from models.bindings.registry import BindingLimit, Option, register
from models.formatting import number_text, sig

__all__ = ["LIMIT", "LIMITER_HELD_SHARE"]

LIMITER_HELD_SHARE = 0.5
"""Limiter seconds per busy-worker second from which a point is held at the bucket's QPS, so
that its API calls/s measure the QPS: a token bucket makes passes wait well before it is
saturated (bursts), and the calls it lets through then are the demand's, not its QPS (on
the limiter-a recording: 55–82 % of busy time in the limiter at 5.4–8.8 calls/s, 95–98 % at
its 12 QPS; the demo's certificate, at most 32 %, sent whatever its demand asked)."""


def _measure(i: CeilingInputs) -> MeasuredCeiling | None:
    per = i.api_calls_per_pass
    if per is None or per <= 0:
        return None  # no API calls measured: nothing of this limit shows
    if i.client_qps is None:
        why = ("the client's QPS is not configured (profile client_qps) and its rate limiter "
               + ("never held it at its QPS in the range" if i.limiter_read else
                  "wait is not exported (rest_client_rate_limiter_duration_seconds)"))
        return MeasuredCeiling("client_limiter", None, None, None, why, "process")
    share = i.queue_share()
    part = "" if share >= 1.0 else ", this queue's part of the process's passes"
    return MeasuredCeiling(
        "client_limiter", i.client_qps / per * share, None, None,
        f"{sig(i.client_qps)} QPS ({i.client_qps_basis or 'configured'}) ÷ "
        f"{number_text(per, '')} API calls per pass{part}", "process")

LIMIT = register(BindingLimit(
    name="client_limiter",
    words="the API client's rate limiter (a token bucket shared by every worker of the "
          "process)",
    label="API client limiter",
    options=(
        Option("reduce API calls per reconcile (read from the informer cache, patch instead "
               "of update, skip no-op writes)",
               "a code change; it raises the ceiling for every controller of the process"),
        Option("raise the client's QPS/Burst (rest.Config) only if the API server's priority "
               "level has room",
               "moves the wait to the API server: watch its 429s and queue wait "
               "(apiserver_flowcontrol_*) after the change"),
        Option("the budget is shared by every controller of the process: count them all",
               "more workers on one controller take budget from the others"),
    ),
    rows="ceiling",
    ceiling_cv2=0.0,
    headline="the API client's rate limiter binds",
    reasons=frozenset({"limiter"}),
    precedence=10,
    knobs=("client_qps", "flowschema"),
    measure=_measure,
))
