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
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["CEILING_LIMITS"]

CEILING_LIMITS: Mapping[str, float] = MappingProxyType({
    "client_limiter": 0.0,
    "shared_resource": 1.0,
    "api_server": 1.0,
    "admission_webhook": 1.0,
    "write_conflicts": 1.0,
    "cpu": 1.0,
})
"""The limits whose rows follow the shared-ceiling model, with the cv² of the shared
resource's service: 0 for the client's token bucket (it spaces its tokens evenly:
golang.org/x/time/rate), 1 where a resource is held for a variable time (a lock, a pool, an
API server seat, a webhook slot, a core)."""
