"""What to do about each binding limit: the ranked options of a capacity plan, with trade-offs.

One catalogue, read by the advisor (the contention verdict's ``steps``) and by the capacity
plan (:mod:`models.plan`, the advice card's ranked options), so the words cannot drift apart.
Each limit's options are in the order an operator should try them: the cheapest change that
moves the limit first. Sources: client-go ``rest.Config`` QPS/Burst and ``flowcontrol``
(the client token bucket), Kubernetes API Priority and Fairness (FlowSchema, priority levels;
non-kube-system ServiceAccounts map to ``workload-low`` by default), client-go
``workqueue.DefaultControllerRateLimiter`` (per-key exponential backoff plus an overall
bucket), controller-runtime ``controller.Options.MaxConcurrentReconciles``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["BINDING_WORDS", "OPTIONS", "Option"]


@dataclass(frozen=True)
class Option:
    """One thing to do, and what it costs."""

    action: str
    tradeoff: str


BINDING_WORDS: Mapping[str, str] = MappingProxyType({
    "workers": "the worker count: items wait for a free worker (queueing)",
    "shared_resource": "something shared by the workers (a lock or serial section, a "
                       "database, a downstream service)",
    "client_limiter": "the API client's rate limiter (a token bucket shared by every worker "
                      "of the process)",
    "api_server": "the API server's priority level (API Priority and Fairness queues or "
                  "rejects the process's requests: its seats are all taken)",
    "admission_webhook": "an admission webhook on the controller's writes (the API server "
                         "waits for it inside every write)",
    "write_conflicts": "write conflicts (409s rising with concurrency)",
    "coherency": "coherency (throughput falls past a peak worker count)",
    "hot_key": "one key processed serially: a workqueue never runs a key on two workers",
    "retry_policy": "failing passes and their retries: the queue's load is partly its own "
                    "retries",
    "stuck_worker": "a pass that never finishes holds its worker",
    "none": "nothing: the workers keep up with the demand",
    "unknown": "not known: the data do not say",
})
"""What each binding limit of a plan is, in words."""

OPTIONS: Mapping[str, tuple[Option, ...]] = MappingProxyType({
    "workers": (
        Option("raise the worker count to the recommended one",
               "each worker adds concurrent API calls and memory; the API client's budget is "
               "shared by every controller of the process"),
        Option("shorten each pass (read from the informer cache, skip no-op writes)",
               "a code change, but it lowers the work time at every worker count"),
    ),
    "client_limiter": (
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
    "api_server": (
        Option("give the controller's ServiceAccount its own FlowSchema/priority level, or "
               "raise the level's seats, instead of adding workers",
               "the seats come from the API server's total concurrency: other clients get "
               "fewer"),
        Option("reduce API calls per reconcile; lists and watches from the informer cache",
               "a code change; the cheapest lasting fix"),
    ),
    "admission_webhook": (
        Option("make the webhook keep up: more replicas, or a faster handler (it is called "
               "inside every write of this controller)",
               "the webhook's owner must change it; its timeoutSeconds bounds each call"),
        Option("narrow the webhook's rules, namespaceSelector or objectSelector so it does not "
               "see this controller's writes (or skip no-op writes)",
               "objects the webhook no longer sees are no longer validated or mutated by it"),
        Option("do not add workers: they queue on the webhook",
               "none: the throughput is the webhook's"),
    ),
    "write_conflicts": (
        Option("patch (server-side apply) instead of update, so concurrent writers do not "
               "collide",
               "a code change; field ownership must be set up"),
        Option("shard the keys so one object is not written by several controllers",
               "an architecture change"),
        Option("key the queue by the contended object, so that one worker writes it at a "
               "time, or run fewer workers than the conflicts start at",
               "the work on one object is serial again (a hot key, but without the "
               "wasted passes)"),
    ),
    "coherency": (
        Option("do not run more workers than the peak worker count",
               "none: past the peak every added worker lowers throughput"),
        Option("find what the workers coordinate on (a shared cache lock, a global map) and "
               "split it",
               "a code change; it moves the peak"),
    ),
    "shared_resource": (
        Option("find what the passes wait on together (a mutex, a database connection pool, "
               "a downstream rate limit): the work time rises with throughput",
               "profiling (mutex/block profiles) before any change"),
        Option("shorten or split the serial part of the pass; more workers only queue on it",
               "a code change; it raises the ceiling for every worker count"),
    ),
    "hot_key": (
        Option("split the hot key's work into bounded passes (requeue with progress instead "
               "of one long pass)",
               "a code change; each pass must be resumable"),
        Option("spread the work over more keys (one key per sub-object)",
               "more objects to watch and more keys in the queue"),
    ),
    "retry_policy": (
        Option("fix the failing dependency first",
               "none: every failure is worker time spent twice"),
        Option("add jitter and a global limit to the retries (an overall token bucket beside "
               "the per-key backoff, as client-go's DefaultControllerRateLimiter)",
               "recovery after an outage takes longer, but the dependency is not hammered"),
        Option("do not add workers: they retry faster against the failing cause",
               "the backlog stays until the cause is fixed"),
    ),
    "stuck_worker": (
        Option("find the pass that never returns: give every call a context deadline",
               "a pass that times out is retried; it must be idempotent"),
    ),
    "none": (
        Option("keep the current worker count", "none"),
    ),
    "unknown": (
        Option("measure first: see which signals are missing",
               "no change can be sized without them"),
    ),
})
"""The ranked options for each binding limit."""
