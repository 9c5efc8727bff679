"""The controller's CPU (issue 20), read from a REAL Prometheus backfilled with series in the
shapes upstream code exposes them:

* client_golang's process and Go collectors as controller-runtime v0.24.1 registers them
  (``process_cpu_seconds_total``, ``go_sched_gomaxprocs_threads``,
  ``go_sched_latencies_seconds`` with the bucket bounds of the reference exposition
  ``controller-runtime-v0.24.1-workqueue.txt``), on the controllers' own job/instance/pod;
* kube-state-metrics v2 (``kube_pod_container_info``, ``kube_pod_container_resource_limits``
  with ``resource``/``unit``, a memory limit beside the CPU one) and the kubelet's cAdvisor
  endpoint (``container_cpu_cfs_periods_total``, ``..._throttled_periods_total`` with
  ``id``/``image``/``name``, the pod-level cgroup's ``container=""`` and the pause
  container's ``POD`` series) on their own jobs, keyed by namespace/pod/container.

Four controllers in four pods: ``widgets`` (one container, no container label on its series;
a pod of the same name in another namespace with another limit), ``gadgets`` (a sidecar
beside it, its series name their container), ``dual`` (two containers, no container label:
not joined) and ``lonely`` (no process, Go or container series at all).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from collectors.config import ConnectionSettings
from collectors.doctor import read_prometheus
from collectors.profile import MetricNames, Profile
from collectors.prom_client import PrometheusClient
from collectors.snapshot import PrometheusSource
from models.contract import DoctorReport, ProcessReport, SignalReport, diagnose
from models.measurements import QueueSnapshot, Snapshot
from tests.support import beyond_om as bo
from tests.support.prometheus import PrometheusProcess, backfill, start_prometheus

pytestmark = pytest.mark.prometheus

SCHED_LE = ("6.399999999999999e-08", "6.399999999999999e-07", "7.167999999999999e-06",
            "8.191999999999999e-05", "0.0009175039999999999", "0.010485759999999998",
            "0.11744051199999998")
"""go_sched_latencies_seconds' finite bounds, copied from the reference exposition."""
SCHED_BUCKETS = tuple(float(b) for b in SCHED_LE)

KSM = {"job": "kube-state-metrics", "instance": "10.2.0.5:8080"}
KUBELET = {"job": "kubelet", "instance": "10.0.0.5:10250", "metrics_path": "/metrics/cadvisor",
           "node": "node-1"}


def _counter_rate(slope: float) -> float:
    """What rate() over the window must give for a counter written as slope × (t − START):
    its increase over the window ÷ the window, from the two values the fixture wrote."""
    at, w = bo.AT, bo.WINDOW_S
    return (slope * (at - bo.START) - slope * (at - w - bo.START)) / w


CONTROLLERS = {
    # queue: (namespace, pod, container label on its series, cpu cores, gomaxprocs,
    #         sched rate, sched mean, containers {name: (limit or None, periods, throttled)})
    "widgets": ("team-a", "op-a-0", "", 0.35, 1.0, 2000.0, 0.002,
                {"manager": (0.5, 10.0, 2.5)}),
    "gadgets": ("team-b", "op-b-0", "manager", 1.2, 2.0, 5000.0, 5e-06,
                {"manager": (2.0, 10.0, 0.0), "kube-rbac-proxy": (0.5, 10.0, 5.0)}),
    "dual": ("team-d", "op-d-0", "", 0.1, 4.0, 100.0, 0.05,
             {"manager": (1.0, 10.0, 1.0), "sidecar": (1.0, 10.0, 9.0)}),
    "lonely": ("team-c", "op-c-0", "", None, None, None, None, {}),
}


def _ksm_and_cadvisor(doc: bo._Doc, ns: str, pod: str,
                      containers: Mapping[str, tuple[float | None, float, float]]) -> None:
    uid = f"uid-{ns}-{pod}"
    for name, (limit, periods, throttled) in containers.items():
        c = {"namespace": ns, "pod": pod, "uid": uid, "container": name}
        doc.gauge("kube_pod_container_info", {**KSM, **c, "image": f"example.com/{name}:v1",
                                              "image_spec": f"example.com/{name}:v1",
                                              "image_id": "", "container_id": f"cri://{name}"},
                  1.0)
        doc.gauge("kube_pod_container_resource_limits",
                  {**KSM, **c, "node": "node-1", "resource": "memory", "unit": "byte"},
                  134217728.0)
        if limit is None:
            continue
        doc.gauge("kube_pod_container_resource_limits",
                  {**KSM, **c, "node": "node-1", "resource": "cpu", "unit": "core"}, limit)
        adv = {**KUBELET, "namespace": ns, "pod": pod, "container": name,
               "id": f"/kubepods/burstable/pod{uid}/{name}", "image": f"example.com/{name}:v1",
               "name": name}
        doc.counter("container_cpu_cfs_periods_total", adv, periods)
        doc.counter("container_cpu_cfs_throttled_periods_total", adv, throttled)
    # the pod-level cgroup and the pause container: no container of the spec
    for ctr in ("", "POD"):
        adv = {**KUBELET, "namespace": ns, "pod": pod, "container": ctr,
               "id": f"/kubepods/burstable/pod{uid}/{ctr or 'pod'}", "image": "", "name": ctr}
        doc.counter("container_cpu_cfs_periods_total", adv, 1000.0)
        doc.counter("container_cpu_cfs_throttled_periods_total", adv, 999.0)


def text() -> str:
    doc = bo._Doc()
    for i, (queue, (ns, pod, ctr, cores, procs, rate, mean, containers)) in enumerate(
            CONTROLLERS.items()):
        proc = {"job": "operator", "instance": f"10.1.0.{i + 1}:8443", "pod": pod,
                "namespace": ns, **({"container": ctr} if ctr else {})}
        doc.counter("workqueue_adds_total", {"name": queue, "controller": queue, **proc}, 10.0)
        doc.gauge("controller_runtime_max_concurrent_reconciles",
                  {"controller": queue, **proc}, 4.0)
        if cores is not None and procs is not None and rate is not None and mean is not None:
            doc.counter("process_cpu_seconds_total", proc, cores)
            doc.gauge("go_sched_gomaxprocs_threads", proc, procs)
            doc.histogram("go_sched_latencies_seconds", proc, SCHED_BUCKETS, rate, mean)
        _ksm_and_cadvisor(doc, ns, pod, containers)
    # a pod of the same name in another namespace (another team's), with another limit
    _ksm_and_cadvisor(doc, "team-z", "op-a-0", {"manager": (8.0, 10.0, 10.0)})
    # a Go exporter that runs no queue: its process series must not reach the snapshot
    other = {"job": "node-exporter", "instance": "10.0.0.5:9100"}
    doc.counter("process_cpu_seconds_total", other, 3.0)
    doc.gauge("go_sched_gomaxprocs_threads", other, 16.0)
    return doc.render()


@pytest.fixture(scope="module")
def cpu_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    work: Path = tmp_path_factory.mktemp("cpu")
    server = start_prometheus(work / "prom", tsdb=backfill(text(), work))
    try:
        yield server
    finally:
        server.stop()


def _client(server: PrometheusProcess) -> PrometheusClient:
    return PrometheusClient(ConnectionSettings(url=server.url))


@pytest.fixture(scope="module")
def snap(cpu_prometheus: PrometheusProcess) -> Snapshot:
    return PrometheusSource(_client(cpu_prometheus), Profile()).snapshot(float(bo.AT),
                                                                          bo.WINDOW_S)


def _q(snap: Snapshot, name: str) -> QueueSnapshot:
    return next(q for q in snap.queues if q.queue == name)


def _p99_in_one_bucket(mean: float) -> tuple[float, float, float]:
    """Every observation in the bucket (lo, hi] holding ``mean``: the 0.99 rank lies 99 % of
    the way through it (PromQL interpolates linearly from lo)."""
    bounds = (0.0, *SCHED_BUCKETS)
    k = next(j for j in range(1, len(bounds)) if bounds[j] >= mean)
    lo, hi = bounds[k - 1], bounds[k]
    return lo + (hi - lo) * 0.99, lo, hi


@pytest.mark.parametrize("queue", ["widgets", "gadgets"])
def test_the_cpu_fields_are_the_values_written(snap: Snapshot, queue: str) -> None:
    cores, procs, rate, mean, containers = CONTROLLERS[queue][3:]
    q = _q(snap, queue)
    assert cores is not None
    assert rate is not None
    assert mean is not None
    assert q.cpu_used_cores == pytest.approx(_counter_rate(cores), rel=1e-9)
    assert q.cpu_gomaxprocs == procs
    # mean = rate(_sum) / rate(_count) = (rate × mean) / rate
    assert q.cpu_sched_latency_mean_s == pytest.approx(
        _counter_rate(rate * mean) / _counter_rate(rate), rel=1e-9)
    p99, lo, hi = _p99_in_one_bucket(mean)
    assert q.cpu_sched_latency_p99_s == pytest.approx(p99, rel=1e-9)
    assert q.quantile_bounds["cpu_sched_latency_p99_s"] == pytest.approx((lo, hi))
    # the controller's container: the pod's only one (widgets), or the one its series name
    # (gadgets: the sidecar's 0.5 core and its throttling are not the controller's)
    limit, periods, throttled = containers["manager"]
    assert q.cpu_limit_cores == limit
    assert q.cpu_throttled_share == pytest.approx(
        _counter_rate(throttled) / _counter_rate(periods), rel=1e-9)
    for name in ("cpu_used_cores", "cpu_gomaxprocs", "cpu_sched_latency_mean_s",
                 "cpu_sched_latency_p99_s", "cpu_limit_cores", "cpu_throttled_share"):
        assert name not in q.missing, (queue, name)


def test_the_join_is_on_the_pod_and_its_namespace(snap: Snapshot) -> None:
    # team-z's op-a-0 (8 cores, throttled in every period) is another pod of the same name
    widgets = _q(snap, "widgets")
    assert widgets.cpu_limit_cores == 0.5
    assert widgets.cpu_throttled_share == pytest.approx(0.25, rel=1e-9)
    # each controller gets its own process's figures, not the other's or the exporter's
    assert _q(snap, "gadgets").cpu_used_cores == pytest.approx(1.2, rel=1e-9)
    assert widgets.cpu_used_cores == pytest.approx(0.35, rel=1e-9)


def test_a_pod_of_two_containers_without_a_container_label_is_not_summed(
        snap: Snapshot) -> None:
    q = _q(snap, "dual")
    assert q.cpu_used_cores == pytest.approx(0.1, rel=1e-9)  # the process's own: joined
    for name in ("cpu_limit_cores", "cpu_throttled_share"):
        assert getattr(q, name) is None
        reason = q.missing[name]
        assert "team-d/op-d-0 has 2 containers (manager, sidecar)" in reason, reason
        assert "'container' label" in reason


def test_a_process_without_the_optional_series_gets_none_with_a_reason(
        snap: Snapshot) -> None:
    q = _q(snap, "lonely")
    for name, metric in (("cpu_used_cores", "process_cpu_seconds_total"),
                         ("cpu_gomaxprocs", "go_sched_gomaxprocs_threads"),
                         ("cpu_sched_latency_mean_s", "go_sched_latencies_seconds_sum"),
                         ("cpu_sched_latency_p99_s", "go_sched_latencies_seconds_bucket")):
        assert getattr(q, name) is None, name
        assert f"no {metric} series" in q.missing[name], (name, q.missing[name])
        assert "op-c-0" in q.missing[name]  # names the process
    for name in ("cpu_limit_cores", "cpu_throttled_share"):
        assert getattr(q, name) is None
        assert "no kube_pod_container_info series for the pod" in q.missing[name], \
            q.missing[name]


def test_the_cpu_queries_are_sent_only_for_metrics_that_exist(
        cpu_prometheus: PrometheusProcess) -> None:
    """Renamed to names no series has, the nine CPU queries are not sent (the presence
    query found none of their metrics) and every CPU field says which series is missing."""
    renamed = {k: f"absent_{k}" for k in ("process_cpu", "gomaxprocs", "sched_latency",
                                          "container_info", "container_cpu_limit",
                                          "cfs_periods", "cfs_throttled_periods")}
    counts = {}
    snaps = {}
    for case, profile in (("default", Profile()),
                          ("renamed", Profile(metrics=replace(MetricNames(), **renamed)))):
        client = _client(cpu_prometheus)
        snaps[case] = PrometheusSource(client, profile).snapshot(float(bo.AT), bo.WINDOW_S)
        counts[case] = client.request_count
    assert counts["default"] - counts["renamed"] == 9
    q = _q(snaps["renamed"], "widgets")
    assert q.cpu_used_cores is None
    assert "no absent_process_cpu series" in q.missing["cpu_used_cores"]
    assert q.cpu_limit_cores is None
    assert "absent_container_info" in q.missing["cpu_limit_cores"]


# --- the doctor -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report(cpu_prometheus: PrometheusProcess) -> DoctorReport:
    reading = read_prometheus(_client(cpu_prometheus), Profile(), float(bo.AT), 1800.0)
    return diagnose(reading)


def _proc(report: DoctorReport, pod: str) -> ProcessReport:
    return next(p for p in report.processes if p.labels.get("pod") == pod)


def _sig(p: ProcessReport, signal: str) -> SignalReport:
    return next(s for s in p.signals if s.signal == signal)


CPU_SIGNALS = ("cpu_used", "cpu_gomaxprocs", "cpu_run_queue", "cpu_limit", "cpu_throttling")


@pytest.mark.parametrize("pod", ["op-a-0", "op-b-0"])
def test_the_doctor_finds_every_cpu_signal(report: DoctorReport, pod: str) -> None:
    p = _proc(report, pod)
    for signal in CPU_SIGNALS:
        s = _sig(p, signal)
        assert s.status == "ok", (pod, signal, s.detail)
    assert "container 'manager'" in _sig(p, "cpu_limit").detail
    # the exporter's process series are no controller's
    assert not any(p.labels.get("job") == "node-exporter" for p in report.processes)


def test_the_doctor_says_what_is_missing_and_the_fix(report: DoctorReport) -> None:
    lonely = _proc(report, "op-c-0")
    for signal in ("cpu_used", "cpu_gomaxprocs", "cpu_run_queue"):
        s = _sig(lonely, signal)
        assert s.status == "missing"
        assert s.fix is not None
        assert "collectors.New" in s.fix
        assert "cpu" in s.cost
    used = _sig(lonely, "cpu_used")
    assert "process collector" in (used.fix or "")
    limit = _sig(lonely, "cpu_limit")
    assert limit.status == "missing"
    assert "job_name: kube-state-metrics" in (limit.fix or "")
    assert "honor_labels: true" in (limit.fix or "")
    dual = _proc(report, "op-d-0")
    for signal in ("cpu_limit", "cpu_throttling"):
        s = _sig(dual, signal)
        assert s.status == "missing"
        assert "has 2 containers" in s.detail
        assert "__meta_kubernetes_pod_container_name" in (s.fix or "")
