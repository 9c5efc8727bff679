"""Prometheus recording and alerting rules for queuelens, generated from the metric profile.

The expressions come from :class:`collectors.profile.Profile` (``queries`` and
``derived_queries``) — this module only names them, wires the alerts onto the recorded series
and renders YAML. Nothing here talks to Prometheus.

Recorded series follow Prometheus's ``level:metric:operations`` naming convention
(https://prometheus.io/docs/practices/rules/): the level is the labels the series keeps,
joined by ``_`` as that page does for several (``instance_path:requests:rate5m``); the metric
is the source metric (``_total`` stripped after ``rate``); the operations end with the window,
e.g. ``cluster_namespace_job_name:workqueue_adds:rate5m``.

The labels kept are the aggregation labels (:data:`models.settings.DEFAULT_AGGREGATE_BY`:
``cluster``, ``namespace``, ``job``, ``name``; ``--by`` / ``analysis.aggregate_by``), always
with the profile's queue label: two controllers' queues of the same name in two clusters or
namespaces stay two series. The profile's expressions group by the queue label (the
dashboard reads one series per queue); :func:`widen_grouping` puts the aggregation labels in
each of their grouping clauses (the controller label's for the ``controller_runtime_*``
series, which carry the queue's name there), so the recorded series read the profile's own
PromQL.

Alerts read the recorded series of the same group file, so Prometheus (or a Thanos / Mimir
ruler) does the heavy per-queue aggregation once per evaluation. Each carries a
``runbook_url`` annotation: the anchor of its section in ``docs/operations.md`` ("Runbooks").

``--recording`` adds the group :data:`GROUP_READ`: every rate the reads send (the counters'
and the histogram buckets', per queue, per controller and per process:
:meth:`collectors.profile.Profile.read_rates`) at the snapshot's window and at the rate window
of the range read at the settings' step (:func:`read_windows`), evaluated every
:func:`read_interval_s`. The collectors find them with one presence query and read them
instead of the raw counters when the read's rate window is one the names carry; any other
window reads raw (docs/operations.md, "Recording rules").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import yaml

from collectors.profile import (
    Profile,
    SignalQuery,
    check_metric_name,
    prometheus_duration,
    rate_window_s,
)
from models.advisor import AdvisorThresholds, Kind
from models.settings import DEFAULT_AGGREGATE_BY

__all__ = [
    "DEFAULT_RUNBOOK_URL",
    "GROUP_ALERTS",
    "GROUP_READ",
    "GROUP_RECORDING",
    "AlertThresholds",
    "AlertingRule",
    "RecordingRule",
    "RuleGroup",
    "build_read_group",
    "build_rule_groups",
    "group_labels",
    "prometheus_duration",
    "read_interval_s",
    "read_windows",
    "recorded_names",
    "render_yaml",
    "runbook_anchor",
    "widen_grouping",
]

_ADVISOR = AdvisorThresholds()

GROUP_RECORDING = "queuelens.recording"
GROUP_ALERTS = "queuelens.alerts"
GROUP_READ = "queuelens.read"
DEFAULT_SCRAPE_INTERVAL_S = 15.0
"""The scrape interval the range read's window is sized for when neither ``--scrape-interval``
nor the profile's ``scrape_interval`` says (the reads' own fallback, and the usual one)."""

DEFAULT_RUNBOOK_URL = "https://github.com/queuelens/queuelens/blob/main/docs/operations.md"
"""Where the runbooks are read: the project's ``docs/operations.md`` as its repository shows
it (GitHub renders a heading ``### WorkqueueSaturated`` with the anchor
``#workqueuesaturated``). ``--runbook-url`` points the alerts at your own copy."""

# signal (as named by the profile) -> (metric part, operation part without the window).
_RECORDED: dict[str, tuple[str, str]] = {
    "arrival_rate_per_s": ("workqueue_adds", "rate"),
    "throughput_per_s": ("workqueue_work_duration_seconds_count", "rate"),
    "busy_workers": ("workqueue_work_duration_seconds_sum", "rate"),
    "utilization": ("workqueue_busy_workers_per_worker", "ratio_rate"),
    "queue_wait_mean_s": ("workqueue_queue_duration_seconds", "mean"),
    "retries_per_s": ("workqueue_retries", "rate"),
    "error_ratio": ("controller_runtime_reconcile_errors_per_reconcile", "ratio_rate"),
    "depth_growth_per_s": ("workqueue_depth", "deriv"),
    "unfinished_work_growth": ("workqueue_unfinished_work_seconds", "deriv"),
    "longest_running_s": ("workqueue_longest_running_processor_seconds", "max_over_time"),
}


@dataclass(frozen=True)
class AlertThresholds:
    """Where the alerts trip. Each is a documented judgement, not a law of nature."""

    utilization: float = 0.9
    """Busy workers / workers. Above ~0.9, M/M/c waiting time grows steeply (Erlang C), and a
    short burst has no spare worker to absorb it."""
    saturation_for_s: float = 900.0
    backlog_excess_ratio: float = 0.02
    """Arrivals must exceed throughput by this fraction (rate noise on a balanced queue stays
    well under 2 %), and the depth must be rising, for the backlog alert."""
    backlog_for_s: float = 900.0
    error_ratio: float = _ADVISOR.error_share_storm
    """Reconcile errors / reconciles: the advisor's ``error_share_storm`` (one definition of a
    retry storm for ``advise`` and the alerts)."""
    retries_per_add: float = _ADVISOR.error_share_storm
    """Delayed re-adds / adds: each failed pass is one re-add, so with a share f of passes
    failing about f of the adds are re-adds — the same ``error_share_storm``."""
    retry_storm_for_s: float = 600.0
    stuck_growth: float = _ADVISOR.stuck_growth_min
    """deriv(workqueue_unfinished_work_seconds) in s/s ≈ in-flight items that never complete:
    the advisor's ``stuck_growth_min``."""
    stuck_longest_running_s: float = 600.0
    stuck_for_s: float = 600.0


@dataclass(frozen=True)
class RecordingRule:
    record: str
    expr: str

    def as_dict(self) -> dict[str, object]:
        return {"record": self.record, "expr": self.expr}


@dataclass(frozen=True)
class AlertingRule:
    alert: str
    expr: str
    for_s: float
    severity: str
    summary: str
    description: str
    verdict: Kind | None = None
    """The advisor verdict the alert warns of ahead of ``queuelens advise`` (its kind in the
    verdict registry); not rendered into the rules file."""
    runbook_url: str = ""
    """The alert's runbook (:func:`runbook_anchor`); rendered as ``annotations.runbook_url``."""

    def as_dict(self) -> dict[str, object]:
        annotations = {"summary": self.summary, "description": self.description}
        if self.runbook_url:
            annotations["runbook_url"] = self.runbook_url
        return {
            "alert": self.alert,
            "expr": self.expr,
            "for": prometheus_duration(self.for_s),
            "labels": {"severity": self.severity},
            "annotations": annotations,
        }


@dataclass(frozen=True)
class RuleGroup:
    name: str
    rules: Sequence[RecordingRule | AlertingRule] = field(default_factory=tuple)
    interval_s: float | None = None
    """The group's evaluation interval (``interval:``); None: the server's global one."""

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name}
        if self.interval_s is not None:
            out["interval"] = prometheus_duration(self.interval_s)
        out["rules"] = [r.as_dict() for r in self.rules]
        return out


def read_windows(window_s: float, step_s: float, scrape_interval_s: float) -> tuple[float, ...]:
    """The rate windows the reads use with these settings: the snapshot's ``window_s`` and
    the range read's at ``step_s`` (:func:`collectors.profile.rate_window_s`: max(step +
    scrape interval, 4 × scrape interval), 75 s at the default 60 s step and a 15 s scrape),
    each once."""
    return tuple(dict.fromkeys((window_s, rate_window_s(step_s, scrape_interval_s))))


def read_interval_s(step_s: float) -> float:
    """How often the recording groups are evaluated: every step of the range read. No
    oftener: a range read looks at one value per step, and a read of a recorded series
    decodes every sample stored in its range — at the scrape interval (15 s) a recorded
    series holds as many samples as the counter it replaces and the read saves only the
    ``rate()`` arithmetic; at the step (60 s) it holds a quarter, and Prometheus evaluates
    the rules four times less often. No rarer: each point of a live read then has an
    evaluation at most one step old, and an aligned one (a backfill on the grid, vmalert)
    one at its own time."""
    return step_s


def build_read_group(profile: Profile, windows_s: Sequence[float], interval_s: float,
                     exclude: Sequence[str] = ()) -> RuleGroup:
    """The group :data:`GROUP_READ`: the rates the reads send, recorded at each window
    (:meth:`collectors.profile.Profile.recording_rules`), without the names in ``exclude``
    (the recording group's, which record the same expressions under the same names)."""
    skip = set(exclude)
    rules = tuple(RecordingRule(name, expr) for name, expr in profile.recording_rules(windows_s)
                  if name not in skip)
    return RuleGroup(GROUP_READ, rules, interval_s)


def group_labels(profile: Profile, by: Sequence[str] = DEFAULT_AGGREGATE_BY) -> tuple[str, ...]:
    """The labels the recorded series keep: ``by``, and the profile's queue label at the end
    when ``by`` does not name it (a per-queue series without its queue is no use)."""
    return tuple(dict.fromkeys((*by, profile.queue_label)))


def runbook_anchor(base_url: str, alert: str) -> str:
    """The runbook of ``alert``: ``base_url`` with the anchor GitHub gives the heading
    ``### <alert>`` (the heading lower-cased; alert names are letters only)."""
    return f"{base_url}#{alert.lower()}"


_GROUPING = re.compile(
    r'"(?:[^"\\]|\\.)*"'           # a double-quoted string: kept as is
    r"|'(?:[^'\\]|\\.)*'"          # a single-quoted string
    r"|`[^`]*`"                    # a raw string
    r"|\b(by|on)\s*\(([^()]*)\)")
"""A PromQL string literal (a selector's value, a label_replace argument: any text, skipped)
or a grouping / matching clause and its label list."""


def widen_grouping(promql: str, queue_label: str, controller_label: str,
                   labels: Sequence[str]) -> str:
    """``promql`` with every grouping (``by``/``on``) that names the queue label naming
    ``labels`` instead (the queue label among them), and every one that names the controller
    label naming ``labels`` with the queue label replaced by the controller label; other
    labels of a clause (``le``, ``priority``) stay. String literals are never touched.

    E.g. labels ``cluster, name``: ``sum by (name) (rate(x[5m]))`` ->
    ``sum by (cluster, name) (rate(x[5m]))``, ``sum by (controller) (...)`` ->
    ``sum by (cluster, controller) (...)``."""
    on_controller = [controller_label if lb == queue_label else lb for lb in labels]

    def one(match: re.Match[str]) -> str:
        if match.group(1) is None:
            return match.group()
        named = [lb.strip() for lb in match.group(2).split(",") if lb.strip()]
        if queue_label not in named and controller_label not in named:
            return match.group()
        out: list[str] = []
        for lb in named:
            if lb == queue_label:
                out += labels
            elif lb == controller_label:
                out += on_controller
            else:
                out.append(lb)
        return f"{match.group(1)} ({', '.join(dict.fromkeys(out))})"

    return _GROUPING.sub(one, promql)


def recorded_names(profile: Profile, window_s: float,
                   by: Sequence[str] = DEFAULT_AGGREGATE_BY) -> dict[str, str]:
    """signal -> recorded series name (``cluster_namespace_job_name:workqueue_adds:rate5m``)
    for this profile, window and aggregation labels (:func:`group_labels` joined by ``_``)."""
    suffix = prometheus_duration(window_s)
    level = "_".join(group_labels(profile, by))
    return {
        signal: check_metric_name(f"{level}:{metric}:{op}{suffix}", "recorded series name")
        for signal, (metric, op) in _RECORDED.items()
    }


def _signal_queries(profile: Profile, window_s: float) -> dict[str, SignalQuery]:
    found = {s.signal: s for s in (*profile.queries(window_s), *profile.derived_queries(window_s))}
    return {signal: found[signal] for signal in _RECORDED if signal in found}


def build_rule_groups(
    profile: Profile, window_s: float, thresholds: AlertThresholds | None = None, *,
    by: Sequence[str] = DEFAULT_AGGREGATE_BY, runbook_url: str = DEFAULT_RUNBOOK_URL,
) -> list[RuleGroup]:
    """The recording group and the alerting group for ``profile`` with a ``window_s`` window,
    the recorded series keeping the labels ``by`` (:func:`group_labels`), each alert's
    ``runbook_url`` an anchor of ``runbook_url``.

    Signals the profile cannot express (utilization without a worker count, error ratio without
    controller-runtime metrics) are left out, together with the alerts that need them.
    """
    t = thresholds or AlertThresholds()
    labels = group_labels(profile, by)
    queries = _signal_queries(profile, window_s)
    names = {s: n for s, n in recorded_names(profile, window_s, labels).items() if s in queries}
    recording = [RecordingRule(names[s], widen_grouping(
        queries[s].promql, profile.queue_label, profile.controller_label, labels)) for s in names]
    alerts = [replace(a, runbook_url=runbook_anchor(runbook_url, a.alert)) for a in
              _alerts(names, profile.queue_label, ", ".join(labels),
                      prometheus_duration(window_s), t)]
    return [RuleGroup(GROUP_RECORDING, tuple(recording)), RuleGroup(GROUP_ALERTS, tuple(alerts))]


def _alerts(
    n: Mapping[str, str], queue_label: str, q: str, window: str, t: AlertThresholds
) -> list[AlertingRule]:
    """The alerts on the recorded series ``n``; ``q``: the labels they keep, for ``on (...)``."""
    queue = "{{ $labels." + queue_label + " }}"
    value = '{{ printf "%.2f" $value }}'
    percent = "{{ $value | humanizePercentage }}"
    out: list[AlertingRule] = []
    if "utilization" in n:
        out.append(AlertingRule(
            alert="WorkqueueSaturated",
            expr=f"{n['utilization']} >= {t.utilization:g}",
            for_s=t.saturation_for_s,
            severity="warning",
            summary=f"Work queue {queue} is saturated: workers busy {percent} of the time",
            description=(
                f"Busy workers / workers for {queue} has been at least {t.utilization:.0%} "
                f"(over {window} windows) for {prometheus_duration(t.saturation_for_s)}. "
                "Queue wait grows steeply near full utilization. Before adding workers, check "
                "for contention (API 409/429, client-side throttling) and a hot key: "
                "`queuelens advise` tells them apart."
            ),
        ))
    out.append(AlertingRule(
        alert="WorkqueueBacklogGrowing",
        verdict=Kind.BACKLOG_GROWING,
        expr=(
            f"({n['arrival_rate_per_s']} - {n['throughput_per_s']}) "
            f"> {t.backlog_excess_ratio:g} * {n['arrival_rate_per_s']} "
            f"and on ({q}) {n['depth_growth_per_s']} > 0"
        ),
        for_s=t.backlog_for_s,
        severity="warning",
        summary=f"Backlog of work queue {queue} grows by {value} items/s",
        description=(
            f"Distinct arrivals to {queue} exceed completed passes by {value}/s and the depth "
            f"keeps rising ({prometheus_duration(t.backlog_for_s)}). Waiting work grows "
            "without bound until arrivals fall or capacity rises; more workers help only up "
            "to the contention / dependency ceiling."
        ),
    ))
    storm = f"{n['retries_per_s']} / {n['arrival_rate_per_s']} >= {t.retries_per_add:g}"
    if "error_ratio" in n:
        storm = f"{n['error_ratio']} >= {t.error_ratio:g} and on ({q}) {storm}"
        why = (f"At least {t.error_ratio:.0%} of reconciles of {queue} fail and retries make "
               f"up at least {t.retries_per_add:.0%} of its adds")
    else:
        why = (f"Retries (delayed re-adds, which include planned requeues) make up at least "
               f"{t.retries_per_add:.0%} of the adds of {queue}")
    out.append(AlertingRule(
        alert="WorkqueueRetryStorm",
        verdict=Kind.RETRY_STORM,
        expr=storm,
        for_s=t.retry_storm_for_s,
        severity="warning",
        summary=f"Retry storm on work queue {queue}",
        description=(
            f"{why} ({prometheus_duration(t.retry_storm_for_s)}). Fix the cause rather than "
            "adding workers: set a condition instead of retrying non-retriable failures "
            "(auth, invalid spec), and put a global or per-dependency limit with jitter on "
            "retries."
        ),
    ))
    out.append(AlertingRule(
        alert="WorkqueueStuckWorkers",
        verdict=Kind.STUCK_WORKERS,
        expr=(
            f"{n['unfinished_work_growth']} > {t.stuck_growth:g} "
            f"and on ({q}) {n['longest_running_s']} > {t.stuck_longest_running_s:g}"
        ),
        for_s=t.stuck_for_s,
        severity="critical",
        summary=f"Work queue {queue} has workers that do not finish",
        description=(
            f"Unfinished work on {queue} grows by {value} s/s (about that many in-flight items "
            "are not completing) and the longest-running item is older than "
            f"{prometheus_duration(t.stuck_longest_running_s)}. Look for a Get without Done "
            "on some return path, or a call without a timeout."
        ),
    ))
    return out


HEADER = (
    "# Prometheus rules for controller work queues, generated by `queuelens rules{args}`.\n"
    "# Regenerate instead of editing. Load with rule_files: in prometheus.yml, or upload to a\n"
    "# Thanos / Mimir ruler (see the queuelens README).\n"
)


READ_HEADER = (
    "# The group {group} holds the rates queuelens' reads send, at the windows {windows}\n"
    "# (the snapshot's, and the range read's at a {step} step). A read whose rate window is\n"
    "# one of these reads them instead of the raw counters; any other window reads raw.\n"
    "# Evaluate it every {interval} (its interval:, the step of the reads; never rarer): on\n"
    "# a live server a recorded point is then at most one interval older than the raw one\n"
    "# it stands for; evaluations on the reads' grid (vmalert, an aligned backfill) give\n"
    "# the raw values exactly.\n"
)


def render_yaml(groups: Sequence[RuleGroup], command_args: str = "", *,
                read_step_s: float | None = None) -> str:
    """The rules file text (``groups:``), with a header naming the command that made it
    (and, with a :data:`GROUP_READ` group, its windows and evaluation interval for reads at
    ``read_step_s``)."""
    body = yaml.safe_dump(
        {"groups": [g.as_dict() for g in groups]},
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000,
    )
    header = HEADER.format(args=command_args)
    read = next((g for g in groups if g.name == GROUP_READ), None)
    if read is not None and read.interval_s is not None and read_step_s is not None:
        windows = sorted({r.record.rsplit(":rate", 1)[1] for r in read.rules
                          if isinstance(r, RecordingRule)})
        header += READ_HEADER.format(group=GROUP_READ, windows=", ".join(windows),
                                     step=prometheus_duration(read_step_s),
                                     interval=prometheus_duration(read.interval_s))
    return header + body
