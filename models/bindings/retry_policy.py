"""Failing passes and their retries bind: the queue's load is partly its own retries.

Named by the retry-storm verdict. The options follow client-go's
``workqueue.DefaultControllerRateLimiter`` (per-key exponential backoff plus an overall bucket).
"""

from __future__ import annotations

from models.bindings.registry import BindingLimit, Option, register
from models.verdicts.kinds import Kind

__all__ = ["LIMIT"]

LIMIT = register(BindingLimit(
    name="retry_policy",
    words="failing passes and their retries: the queue's load is partly its own "
          "retries",
    label="retry policy",
    options=(
        Option("fix the failing dependency first",
               "none: every failure is worker time spent twice"),
        Option("add jitter and a global limit to the retries (an overall token bucket beside "
               "the per-key backoff, as client-go's DefaultControllerRateLimiter)",
               "recovery after an outage takes longer, but the dependency is not hammered"),
        Option("do not add workers: they retry faster against the failing cause",
               "the backlog stays until the cause is fixed"),
    ),
    kinds=(Kind.RETRY_STORM,),
))
