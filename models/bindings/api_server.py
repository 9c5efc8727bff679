"""The API server's priority level binds: API Priority and Fairness queues or rejects the
process's requests (its seats are all taken).

Named by the contention reasons ``api_429`` (429 share ≥ ``share_429_min``) and ``apf`` (the
level saturated and the passes queued in it). Rows: the shared ceiling, a seat held for a
variable time (cv² = 1). Knobs: a FlowSchema and priority level of the controller's own, then
the client's QPS/Burst.

Ceiling: not from a workqueue's own metrics. The level's seats are shared with every client of
the level and APF metrics name no client, so this process's part of them is not measured
here; the contention verdict gives one where the process is throttled (the calls it gets
through). Otherwise the card says what is known — the level's seats in use, the 429s — and
no number.
"""

from __future__ import annotations

from models.bindings.measured import CeilingInputs, MeasuredCeiling
from models.bindings.registry import BindingLimit, Option, register
from models.formatting import percent_text

__all__ = ["LIMIT"]


def _measure(i: CeilingInputs) -> MeasuredCeiling | None:
    s429 = i.share_429 if i.share_429 is not None and i.share_429 > 0 else None
    if i.apf_seat_limit is None and s429 is None:
        return None
    if i.apf_seat_limit is None:
        why = (f"the API server's metrics are not scraped; {percent_text(s429 or 0.0)} of "
               "the process's calls get 429")
    else:
        used = (f", {percent_text(i.apf_seats_in_use / i.apf_seat_limit)} in use"
                if i.apf_seats_in_use is not None and i.apf_seat_limit > 0 else "")
        why = (f"the level {i.apf_level or '?'!r} has {i.apf_seat_limit:g} seats{used}, "
               "shared with every client of the level: this process's part is not measured")
    return MeasuredCeiling("api_server", None, None, None, why, "process")

LIMIT = register(BindingLimit(
    name="api_server",
    words="the API server's priority level (API Priority and Fairness queues or "
          "rejects the process's requests: its seats are all taken)",
    label="API server priority level (APF)",
    options=(
        Option("give the controller's ServiceAccount its own FlowSchema/priority level, or "
               "raise the level's seats, instead of adding workers",
               "the seats come from the API server's total concurrency: other clients get "
               "fewer"),
        Option("reduce API calls per reconcile; lists and watches from the informer cache",
               "a code change; the cheapest lasting fix"),
    ),
    rows="ceiling",
    ceiling_cv2=1.0,
    headline="the API server's priority level is saturated (APF queues or rejects "
             "its requests)",
    reasons=frozenset({"api_429", "apf"}),
    precedence=20,
    knobs=("flowschema", "client_qps"),
    measure=_measure,
))
