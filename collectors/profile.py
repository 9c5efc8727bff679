"""Every PromQL expression queuelens sends, in one place.

A :class:`Profile` names the metrics (controller-runtime defaults, or the component-base
variant used by kube-controller-manager and other Kubernetes components), the extra label
selector the user wants on every series (``{namespace="x", job="y"}``), worker counts for
queues that have no ``controller_runtime_max_concurrent_reconciles`` gauge, and user-supplied
"external effects" queries. :mod:`collectors.config` builds one from YAML.

Rules the expressions follow (see docs/reference: workqueue-metrics.md §6):

* one expression per signal for *all* queues: ``sum by (name) (...)``, never one per queue;
* counters only through ``rate()`` (it handles counter resets), gauges never through ``rate()``:
  ``workqueue_unfinished_work_seconds`` uses ``deriv()``/``last_over_time()``,
  ``workqueue_longest_running_processor_seconds`` uses ``max_over_time()``;
* ``workqueue_depth`` is summed over ``priority`` (controller-runtime >= 0.21 splits it);
* histograms are fetched as ``sum by (name, le) (rate(..._bucket[w]))`` and the quantiles are
  computed from those bucket rates (``le`` parsed as a float, never string-matched);
* every label value that goes into PromQL passes :func:`escape_label_value` (for ``=``/``!=``)
  or :func:`escape_regex_value` (for ``=~``/``!~``);
* the user's selector reaches each family of series by that family's own labels: a matcher on
  the queue or controller label goes on ``name`` for ``workqueue_*``, on ``controller`` for
  ``controller_runtime_*`` and is left out for the per-process ``rest_client_*``
  (:meth:`Profile._sel`);
* where the recorded series of ``queuelens rules --recording`` exist at a read's own rate
  window, its rates are read from them (:meth:`Profile.read_rates`,
  :meth:`Profile.recording_rules`; found by one presence query,
  :meth:`Profile.recorded_presence_query`; the window rule: :meth:`Profile._recorded_form`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from collectors.errors import ConfigError
from models.frameworks import COMPONENT_BASE, CONTROLLER_RUNTIME
from models.priority import PRIORITY_CAP

PROFILE_NAMES = (CONTROLLER_RUNTIME, COMPONENT_BASE)

# --- escaping -----------------------------------------------------------------------------

_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
# RE2 metacharacters. Escaping any other punctuation would also be legal RE2; these suffice.
_REGEX_META = frozenset("\\.+*?()|[]{}^$")


def escape_label_value(value: str) -> str:
    """A PromQL double-quoted string literal for ``value`` (quotes included).

    Backslash, double quote and newline are escaped, so ``a"b`` becomes ``"a\\"b"`` and can
    never close the string early (``name="x"} or up{a="``-style injection is impossible).
    Use it with the ``=`` and ``!=`` matchers.
    """
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def regex_literal(value: str) -> str:
    """``value`` as an RE2 pattern that matches exactly that string (metacharacters escaped)."""
    return "".join("\\" + ch if ch in _REGEX_META else ch for ch in value)


def escape_regex_value(value: str) -> str:
    """A PromQL string literal for an ``=~`` matcher that matches exactly ``value``.

    Regex metacharacters are escaped first (``a.b`` must not match ``aXb``), then the result is
    quoted like :func:`escape_label_value`.
    """
    return escape_label_value(regex_literal(value))


def check_label_name(name: str) -> str:
    if not _LABEL_NAME.match(name):
        raise ConfigError(
            f"{name!r} is not a valid Prometheus label name (letters, digits, underscore; "
            "not starting with a digit)"
        )
    return name


def check_metric_name(name: str, what: str = "metric name") -> str:
    if not _METRIC_NAME.match(name):
        raise ConfigError(f"{what} {name!r} is not a valid Prometheus metric name")
    return name


def format_duration(seconds: float) -> str:
    """Seconds -> a PromQL duration (``300s``, ``1500ms``). Must be > 0 and finite."""
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError(f"a PromQL window must be a positive number of seconds, got {seconds!r}")
    ms = round(seconds * 1000)
    if ms <= 0:
        raise ConfigError(f"a PromQL window must be at least 1 ms, got {seconds!r} s")
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def prometheus_duration(seconds: float) -> str:
    """Seconds -> the shortest Prometheus duration string: 300 -> '5m', 5400 -> '1h30m',
    1.5 -> '1500ms'. Used in recorded series' names (``rate5m``) and rules' ``for:``."""
    ms = round(seconds * 1000)
    if ms <= 0:
        raise ValueError(f"a rule duration must be at least 1 ms, got {seconds!r} s")
    out = []
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000),
                       ("ms", 1)):
        count, ms = divmod(ms, size)
        if count:
            out.append(f"{count}{unit}")
    return "".join(out)


IDLE_DEPTH_RESOLUTION_S = 15.0
IDLE_DEPTH_WINDOW_S = 1200.0
"""``depth_while_idle`` is sampled every 15 s over at least 20 minutes (81 points): every
sample of a 15 s target, each sample of a 30 s target twice. A saturated key is dirty at
20–70 % of the instants, a key by chance at about one scrape in 500; 20 minutes hold enough
samples (41 at 30 s) to tell the two apart — 10 minutes at 30 s missed a key dirty at 30 %
one time in eight."""

SCRAPE_LOOKBACK_S = 3600.0
SCRAPE_SPAN_S = 600.0
"""Without a configured scrape interval, each queue's is learnt from its densest 10 minutes
within the hour before the evaluation time (a range read: before its end, the same figure for
every batch): a queue that restarted or appeared half an hour ago, or had a gap, still shows
its interval in its best 10 minutes; a changed interval is followed within the hour."""
SCRAPE_INTERVALS_S: tuple[float, ...] = (
    1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 240, 300)
"""The intervals people configure. A learnt interval is snapped down to the largest of
these within 10 % above it: a 15 s target that missed one scrape in its best 10 minutes gives
15.4 s, which is 15 s with a miss, not a 15.4 s interval."""


def learnt_scrape_interval_s(samples: float | None, span_s: float = SCRAPE_SPAN_S
                             ) -> float | None:
    """The scrape interval of a series with ``samples`` samples in ``span_s``, snapped to
    :data:`SCRAPE_INTERVALS_S`; None with fewer than 2 samples (new or sparse). At most the
    largest listed interval: a sparse series must not widen every window of a read."""
    if samples is None or not math.isfinite(samples) or samples < 2:
        return None
    estimate = span_s / samples
    fits = [s for s in SCRAPE_INTERVALS_S if s <= 1.1 * estimate]
    return float(fits[-1]) if fits else float(SCRAPE_INTERVALS_S[0])


def rate_window_s(step_s: float, scrape_interval_s: float) -> float:
    """The ``rate()`` window of each point of a range query (Grafana's ``$__rate_interval``):
    max(step + scrape interval, 4 × scrape interval), so every window holds enough samples."""
    return max(step_s + scrape_interval_s, 4 * scrape_interval_s)


def code_class(code: str) -> str:
    """An HTTP status code (``rest_client_requests_total{code}``) -> the class used in
    ``api_calls_by_class_per_s``: 2xx, 4xx, 409, 429, 5xx or ``other``.

    409 (conflict) and 429 (throttled) are their own classes and are *not* counted in 4xx, so
    the classes add up to the total."""
    if code in ("409", "429"):
        return code
    if len(code) == 3 and code.isdigit() and code[0] in "2345":
        return code[0] + "xx"
    return "other"


PRIORITY_SERIES_MAX = PRIORITY_CAP
"""At most this many ``priority`` values of one queue are read (the largest depths): the
cap controller-runtime keeps (:mod:`models.priority`); ``priority_series`` counts them all
so that a queue with more is named."""

_CONTROLLER_RUNTIME_ONLY = ("reconcile_panics", "reconcile_timeouts", "terminal_errors",
                            "served_webhook")
"""Signals beyond the queue read from controller_runtime_* (not by the component-base
profile)."""

CONTAINER_LABELS: tuple[str, str, str] = ("namespace", "pod", "container")
"""How kube-state-metrics (``kube_pod_container_*``) and the kubelet's cAdvisor endpoint
(``container_cpu_*``) name a container's namespace, pod and container."""
NOT_A_CONTAINER = ("", "POD")
"""``container`` values that are no container of the pod's spec: cAdvisor's pod-level cgroup
(``container=""``) and the pause container (``container="POD"`` under dockershim)."""

CPU_PROCESS_SIGNALS = ("cpu_used_cores", "cpu_gomaxprocs", "cpu_sched_s_per_s",
                       "cpu_sched_count_per_s", "cpu_sched_buckets")
"""The per-process CPU queries (process_* and go_*, keyed by the process labels)."""
CPU_CONTAINER_SIGNALS = ("cpu_pod_containers", "cpu_limit_cores", "cpu_cfs_throttled_per_s",
                         "cpu_cfs_periods_per_s")
"""The per-container CPU queries (kube-state-metrics and cAdvisor, keyed by
:data:`CONTAINER_LABELS` and the cluster labels)."""

REPLICA_LABELS: tuple[str, ...] = ("replica", "prometheus_replica", "__replica__")
"""The labels an HA pair's copies of a series differ in: the external label of Thanos'
examples and of the Prometheus Operator (``replica``, ``prometheus_replica``) and Cortex's /
Mimir's HA tracker (``__replica__``, stored when its deduplication is off). A snapshot and
the doctor look for these (and ``profile.replica_label``) in one query
(:meth:`Profile.replica_query`)."""

_RANGE_CALL = re.compile(
    r"\b(?:rate|irate|increase|deriv|changes|resets|(?:avg|min|max|sum|count|last)_over_time)"
    r"\([a-zA-Z_:][a-zA-Z0-9_:]*"
    r'(?:\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?\[[0-9a-z]+\]\)')
"""A range function applied directly to one series selector (``rate(m{...}[5m])``): what
:meth:`Profile.deduplicated` wraps. Label values inside the braces are matched as whole
double-quoted strings (:func:`escape_label_value` writes every one so), so a ``}`` or ``]``
in a queue's name cannot end the selector early."""

WRITE_VERBS = "POST|PUT|PATCH|DELETE|APPLY"
"""The mutating verbs: the REST client's ``method`` and the API server's ``verb`` (APPLY is
server-side apply in ``apiserver_request_*``); admission webhooks run on these."""


# --- label selectors ----------------------------------------------------------------------

MATCH_OPS = ("=~", "!~", "!=", "=")


@dataclass(frozen=True)
class Matcher:
    label: str
    op: str
    value: str

    def render(self) -> str:
        return f"{self.label}{self.op}{escape_label_value(self.value)}"


_ESCAPES = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\\": "\\", '"': '"', "'": "'",
}


def _read_string(text: str, pos: int, original: str) -> tuple[str, int]:
    quote = text[pos]
    pos += 1
    out: list[str] = []
    while pos < len(text):
        ch = text[pos]
        if ch == quote:
            return "".join(out), pos + 1
        if ch == "\\" and quote != "`":
            if pos + 1 >= len(text):
                break
            nxt = text[pos + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                pos += 2
                continue
            widths = {"x": 2, "u": 4, "U": 8}
            if nxt in widths:
                digits = text[pos + 2 : pos + 2 + widths[nxt]]
                hexdigits = "0123456789abcdefABCDEF"
                if len(digits) == widths[nxt] and all(c in hexdigits for c in digits):
                    out.append(chr(int(digits, 16)))
                    pos += 2 + widths[nxt]
                    continue
            raise ConfigError(
                f"invalid escape \\{nxt} in label selector {original!r} "
                "(inside \"...\" write a regex backslash as \\\\)"
            )
        if ch == "\n" and quote != "`":
            break
        out.append(ch)
        pos += 1
    raise ConfigError(f"unterminated string in label selector {original!r}")


def parse_selector(text: str) -> tuple[Matcher, ...]:
    """Parse ``{label="v", other=~"re.*"}`` into matchers; anything else is a ConfigError.

    Accepts the PromQL matcher syntax (``=``, ``!=``, ``=~``, ``!~``; double, single or back
    quotes; a trailing comma). Rejects metric names, ``__name__``, functions, and anything after
    the closing brace, so a selector can never smuggle extra PromQL into a query.
    """
    original = text
    text = text.strip()
    if not text:
        return ()
    if not (text.startswith("{") and text.endswith("}")):
        raise ConfigError(
            f"label selector {original!r} must look like {{label=\"value\", ...}} "
            "(curly braces around label matchers, no metric name)"
        )
    pos, end = 1, len(text) - 1
    matchers: list[Matcher] = []
    while True:
        while pos < end and text[pos].isspace():
            pos += 1
        if pos >= end:
            break
        m = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*").match(text, pos)
        if not m:
            raise ConfigError(
                f"label selector {original!r}: expected a label name at position {pos}"
            )
        label = m.group(0)
        if label == "__name__":
            raise ConfigError(
                f"label selector {original!r}: __name__ is not allowed (queuelens picks the "
                "metric names; override them in the profile's metrics section)"
            )
        pos = m.end()
        while pos < end and text[pos].isspace():
            pos += 1
        op = next((o for o in MATCH_OPS if text.startswith(o, pos)), None)
        if op is None:
            raise ConfigError(
                f"label selector {original!r}: expected one of = != =~ !~ after {label!r}"
            )
        pos += len(op)
        while pos < end and text[pos].isspace():
            pos += 1
        if pos >= end or text[pos] not in "\"'`":
            raise ConfigError(
                f"label selector {original!r}: the value for {label!r} must be a quoted string"
            )
        value, pos = _read_string(text[: end], pos, original)
        if op in ("=~", "!~"):
            try:
                re.compile(value)
            except re.error as exc:
                raise ConfigError(
                    f"label selector {original!r}: invalid regular expression for {label!r}: {exc}"
                ) from None
        matchers.append(Matcher(label, op, value))
        while pos < end and text[pos].isspace():
            pos += 1
        if pos < end:
            if text[pos] != ",":
                raise ConfigError(
                    f"label selector {original!r}: expected ',' or '}}' at position {pos}"
                )
            pos += 1
    return tuple(matchers)


# --- the profile --------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricNames:
    """Metric names; histograms are given by their base name (``_bucket/_sum/_count`` added)."""

    depth: str = "workqueue_depth"
    adds: str = "workqueue_adds_total"
    retries: str = "workqueue_retries_total"
    queue_duration: str = "workqueue_queue_duration_seconds"
    work_duration: str = "workqueue_work_duration_seconds"
    unfinished_work: str = "workqueue_unfinished_work_seconds"
    longest_running: str = "workqueue_longest_running_processor_seconds"
    reconcile_total: str = "controller_runtime_reconcile_total"
    reconcile_errors: str = "controller_runtime_reconcile_errors_total"
    max_concurrent_reconciles: str = "controller_runtime_max_concurrent_reconciles"
    active_workers: str = "controller_runtime_active_workers"
    rest_client_requests: str = "rest_client_requests_total"
    rate_limiter_duration: str = "rest_client_rate_limiter_duration_seconds"
    # controller-runtime: failures that are not plain errors, and the manager's own webhooks
    reconcile_panics: str = "controller_runtime_reconcile_panics_total"
    reconcile_timeouts: str = "controller_runtime_reconcile_timeouts_total"
    terminal_reconcile_errors: str = "controller_runtime_terminal_reconcile_errors_total"
    webhook_latency: str = "controller_runtime_webhook_latency_seconds"
    webhook_requests: str = "controller_runtime_webhook_requests_total"
    webhook_in_flight: str = "controller_runtime_webhook_requests_in_flight"
    # client-go REST client (opt-in in controller-runtime: metrics.RegisterRESTClientMetrics)
    request_duration: str = "rest_client_request_duration_seconds"
    request_retries: str = "rest_client_request_retries_total"
    # the API server, where the same Prometheus scrapes it (apiserver flowcontrol/metrics)
    apf_rejected: str = "apiserver_flowcontrol_rejected_requests_total"
    apf_dispatched: str = "apiserver_flowcontrol_dispatched_requests_total"
    apf_wait: str = "apiserver_flowcontrol_request_wait_duration_seconds"
    apf_inqueue: str = "apiserver_flowcontrol_current_inqueue_requests"
    apf_executing_seats: str = "apiserver_flowcontrol_current_executing_seats"
    apf_nominal_limit_seats: str = "apiserver_flowcontrol_nominal_limit_seats"
    apf_current_limit_seats: str = "apiserver_flowcontrol_current_limit_seats"
    apf_concurrency_limit: str = "apiserver_flowcontrol_request_concurrency_limit"
    """Removed in Kubernetes 1.37 (hidden since 1.31): the fallback for the seat limit."""
    apf_concurrency_in_use: str = "apiserver_flowcontrol_request_concurrency_in_use"
    """Removed in Kubernetes 1.37: the fallback for the seats in use."""
    apiserver_request_duration: str = "apiserver_request_duration_seconds"
    apiserver_request_sli_duration: str = "apiserver_request_sli_duration_seconds"
    admission_webhook_duration: str = "apiserver_admission_webhook_admission_duration_seconds"
    # the process's CPU: client_golang's process and Go collectors (controller-runtime
    # registers both, the Go collector with every runtime metric)
    process_cpu: str = "process_cpu_seconds_total"
    gomaxprocs: str = "go_sched_gomaxprocs_threads"
    sched_latency: str = "go_sched_latencies_seconds"
    """Time goroutines spent runnable before running (runtime/metrics /sched/latencies)."""
    # the controller's container, where the same Prometheus scrapes kube-state-metrics and
    # the kubelet's cAdvisor endpoint (series by namespace/pod/container, other jobs)
    container_info: str = "kube_pod_container_info"
    container_cpu_limit: str = "kube_pod_container_resource_limits"
    cfs_periods: str = "container_cpu_cfs_periods_total"
    cfs_throttled_periods: str = "container_cpu_cfs_throttled_periods_total"


METRIC_KEYS = tuple(MetricNames.__dataclass_fields__)


@dataclass(frozen=True)
class QueueGroup:
    """A set of queues named explicitly and/or by an (anchored) regular expression."""

    names: tuple[str, ...] = ()
    pattern: str | None = None

    def matches(self, queue: str) -> bool:
        if queue in self.names:
            return True
        return self.pattern is not None and re.fullmatch(self.pattern, queue) is not None


@dataclass(frozen=True)
class ExternalEffects:
    """User PromQL for external effects (e.g. cloud API writes) of a group of queues.

    ``$window`` in the query is replaced by the rate window (``300s``). If the result carries the
    queue label, each queue gets its own series; a single unlabelled result is shared by every
    queue of the group.
    """

    group: QueueGroup
    query: str

    def render(self, window_s: float) -> str:
        return self.query.replace("$window", format_duration(window_s))


RECORDED_AT_LABEL = "queuelens_at"
"""Marks the part of a range read's presence answer taken at the range's start."""
RECORDED_AGGREGATE_BY: tuple[str, ...] = ("cluster", "namespace", "job", "name")
"""The labels the recorded series keep unless the config says otherwise: the value of
:data:`models.settings.DEFAULT_AGGREGATE_BY` (not imported here: that module loads the
advisor, and every command imports this one; a test keeps the two equal)."""


@dataclass(frozen=True)
class RecordedRate:
    """One rate ``queuelens rules --recording`` records for the reads:
    ``sum by (<level labels>, <extra>) (rate(<sample>{<selector>}[<window>]))``, named
    ``<level>:<sample without _total>:rate<window>`` (:meth:`Profile.recorded_name`).

    ``family``: whose labels the level keeps — ``queue`` (the aggregation labels and the
    queue label), ``controller`` (the same with the controller label for the queue label:
    ``controller_runtime_*`` carry the queue's name there) or ``process`` (the aggregation
    labels but the queue's, and the process labels: ``rest_client_*`` are per process)."""

    family: str
    sample: str
    extra: tuple[str, ...] = ()

    @property
    def metric(self) -> str:
        return self.sample.removesuffix("_total")


@dataclass(frozen=True)
class SignalQuery:
    """One PromQL expression and how its result is keyed."""

    signal: str
    promql: str
    key: str
    """'queue' (by the queue label), 'controller', 'queue_le', 'controller_result',
    'process' (by job/instance), 'process_code', 'topology'."""
    metric: str
    """The metric it reads (for 'missing' messages)."""
    requires: tuple[str, ...] = ()
    """Sample names any one of which must exist for the query to answer anything; empty:
    always sent. A snapshot asks which exist in one query first (:meth:`Profile.presence_query`)
    and sends only the queries that can answer — most fleets have no API-server series or
    opt-in REST-client metrics in their Prometheus."""


@dataclass(frozen=True)
class Profile:
    name: str = CONTROLLER_RUNTIME
    metrics: MetricNames = field(default_factory=MetricNames)
    selector: tuple[Matcher, ...] = ()
    queue_label: str = "name"
    controller_label: str = "controller"
    process_labels: tuple[str, ...] = ("job", "instance", "pod")
    workers: Mapping[str, float] = field(default_factory=dict)
    poll_periods: Mapping[str, float] = field(default_factory=dict)
    """Queue → the ``Result{RequeueAfter}`` period its controller asks for, seconds (config
    ``profile.poll_periods``): the advisor checks the polls against it
    (:mod:`models.bindings.polling`)."""
    worker_groups: tuple[tuple[QueueGroup, float], ...] = ()
    external_effects: tuple[ExternalEffects, ...] = ()
    scrape_interval_s: float | None = None
    """If set, a window holds window ÷ this many samples and rate windows are sized from it;
    if not, each queue's interval is learnt from its own samples
    (:func:`learnt_scrape_interval_s`)."""
    cluster_labels: tuple[str, ...] = ()
    """Labels that a controller's series share with its cluster's API-server series
    (``cluster`` behind Thanos/Mimir); none: every API-server series is the one cluster's."""
    priority_level: str = "workload-low"
    """The API Priority and Fairness level the controllers' requests land in. Kubernetes'
    default FlowSchema ``service-accounts`` maps every ServiceAccount outside kube-system to
    ``workload-low`` (apiserver ``pkg/apis/flowcontrol/bootstrap/default.go``); a controller
    with its own FlowSchema sets its level here."""
    flow_schema: str | None = None
    """With a dedicated FlowSchema: only its series of the level are read (the level's other
    flows are other clients)."""
    container_labels: tuple[str, str, str] = CONTAINER_LABELS
    """The labels of the controller's own series that name its namespace, pod and container
    (the Prometheus Operator's and the kubernetes_sd examples' names): the join of its
    container's kube-state-metrics and cAdvisor series (:data:`CONTAINER_LABELS` there)."""
    recorded_by: tuple[str, ...] = RECORDED_AGGREGATE_BY
    """The labels the recorded series of ``queuelens rules`` keep (config
    ``analysis.aggregate_by``): the reads look for the recorded series by these names."""
    use_recorded: bool = True
    """Read the recorded series of ``queuelens rules --recording`` instead of the raw
    counters where they are present at the read's rate window (config
    ``profile.recorded_rules: false`` turns it off)."""
    replica_label: str | None = None
    """The label that tells the replicas of a Prometheus HA pair apart (config
    ``profile.replica_label``): every series is read once, ``max without (<label>)`` of
    its copies (:meth:`deduplicated`); None: series are read as stored, and a pair is only
    detected (:meth:`replica_query`)."""

    @property
    def has_controller_metrics(self) -> bool:
        return self.name == CONTROLLER_RUNTIME

    def with_selector(self, extra: Sequence[Matcher]) -> Profile:
        return replace(self, selector=(*self.selector, *extra))

    def replica_labels(self) -> tuple[str, ...]:
        """The labels :meth:`replica_query` looks at: the configured one first, then
        :data:`REPLICA_LABELS`."""
        return _unique((*((self.replica_label,) if self.replica_label else ()),
                        *REPLICA_LABELS))

    def replica_query(self, window_s: float) -> str:
        """Which replica labels the adds counters carry, and with which values: one answer
        row per combination of their values (an HA pair: two rows, ``replica="a"`` and
        ``"b"``; no such label: one row without labels) — a few rows, whatever the size of
        the fleet. Never deduplicated: it is how a pair is seen."""
        by = ", ".join(self.replica_labels())
        return (f"count by ({by}) (last_over_time({self.metrics.adds}{self._sel()}"
                f"[{format_duration(window_s)}]))")

    def deduplicated(self, promql: str) -> str:
        """``promql`` with every range function over a series selector read once per series
        of an HA pair: ``max without (<replica_label>) (rate(m{...}[w]))`` — the copies of
        one series are the same scrapes of the same target by two servers, so their rates
        and gauges agree up to the scrape timing, and the larger is kept (a replica that
        missed scrapes reads low, never high; Thanos' deduplication likewise keeps one
        copy, not their sum). Unchanged without :attr:`replica_label`."""
        label = self.replica_label
        if not label:
            return promql
        return _RANGE_CALL.sub(lambda m: f"max without ({label}) ({m.group(0)})", promql)

    def _one(self, selector: str) -> str:
        """An instant series selector read once per series of an HA pair (as
        :meth:`deduplicated` reads a range function)."""
        return f"max without ({self.replica_label}) ({selector})" if self.replica_label \
            else selector

    def poll_period(self, queue: str) -> float | None:
        """The RequeueAfter period the queue's controller asks for (``poll_periods``), in
        seconds; None when not configured (no metric carries it)."""
        return self.poll_periods.get(queue)

    def configured_workers(self, queue: str) -> float | None:
        if queue in self.workers:
            return self.workers[queue]
        for group, count in self.worker_groups:
            if group.matches(queue):
                return count
        return None

    # -- selectors --

    def _sel(self, extra: Sequence[Matcher] = (), family: str = "queue") -> str:
        """The selector for one family of series, with ``extra`` matchers.

        A matcher of the user's selector on the queue label or on the controller label names
        a queue, and each family carries that name in its own label: ``workqueue_*`` in the
        queue label (``name``), ``controller_runtime_*`` in the controller label (their series
        have no ``name``), and ``rest_client_*`` in neither (one series per process). So such
        a matcher is put on the family's own label — ``family='queue'`` / ``'controller'`` —
        and left out for ``'process'`` (the topology query, which reads the queue label,
        restricts those to the processes running the selected queues). Applied as written,
        ``{name="x"}`` emptied the worker-count, error, result and API answers
        (issue 12). Any other matcher (``namespace``, ``job``…) applies to every family."""
        ids = (self.queue_label, self.controller_label)
        target = {"queue": self.queue_label, "controller": self.controller_label}.get(family)
        own: list[Matcher] = []
        for m in self.selector:
            if family == "cluster":
                # The API server's series carry none of the controller's labels (namespace,
                # job, pod…): only a matcher on a cluster label applies to them.
                if m.label in self.cluster_labels:
                    own.append(m)
            elif m.label not in ids:
                own.append(m)
            elif target is not None:
                own.append(Matcher(target, m.op, m.value))
        parts = [m.render() for m in (*own, *extra)]
        return "{" + ", ".join(parts) + "}" if parts else ""

    def process_filter(self, processes: Iterable[Mapping[str, str]]
                       ) -> tuple[Matcher, ...] | None:
        """Matchers that keep the series of these processes (label sets of the topology
        answer): ``label=~"v1|v2|…"`` per process label, with ``""`` among the values when
        a process lacks that label (so its series still match). A superset when processes
        differ in several labels (the matchers are per label); extra series belong to
        processes of no queue asked for and are not attributed. None: no process at all
        (nothing to read)."""
        values: dict[str, set[str]] = {lb: set() for lb in self.process_labels}
        seen = False
        for labels in processes:
            seen = True
            for lb in self.process_labels:
                values[lb].add(labels.get(lb, ""))
        if not seen:
            return None
        return tuple(Matcher(lb, "=~", "|".join(regex_literal(v) for v in sorted(vs)))
                     for lb, vs in values.items() if vs != {""})

    def _queue_filter(self, label: str, queues: Sequence[str] | None) -> tuple[Matcher, ...]:
        if not queues:
            return ()
        raw = "|".join(regex_literal(q) for q in sorted(set(queues)))
        return (Matcher(label, "=~", raw),)

    def queries(
        self, window_s: float, queues: Sequence[str] | None = None,
        processes: Sequence[Matcher] = (), recorded: Collection[str] = (),
    ) -> list[SignalQuery]:
        """All signal queries for a rate window; ``queues`` restricts to those queue names,
        ``processes`` (matchers on the process labels, :meth:`process_filter`) the
        per-process ones to the processes running them; ``recorded``: the recorded series
        names present (the answer to :meth:`recorded_presence_query`) — a rate whose
        recorded series exist at this window is read from them (:meth:`_recorded_form`)."""
        w = format_duration(window_s)
        m = self.metrics
        q, c = self.queue_label, self.controller_label
        qsel = self._sel(self._queue_filter(q, queues))
        csel = self._sel(self._queue_filter(c, queues), "controller")
        psel = self._sel(processes, family="process")
        proc = ", ".join(self.process_labels)
        out = [
            SignalQuery("arrival_rate_per_s", f"sum by ({q}) (rate({m.adds}{qsel}[{w}]))",
                        "queue", m.adds),
            SignalQuery("throughput_per_s",
                        f"sum by ({q}) (rate({m.work_duration}_count{qsel}[{w}]))",
                        "queue", m.work_duration + "_count"),
            SignalQuery("busy_workers", self._busy_workers(w, qsel),
                        "queue", m.work_duration + "_sum"),
            SignalQuery("queue_wait_mean_s",
                        f"sum by ({q}) (rate({m.queue_duration}_sum{qsel}[{w}])) / "
                        f"sum by ({q}) (rate({m.queue_duration}_count{qsel}[{w}]))",
                        "queue", m.queue_duration),
            SignalQuery("depth_mean", f"sum by ({q}) (avg_over_time({m.depth}{qsel}[{w}]))",
                        "queue", m.depth),
            SignalQuery("depth_current", f"sum by ({q}) (last_over_time({m.depth}{qsel}[{w}]))",
                        "queue", m.depth),
            SignalQuery("queue_wait_buckets",
                        f"sum by ({q}, le) (rate({m.queue_duration}_bucket{qsel}[{w}]))",
                        "queue_le", m.queue_duration + "_bucket"),
            SignalQuery("work_buckets",
                        f"sum by ({q}, le) (rate({m.work_duration}_bucket{qsel}[{w}]))",
                        "queue_le", m.work_duration + "_bucket"),
            SignalQuery("retries_per_s", f"sum by ({q}) (rate({m.retries}{qsel}[{w}]))",
                        "queue", m.retries),
            SignalQuery("unfinished_work_s",
                        f"sum by ({q}) (last_over_time({m.unfinished_work}{qsel}[{w}]))",
                        "queue", m.unfinished_work),
            SignalQuery("unfinished_work_growth",
                        f"sum by ({q}) (deriv({m.unfinished_work}{qsel}[{w}]))",
                        "queue", m.unfinished_work),
            SignalQuery("longest_running_s",
                        f"max by ({q}) (max_over_time({m.longest_running}{qsel}[{w}]))",
                        "queue", m.longest_running),
            SignalQuery("samples_in_window",
                        f"max by ({q}) (count_over_time({m.adds}{qsel}[{w}]))",
                        "queue", m.adds),
            SignalQuery("api_calls",
                        f"sum by ({proc}, code) (rate({m.rest_client_requests}{psel}[{w}]))",
                        "process_code", m.rest_client_requests),
            SignalQuery("throttle_s_per_s",
                        f"sum by ({proc}) (rate({m.rate_limiter_duration}_sum{psel}[{w}]))",
                        "process", m.rate_limiter_duration + "_sum"),
        ]
        out += self._beyond_queries(w, self._queue_filter(q, queues), csel, psel, proc,
                                    processes)
        out += self._cpu_queries(w, qsel, psel, proc)
        if self.has_controller_metrics:
            out += [
                SignalQuery("workers",
                            f"max by ({c}) (last_over_time({m.max_concurrent_reconciles}{csel}"
                            f"[{w}]))", "controller", m.max_concurrent_reconciles),
                SignalQuery("errors_per_s",
                            f"sum by ({c}) (rate({m.reconcile_errors}{csel}[{w}]))",
                            "controller", m.reconcile_errors),
                SignalQuery("depth_while_idle",
                            self._depth_while_idle(window_s, qsel, csel),
                            "queue", m.active_workers),
                SignalQuery("reconcile_results_per_s",
                            f"sum by ({c}, result) (rate({m.reconcile_total}{csel}[{w}]))",
                            "controller_result", m.reconcile_total),
            ]
        if recorded and self.recorded_unusable() is None:
            sels = {"queue": (q, qsel), "controller": (c, csel), "process": (proc, psel)}
            out = [self._recorded_form(sq, window_s, sels, recorded) for sq in out]
        return [replace(sq, promql=self.deduplicated(sq.promql)) for sq in out]

    # -- recorded series (``queuelens rules --recording``) --

    def recorded_levels(self) -> dict[str, tuple[str, ...]]:
        """family -> the labels its recorded series keep (:class:`RecordedRate`)."""
        ids = (self.queue_label, self.controller_label)
        queue = _unique((*self.recorded_by, self.queue_label))
        return {
            "queue": queue,
            "controller": _unique(self.controller_label if lb == self.queue_label else lb
                                  for lb in queue),
            "process": _unique((*(lb for lb in queue if lb not in ids), *self.process_labels)),
        }

    def read_rates(self) -> dict[str, tuple[RecordedRate, ...]]:
        """signal -> the recorded rates its read is made of: every ``rate()`` of a counter
        or of histogram buckets that the range read sends (the mean wait is the ratio of
        two). Gauges (depth, unfinished work, longest running) and the sample count of the
        gap check are read raw: one sample per series and step is what they cost anyway."""
        m = self.metrics
        out = {
            "arrival_rate_per_s": (RecordedRate("queue", m.adds),),
            "throughput_per_s": (RecordedRate("queue", m.work_duration + "_count"),),
            "busy_workers": (RecordedRate("queue", m.work_duration + "_sum"),),
            "queue_wait_mean_s": (RecordedRate("queue", m.queue_duration + "_sum"),
                                  RecordedRate("queue", m.queue_duration + "_count")),
            "retries_per_s": (RecordedRate("queue", m.retries),),
            "queue_wait_buckets": (RecordedRate("queue", m.queue_duration + "_bucket", ("le",)),),
            "work_buckets": (RecordedRate("queue", m.work_duration + "_bucket", ("le",)),),
            "api_calls": (RecordedRate("process", m.rest_client_requests, ("code",)),),
            "throttle_s_per_s": (RecordedRate("process", m.rate_limiter_duration + "_sum"),),
        }
        if self.has_controller_metrics:
            out["errors_per_s"] = (RecordedRate("controller", m.reconcile_errors),)
            out["reconcile_results_per_s"] = (
                RecordedRate("controller", m.reconcile_total, ("result",)),)
        return out

    def recorded_name(self, rate: RecordedRate, window_s: float) -> str:
        """``cluster_namespace_job_name:workqueue_adds:rate1m15s``: the level (the labels
        kept, joined by ``_``), the sample without ``_total``, ``rate`` and the window."""
        level = "_".join(self.recorded_levels()[rate.family])
        return check_metric_name(f"{level}:{rate.metric}:rate{prometheus_duration(window_s)}",
                                 "recorded series name")

    def recording_rules(self, windows_s: Iterable[float]) -> list[tuple[str, str]]:
        """(record, expr) of every recorded rate at each window, each name once: the
        profile's selector applied as the raw read applies it (:meth:`_sel`)."""
        levels = self.recorded_levels()
        out: dict[str, str] = {}
        for window_s in windows_s:
            w = format_duration(window_s)
            for rates in self.read_rates().values():
                for r in rates:
                    by = ", ".join(_unique((*levels[r.family], *r.extra)))
                    out.setdefault(self.recorded_name(r, window_s), self.deduplicated(
                        f"sum by ({by}) (rate({r.sample}{self._sel(family=r.family)}[{w}]))"))
        return list(out.items())

    def recorded_unusable(self) -> str | None:
        """Why the recorded series cannot stand in for the raw reads, None when they can:
        turned off, or a matcher of the selector on a label they do not keep (the read
        applies the selector to them as to the raw series; a label summed away matches
        nothing)."""
        if not self.use_recorded:
            return "recorded series turned off (profile.recorded_rules: false)"
        kept = {*self.recorded_by, self.queue_label, self.controller_label}
        lost = sorted({m.label for m in self.selector} - kept)
        if lost:
            return (f"the selector matches on {', '.join(lost)}, which the recorded series do "
                    "not keep (analysis.aggregate_by)")
        return None

    def recorded_presence_regex(self) -> str | None:
        """An RE2 pattern of every recorded rate's name at any window (``…:rate`` and a
        duration), None when the recorded series cannot be used (:meth:`recorded_unusable`)."""
        if self.recorded_unusable() is not None:
            return None
        levels = self.recorded_levels()
        stems = sorted({f"{'_'.join(levels[r.family])}:{r.metric}:rate"
                        for rates in self.read_rates().values() for r in rates})
        return "(?:" + "|".join(regex_literal(s) for s in stems) + ")[0-9dhms]+"

    def recorded_presence_query(self, since: float | None = None) -> str | None:
        """Which recorded series names exist, at any window (one answer keyed by
        ``__name__``); None when they cannot be used. ``since`` (the start of a range read):
        also which of them, and whether the adds counter, had a series then — marked
        ``queuelens_at="start"`` — for :meth:`recorded_found`: rules loaded an hour ago must
        not stand in for a 2 h history the raw counters have."""
        regex = self.recorded_presence_regex()
        if regex is None:
            return None
        names = f"count by (__name__) ({{__name__=~{escape_label_value(regex)}}})"
        if since is None:
            return names
        if not math.isfinite(since):
            raise ConfigError(f"a presence time must be finite, got {since!r}")
        then = escape_label_value(f"{regex}|{regex_literal(self.metrics.adds)}")
        return (f'label_replace(count by (__name__) ({{__name__=~{then}}} @ {since:.3f}), '
                f'"{RECORDED_AT_LABEL}", "start", "", "") or {names}')

    def recorded_found(self, rows: Iterable[Mapping[str, str]]) -> set[str]:
        """The recorded names a range read may use, from the label sets of its
        :meth:`recorded_presence_query` answer: present at its end, and at its start too
        unless the raw adds counter was not there either (a range that begins before the
        data loses nothing)."""
        end: set[str] = set()
        start: set[str] = set()
        for labels in rows:
            (start if labels.get(RECORDED_AT_LABEL) else end).add(labels.get("__name__", ""))
        if self.metrics.adds not in start:
            return end
        return end & start

    def recorded_windows(self, present: Iterable[str]) -> dict[str, int]:
        """window (as the names carry it, ``1m15s``) -> how many of the recorded rates'
        names are present at it, for the names of a presence answer."""
        regex = self.recorded_presence_regex()
        if regex is None:
            return {}
        pattern = re.compile(regex + r"\Z")
        out: Counter[str] = Counter()
        for name in present:
            if pattern.match(name):
                out[name.rsplit(":rate", 1)[1]] += 1
        return dict(sorted(out.items()))

    def recorded_mismatch(self, present: Collection[str], window_s: float) -> str | None:
        """The debug line of a read that finds recorded series but none at its own rate
        window (it reads the raw counters), None otherwise."""
        found = self.recorded_windows(present)
        mine = prometheus_duration(window_s)
        if not found or mine in found:
            return None
        return (f"recorded series present at {', '.join(found)}, but this read's rate window is "
                f"{mine}: reading the raw counters")

    def _recorded_form(self, sq: SignalQuery, window_s: float,
                       sels: Mapping[str, tuple[str, str]], recorded: Collection[str]
                       ) -> SignalQuery:
        """``sq`` read from the recorded series when every one it needs is in ``recorded``:
        ``sum by (<the raw query's grouping>) (<recorded>{<the raw query's selector>})`` (a
        ratio of two for the mean wait). The same numbers as the raw query up to the order
        of the additions (the rule summed each group, the read sums the groups)."""
        rates = self.read_rates().get(sq.signal)
        if not rates:
            return sq
        names = [self.recorded_name(r, window_s) for r in rates]
        if not all(n in recorded for n in names):
            return sq
        parts = []
        for r, n in zip(rates, names, strict=True):
            group, sel = sels[r.family]
            parts.append(f"sum by ({', '.join(_unique((*group.split(', '), *r.extra)))}) "
                         f"({self._one(n + sel)})")
        return replace(sq, promql=" / ".join(parts))

    def _beyond_queries(self, w: str, qfilter: Sequence[Matcher], csel: str, psel: str,
                        proc: str, processes: Sequence[Matcher]) -> list[SignalQuery]:
        """Beyond the queue (issue 13): the newer controller-runtime counters, the
        priority queue's depth by priority, the REST client's latency, retries and writes per
        process, and — where the same Prometheus scrapes the API server — its API Priority
        and Fairness level, its write latency with and without webhooks and APF wait, and its
        admission webhooks. One query per signal for all queues; snapshot reads only
        (:data:`collectors.snapshot.SNAPSHOT_ONLY`).

        The API-server series are keyed by :attr:`cluster_labels` (key ``cluster`` /
        ``cluster_name``): they carry no controller, process or ServiceAccount label, so a
        queue gets its cluster's level (:attr:`priority_level`, default ``workload-low``).
        The seat figures fall back to the generation removed in Kubernetes 1.37
        (``request_concurrency_limit`` / ``request_concurrency_in_use``) with ``or``."""
        m = self.metrics
        q, c = self.queue_label, self.controller_label
        by = ", ".join((*self.cluster_labels, "priority_level"))
        cby = ", ".join(self.cluster_labels)
        level = [Matcher("priority_level", "=", self.priority_level)]
        if self.flow_schema:
            level.append(Matcher("flow_schema", "=", self.flow_schema))
        lsel = self._sel(level, "cluster")
        lsel_pl = self._sel(level[:1], "cluster")
        wsel = self._sel((*level, Matcher("execute", "=", "true")), "cluster")
        rsel = self._sel((Matcher("verb", "=~", WRITE_VERBS),), "cluster")
        csel_plain = self._sel(family="cluster")
        prio = self._sel((*qfilter, Matcher("priority", "!=", "")))
        wproc = self._sel((*processes, Matcher("method", "=~", WRITE_VERBS)), "process")
        out = [
            SignalQuery("reconcile_panics_per_s",
                        f"sum by ({c}) (rate({m.reconcile_panics}{csel}[{w}]))",
                        "controller", m.reconcile_panics),
            SignalQuery("reconcile_timeouts_per_s",
                        f"sum by ({c}) (rate({m.reconcile_timeouts}{csel}[{w}]))",
                        "controller", m.reconcile_timeouts),
            SignalQuery("terminal_errors_per_s",
                        f"sum by ({c}) (rate({m.terminal_reconcile_errors}{csel}[{w}]))",
                        "controller", m.terminal_reconcile_errors),
            SignalQuery("depth_by_priority",
                        f"topk by ({q}) ({PRIORITY_SERIES_MAX}, sum by ({q}, priority) "
                        f"(last_over_time({m.depth}{prio}[{w}])))",
                        "queue_priority", m.depth),
            SignalQuery("depth_min_by_priority",
                        f"topk by ({q}) ({PRIORITY_SERIES_MAX}, sum by ({q}, priority) "
                        f"(min_over_time({m.depth}{prio}[{w}])))",
                        "queue_priority", m.depth),
            SignalQuery("priority_series",
                        f"count by ({q}) (count by ({q}, priority) (last_over_time("
                        f"{m.depth}{prio}[{w}])))", "queue", m.depth),
            SignalQuery("api_request_s_per_s",
                        f"sum by ({proc}) (rate({m.request_duration}_sum{psel}[{w}]))",
                        "process", m.request_duration + "_sum"),
            SignalQuery("api_retries_per_s",
                        f"sum by ({proc}) (rate({m.request_retries}{psel}[{w}]))",
                        "process", m.request_retries),
            SignalQuery("served_webhook_s_per_s",
                        f"sum by ({proc}) (rate({m.webhook_latency}_sum{psel}[{w}]))",
                        "process", m.webhook_latency + "_sum"),
            SignalQuery("served_webhook_requests_per_s",
                        f"sum by ({proc}) (rate({m.webhook_requests}{psel}[{w}]))",
                        "process", m.webhook_requests),
            SignalQuery("served_webhook_in_flight",
                        f"sum by ({proc}) (avg_over_time({m.webhook_in_flight}{psel}[{w}]))",
                        "process", m.webhook_in_flight),
            SignalQuery("api_writes_per_s",
                        f"sum by ({proc}) (rate({m.rest_client_requests}{wproc}[{w}]))",
                        "process", m.rest_client_requests),
            SignalQuery("apf_wait_mean_s",
                        f"sum by ({by}) (rate({m.apf_wait}_sum{wsel}[{w}])) / "
                        f"sum by ({by}) (rate({m.apf_wait}_count{wsel}[{w}]))",
                        "cluster", m.apf_wait),
            SignalQuery("apf_rejected_per_s",
                        f"sum by ({by}, reason) (rate({m.apf_rejected}{lsel}[{w}]))",
                        "cluster_reason", m.apf_rejected),
            SignalQuery("apf_dispatched_per_s",
                        f"sum by ({by}) (rate({m.apf_dispatched}{lsel}[{w}]))",
                        "cluster", m.apf_dispatched),
            SignalQuery("apf_inqueue_mean",
                        f"sum by ({by}) (avg_over_time({m.apf_inqueue}{lsel}[{w}]))",
                        "cluster", m.apf_inqueue),
            # The fallbacks are per series, inside the sum: an API server of the older
            # generation (a replica mid-upgrade, an old cluster) still counts its seats.
            SignalQuery("apf_seats_in_use_mean",
                        f"sum by ({by}) (avg_over_time({m.apf_executing_seats}{lsel}[{w}]) or "
                        f"avg_over_time({m.apf_concurrency_in_use}{lsel}[{w}]))",
                        "cluster", m.apf_executing_seats),
            SignalQuery("apf_seat_limit",
                        f"sum by ({by}) (last_over_time({m.apf_current_limit_seats}{lsel_pl}"
                        f"[{w}]) or last_over_time({m.apf_nominal_limit_seats}{lsel_pl}[{w}]) "
                        f"or last_over_time({m.apf_concurrency_limit}{lsel_pl}[{w}]))",
                        "cluster", m.apf_current_limit_seats),
            SignalQuery("apiserver_write_latency_mean_s",
                        f"sum by ({cby}) (rate({m.apiserver_request_duration}_sum{rsel}[{w}])) / "
                        f"sum by ({cby}) (rate({m.apiserver_request_duration}_count{rsel}[{w}]))",
                        "cluster", m.apiserver_request_duration),
            SignalQuery("apiserver_write_sli_mean_s",
                        f"sum by ({cby}) (rate({m.apiserver_request_sli_duration}_sum{rsel}"
                        f"[{w}])) / sum by ({cby}) (rate({m.apiserver_request_sli_duration}"
                        f"_count{rsel}[{w}]))", "cluster", m.apiserver_request_sli_duration),
            SignalQuery("admission_webhook_mean_s",
                        f"sum by ({cby}{', ' if cby else ''}name) (rate("
                        f"{m.admission_webhook_duration}_sum{csel_plain}[{w}])) / "
                        f"sum by ({cby}{', ' if cby else ''}name) (rate("
                        f"{m.admission_webhook_duration}_count{csel_plain}[{w}]))",
                        "cluster_name", m.admission_webhook_duration),
        ]
        if not self.has_controller_metrics:
            out = [sq for sq in out if not sq.signal.startswith(_CONTROLLER_RUNTIME_ONLY)]
        needs = {
            "apf_wait_mean_s": (m.apf_wait + "_count",),
            "apf_seats_in_use_mean": (m.apf_executing_seats, m.apf_concurrency_in_use),
            "apf_seat_limit": (m.apf_current_limit_seats, m.apf_nominal_limit_seats,
                               m.apf_concurrency_limit),
            "apiserver_write_latency_mean_s": (m.apiserver_request_duration + "_count",),
            "apiserver_write_sli_mean_s": (m.apiserver_request_sli_duration + "_count",),
            "admission_webhook_mean_s": (m.admission_webhook_duration + "_count",),
        }
        # the depth and the request count exist wherever there is a queue to judge: those
        # queries go with the core ones instead of waiting for the presence answer
        always = {"depth_by_priority", "depth_min_by_priority", "priority_series",
                  "api_writes_per_s"}
        return [sq if sq.signal in always else
                replace(sq, requires=needs.get(sq.signal, (sq.metric,))) for sq in out]

    def _cpu_queries(self, w: str, qsel: str, psel: str, proc: str) -> list[SignalQuery]:
        """The controller's CPU (issue 20), optional, one query per signal for all queues:

        * per process, by the process labels like ``rest_client_*``: cores in use
          (``rate(process_cpu_seconds_total)``), GOMAXPROCS (last value in the window) and
          the run-queue wait histogram ``go_sched_latencies_seconds`` (rates of ``_sum``,
          ``_count`` and ``_bucket``). Every Go target has these, so each answer is kept to
          the processes that run a queue (``and on (<process labels>)`` the adds counter's
          processes): without it a snapshot would receive every exporter of the Prometheus;
        * per container of the controllers' pods, from other jobs (kube-state-metrics and the
          kubelet's cAdvisor, labels :data:`CONTAINER_LABELS`): the pods' containers
          (``kube_pod_container_info``, which names every container, limit or not), the CPU
          limit in cores (``max``: two kube-state-metrics replicas report the same limit) and
          the CFS periods and throttled periods per second (``sum``: a restarted container's
          old and new cgroup both count). Kept to the controllers' pods by ``and on (pod)``
          (and the cluster labels): the cluster's other containers are never sent. The
          snapshot joins them to the processes on namespace, pod and container
          (:class:`collectors.processes._Containers`)."""
        m = self.metrics
        ns, pod, ctr = CONTAINER_LABELS
        owners = f"count by ({proc}) (last_over_time({m.adds}{qsel}[{w}]))"
        mine = f" and on ({proc}) {owners}"
        keep_pods = self._controller_pods(w, qsel)
        by = ", ".join(_unique((*self.cluster_labels, ns, pod, ctr)))
        real = [Matcher(ctr, "!=", v) for v in NOT_A_CONTAINER]
        ksel = self._sel(real, "cluster")
        lsel = self._sel((*real, Matcher("resource", "=", "cpu"), Matcher("unit", "=", "core")),
                         "cluster")
        s = m.sched_latency
        return [
            SignalQuery("cpu_used_cores",
                        f"sum by ({proc}) (rate({m.process_cpu}{psel}[{w}])){mine}",
                        "process", m.process_cpu, (m.process_cpu,)),
            SignalQuery("cpu_gomaxprocs",
                        f"sum by ({proc}) (last_over_time({m.gomaxprocs}{psel}[{w}])){mine}",
                        "process", m.gomaxprocs, (m.gomaxprocs,)),
            SignalQuery("cpu_sched_s_per_s",
                        f"sum by ({proc}) (rate({s}_sum{psel}[{w}])){mine}",
                        "process", s + "_sum", (s + "_sum",)),
            SignalQuery("cpu_sched_count_per_s",
                        f"sum by ({proc}) (rate({s}_count{psel}[{w}])){mine}",
                        "process", s + "_count", (s + "_count",)),
            SignalQuery("cpu_sched_buckets",
                        f"sum by ({proc}, le) (rate({s}_bucket{psel}[{w}])){mine}",
                        "process_le", s + "_bucket", (s + "_bucket",)),
            SignalQuery("cpu_pod_containers",
                        f"count by ({by}) (last_over_time({m.container_info}{ksel}[{w}]))"
                        f"{keep_pods}", "container", m.container_info, (m.container_info,)),
            SignalQuery("cpu_limit_cores",
                        f"max by ({by}) (last_over_time({m.container_cpu_limit}{lsel}[{w}]))"
                        f"{keep_pods}", "container", m.container_cpu_limit,
                        (m.container_cpu_limit,)),
            SignalQuery("cpu_cfs_throttled_per_s",
                        f"sum by ({by}) (rate({m.cfs_throttled_periods}{ksel}[{w}])){keep_pods}",
                        "container", m.cfs_throttled_periods, (m.cfs_throttled_periods,)),
            SignalQuery("cpu_cfs_periods_per_s",
                        f"sum by ({by}) (rate({m.cfs_periods}{ksel}[{w}])){keep_pods}",
                        "container", m.cfs_periods, (m.cfs_periods,)),
        ]

    def _controller_pods(self, w: str, qsel: str) -> str:
        """`` and on (<cluster labels>, pod) <the pods of the controllers' series>``: the pod
        label of the controllers' series (:attr:`container_labels`) copied to ``pod`` when it
        is named otherwise."""
        pod = CONTAINER_LABELS[1]
        mine = self.container_labels[1]
        on = ", ".join(_unique((*self.cluster_labels, pod)))
        by = ", ".join(_unique((*self.cluster_labels, mine)))
        pods = f"count by ({by}) (last_over_time({self.metrics.adds}{qsel}[{w}]))"
        if mine != pod:
            pods = f'label_replace({pods}, "{pod}", "$1", "{mine}", "(.+)")'
        return f" and on ({on}) {pods}"

    def presence_query(self, queries: Sequence[SignalQuery]) -> str | None:
        """Which of the sample names the ``queries`` require exist (an instant selector:
        series with a sample in the last 5 minutes), as one answer keyed by ``__name__``
        (the recorded series' names are asked apart, :meth:`recorded_presence_query`: their
        answer counts every recorded series, seconds at 10,000 queues). Grouped by the
        replica labels too (:meth:`replica_labels`): a name
        answered once per value of one of them is an HA pair's (the snapshot's check,
        :func:`collectors.snapshot._replica_note`), at no extra query. None when nothing is
        asked."""
        alternatives = [regex_literal(n) for n in sorted({n for sq in queries
                                                          for n in sq.requires})]
        if alternatives:
            # the adds counters carry the replica labels wherever there is a queue
            alternatives.append(regex_literal(self.metrics.adds))
        if not alternatives:
            return None
        regex = "|".join(alternatives)
        by = ", ".join(("__name__", *self.replica_labels()))
        return f"count by ({by}) ({{__name__=~{escape_label_value(regex)}}})"

    def scrape_samples_query(self, queues: Sequence[str] | None = None) -> str:
        """Each queue's most samples in :data:`SCRAPE_SPAN_S` within the last
        :data:`SCRAPE_LOOKBACK_S`: its own scrape rate, so that a read can tell a gap in a
        window from a queue scraped every 30 s or 60 s, and size its rate windows, when the
        scrape interval is not configured; ``queues``: only those."""
        span, back = format_duration(SCRAPE_SPAN_S), format_duration(SCRAPE_LOOKBACK_S)
        q = self.queue_label
        return self.deduplicated(
            f"max by ({q}) (max_over_time(count_over_time({self.metrics.adds}"
            f"{self._sel(self._queue_filter(q, queues))}[{span}])[{back}:{span}]))")

    def topology_query(self, window_s: float, queues: Sequence[str] | None = None) -> str:
        """Which process (job/instance) runs which queue, in which cluster
        (:attr:`cluster_labels`), in which namespace, pod and container
        (:attr:`container_labels`, where the series carry them): joins the process-wide
        API-client and CPU metrics, the cluster-wide API-server ones and the container's
        kube-state-metrics and cAdvisor series."""
        w = format_duration(window_s)
        sel = self._sel(self._queue_filter(self.queue_label, queues))
        by = ", ".join(_unique((self.queue_label, *self.process_labels, *self.cluster_labels,
                                *self.container_labels)))
        return self.deduplicated(
            f"count by ({by}) (last_over_time({self.metrics.adds}{sel}[{w}]))")

    def _depth_while_idle(self, window_s: float, qsel: str, csel: str) -> str:
        """Depth × [the controller had an idle worker], averaged over the instants: the depth
        gauge and ``active_workers < max_concurrent_reconciles`` paired at each instant — a subquery
        at the scrape interval (:data:`IDLE_DEPTH_RESOLUTION_S` unless set) over at least
        :data:`IDLE_DEPTH_WINDOW_S` — not two window averages."""
        m, q, c = self.metrics, self.queue_label, self.controller_label
        w = format_duration(max(window_s, IDLE_DEPTH_WINDOW_S))
        res = format_duration(self.scrape_interval_s or IDLE_DEPTH_RESOLUTION_S)
        idle = (f"max by ({c}) ({m.active_workers}{csel}) < bool "
                f"max by ({c}) ({m.max_concurrent_reconciles}{csel})")
        return (f"avg_over_time((sum by ({q}) ({self._one(m.depth + qsel)}) * on ({q}) "
                f'max by ({q}) (label_replace({idle}, "{q}", "$1", "{c}", "(.+)")))'
                f"[{w}:{res}])")

    def _busy_workers(self, w: str, sel: str) -> str:
        """Time-average busy workers per queue (Little's law on the work-duration histogram)."""
        q = self.queue_label
        return f"sum by ({q}) (rate({self.metrics.work_duration}_sum{sel}[{w}]))"

    def derived_queries(self, window_s: float) -> list[SignalQuery]:
        """Per-queue signals that join or derive series, for Prometheus recording/alerting rules.

        * ``utilization``: busy workers / worker count. The count is
          ``max_concurrent_reconciles`` (keyed by the controller label, copied onto the queue
          label with ``label_replace``) and, for queues without that gauge, the configured
          ``workers`` (explicit names first, then groups, as :meth:`configured_workers`).
          Absent when neither source exists.
        * ``depth_growth_per_s``: ``deriv()`` of the depth gauge, summed over ``priority``.
        * ``error_ratio``: reconcile errors / reconciles per controller, on the queue label
          (controller-runtime only).
        """
        w = format_duration(window_s)
        m = self.metrics
        q, c = self.queue_label, self.controller_label
        sel = self._sel()
        csel = self._sel(family="controller")
        busy = self._busy_workers(w, sel)
        parts: list[str] = []
        if self.has_controller_metrics:
            gauge = (f"max by ({q}) (label_replace(last_over_time("
                     f"{m.max_concurrent_reconciles}{csel}[{w}]), "
                     f'"{q}", "$1", "{c}", "(.+)"))')
            parts.append(f"({busy} / on ({q}) {gauge})")
        for name, count in sorted(self.workers.items()):
            one = self._busy_workers(w, self._sel((Matcher(q, "=", name),)))
            parts.append(f"({one} / {count:g})")
        for group, count in self.worker_groups:
            # Prometheus anchors =~ like QueueGroup.matches' fullmatch: names | pattern.
            alternatives = [regex_literal(n) for n in group.names]
            if group.pattern is not None:
                alternatives.append(f"(?:{group.pattern})")
            if alternatives:
                one = self._busy_workers(w, self._sel((Matcher(q, "=~", "|".join(alternatives)),)))
                parts.append(f"({one} / {count:g})")
        out: list[SignalQuery] = []
        if parts:
            out.append(SignalQuery("utilization", self.deduplicated(" or ".join(parts)),
                                   "queue", m.work_duration + "_sum"))
        out.append(SignalQuery("depth_growth_per_s", self.deduplicated(
            f"sum by ({q}) (deriv({m.depth}{sel}[{w}]))"), "queue", m.depth))
        if self.has_controller_metrics:
            ratio = (f"sum by ({c}) (rate({m.reconcile_errors}{csel}[{w}])) / "
                     f"sum by ({c}) (rate({m.reconcile_total}{csel}[{w}]))")
            out.append(SignalQuery(
                "error_ratio", self.deduplicated(
                    f'max by ({q}) (label_replace({ratio}, "{q}", "$1", "{c}", "(.+)"))'),
                "queue", m.reconcile_errors))
        return out


def _unique(labels: Iterable[str]) -> tuple[str, ...]:
    """The labels in order, each once."""
    return tuple(dict.fromkeys(labels))


def component_base_profile() -> Profile:
    """Kubernetes components: the same workqueue names with only ``{name}``; no
    controller_runtime_* metrics, so worker counts must come from the config."""
    return Profile(name=COMPONENT_BASE)


def default_profile() -> Profile:
    return Profile()
