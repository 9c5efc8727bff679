"""The API server's priority level binds: API Priority and Fairness queues or rejects the
process's requests (its seats are all taken).

Named by the contention reasons ``api_429`` (429 share ≥ ``share_429_min``) and ``apf`` (the
level saturated and the passes queued in it). Rows: the shared ceiling, a seat held for a
variable time (cv² = 1). Knobs: a FlowSchema and priority level of the controller's own, then
the client's QPS/Burst.
"""

from __future__ import annotations

from models.bindings.registry import BindingLimit, Option, register

__all__ = ["LIMIT"]

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
))
