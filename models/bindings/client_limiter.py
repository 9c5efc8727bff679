"""The API client's rate limiter binds: client-go's token bucket (``rest.Config`` QPS/Burst,
``flowcontrol``), shared by every controller of the process.

Named by the contention reason ``limiter`` (limiter seconds ≥ ``limiter_share_min`` of the
process's busy-worker time), before every other limit. Rows: the shared ceiling with cv² = 0
(the bucket spaces its tokens evenly: golang.org/x/time/rate). Knobs: QPS/Burst, then a
FlowSchema of the controller's own (raising QPS moves the wait to the API server).
"""

from __future__ import annotations

from models.bindings.registry import BindingLimit, Option, register

__all__ = ["LIMIT"]

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
))
