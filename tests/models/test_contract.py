"""The metric contract's pure classification: hand-built readings in, statuses and fixes out."""

from __future__ import annotations

import re
from dataclasses import fields, replace

import pytest
import yaml

from collectors.profile import MetricNames
from models.advisor import KINDS
from models.contract import (
    CONTRACT_METRICS,
    CONTRACT_SIGNALS,
    PRIORITY_SIGNAL,
    STATUSES,
    ApiServerPresence,
    ContainerPresence,
    ContractReading,
    DoctorReport,
    LeSpelling,
    Presence,
    ProcessPod,
    ProcessReport,
    QueuePriorities,
    SignalReport,
    diagnose,
    samples_of,
)
from models.options import BINDING_WORDS
from models.plan import CapacityPlan

NAMES = {f.name: getattr(MetricNames(), f.name) for f in fields(MetricNames)}
PROC = ("operator", "10.0.0.1:8080", "")
GO_LE = ("1e-08", "0.1", "1", "10", "1000", "+Inf")


def _queue_rows(queue: str, *, controller: bool = True, process: tuple[str, ...] = PROC,
                skip: tuple[str, ...] = ()) -> list[Presence]:
    """Every workqueue_* sample of one queue (controller-runtime: with the controller label)."""
    out = []
    for key in ("adds", "depth", "retries", "queue_duration", "work_duration",
                "unfinished_work", "longest_running"):
        for sample in samples_of(key, NAMES[key]):
            if sample not in skip:
                out.append(Presence(sample, queue, queue if controller else "", process))
    return out


def _controller_rows(controller: str, process: tuple[str, ...] = PROC,
                     keys: tuple[str, ...] = ("reconcile_total", "reconcile_errors",
                                              "max_concurrent_reconciles", "active_workers",
                                              "reconcile_panics", "reconcile_timeouts",
                                              "terminal_reconcile_errors")) -> list[Presence]:
    return [Presence(NAMES[k], "", controller, process) for k in keys]


def _rest_rows(process: tuple[str, ...] = PROC, opt_in: bool = True) -> list[Presence]:
    keys = ["rest_client_requests"]
    if opt_in:
        keys += ["rate_limiter_duration", "request_duration", "request_retries"]
    return [Presence(s, "", "", process) for k in keys for s in samples_of(k, NAMES[k])]


SCHED_LE = ("6.399999999999999e-08", "6.399999999999999e-07", "7.167999999999999e-06",
            "8.191999999999999e-05", "0.0009175039999999999", "0.010485759999999998",
            "0.11744051199999998", "+Inf")
"""go_sched_latencies_seconds' bounds as controller-runtime v0.24.1 exposes them (the
reference exposition)."""


def _cpu_rows(process: tuple[str, ...] = PROC) -> list[Presence]:
    """process_cpu_seconds_total and the Go collector's scheduler metrics of one process."""
    return [Presence(s, "", "", process) for k in ("process_cpu", "gomaxprocs", "sched_latency")
            for s in samples_of(k, NAMES[k])]


def _containers(pod: str = "op-0", ns: str = "ops", names: tuple[str, ...] = ("manager",),
                limited: tuple[str, ...] = ("manager",)) -> list[ContainerPresence]:
    """kube-state-metrics' container info (every container) and CPU limit (the limited ones),
    cAdvisor's CFS counters (only under a limit: a quota)."""
    out = [ContainerPresence(NAMES["container_info"], ns, pod, c) for c in names]
    for c in limited:
        out += [ContainerPresence(NAMES[k], ns, pod, c)
                for k in ("container_cpu_limit", "cfs_periods", "cfs_throttled_periods")]
    return out


def _le(process: tuple[str, ...] = PROC, texts: tuple[str, ...] = GO_LE,
        keys: tuple[str, ...] = ("queue_duration", "work_duration")) -> list[LeSpelling]:
    return [LeSpelling(NAMES[k] + "_bucket", t, process) for k in keys for t in texts]


def _reading(**kw: object) -> ContractReading:
    base: dict[str, object] = {"source": "test", "at": 1e9, "range_s": 3600.0, "names": NAMES}
    base.update(kw)
    return ContractReading(**base)  # type: ignore[arg-type]


def _cr_reading(**kw: object) -> ContractReading:
    present = [*_queue_rows("widget"), *_controller_rows("widget"), *_rest_rows(),
               *_cpu_rows()]
    base: dict[str, object] = {
        "present": tuple(present),
        "le": (*_le(), *_le(texts=SCHED_LE, keys=("sched_latency",))),
        "pods": (ProcessPod(PROC, "ops", "op-0"),), "containers": tuple(_containers())}
    base.update(kw)
    return _reading(**base)


def _only(report: DoctorReport) -> ProcessReport:
    assert len(report.processes) == 1
    return report.processes[0]


def _sig(process: ProcessReport | DoctorReport, signal: str) -> SignalReport:
    return next(s for s in process.signals if s.signal == signal)


# --- the contract as data -------------------------------------------------------------------


def test_every_need_names_a_verdict_a_binding_limit_or_a_plan_field() -> None:
    plan_fields = {f.name for f in fields(CapacityPlan)}
    for sig in (*CONTRACT_SIGNALS, PRIORITY_SIGNAL):
        for need in sig.needs:
            assert (need in KINDS or need in BINDING_WORDS
                    or need.removeprefix("plan.") in plan_fields), (sig.id, need)


def test_every_contract_metric_is_a_profile_metric_name() -> None:
    keys = {f.name for f in fields(MetricNames)}
    assert {m.key for m in CONTRACT_METRICS} <= keys
    assert all(m.kind in ("counter", "gauge", "histogram") for m in CONTRACT_METRICS)


# --- nothing there ----------------------------------------------------------------------------


def test_an_empty_reading_says_what_to_scrape() -> None:
    report = diagnose(_reading(scrape_jobs=()))
    assert report.processes == ()
    wq = _sig(report, "workqueue_series")
    assert wq.status == "missing"
    assert "no workqueue_* or controller_runtime_* series in test" in wq.detail
    assert "scrapes no target at all" in wq.detail
    assert wq.fix is not None
    assert "job_name: controllers" in wq.fix
    assert "insufficient_data" not in wq.costs
    assert "add_workers" in wq.costs
    assert _sig(report, "apiserver_series").status == "missing"
    assert report.summary.startswith("No workqueue series found in test")


def test_rest_client_alone_is_not_a_controller_but_is_named() -> None:
    report = diagnose(_reading(present=tuple(_rest_rows()), scrape_jobs=()))
    assert report.processes == ()
    assert "export rest_client_* without any workqueue_*" in _sig(report,
                                                                   "workqueue_series").detail


# --- frameworks -------------------------------------------------------------------------------


def test_a_complete_controller_runtime_process_is_all_ok() -> None:
    report = diagnose(_cr_reading())
    p = _only(report)
    assert p.detected.framework == "controller-runtime"
    assert p.detected.rest_client_metrics == {"requests_total": True,
                                              "rate_limiter_duration": True,
                                              "request_duration": True, "request_retries": True}
    statuses = {s.signal: s.status for s in p.signals}
    # no API server in the reading: that is the only gap
    assert {k for k, v in statuses.items() if v != "ok"} == {"apiserver_metrics"}
    for s in p.signals:
        assert (s.fix is None) == (s.status == "ok")
        assert (s.costs == () and s.cost == "") or s.status != "ok"
    assert any("1000 s" in h for h in p.detected.version_hints)


def test_controller_runtime_without_opt_in_gets_the_register_call() -> None:
    present = [*_queue_rows("widget"), *_controller_rows("widget"), *_rest_rows(opt_in=False)]
    p = _only(diagnose(_cr_reading(present=tuple(present))))
    lim = _sig(p, "client_limiter_wait")
    assert lim.status == "missing"
    assert lim.fix is not None
    assert ("metrics.RegisterRESTClientMetrics(metrics.MetricRateLimiter"
                                    "Latency, metrics.MetricRequestRetry, "
                                    "metrics.MetricRequestLatency)") in lim.fix
    assert "client_limiter" in lim.costs
    assert "QPS = -1" in lim.detail


def test_component_base_needs_workers_from_the_config() -> None:
    proc = ("kube-controller-manager", "10.0.0.2:10257", "")
    present = [*_queue_rows("deployment", controller=False, process=proc),
               *_queue_rows('we"ird: q', controller=False, process=proc), *_rest_rows(proc)]
    reading = _reading(present=tuple(present), le=tuple(_le(proc)))
    p = _only(diagnose(reading))
    assert p.detected.framework == "component-base"
    assert not any(s.signal in ("active_workers", "reconcile_results") for s in p.signals)
    wc = _sig(p, "worker_count")
    assert wc.status == "missing"
    assert wc.fix is not None
    assert "--concurrent-deployment-syncs" in wc.fix
    doc = yaml.safe_load(wc.fix)
    assert doc == {"profile": {"workers": {"deployment": "<N>", 'we"ird: q': "<N>"}}}
    configured = replace(reading, configured_workers={"deployment": 5.0, 'we"ird: q': 2.0})
    assert _sig(_only(diagnose(configured)), "worker_count").status == "ok"


def test_a_bare_client_go_queue() -> None:
    proc = ("bare", "", "")
    p = _only(diagnose(_reading(present=tuple(_queue_rows("jobs", controller=False,
                                                           process=proc)))))
    assert p.detected.framework == "client-go"
    api = _sig(p, "api_calls")
    assert api.status == "missing"
    assert api.fix is not None
    assert "k8s.io/component-base/metrics/prometheus/restclient" in api.fix
    assert not any(s.signal == "client_limiter_wait" for s in p.signals)
    assert "goroutines" in (_sig(p, "worker_count").fix or "")


def test_controller_runtime_series_without_workqueue_series_name_set_provider() -> None:
    p = _only(diagnose(_reading(present=tuple(_controller_rows("widget")))))
    arrivals = _sig(p, "arrivals")
    assert arrivals.status == "missing"
    assert arrivals.fix is not None
    assert "SetProvider" in arrivals.fix
    assert p.queues[0].name == "widget"
    assert "arrivals" in p.queues[0].missing


def test_a_queue_missing_one_metric_is_named() -> None:
    present = [*_queue_rows("a"), *_queue_rows("b", skip=(NAMES["retries"],)),
               *_controller_rows("a"), *_controller_rows("b"), *_rest_rows()]
    p = _only(diagnose(_cr_reading(present=tuple(present))))
    retries = _sig(p, "retries")
    assert retries.status == "missing"
    assert "missing for 1 of 2 queues: b" in retries.detail
    assert {q.name: q.missing for q in p.queues} == {"a": (), "b": ("retries",)}


# --- malformed histograms -------------------------------------------------------------------


def test_mixed_le_spellings_are_malformed_with_a_relabel_rule_that_works() -> None:
    le = [*_le(keys=("queue_duration",)), *_le(keys=("work_duration",)),
          LeSpelling(NAMES["work_duration"] + "_bucket", "1.0", PROC)]
    p = _only(diagnose(_cr_reading(le=tuple(le))))
    work = _sig(p, "work_duration")
    assert work.status == "malformed"
    assert 'le="1" and le="1.0"' in work.detail
    # queuelens's own figures do not suffer (le parsed as a float): nothing is lost but
    # string-matched PromQL
    assert work.costs == ()
    assert work.cost.startswith("none for queuelens")
    assert work.fix is not None
    rule = yaml.safe_load(work.fix[work.fix.index("metric_relabel_configs"):])
    step = rule["metric_relabel_configs"][0]
    joined = f"{NAMES['work_duration']}_bucket;10"
    m = re.fullmatch(step["regex"], joined)
    assert m is not None
    assert step["replacement"].replace("${1}", m.group(1)) == "10.0"
    assert re.fullmatch(step["regex"], f"{NAMES['work_duration']}_bucket;0.1") is None
    assert _sig(p, "queue_wait").status == "ok"


def test_no_inf_bucket_is_malformed() -> None:
    le = [*_le(keys=("queue_duration",)),
          *_le(keys=("work_duration",), texts=("0.1", "1", "10"))]
    work = _sig(_only(diagnose(_cr_reading(le=tuple(le)))), "work_duration")
    assert work.status == "malformed"
    assert "no +Inf bucket" in work.detail


def test_a_histogram_without_count_is_malformed_for_its_queue() -> None:
    present = [*_queue_rows("q", skip=(NAMES["queue_duration"] + "_count",)),
               *_controller_rows("q"), *_rest_rows()]
    p = _only(diagnose(_cr_reading(present=tuple(present))))
    wait = _sig(p, "queue_wait")
    assert wait.status == "malformed"
    assert "_bucket/_sum without _count" in wait.detail
    assert p.queues[0].malformed == ("queue_wait",)


# --- empty ----------------------------------------------------------------------------------


def _unchanged(sample: str, queue: str = "widget", controller: str = "widget") -> Presence:
    return Presence(sample, queue, controller, PROC)


def test_adds_that_never_change_while_work_is_done_are_empty() -> None:
    reading = _cr_reading(unchanged=(_unchanged(NAMES["adds"]),))
    p = _only(diagnose(reading))
    arrivals = _sig(p, "arrivals")
    assert arrivals.status == "empty"
    assert "exported but not incremented" in arrivals.detail
    assert p.queues[0].empty == ("arrivals",)
    # a failure counter that never moved is fine: none happened
    ok = _only(diagnose(_cr_reading(unchanged=(_unchanged(NAMES["retries"]),))))
    assert _sig(ok, "retries").status == "ok"
    assert "none happened" in _sig(ok, "retries").detail
    # one scrape: whether anything changes is not known, so nothing is empty
    once = _only(diagnose(replace(reading, changes_known=False)))
    assert _sig(once, "arrivals").status == "ok"


# --- priority queue -------------------------------------------------------------------------


@pytest.mark.parametrize(("distinct", "capped", "status", "words"), [
    (3, False, "ok", "priority queue on"),
    (26, True, "malformed", "exceeded_cardinality_limit"),
    (40, False, "malformed", "no cardinality cap"),
])
def test_priority_cardinality(distinct: int, capped: bool, status: str, words: str) -> None:
    reading = _cr_reading(priorities=(QueuePriorities("widget", PROC, distinct, capped),))
    p = _only(diagnose(reading))
    assert p.detected.priority_queue
    prio = _sig(p, "priority_depth")
    assert prio.status == status
    assert words in prio.detail
    if status != "ok":
        assert prio.fix is not None
        assert "#3396" in prio.fix
        assert "priority_starvation" in prio.costs
    assert p.queues[0].priorities == distinct


# --- the API server -------------------------------------------------------------------------


def _apf(generation: str, schema: str = "service-accounts") -> tuple[ApiServerPresence, ...]:
    rows = [ApiServerPresence(NAMES["apf_dispatched"], (), "workload-low", schema),
            ApiServerPresence(NAMES["apf_wait"] + "_count", (), "workload-low", schema),
            ApiServerPresence(NAMES["apf_nominal_limit_seats"], (), "workload-low")]
    if generation == "1.36":
        rows.append(ApiServerPresence(NAMES["apf_concurrency_limit"], (), "workload-low"))
    return tuple(rows)


@pytest.mark.parametrize(("generation", "expected"), [("1.36", "<1.37"), ("1.37", "≥1.37")])
def test_api_server_generation(generation: str, expected: str) -> None:
    p = _only(diagnose(_cr_reading(apiserver=_apf(generation))))
    api = p.detected.apiserver
    assert api.reachable
    assert api.generation == expected
    assert api.priority_level_seen
    assert _sig(p, "apiserver_metrics").status == "ok"
    assert _sig(p, "apf_level").status == "ok"
    seats = _sig(p, "apf_seats")
    assert seats.status == "ok"
    assert ("before 1.37" if expected == "<1.37" else "1.37 or later") \
        in seats.detail
    att = _sig(p, "apf_attribution")
    assert att.status == "missing"
    assert "service-accounts" in att.detail
    assert att.fix is not None
    assert "kind: FlowSchema" in att.fix
    # the whole fix can go to kubectl apply: two objects, the queuelens lines are comments
    docs = [d for d in yaml.safe_load_all(att.fix) if d]
    assert [d["kind"] for d in docs] == ["PriorityLevelConfiguration", "FlowSchema"]
    assert set(docs[1]) == {"apiVersion", "kind", "metadata", "spec"}
    assert '#     apiserver: {priority_level: "queuelens-widget", flow_schema: ' \
        '"queuelens-widget"}' in att.fix


def test_a_dedicated_flow_schema_is_seen_and_a_dead_level_is_empty() -> None:
    reading = _cr_reading(apiserver=_apf("1.37", schema="operator-fs"), flow_schema="operator-fs",
                          apiserver_unchanged=(ApiServerPresence(
                              NAMES["apf_dispatched"], (), "workload-low", "operator-fs"),))
    p = _only(diagnose(reading))
    assert _sig(p, "apf_attribution").status == "ok"
    assert _sig(p, "apf_level").status == "empty"


def test_the_api_server_of_another_cluster_does_not_count() -> None:
    rows = tuple(replace(a, cluster=("east",)) for a in _apf("1.37"))
    proc = ("operator", "10.0.0.1:8080", "", "west")
    present = [*_queue_rows("w", process=proc), *_controller_rows("w", proc), *_rest_rows(proc)]
    reading = _reading(present=tuple(present), le=tuple(_le(proc)), apiserver=rows,
                       process_labels=("job", "instance", "pod", "cluster"),
                       cluster_labels=("cluster",))
    p = _only(diagnose(reading))
    api = _sig(p, "apiserver_metrics")
    assert api.status == "missing"
    assert "cluster=east" in api.detail
    assert api.fix is not None
    assert "target_label: cluster" in api.fix


def test_the_scrape_fixes_are_prometheus_yaml() -> None:
    from models.contract import APISERVER_SCRAPE_FIX, CONTROLLER_SCRAPE_FIX

    (api,) = yaml.safe_load(APISERVER_SCRAPE_FIX)
    assert api["job_name"] == "kubernetes-apiservers"
    assert api["relabel_configs"][0]["regex"] == "default;kubernetes;https"
    (ctrl,) = yaml.safe_load(CONTROLLER_SCRAPE_FIX)
    assert [r.get("target_label") for r in ctrl["relabel_configs"]] == [None, "namespace", "pod"]


def test_statuses_are_the_four() -> None:
    p = _only(diagnose(_cr_reading(unchanged=(_unchanged(NAMES["adds"]),))))
    assert {s.status for s in p.signals} <= set(STATUSES)
    assert p.counts()["empty"] == 1


def test_every_need_of_the_contract_exists() -> None:
    """Each id a contract signal names is a verdict kind, a binding limit or a plan field, and
    each metric key is in the contract: a renamed verdict or field fails here."""
    from dataclasses import fields

    from models.advisor import KINDS
    from models.contract import CONTRACT_SIGNALS, METRIC_BY_KEY, PRIORITY_SIGNAL
    from models.options import BINDING_WORDS
    from models.plan import CapacityPlan

    plan_fields = {f.name for f in fields(CapacityPlan)}
    for sig in (*CONTRACT_SIGNALS, PRIORITY_SIGNAL):
        for need in sig.needs:
            assert (need in KINDS or need in BINDING_WORDS
                    or (need.startswith("plan.") and need[5:] in plan_fields)), (sig.id, need)
        for key in sig.metrics:
            assert key in METRIC_BY_KEY, (sig.id, key)


# --- the controller's CPU (issue 20) ----------------------------------------------------------


def test_without_the_go_collectors_the_cpu_signals_are_missing_with_the_register_call() -> None:
    present = [*_queue_rows("widget"), *_controller_rows("widget"), *_rest_rows()]
    p = _only(diagnose(_cr_reading(present=tuple(present), le=tuple(_le()))))
    used = _sig(p, "cpu_used")
    assert used.status == "missing"
    assert used.detail == "no process_cpu_seconds_total series in this process"
    assert "collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})" in (used.fix or "")
    assert used.cost.startswith("the cpu binding limit cannot be named")
    for signal, source in (("cpu_gomaxprocs", "/sched/gomaxprocs:threads"),
                           ("cpu_run_queue", "/sched/latencies:seconds")):
        s = _sig(p, signal)
        assert s.status == "missing"
        assert source in (s.fix or "")
        assert "collectors.MetricsScheduler" in (s.fix or "")
    assert "ceiling cannot be given" in _sig(p, "cpu_gomaxprocs").cost


def test_a_run_queue_histogram_without_inf_is_malformed() -> None:
    le = (*_le(), *_le(texts=SCHED_LE[:-1], keys=("sched_latency",)))
    s = _sig(_only(diagnose(_cr_reading(le=le))), "cpu_run_queue")
    assert s.status == "malformed"
    assert "no +Inf bucket in go_sched_latencies_seconds_bucket" in s.detail


def test_a_cpu_counter_that_never_moved_is_empty() -> None:
    stale = (Presence(NAMES["process_cpu"], "", "", PROC),)
    s = _sig(_only(diagnose(_cr_reading(unchanged=stale))), "cpu_used")
    assert s.status == "empty"
    assert "stale" in (s.fix or "")


def test_the_container_is_joined_on_the_pod_and_its_namespace() -> None:
    # the same pod name in another namespace has no limit: not this controller's
    other = _containers(ns="elsewhere", limited=())
    p = _only(diagnose(_cr_reading(containers=(*_containers(), *other))))
    limit = _sig(p, "cpu_limit")
    assert limit.status == "ok"
    assert limit.detail == ("kube_pod_container_resource_limits for container 'manager' of "
                            "pod ops/op-0")
    assert _sig(p, "cpu_throttling").status == "ok"


def test_the_pod_label_is_needed_to_join_the_container() -> None:
    p = _only(diagnose(_cr_reading(pods=(ProcessPod(PROC),))))
    for signal in ("cpu_limit", "cpu_throttling"):
        s = _sig(p, signal)
        assert s.status == "missing"
        assert "carry no 'pod' label" in s.detail
        assert "target_label: pod" in (s.fix or "")


def test_several_containers_need_the_container_label() -> None:
    rows = tuple(_containers(names=("manager", "kube-rbac-proxy"),
                             limited=("manager", "kube-rbac-proxy")))
    p = _only(diagnose(_cr_reading(containers=rows)))
    s = _sig(p, "cpu_limit")
    assert s.status == "missing"
    assert "pod ops/op-0 has 2 containers (kube-rbac-proxy, manager)" in s.detail
    assert "__meta_kubernetes_pod_container_name" in (s.fix or "")
    # named by the controller's series: that container, the sidecar ignored
    named = (ProcessPod(PROC, "ops", "op-0", "manager"),)
    p = _only(diagnose(_cr_reading(containers=rows, pods=named)))
    assert _sig(p, "cpu_limit").status == "ok"


def test_a_container_without_a_limit_and_unscraped_exporters() -> None:
    p = _only(diagnose(_cr_reading(containers=tuple(_containers(limited=())))))
    limit = _sig(p, "cpu_limit")
    assert limit.status == "missing"
    assert "has no CPU limit" in limit.detail
    assert "resources.limits.cpu" in (limit.fix or "")
    p = _only(diagnose(_cr_reading(containers=())))
    limit, throttling = _sig(p, "cpu_limit"), _sig(p, "cpu_throttling")
    assert "job_name: kube-state-metrics" in (limit.fix or "")
    assert "honor_labels: true" in (limit.fix or "")
    # no kube-state-metrics: which container is the controller's is unknown
    assert "no kube_pod_container_info series for pod ops/op-0" in throttling.detail
