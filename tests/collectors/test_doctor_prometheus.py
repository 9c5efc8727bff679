"""`queuelens doctor` against a REAL Prometheus (Debian's 2.42): an empty one, one backfilled
with processes in the exact upstream shapes, and one that is not there.

The backfill (written here, closed-form, promtool-checked) holds, per process (``job``,
``instance``; every series also carries ``cluster``):

* ``operator`` (cluster ``new``): controller-runtime v0.23+ — ``workqueue_*{name,
  controller}``, ``workqueue_depth{priority}`` with three priorities on ``widget``, one on
  ``gadget`` and 25 + the ``exceeded_cardinality_limit`` placeholder on ``lifo``, every
  ``controller_runtime_*`` counter (panics, timeouts, terminal errors included), buckets to
  1000 s, and the REST client's opt-in metrics (request duration, rate limiter, retries);
* ``kube-controller-manager`` (cluster ``old``): component-base — ``workqueue_*{name}`` with
  buckets to 10 s, ``rest_client_*`` (the full component-base set), no ``controller_runtime_*``;
* ``bare-client`` (cluster ``old``): a bare client-go queue — ``workqueue_*{name}`` only;
* ``legacy`` (``new``): controller-runtime whose work-duration bucket bounds are spelled
  ``1``/``10``/``100``/``1000`` until ``SWITCH`` and ``1.0``/``10.0``/… after it (what a
  Prometheus 2 → 3 upgrade does to a stored family);
* ``nocount`` (``new``): a queue-duration histogram with ``_bucket`` and ``_sum`` but no
  ``_count``;
* ``frozen`` (``new``): ``workqueue_adds_total`` that never changes while the queue completes
  work;

and the API servers: cluster ``old`` of the 1.36 generation (``request_concurrency_limit``
beside ``nominal_limit_seats``), cluster ``new`` of 1.37 (``nominal_limit_seats`` and
``current_limit_seats`` only), with a dedicated FlowSchema ``operator-fs`` in ``new``.
"""

from __future__ import annotations

import json
import socket
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from collectors.config import ConnectionSettings
from collectors.doctor import doctor_queries, read_prometheus
from collectors.profile import Profile, parse_selector
from collectors.prom_client import PrometheusClient
from dashboard.cli import main
from models.contract import DoctorReport, ProcessReport, SignalReport, diagnose
from tests.support.cli import run_cli
from tests.support.prometheus import PrometheusProcess, backfill, start_prometheus

pytestmark = pytest.mark.prometheus

START = 1704067200  # 2024-01-01T00:00:00Z, a multiple of 7200
DURATION_S = 7200
STEP_S = 30
AT = START + 5400
RANGE_S = 3600  # the doctor reads [AT - 1 h, AT]
SWITCH = START + 3600  # the le spelling changes here, inside the range

Value = Callable[[int], float | None]
"""A series' value at a time, None where it has no sample."""


def go_float(value: float) -> str:
    """Go's strconv.FormatFloat(v, 'g', -1, 64) for these values (1e-08, 0.1, 1, 1000)."""
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def exponential(start: float, factor: float, count: int) -> list[float]:
    out = [start]
    for _ in range(count - 1):
        out.append(out[-1] * factor)
    return out


CR_BUCKETS = exponential(10e-9, 10, 12)  # controller-runtime >= v0.17: 1e-08 .. 1000 s
CB_BUCKETS = exponential(10e-9, 10, 10)  # component-base: 1e-08 .. 10 s
REST_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0]
APF_BUCKETS = [0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0]


class Om:
    """OpenMetrics text for promtool: families contiguous, each series' samples ascending."""

    def __init__(self) -> None:
        self.types: dict[str, str] = {}
        self.series: dict[str, list[tuple[str, dict[str, str], Value]]] = defaultdict(list)

    def add(self, family: str, kind: str, sample: str, labels: dict[str, str],
            value: Value) -> None:
        self.types.setdefault(family, kind)
        self.series[family].append((sample, labels, value))

    def counter(self, name: str, labels: dict[str, str], rate: float) -> None:
        self.add(name.removesuffix("_total"), "counter", name, labels,
                 lambda t: rate * (t - START))

    def gauge(self, name: str, labels: dict[str, str], value: float) -> None:
        self.add(name, "gauge", name, labels, lambda t: value)

    def histogram(self, name: str, labels: dict[str, str], bounds: list[float], rate: float,
                  mean: float, *, spell: Callable[[int, float], str] | None = None,
                  parts: tuple[str, ...] = ("_bucket", "_sum", "_count")) -> None:
        """All observations in the bucket holding ``mean``; ``spell(t, bound)``: the le text
        at time t (default Go's)."""
        first = next(i for i, b in enumerate(bounds) if b >= mean)
        if "_bucket" in parts:
            for i, bound in enumerate([*bounds, float("inf")]):
                share = 1.0 if i >= first else 0.0
                texts = {"+Inf"} if bound == float("inf") else (
                    {spell(t, bound) for t in range(START, START + DURATION_S, STEP_S)}
                    if spell else {go_float(bound)})
                for text in sorted(texts):
                    def value(t: int, s: float = share, text: str = text,
                              bound: float = bound) -> float | None:
                        if spell and bound != float("inf") and spell(t, bound) != text:
                            return None
                        return s * rate * (t - START)
                    self.add(name, "histogram", name + "_bucket", {**labels, "le": text}, value)
        if "_sum" in parts:
            self.add(name, "histogram", name + "_sum", labels,
                     lambda t: mean * rate * (t - START))
        if "_count" in parts:
            self.add(name, "histogram", name + "_count", labels, lambda t: rate * (t - START))

    def text(self) -> str:
        lines: list[str] = []
        times = range(START, START + DURATION_S, STEP_S)
        for family, series in self.series.items():
            lines.append(f"# TYPE {family} {self.types[family]}")
            for sample, labels, fn in series:
                head = sample + "{" + ",".join(
                    f'{k}="{json.dumps(v)[1:-1]}"' for k, v in labels.items()) + "}"
                for t in times:
                    v = fn(t)
                    if v is not None:
                        lines.append(f"{head} {v:g} {t}")
        lines.append("# EOF")
        return "\n".join(lines) + "\n"


def _prom3_spelling(t: int, bound: float) -> str:
    """Go's spelling before SWITCH; integers as 1.0, 10.0 … after it (Prometheus 3)."""
    if t >= SWITCH and bound.is_integer():
        return f"{bound:.1f}"
    return go_float(bound)


def _workqueue(om: Om, base: dict[str, str], queue: str, *, controller_runtime: bool,
               bounds: list[float], priorities: tuple[str, ...] = ("0",),
               adds_rate: float = 2.0, spell: Callable[[int, float], str] | None = None,
               queue_parts: tuple[str, ...] = ("_bucket", "_sum", "_count")) -> None:
    wq = {**base, "name": queue, **({"controller": queue} if controller_runtime else {})}
    if controller_runtime:
        for p in priorities:
            om.gauge("workqueue_depth", {**wq, "priority": p}, 1.0)
    else:
        om.gauge("workqueue_depth", wq, 1.0)
    om.counter("workqueue_adds_total", wq, adds_rate)
    om.counter("workqueue_retries_total", wq, 0.2)
    om.histogram("workqueue_queue_duration_seconds", wq, bounds, 2.0, 0.05, parts=queue_parts)
    om.histogram("workqueue_work_duration_seconds", wq, bounds, 2.0, 0.5, spell=spell)
    om.gauge("workqueue_unfinished_work_seconds", wq, 0.0)
    om.gauge("workqueue_longest_running_processor_seconds", wq, 0.0)


def _controller(om: Om, base: dict[str, str], controller: str, *, v023: bool = True) -> None:
    cr = {**base, "controller": controller}
    for result, rate in (("success", 1.8), ("error", 0.1), ("requeue", 0.0),
                         ("requeue_after", 0.1)):
        om.counter("controller_runtime_reconcile_total", {**cr, "result": result}, rate)
    om.counter("controller_runtime_reconcile_errors_total", cr, 0.1)
    om.gauge("controller_runtime_max_concurrent_reconciles", cr, 4.0)
    om.gauge("controller_runtime_active_workers", cr, 1.0)
    if v023:
        om.counter("controller_runtime_reconcile_panics_total", cr, 0.0)
        om.counter("controller_runtime_reconcile_timeouts_total", cr, 0.0)
        om.counter("controller_runtime_terminal_reconcile_errors_total", cr, 0.0)


def _rest(om: Om, base: dict[str, str], *, opt_in: bool) -> None:
    host = {"host": "10.96.0.1:443"}
    for code, method, rate in (("200", "GET", 5.0), ("201", "POST", 1.0), ("409", "PUT", 0.1)):
        om.counter("rest_client_requests_total", {**base, "code": code, "method": method, **host},
                   rate)
    if opt_in:
        verb = {**base, "verb": "GET", **host}
        om.histogram("rest_client_request_duration_seconds", verb, REST_BUCKETS, 5.0, 0.02)
        om.histogram("rest_client_rate_limiter_duration_seconds", verb, REST_BUCKETS, 5.0,
                     0.001)
        om.counter("rest_client_request_retries_total", {**verb, "code": "429"}, 0.0)


def _apiserver(om: Om, cluster: str, *, generation: str) -> None:
    c = {"cluster": cluster, "job": "apiserver", "instance": f"{cluster}-apiserver:6443"}
    levels = {"workload-low": 245, "workload-high": 98, "global-default": 49}
    for level, seats in levels.items():
        lv = {**c, "priority_level": level}
        om.gauge("apiserver_flowcontrol_nominal_limit_seats", lv, float(seats))
        om.gauge("apiserver_flowcontrol_current_executing_seats", lv, 3.0)
        if generation == "1.36":
            om.gauge("apiserver_flowcontrol_request_concurrency_limit", lv, float(seats))
            om.gauge("apiserver_flowcontrol_request_concurrency_in_use", lv, 3.0)
        else:
            om.gauge("apiserver_flowcontrol_current_limit_seats", lv, float(seats))
    schemas = [("workload-low", "service-accounts"),
               ("workload-high", "kube-controller-manager")]
    if generation == "1.37":
        schemas.append(("workload-low", "operator-fs"))
    for level, schema in schemas:
        fs = {**c, "priority_level": level, "flow_schema": schema}
        om.counter("apiserver_flowcontrol_dispatched_requests_total", fs, 20.0)
        om.counter("apiserver_flowcontrol_rejected_requests_total", {**fs, "reason": "queue-full"},
                   0.0)
        om.gauge("apiserver_flowcontrol_current_inqueue_requests", fs, 0.0)
        om.histogram("apiserver_flowcontrol_request_wait_duration_seconds",
                     {**fs, "execute": "true"}, APF_BUCKETS, 20.0, 0.004)
    req = {**c, "verb": "PUT", "group": "apps", "version": "v1", "resource": "deployments",
           "scope": "resource", "component": "apiserver"}
    om.histogram("apiserver_request_duration_seconds", req, REST_BUCKETS, 3.0, 0.02)
    if generation == "1.37":
        om.histogram("apiserver_admission_webhook_admission_duration_seconds",
                     {**c, "name": "validate.example.com", "type": "validate",
                      "operation": "UPDATE", "rejected": "false"}, REST_BUCKETS, 1.0, 0.01)


def fixture_text() -> str:
    om = Om()
    new = {"cluster": "new"}
    old = {"cluster": "old"}
    operator = {**new, "job": "operator", "instance": "10.0.1.1:8443"}
    _workqueue(om, operator, "widget", controller_runtime=True, bounds=CR_BUCKETS,
               priorities=("0", "-100", "10"))
    _workqueue(om, operator, "gadget", controller_runtime=True, bounds=CR_BUCKETS)
    _workqueue(om, operator, "lifo", controller_runtime=True, bounds=CR_BUCKETS,
               priorities=(*(str(i) for i in range(25)), "exceeded_cardinality_limit"))
    for queue in ("widget", "gadget", "lifo"):
        _controller(om, operator, queue)
    _rest(om, operator, opt_in=True)

    kcm = {**old, "job": "kube-controller-manager", "instance": "10.0.0.2:10257"}
    for queue in ("deployment", "replicaset"):
        _workqueue(om, kcm, queue, controller_runtime=False, bounds=CB_BUCKETS)
    _rest(om, kcm, opt_in=True)

    bare = {**old, "job": "bare-client", "instance": "10.0.3.1:9090"}
    _workqueue(om, bare, "jobs", controller_runtime=False, bounds=CB_BUCKETS)

    legacy = {**new, "job": "legacy", "instance": "10.0.4.1:8080"}
    _workqueue(om, legacy, "mixer", controller_runtime=True, bounds=CR_BUCKETS,
               spell=_prom3_spelling)
    _controller(om, legacy, "mixer")
    _rest(om, legacy, opt_in=False)

    nocount = {**new, "job": "nocount", "instance": "10.0.5.1:8080"}
    _workqueue(om, nocount, "nocount", controller_runtime=True, bounds=CR_BUCKETS,
               queue_parts=("_bucket", "_sum"))
    _controller(om, nocount, "nocount")
    _rest(om, nocount, opt_in=False)

    frozen = {**new, "job": "frozen", "instance": "10.0.6.1:8080"}
    _workqueue(om, frozen, "frozen", controller_runtime=True, bounds=CR_BUCKETS, adds_rate=0.0)
    _controller(om, frozen, "frozen")
    _rest(om, frozen, opt_in=False)

    _apiserver(om, "old", generation="1.36")
    _apiserver(om, "new", generation="1.37")
    return om.text()


# --- the servers ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def doctor_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    work = tmp_path_factory.mktemp("prom-doctor")
    server = start_prometheus(work, tsdb=backfill(fixture_text(), work))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def empty_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    server = start_prometheus(tmp_path_factory.mktemp("prom-empty"))
    try:
        yield server
    finally:
        server.stop()


def _client(url: str) -> PrometheusClient:
    return PrometheusClient(ConnectionSettings(url=url, timeout_s=20))


def _report(url: str, profile: Profile | None = None) -> DoctorReport:
    return diagnose(read_prometheus(_client(url), profile or Profile(), AT, RANGE_S))


def _process(report: DoctorReport, job: str) -> ProcessReport:
    return next(p for p in report.processes if p.labels.get("job") == job)


def _sig(process: ProcessReport, name: str) -> SignalReport:
    return next(s for s in process.signals if s.signal == name)


CPU_SIGNALS = frozenset({"cpu_used", "cpu_gomaxprocs", "cpu_run_queue", "cpu_limit",
                         "cpu_throttling"})
"""The controller's CPU (issue 20): this fixture has no process_*, go_*, kube-state-metrics
or cAdvisor series (tests/collectors/test_cpu_prometheus.py reads them)."""


def _statuses(process: ProcessReport) -> dict[str, str]:
    """The statuses of the signals beyond the CPU ones, which are all missing here."""
    out = {s.signal: s.status for s in process.signals}
    assert {out.pop(k) for k in CPU_SIGNALS} == {"missing"}
    return out


def _json_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    code = main(["doctor", *argv, "--format", "json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    out: dict[str, object] = json.loads(captured.out)
    return out


# --- (1) nothing in it ----------------------------------------------------------------------


def test_an_empty_prometheus_says_nothing_is_scraped(
        empty_prometheus: PrometheusProcess, capsys: pytest.CaptureFixture[str]) -> None:
    out = _json_cli(capsys, "--prometheus", empty_prometheus.url)
    assert out["processes"] == []
    assert isinstance(out["summary"], str)
    assert out["summary"].startswith(f"No workqueue series found in {empty_prometheus.url}")
    signals = {s["signal"]: s for s in out["signals"]}  # type: ignore[attr-defined]
    wq = signals["workqueue_series"]
    assert wq["status"] == "missing"
    assert wq["detail"] == (f"no workqueue_* or controller_runtime_* series in "
                            f"{empty_prometheus.url} in the last 1 h; Prometheus scrapes no "
                            "target at all (no up series)")
    assert "job_name: controllers" in wq["fix"]
    assert "kubernetes_sd_configs" in wq["fix"]
    assert signals["apiserver_series"]["status"] == "missing"
    assert "job_name: kubernetes-apiservers" in signals["apiserver_series"]["fix"]
    assert len(out["queries"]) == 8  # type: ignore[arg-type]


def test_an_empty_prometheus_table_exits_0(empty_prometheus: PrometheusProcess) -> None:
    result = run_cli("doctor", "--prometheus", empty_prometheus.url)
    assert result.returncode == 0, result.stderr
    assert "workqueue_series  missing" in result.stdout
    assert "job_name: controllers" in result.stdout


# --- (2) the fixture processes --------------------------------------------------------------


def test_seven_queries_for_the_whole_fleet() -> None:
    queries = doctor_queries(Profile(selector=parse_selector('{name="x"}')), RANGE_S)
    assert list(queries) == ["presence", "unchanged", "le", "containers", "pods",
                             "priorities", "up", "replicas"]
    # process_* and go_* only of the processes that run a queue; the containers only of
    # the controllers' pods (the selector's queue matcher reaches the adds counter)
    assert ('{__name__=~"process_cpu_seconds_total|go_sched_gomaxprocs_threads|'
            in queries["presence"])
    assert ('and on (job, instance, pod) count by (job, instance, pod) (last_over_time('
            'workqueue_adds_total{name="x"}[3600s]))') in queries["presence"]
    assert ('and on (pod) count by (pod) (last_over_time(workqueue_adds_total{name="x"}'
            '[3600s]))') in queries["containers"]
    assert 'resource="cpu", unit="core"' in queries["containers"]
    # the selector reaches each family by its own label, as every other query does
    assert 'controller="x", __name__=~' in queries["presence"]
    assert '{name="x", __name__=~"workqueue_adds_total|workqueue_depth|' in queries["presence"]
    assert '{__name__=~"rest_client_requests_total|' in queries["presence"]
    assert "[3600s:60s]" in queries["presence"]


def test_each_process_is_detected(doctor_prometheus: PrometheusProcess) -> None:
    report = _report(doctor_prometheus.url, Profile(cluster_labels=("cluster",)))
    assert {p.labels["job"]: p.detected.framework for p in report.processes} == {
        "operator": "controller-runtime", "kube-controller-manager": "component-base",
        "bare-client": "client-go", "legacy": "controller-runtime",
        "nocount": "controller-runtime", "frozen": "controller-runtime"}
    operator = _process(report, "operator")
    d = operator.detected
    assert d.priority_queue
    assert d.rest_client_metrics == {"requests_total": True, "rate_limiter_duration": True,
                                     "request_duration": True, "request_retries": True}
    assert "≥ v0.23 (controller_runtime_reconcile_timeouts_total)" in d.version_hints
    assert any("1000 s" in h for h in d.version_hints)
    assert {q.name: q.priorities for q in operator.queues} == {"gadget": 1, "lifo": 26,
                                                               "widget": 3}
    kcm = _process(report, "kube-controller-manager")
    assert not kcm.detected.priority_queue
    assert kcm.detected.rest_client_metrics["rate_limiter_duration"]
    assert any("up to 10 s" in h for h in kcm.detected.version_hints)
    bare = _process(report, "bare-client")
    assert bare.detected.rest_client_metrics == dict.fromkeys(
        ("requests_total", "rate_limiter_duration", "request_duration", "request_retries"),
        False)


def test_each_signal_is_classified(doctor_prometheus: PrometheusProcess) -> None:
    report = _report(doctor_prometheus.url, Profile(cluster_labels=("cluster",)))
    operator = _process(report, "operator")
    # everything a controller-runtime v0.23+ binary with the opt-in exposes, except the
    # priority cap reached on "lifo" and the FlowSchema of its own the profile does not name
    assert {k for k, v in _statuses(operator).items() if v != "ok"} == {
        "priority_depth", "apf_attribution"}
    prio = _sig(operator, "priority_depth")
    assert prio.status == "malformed"
    assert "exceeded_cardinality_limit" in prio.detail
    assert "lifo" in prio.detail
    assert "#3396" in (prio.fix or "")

    kcm = _process(report, "kube-controller-manager")
    assert {k for k, v in _statuses(kcm).items() if v != "ok"} == {"worker_count",
                                                                    "apf_attribution"}
    assert "deployment: <N>" in (_sig(kcm, "worker_count").fix or "")
    assert "--concurrent-deployment-syncs" in (_sig(kcm, "worker_count").fix or "")

    bare = _process(report, "bare-client")
    assert {k for k, v in _statuses(bare).items() if v != "ok"} == {
        "worker_count", "api_calls", "apf_attribution"}
    assert "component-base/metrics/prometheus/restclient" in (_sig(bare, "api_calls").fix or "")

    legacy = _process(report, "legacy")
    work = _sig(legacy, "work_duration")
    assert work.status == "malformed"
    assert 'le="1" and le="1.0"' in work.detail
    assert 'le="1000" and le="1000.0"' in work.detail
    assert "metric_relabel_configs" in (work.fix or "")
    assert _sig(legacy, "queue_wait").status == "ok"
    assert _sig(legacy, "client_limiter_wait").status == "missing"
    assert "metrics.RegisterRESTClientMetrics(" in (_sig(legacy, "client_limiter_wait").fix or "")

    nocount = _process(report, "nocount")
    wait = _sig(nocount, "queue_wait")
    assert wait.status == "malformed"
    assert "without _count" in wait.detail
    assert nocount.queues[0].malformed == ("queue_wait",)

    frozen = _process(report, "frozen")
    arrivals = _sig(frozen, "arrivals")
    assert arrivals.status == "empty"
    assert ("while workqueue_work_duration_seconds_count did for frozen: the adds counter is "
            "exported but not incremented") in arrivals.detail
    assert frozen.queues[0].empty == ("arrivals",)
    # the failure counters that stay at 0 are not empty: nothing failed
    assert _sig(operator, "failure_kinds").status == "ok"


def test_the_api_server_generation_per_cluster(doctor_prometheus: PrometheusProcess) -> None:
    profile = Profile(cluster_labels=("cluster",), flow_schema="operator-fs")
    report = _report(doctor_prometheus.url, profile)
    new = _process(report, "operator").detected.apiserver
    old = _process(report, "kube-controller-manager").detected.apiserver
    assert (new.reachable, new.generation) == (True, "≥1.37")
    assert (old.reachable, old.generation) == (True, "<1.37")
    assert new.flow_schemas == ("operator-fs", "service-accounts")
    assert old.flow_schemas == ("service-accounts",)
    assert new.admission_webhooks
    assert not old.admission_webhooks
    assert _sig(_process(report, "operator"), "apf_attribution").status == "ok"
    att = _sig(_process(report, "kube-controller-manager"), "apf_attribution")
    assert att.status == "missing"
    assert "kind: FlowSchema" in (att.fix or "")
    seats_old = _sig(_process(report, "kube-controller-manager"), "apf_seats")
    assert "request_concurrency_limit present" in seats_old.detail
    seats_new = _sig(_process(report, "operator"), "apf_seats")
    assert "only nominal_limit_seats" in seats_new.detail


def test_prometheus_keeps_both_le_spellings(doctor_prometheus: PrometheusProcess) -> None:
    """What Prometheus 2.42 does with ``le="1"`` and ``le="1.0"``: two series, kept as
    written (no normalisation on backfill; Prometheus 3 normalises at scrape)."""
    client = _client(doctor_prometheus.url)
    res = client.query('count by (le) (last_over_time(workqueue_work_duration_seconds_bucket'
                       '{job="legacy", le=~"1|1[.]0"}[1h]))', AT)
    assert sorted(s.labels["le"] for s in res.samples) == ["1", "1.0"]
    # a string match on one spelling sees only its half of the range
    half = client.query('count_over_time(workqueue_work_duration_seconds_bucket'
                        '{job="legacy", le="1"}[1h])', AT)
    assert [s.value for s in half.samples] == [(SWITCH - (AT - RANGE_S)) / STEP_S]


def test_the_cli_on_the_fixture(doctor_prometheus: PrometheusProcess, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "queuelens.yaml"
    cfg.write_text("profile:\n  workers: {deployment: 5, replicaset: 5}\n"
                   "  apiserver: {cluster_labels: [cluster], flow_schema: operator-fs}\n")
    out = _json_cli(capsys, "--prometheus", doctor_prometheus.url, "--at", str(AT),
                    "--config", str(cfg))
    processes = {p["labels"]["job"]: p for p in out["processes"]}  # type: ignore[attr-defined]
    assert len(processes) == 6
    kcm = processes["kube-controller-manager"]
    worker = next(s for s in kcm["signals"] if s["signal"] == "worker_count")
    assert worker["status"] == "ok"
    assert "the config's workers" in worker["detail"]
    assert kcm["detected"]["apiserver"]["generation"] == "<1.37"
    assert processes["operator"]["detected"]["apiserver"]["generation"] == "≥1.37"
    only = _json_cli(capsys, "--prometheus", doctor_prometheus.url, "--at", str(AT),
                     "--selector", '{job="frozen"}')
    assert [p["labels"]["job"] for p in only["processes"]] == ["frozen"]  # type: ignore[attr-defined]


# --- (3) not there --------------------------------------------------------------------------


def test_an_unreachable_prometheus_is_exit_3_in_one_line() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = run_cli("doctor", "--prometheus", f"http://127.0.0.1:{port}", "--timeout", "5s")
    assert result.returncode == 3
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("queuelens: error: ")
    assert f"127.0.0.1:{port}" in lines[0]
    assert "unreachable" in lines[0]
