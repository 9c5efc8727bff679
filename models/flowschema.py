"""A dedicated API Priority and Fairness FlowSchema and priority level for one controller.

Kubernetes' default FlowSchema ``service-accounts`` (matching precedence 9000) sends every
ServiceAccount outside kube-system to the ``workload-low`` priority level (apiserver
``pkg/apis/flowcontrol/bootstrap/default.go``), where a controller competes for seats with
every other workload and its wait cannot be told from theirs: the APF metrics carry only
``priority_level`` and ``flow_schema``. A FlowSchema of lower precedence that matches the
controller's ServiceAccount gives it its own level — its own seats, its own queue, its own
series — which is both the fix for a saturated ``workload-low`` and the way to measure the
controller alone (kubernetes.io/docs/concepts/cluster-administration/flow-control).

Seats follow from shares: a level's nominal concurrency limit is
``ceil(server concurrency × its nominalConcurrencyShares ÷ the sum of every level's
shares)`` (the server's concurrency is ``--max-requests-inflight`` +
``--max-mutating-requests-inflight``, 600 by default). :func:`seats_needed` sizes the level
from the controller's own demand: by Little's law its requests in flight are its seconds per
second in API requests.

Pure: text out, nothing applied. The YAML is ``flowcontrol.apiserver.k8s.io/v1`` (GA in
Kubernetes 1.29); every string is written as a JSON string, which YAML reads as the same
string, so no label value can break the document.
"""

from __future__ import annotations

import json
import math
import re

from models.formatting import sig

__all__ = ["DEFAULT_SERVER_SEATS", "flowschema_manifest", "flowschema_name", "seats_needed",
           "shares_for"]

DEFAULT_SERVER_SEATS = 600
"""--max-requests-inflight (400) + --max-mutating-requests-inflight (200), the defaults."""

DEFAULT_SHARES_TOTAL = 245 + 30
"""The bootstrap levels' nominalConcurrencyShares in Kubernetes ≥ 1.29 (global-default 20,
leader-election 10, node-high 40, system 30, workload-high 40, workload-low 100, catch-all 5)
and the new level's own share of about 30 on top: a rough denominator, said as such."""

_DNS = re.compile(r"[^a-z0-9]+")


def seats_needed(api_request_s_per_s: float | None, headroom: float = 1.5) -> int:
    """Seats for a controller whose workers spend ``api_request_s_per_s`` seconds per second
    in API requests (its mean requests in flight, by Little's law), with ``headroom`` for its
    peaks; at least 1. Unknown demand: 10 seats."""
    if api_request_s_per_s is None or not math.isfinite(api_request_s_per_s) \
            or api_request_s_per_s <= 0:
        return 10
    return max(1, math.ceil(api_request_s_per_s * headroom))


def shares_for(seats: int, server_seats: int = DEFAULT_SERVER_SEATS,
               shares_total: int = DEFAULT_SHARES_TOTAL) -> int:
    """The fewest nominalConcurrencyShares that give ``seats`` seats: ceil(server × shares ÷
    total) ≥ seats ⇔ shares > (seats − 1) × total ÷ server (at least 1)."""
    return max(1, (max(seats, 1) - 1) * shares_total // max(1, server_seats) + 1)


def _dns_name(text: str) -> str:
    name = _DNS.sub("-", text.lower()).strip("-")[:50].strip("-")
    return name or "controller"


def flowschema_name(controller: str) -> str:
    """The objects' name for ``controller``: ``queuelens-<a DNS label of it>``."""
    return f"queuelens-{_dns_name(controller)}"


def flowschema_manifest(controller: str, *, namespace: str | None = None,
                        service_account: str | None = None,
                        api_request_s_per_s: float | None = None) -> str:
    """The FlowSchema + PriorityLevelConfiguration for ``controller`` (a name used only to
    name the objects), matching ServiceAccount ``namespace/service_account`` (placeholders
    when not known: the metrics do not say which ServiceAccount a process runs as)."""
    name = flowschema_name(controller)
    seats = seats_needed(api_request_s_per_s)
    shares = shares_for(seats)
    ns = namespace or "<controller-namespace>"
    sa = service_account or "<controller-service-account>"
    demand = (f"{sig(api_request_s_per_s)} requests in flight on average"
              if api_request_s_per_s is not None and math.isfinite(api_request_s_per_s)
              else "its requests in flight are not measured (rest_client_request_duration_"
                   "seconds)")
    q = json.dumps
    return "\n".join([
        f"# A priority level of its own for {q(controller)}: {demand};",
        f"# about {seats} seats = ceil(server seats x {shares} / sum of all levels' shares)",
        "# (600 server seats by default). Fill in the ServiceAccount, then kubectl apply.",
        "apiVersion: flowcontrol.apiserver.k8s.io/v1",
        "kind: PriorityLevelConfiguration",
        "metadata:",
        f"  name: {q(name)}",
        "spec:",
        "  type: Limited",
        "  limited:",
        f"    nominalConcurrencyShares: {shares}",
        "    lendablePercent: 0",
        "    limitResponse:",
        "      type: Queue",
        "      queuing:",
        "        queues: 16",
        "        handSize: 4",
        "        queueLengthLimit: 50",
        "---",
        "apiVersion: flowcontrol.apiserver.k8s.io/v1",
        "kind: FlowSchema",
        "metadata:",
        f"  name: {q(name)}",
        "spec:",
        "  # below service-accounts (9000), so it is matched first",
        "  matchingPrecedence: 1000",
        "  priorityLevelConfiguration:",
        f"    name: {q(name)}",
        "  distinguisherMethod:",
        "    type: ByUser",
        "  rules:",
        "    - subjects:",
        "        - kind: ServiceAccount",
        "          serviceAccount:",
        f"            namespace: {q(ns)}",
        f"            name: {q(sa)}",
        "      resourceRules:",
        "        - verbs: [\"*\"]",
        "          apiGroups: [\"*\"]",
        "          resources: [\"*\"]",
        "          clusterScope: true",
        "          namespaces: [\"*\"]",
        "",
    ])
