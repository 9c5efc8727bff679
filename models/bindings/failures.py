"""What a retry storm's failures are: the cause behind the failing passes, from the API
responses the process already reports.

A failed pass (``controller_runtime_reconcile_errors_total``) is either the reconciler's own
error or an API call that failed. client-go counts every response by status code
(``rest_client_requests_total{code}``), so the process's failure responses per second, scaled
to this queue's share of the process's passes, say how much of the queue's error rate each
kind of response can explain (a pass that fails on a call fails once, whatever it did
before):

* **409 Conflict** — a write lost the optimistic-concurrency race on ``resourceVersion``; the
  fix is the write (patch or server-side apply instead of update, re-read before writing),
  not the retry policy (binding ``write_conflicts``);
* **429 Too Many Requests** — the API server's priority level rejected the request (API
  Priority and Fairness: queue-full / time-out); the fix is the level or fewer calls
  (binding ``api_server``);
* **5xx** — the API server (or an aggregated API, or a webhook that fails closed) failed;
  the fix is on the server's side, and retries with backoff only wait for it;
* **other 4xx** — the request was refused (invalid object, RBAC, an admission webhook's
  denial): a retry sends the same request again, so the pass should record a condition and
  wait for a change instead;
* none of them — the reconciler's own errors (a dependency outside the API server, its own
  logic).

The cause is the kind that explains at least :data:`CAUSE_SHARE_MIN` of the errors, the
largest first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["CAUSES", "CAUSE_SHARE_MIN", "FailureCause", "failure_cause"]

CAUSE_SHARE_MIN = 0.5
"""A kind of response names the cause when it can explain at least half of the failing
passes: below it most failures have another source, and the reconciler's own errors are the
better guess."""


@dataclass(frozen=True)
class Cause:
    """One kind of failure: its binding limit and what fixes it."""

    name: str
    binding: str
    words: str
    fix: str


CAUSES: Mapping[str, Cause] = {
    "409": Cause("409", "write_conflicts", "write conflicts (409: the object changed since "
                 "it was read)", "patch or server-side apply instead of update, and re-read "
                 "the object before writing; retrying the same update conflicts again"),
    "429": Cause("429", "api_server", "the API server rejecting requests (429: its priority "
                 "level is full)", "give the controller its own FlowSchema / priority level, "
                 "or make fewer calls per pass; faster retries add to the rejections"),
    "5xx": Cause("5xx", "retry_policy", "API server errors (5xx)", "check the API server, "
                 "the aggregated API or the failing-closed webhook behind the errors; retries "
                 "with jitter and a global limit only wait for it"),
    "4xx": Cause("4xx", "retry_policy", "refused requests (4xx: an invalid object, RBAC, or "
                 "an admission webhook's denial)", "fix the request: a retry sends the same "
                 "one again — set a status condition and wait for a change instead"),
    "reconciler": Cause("reconciler", "retry_policy", "the reconciler's own errors (no "
                        "failing API response explains them)", "fix the failing dependency "
                        "or input the reconciler's error names"),
}
"""The causes, by the response class of ``api_calls_by_class_per_s`` (or ``reconciler``)."""


@dataclass(frozen=True)
class FailureCause:
    """The cause of one queue's failing passes."""

    cause: Cause
    explained_share: float | None
    """Share of the queue's errors the cause's responses can explain (None: the reconciler)."""
    shares: Mapping[str, float]
    """Every response class's explained share, for the evidence."""


def failure_cause(errors_per_s: float, by_class_per_s: Mapping[str, float],
                  queue_share_of_process: float) -> FailureCause:
    """The cause of ``errors_per_s`` failing passes (module docstring). ``by_class_per_s``:
    the process's responses per second by class; ``queue_share_of_process``: this queue's
    passes / the process's (0…1)."""
    share_q = (min(max(queue_share_of_process, 0.0), 1.0)
               if math.isfinite(queue_share_of_process) else 1.0)
    shares: dict[str, float] = {}
    if errors_per_s > 0:
        for name in ("409", "429", "5xx", "4xx"):
            rate = by_class_per_s.get(name)
            if rate is not None and rate > 0:
                shares[name] = min(rate * share_q / errors_per_s, 1.0)
    best = max(shares.items(), key=lambda kv: kv[1], default=None)
    if best is not None and best[1] >= CAUSE_SHARE_MIN:
        return FailureCause(CAUSES[best[0]], best[1], shares)
    return FailureCause(CAUSES["reconciler"], None, shares)
