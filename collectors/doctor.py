"""Read what exists of the metric contract: for ``queuelens doctor`` and the ``/doctor`` page.

Two readers build the same :class:`models.contract.ContractReading` (typed raw data; the
judgement is :func:`models.contract.diagnose`'s):

* :func:`read_prometheus` sends **a few queries for the whole fleet** (:data:`QUERY_KEYS`,
  :func:`doctor_queries`),
  never one per queue or per metric, all evaluated at one time over one range:

  - ``presence``: how many series of each contract metric exist per queue and process —
    ``count by (queuelens_metric, <queue>, <controller>, <process labels>)`` over
    ``last_over_time(...[range:step])`` of every ``workqueue_*``, ``controller_runtime_*`` and
    ``rest_client_*`` name of the profile (histograms with ``_bucket``/``_sum``/``_count``),
    and per cluster, priority level and flow schema of the API server's (histograms by
    ``_count`` only);
  - ``unchanged``: the same groups of counters and histogram counts in which no series
    changed over the range (present ``unless`` ``changes(...) > 0``);
  - ``le``: the ``le`` texts of every histogram's buckets per process;
  - ``priorities``: per queue, the number of distinct ``priority`` values of the depth gauge
    and whether the ``exceeded_cardinality_limit`` placeholder exists;
  - ``up``: the scrape jobs (whether anything is scraped at all);
  - ``containers``: the kube-state-metrics and cAdvisor series (other jobs, by
    namespace/pod/container) of the controllers' pods — ``and on (pod)`` the pods of the
    adds counter, so the cluster's other containers are never sent — and ``pods``: which
    namespace, pod and container each process's series name (the join,
    :attr:`collectors.profile.Profile.container_labels`).
  - ``replicas``: which HA replica labels (:meth:`collectors.profile.Profile.replica_query`)
    the adds counters carry, with their values: with the presence counts (an adds counter
    counted twice per queue and process) the doctor tells an HA pair read without
    deduplication (``replica_copies``).

  The ``process_*``/``go_*`` metrics (family ``runtime``) are on every Go target: their
  presence, changes and ``le`` texts are read only for the processes that run a queue
  (``and on (<process labels>)`` the adds counter's processes).

  The metric name is copied into the label ``queuelens_metric`` with ``label_replace`` before
  any range function: ``changes()`` (and, in some engines, ``last_over_time()``) drops
  ``__name__``, and series of several names would then collide. The range functions run on a
  subquery (``[range:step]``, :func:`subquery_step_s`) so a 1 h look at a 15 s scrape loads
  60 points per series, not 240. The user's selector reaches each family by that family's own
  labels, exactly as :meth:`collectors.profile.Profile._sel` puts it on every other query.

* :func:`reading_from_exposition` parses exposition text (Prometheus text format or
  OpenMetrics, with or without timestamps; its own small parser, which keeps whatever is
  malformed — a histogram without ``+Inf`` is what the doctor must see, not a parse error)
  and groups its series the same way; :func:`read_demo` renders the demo fleet's metrics
  over the range (:func:`collectors.openmetrics.render_openmetrics`) and reads them so.

Names of metrics come only from ``profile.metrics`` (a config can override them).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from collectors.errors import ConfigError
from collectors.profile import (
    CONTAINER_LABELS,
    NOT_A_CONTAINER,
    Matcher,
    Profile,
    format_duration,
    parse_selector,
    regex_literal,
)
from models.contract import (
    CONTRACT_METRICS,
    ApiServerPresence,
    ContainerPresence,
    ContractMetric,
    ContractReading,
    LeSpelling,
    Presence,
    ProcessPod,
    QueuePriorities,
    ScrapeJob,
    changes_sample,
    samples_of,
)
from models.priority import CAPPED_PRIORITY

if TYPE_CHECKING:  # imported where used: the CLI's --help loads neither
    from collectors.demo import DemoSource
    from collectors.prom_client import PrometheusClient, Sample

NAME_LABEL = "queuelens_metric"
"""Where the metric name travels through range functions (they may drop ``__name__``)."""
PART_LABEL = "queuelens_part"
DEFAULT_RANGE_S = 3600.0
MIN_RANGE_S = 60.0
MAX_STEP_S = 300.0
"""A subquery step never above Prometheus's default lookback (5 m): each step's instant
selection then sees every sample."""
QUERY_KEYS = ("presence", "unchanged", "le", "priorities", "up", "containers", "pods",
              "replicas")


def subquery_step_s(range_s: float) -> float:
    """The subquery step of a range: range / 120, at least 60 s (one point a minute) and
    at most :data:`MAX_STEP_S`; a range under 4 minutes gets a quarter of it."""
    if range_s < 4 * 60:
        return max(1.0, math.floor(range_s / 4))
    return float(min(MAX_STEP_S, max(60.0, math.floor(range_s / 120))))


# --- what to read, from the contract and the profile ----------------------------------------


def metric_names(profile: Profile) -> dict[str, str]:
    """Contract metric key -> the name the profile reads (keys the profile lacks are left
    out)."""
    out: dict[str, str] = {}
    for m in CONTRACT_METRICS:
        name = getattr(profile.metrics, m.key, None)
        if isinstance(name, str) and name:
            out[m.key] = name
    return out


def _dedupe(labels: Iterable[str]) -> list[str]:
    out: list[str] = []
    for label in labels:
        if label not in out:
            out.append(label)
    return out


def group_labels(profile: Profile) -> tuple[str, ...]:
    """The labels a process is told by: the profile's process labels, then its cluster
    labels (as :meth:`Profile.topology_query` groups)."""
    return tuple(_dedupe((*profile.process_labels, *profile.cluster_labels)))


@dataclass(frozen=True)
class _Plan:
    """Which sample names each query reads, per family."""

    presence: Mapping[str, tuple[str, ...]]
    changes: Mapping[str, tuple[str, ...]]
    buckets: Mapping[str, tuple[str, ...]]
    family_of: Mapping[str, str]
    depth: str | None


def _plan(profile: Profile) -> _Plan:
    names = metric_names(profile)
    presence: dict[str, list[str]] = defaultdict(list)
    changes: dict[str, list[str]] = defaultdict(list)
    buckets: dict[str, list[str]] = defaultdict(list)
    family_of: dict[str, str] = {}

    def add(bucket: dict[str, list[str]], m: ContractMetric, sample: str) -> None:
        if family_of.setdefault(sample, m.family) == m.family and sample not in bucket[m.family]:
            bucket[m.family].append(sample)

    for m in CONTRACT_METRICS:
        name = names.get(m.key)
        if name is None:
            continue
        if m.family == "cluster":
            add(presence, m, changes_sample(m.key, name))
        else:
            for sample in samples_of(m.key, name):
                add(presence, m, sample)
            if m.kind == "histogram":
                add(buckets, m, name + "_bucket")
        if m.judge_changes:
            add(changes, m, changes_sample(m.key, name))
    return _Plan({k: tuple(v) for k, v in presence.items()},
                 {k: tuple(v) for k, v in changes.items()},
                 {k: tuple(v) for k, v in buckets.items()}, family_of, names.get("depth"))


def _family_selector(profile: Profile, family: str, samples: Sequence[str],
                     extra: Sequence[Matcher] = ()) -> str:
    """``{<the user's selector for this family>, __name__=~"a|b", ...}``: the profile's
    selector applied the way :meth:`Profile._sel` applies it to every other query."""
    regex = "|".join(regex_literal(s) for s in samples)
    return profile._sel((Matcher("__name__", "=~", regex), *extra), family)


def _by(profile: Profile, family: str, first: str = NAME_LABEL) -> str:
    if family == "cluster":
        labels = [first, *profile.cluster_labels, "priority_level", "flow_schema"]
    else:
        labels = [first, profile.queue_label, profile.controller_label, *group_labels(profile)]
    return ", ".join(_dedupe(labels))


def _renamed(selector: str) -> str:
    return f'label_replace({selector}, "{NAME_LABEL}", "$1", "__name__", "(.+)")'


def doctor_queries(profile: Profile, range_s: float) -> dict[str, str]:
    """The PromQL of a doctor reading (:data:`QUERY_KEYS`), each for the whole fleet."""
    if not (math.isfinite(range_s) and range_s >= MIN_RANGE_S):
        raise ConfigError(f"the doctor's range must be at least {MIN_RANGE_S:g} s, got "
                          f"{range_s!r}")
    plan = _plan(profile)
    r = format_duration(range_s)
    s = format_duration(subquery_step_s(range_s))
    window = f"[{r}:{s}]"
    presence: list[str] = []
    unchanged: list[str] = []
    le: list[str] = []
    gl = ", ".join(group_labels(profile))
    adds = profile.metrics.adds
    owners = f" and on ({gl}) count by ({gl}) (last_over_time({adds}{profile._sel()}[{r}]))"
    for family in ("queue", "controller", "process", "cluster", "runtime"):
        by = _by(profile, family)
        only = owners if family == "runtime" else ""
        select = "process" if family == "runtime" else family
        if plan.presence.get(family):
            sel = _renamed(_family_selector(profile, select, plan.presence[family]))
            presence.append(f"count by ({by}) (last_over_time({sel}{window}){only})")
        if plan.changes.get(family):
            sel = _renamed(_family_selector(profile, select, plan.changes[family]))
            unchanged.append(f"(count by ({by}) (last_over_time({sel}{window}){only}) unless "
                             f"count by ({by}) (changes({sel}{window}) > 0))")
        if plan.buckets.get(family):
            sel = _renamed(_family_selector(profile, select, plan.buckets[family]))
            le_by = ", ".join(_dedupe([NAME_LABEL, "le", *group_labels(profile)]))
            le.append(f"count by ({le_by}) (last_over_time({sel}{window}){only})")
    q = profile.queue_label
    proc = ", ".join(_dedupe([q, *group_labels(profile)]))
    queries = {"presence": " or ".join(presence), "unchanged": " or ".join(unchanged),
               "le": " or ".join(le)}
    containers = _containers_query(profile, plan, window, r)
    if containers:
        queries["containers"] = containers
        where = ", ".join(_dedupe([*group_labels(profile), *profile.container_labels]))
        queries["pods"] = (f"count by ({where}) (last_over_time({adds}{profile._sel()}"
                           f"[{r}]))")
    if plan.depth:
        named = profile._sel((Matcher("priority", "!=", ""),))
        capped = profile._sel((Matcher("priority", "=", CAPPED_PRIORITY),))
        distinct = (f"count by ({proc}) (count by ({proc}, priority) "
                    f"(last_over_time({plan.depth}{named}{window})))")
        cap = f"count by ({proc}) (last_over_time({plan.depth}{capped}{window}))"
        queries["priorities"] = (
            f'label_replace({distinct}, "{PART_LABEL}", "distinct", "{q}", "(.*)") or '
            f'label_replace({cap}, "{PART_LABEL}", "capped", "{q}", "(.*)")')
    queries["up"] = f"max by (job) (last_over_time(up{profile._sel(family='process')}{window}))"
    queries["replicas"] = profile.replica_query(range_s)
    return {k: v for k, v in queries.items() if v}


def _container_matchers(sample: str, profile: Profile) -> list[Matcher]:
    """The matchers that keep a container metric's series of real containers (and, for the
    limit, of the CPU in cores)."""
    out = [Matcher(CONTAINER_LABELS[2], "!=", v) for v in NOT_A_CONTAINER]
    if sample == profile.metrics.container_cpu_limit:
        out += [Matcher("resource", "=", "cpu"), Matcher("unit", "=", "core")]
    return out


def _containers_query(profile: Profile, plan: _Plan, window: str, r: str) -> str | None:
    """The kube-state-metrics and cAdvisor series of the controllers' pods, by sample,
    cluster labels, namespace, pod and container (the cluster-family selector: those series
    carry none of the controllers' labels)."""
    samples = plan.presence.get("container", ())
    if not samples:
        return None
    by = ", ".join(_dedupe([NAME_LABEL, *profile.cluster_labels, *CONTAINER_LABELS]))
    terms = []
    for sample in samples:
        sel = profile._sel((Matcher("__name__", "=", sample),
                            *_container_matchers(sample, profile)), "cluster")
        terms.append(f"last_over_time({_renamed(sel)}{window})")
    pods = profile._controller_pods(r, profile._sel())
    return f"count by ({by}) (({' or '.join(terms)}){pods})"


# --- building the reading -----------------------------------------------------------------


def _selector_text(profile: Profile) -> str:
    return "{" + ", ".join(m.render() for m in profile.selector) + "}" if profile.selector else ""


def _configured(profile: Profile, queues: Iterable[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for q in sorted(set(queues)):
        count = profile.configured_workers(q)
        if count is not None:
            out[q] = float(count)
    return out


def _reading(profile: Profile, *, source: str, at: float, range_s: float,
             present: Sequence[Presence], unchanged: Sequence[Presence],
             le: Sequence[LeSpelling], priorities: Sequence[QueuePriorities],
             apiserver: Sequence[ApiServerPresence],
             apiserver_unchanged: Sequence[ApiServerPresence],
             scrape_jobs: Sequence[ScrapeJob] | None, changes_known: bool,
             queries: Sequence[str] = (), warnings: Sequence[str] = (),
             containers: Sequence[ContainerPresence] = (),
             pods: Sequence[ProcessPod] = (),
             replicas: Mapping[str, tuple[str, ...]] | None = None) -> ContractReading:
    queues = {p.queue for p in present if p.queue} | {p.controller for p in present
                                                      if p.controller}
    return ContractReading(
        source=source, at=at, range_s=range_s, names=metric_names(profile),
        profile=profile.name, queue_label=profile.queue_label,
        controller_label=profile.controller_label, process_labels=group_labels(profile),
        cluster_labels=tuple(profile.cluster_labels), priority_level=profile.priority_level,
        flow_schema=profile.flow_schema, selector=_selector_text(profile),
        configured_workers=_configured(profile, queues),
        present=tuple(sorted(present, key=_presence_key)),
        unchanged=tuple(sorted(unchanged, key=_presence_key)),
        le=tuple(sorted(le, key=lambda x: (x.process, x.sample, x.le))),
        priorities=tuple(sorted(priorities, key=lambda x: (x.process, x.queue))),
        apiserver=tuple(sorted(apiserver, key=_api_key)),
        apiserver_unchanged=tuple(sorted(apiserver_unchanged, key=_api_key)),
        scrape_jobs=None if scrape_jobs is None else tuple(sorted(scrape_jobs,
                                                                  key=lambda j: j.job)),
        containers=tuple(sorted(containers, key=lambda c: (c.cluster, c.namespace, c.pod,
                                                           c.container, c.sample))),
        pods=tuple(sorted(set(pods), key=lambda x: (x.process, x.namespace, x.pod,
                                                    x.container))),
        container_labels=profile.container_labels,
        changes_known=changes_known, queries=tuple(queries), warnings=tuple(warnings),
        replicas=dict(replicas or {}), replica_label=profile.replica_label)


def _presence_key(p: Presence) -> tuple[Any, ...]:
    return (p.process, p.queue, p.controller, p.sample)


def _api_key(a: ApiServerPresence) -> tuple[Any, ...]:
    return (a.cluster, a.priority_level, a.flow_schema, a.sample)


def _count(value: float | None) -> int:
    return int(value) if value is not None and math.isfinite(value) else 0


def read_prometheus(client: PrometheusClient, profile: Profile, at: float,
                    range_s: float = DEFAULT_RANGE_S) -> ContractReading:
    """The reading from a Prometheus-compatible API (``client``: a
    :class:`collectors.prom_client.PrometheusClient`): :func:`doctor_queries`, one after
    the other at ``at``, in one query group (the caller's deadline applies)."""
    from collectors.deadlines import query_group
    from collectors.prom_client import InstantResult

    if not math.isfinite(at):
        raise ConfigError(f"the evaluation time must be a finite unix time, got {at!r}")
    queries = doctor_queries(profile, range_s)
    plan = _plan(profile)
    cluster_samples = set(plan.presence.get("cluster", ()))
    gl = group_labels(profile)
    ql, cl = profile.queue_label, profile.controller_label
    results: dict[str, InstantResult] = {}
    with query_group():
        for key, promql in queries.items():
            results[key] = client.query(promql, at)
    warnings: list[str] = []
    for res in results.values():
        for w in res.warnings:
            if w not in warnings:
                warnings.append(w)

    def split(samples: Iterable[Sample]) -> tuple[list[Presence], list[ApiServerPresence]]:
        rows: list[Presence] = []
        api: list[ApiServerPresence] = []
        for smp in samples:
            lb = smp.labels
            name = lb.get(NAME_LABEL, "")
            if not name:
                continue
            if name in cluster_samples:
                api.append(ApiServerPresence(
                    sample=name, cluster=tuple(lb.get(c, "") for c in profile.cluster_labels),
                    priority_level=lb.get("priority_level", ""),
                    flow_schema=lb.get("flow_schema", ""), series=_count(smp.value)))
            else:
                rows.append(Presence(sample=name, queue=lb.get(ql, ""),
                                     controller=lb.get(cl, ""),
                                     process=tuple(lb.get(g, "") for g in gl),
                                     series=_count(smp.value)))
        return rows, api

    empty: list[Sample] = []
    present, api = split(results["presence"].samples if "presence" in results else empty)
    unchanged, api_unchanged = split(results["unchanged"].samples
                                     if "unchanged" in results else empty)
    le = [LeSpelling(sample=smp.labels.get(NAME_LABEL, ""), le=smp.labels.get("le", ""),
                     process=tuple(smp.labels.get(g, "") for g in gl), series=_count(smp.value))
          for smp in (results["le"].samples if "le" in results else empty)]
    prio: dict[tuple[str, tuple[str, ...]], dict[str, int]] = defaultdict(dict)
    for smp in results["priorities"].samples if "priorities" in results else empty:
        where = (smp.labels.get(ql, ""), tuple(smp.labels.get(g, "") for g in gl))
        prio[where][smp.labels.get(PART_LABEL, "")] = _count(smp.value)
    priorities = [QueuePriorities(queue=q, process=p, distinct=parts.get("distinct", 0),
                                  capped=parts.get("capped", 0) > 0)
                  for (q, p), parts in prio.items()]
    jobs = [ScrapeJob(job=smp.labels.get("job", ""), up=(smp.value or 0) > 0)
            for smp in (results["up"].samples if "up" in results else empty)]
    ns, pod, ctr = CONTAINER_LABELS
    containers = [ContainerPresence(
        sample=smp.labels.get(NAME_LABEL, ""), namespace=smp.labels.get(ns, ""),
        pod=smp.labels.get(pod, ""), container=smp.labels.get(ctr, ""),
        cluster=tuple(smp.labels.get(c, "") for c in profile.cluster_labels),
        series=_count(smp.value))
        for smp in (results["containers"].samples if "containers" in results else empty)]
    pods = [_process_pod(profile, smp.labels)
            for smp in (results["pods"].samples if "pods" in results else empty)]
    replica_rows = results["replicas"].samples if "replicas" in results else empty
    replicas = {lb: tuple(sorted(vals)) for lb in profile.replica_labels()
                if (vals := {smp.labels.get(lb, "") for smp in replica_rows} - {""})}
    return _reading(profile, source=client.source, at=at, range_s=range_s, present=present,
                    unchanged=unchanged, le=le, priorities=priorities, apiserver=api,
                    apiserver_unchanged=api_unchanged, scrape_jobs=jobs, changes_known=True,
                    queries=tuple(queries.values()), warnings=warnings,
                    containers=containers, pods=pods, replicas=replicas)


def _process_pod(profile: Profile, labels: Mapping[str, str]) -> ProcessPod:
    """The namespace, pod and container one process's series name."""
    ns, pod, ctr = profile.container_labels
    return ProcessPod(process=tuple(labels.get(g, "") for g in group_labels(profile)),
                      namespace=labels.get(ns, ""), pod=labels.get(pod, ""),
                      container=labels.get(ctr, ""))


# --- exposition text ----------------------------------------------------------------------


@dataclass(frozen=True)
class ExpositionSeries:
    """One series of exposition text: its values in the order of their timestamps."""

    sample: str
    labels: Mapping[str, str]
    values: tuple[float, ...]
    times: tuple[float | None, ...]


_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_UNESCAPE = {"\\": "\\", '"': '"', "n": "\n"}
MAX_BAD_LINES_NOTED = 3


def _parse_labels(line: str, pos: int) -> tuple[dict[str, str], int]:
    labels: dict[str, str] = {}
    pos += 1  # "{"
    while True:
        while pos < len(line) and line[pos] in " \t":
            pos += 1
        if pos < len(line) and line[pos] == "}":
            return labels, pos + 1
        m = _LABEL.match(line, pos)
        if not m:
            raise ValueError("expected a label name")
        label, pos = m.group(), m.end()
        while pos < len(line) and line[pos] in " \t":
            pos += 1
        if pos >= len(line) or line[pos] != "=":
            raise ValueError("expected =")
        pos += 1
        while pos < len(line) and line[pos] in " \t":
            pos += 1
        if pos >= len(line) or line[pos] != '"':
            raise ValueError("expected a quoted label value")
        pos += 1
        out: list[str] = []
        while True:
            if pos >= len(line):
                raise ValueError("unterminated label value")
            ch = line[pos]
            if ch == "\\" and pos + 1 < len(line):
                out.append(_UNESCAPE.get(line[pos + 1], "\\" + line[pos + 1]))
                pos += 2
                continue
            if ch == '"':
                pos += 1
                break
            out.append(ch)
            pos += 1
        labels[label] = "".join(out)
        while pos < len(line) and line[pos] in " \t":
            pos += 1
        if pos < len(line) and line[pos] == ",":
            pos += 1
            continue
        if pos < len(line) and line[pos] == "}":
            return labels, pos + 1
        raise ValueError("expected , or }")


def parse_exposition(text: str) -> tuple[list[ExpositionSeries], list[str]]:
    """(series, warnings) of Prometheus text-format or OpenMetrics text. Timestamps are
    seconds in OpenMetrics (text ending in ``# EOF``) and milliseconds in the text format.
    A line that cannot be parsed is skipped and counted in a warning, never fatal."""
    openmetrics = text.rstrip().endswith("# EOF")
    points: dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[float | None, float]]] = {}
    bad: list[int] = []
    # lines end at "\n" only: a raw CR (or another line separator str.splitlines knows) may
    # sit inside a label value
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            m = _NAME.match(line)
            if not m:
                raise ValueError("expected a metric name")
            name, pos = m.group(), m.end()
            labels: dict[str, str] = {}
            if pos < len(line) and line[pos] == "{":
                labels, pos = _parse_labels(line, pos)
            rest = line[pos:].split(" # ", 1)[0].split()
            if not rest or len(rest) > 2:
                raise ValueError("expected a value and at most a timestamp")
            value = float(rest[0])
            ts: float | None = None
            if len(rest) == 2:
                ts = float(rest[1]) if openmetrics else float(rest[1]) / 1000.0
        except (ValueError, IndexError):
            bad.append(number)
            continue
        key = (name, tuple(sorted(labels.items())))
        points.setdefault(key, []).append((ts, value))
    out = []
    for (name, labels_t), pts in points.items():
        if all(t is not None for t, _ in pts):
            pts.sort(key=lambda p: p[0] or 0.0)
        out.append(ExpositionSeries(sample=name, labels=dict(labels_t),
                                    values=tuple(v for _, v in pts),
                                    times=tuple(t for t, _ in pts)))
    warnings = []
    if bad:
        shown = ", ".join(str(n) for n in bad[:MAX_BAD_LINES_NOTED])
        more = f" and {len(bad) - MAX_BAD_LINES_NOTED} more" if len(bad) > 3 else ""
        warnings.append(f"{len(bad)} line{'s' if len(bad) != 1 else ''} of the exposition "
                        f"could not be parsed and were skipped (line {shown}{more})")
    return out, warnings


def _matches(labels: Mapping[str, str], matchers: Sequence[Matcher]) -> bool:
    for m in matchers:
        value = labels.get(m.label, "")
        if m.op == "=" and value != m.value:
            return False
        if m.op == "!=" and value == m.value:
            return False
        if m.op == "=~" and re.fullmatch(m.value, value) is None:
            return False
        if m.op == "!~" and re.fullmatch(m.value, value) is not None:
            return False
    return True


def _changed(values: Sequence[float]) -> bool:
    finite = {v for v in values if not math.isnan(v)}
    return len(finite) > 1


def reading_from_series(series: Iterable[ExpositionSeries], profile: Profile, *, source: str,
                        at: float, range_s: float, warnings: Sequence[str] = ()
                        ) -> ContractReading:
    """The reading of parsed exposition series, grouped as the Prometheus queries group
    (samples at or before ``at`` and within ``range_s`` of it, when they have timestamps)."""
    plan = _plan(profile)
    matchers = {f: parse_selector(profile._sel(family=f))
                for f in ("queue", "controller", "process", "cluster")}
    matchers["runtime"] = matchers["process"]
    matchers["container"] = matchers["cluster"]
    containers: dict[ContainerPresence, int] = defaultdict(int)
    pods: set[ProcessPod] = set()
    c_ns, c_pod, c_ctr = CONTAINER_LABELS
    presence_of = {s: f for f, samples in plan.presence.items() for s in samples}
    changes_of = {s for samples in plan.changes.values() for s in samples}
    buckets_of = {s for samples in plan.buckets.values() for s in samples}
    gl = group_labels(profile)
    ql, cl = profile.queue_label, profile.controller_label
    groups: dict[Presence, int] = defaultdict(int)
    moved: dict[Presence, bool] = defaultdict(bool)
    api: dict[ApiServerPresence, int] = defaultdict(int)
    api_moved: dict[ApiServerPresence, bool] = defaultdict(bool)
    le: dict[LeSpelling, int] = defaultdict(int)
    prio: dict[tuple[str, tuple[str, ...]], set[str]] = defaultdict(set)
    multi = False
    for s in series:
        family = plan.family_of.get(s.sample)
        if family is None or not _matches(s.labels, matchers[family]):
            continue
        keep = [i for i, t in enumerate(s.times)
                if t is None or at - range_s <= t <= at]
        if not keep:
            continue
        values = [s.values[i] for i in keep]
        multi = multi or len(values) > 1
        lb = s.labels
        process = tuple(lb.get(g, "") for g in gl)
        if s.sample == profile.metrics.adds:
            pods.add(_process_pod(profile, lb))
        if family == "container":
            if _matches(lb, _container_matchers(s.sample, profile)):
                containers[ContainerPresence(
                    sample=s.sample, namespace=lb.get(c_ns, ""), pod=lb.get(c_pod, ""),
                    container=lb.get(c_ctr, ""),
                    cluster=tuple(lb.get(c, "") for c in profile.cluster_labels))] += 1
            continue
        if family == "cluster":
            if s.sample in presence_of:
                key = ApiServerPresence(sample=s.sample, cluster=tuple(
                    lb.get(c, "") for c in profile.cluster_labels),
                    priority_level=lb.get("priority_level", ""),
                    flow_schema=lb.get("flow_schema", ""), series=1)
                api[key] += 1
                api_moved[key] = api_moved[key] or _changed(values)
            continue
        if s.sample in presence_of:
            key2 = Presence(sample=s.sample, queue=lb.get(ql, ""), controller=lb.get(cl, ""),
                            process=process, series=1)
            groups[key2] += 1
            if s.sample in changes_of:
                moved[key2] = moved[key2] or _changed(values)
        if s.sample in buckets_of:
            le[LeSpelling(sample=s.sample, le=lb.get("le", ""), process=process)] += 1
        if s.sample == plan.depth and lb.get("priority", ""):
            prio[(lb.get(ql, ""), process)].add(lb["priority"])

    def with_count(p: Presence, n: int) -> Presence:
        return Presence(p.sample, p.queue, p.controller, p.process, n)

    def api_count(a: ApiServerPresence, n: int) -> ApiServerPresence:
        return ApiServerPresence(a.sample, a.cluster, a.priority_level, a.flow_schema, n)

    present = [with_count(p, n) for p, n in groups.items()]
    unchanged = [with_count(p, n) for p, n in groups.items()
                 if p.sample in changes_of and not moved[p]]
    apis = [api_count(a, n) for a, n in api.items()]
    api_unchanged = [api_count(a, n) for a, n in api.items()
                     if a.sample in changes_of and not api_moved[a]]
    spellings = [LeSpelling(k.sample, k.le, k.process, n) for k, n in le.items()]
    priorities = [QueuePriorities(queue=q, process=p, distinct=len(values),
                                  capped=CAPPED_PRIORITY in values)
                  for (q, p), values in prio.items()]
    notes = list(warnings)
    if not multi and (present or apis):
        notes.append("every series has one sample (one scrape): whether a series ever "
                     "changes cannot be told, so no signal is judged empty")
    return _reading(profile, source=source, at=at, range_s=range_s, present=present,
                    unchanged=unchanged, le=spellings, priorities=priorities, apiserver=apis,
                    apiserver_unchanged=api_unchanged, scrape_jobs=None, changes_known=multi,
                    warnings=notes, pods=sorted(pods, key=lambda x: (x.process, x.pod)),
                    containers=[ContainerPresence(c.sample, c.namespace, c.pod, c.container,
                                                  c.cluster, n)
                                for c, n in containers.items()])


def reading_from_exposition(text: str, profile: Profile, *, source: str, at: float,
                            range_s: float = DEFAULT_RANGE_S) -> ContractReading:
    """:func:`reading_from_series` of :func:`parse_exposition`."""
    series, warnings = parse_exposition(text)
    return reading_from_series(series, profile, source=source, at=at, range_s=range_s,
                               warnings=warnings)


def read_demo(demo: DemoSource, profile: Profile, at: float,
              range_s: float = DEFAULT_RANGE_S) -> ContractReading:
    """The demo fleet's metrics (``demo``: a :class:`collectors.demo.DemoSource`) rendered
    as OpenMetrics text every :func:`subquery_step_s` over the range ending at ``at``, and
    read like any exposition."""
    from collectors.demo import LAST_S
    from collectors.openmetrics import render_openmetrics
    from models import fleet as fl

    if not (math.isfinite(range_s) and range_s >= MIN_RANGE_S):
        raise ConfigError(f"the doctor's range must be at least {MIN_RANGE_S:g} s, got "
                          f"{range_s!r}")
    if not math.isfinite(at) or at - range_s < fl.EPOCH_S or at > LAST_S:
        raise ConfigError("the demo data run from 2020-01-01T00:00:00Z to "
                          "9999-12-31T23:59:59Z; the doctor's range must lie inside them")
    step = subquery_step_s(range_s)
    text = render_openmetrics(demo.fleet, at - range_s, at + step / 2, step)
    return reading_from_exposition(text, profile, source=demo.name, at=at, range_s=range_s)


def read_contract(source: Any, at: float, range_s: float = DEFAULT_RANGE_S,
                  profile: Profile | None = None) -> ContractReading:
    """The reading of any queuelens source: a Prometheus source (its client and profile,
    within the source's command budget when it has one), the demo (``profile``, default
    the controller-runtime one), or any object with ``contract_reading(at, range_s)``; the
    app's shared cache is looked through (a doctor reading is not cached there)."""
    from collectors.cache import CachedSource
    from collectors.demo import DemoSource
    from collectors.snapshot import PrometheusSource

    inner = source.source if isinstance(source, CachedSource) else source
    if isinstance(inner, PrometheusSource):
        with _budget(inner):
            return read_prometheus(inner.client, inner.profile, at, range_s)
    if isinstance(inner, DemoSource):
        return read_demo(inner, profile or Profile(), at, range_s)
    reader = getattr(inner, "contract_reading", None)
    if callable(reader):
        reading: ContractReading = reader(at, range_s)
        return reading
    name = getattr(inner, "name", type(inner).__name__)
    raise ConfigError(f"the doctor cannot read the source {name!r}: it reads Prometheus or "
                      "the demo")


def _budget(source: Any) -> AbstractContextManager[object]:
    """The source's command budget (``--deadline``), as its own reads get it."""
    from collectors.deadlines import Deadline, deadline_scope

    if getattr(source, "budget_s", None) is None:
        return nullcontext()
    scope: AbstractContextManager[object] = deadline_scope(Deadline.after(
        source.budget_s, source.budget_what, source.budget_hint))
    return scope


@dataclass(frozen=True)
class RecordedPresence:
    """The recorded series of ``queuelens rules --recording`` that the reads would use: one
    presence query (:meth:`collectors.profile.Profile.recorded_presence_query`) at ``at``."""

    windows: Mapping[str, int]
    """Window (as the names carry it, ``1m15s``) -> how many of the recorded rates' names
    have a series at it; empty: none at all (every read sends the raw counters)."""
    expected: int
    """The recorded rates of one window for this profile (a complete window has them all)."""
    unusable: str | None = None
    """Why the reads would not use them whatever is present (turned off, or a selector on a
    label they do not keep); nothing is queried then."""
    query: str | None = None


def read_recorded(source: Any, at: float) -> RecordedPresence | None:
    """The recorded series a Prometheus source's reads would find at ``at`` (through the
    app's shared cache too); None for a source that reads no Prometheus (the demo)."""
    from collectors.cache import CachedSource
    from collectors.deadlines import query_group
    from collectors.snapshot import PrometheusSource

    inner = source.source if isinstance(source, CachedSource) else source
    if not isinstance(inner, PrometheusSource):
        return None
    if not math.isfinite(at):
        raise ConfigError(f"the evaluation time must be a finite unix time, got {at!r}")
    profile = inner.profile
    expected = len({r for rates in profile.read_rates().values() for r in rates})
    promql = profile.recorded_presence_query()
    if promql is None:
        return RecordedPresence({}, expected, profile.recorded_unusable())
    with _budget(inner), query_group():
        samples = inner.client.query(promql, at).samples
    names = {smp.labels.get("__name__", "") for smp in samples}
    return RecordedPresence(profile.recorded_windows(names), expected, query=promql)
