"""The demo fleet's metrics as Prometheus series, and as OpenMetrics text for backfill.

:func:`fleet_families` is the one description of what the demo exposes — metric names,
label sets and bucket layouts of client-go's workqueue metrics and controller-runtime's
controller / REST-client metrics — used both by :func:`render_openmetrics` (for
``promtool tsdb create-blocks-from openmetrics``) and by the live exporter
(:mod:`collectors.exporter`). Every series also carries ``pod``, standing in for the target
label a Kubernetes scrape adds: it says which process (and so which API client) a queue runs in.
:func:`simulated_families` writes simulated controllers (with their process's
``process_cpu_seconds_total`` and ``go_sched_*`` series when the CPU was modelled), and the
API server of one whose server side was modelled (``job="apiserver"``, the metric names,
labels, buckets and help texts of k8s.io/apiserver 1.37, or 1.36 with its hidden pre-1.37 APF
gauges).

OpenMetrics rules honoured (promtool 2.42): timestamps in seconds, ascending within each
series, one value per timestamp, families contiguous, a ``+Inf`` bucket, no blank lines,
``# EOF`` last. ``le`` is printed like Go prints it (``9.999999999999999e-06``).
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TextIO

import numpy as np
import numpy.typing as npt

from models import fleet as fl
from models.scrape import ScrapedHistogram, ScrapedMetrics, ScrapedServer

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Series:
    sample: str
    """The sample name, e.g. ``workqueue_adds_total`` or ``..._bucket``."""
    labels: Mapping[str, str]
    values: FloatArray
    """One value per requested time."""
    times: FloatArray | None = None
    """The series' own unix times, when they are not the ones of the whole rendering."""


@dataclass(frozen=True)
class Family:
    name: str
    """OpenMetrics family name (a counter's name without ``_total``)."""
    type: str
    help: str
    series: list[Series]


HELP = {
    "workqueue_depth": "Current depth of workqueue",
    "workqueue_adds": "Total number of adds handled by workqueue",
    "workqueue_retries": "Total number of items added to the workqueue with a non-zero delay "
    "(rate-limited requeues, explicit RequeueAfter or AddAfter calls)",
    "workqueue_queue_duration_seconds": "How long in seconds an item stays in workqueue "
    "before being requested",
    "workqueue_work_duration_seconds": "How long in seconds processing an item from workqueue "
    "takes.",
    "workqueue_unfinished_work_seconds": "How many seconds of work has been done that is in "
    "progress and hasn't been observed by work_duration. Large values indicate stuck threads. "
    "One can deduce the number of stuck threads by observing the rate at which this increases.",
    "workqueue_longest_running_processor_seconds": "How many seconds has the longest running "
    "processor for workqueue been running.",
    "controller_runtime_reconcile": "Total number of reconciliations per controller",
    "controller_runtime_reconcile_errors": "Total number of reconciliation errors per controller",
    "controller_runtime_reconcile_time_seconds": "Length of time per reconciliation per "
    "controller",
    "controller_runtime_max_concurrent_reconciles": "Maximum number of concurrent reconciles "
    "per controller",
    "controller_runtime_active_workers": "Number of currently used workers per controller",
    "rest_client_requests": "Number of HTTP requests, partitioned by status code, method, and "
    "host.",
    "rest_client_rate_limiter_duration_seconds": "Client side rate limiter latency in seconds. "
    "Broken down by verb, and host.",
    "rest_client_request_duration_seconds": "Request latency in seconds. Broken down by verb, "
    "and host.",
    "rest_client_request_retries": "Number of request retries, partitioned by status code, "
    "verb, and host.",
    # the API server (k8s.io/apiserver; component-base prefixes the stability level, and
    # "(Deprecated since …)" to a deprecated metric, as the server's /metrics shows them)
    "apiserver_flowcontrol_request_wait_duration_seconds": "[BETA] Length of time a request "
    "spent waiting in its queue",
    "apiserver_flowcontrol_rejected_requests": "[BETA] Number of requests rejected by API "
    "Priority and Fairness subsystem",
    "apiserver_flowcontrol_dispatched_requests": "[BETA] Number of requests executed by API "
    "Priority and Fairness subsystem",
    "apiserver_flowcontrol_current_inqueue_requests": "[BETA] Number of requests currently "
    "pending in queues of the API Priority and Fairness subsystem",
    "apiserver_flowcontrol_current_executing_requests": "[BETA] Number of requests in initial "
    "(for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness "
    "subsystem",
    "apiserver_flowcontrol_current_executing_seats": "[BETA] Concurrency (number of seats) "
    "occupied by the currently executing (initial stage for a WATCH, any stage otherwise) "
    "requests in the API Priority and Fairness subsystem",
    "apiserver_flowcontrol_nominal_limit_seats": "[BETA] Nominal number of execution seats "
    "configured for each priority level",
    "apiserver_flowcontrol_current_limit_seats": "[ALPHA] current derived number of execution "
    "seats available to each priority level",
    "apiserver_flowcontrol_request_concurrency_limit": "[ALPHA] (Deprecated since 1.30.0) "
    "Nominal number of execution seats configured for each priority level",
    "apiserver_flowcontrol_request_concurrency_in_use": "[ALPHA] (Deprecated since 1.31.0) "
    "Concurrency (number of seats) occupied by the currently executing (initial stage for a "
    "WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem",
    "apiserver_request": "[STABLE] Counter of apiserver requests broken out for each verb, dry "
    "run value, group, version, resource, scope, component, and HTTP response code.",
    "apiserver_request_duration_seconds": "[STABLE] Response latency distribution in seconds "
    "for each verb, dry run value, group, version, resource, subresource, scope and component.",
    "apiserver_request_sli_duration_seconds": "[ALPHA] Response latency distribution (not "
    "counting webhook duration and priority & fairness queue wait times) in seconds for each "
    "verb, group, version, resource, subresource, scope and component.",
    "apiserver_admission_webhook_admission_duration_seconds": "[STABLE] Admission webhook "
    "latency histogram in seconds, identified by name and broken out for each operation and "
    "API resource and type (validate or admit).",
    "apiserver_admission_webhook_request": "[ALPHA] Admission webhook request total, "
    "identified by name and broken out for each admission type (validating or mutating) and "
    "operation. Additional labels specify whether the request was rejected or not and an HTTP "
    "status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality "
    "bounded.",
    # the process (client_golang's process and Go collectors, as a controller-runtime v0.24.1
    # binary shows them: /work/shared/reference/expositions)
    "process_cpu_seconds": "Total user and system CPU time spent in seconds.",
    "go_sched_gomaxprocs_threads": "The current runtime.GOMAXPROCS setting, or the number of "
    "operating system threads that can execute user-level Go code simultaneously. Sourced from "
    "/sched/gomaxprocs:threads.",
    "go_sched_latencies_seconds": "Distribution of the time goroutines have spent in the "
    "scheduler in a runnable state before actually running. Bucket counts increase "
    "monotonically. Sourced from /sched/latencies:seconds.",
    "external_dns_provider_requests": "Requests the controller sent to the DNS provider API "
    "(demo: the external effects of the dnsrecord queue), by result",
}

EXTERNAL_EFFECTS_PROMQL = (
    'sum by (controller) (rate(external_dns_provider_requests_total{result="success"}[5m]))'
)
"""What a user would configure as the dnsrecord queue's external-effects query."""


def _scraped_histogram(name: str, labels: dict[str, str], h: ScrapedHistogram,
                       times: FloatArray) -> list[Series]:
    out = [Series(f"{name}_bucket", {**labels, "le": fl.go_float(b)}, h.buckets[:, i], times)
           for i, b in enumerate(h.bounds)]
    out.append(Series(f"{name}_bucket", {**labels, "le": "+Inf"}, h.count, times))
    out.append(Series(f"{name}_sum", labels, h.sum, times))
    out.append(Series(f"{name}_count", labels, h.count, times))
    return out


APISERVER_GENERATIONS: tuple[str, ...] = ("1.36", "1.37")
"""API server metric generations :func:`simulated_families` can write: 1.36 also exposes the
pre-1.37 ``apiserver_flowcontrol_request_concurrency_limit`` / ``…_in_use`` (deprecated in
1.30 / 1.31, hidden since, shown in 1.36 with ``--show-hidden-metrics-for-version=1.35``;
removed in 1.37 by kubernetes commit 917e64fb9)."""
APISERVER_JOB = "apiserver"
API_RESOURCE: tuple[str, str, str] = ("example.com", "v1", "widgets")
"""(group, version, resource) of the objects a simulated controller reads and writes."""
WEBHOOK_NAME = "validate.example.com"


def simulated_families(
    controllers: Sequence[tuple[str, str, ScrapedMetrics]], start: float, *,
    cluster_label: str | None = None,
    apiserver_generation: str = "1.37",
    priority_level: str = "workload-low",
    flow_schema: str = "service-accounts",
    api_resource: tuple[str, str, str] = API_RESOURCE,
    webhook_name: str = WEBHOOK_NAME,
) -> list[Family]:
    """The series of simulated controllers — (queue name, pod, scraped metrics) each, every
    controller in its own process — at ``start`` + their scrape times: the families a
    controller-runtime manager exposes (:mod:`models.scrape` says what each one counts; the
    process's CPU series carry only ``pod``: they are the process's, not a controller's), and,
    for a controller whose API server was modelled, that server's (``job="apiserver"``, no
    ``pod``): its APF priority level ``priority_level`` / ``flow_schema`` (the defaults are
    where every ServiceAccount outside kube-system lands), and its request and admission
    series for the controller's ``api_resource`` (a webhook ``webhook_name``).

    ``cluster_label``: a label put on every series of a controller, its server's included,
    with the controller's pod as value — so that a Prometheus holding many simulated clusters
    can join a controller with its own API server (without it, two modelled servers would
    write the same series, so that is refused). ``apiserver_generation``: "1.37" (default) or
    "1.36" (:data:`APISERVER_GENERATIONS`)."""
    if apiserver_generation not in APISERVER_GENERATIONS:
        raise ValueError(f"apiserver_generation must be one of {', '.join(APISERVER_GENERATIONS)}"
                         f", got {apiserver_generation!r}")
    reserved = {"name", "controller", "pod", "result", "code", "method", "verb", "host", "le",
                "job", "priority_level", "flow_schema", "execute", "reason", "dry_run", "group",
                "version", "resource", "subresource", "scope", "component", "type",
                "operation", "rejected"}
    if cluster_label is not None and (cluster_label in reserved or not cluster_label.isidentifier()
                                      or cluster_label.startswith("__")):
        raise ValueError(f"cluster_label must be a label name not used by the series, got "
                         f"{cluster_label!r}")
    if cluster_label is None and sum(m.server is not None for _, _, m in controllers) > 1:
        raise ValueError("several controllers have a modelled API server: give cluster_label "
                         "so that their servers' series differ")
    fams: dict[str, Family] = {}

    def add(name: str, kind: str, series: list[Series]) -> None:
        fams.setdefault(name, Family(name, kind, HELP[name], [])).series.extend(series)

    for queue, pod, m in controllers:
        t = start + m.t_s
        extra = {cluster_label: pod} if cluster_label is not None else {}
        wq = {"name": queue, "controller": queue, "pod": pod, **extra}
        cr = {"controller": queue, "pod": pod, **extra}
        add("workqueue_depth", "gauge", [Series("workqueue_depth", wq, m.gauges["depth"], t)])
        add("workqueue_adds", "counter",
            [Series("workqueue_adds_total", wq, m.counters["adds"], t)])
        add("workqueue_retries", "counter",
            [Series("workqueue_retries_total", wq, m.counters["retries"], t)])
        for fam, key in (("workqueue_queue_duration_seconds", "queue_duration"),
                         ("workqueue_work_duration_seconds", "work_duration")):
            add(fam, "histogram", _scraped_histogram(fam, wq, m.histograms[key], t))
        for fam, key in (("workqueue_unfinished_work_seconds", "unfinished_work_s"),
                         ("workqueue_longest_running_processor_seconds", "longest_running_s")):
            add(fam, "gauge", [Series(fam, wq, m.gauges[key], t)])
        results = ("success", "error", *(("requeue_after",) if "reconcile_requeue_after"
                                          in m.counters else ()))
        add("controller_runtime_reconcile", "counter", [
            Series("controller_runtime_reconcile_total", {**cr, "result": result},
                   m.counters[f"reconcile_{result}"], t) for result in results])
        add("controller_runtime_reconcile_errors", "counter", [
            Series("controller_runtime_reconcile_errors_total", cr,
                   m.counters["reconcile_error"], t)])
        add("controller_runtime_reconcile_time_seconds", "histogram", _scraped_histogram(
            "controller_runtime_reconcile_time_seconds", cr, m.histograms["reconcile_time"], t))
        for fam, key in (("controller_runtime_max_concurrent_reconciles",
                          "max_concurrent_reconciles"),
                         ("controller_runtime_active_workers", "active_workers")):
            add(fam, "gauge", [Series(fam, cr, m.gauges[key], t)])
        if m.api is not None:
            add("rest_client_requests", "counter", [Series(
                "rest_client_requests_total",
                {"code": code, "host": fl.API_HOST, "method": verb, "pod": pod, **extra},
                values, t) for (code, verb), values in m.api.requests.items()])
            if m.api.retries:
                add("rest_client_request_retries", "counter", [Series(
                    "rest_client_request_retries_total",
                    {"code": code, "host": fl.API_HOST, "verb": verb, "pod": pod, **extra},
                    values, t) for (code, verb), values in m.api.retries.items()])
            for fam, by_verb in (("rest_client_rate_limiter_duration_seconds", m.api.limiter),
                                 ("rest_client_request_duration_seconds",
                                  m.api.request_duration)):
                for verb, h in by_verb.items():
                    add(fam, "histogram", _scraped_histogram(
                        fam, {"host": fl.API_HOST, "verb": verb, "pod": pod, **extra}, h, t))
        elif m.api_calls:
            add("rest_client_requests", "counter", [Series(
                "rest_client_requests_total",
                {"code": "200", "host": fl.API_HOST, "method": "GET", "pod": pod, **extra},
                m.counters["api_requests"], t)])
            rc = {"host": fl.API_HOST, "verb": "GET", "pod": pod, **extra}
            for fam, key in (("rest_client_rate_limiter_duration_seconds", "api_limiter"),
                             ("rest_client_request_duration_seconds", "api_request")):
                add(fam, "histogram", _scraped_histogram(fam, rc, m.histograms[key], t))
        if m.server is not None:
            _server_families(add, m.server, t, {"job": APISERVER_JOB, **extra},
                             apiserver_generation, priority_level, flow_schema, api_resource,
                             webhook_name)
        if "process_cpu_seconds" in m.counters:  # the process's CPU (per pod, no controller)
            proc = {"pod": pod, **extra}
            add("process_cpu_seconds", "counter", [Series(
                "process_cpu_seconds_total", proc, m.counters["process_cpu_seconds"], t)])
            add("go_sched_gomaxprocs_threads", "gauge", [Series(
                "go_sched_gomaxprocs_threads", proc, m.gauges["gomaxprocs"], t)])
            add("go_sched_latencies_seconds", "histogram", _scraped_histogram(
                "go_sched_latencies_seconds", proc, m.histograms["sched_latencies"], t))
    return list(fams.values())


def _server_families(add: Callable[[str, str, list[Series]], None], srv: ScrapedServer,
                     t: FloatArray, job: dict[str, str], generation: str, pl: str, fs: str,
                     resource: tuple[str, str, str], webhook: str) -> None:
    """One modelled API server's series (see :func:`simulated_families`)."""
    if srv.apf_seats is not None:
        plfs = {"priority_level": pl, "flow_schema": fs, **job}
        only_pl = {"priority_level": pl, **job}
        fam = "apiserver_flowcontrol_request_wait_duration_seconds"
        for execute, h in srv.apf_wait.items():
            add(fam, "histogram", _scraped_histogram(fam, {**plfs, "execute": execute}, h, t))
        add("apiserver_flowcontrol_rejected_requests", "counter", [Series(
            "apiserver_flowcontrol_rejected_requests_total", {**plfs, "reason": reason},
            values, t) for reason, values in srv.apf_rejected.items()])
        add("apiserver_flowcontrol_dispatched_requests", "counter", [Series(
            "apiserver_flowcontrol_dispatched_requests_total", plfs, srv.apf_dispatched, t)])
        seats = np.full(t.size, float(srv.apf_seats))
        gauges: list[tuple[str, dict[str, str], FloatArray]] = [
            ("apiserver_flowcontrol_current_inqueue_requests", plfs, srv.apf_inqueue),
            ("apiserver_flowcontrol_current_executing_requests", plfs, srv.apf_executing),
            ("apiserver_flowcontrol_current_executing_seats", plfs, srv.apf_executing),
            ("apiserver_flowcontrol_nominal_limit_seats", only_pl, seats),
            ("apiserver_flowcontrol_current_limit_seats", only_pl, seats),
        ]
        if generation == "1.36":
            gauges += [
                ("apiserver_flowcontrol_request_concurrency_limit", only_pl, seats),
                ("apiserver_flowcontrol_request_concurrency_in_use", plfs, srv.apf_executing),
            ]
        for name, labels, values in gauges:
            add(name, "gauge", [Series(name, labels, values, t)])
    group, version, res = resource
    for verb, h in srv.request_duration.items():
        labels = {"verb": verb, "dry_run": "", "group": group, "version": version,
                  "resource": res, "subresource": "", "scope": "resource",
                  "component": "apiserver", **job}
        fam = "apiserver_request_duration_seconds"
        add(fam, "histogram", _scraped_histogram(fam, labels, h, t))
        sli = {k: v for k, v in labels.items() if k != "dry_run"}
        fam = "apiserver_request_sli_duration_seconds"
        add(fam, "histogram", _scraped_histogram(fam, sli, srv.request_sli[verb], t))
    add("apiserver_request", "counter", [Series(
        "apiserver_request_total",
        {"verb": verb, "dry_run": "", "group": group, "version": version, "resource": res,
         "subresource": "", "scope": "resource", "component": "apiserver", "code": code, **job},
        values, t) for (verb, code), values in srv.request_total.items()])
    if srv.webhook is not None:
        hook = {"name": webhook, "type": "validate", "operation": "UPDATE", "rejected": "false",
                **job}
        fam = "apiserver_admission_webhook_admission_duration_seconds"
        add(fam, "histogram", _scraped_histogram(fam, hook, srv.webhook, t))
        add("apiserver_admission_webhook_request", "counter", [Series(
            "apiserver_admission_webhook_request_total",
            {"name": webhook, "type": "validate", "operation": "UPDATE", "code": "200",
             "rejected": "false", **job}, srv.webhook.count, t)])


def _histogram(
    name: str,
    labels: dict[str, str],
    prefix: str,
    bounds: tuple[float, ...],
    values: FloatArray,
) -> list[Series]:
    rows, count_row, sum_row = fl.hist_rows(prefix)
    out = [
        Series(f"{name}_bucket", {**labels, "le": fl.go_float(b)}, values[r])
        for r, b in zip(rows, bounds, strict=True)
    ]
    out.append(Series(f"{name}_bucket", {**labels, "le": "+Inf"}, values[count_row]))
    out.append(Series(f"{name}_sum", labels, values[sum_row]))
    out.append(Series(f"{name}_count", labels, values[count_row]))
    return out


def fleet_families(fleet: fl.Fleet, times: npt.ArrayLike) -> list[Family]:
    """Every demo series at the given unix times."""
    t = np.atleast_1d(np.asarray(times, dtype=np.float64))
    c = fleet.counters(t)  # [queue, signal, time]
    g = fleet.gauges(t)
    workers = fleet.workers(t)  # [queue, time]: the count of the cell holding each time
    specs = fleet.specs
    fams: dict[str, Family] = {}

    def fam(name: str, kind: str) -> Family:
        if name not in fams:
            fams[name] = Family(name, kind, HELP[name], [])
        return fams[name]

    for name in (
        "workqueue_depth", "workqueue_adds", "workqueue_queue_duration_seconds",
        "workqueue_work_duration_seconds", "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds", "workqueue_retries",
        "controller_runtime_reconcile", "controller_runtime_reconcile_errors",
        "controller_runtime_reconcile_time_seconds",
        "controller_runtime_max_concurrent_reconciles", "controller_runtime_active_workers",
    ):
        kind = (
            "histogram" if name.endswith(("duration_seconds", "time_seconds"))
            else "counter" if name in (
                "workqueue_adds", "workqueue_retries", "controller_runtime_reconcile",
                "controller_runtime_reconcile_errors")
            else "gauge"
        )
        fam(name, kind)
    for i, spec in enumerate(specs):
        q, pod, p = spec.name, spec.params.pod, spec.params
        wq = {"name": q, "controller": q, "pod": pod}
        cr = {"controller": q, "pod": pod}
        depth = g[i, fl.GAUGES["depth"]]
        fams["workqueue_depth"].series.append(
            Series("workqueue_depth", {**wq, "priority": "0"}, depth)
        )
        if p.low_priority_share > 0:
            fams["workqueue_depth"].series.append(Series(
                "workqueue_depth", {**wq, "priority": "-100"},
                g[i, fl.GAUGES["depth_low_priority"]],
            ))
        fams["workqueue_adds"].series.append(
            Series("workqueue_adds_total", wq, c[i, fl.SIGNALS["adds"]])
        )
        fams["workqueue_retries"].series.append(
            Series("workqueue_retries_total", wq, c[i, fl.SIGNALS["retries"]])
        )
        fams["workqueue_queue_duration_seconds"].series.extend(_histogram(
            "workqueue_queue_duration_seconds", wq, "qd", fl.WORKQUEUE_BUCKETS, c[i]))
        fams["workqueue_work_duration_seconds"].series.extend(_histogram(
            "workqueue_work_duration_seconds", wq, "wd", fl.WORKQUEUE_BUCKETS, c[i]))
        fams["workqueue_unfinished_work_seconds"].series.append(Series(
            "workqueue_unfinished_work_seconds", wq, g[i, fl.GAUGES["unfinished_work_s"]]))
        fams["workqueue_longest_running_processor_seconds"].series.append(Series(
            "workqueue_longest_running_processor_seconds", wq,
            g[i, fl.GAUGES["longest_running_s"]]))
        for result in fl.RESULTS:
            fams["controller_runtime_reconcile"].series.append(Series(
                "controller_runtime_reconcile_total", {**cr, "result": result},
                c[i, fl.SIGNALS[f"result:{result}"]]))
        fams["controller_runtime_reconcile_errors"].series.append(Series(
            "controller_runtime_reconcile_errors_total", cr, c[i, fl.SIGNALS["errors"]]))
        fams["controller_runtime_reconcile_time_seconds"].series.extend(_histogram(
            "controller_runtime_reconcile_time_seconds", cr, "rt", fl.RECONCILE_BUCKETS, c[i]))
        fams["controller_runtime_max_concurrent_reconciles"].series.append(Series(
            "controller_runtime_max_concurrent_reconciles", cr, workers[i]))
        fams["controller_runtime_active_workers"].series.append(Series(
            "controller_runtime_active_workers", cr, g[i, fl.GAUGES["active_workers"]]))

    # Per process: the REST client's series are the sums over the process's controllers.
    requests = fam("rest_client_requests", "counter")
    limiter = fam("rest_client_rate_limiter_duration_seconds", "histogram")
    for pod_i, pod in enumerate(fleet.pods):
        members = np.nonzero(fleet.pod_index == pod_i)[0]
        pod_c = c[members].sum(axis=0)
        for code, method in fl.API_SERIES:
            requests.series.append(Series(
                "rest_client_requests_total",
                {"code": code, "host": fl.API_HOST, "method": method, "pod": pod},
                pod_c[fl.SIGNALS[f"api:{code}:{method}"]]))
        if any(specs[m].params.client_limiter for m in members):
            limiter.series.extend(_histogram(
                "rest_client_rate_limiter_duration_seconds",
                {"host": fl.API_HOST, "verb": "GET", "pod": pod}, "lim", fl.LIMITER_BUCKETS,
                pod_c))
    external = [i for i, s in enumerate(specs) if s.params.external_effects]
    if external:
        ext = fam("external_dns_provider_requests", "counter")
        for i in external:
            for result in fl.EXTERNAL_RESULTS:
                ext.series.append(Series(
                    "external_dns_provider_requests_total",
                    {"controller": specs[i].name, "pod": specs[i].params.pod, "result": result},
                    c[i, fl.SIGNALS[f"ext:{result}"]]))
    return list(fams.values())


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(labels: Mapping[str, str]) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


def _number(v: float) -> str:
    if v.is_integer() and abs(v) < 2**53:
        return str(int(v))
    return repr(v)


def render_openmetrics(
    fleet: fl.Fleet,
    start: float,
    end: float,
    step_s: float = 15.0,
    extra_labels: Mapping[str, str] | None = None,
) -> str:
    """OpenMetrics text of the fleet's series at ``start, start + step, …`` (< ``end``).

    Use a ``start`` on a 2-hour boundary (multiple of 7200) so promtool cuts one block per
    2 h; ``extra_labels`` (e.g. ``{"job": "queuelens-demo"}``) go on every series.
    """
    if not (math.isfinite(start) and math.isfinite(end) and end > start):
        raise ValueError(f"the range must have start < end, got {start!r}..{end!r}")
    if not (math.isfinite(step_s) and step_s > 0):
        raise ValueError(f"the step must be positive, got {step_s!r}")
    grid = start + np.arange(math.ceil((end - start) / step_s)) * step_s
    times: FloatArray = np.asarray(grid[grid < end], dtype=np.float64)
    return render_families(fleet_families(fleet, times), times, extra_labels)


def render_families(families: Sequence[Family], times: FloatArray | None = None,
                    extra_labels: Mapping[str, str] | None = None) -> str:
    """OpenMetrics text of ``families``: each series at its own times, else at ``times``."""
    out = io.StringIO()
    write_families(out, families, times, extra_labels)
    return out.getvalue()


def write_families(out: TextIO, families: Sequence[Family], times: FloatArray | None = None,
                   extra_labels: Mapping[str, str] | None = None) -> None:
    """:func:`render_families` written to ``out`` one series at a time (a backfill of a
    hundred controllers is hundreds of megabytes of text, never held at once). A series'
    own label wins over an ``extra_labels`` one of the same name (the API server's ``job``)."""
    shared = [_number(float(x)) for x in times] if times is not None else None
    extra = dict(extra_labels or {})
    for family in families:
        if not family.series:
            continue
        out.write(f"# HELP {family.name} {family.help}\n# TYPE {family.name} {family.type}\n")
        for s in family.series:
            stamps = [_number(float(x)) for x in s.times] if s.times is not None else shared
            if stamps is None:
                raise ValueError(f"series {s.sample} has no times")
            own = s.labels
            head = s.sample + _labels({**own, **{k: v for k, v in extra.items() if k not in own}})
            out.write("".join(
                f"{head} {_number(v)} {ts}\n"
                for v, ts in zip(s.values.tolist(), stamps, strict=True)
            ))
    out.write("# EOF\n")
