"""Series beyond the queue, in the exact shapes upstream code exposes them, with known truth.

Names, label sets and bucket layouts follow (see ``operator-needs-and-metrics.md`` §2):

* controller-runtime ``pkg/internal/controller/metrics/metrics.go``:
  ``controller_runtime_reconcile_panics_total{controller}``,
  ``…_reconcile_timeouts_total{controller}``, ``…_terminal_reconcile_errors_total{controller}``;
  the priority queue's ``workqueue_depth{name, controller, priority}``;
* client-go REST client (component-base ``metrics/prometheus/restclient``; controller-runtime
  after ``RegisterRESTClientMetrics``): ``rest_client_requests_total{code, method, host}``,
  ``rest_client_request_duration_seconds{verb, host}`` (5 ms … 60 s),
  ``rest_client_request_retries_total{code, verb, host}``;
* apiserver ``pkg/util/flowcontrol/metrics``: ``apiserver_flowcontrol_*`` by
  ``priority_level`` / ``flow_schema`` (wait histogram with ``execute``, buckets 0 … 30 s;
  rejections by ``reason``; seats); the **1.36** generation also exposes the pre-1.37
  ``request_concurrency_limit`` / ``request_concurrency_in_use`` (shown with
  ``--show-hidden-metrics-for-version``), **1.37** does not, and an old cluster has only
  those; ``apiserver_request_duration_seconds`` / ``apiserver_request_sli_duration_seconds``
  by ``verb`` …; ``apiserver_admission_webhook_admission_duration_seconds{name, type,
  operation, rejected}``.

Every counter grows linearly and every gauge is constant, so ``rate()`` / ``avg_over_time``
over any window are exact; each histogram puts all observations in one bucket with a fixed
sum per observation, so its mean is exact. :data:`TRUTH` is written out by hand from these
numbers (two API-server replicas in c136 are summed; c137 has one), not computed by queuelens.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

START = 1704067200
DURATION_S = 3600
STEP_S = 15
AT = START + 1800
WINDOW_S = 300.0

WAIT_BUCKETS = (0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0)
REQUEST_BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0,
                   4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0)
SLI_BUCKETS = (0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0,
               15.0, 20.0, 30.0, 45.0, 60.0)
WEBHOOK_BUCKETS = (0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0)
CLIENT_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
WORKQUEUE_BUCKETS = tuple(1e-8 * 10 ** i for i in range(12))


@dataclass
class _Doc:
    families: dict[str, tuple[str, list[tuple[str, dict[str, str], str]]]] = field(
        default_factory=dict)
    """family -> (type, [(sample name, labels, kind of value)…])."""

    def add(self, family: str, kind: str, sample: str, labels: dict[str, str],
            value: tuple[str, float]) -> None:
        self.families.setdefault(family, (kind, []))[1].append((sample, labels, _enc(value)))

    def counter(self, name: str, labels: dict[str, str], rate: float) -> None:
        self.add(name.removesuffix("_total"), "counter", name, labels, ("rate", rate))

    def gauge(self, name: str, labels: dict[str, str], value: float) -> None:
        self.add(name, "gauge", name, labels, ("const", value))

    def saw(self, name: str, labels: dict[str, str], high: float, low: float) -> None:
        """A gauge at ``high`` on even samples and ``low`` on odd ones."""
        self.add(name, "gauge", name, labels, ("saw", high * 1000.0 + low))

    def histogram(self, name: str, labels: dict[str, str], bounds: tuple[float, ...],
                  rate: float, mean: float) -> None:
        """All observations in the first bucket ≥ ``mean``; sum = mean × count."""
        for b in bounds:
            self.add(name, "histogram", f"{name}_bucket", {**labels, "le": _go(b)},
                     ("rate", rate if b >= mean else 0.0))
        self.add(name, "histogram", f"{name}_bucket", {**labels, "le": "+Inf"}, ("rate", rate))
        self.add(name, "histogram", f"{name}_count", labels, ("rate", rate))
        self.add(name, "histogram", f"{name}_sum", labels, ("rate", rate * mean))

    def render(self) -> str:
        times = [START + i * STEP_S for i in range(DURATION_S // STEP_S)]
        out: list[str] = []
        for family, (kind, rows) in self.families.items():
            out.append(f"# TYPE {family} {kind}")
            for sample, labels, value in rows:
                how, v = _dec(value)
                lab = "{" + ",".join(f'{k}="{_esc(x)}"' for k, x in labels.items()) + "}"
                for t in times:
                    if how == "saw":
                        high, low = divmod(v, 1000.0)
                        val = high if ((t - START) // STEP_S) % 2 == 0 else low
                    else:
                        val = v * (t - START) if how == "rate" else v
                    out.append(f"{sample}{lab} {_num(val)} {t}")
        out.append("# EOF")
        return "\n".join(out) + "\n"


def _enc(value: tuple[str, float]) -> str:
    return f"{value[0]}:{value[1]!r}"


def _dec(text: str) -> tuple[str, float]:
    how, _, v = text.partition(":")
    return how, float(v)


def _go(value: float) -> str:
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(round(v, 9))


def _apiserver(doc: _Doc, cluster: str, instance: str, generation: str) -> None:
    """One API-server replica: the workload-low level with two flow schemas, and
    global-default (which no queue reads)."""
    srv = {"cluster": cluster, "job": "apiserver", "instance": instance}
    if generation != "old":
        for flow, rate, mean, queued, seats in (("service-accounts", 20.0, 0.05, 5.0, 30.0),
                                                ("probes", 10.0, 0.2, 2.0, 9.0)):
            pf = {**srv, "flow_schema": flow, "priority_level": "workload-low"}
            doc.histogram("apiserver_flowcontrol_request_wait_duration_seconds",
                          {**pf, "execute": "true"}, WAIT_BUCKETS, rate, mean)
            doc.histogram("apiserver_flowcontrol_request_wait_duration_seconds",
                          {**pf, "execute": "false"}, WAIT_BUCKETS, 1.0, 0.2)
            doc.counter("apiserver_flowcontrol_dispatched_requests_total", pf, rate)
            doc.gauge("apiserver_flowcontrol_current_inqueue_requests", pf, queued)
            doc.gauge("apiserver_flowcontrol_current_executing_seats", pf, seats)
        sa = {**srv, "flow_schema": "service-accounts", "priority_level": "workload-low"}
        doc.counter("apiserver_flowcontrol_rejected_requests_total",
                    {**sa, "reason": "queue-full"}, 0.5)
        doc.counter("apiserver_flowcontrol_rejected_requests_total",
                    {**sa, "reason": "time-out"}, 0.25)
        gd = {**srv, "flow_schema": "global-default", "priority_level": "global-default"}
        doc.histogram("apiserver_flowcontrol_request_wait_duration_seconds",
                      {**gd, "execute": "true"}, WAIT_BUCKETS, 500.0, 5.0)
        doc.counter("apiserver_flowcontrol_rejected_requests_total",
                    {**gd, "reason": "concurrency-limit"}, 100.0)
        doc.gauge("apiserver_flowcontrol_current_executing_seats", gd, 1000.0)
        for level, seats in (("workload-low", 40.0), ("global-default", 1000.0)):
            pl = {**srv, "priority_level": level}
            doc.gauge("apiserver_flowcontrol_nominal_limit_seats", pl, seats)
            doc.gauge("apiserver_flowcontrol_current_limit_seats", pl, seats)
    if generation in ("1.36", "old"):
        limit, used = (40.0, (30.0, 9.0)) if generation == "1.36" else (50.0, (45.0, 0.0))
        doc.gauge("apiserver_flowcontrol_request_concurrency_limit",
                  {**srv, "priority_level": "workload-low"}, limit)
        for flow, n in zip(("service-accounts", "probes"), used, strict=True):
            doc.gauge("apiserver_flowcontrol_request_concurrency_in_use",
                      {**srv, "priority_level": "workload-low", "flow_schema": flow}, n)
    req = {**srv, "group": "apps", "version": "v1", "resource": "deployments",
           "subresource": "", "scope": "resource", "component": "apiserver"}
    doc.histogram("apiserver_request_duration_seconds", {**req, "verb": "PUT", "dry_run": ""},
                  REQUEST_BUCKETS, 10.0, 0.3)
    doc.histogram("apiserver_request_duration_seconds", {**req, "verb": "GET", "dry_run": ""},
                  REQUEST_BUCKETS, 100.0, 0.01)
    doc.histogram("apiserver_request_sli_duration_seconds", {**req, "verb": "PUT"},
                  SLI_BUCKETS, 10.0, 0.05)
    doc.histogram("apiserver_request_sli_duration_seconds", {**req, "verb": "GET"},
                  SLI_BUCKETS, 100.0, 0.01)
    for name, mean in (("validate.slow.example.com", 0.2), ("mutate.fast.example.com", 0.01)):
        doc.histogram("apiserver_admission_webhook_admission_duration_seconds",
                      {**srv, "name": name, "type": "validating", "operation": "UPDATE",
                       "rejected": "false"}, WEBHOOK_BUCKETS, 10.0, mean)


def _controller(doc: _Doc, queue: str, cluster: str) -> None:
    """A controller-runtime manager with the priority queue and REST-client metrics on."""
    proc = {"cluster": cluster, "job": "operator", "instance": f"10.1.0.1:8080-{queue}",
            "pod": f"op-{queue}", "namespace": "ops"}
    wq = {"name": queue, "controller": queue, **proc}
    cr = {"controller": queue, **proc}
    doc.counter("workqueue_adds_total", wq, 10.0)
    for prio, depth in (("10", 1.0), ("0", 4.0)):
        doc.gauge("workqueue_depth", {**wq, "priority": prio}, depth)
    # the lowest priority goes 6, 2, 6, 2 … (6 at AT, an even sample): its least is 2
    doc.saw("workqueue_depth", {**wq, "priority": "-100"}, 6.0, 2.0)
    doc.histogram("workqueue_work_duration_seconds", wq, WORKQUEUE_BUCKETS, 10.0, 0.8)
    doc.gauge("controller_runtime_max_concurrent_reconciles", cr, 10.0)
    doc.counter("controller_runtime_reconcile_panics_total", cr, 0.01)
    doc.counter("controller_runtime_reconcile_timeouts_total", cr, 0.02)
    doc.counter("controller_runtime_terminal_reconcile_errors_total", cr, 0.05)
    host = {"host": "10.96.0.1:443"}
    doc.counter("rest_client_requests_total", {**proc, **host, "code": "200", "method": "GET"},
                30.0)
    doc.counter("rest_client_requests_total", {**proc, **host, "code": "200", "method": "PUT"},
                8.0)
    doc.counter("rest_client_requests_total", {**proc, **host, "code": "429", "method": "PUT"},
                2.0)
    doc.histogram("rest_client_request_duration_seconds", {**proc, **host, "verb": "GET"},
                  CLIENT_BUCKETS, 30.0, 0.02)
    doc.histogram("rest_client_request_duration_seconds", {**proc, **host, "verb": "PUT"},
                  CLIENT_BUCKETS, 10.0, 0.5)
    doc.counter("rest_client_request_retries_total",
                {**proc, **host, "code": "429", "verb": "PUT"}, 1.5)
    # the manager's own webhook server (pkg/webhook/internal/metrics): buckets 1e-8 … 1000 s
    for hook, rate, mean in (("/validate-widgets", 4.0, 0.05), ("/convert", 1.0, 0.2)):
        doc.histogram("controller_runtime_webhook_latency_seconds", {**proc, "webhook": hook},
                      WORKQUEUE_BUCKETS, rate, mean)
        doc.counter("controller_runtime_webhook_requests_total",
                    {**proc, "webhook": hook, "code": "200"}, rate)
        doc.gauge("controller_runtime_webhook_requests_in_flight", {**proc, "webhook": hook},
                  0.5)


def _many_priorities(doc: _Doc) -> None:
    """A queue whose priorities kept growing (controller-runtime#3396): 40 values."""
    wq = {"name": "lifo", "controller": "lifo", "cluster": "elsewhere", "job": "operator",
          "instance": "10.1.0.2:8080", "pod": "op-lifo"}
    doc.counter("workqueue_adds_total", wq, 1.0)
    for p in range(40):
        doc.gauge("workqueue_depth", {**wq, "priority": str(p)}, float(p + 1))


def text() -> str:
    doc = _Doc()
    _many_priorities(doc)
    _apiserver(doc, "c136", "10.0.0.9:6443", "1.36")
    _apiserver(doc, "c136", "10.0.0.10:6443", "1.36")
    _apiserver(doc, "c137", "10.0.1.9:6443", "1.37")
    _apiserver(doc, "old", "10.0.2.9:6443", "old")
    for queue, cluster in (("widgets", "c136"), ("gadgets", "c137"), ("legacy", "old"),
                           ("lonely", "elsewhere")):
        _controller(doc, queue, cluster)
    return doc.render()


CLIENT = {
    "api_request_s_per_s": 30 * 0.02 + 10 * 0.5,
    "api_retries_per_s": 1.5,
    "api_writes_per_s": 8.0 + 2.0,
    "reconcile_panics_per_s": 0.01,
    "reconcile_timeouts_per_s": 0.02,
    "terminal_errors_per_s": 0.05,
    "served_webhook_s_per_s": 4.0 * 0.05 + 1.0 * 0.2,
    "served_webhook_requests_per_s": 5.0,
    "served_webhook_in_flight": 1.0,
}
"""Every controller's own figures (the same for each)."""

DEPTH_BY_PRIORITY = {"10": 1.0, "0": 4.0, "-100": 6.0}
DEPTH_MIN_BY_PRIORITY = {"10": 1.0, "0": 4.0, "-100": 2.0}

TRUTH: dict[str, dict[str, float | None]] = {
    # two replicas: rates and seats summed; the wait mean is (2·(20·0.05 + 10·0.2)) /
    # (2·(20 + 10)) = 0.1 s; execute="false" and global-default are not counted
    "widgets": {"apf_wait_mean_s": 0.1, "apf_rejected_per_s": 2 * 0.75,
                "apf_dispatched_per_s": 2 * 30.0, "apf_inqueue_mean": 2 * 7.0,
                "apf_seats_in_use_mean": 2 * 39.0, "apf_seat_limit": 2 * 40.0,
                "apiserver_write_latency_mean_s": 0.3, "apiserver_write_sli_mean_s": 0.05},
    "gadgets": {"apf_wait_mean_s": 0.1, "apf_rejected_per_s": 0.75,
                "apf_dispatched_per_s": 30.0, "apf_inqueue_mean": 7.0,
                "apf_seats_in_use_mean": 39.0, "apf_seat_limit": 40.0,
                "apiserver_write_latency_mean_s": 0.3, "apiserver_write_sli_mean_s": 0.05},
    # only the generation removed in 1.37: the seat figures fall back to it
    "legacy": {"apf_wait_mean_s": None, "apf_rejected_per_s": None,
               "apf_dispatched_per_s": None, "apf_inqueue_mean": None,
               "apf_seats_in_use_mean": 45.0, "apf_seat_limit": 50.0,
               "apiserver_write_latency_mean_s": 0.3, "apiserver_write_sli_mean_s": 0.05},
    "lonely": dict.fromkeys(("apf_wait_mean_s", "apf_rejected_per_s", "apf_dispatched_per_s",
                             "apf_inqueue_mean", "apf_seats_in_use_mean", "apf_seat_limit",
                             "apiserver_write_latency_mean_s", "apiserver_write_sli_mean_s")),
}
WEBHOOKS = {"mutate.fast.example.com": 0.01, "validate.slow.example.com": 0.2}
REJECTED_BY_REASON = {"widgets": {"queue-full": 1.0, "time-out": 0.5},
                      "gadgets": {"queue-full": 0.5, "time-out": 0.25}}


def queues() -> Iterator[str]:
    yield from TRUTH
