"""The demo fleet's metrics as Prometheus series, and as OpenMetrics text for backfill.

:func:`fleet_families` is the one description of what the demo exposes — metric names,
label sets and bucket layouts of client-go's workqueue metrics and controller-runtime's
controller / REST-client metrics — used both by :func:`render_openmetrics` (for
``promtool tsdb create-blocks-from openmetrics``) and by the live exporter
(:mod:`collectors.exporter`). Every series also carries ``pod``, standing in for the target
label a Kubernetes scrape adds: it says which process (and so which API client) a queue runs in.

OpenMetrics rules honoured (promtool 2.42): timestamps in seconds, ascending within each
series, one value per timestamp, families contiguous, a ``+Inf`` bucket, no blank lines,
``# EOF`` last. ``le`` is printed like Go prints it (``9.999999999999999e-06``).
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TextIO

import numpy as np
import numpy.typing as npt

from models import fleet as fl
from models.scrape import ScrapedHistogram, ScrapedMetrics

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


def simulated_families(
    controllers: Sequence[tuple[str, str, ScrapedMetrics]], start: float
) -> list[Family]:
    """The series of simulated controllers — (queue name, pod, scraped metrics) each, every
    controller in its own process — at ``start`` + their scrape times: the families a
    controller-runtime manager exposes (:mod:`models.scrape` says what each one counts)."""
    fams: dict[str, Family] = {}

    def add(name: str, kind: str, series: list[Series]) -> None:
        fams.setdefault(name, Family(name, kind, HELP[name], [])).series.extend(series)

    for queue, pod, m in controllers:
        t = start + m.t_s
        wq = {"name": queue, "controller": queue, "pod": pod}
        cr = {"controller": queue, "pod": pod}
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
        add("controller_runtime_reconcile", "counter", [
            Series("controller_runtime_reconcile_total", {**cr, "result": result},
                   m.counters[f"reconcile_{result}"], t) for result in ("success", "error")])
        add("controller_runtime_reconcile_errors", "counter", [
            Series("controller_runtime_reconcile_errors_total", cr,
                   m.counters["reconcile_error"], t)])
        add("controller_runtime_reconcile_time_seconds", "histogram", _scraped_histogram(
            "controller_runtime_reconcile_time_seconds", cr, m.histograms["reconcile_time"], t))
        for fam, key in (("controller_runtime_max_concurrent_reconciles",
                          "max_concurrent_reconciles"),
                         ("controller_runtime_active_workers", "active_workers")):
            add(fam, "gauge", [Series(fam, cr, m.gauges[key], t)])
        if m.api_calls:
            add("rest_client_requests", "counter", [Series(
                "rest_client_requests_total",
                {"code": "200", "host": fl.API_HOST, "method": "GET", "pod": pod},
                m.counters["api_requests"], t)])
            rc = {"host": fl.API_HOST, "verb": "GET", "pod": pod}
            for fam, key in (("rest_client_rate_limiter_duration_seconds", "api_limiter"),
                             ("rest_client_request_duration_seconds", "api_request")):
                add(fam, "histogram", _scraped_histogram(fam, rc, m.histograms[key], t))
    return list(fams.values())


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
    hundred controllers is hundreds of megabytes of text, never held at once)."""
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
            head = s.sample + _labels({**s.labels, **extra})
            out.write("".join(
                f"{head} {_number(v)} {ts}\n"
                for v, ts in zip(s.values.tolist(), stamps, strict=True)
            ))
    out.write("# EOF\n")
