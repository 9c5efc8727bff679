"""The binding limits: what caps a queue's throughput, each with its model.

A capacity plan names one binding limit (:mod:`models.plan`); its rows — throughput, wait
and utilization at every worker count — come from that limit's model, so a plan that says
"a shared limit binds" never promises what only more workers would give:

* ``workers``: M/M/c, or the finite-key model where the key count is known
  (:mod:`models.whatif`);
* ``coherency``: the USL fitted on the range (:mod:`models.contention`);
* every limit with a measured ceiling X* (:data:`CEILING_LIMITS`): the shared-resource model
  of :mod:`models.bindings.ceiling`;
* the worker-count steps of the history: :mod:`models.bindings.steps` reads a ceiling from a
  count that rose while the throughput did not follow.

Each limit is one module here declaring its :class:`~models.bindings.registry.BindingLimit`
(words, label, options, rows model, the verdict kinds and contention reasons that name it,
its knobs and ceiling estimator) with one :func:`~models.bindings.registry.register` call;
the modules are imported below (the registry lists them in that order). Adding a limit is
one module and its name in that import.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from models.bindings import (  # noqa: F401  (each module registers its limit)
    admission_webhook,
    api_server,
    client_limiter,
    coherency,
    cpu,
    hot_key,
    none,
    retry_policy,
    shared_resource,
    stuck_worker,
    unknown,
    workers,
    write_conflicts,
)
from models.bindings.registry import BindingLimit, limits

__all__ = ["CEILING_LIMITS", "BindingLimit", "limits"]

CEILING_LIMITS: Mapping[str, float] = MappingProxyType({
    lim.name: lim.ceiling_cv2 for lim in limits().values() if lim.ceiling_cv2 is not None})
"""The limits whose rows follow the shared-ceiling model, with the cv² of the shared
resource's service: 0 for the client's token bucket (it spaces its tokens evenly:
golang.org/x/time/rate), 1 where a resource is held for a variable time (a lock, a pool, an
API server seat, a webhook slot, a core)."""
