"""The metric contract as data, and the doctor's diagnosis of a reading (pure: no I/O).

The contract is what queuelens reads from a controller's ``/metrics`` and from its API server
(:data:`CONTRACT_METRICS`: the :class:`collectors.profile.MetricNames` keys, each with its kind
and the family of series it belongs to) and what each signal is for
(:data:`CONTRACT_SIGNALS`: the verdicts of :data:`models.advisor.KINDS`, the binding limits of
:data:`models.options.BINDING_WORDS` and the capacity-plan fields that cannot be given without
it). :mod:`collectors.doctor` reads what exists — from Prometheus in a few queries over every
process, or from exposition text (the demo) — into a :class:`ContractReading`; :func:`diagnose`
turns that into a :class:`DoctorReport`: per process, what was detected (controller-runtime,
component-base or a bare client-go queue; the priority queue; the REST client's opt-in
metrics; the API server's metrics and their generation) and, per signal, ``ok``, ``missing``,
``empty`` (series exist but never changed over the range) or ``malformed`` (a histogram
without ``_count``/``_sum``/``_bucket``, without a ``+Inf`` bucket, or with one bound spelled
two ways, ``le="1"`` and ``le="1.0"``), with what it costs and the exact fix.

Sources of the facts the fixes state: workqueue-metrics.md and operator-needs-and-metrics.md
(§1 N5, N6; §2; §2.7) in the project's reference notes, and controller-runtime's
``pkg/metrics/client_go_adapter.go`` (``RegisterRESTClientMetrics``, PR #3510).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from models.fleet import go_float
from models.flowschema import flowschema_manifest, flowschema_name
from models.frameworks import CLIENT_GO, COMPONENT_BASE, CONTROLLER_RUNTIME, FRAMEWORKS
from models.histogram import parse_le
from models.priority import CAPPED_PRIORITY, PRIORITY_CAP, uncapped
from models.settings import describe_duration

STATUSES: tuple[str, ...] = ("ok", "missing", "empty", "malformed")
KINDS_OF_METRIC: tuple[str, ...] = ("counter", "gauge", "histogram")
FAMILIES: tuple[str, ...] = ("queue", "controller", "process", "cluster", "runtime",
                             "container")
"""Which label names a queue in a family of series: ``workqueue_*`` the queue label,
``controller_runtime_*`` the controller label, ``rest_client_*`` none (one series set per
process), the API server's none of the controller's (its cluster's); ``runtime``:
``process_*``/``go_*``, per process like ``rest_client_*`` but on every Go target (read only
for processes that run a queue); ``container``: kube-state-metrics' and cAdvisor's, keyed by
namespace/pod/container and joined to a process on its pod."""

HISTOGRAM_SUFFIXES: tuple[str, ...] = ("_bucket", "_sum", "_count")
SHARED_FLOW_SCHEMA = "service-accounts"
"""Kubernetes' default FlowSchema for every ServiceAccount outside kube-system."""
MAX_LISTED = 12
"""Queue names listed in one detail sentence or one fix (the rest are counted)."""


# --- the contract as data ----------------------------------------------------------------


@dataclass(frozen=True)
class ContractMetric:
    """One metric queuelens reads, by its :class:`collectors.profile.MetricNames` key (the
    name itself comes from the profile, which a config can override)."""

    key: str
    kind: str
    family: str

    @property
    def judge_changes(self) -> bool:
        """Whether "never changed over the range" means something: counters and histogram
        counts do; a gauge may rightly stay put (a constant worker count, an empty queue)."""
        return self.kind != "gauge"


CONTRACT_METRICS: tuple[ContractMetric, ...] = (
    ContractMetric("adds", "counter", "queue"),
    ContractMetric("depth", "gauge", "queue"),
    ContractMetric("retries", "counter", "queue"),
    ContractMetric("queue_duration", "histogram", "queue"),
    ContractMetric("work_duration", "histogram", "queue"),
    ContractMetric("unfinished_work", "gauge", "queue"),
    ContractMetric("longest_running", "gauge", "queue"),
    ContractMetric("reconcile_total", "counter", "controller"),
    ContractMetric("reconcile_errors", "counter", "controller"),
    ContractMetric("max_concurrent_reconciles", "gauge", "controller"),
    ContractMetric("active_workers", "gauge", "controller"),
    ContractMetric("reconcile_panics", "counter", "controller"),
    ContractMetric("reconcile_timeouts", "counter", "controller"),
    ContractMetric("terminal_reconcile_errors", "counter", "controller"),
    ContractMetric("rest_client_requests", "counter", "process"),
    ContractMetric("rate_limiter_duration", "histogram", "process"),
    ContractMetric("request_duration", "histogram", "process"),
    ContractMetric("request_retries", "counter", "process"),
    ContractMetric("webhook_requests", "counter", "process"),
    ContractMetric("apf_rejected", "counter", "cluster"),
    ContractMetric("apf_dispatched", "counter", "cluster"),
    ContractMetric("apf_wait", "histogram", "cluster"),
    ContractMetric("apf_inqueue", "gauge", "cluster"),
    ContractMetric("apf_executing_seats", "gauge", "cluster"),
    ContractMetric("apf_nominal_limit_seats", "gauge", "cluster"),
    ContractMetric("apf_current_limit_seats", "gauge", "cluster"),
    ContractMetric("apf_concurrency_limit", "gauge", "cluster"),
    ContractMetric("apf_concurrency_in_use", "gauge", "cluster"),
    ContractMetric("apiserver_request_duration", "histogram", "cluster"),
    ContractMetric("apiserver_request_sli_duration", "histogram", "cluster"),
    ContractMetric("admission_webhook_duration", "histogram", "cluster"),
    ContractMetric("process_cpu", "counter", "runtime"),
    ContractMetric("gomaxprocs", "gauge", "runtime"),
    ContractMetric("sched_latency", "histogram", "runtime"),
    ContractMetric("container_info", "gauge", "container"),
    ContractMetric("container_cpu_limit", "gauge", "container"),
    ContractMetric("cfs_periods", "counter", "container"),
    ContractMetric("cfs_throttled_periods", "counter", "container"),
)
METRIC_BY_KEY: Mapping[str, ContractMetric] = {m.key: m for m in CONTRACT_METRICS}

ALL = frozenset(FRAMEWORKS)
CR_ONLY = frozenset({CONTROLLER_RUNTIME})
WITH_REST_CLIENT = frozenset({CONTROLLER_RUNTIME, COMPONENT_BASE})
"""A bare client-go process has no rest_client_* at all (else it is told component-base,
whose REST-client metrics it registered): its one REST signal is ``api_calls``."""


@dataclass(frozen=True)
class ContractSignal:
    """One signal of the contract: what it is, where it comes from, what needs it."""

    id: str
    metrics: tuple[str, ...]
    """:class:`ContractMetric` keys; the first is the signal's own metric, the others are
    alternatives that satisfy it (older or newer generations)."""
    scope: str
    """'queue' (one per queue: workqueue_* / controller_runtime_*), 'process', 'cluster',
    'container' (the process's container, from other jobs)."""
    frameworks: frozenset[str]
    """Where the signal applies; elsewhere it is not listed."""
    what: str
    needs: tuple[str, ...]
    """Verdict kinds (:data:`models.advisor.KINDS`), binding limits
    (:data:`models.options.BINDING_WORDS`) and ``plan.<field>`` of
    :class:`models.plan.CapacityPlan` that cannot be given without it (empty: no queuelens
    verdict reads it; :attr:`cost` says what is not known)."""
    cost: str
    must_move: bool = False
    """A signal that never changes over the range is ``empty`` (an idle queue's adds, a
    process that made no API call); a counter of failures that stays put is fine."""


CONTRACT_SIGNALS: tuple[ContractSignal, ...] = (
    ContractSignal(
        "arrivals", ("adds",), "queue", ALL,
        "distinct adds per second after coalescing (λ)",
        ("add_workers", "backlog_growing", "over_provisioned", "hot_key", "retry_storm",
         "requeue_misuse", "plan.demand_per_s"),
        "no arrival rate: the queue cannot be sized (insufficient_data) — no add_workers, "
        "backlog_growing or over_provisioned verdict, no design demand in the plan",
        must_move=True),
    ContractSignal(
        "work_duration", ("work_duration",), "queue", ALL,
        "completed passes (rate of _count), busy workers (rate of _sum, Little's law) and "
        "the work-time quantiles (_bucket)",
        ("add_workers", "backlog_growing", "over_provisioned", "contention", "long_passes",
         "stuck_workers", "plan.service_mean_s", "plan.recommended_workers"),
        "no throughput, service time or busy workers: no sizing (insufficient_data), no "
        "contention, long-pass or stuck-worker verdict",
        must_move=True),
    ContractSignal(
        "queue_wait", ("queue_duration",), "queue", ALL,
        "time from add to a worker's Get (the wait), mean and quantiles",
        ("add_workers", "hot_key"),
        "no observed wait: the SLO check rests on the model alone, and the hot-key rule "
        "without active_workers cannot run",
        must_move=True),
    ContractSignal(
        "depth", ("depth",), "queue", ALL,
        "items waiting (summed over controller-runtime's priority label)",
        ("backlog_growing", "hot_key"),
        "no backlog figure: the hot-key rule and the depth charts are missing"),
    ContractSignal(
        "retries", ("retries",), "queue", ALL,
        "delayed re-adds (every AddAfter: error retries and RequeueAfter alike)",
        ("retry_storm", "requeue_misuse"),
        "no retry share: retry_storm loses its confirmation and requeue_misuse its "
        "(retries − errors) ÷ adds rule"),
    ContractSignal(
        "unfinished_work", ("unfinished_work",), "queue", ALL,
        "seconds of work in progress (a gauge; it grows by the number of stuck passes)",
        ("stuck_workers",),
        "stuck passes are seen only through longest_running (stuck_workers is less sure)"),
    ContractSignal(
        "longest_running", ("longest_running",), "queue", ALL,
        "age of the oldest pass in progress (a gauge)",
        ("stuck_workers", "long_passes"),
        "stuck_workers cannot confirm that one pass never ends"),
    ContractSignal(
        "worker_count", ("max_concurrent_reconciles",), "queue", ALL,
        "the worker count c (controller-runtime's gauge, else `workers:` in the config)",
        ("add_workers", "backlog_growing", "over_provisioned", "hot_key", "workers",
         "plan.workers_now", "plan.recommended_workers"),
        "no worker count: no utilization, no sizing (insufficient_data), no 'now → "
        "recommended' in the plan"),
    ContractSignal(
        "active_workers", ("active_workers",), "queue", CR_ONLY,
        "workers inside a reconcile now (controller_runtime_active_workers)",
        ("hot_key",),
        "the hot-key rule falls back to window averages: less sure, and not given when "
        "contention is found"),
    ContractSignal(
        "reconcile_results", ("reconcile_total",), "queue", CR_ONLY,
        "reconciles by result: success, error, requeue, requeue_after",
        ("requeue_misuse", "retry_storm", "client_limiter", "plan.ceiling_per_s"),
        "no RequeueAfter share (requeue_misuse), no error share of the passes (retry_storm) "
        "and no API calls per reconcile (the client limiter's ceiling)",
        must_move=True),
    ContractSignal(
        "reconcile_errors", ("reconcile_errors",), "queue", CR_ONLY,
        "reconciles that returned an error",
        ("retry_storm", "requeue_misuse", "retry_policy"),
        "failures cannot be told from planned requeues: no retry_storm, and requeue_misuse "
        "cannot rule out errors"),
    ContractSignal(
        "failure_kinds", ("reconcile_panics", "reconcile_timeouts", "terminal_reconcile_errors"),
        "queue", CR_ONLY,
        "panics (v0.19+), timeouts (v0.23+) and terminal errors (v0.15+) apart from errors",
        (),
        "no verdict depends on it; without it a panic, a timed-out reconcile and a terminal "
        "error all read as ordinary errors"),
    ContractSignal(
        "api_calls", ("rest_client_requests",), "process", ALL,
        "API requests by code, per process (every attempt, retries included)",
        ("contention", "api_server", "write_conflicts", "client_limiter", "plan.ceiling_per_s"),
        "no API call rate: 429 and 409 shares (binding limits api_server and "
        "write_conflicts) and the client limiter's ceiling (QPS ÷ calls per reconcile) are "
        "unknown",
        must_move=True),
    ContractSignal(
        "client_limiter_wait", ("rate_limiter_duration",), "process", WITH_REST_CLIENT,
        "time requests wait in the client-side rate limiter (QPS/Burst)",
        ("contention", "client_limiter"),
        "the client_limiter binding (limiter time ≥ 10 % of busy-worker time) cannot be seen"),
    ContractSignal(
        "api_latency", ("request_duration",), "process", WITH_REST_CLIENT,
        "API request latency seen by the client (its _sum: requests in flight, Little's law)",
        (),
        "no verdict depends on it; without it the FlowSchema manifest of an api_server limit "
        "is sized without the controller's own requests in flight (10 seats assumed)"),
    ContractSignal(
        "api_retries", ("request_retries",), "process", WITH_REST_CLIENT,
        "client-go's retries (attempts 2..N after 429 or 5xx with Retry-After)",
        (),
        "no verdict depends on it; without it a 429 that client-go retried inside the "
        "reconcile (stretching the pass) is only visible in rest_client_requests_total"),
    ContractSignal(
        "apiserver_metrics", ("apf_dispatched", "apf_wait", "apf_rejected",
                              "apiserver_request_duration"), "cluster", ALL,
        "the API server's own metrics (API Priority and Fairness, request latency) in the same "
        "Prometheus",
        ("contention", "api_server", "admission_webhook"),
        "the api_server limit is seen only through 429 answers: APF wait, rejections and the "
        "level's seat saturation are unknown"),
    ContractSignal(
        "apf_level", ("apf_dispatched", "apf_wait", "apf_rejected", "apf_inqueue"), "cluster",
        ALL,
        "the priority level the controllers' requests land in: dispatched, wait, rejections, "
        "queue",
        ("contention", "api_server"),
        "APF wait and rejections of the controllers' level are unknown",
        must_move=True),
    ContractSignal(
        "apf_seats", ("apf_current_limit_seats", "apf_nominal_limit_seats",
                      "apf_concurrency_limit"), "cluster", ALL,
        "the level's seat limit and seats in use (saturation)",
        ("contention", "api_server"),
        "whether the level is saturated is unknown"),
    ContractSignal(
        "apf_attribution", ("apf_dispatched",), "cluster", ALL,
        "a FlowSchema of the controller's own, so APF series are its own",
        ("api_server",),
        "APF wait and rejections are those of every client in the level, not this "
        "controller's"),
    ContractSignal(
        "admission_webhooks", ("admission_webhook_duration",), "cluster", ALL,
        "admission webhook latency (the API server's histogram, per webhook)",
        ("contention", "admission_webhook"),
        "a slow admission webhook on the controller's writes cannot be seen"),
    # The controller's CPU (issue 20): the cpu binding limit.
    ContractSignal(
        "cpu_used", ("process_cpu",), "process", ALL,
        "CPU seconds the process used (rate: cores in use)",
        ("contention", "cpu"),
        "the cpu binding limit cannot be named: the cores the controller uses are unknown",
        must_move=True),
    ContractSignal(
        "cpu_gomaxprocs", ("gomaxprocs",), "process", ALL,
        "GOMAXPROCS: the cores the Go runtime runs goroutines on at once",
        ("contention", "cpu"),
        "the cpu limit's ceiling cannot be given: the cores the Go runtime may use are "
        "unknown"),
    ContractSignal(
        "cpu_run_queue", ("sched_latency",), "process", ALL,
        "time runnable goroutines waited for a core (go_sched_latencies_seconds)",
        ("contention", "cpu"),
        "the cpu binding limit cannot be confirmed: how long runnable goroutines wait for a "
        "core is unknown",
        must_move=True),
    ContractSignal(
        "cpu_limit", ("container_cpu_limit", "container_info"), "container", ALL,
        "the CPU limit of the controller's container (kube-state-metrics)",
        ("contention", "cpu"),
        "the cpu limit's ceiling cannot be given from the container's CPU limit"),
    ContractSignal(
        "cpu_throttling", ("cfs_throttled_periods", "cfs_periods"), "container", ALL,
        "CFS periods in which the kernel throttled the container (the kubelet's cAdvisor)",
        ("contention", "cpu"),
        "the cpu binding limit cannot be named from throttling: whether the kernel holds the "
        "container at its CPU quota is unknown"),
)
SIGNAL_BY_ID: Mapping[str, ContractSignal] = {s.id: s for s in CONTRACT_SIGNALS}
PRIORITY_SIGNAL = ContractSignal(
    "priority_depth", ("depth",), "queue", CR_ONLY,
    "controller-runtime's priority queue: workqueue_depth by priority",
    ("priority_starvation",),
    "past the cardinality cap the depth of the folded priorities is one series: "
    "priority_starvation cannot see them (total depth stays right)")




def samples_of(key: str, name: str) -> tuple[str, ...]:
    """The sample names of one metric: a histogram's three, else the name itself."""
    if METRIC_BY_KEY[key].kind == "histogram":
        return tuple(name + s for s in HISTOGRAM_SUFFIXES)
    return (name,)


def changes_sample(key: str, name: str) -> str:
    """The sample whose changes tell whether the metric moved (a histogram's ``_count``)."""
    return name + "_count" if METRIC_BY_KEY[key].kind == "histogram" else name


# --- the raw reading (collectors build it) ------------------------------------------------


@dataclass(frozen=True)
class Presence:
    """Series of one sample name for one queue of one process: how many."""

    sample: str
    queue: str = ""
    """The queue label's value ('' when the series have none)."""
    controller: str = ""
    process: tuple[str, ...] = ()
    """Values of :attr:`ContractReading.process_labels`, in order ('' when absent)."""
    series: int = 1


@dataclass(frozen=True)
class LeSpelling:
    """The ``le`` texts of a histogram's buckets in one process."""

    sample: str
    le: str
    process: tuple[str, ...] = ()
    series: int = 1


@dataclass(frozen=True)
class QueuePriorities:
    """The ``priority`` label of one queue's depth gauge."""

    queue: str
    process: tuple[str, ...] = ()
    distinct: int = 0
    """Distinct non-empty values (the placeholder included)."""
    capped: bool = False
    """``priority="exceeded_cardinality_limit"`` exists."""


@dataclass(frozen=True)
class ApiServerPresence:
    """API-server series of one sample name, priority level and flow schema."""

    sample: str
    cluster: tuple[str, ...] = ()
    """Values of :attr:`ContractReading.cluster_labels`, in order."""
    priority_level: str = ""
    flow_schema: str = ""
    series: int = 1


@dataclass(frozen=True)
class ContainerPresence:
    """kube-state-metrics or cAdvisor series of one sample name for one container."""

    sample: str
    namespace: str = ""
    pod: str = ""
    container: str = ""
    cluster: tuple[str, ...] = ()
    """Values of :attr:`ContractReading.cluster_labels`, in order."""
    series: int = 1


@dataclass(frozen=True)
class ProcessPod:
    """Where one process runs: the namespace, pod and container labels of its series ('' when
    they carry none)."""

    process: tuple[str, ...]
    namespace: str = ""
    pod: str = ""
    container: str = ""


@dataclass(frozen=True)
class ScrapeJob:
    job: str
    up: bool
    """Whether a target of the job answered its last scrape in the range."""


@dataclass(frozen=True)
class ContractReading:
    """What exists, read over ``range_s`` seconds before ``at``: no judgement made."""

    source: str
    at: float
    range_s: float
    names: Mapping[str, str]
    """:class:`ContractMetric` key -> the metric name the profile reads."""
    profile: str = CONTROLLER_RUNTIME
    queue_label: str = "name"
    controller_label: str = "controller"
    process_labels: tuple[str, ...] = ("job", "instance", "pod")
    """The labels a process is told by (the profile's, and its cluster labels)."""
    cluster_labels: tuple[str, ...] = ()
    priority_level: str = "workload-low"
    flow_schema: str | None = None
    selector: str = ""
    configured_workers: Mapping[str, float] = field(default_factory=dict)
    """Queue -> the worker count the config gives it (for the queues found)."""
    present: tuple[Presence, ...] = ()
    unchanged: tuple[Presence, ...] = ()
    """Present groups of counters and histogram counts in which no series changed."""
    le: tuple[LeSpelling, ...] = ()
    priorities: tuple[QueuePriorities, ...] = ()
    apiserver: tuple[ApiServerPresence, ...] = ()
    apiserver_unchanged: tuple[ApiServerPresence, ...] = ()
    scrape_jobs: tuple[ScrapeJob, ...] | None = None
    """Prometheus's scrape jobs (``up``) in the range; None when not known (exposition)."""
    containers: tuple[ContainerPresence, ...] = ()
    """kube-state-metrics and cAdvisor series of the controllers' pods."""
    pods: tuple[ProcessPod, ...] = ()
    container_labels: tuple[str, str, str] = ("namespace", "pod", "container")
    """The labels of the controllers' series that name their namespace, pod and container."""
    changes_known: bool = True
    """False when every series has one sample (one scrape): "never changed" is not known."""
    queries: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    replicas: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Replica label (``replica``, ``prometheus_replica``, ``__replica__``, the configured
    one) -> the values it has on the adds counters; only labels that have any."""
    replica_label: str | None = None
    """The label the reads deduplicate by (config ``profile.replica_label``), if any."""


# --- the report ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SignalReport:
    signal: str
    status: str
    detail: str
    fix: str | None
    metric: str
    """The metric name(s) it was judged on."""
    costs: tuple[str, ...] = ()
    """What cannot be given while it is not ok (verdict kinds, binding limits, plan fields)."""
    cost: str = ""


@dataclass(frozen=True)
class QueueReport:
    name: str
    missing: tuple[str, ...] = ()
    empty: tuple[str, ...] = ()
    malformed: tuple[str, ...] = ()
    priorities: int | None = None
    """Distinct values of depth's priority label (None: no priority label)."""


@dataclass(frozen=True)
class ApiServerFacts:
    reachable: bool
    generation: str
    """'≥1.37' (only ``nominal_limit_seats``), '<1.37' (``request_concurrency_limit``
    present), 'unknown' (no seat series)."""
    priority_level: str
    priority_level_seen: bool
    flow_schemas: tuple[str, ...] = ()
    """The flow schemas seen in that level."""
    flow_schema: str | None = None
    admission_webhooks: bool = False


@dataclass(frozen=True)
class Detected:
    framework: str
    evidence: tuple[str, ...]
    version_hints: tuple[str, ...]
    priority_queue: bool
    rest_client_metrics: Mapping[str, bool]
    apiserver: ApiServerFacts

    def facts(self) -> list[tuple[str, str]]:
        """(what, what was found) in words — the one wording of the CLI and the page."""
        api = self.apiserver
        rest = [k for k, v in self.rest_client_metrics.items() if v]
        return [
            ("framework", f"{self.framework} ({'; '.join(self.evidence)})"),
            ("version hints", "; ".join(self.version_hints) or "none"),
            ("priority queue", "on" if self.priority_queue else "off"),
            ("REST-client metrics", ", ".join(rest) or "none"),
            ("API server", (f"reachable, generation {api.generation}; level "
                            f"{api.priority_level!r} "
                            + ("seen" if api.priority_level_seen else "not seen")
                            + (f" (flow schemas: {', '.join(api.flow_schemas)})"
                               if api.flow_schemas else ""))
             if api.reachable else "not scraped"),
        ]


@dataclass(frozen=True)
class ProcessReport:
    labels: Mapping[str, str]
    queues: tuple[QueueReport, ...]
    detected: Detected
    signals: tuple[SignalReport, ...]

    @property
    def labels_text(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.labels.items()) or "(no process labels)"

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(STATUSES, 0)
        for s in self.signals:
            out[s.status] += 1
        return out


@dataclass(frozen=True)
class DoctorReport:
    source: str
    at: float
    range_s: float
    selector: str
    summary: str
    processes: tuple[ProcessReport, ...]
    signals: tuple[SignalReport, ...]
    """Fleet-wide: are there workqueue series at all, is the API server scraped."""
    queries: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


# --- fixes (exact text) -------------------------------------------------------------------

REST_OPT_IN = {
    "client_limiter_wait": "metrics.MetricRateLimiterLatency",
    "api_latency": "metrics.MetricRequestLatency",
    "api_retries": "metrics.MetricRequestRetry",
}
REGISTER_REST_CLIENT_METRICS = (
    'import "sigs.k8s.io/controller-runtime/pkg/metrics"\n\n'
    "// in main(), once, before the manager starts (controller-runtime v0.25; main after "
    "v0.24.1):\n"
    "metrics.RegisterRESTClientMetrics(metrics.MetricRateLimiterLatency, "
    "metrics.MetricRequestRetry, metrics.MetricRequestLatency)"
)
_PROVIDER_FIX = {
    CONTROLLER_RUNTIME: (
        "controller-runtime registers the workqueue metrics in pkg/internal/metrics, imported "
        "through pkg/controller (v0.20+): a binary that only imports pkg/metrics has none. If "
        "controller_runtime_* series exist but workqueue_* do not, another package won "
        "client-go's first-call-wins workqueue.SetProvider — component-base's provider, "
        "pulled in through k8s.io/apiserver or k8s.io/kube-aggregator, sends the workqueue "
        "metrics to the legacy registry (DataDog/datadog-operator#2771): drop that import "
        "from the manager binary, or also serve k8s.io/component-base/metrics/legacyregistry."
    ),
    COMPONENT_BASE: (
        "Kubernetes components register the workqueue provider in "
        "k8s.io/component-base/metrics/prometheus/workqueue; scrape the component's secure "
        "port (kube-controller-manager: https://<node>:10257/metrics) with a token allowed "
        "to GET /metrics."
    ),
    CLIENT_GO: (
        "a client-go queue exports workqueue_* only through a workqueue.MetricsProvider: "
        'import _ "k8s.io/component-base/metrics/prometheus/workqueue" and serve '
        "legacyregistry.Handler() on /metrics, or call workqueue.SetProvider with your own "
        "(client-go v0.27+: TypedQueueConfig.MetricsProvider per queue); a queue with an "
        "empty Name exports nothing."
    ),
}
_REST_FIX = {
    CONTROLLER_RUNTIME: (
        "controller-runtime's pkg/metrics registers rest_client_requests_total at init: it is "
        "missing when another package called client-go's metrics.Register first (it takes "
        "effect once per binary), or when the scrape does not reach the manager's /metrics."
    ),
    COMPONENT_BASE: (
        "k8s.io/component-base/metrics/prometheus/restclient registers the REST-client "
        "metrics at init (every kube component imports it): check the scrape reaches the "
        "component's /metrics."
    ),
    CLIENT_GO: (
        'import _ "k8s.io/component-base/metrics/prometheus/restclient" (its init registers '
        "client-go's REST-client metrics on the legacy registry) and serve "
        "legacyregistry.Handler() on /metrics."
    ),
}
APISERVER_SCRAPE_FIX = (
    "# prometheus.yml: scrape the API server (the kubernetes_sd example of Prometheus)\n"
    "- job_name: kubernetes-apiservers\n"
    "  scheme: https\n"
    "  kubernetes_sd_configs: [{role: endpoints}]\n"
    "  authorization: {credentials_file: /var/run/secrets/kubernetes.io/serviceaccount/token}\n"
    "  tls_config: {ca_file: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt}\n"
    "  relabel_configs:\n"
    "    - source_labels: [__meta_kubernetes_namespace, __meta_kubernetes_service_name,\n"
    "                    __meta_kubernetes_endpoint_port_name]\n"
    "      action: keep\n"
    "      regex: default;kubernetes;https\n"
    "# Prometheus's ServiceAccount needs a ClusterRole with\n"
    '#   rules: [{nonResourceURLs: ["/metrics"], verbs: ["get"]}]'
)
CONTROLLER_SCRAPE_FIX = (
    "# prometheus.yml: scrape the controllers' /metrics (or a ServiceMonitor / PodMonitor)\n"
    "- job_name: controllers\n"
    "  kubernetes_sd_configs: [{role: pod}]\n"
    "  relabel_configs:\n"
    "    - source_labels: [__meta_kubernetes_pod_label_control_plane]\n"
    "      action: keep\n"
    "      regex: controller-manager        # kubebuilder's pod label\n"
    "    - source_labels: [__meta_kubernetes_namespace]\n"
    "      target_label: namespace\n"
    "    - source_labels: [__meta_kubernetes_pod_name]\n"
    "      target_label: pod                # queuelens tells processes by job/instance/pod\n"
    "# kubebuilder v4.1+ serves /metrics over HTTPS on :8443 and needs a token allowed to GET\n"
    "# /metrics (scheme: https, authorization.credentials_file); older scaffolds serve :8080;\n"
    "# kube-controller-manager serves https://<node>:10257/metrics."
)


_GO_COLLECTOR = ("client_golang's Go collector exports it from the Go runtime's metrics "
                 "({source}): controller-runtime registers that collector on metrics.Registry "
                 "with every runtime metric (collectors.MetricsAll). No series: the binary "
                 "serves a registry of its own, or its Go collector leaves the scheduler's "
                 "metrics out, or a metric_relabel_configs rule drops go_*. On a registry of "
                 "your own:\n"
                 "reg.MustRegister(collectors.NewGoCollector(\n"
                 "    collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsScheduler)))")
_RUNTIME_FIX: Mapping[str, str] = {
    "cpu_used": (
        "process_cpu_seconds_total comes with client_golang's process collector (Linux and "
        "Windows): controller-runtime registers it on metrics.Registry, Kubernetes "
        "components on component-base's legacyregistry. No series: the binary serves a "
        "registry of its own, or a metric_relabel_configs rule drops process_*. On a "
        "registry of your own:\n"
        "reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))"),
    "cpu_gomaxprocs": _GO_COLLECTOR.format(source="/sched/gomaxprocs:threads"),
    "cpu_run_queue": _GO_COLLECTOR.format(source="/sched/latencies:seconds"),
}
"""The fix for a missing ``process_*``/``go_*`` signal."""
KSM_SCRAPE_FIX = (
    "# prometheus.yml: scrape kube-state-metrics (kube_pod_container_info and\n"
    "# kube_pod_container_resource_limits, by namespace/pod/container)\n"
    "- job_name: kube-state-metrics\n"
    "  honor_labels: true   # keep its namespace/pod/container labels (not exported_pod)\n"
    "  static_configs: [{targets: ['kube-state-metrics.kube-system.svc:8080']}]"
)
CADVISOR_SCRAPE_FIX = (
    "# prometheus.yml: scrape the kubelet's cAdvisor endpoint (container_cpu_cfs_*)\n"
    "- job_name: kubernetes-cadvisor\n"
    "  scheme: https\n"
    "  metrics_path: /metrics/cadvisor\n"
    "  kubernetes_sd_configs: [{role: node}]\n"
    "  authorization: {credentials_file: /var/run/secrets/kubernetes.io/serviceaccount/token}\n"
    "  tls_config: {ca_file: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt}\n"
    "# Prometheus's ServiceAccount needs a ClusterRole with\n"
    '#   rules: [{apiGroups: [""], resources: ["nodes/metrics"], verbs: ["get"]}]\n'
    "# cAdvisor counts CFS periods only for a container with a CPU limit (a CFS quota)."
)
NO_LIMIT_FIX = (
    "nothing to scrape: the container has no CPU limit (resources.limits.cpu), so it has no "
    "CFS quota, is never throttled and competes for the node's cores; no ceiling follows "
    "from a limit. Set resources.limits.cpu on the controller's container to give it one "
    "(Go 1.25+ sets GOMAXPROCS from it)."
)


def _pod_labels_fix(labels: Sequence[str]) -> str:
    """Relabelling that puts namespace, pod and container on the controllers' series."""
    ns, pod, ctr = labels
    return ("# in the controllers' scrape job (kubernetes_sd role: pod or endpoints):\n"
            "relabel_configs:\n"
            f"  - {{source_labels: [__meta_kubernetes_namespace], target_label: {ns}}}\n"
            f"  - {{source_labels: [__meta_kubernetes_pod_name], target_label: {pod}}}\n"
            "  - {source_labels: [__meta_kubernetes_pod_container_name], target_label: "
            f"{ctr}}}\n"
            "# labels of other names: profile: {labels: {namespace: <label>, pod: <label>, "
            "container: <label>}}")


def _flow_schema_fix(controller: str) -> str:
    """The dedicated FlowSchema and level (:func:`models.flowschema.flowschema_manifest`) and
    the profile lines that make queuelens read them."""
    manifest = flowschema_manifest(controller)
    name = flowschema_name(controller)
    return (manifest.rstrip("\n") + "\n# then tell queuelens (queuelens.yaml, not for kubectl):"
            "\n#   profile:\n#     apiserver: "
            f"{{priority_level: {json.dumps(name)}, flow_schema: {json.dumps(name)}}}")


def _le_relabel_fix(family: str) -> str:
    return (
        "Prometheus 2.x stores le as the client wrote it (Go writes 1, Python 1.0; Prometheus 3 "
        "rewrites integers as 1.0 when it scrapes), so one bucket is two series. queuelens "
        "and histogram_quantile parse le as a float and merge them; a query or alert that "
        'matches le="1" as a string misses the le="1.0" series. To store one spelling, add '
        "to the scrape job:\n"
        "metric_relabel_configs:\n"
        f"  - source_labels: [__name__, le]\n"
        f"    regex: '{family}_bucket;([0-9]+)'\n"
        "    target_label: le\n"
        "    replacement: '${1}.0'"
    )


def _yaml_key(name: str) -> str:
    """A queue name as a YAML mapping key (a JSON string is a YAML double-quoted scalar)."""
    plain = name and all(c.isalnum() or c in "-_./" for c in name) and not name[0].isdigit()
    return name if plain else json.dumps(name)


def _workers_fix(framework: str, queues: Sequence[str]) -> str:
    if framework == COMPONENT_BASE:
        source = ("the component's worker flag for that controller (kube-controller-manager: "
                  "--concurrent-<controller>-syncs, e.g. --concurrent-deployment-syncs, "
                  "default 5)")
    elif framework == CLIENT_GO:
        source = "the number of worker goroutines your code runs on that queue"
    else:
        source = "MaxConcurrentReconciles of that controller"
    shown = list(queues[:MAX_LISTED])
    lines = [f"    {_yaml_key(q)}: <N>" for q in shown]
    if len(queues) > len(shown):
        lines.append(f"    # … and {len(queues) - len(shown)} more")
    return (f"# queuelens.yaml (--config): N = {source}\nprofile:\n  workers:\n"
            + "\n".join(lines))


# --- helpers ------------------------------------------------------------------------------


def _listed(names: Iterable[str]) -> str:
    items = sorted(names)
    shown = ", ".join(items[:MAX_LISTED])
    if len(items) > MAX_LISTED:
        shown += f" and {len(items) - MAX_LISTED} more"
    return shown


class _Index:
    """The reading's rows, indexed for the questions the diagnosis asks."""

    def __init__(self, reading: ContractReading) -> None:
        self.r = reading
        self.sample_metric: dict[str, tuple[str, str]] = {}
        """sample name -> (metric key, suffix)."""
        for m in CONTRACT_METRICS:
            name = reading.names.get(m.key)
            if not name:
                continue
            for sample in samples_of(m.key, name):
                self.sample_metric.setdefault(sample, (m.key, sample[len(name):]))
        self.rows: dict[tuple[str, ...], list[Presence]] = defaultdict(list)
        for row in reading.present:
            if row.sample in self.sample_metric:
                self.rows[row.process].append(row)
        self.unchanged = {(u.sample, u.queue, u.controller, u.process) for u in reading.unchanged}
        self.le: dict[tuple[tuple[str, ...], str], set[str]] = defaultdict(set)
        for sp in reading.le:
            self.le[(sp.process, sp.sample)].add(sp.le)
        self.prio: dict[tuple[str, ...], dict[str, QueuePriorities]] = defaultdict(dict)
        for qp in reading.priorities:
            self.prio[qp.process][qp.queue] = qp
        self.cluster_pos = [reading.process_labels.index(c) for c in reading.cluster_labels
                            if c in reading.process_labels]
        self.pods: dict[tuple[str, ...], list[ProcessPod]] = defaultdict(list)
        for pp in reading.pods:
            self.pods[pp.process].append(pp)
        self.containers: dict[tuple[tuple[str, ...], str], list[ContainerPresence]] = \
            defaultdict(list)
        """(cluster, pod) -> its container rows."""
        for c in reading.containers:
            self.containers[(c.cluster, c.pod)].append(c)

    def family(self, sample: str) -> str:
        return METRIC_BY_KEY[self.sample_metric[sample][0]].family

    def name(self, key: str) -> str:
        return self.r.names.get(key, key)

    def processes(self) -> list[tuple[str, ...]]:
        """Processes with queue or controller series (rest_client_* alone is not a
        controller: any Go program with client-go has it)."""
        out = [p for p, rows in self.rows.items()
               if any(self.family(r.sample) in ("queue", "controller") for r in rows)]
        return sorted(out)

    def cluster_of(self, process: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(process[i] for i in self.cluster_pos)

    def apiserver_rows(self, process: tuple[str, ...] | None) -> list[ApiServerPresence]:
        if process is None or not self.r.cluster_labels:
            return list(self.r.apiserver)
        cluster = self.cluster_of(process)
        return [a for a in self.r.apiserver if a.cluster == cluster]


class _Process:
    """One process's rows."""

    def __init__(self, ix: _Index, process: tuple[str, ...]) -> None:
        self.ix = ix
        self.key = process
        self.rows = ix.rows[process]
        self.labels = {k: v for k, v in zip(ix.r.process_labels, process, strict=True) if v}
        wq = [r for r in self.rows if ix.family(r.sample) == "queue"]
        cr = [r for r in self.rows if ix.family(r.sample) == "controller"]
        self.wq_queues = {r.queue for r in wq if r.queue}
        self.cr_controllers = {r.controller for r in cr if r.controller}
        self.queues = sorted(self.wq_queues | self.cr_controllers)
        self.has_cr = bool(cr)
        self.controller_label_on_wq = any(r.controller for r in wq)
        self.samples = {r.sample for r in self.rows}
        self.prio = ix.prio.get(process, {})

    def has(self, key: str) -> bool:
        name = self.ix.r.names.get(key)
        return bool(name) and any(s in self.samples for s in samples_of(key, name or ""))

    def by_queue(self, key: str) -> dict[str, set[str]]:
        """Queue -> the suffixes present ('' for a counter/gauge) of metric ``key``."""
        name = self.ix.r.names.get(key)
        out: dict[str, set[str]] = defaultdict(set)
        if not name:
            return out
        family = METRIC_BY_KEY[key].family
        wanted = set(samples_of(key, name))
        for r in self.rows:
            if r.sample in wanted:
                q = r.queue if family == "queue" else r.controller
                if family in ("process", "cluster", "runtime"):
                    q = ""
                out[q].add(r.sample[len(name):])
        return out

    def unchanged_queues(self, key: str) -> set[str]:
        """Queues (or '' for a process metric) whose series of ``key`` never changed."""
        name = self.ix.r.names.get(key)
        if not name:
            return set()
        sample = changes_sample(key, name)
        family = METRIC_BY_KEY[key].family
        groups: dict[str, list[bool]] = defaultdict(list)
        for r in self.rows:
            if r.sample != sample:
                continue
            q = r.queue if family == "queue" else r.controller if family == "controller" else ""
            groups[q].append((r.sample, r.queue, r.controller, r.process) in self.ix.unchanged)
        return {q for q, flags in groups.items() if flags and all(flags)}

    def le_texts(self, key: str) -> set[str]:
        name = self.ix.r.names.get(key, "")
        return self.ix.le.get((self.key, name + "_bucket"), set())


# --- detection ----------------------------------------------------------------------------


def _framework(p: _Process) -> tuple[str, list[str]]:
    evidence: list[str] = []
    ix = p.ix
    if p.has_cr:
        evidence.append("controller_runtime_* series")
    if p.controller_label_on_wq:
        evidence.append(f"workqueue_* carry the {ix.r.controller_label!r} label")
    if p.prio:
        evidence.append("workqueue_depth carries the priority label")
    if p.has("webhook_requests"):
        evidence.append(f"{ix.name('webhook_requests')} (the manager's webhook server)")
    if evidence:
        return CONTROLLER_RUNTIME, evidence
    if p.has("rest_client_requests") or p.has("rate_limiter_duration") \
            or p.has("request_duration"):
        return COMPONENT_BASE, ["workqueue_* with only the queue label, rest_client_* and no "
                                "controller_runtime_*"]
    return CLIENT_GO, ["workqueue_* only: no controller_runtime_*, no rest_client_*"]


def _top_finite_le(texts: Iterable[str]) -> float | None:
    values = [v for v in (parse_le(t) for t in texts) if v is not None and math.isfinite(v)]
    return max(values) if values else None


def _version_hints(p: _Process, framework: str) -> list[str]:
    hints: list[str] = []
    if framework == CONTROLLER_RUNTIME:
        if p.wq_queues:
            hints.append("≥ v0.19 (workqueue_* carry the controller label)"
                         if p.controller_label_on_wq
                         else "≤ v0.18 (workqueue_* without the controller label)")
        if p.prio:
            hints.append("≥ v0.21 (priority label on workqueue_depth)")
        if p.has("reconcile_timeouts"):
            hints.append("≥ v0.23 (controller_runtime_reconcile_timeouts_total)")
        elif p.has("reconcile_panics"):
            hints.append("≥ v0.19 (controller_runtime_reconcile_panics_total)")
        if any(p.has(k) for k in ("rate_limiter_duration", "request_duration",
                                   "request_retries")):
            hints.append("REST-client opt-in metrics on (metrics.RegisterRESTClientMetrics: "
                         "controller-runtime v0.25 / main after v0.24.1)")
    top = _top_finite_le(p.le_texts("work_duration") | p.le_texts("queue_duration"))
    if top is not None:
        if top >= 1000:
            hints.append("workqueue buckets up to 1000 s (controller-runtime ≥ v0.17)")
        elif top >= 10:
            hints.append("workqueue buckets up to 10 s (component-base, or controller-runtime "
                         "≤ v0.16): a wait or pass longer than 10 s reads only as '> 10 s'")
    return hints


def _apiserver_facts(ix: _Index, process: tuple[str, ...] | None) -> ApiServerFacts:
    rows = ix.apiserver_rows(process)
    names = {r.sample for r in rows}
    r = ix.r
    level_rows = [a for a in rows if a.priority_level == r.priority_level]
    old = r.names.get("apf_concurrency_limit")
    new = r.names.get("apf_nominal_limit_seats")
    if old and old in names:
        generation = "<1.37"
    elif new and new in names:
        generation = "≥1.37"
    else:
        generation = "unknown"
    webhook = r.names.get("admission_webhook_duration", "")
    return ApiServerFacts(
        reachable=bool(rows),
        generation=generation,
        priority_level=r.priority_level,
        priority_level_seen=bool(level_rows),
        flow_schemas=tuple(sorted({a.flow_schema for a in level_rows if a.flow_schema})),
        flow_schema=r.flow_schema,
        admission_webhooks=any(s.startswith(webhook) for s in names) if webhook else False,
    )


# --- signal evaluation --------------------------------------------------------------------


def _signal(sig: ContractSignal, status: str, detail: str, fix: str | None,
            metric: str, cost: str | None = None,
            costs: tuple[str, ...] | None = None) -> SignalReport:
    bad = status != "ok"
    return SignalReport(signal=sig.id, status=status, detail=detail,
                        fix=fix if bad else None, metric=metric,
                        costs=(sig.needs if costs is None else costs) if bad else (),
                        cost=(cost or sig.cost) if bad else "")


MIXED_LE_COST = ("none for queuelens: it parses le as a float and merges equal bounds, as "
                 "histogram_quantile does; hand-written PromQL, alerts and recording rules that "
                 "match le as a string see only one spelling's series")
NO_INF_COST = "no quantile from this histogram: the +Inf bucket is its total"


@dataclass(frozen=True)
class _Problems:
    texts: list[str]
    queues: set[str]
    fix: str | None
    cost: str | None
    """A cost narrower than the signal's (None: the signal's own)."""
    costs: tuple[str, ...] | None


def _histogram_problems(p: _Process, key: str, present: Mapping[str, set[str]]) -> _Problems:
    """What is malformed in histogram ``key`` of one process, where, the fix and the cost."""
    name = p.ix.name(key)
    problems: list[str] = []
    bad_queues: set[str] = set()
    fixes: list[str] = []
    partial: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for q, suffixes in present.items():
        lacking = tuple(s for s in HISTOGRAM_SUFFIXES if s not in suffixes)
        if lacking and len(lacking) < 3:
            partial[lacking].append(q)
            if q:
                bad_queues.add(q)
    for lacking, queues in sorted(partial.items()):
        have = [s for s in HISTOGRAM_SUFFIXES if s not in lacking]
        where = f" (queues {_listed(queues)})" if any(queues) else ""
        problems.append(f"{name}{'/'.join(have)} without {'/'.join(lacking)}{where}")
    if partial:
        fixes.append(f"the exporter writes {name} without all of _bucket, _sum and _count: a "
               "hand-written exposition, a Summary where a Histogram belongs (quantile series "
               "instead of buckets), or a metric_relabel_configs rule with action: drop on "
               "one of them. queuelens reads rates of _count (throughput, means) and _sum "
               "(busy time) and the quantiles from _bucket: remove the drop rule, or expose "
               "the histogram through a client library (prometheus.NewHistogramVec writes all "
               "three).")
    kinds: set[str] = set()
    texts = p.le_texts(key)
    if texts:
        values: dict[float, set[str]] = defaultdict(set)
        bad = sorted(t for t in texts if parse_le(t) is None)
        for t in texts:
            v = parse_le(t)
            if v is not None:
                values[v].add(t)
        if bad:
            kinds.add("nan")
            problems.append(f"le values that are not numbers: {_listed(bad)}")
            fixes.append("le must be a number (every client library writes one): look for a "
                         "metric_relabel_configs rule that rewrites le, or a hand-written "
                         "exposition.")
        if not any(v == math.inf for v in values):
            kinds.add("inf")
            problems.append(f"no +Inf bucket in {name}_bucket (its count is the total: "
                            "no quantile can be computed without it)")
            fixes.append(f"every histogram must expose {name}_bucket{{le=\"+Inf\"}} (equal "
                         "to _count); a client library does — check for a relabel rule that "
                         "drops it.")
        mixed = {v: s for v, s in values.items() if len(s) > 1}
        if mixed:
            kinds.add("mixed")
            words = "; ".join(" and ".join(f'le="{t}"' for t in sorted(s))
                              for _, s in sorted(mixed.items()))
            problems.append(f"bounds spelled two ways in {name}_bucket: {words}")
            fixes.append(_le_relabel_fix(name))
    cost: str | None = None
    costs: tuple[str, ...] | None = None
    if problems and not partial:
        if kinds == {"mixed"}:
            cost, costs = MIXED_LE_COST, ()
        elif "inf" in kinds:
            cost = NO_INF_COST
    return _Problems(problems, bad_queues, "\n\n".join(fixes) or None, cost, costs)


def _queue_signal(p: _Process, sig: ContractSignal, framework: str,
                  queue_marks: dict[str, dict[str, list[str]]]) -> SignalReport:
    ix = p.ix
    key = sig.metrics[0]
    name = ix.name(key)
    kind = METRIC_BY_KEY[key].kind
    family = METRIC_BY_KEY[key].family
    present = p.by_queue(key)
    scope = p.queues if family == "controller" else (sorted(p.wq_queues) or p.queues)
    shown_metric = name + ("_{bucket,sum,count}" if kind == "histogram" else "")
    missing = [q for q in scope if not present.get(q)]
    fix_missing = (_PROVIDER_FIX.get(framework, _PROVIDER_FIX[CLIENT_GO]) if family == "queue"
                   else _cr_fix(sig))

    def mark(status: str, queues: Iterable[str]) -> None:
        for q in queues:
            queue_marks[q][status].append(sig.id)

    if missing and len(missing) == len(scope):
        mark("missing", missing)
        return _signal(sig, "missing", f"no {name} series in this process", fix_missing,
                       shown_metric)
    if missing:
        mark("missing", missing)
        return _signal(sig, "missing",
                       f"{name} missing for {len(missing)} of {len(scope)} queues: "
                       f"{_listed(missing)}", fix_missing, shown_metric)
    if kind == "histogram":
        found = _histogram_problems(p, key, present)
        if found.texts:
            mark("malformed", found.queues or scope)
            return _signal(sig, "malformed", "; ".join(found.texts), found.fix, shown_metric,
                           found.cost, found.costs)
    unchanged = p.unchanged_queues(key) & set(scope) if ix.r.changes_known else set()
    window = describe_duration(ix.r.range_s)
    detail = f"{name} for {len(scope)} queue{'s' if len(scope) != 1 else ''}"
    if sig.must_move and unchanged and len(unchanged) == len(scope):
        mark("empty", unchanged)
        other = ("" if key != "adds" or not p.by_queue("work_duration") else
                 _moved_elsewhere(p, unchanged))
        return _signal(sig, "empty",
                       f"{name} exists but never changed in the last {window}{other}",
                       _empty_fix(sig, name), changes_sample(key, name),
                       f"{sig.cost} (nothing to measure in the range)")
    if unchanged:
        if sig.must_move:
            mark("empty", unchanged)
            detail += (f"; no change in the last {window} for {_listed(unchanged)} "
                       "(idle, or not incremented)")
        elif len(unchanged) == len(scope):
            detail += f"; none happened in the last {window} (the counter never increased)"
    if sig.id == "work_duration" or sig.id == "queue_wait":
        top = _top_finite_le(p.le_texts(key))
        if top is not None and top < 100:
            detail += (f"; top finite bucket {go_float(top)} s: anything longer reads only as "
                       f"'> {go_float(top)} s'")
    return _signal(sig, "ok", detail, None, shown_metric)


def _moved_elsewhere(p: _Process, unchanged: set[str]) -> str:
    """For adds that never changed: did the same queues complete work meanwhile?"""
    done = p.unchanged_queues("work_duration")
    moved = sorted(q for q in unchanged if q not in done and q in p.by_queue("work_duration"))
    if not moved:
        return " (the queues did no work either: idle, or the process is stuck)"
    return (f", while {p.ix.name('work_duration')}_count did for {_listed(moved)}: the adds "
            "counter is exported but not incremented")


def _empty_fix(sig: ContractSignal, name: str) -> str:
    if METRIC_BY_KEY[sig.metrics[0]].family == "runtime":
        return (f"{name} never changed: a running Go process uses CPU and schedules "
                "goroutines all the time, so the series is stale — the process is stopped or "
                "a proxy in front of /metrics serves a cached answer.")
    if sig.scope == "process":
        return (f"{name} never increased: the process made no API request in the range (idle, "
                "or its client is not the one whose metrics are registered). Lengthen --range "
                "for a quiet controller.")
    return (f"{name} never increased: the queue was idle for the whole range, or its "
            "MetricsProvider hands out a no-op counter (a custom provider, or a queue created "
            "before the provider was set). Check the controller receives events; lengthen "
            "--range for a quiet queue.")


def _cr_fix(sig: ContractSignal) -> str:
    if sig.id == "failure_kinds":
        return ("upgrade controller-runtime: reconcile_panics_total exists since v0.19, "
                "reconcile_timeouts_total since v0.23, terminal_reconcile_errors_total since "
                "v0.15 (each created at 0 when the controller starts).")
    return ("controller_runtime_* series are created when a controller starts, which is on "
            "the elected leader only: a standby replica has workqueue_* at most. Scrape every "
            "replica and read the leader's; if the leader lacks them too, the manager's "
            "registry (sigs.k8s.io/controller-runtime/pkg/metrics.Registry) is not the one "
            "served on /metrics.")


def _failure_kinds(p: _Process, sig: ContractSignal,
                   queue_marks: dict[str, dict[str, list[str]]]) -> SignalReport:
    have = [k for k in sig.metrics if p.has(k)]
    names = "/".join(p.ix.name(k) for k in sig.metrics)
    if not have:
        return _signal(sig, "missing", "none of reconcile_panics_total, "
                       "reconcile_timeouts_total, terminal_reconcile_errors_total",
                       _cr_fix(sig), names)
    lacking = [p.ix.name(k) for k in sig.metrics if k not in have]
    if lacking:
        return _signal(sig, "missing", f"present: {', '.join(p.ix.name(k) for k in have)}; "
                       f"missing: {', '.join(lacking)} (an older controller-runtime)",
                       _cr_fix(sig), names)
    return _signal(sig, "ok", "panics, timeouts and terminal errors are counted apart", None,
                   names)


def _worker_count(p: _Process, sig: ContractSignal, framework: str,
                  queue_marks: dict[str, dict[str, list[str]]]) -> SignalReport:
    ix = p.ix
    name = ix.name("max_concurrent_reconciles")
    gauge = p.by_queue("max_concurrent_reconciles") if framework == CONTROLLER_RUNTIME else {}
    configured = ix.r.configured_workers
    scope = p.queues
    from_gauge = [q for q in scope if gauge.get(q)]
    from_config = [q for q in scope if q not in gauge and q in configured]
    lacking = [q for q in scope if not gauge.get(q) and q not in configured]
    parts = []
    if from_gauge:
        parts.append(f"{name} for {len(from_gauge)} queue{'s' if len(from_gauge) != 1 else ''}")
    if from_config:
        parts.append(f"the config's workers for {_listed(from_config)}")
    if not lacking:
        return _signal(sig, "ok", "; ".join(parts), None, name)
    for q in lacking:
        queue_marks[q]["missing"].append(sig.id)
    if framework == CONTROLLER_RUNTIME:
        detail = (f"no {name} for {_listed(lacking)} and no workers: entry in the config"
                  + (f" ({'; '.join(parts)})" if parts else ""))
        fix = _cr_fix(sig) + "\nOr give the count in the config:\n" + _workers_fix(
            framework, lacking)
    else:
        what = ("component-base exposes no worker count" if framework == COMPONENT_BASE
                else "a bare client-go queue exposes no worker count")
        detail = (f"{what}, and the config has none for {_listed(lacking)}"
                  + (f" ({'; '.join(parts)})" if parts else ""))
        fix = _workers_fix(framework, lacking)
    return _signal(sig, "missing", detail, fix, name)


def _process_signal(p: _Process, sig: ContractSignal, framework: str) -> SignalReport:
    ix = p.ix
    key = sig.metrics[0]
    name = ix.name(key)
    kind = METRIC_BY_KEY[key].kind
    shown = name + ("_{bucket,sum,count}" if kind == "histogram" else "")
    present = p.by_queue(key)
    window = describe_duration(ix.r.range_s)
    if not present:
        if METRIC_BY_KEY[key].family == "runtime":
            return _signal(sig, "missing", f"no {name} series in this process",
                           _RUNTIME_FIX[sig.id], shown)
        if sig.id == "api_calls":
            fix = _REST_FIX.get(framework, _REST_FIX[CLIENT_GO])
            detail = f"no {name} series in this process"
        elif framework == CONTROLLER_RUNTIME:
            fix = REGISTER_REST_CLIENT_METRICS
            detail = (f"no {name}: controller-runtime registers only rest_client_requests_total "
                      f"unless main() opts in ({REST_OPT_IN[sig.id]})")
            if sig.id == "client_limiter_wait":
                detail += ("; with the manager's default QPS = -1 (v0.21+) there is no "
                           "client-side limiter and no series even then: the client_limiter "
                           "limit cannot bind")
        else:
            fix = (_REST_FIX.get(framework, _REST_FIX[CLIENT_GO]) if framework == CLIENT_GO
                   else (f"component-base registers {name}; no series means no observation: "
                         "the client has no rate limiter (QPS < 0) or made no request"
                         if sig.id == "client_limiter_wait" else _REST_FIX[framework]))
            detail = f"no {name} series in this process"
        return _signal(sig, "missing", detail, fix, shown)
    if kind == "histogram":
        found = _histogram_problems(p, key, present)
        if found.texts:
            return _signal(sig, "malformed", "; ".join(found.texts), found.fix, shown,
                           found.cost, found.costs)
    unchanged = p.unchanged_queues(key) if ix.r.changes_known else set()
    if sig.must_move and "" in unchanged:
        return _signal(sig, "empty", f"{name} exists but never changed in the last {window}",
                       _empty_fix(sig, name), changes_sample(key, name))
    detail = f"{name} present"
    if "" in unchanged:
        detail += f"; none happened in the last {window}"
    if framework == CONTROLLER_RUNTIME and sig.id in REST_OPT_IN:
        detail += " (opted in with metrics.RegisterRESTClientMetrics)"
    return _signal(sig, "ok", detail, None, shown)


def _container_signal(p: _Process, sig: ContractSignal) -> SignalReport:
    """The CPU limit or the throttling of the process's container: its kube-state-metrics or
    cAdvisor series, joined on the pod (and the namespace and container where the process's
    series carry them). The container is the one the controller's series name, else the
    pod's only one; a pod of several containers is not summed (a sidecar's limit is not the
    controller's: the rule of :class:`collectors.processes._Containers`)."""
    ix = p.ix
    r = ix.r
    _, pod_l, ctr_l = r.container_labels
    own = {"cpu_limit": "container_cpu_limit", "cpu_throttling": "cfs_periods"}[sig.id]
    sample = ix.name(own)
    info = ix.name("container_info")
    shown = (f'{sample}{{resource="cpu"}}' if sig.id == "cpu_limit"
             else f"{ix.name('cfs_throttled_periods')}, {sample}")
    scrape = KSM_SCRAPE_FIX if sig.id == "cpu_limit" else CADVISOR_SCRAPE_FIX
    pods = [pp for pp in ix.pods.get(p.key, []) if pp.pod]
    if not pods:
        return _signal(sig, "missing", f"the controller's series carry no {pod_l!r} label: "
                       "its container's series (other jobs, by namespace/pod/container) "
                       "cannot be joined", _pod_labels_fix(r.container_labels), shown)
    cluster = ix.cluster_of(p.key) if r.cluster_labels else ()
    found: list[str] = []
    for pp in sorted(pods, key=lambda x: (x.namespace, x.pod, x.container)):
        rows = [c for c in ix.containers.get((cluster, pp.pod), [])
                if not pp.namespace or c.namespace == pp.namespace]
        where = f"pod {pp.namespace}/{pp.pod}" if pp.namespace else f"pod {pp.pod}"
        ctr = pp.container
        if not ctr:
            names = sorted({c.container for c in rows if c.sample == info})
            if len(names) > 1:
                return _signal(sig, "missing", f"{where} has {len(names)} containers "
                               f"({_listed(names)}) and the controller's series carry no "
                               f"{ctr_l!r} label: the controller's container cannot be told",
                               _pod_labels_fix(r.container_labels), shown)
            if not names:
                has = any(c.sample == sample for c in rows)
                detail = (f"no {info} series for {where}: which of its containers is the "
                          f"controller's is unknown (the controller's series carry no "
                          f"{ctr_l!r} label)")
                return _signal(sig, "missing", detail, (_pod_labels_fix(r.container_labels)
                                                        if has else KSM_SCRAPE_FIX), shown)
            ctr = names[0]
        mine = [c for c in rows if c.container == ctr]
        if not any(c.sample == sample for c in mine):
            if any(c.sample == info for c in mine):
                return _signal(sig, "missing", f"container {ctr!r} of {where} has no CPU "
                               "limit (kube-state-metrics shows the container, no limit)",
                               NO_LIMIT_FIX, shown)
            return _signal(sig, "missing", f"no {sample} series for container {ctr!r} of "
                           f"{where}", scrape, shown)
        found.append(f"container {ctr!r} of {where}")
    return _signal(sig, "ok", f"{sample} for {_listed(found)}", None, shown)


def _labels_text(labels: Sequence[str], values: Sequence[str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in zip(labels, values, strict=True))


def _level_fix(levels: Sequence[str]) -> str:
    seen = f"  # levels seen: {_listed(levels)}" if levels else ""
    return ("queuelens reads the level named in the profile (default workload-low, where "
            "FlowSchema service-accounts sends every ServiceAccount outside kube-system); "
            "name the level your controllers' FlowSchema uses:\n"
            f"profile:\n  apiserver: {{priority_level: <level>}}{seen}")


def _cluster_signals(ix: _Index, process: tuple[str, ...] | None, controller: str
                     ) -> list[SignalReport]:
    """The API server's signals for one process (its cluster's series), or for the fleet."""
    r = ix.r
    facts = _apiserver_facts(ix, process)
    rows = ix.apiserver_rows(process)
    sig = SIGNAL_BY_ID["apiserver_metrics"]
    names_shown = "apiserver_flowcontrol_*, apiserver_request_*, apiserver_admission_*"
    if not rows:
        detail = f"no API-server series in {r.source} in the last {describe_duration(r.range_s)}"
        fix = APISERVER_SCRAPE_FIX
        if r.cluster_labels and r.apiserver and process is not None:
            clusters = sorted({_labels_text(r.cluster_labels, a.cluster) for a in r.apiserver})
            mine = _labels_text(r.cluster_labels, ix.cluster_of(process))
            detail = (f"API-server series exist for {_listed(clusters)}, none for this "
                      f"process's {mine}")
            fix = ("give the controllers' series and their API server's the same "
                   f"{', '.join(r.cluster_labels)} label: an external label per Prometheus, "
                   "or in each scrape job:\nrelabel_configs:\n  - target_label: "
                   f"{r.cluster_labels[0]}\n    replacement: <cluster name>")
        return [_signal(sig, "missing", detail, fix, names_shown)]
    out = [_signal(sig, "ok", f"API-server series present ({len({a.sample for a in rows})} "
                   f"metrics; generation {facts.generation})", None, names_shown)]
    level = r.priority_level
    lsig = SIGNAL_BY_ID["apf_level"]
    apf = {changes_sample(k, r.names[k]) for k in lsig.metrics if k in r.names}
    level_rows = [a for a in rows if a.priority_level == level and a.sample in apf]
    levels = sorted({a.priority_level for a in rows if a.priority_level})
    level_metric = "apiserver_flowcontrol_*{priority_level=" + json.dumps(level) + "}"
    if not level_rows:
        out.append(_signal(
            lsig, "missing", f"no APF series for priority level {level!r}"
            + (f" (levels seen: {_listed(levels)})" if levels else " (no APF series at all)"),
            _level_fix(levels), level_metric))
    else:
        dispatched = r.names.get("apf_dispatched", "")
        cluster = ix.cluster_of(process) if process is not None and r.cluster_labels else None
        still = {u.sample for u in r.apiserver_unchanged if u.priority_level == level
                 and (cluster is None or u.cluster == cluster)}
        have = sorted({a.sample for a in level_rows})
        if r.changes_known and dispatched in have and dispatched in still:
            out.append(_signal(lsig, "empty", f"{dispatched}{{priority_level={level!r}}} never "
                               f"changed in the last {describe_duration(r.range_s)}: no request "
                               "was dispatched in that level", _level_fix(levels), dispatched))
        else:
            out.append(_signal(lsig, "ok", f"level {level!r}: {', '.join(have)}", None,
                               level_metric))
    seats = SIGNAL_BY_ID["apf_seats"]
    seat_names = {r.names[k] for k in seats.metrics if k in r.names}
    seat_rows = sorted({a.sample for a in rows if a.sample in seat_names})
    gen_text = {"<1.37": "request_concurrency_limit present: Kubernetes before 1.37 (removed "
                         "in 1.37); queuelens falls back to it",
                "≥1.37": "only nominal_limit_seats: Kubernetes 1.37 or later (or 1.30–1.36 "
                         "hiding the deprecated request_concurrency_limit)",
                "unknown": "no seat-limit series"}[facts.generation]
    if seat_rows:
        out.append(_signal(seats, "ok", f"{', '.join(seat_rows)}; {gen_text}", None,
                           ", ".join(seat_rows)))
    else:
        out.append(_signal(seats, "missing", "no seat-limit series (current_limit_seats, "
                           "nominal_limit_seats, request_concurrency_limit)",
                           "the API server's flowcontrol metrics are on by default: check that "
                           "no metric_relabel_configs rule of the API server's scrape job "
                           "drops apiserver_flowcontrol_*", ", ".join(sorted(seat_names))))
    att = SIGNAL_BY_ID["apf_attribution"]
    if r.flow_schema and any(a.flow_schema == r.flow_schema for a in rows):
        out.append(_signal(att, "ok", f"FlowSchema {r.flow_schema!r} has series of its own",
                           None, "flow_schema"))
    elif r.flow_schema:
        out.append(_signal(att, "missing", f"no series with flow_schema={r.flow_schema!r} "
                           f"(schemas in {level!r}: {_listed(facts.flow_schemas) or 'none'}): "
                           "not created, or the controller's requests match another schema",
                           _flow_schema_fix(controller), "flow_schema"))
    else:
        shared = (f" (schemas in {level!r}: {_listed(facts.flow_schemas)})"
                  if facts.flow_schemas else "")
        out.append(_signal(att, "missing",
                           "no FlowSchema of the controller's own is configured: by default "
                           f"its requests share {SHARED_FLOW_SCHEMA!r} → {level!r} with every "
                           f"ServiceAccount outside kube-system{shared}",
                           _flow_schema_fix(controller), "flow_schema"))
    hook = SIGNAL_BY_ID["admission_webhooks"]
    hook_name = r.names.get("admission_webhook_duration", "")
    out.append(_signal(hook, "ok", f"{hook_name} present" if facts.admission_webhooks else
                       "no admission webhook was called in the range (the histogram appears "
                       "with the first call): no webhook can be the limit", None, hook_name))
    return out


def _priority_signal(p: _Process, queue_marks: dict[str, dict[str, list[str]]]
                     ) -> SignalReport | None:
    if not p.prio:
        return None
    sig = PRIORITY_SIGNAL
    name = p.ix.name("depth")
    over = sorted(q for q, qp in p.prio.items() if uncapped(qp.distinct, qp.capped))
    capped = sorted(q for q, qp in p.prio.items() if qp.capped)
    fix = ("use a small fixed set of priorities (handler.LowPriority = -100 and 0): "
           "controller-runtime before v0.23 writes one workqueue_depth series per distinct "
           "priority (issue #3396: incrementing, LIFO-style priorities made 810K series and "
           "15 s scrapes); v0.23+ keeps 25 values and folds the rest into "
           f'priority="{CAPPED_PRIORITY}" (PR #3419) — upgrade if you are older.')
    if over:
        for q in over:
            queue_marks[q]["malformed"].append(sig.id)
        counts = ", ".join(f"{q}: {p.prio[q].distinct}" for q in over[:MAX_LISTED])
        return _signal(sig, "malformed", f"more than {PRIORITY_CAP} priority values on {name} "
                       f"({counts}): no cardinality cap (controller-runtime before v0.23)",
                       fix, name)
    if capped:
        for q in capped:
            queue_marks[q]["malformed"].append(sig.id)
        return _signal(sig, "malformed", f'priority="{CAPPED_PRIORITY}" on {name} for '
                       f"{_listed(capped)}: more than {PRIORITY_CAP} distinct priorities were "
                       "used; queuelens's total depth stays right (summed over priority)",
                       fix, name)
    dist = ", ".join(f"{q}: {qp.distinct}" for q, qp in sorted(p.prio.items())[:MAX_LISTED])
    return _signal(sig, "ok", f"priority queue on (distinct priorities — {dist}); depth is "
                   "summed over priority, and the wait and work times are blended across "
                   "priorities (only workqueue_depth carries the label)", None, name)


def _rest_flags(p: _Process) -> dict[str, bool]:
    return {
        "requests_total": p.has("rest_client_requests"),
        "rate_limiter_duration": p.has("rate_limiter_duration"),
        "request_duration": p.has("request_duration"),
        "request_retries": p.has("request_retries"),
    }


def _process_report(ix: _Index, key: tuple[str, ...]) -> ProcessReport:
    p = _Process(ix, key)
    framework, evidence = _framework(p)
    marks: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    signals: list[SignalReport] = []
    for sig in CONTRACT_SIGNALS:
        if framework not in sig.frameworks or sig.scope == "cluster":
            continue
        if sig.scope == "container":
            signals.append(_container_signal(p, sig))
        elif sig.id == "worker_count":
            signals.append(_worker_count(p, sig, framework, marks))
        elif sig.id == "failure_kinds":
            signals.append(_failure_kinds(p, sig, marks))
        elif sig.scope == "queue":
            signals.append(_queue_signal(p, sig, framework, marks))
        else:
            signals.append(_process_signal(p, sig, framework))
    prio = _priority_signal(p, marks)
    if prio is not None:
        signals.append(prio)
    controller = p.queues[0] if p.queues else p.labels.get("job", "controller")
    signals.extend(_cluster_signals(ix, key, controller))
    queues = tuple(
        QueueReport(name=q, missing=tuple(marks[q]["missing"]), empty=tuple(marks[q]["empty"]),
                    malformed=tuple(marks[q]["malformed"]),
                    priorities=p.prio[q].distinct if q in p.prio else None)
        for q in p.queues)
    detected = Detected(
        framework=framework, evidence=tuple(evidence),
        version_hints=tuple(_version_hints(p, framework)),
        priority_queue=bool(p.prio), rest_client_metrics=_rest_flags(p),
        apiserver=_apiserver_facts(ix, key))
    return ProcessReport(labels=p.labels, queues=queues, detected=detected,
                         signals=tuple(signals))


def _fleet_signals(ix: _Index, processes: Sequence[ProcessReport]) -> list[SignalReport]:
    r = ix.r
    window = describe_duration(r.range_s)
    where = f" matching {r.selector}" if r.selector else ""
    sig = ContractSignal("workqueue_series", ("adds",), "process", ALL,
                         "work-queue series of at least one controller", CONTRACT_SIGNALS[0].needs,
                         "nothing can be said about any queue: every page is empty and every "
                         "verdict is missing")
    out: list[SignalReport] = []
    if processes:
        n_queues = sum(len(p.queues) for p in processes)
        out.append(_signal(sig, "ok", f"{len(processes)} process"
                           f"{'es' if len(processes) != 1 else ''} with {n_queues} queue"
                           f"{'s' if n_queues != 1 else ''}{where}", None, "workqueue_*"))
    else:
        notes = [f"no workqueue_* or controller_runtime_* series in {r.source} in the last "
                 f"{window}{where}"]
        rest_only = [p for p, rows in ix.rows.items() if rows]
        if rest_only:
            notes.append(f"{len(rest_only)} process{'es' if len(rest_only) != 1 else ''} "
                         "export rest_client_* without any workqueue_*: client-go programs "
                         "without a named queue, or controllers whose workqueue metrics went "
                         "to another registry (first-call-wins workqueue.SetProvider)")
        if r.scrape_jobs is not None:
            if r.scrape_jobs:
                up = [j.job for j in r.scrape_jobs if j.up]
                down = [j.job for j in r.scrape_jobs if not j.up]
                notes.append(f"Prometheus scrapes {len(r.scrape_jobs)} job"
                             f"{'s' if len(r.scrape_jobs) != 1 else ''}{where}: "
                             f"{_listed(j.job or '(no job label)' for j in r.scrape_jobs)}"
                             + (f" (down: {_listed(down)})" if down else "")
                             + ("; none of them exports workqueue_*" if up else ""))
            else:
                notes.append("Prometheus scrapes no target at all (no up series"
                             f"{where})")
        if r.selector:
            notes.append(f"check the selector {r.selector}: it is applied to every series")
        fix = CONTROLLER_SCRAPE_FIX
        if rest_only:
            fix = _PROVIDER_FIX[CONTROLLER_RUNTIME] + "\n" + fix
        out.append(_signal(sig, "missing", "; ".join(notes), fix, "workqueue_*"))
    out.append(_replica_signal(r))
    api = ContractSignal("apiserver_series", ("apf_dispatched",), "cluster", ALL,
                         "API-server metrics in this Prometheus", ("api_server",),
                         SIGNAL_BY_ID["apiserver_metrics"].cost)
    if r.apiserver:
        facts = _apiserver_facts(ix, None)
        out.append(_signal(api, "ok", f"API-server series present (generation "
                           f"{facts.generation})", None, "apiserver_*"))
    else:
        out.append(_signal(api, "missing", f"no apiserver_flowcontrol_* or apiserver_request_* "
                           f"series in the last {window}", APISERVER_SCRAPE_FIX, "apiserver_*"))
    return out


REPLICA_COST = ("every rate, depth and busy-worker count of those queues reads that many times "
                "the truth: utilization above 100 %, a stable worker count judged unstable, "
                "recommendations sized for a load that does not exist")


def _replica_signal(r: ContractReading) -> SignalReport:
    """Whether each queue's series are stored once per process (issue 23 §3). An adds
    counter counted more than once per queue and process (``Presence.series``) is a copy
    that differs only in a label the reads do not group by — two servers of an HA pair read
    through one endpoint without deduplication, which every ``sum by`` adds up; the replica
    labels' values (:attr:`ContractReading.replicas`) name the label when it is a usual one.
    Copies told apart by the configured :attr:`ContractReading.replica_label` are ok: the
    reads keep one of each."""
    sig = ContractSignal("replica_copies", ("adds",), "process", ALL,
                         "each series stored once (no HA pair read without deduplication)",
                         CONTRACT_SIGNALS[0].needs, REPLICA_COST)
    adds = r.names.get("adds")
    counts = [(p.queue or p.controller, p.series) for p in r.present
              if p.sample == adds and p.series > 1]
    dedupe = r.replica_label
    kept = len(r.replicas.get(dedupe, ())) if dedupe else 0
    copies = max((n for _, n in counts), default=1)
    if dedupe and kept > 1 and copies <= kept:
        told = _listed(f"{dedupe}={v!r}" for v in r.replicas[dedupe])
        return _signal(sig, "ok", f"{kept} replicas ({told}), read once each "
                       f"(profile.replica_label: {dedupe})", None, adds or "workqueue_*")
    if not counts:
        return _signal(sig, "ok", "each queue's series are stored once per process", None,
                       adds or "workqueue_*")
    queues = sorted({q for q, _ in counts if q})
    where = (f"the adds counters of {len(queues)} queue{'s' if len(queues) != 1 else ''} "
             f"({_listed(queues)}) are stored {copies} "
             "times per process")
    split = [(lb, vals) for lb, vals in sorted(r.replicas.items())
             if len(vals) > 1 and lb != dedupe]
    if split:
        label, values = split[0]
        detail = (f"{where}, told apart by {_listed(f'{label}={v!r}' for v in values[:4])}: "
                  "the replicas of a Prometheus HA pair read through one endpoint without "
                  "deduplication")
        fix = (f"set profile.replica_label: {label} in the queuelens config (each series is "
               "then read once, max without that label), or deduplicate at the endpoint "
               f"(Thanos Query --query.replica-label={label}; Mimir's HA tracker)")
    else:
        detail = (f"{where}, told apart by a label queuelens does not group by (an HA pair "
                  "without deduplication, or two scrape jobs of the same target)")
        fix = ("find the label the copies differ in (count by (__name__, <every label>) of "
               "one queue's adds counter) and set profile.replica_label to it, or scrape each "
               "target once")
    return _signal(sig, "malformed", detail, fix, adds or "workqueue_*")


def diagnose(reading: ContractReading) -> DoctorReport:
    """The doctor's report of a reading: per process, what was detected and the status of
    every signal of the contract that applies to it, with what it costs and the fix."""
    ix = _Index(reading)
    processes = tuple(_process_report(ix, key) for key in ix.processes())
    fleet = _fleet_signals(ix, processes)
    summary = _summary(reading, processes)
    twice = [s for s in fleet if s.signal == "replica_copies" and s.status != "ok"]
    if twice:
        summary += f" But {twice[0].detail}: every number of theirs is inflated."
    return DoctorReport(source=reading.source, at=reading.at, range_s=reading.range_s,
                        selector=reading.selector, summary=summary,
                        processes=processes, signals=tuple(fleet), queries=reading.queries,
                        warnings=reading.warnings)


def _summary(reading: ContractReading, processes: Sequence[ProcessReport]) -> str:
    window = describe_duration(reading.range_s)
    if not processes:
        return (f"No workqueue series found in {reading.source} (last {window}): nothing to "
                "diagnose yet — see the fix for what to scrape.")
    by_framework: dict[str, int] = defaultdict(int)
    totals = dict.fromkeys(STATUSES, 0)
    for p in processes:
        by_framework[p.detected.framework] += 1
        for status, n in p.counts().items():
            totals[status] += n
    n_queues = sum(len(p.queues) for p in processes)
    kinds = ", ".join(f"{n} {f}" for f, n in sorted(by_framework.items()))
    bad = ", ".join(f"{totals[s]} {s}" for s in STATUSES[1:] if totals[s])
    return (f"{len(processes)} process{'es' if len(processes) != 1 else ''} ({kinds}) with "
            f"{n_queues} queue{'s' if n_queues != 1 else ''} in {reading.source} (last "
            f"{window}): " + (f"{bad} signals" if bad else "every signal ok") + ".")
