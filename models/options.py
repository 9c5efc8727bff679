"""What to do about each binding limit: the ranked options of a capacity plan, with trade-offs.

One catalogue, read by the advisor (the contention verdict's ``steps``) and by the capacity
plan (:mod:`models.plan`, the advice card's ranked options), so the words cannot drift apart:
a view of the binding-limit registry (:mod:`models.bindings`), where each limit's module
declares its words and options.
Each limit's options are in the order an operator should try them: the cheapest change that
moves the limit first. Sources: client-go ``rest.Config`` QPS/Burst and ``flowcontrol``
(the client token bucket), Kubernetes API Priority and Fairness (FlowSchema, priority levels;
non-kube-system ServiceAccounts map to ``workload-low`` by default), client-go
``workqueue.DefaultControllerRateLimiter`` (per-key exponential backoff plus an overall
bucket), controller-runtime ``controller.Options.MaxConcurrentReconciles``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from models.bindings import limits
from models.bindings.registry import Option

__all__ = ["BINDING_WORDS", "OPTIONS", "Option"]

BINDING_WORDS: Mapping[str, str] = MappingProxyType(
    {name: lim.words for name, lim in limits().items()})
"""What each binding limit of a plan is, in words (each limit's module of
:mod:`models.bindings` declares them)."""

OPTIONS: Mapping[str, tuple[Option, ...]] = MappingProxyType(
    {name: lim.options for name, lim in limits().items()})
"""The ranked options for each binding limit."""
