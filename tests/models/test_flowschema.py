"""The dedicated FlowSchema manifest: valid YAML of the flowcontrol v1 kinds, the shares
solved from Kubernetes' seat formula, and no label value able to break the document."""

from __future__ import annotations

import math

import yaml

from models.flowschema import (
    DEFAULT_SERVER_SEATS,
    DEFAULT_SHARES_TOTAL,
    flowschema_manifest,
    seats_needed,
    shares_for,
)


def test_the_manifest_is_a_priority_level_and_a_flow_schema_for_the_service_account() -> None:
    docs = list(yaml.safe_load_all(flowschema_manifest(
        "replicaset", namespace="ops", service_account="op-sa", api_request_s_per_s=7.9)))
    level, schema = docs
    assert level["kind"] == "PriorityLevelConfiguration"
    assert schema["kind"] == "FlowSchema"
    for doc in docs:
        assert doc["apiVersion"] == "flowcontrol.apiserver.k8s.io/v1"
        assert doc["metadata"]["name"] == "queuelens-replicaset"
    spec = schema["spec"]
    assert spec["priorityLevelConfiguration"]["name"] == "queuelens-replicaset"
    # matched before the default service-accounts schema (precedence 9000)
    assert spec["matchingPrecedence"] < 9000
    (subject,) = spec["rules"][0]["subjects"]
    assert subject == {"kind": "ServiceAccount",
                       "serviceAccount": {"namespace": "ops", "name": "op-sa"}}
    # 7.9 requests in flight × 1.5 headroom → 12 seats → ceil(600 × 6 / 275) = 14 ≥ 12,
    # while 5 shares give ceil(600 × 5 / 275) = 11
    assert level["spec"]["limited"]["nominalConcurrencyShares"] == 6


def test_shares_give_the_seats_by_the_apiservers_formula() -> None:
    for seats in (1, 5, 12, 40, 200):
        shares = shares_for(seats)
        # NominalCL = ceil(ServerCL × shares / Σ shares), the formula of the APF docs
        assert math.ceil(DEFAULT_SERVER_SEATS * shares / DEFAULT_SHARES_TOTAL) >= seats
        assert math.ceil(DEFAULT_SERVER_SEATS * (shares - 1) / DEFAULT_SHARES_TOTAL) < seats \
            or shares == 1
    assert seats_needed(None) == 10
    assert seats_needed(0.1) == 1


def test_a_hostile_name_stays_a_string() -> None:
    evil = 'x"\n- kind: ClusterRoleBinding\n#`'
    text = flowschema_manifest(evil, namespace=evil, service_account=evil)
    level, schema = yaml.safe_load_all(text)
    sa = schema["spec"]["rules"][0]["subjects"][0]["serviceAccount"]
    assert sa == {"namespace": evil, "name": evil}
    assert level["metadata"]["name"].startswith("queuelens-x-kind-clusterrolebinding")
    assert "ClusterRoleBinding" not in {d.get("kind") for d in (level, schema)}
