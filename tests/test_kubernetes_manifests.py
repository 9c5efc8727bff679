"""deploy/kubernetes/: every manifest is checked against the official Kubernetes Python client's
models (package ``kubernetes``), without a cluster.

* Each built-in object is walked against its model's ``attribute_map`` / ``openapi_types``
  (the API's JSON field names), so an unknown or misspelt field anywhere fails — the client's
  own deserializer ignores unknown keys — and then deserialized by the client, which checks
  required fields and value types. Kinds and apiVersions are checked against a table.
* The PrometheusRule (a prometheus-operator CRD the client has no model for) is checked by
  hand, and its groups must equal what ``queuelens rules`` generates now, with the ConfigMap's
  queuelens.yaml as ``--config`` (so the rules read what the dashboard reads).
  Regenerate it with ``python -m tests.test_kubernetes_manifests --write-prometheusrule``.
* The Deployment's security settings, probes (the real ``/health`` path and the served port),
  its ``queuelens serve`` arguments (parsed by the real CLI parser) and the ConfigMap (parsed
  by the real config loader) are asserted; the pod's command is started for real (on loopback
  and a free port) and its ``/health`` answered.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
import yaml

REPO = Path(__file__).resolve().parents[1]
K8S = REPO / "deploy" / "kubernetes"
RULE_FILE = K8S / "prometheusrule.yaml"
HEALTH_PATH = "/health"
LIVE_PATH = "/livez"
READY_PATH = "/readyz"
DOCKERFILE_UID = 10001
RULE_HEADER = """\
# Prometheus rules for controller work queues as a prometheus-operator PrometheusRule: the
# groups of `queuelens rules --window 5m --config queuelens.yaml` (the ConfigMap's file).
# Regenerate instead of editing:  python -m tests.test_kubernetes_manifests --write-prometheusrule
# (tests/test_kubernetes_manifests.py fails when they differ). The label below is what
# kube-prometheus' ruleSelector matches; set the labels your Prometheus's ruleSelector wants, and
# let its ruleNamespaceSelector include this namespace.
"""

BUILTIN_MODELS = {
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "ServiceAccount"): "V1ServiceAccount",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Service"): "V1Service",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("networking.k8s.io/v1", "NetworkPolicy"): "V1NetworkPolicy",
}
PROMETHEUS_RULE = ("monitoring.coreos.com/v1", "PrometheusRule")


# --- loading ------------------------------------------------------------------------------


def kustomization() -> dict[str, Any]:
    data = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert isinstance(data, dict)
    return data


def manifests() -> dict[str, dict[str, Any]]:
    """file name -> the one object in it, for every resource the kustomization lists."""
    out: dict[str, dict[str, Any]] = {}
    for name in kustomization()["resources"]:
        docs = [d for d in yaml.safe_load_all((K8S / name).read_text()) if d is not None]
        assert len(docs) == 1, f"{name}: expected one object, found {len(docs)}"
        out[name] = docs[0]
    return out


def by_kind(kind: str) -> dict[str, Any]:
    found = [m for m in manifests().values() if m["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def container(deployment: dict[str, Any], name: str = "queuelens") -> dict[str, Any]:
    return next(c for c in deployment["spec"]["template"]["spec"]["containers"]
                if c["name"] == name)


def config_text() -> str:
    cm = yaml.safe_load((K8S / "configmap.yaml").read_text())  # not via manifests(): the
    text = cm["data"]["queuelens.yaml"]  # writer below runs before prometheusrule.yaml exists
    assert isinstance(text, str)
    return text


# --- strict field check against the client's models -----------------------------------------


def _models() -> Any:
    kubernetes = pytest.importorskip("kubernetes", reason="pip install -e '.[test]'")
    return kubernetes.client.models


_LIST = re.compile(r"(?:List\[|list\[)(.+)\]\Z")
_DICT = re.compile(r"(?:Dict\[str, |dict\(str, )(.+)[\])]\Z")


def strict_check(value: Any, type_name: str, where: str, models: Any) -> list[str]:
    """Problems of ``value`` read as the client's ``type_name`` (``V1PodSpec``, ``List[X]`` /
    ``list[X]``, ``Dict[str, X]`` / ``dict(str, X)``, ``str``, ``int``, ``bool``, ``object``):
    unknown field names (JSON names only, as the API server reads them) and wrong scalar types."""
    if m := _LIST.match(type_name):
        if not isinstance(value, list):
            return [f"{where}: expected a list, got {type(value).__name__}"]
        return [p for i, item in enumerate(value)
                for p in strict_check(item, m.group(1), f"{where}[{i}]", models)]
    if m := _DICT.match(type_name):
        if not isinstance(value, dict):
            return [f"{where}: expected a mapping, got {type(value).__name__}"]
        return [p for k, item in value.items()
                for p in strict_check(item, m.group(1), f"{where}.{k}", models)]
    scalars: dict[str, tuple[type, ...]] = {"str": (str,), "int": (int,), "bool": (bool,),
                                           "float": (int, float), "object": (str, int, dict, list)}
    if type_name in scalars:
        ok = isinstance(value, scalars[type_name]) and not (
            type_name == "int" and isinstance(value, bool))
        return [] if ok else [f"{where}: expected {type_name}, got {value!r}"]
    model = getattr(models, type_name, None)
    if model is None:  # datetime, bytes, …: none appear in these manifests
        return [f"{where}: no check for type {type_name}"]
    if not isinstance(value, dict):
        return [f"{where}: expected a {type_name} mapping, got {type(value).__name__}"]
    fields = {json_name: model.openapi_types[attr] for attr, json_name in
              model.attribute_map.items()}
    problems = [f"{where}.{key}: unknown field of {type_name}" for key in value
                if key not in fields]
    for key, item in value.items():
        if key in fields:
            problems += strict_check(item, fields[key], f"{where}.{key}", models)
    return problems


@pytest.mark.parametrize("name", list(kustomization()["resources"]))
def test_manifest_is_a_valid_object(name: str) -> None:
    obj = manifests()[name]
    key = (obj.get("apiVersion"), obj.get("kind"))
    assert obj.get("metadata", {}).get("name"), f"{name}: metadata.name is required"
    if key == PROMETHEUS_RULE:
        return  # a CRD: test_prometheus_rule_structure
    assert key in BUILTIN_MODELS, f"{name}: unexpected apiVersion/kind {key}"
    models = _models()
    model_name = BUILTIN_MODELS[key]
    assert strict_check(obj, model_name, name, models) == []
    from kubernetes.client import ApiClient

    deserialize = getattr(ApiClient(), "_ApiClient__deserialize")  # noqa: B009 (name-mangled)
    parsed = deserialize(obj, model_name)  # the client checks required fields and types
    assert type(parsed).__name__ == model_name
    assert (parsed.api_version, parsed.kind) == key


def test_strict_check_catches_a_misspelt_field() -> None:
    models = _models()
    deployment = by_kind("Deployment")
    c = container(deployment)
    bad = {**c, "securityContext": {**c["securityContext"], "readOnlyRootFileSystem": True},
           "livenessProbe": {"httpGet": {"path": HEALTH_PATH, "port": "http"},
                             "periodSecond": 20}}
    problems = strict_check(bad, "V1Container", "c", models)
    assert ("c.securityContext.readOnlyRootFileSystem: unknown field of V1SecurityContext"
            in problems)
    assert "c.livenessProbe.periodSecond: unknown field of V1Probe" in problems
    # snake_case names are accepted by the client's models but not by the API server
    assert strict_check({"container_port": 1}, "V1ContainerPort", "p", models) == [
        "p.container_port: unknown field of V1ContainerPort"]
    assert strict_check({"containerPort": "8050"}, "V1ContainerPort", "p", models) == [
        "p.containerPort: expected int, got '8050'"]


def test_kustomization_lists_every_manifest() -> None:
    k = kustomization()
    assert (k["apiVersion"], k["kind"]) == ("kustomize.config.k8s.io/v1beta1", "Kustomization")
    files = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(k["resources"]) == sorted(files)
    kinds = sorted(m["kind"] for m in manifests().values())
    assert kinds == sorted(["Namespace", "ServiceAccount", "ConfigMap", "Deployment", "Service",
                            "NetworkPolicy", "PrometheusRule"])
    assert k["namespace"] == by_kind("Namespace")["metadata"]["name"]
    assert all("namespace" not in m["metadata"] for m in manifests().values())


# --- the Deployment -----------------------------------------------------------------------


def _effective(pod: dict[str, Any], c: dict[str, Any], key: str) -> Any:
    return c.get("securityContext", {}).get(key, pod.get("securityContext", {}).get(key))


def test_deployment_security() -> None:
    deployment = by_kind("Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["serviceAccountName"] == by_kind("ServiceAccount")["metadata"]["name"]
    assert "hostNetwork" not in pod
    assert "hostPID" not in pod
    dockerfile_uid = re.search(r"useradd .*--uid (\d+)", (REPO / "Dockerfile").read_text())
    assert dockerfile_uid
    assert int(dockerfile_uid.group(1)) == DOCKERFILE_UID
    for c in pod["containers"] + pod.get("initContainers", []):
        where = c["name"]
        assert _effective(pod, c, "runAsNonRoot") is True, where
        assert _effective(pod, c, "runAsUser") == DOCKERFILE_UID, where
        assert _effective(pod, c, "seccompProfile") == {"type": "RuntimeDefault"}, where
        sc = c["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True, where
        assert sc["allowPrivilegeEscalation"] is False, where
        assert sc["capabilities"] == {"drop": ["ALL"]}, where
        assert "privileged" not in sc, where
        for kind in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(c["resources"][kind]), where


def test_writable_paths_are_empty_dirs() -> None:
    """The app writes only /tmp (the export store) and the image's
    NUMBA_CACHE_DIR; with a read-only root filesystem both must be volumes."""
    deployment = by_kind("Deployment")
    pod = deployment["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in container(deployment)["volumeMounts"]}
    numba_dir = re.search(r"ENV NUMBA_CACHE_DIR=(\S+)", (REPO / "Dockerfile").read_text())
    assert numba_dir
    for path in ("/tmp", numba_dir.group(1)):
        assert path in mounts, f"{path} is not writable"
        assert "emptyDir" in volumes[mounts[path]["name"]], path
        assert not mounts[path].get("readOnly")
    # the init container fills the numba cache volume from the image's build-time cache
    init = pod["initContainers"][0]
    target = next(m["mountPath"] for m in init["volumeMounts"]
                  if m["name"] == mounts[numba_dir.group(1)]["name"])
    assert init["command"] == ["cp", "-Rp", numba_dir.group(1) + "/.", target + "/"]
    assert init["image"] == container(deployment)["image"]


def serve_args(deployment: dict[str, Any]) -> argparse.Namespace:
    from dashboard.cli import build_parser

    c = container(deployment)
    argv = [*c["command"], *c["args"]]
    assert argv[:2] == ["queuelens", "serve"]
    return build_parser().parse_args(argv[1:])


def test_serve_command_probes_and_ports() -> None:
    from dashboard.commands.serve import DEFAULT_HOST

    deployment = by_kind("Deployment")
    c = container(deployment)
    args = serve_args(deployment)
    assert DEFAULT_HOST == "127.0.0.1"  # so 0.0.0.0 must be (and is) asked for explicitly
    assert args.host == "0.0.0.0"
    assert "--host" in c["args"]
    assert "pod network is the boundary" in (K8S / "deployment.yaml").read_text()
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"http": args.port}
    # liveness never looks at the source (issue 23 item 5); readiness reports it
    paths = {"startupProbe": LIVE_PATH, "livenessProbe": LIVE_PATH,
             "readinessProbe": READY_PATH}
    for probe, path in paths.items():
        get = c[probe]["httpGet"]
        assert get["path"] == path, probe
        assert get["port"] in ("http", args.port), probe
    # they are the app's routes, served on the probe threads
    from dashboard.app import PROBE_PATHS, create_app

    rules = {r.rule for r in create_app().url_map.iter_rules()}
    assert {LIVE_PATH, READY_PATH} <= rules & PROBE_PATHS
    # the Service and the NetworkPolicy serve that port
    service = by_kind("Service")
    assert service["spec"]["type"] == "ClusterIP"
    assert [(p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [(args.port, "http")]
    template_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= template_labels.items()
    assert deployment["spec"]["selector"]["matchLabels"].items() <= template_labels.items()


def test_config_map_is_the_mounted_queuelens_yaml() -> None:
    from collectors.config import load_config, parse_config
    from dashboard.source_args import source_from_args

    deployment = by_kind("Deployment")
    args = serve_args(deployment)
    pod = deployment["spec"]["template"]["spec"]
    cm = by_kind("ConfigMap")
    mount = next(m for m in container(deployment)["volumeMounts"] if m["name"] == "config")
    volume = next(v for v in pod["volumes"] if v["name"] == "config")
    assert volume["configMap"]["name"] == cm["metadata"]["name"]
    assert mount["readOnly"] is True
    item = volume["configMap"]["items"][0]
    assert os.path.join(mount["mountPath"], item["path"]) == args.config
    assert item["key"] == "queuelens.yaml"
    config = parse_config(config_text(), origin="configmap")
    url = config.prometheus["url"]
    assert url.startswith("http")
    assert ".svc" in url
    # no environment variable overrides the file's URL, and no token file needs the SA token
    assert not any(e["name"].startswith("QUEUELENS_PROMETHEUS_")
                   for e in container(deployment).get("env", []))
    assert "token_file" not in config.prometheus
    assert "/var/run/secrets" not in config_text()
    assert by_kind("ServiceAccount")["automountServiceAccountToken"] is False
    # `serve` with these args reads Prometheus at that URL, not the demo
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"ql-k8s-{os.getpid()}.yaml"
    tmp.write_text(config_text())
    try:
        args.config = str(tmp)
        source = source_from_args(args, config=load_config(tmp), env={})
        assert source.name == url  # Prometheus at the ConfigMap's URL, not the demo
    finally:
        tmp.unlink()


def test_network_policy() -> None:
    policy = by_kind("NetworkPolicy")["spec"]
    deployment = by_kind("Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= labels.items()
    assert sorted(policy["policyTypes"]) == ["Egress", "Ingress"]
    port = serve_args(deployment).port
    assert [p for rule in policy["ingress"] for p in rule["ports"]] == [
        {"port": port, "protocol": "TCP"}]
    egress = {(p["port"], p["protocol"]) for rule in policy["egress"] for p in rule["ports"]}
    from collectors.config import parse_config

    prom_port = urlsplit(parse_config(config_text()).prometheus["url"]).port
    assert egress == {(53, "UDP"), (53, "TCP"), (prom_port, "TCP")}
    assert all(rule.get("to") for rule in policy["egress"])  # never "to anywhere"


# --- the PrometheusRule -------------------------------------------------------------------


def generated_groups() -> list[dict[str, Any]]:
    """The groups `queuelens rules --config <the ConfigMap's queuelens.yaml>` prints now."""
    from collectors.config import parse_config
    from dashboard.commands.rules import DEFAULT_WINDOW_S
    from dashboard.rules import build_rule_groups

    profile = parse_config(config_text(), origin="queuelens.yaml").profile
    return [g.as_dict() for g in build_rule_groups(profile, DEFAULT_WINDOW_S)]


def render_prometheus_rule() -> str:
    obj = {
        "apiVersion": PROMETHEUS_RULE[0],
        "kind": PROMETHEUS_RULE[1],
        "metadata": {"name": "queuelens",
                     "labels": {"app.kubernetes.io/name": "queuelens",
                                "role": "alert-rules"}},
        "spec": {"groups": generated_groups()},
    }
    return RULE_HEADER + yaml.safe_dump(obj, sort_keys=False, default_flow_style=False,
                                        allow_unicode=True, width=1_000_000)


def test_prometheus_rule_structure() -> None:
    rule = by_kind("PrometheusRule")
    assert (rule["apiVersion"], rule["kind"]) == PROMETHEUS_RULE
    assert set(rule) == {"apiVersion", "kind", "metadata", "spec"}
    assert set(rule["spec"]) == {"groups"}
    groups = rule["spec"]["groups"]
    assert groups
    assert len({g["name"] for g in groups}) == len(groups)
    for group in groups:
        assert set(group) <= {"name", "interval", "rules"}, group["name"]
        assert group["rules"], group["name"]
        for r in group["rules"]:
            assert ("record" in r) != ("alert" in r), r
            assert isinstance(r["expr"], str), r
            assert r["expr"].strip(), r
            allowed = ({"record", "expr", "labels"} if "record" in r
                       else {"alert", "expr", "for", "labels", "annotations"})
            assert set(r) <= allowed, r
    assert any("record" in r for g in groups for r in g["rules"])
    assert any("alert" in r for g in groups for r in g["rules"])


def test_prometheus_rule_matches_queuelens_rules(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path) -> None:
    """The committed PrometheusRule's groups are what `queuelens rules` generates now."""
    from dashboard.cli import main as cli_main

    config = tmp_path / "queuelens.yaml"
    config.write_text(config_text())
    assert cli_main(["rules", "--config", str(config)]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)["groups"]
    committed = by_kind("PrometheusRule")["spec"]["groups"]
    hint = ("deploy/kubernetes/prometheusrule.yaml is stale: run "
            "`python -m tests.test_kubernetes_manifests --write-prometheusrule`")
    assert committed == printed, hint
    assert RULE_FILE.read_text() == render_prometheus_rule(), hint


# --- the pod's command, run for real --------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """The Deployment's `queuelens serve` with its ConfigMap, on loopback and a free port
    (the only two changes), with /tmp pointed at a scratch directory."""
    deployment = by_kind("Deployment")
    c = container(deployment)
    config = tmp_path / "queuelens.yaml"
    config.write_text(config_text())
    port = _free_port()
    args = list(c["args"])
    args[args.index("--config") + 1] = str(config)
    args[args.index("--host") + 1] = "127.0.0.1"
    args[args.index("--port") + 1] = str(port)
    exe = Path(sys.executable).with_name("queuelens")
    assert exe.exists(), exe
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUEUELENS_")}
    env["TMPDIR"] = str(tmp_path)
    proc = subprocess.Popen([str(exe), "serve", *args], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.timeout(90)
def test_pod_command_serves_health(served: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            answer = requests.get(served + HEALTH_PATH, timeout=5)
            break
        except requests.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)
    assert answer.status_code == 200
    body = answer.json()
    assert body["status"] == "ok"
    assert body["source"] != "demo"


# --- kustomize ----------------------------------------------------------------------------


if __name__ == "__main__":
    if sys.argv[1:] != ["--write-prometheusrule"]:
        sys.exit("usage: python -m tests.test_kubernetes_manifests --write-prometheusrule")
    RULE_FILE.write_text(render_prometheus_rule())
    print(f"wrote {RULE_FILE.relative_to(REPO)}")
