"""The process-wide signals and which queue they belong to: the topology query says which
process (the profile's process labels) runs which queue; ``rest_client_*`` and the other
per-process metrics have no controller label, so their rows are per process
(:class:`Processes`); the controller's own CPU comes from the process's counters or its
container's cgroup metrics (:class:`Cpu`, the container chosen by :class:`_Containers`)."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from collectors.decoding import instant_rows, note_dropped, scatter_series
from collectors.histogram import parse_le
from collectors.profile import (
    CONTAINER_LABELS,
    CPU_PROCESS_SIGNALS,
    Profile,
    SignalQuery,
    code_class,
)
from collectors.prom_client import RangeResult, Sample
from models.histogram import bucket_quantile
from models.signals import DerivedSignals, ProcessSeries

__all__ = ["CPU_SCHED_Q", "Attributed", "Cpu", "Processes"]


@dataclass
class Attributed:
    """One process-wide metric decoded for :func:`models.signals.derive`."""

    series: ProcessSeries | None
    labelled: bool
    present: set[int]
    """Processes with at least one finite sample."""
    absent_reason: str
    empty: bool


class Processes:
    """Which process (the profile's process labels) runs which queue, from the topology query,
    and the process-wide series (``rest_client_*``: no controller label) as per-process rows for
    :func:`models.signals.derive` — for a snapshot (one column) and a range read alike.

    Without any process label on a metric's series, that metric's rows all go to one
    process-wide pseudo process that every queue is given (and a warning says so)."""

    def __init__(self, profile: Profile, topology: Sequence[Sample]) -> None:
        self.profile = profile
        self.plabels = profile.process_labels
        self.index: dict[tuple[str, ...], int] = {}
        self.of_name: dict[str, set[int]] = defaultdict(set)
        self.keys_of_name: dict[str, set[tuple[str, ...]]] = defaultdict(set)
        for smp in topology:
            q = smp.labels.get(profile.queue_label, "")
            key = self.key(smp.labels)
            self.of_name[q].add(self.process(key))
            self.keys_of_name[q].add(key)
        self.wide: int | None = None
        self.attributed: list[Attributed] = []
        self.notes: list[str] = []
        """Warnings about the process-wide answers (duplicated series)."""

    def key(self, labels: Mapping[str, str]) -> tuple[str, ...]:
        get = labels.get
        return tuple([get(lb, "") for lb in self.plabels])

    def process(self, key: tuple[str, ...]) -> int:
        return self.index.setdefault(key, len(self.index))

    @property
    def count(self) -> int:
        return len(self.index)

    @property
    def series(self) -> list[ProcessSeries]:
        return [a.series for a in self.attributed if a.series is not None]

    def series_for(self, processes: np.ndarray) -> list[ProcessSeries]:
        """:attr:`series` restricted to the rows of ``processes`` (a batch of a range read
        needs only its own queues' processes, not the whole fleet's)."""
        out = []
        for ps in self.series:
            keep = np.isin(ps.process, processes)
            out.append(dataclasses.replace(
                ps, process=ps.process[keep], values=ps.values[keep],
                class_of=None if ps.class_of is None else ps.class_of[keep]))
        return out

    def pairs(self, order: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(row, process) for every queue of ``order`` and each process that runs it."""
        q_idx: list[int] = []
        p_idx: list[int] = []
        for r, q in enumerate(order):
            for pi in self.of_name.get(q, ()):
                q_idx.append(r)
                p_idx.append(pi)
            if self.wide is not None:
                q_idx.append(r)
                p_idx.append(self.wide)
        return np.array(q_idx, dtype=np.int64), np.array(p_idx, dtype=np.int64)

    def add(self, rows: Sequence[tuple[Mapping[str, str], np.ndarray]], total_field: str,
            sub_label: str | None = None, class_field: str = "", absent: str | None = None,
            classify: Callable[[str], str] = code_class) -> Attributed:
        """Rows (labels, values over the read's times) of one process-wide metric;
        ``absent``: why a queue has no value when the metric has no series; ``classify``:
        the class of a ``sub_label`` value (an HTTP code's class by default)."""
        m = self.profile.metrics
        if absent is None:
            absent = (f"no {m.rest_client_requests} series" if sub_label else
                      f"no {m.rate_limiter_duration}_sum series (stock controller-runtime "
                      "does not expose the client-side rate limiter histogram)")
        labelled = any(any(lb.get(p) for p in self.plabels) for lb, _ in rows)
        keys = [(self.key(lb), lb.get(sub_label, "") if sub_label else "") for lb, _ in rows]
        if len(set(keys)) < len(keys):
            counts = Counter(keys)
            twice = {k for k, n in counts.items() if n > 1}
            rows = [row for row, k in zip(rows, keys, strict=True) if k not in twice]
            shown = "; ".join(",".join(f"{lb}={v}" for lb, v in zip(self.plabels, k[0],
                                                                    strict=True) if v)
                              or "no process labels" for k in sorted(twice)[:3])
            self.notes.append(
                f"{total_field}: Prometheus returned the same series more than once ({shown}); "
                "their values are left out, not summed or picked (two Prometheus servers "
                "federated or merged by a proxy?)")
        finite = [(lb, v) for lb, v in rows if np.isfinite(v).any()]
        att = Attributed(None, labelled, set(), absent, not rows)
        if finite:
            if labelled:
                procs = [self.process(self.key(lb)) for lb, _ in finite]
            else:
                self.wide = self.process(("",) * (len(self.plabels) + 1))  # clashes with none
                procs = [self.wide] * len(finite)
            classes: tuple[str, ...] = ()
            class_of = None
            if sub_label:
                names = [classify(lb.get(sub_label, "")) for lb, _ in finite]
                classes = tuple(sorted(set(names)))
                class_of = np.array([classes.index(n) for n in names], dtype=np.int64)
            att.series = ProcessSeries(
                process=np.array(procs, dtype=np.int64),
                values=np.array([v for _, v in finite], dtype=np.float64),
                total_field=total_field, class_of=class_of, classes=classes,
                class_field=class_field)
            att.present = set(procs)
        self.attributed.append(att)
        return att

    def note(self, metric: str, att: Attributed) -> str | None:
        if att.series is not None and not att.labelled:
            return (f"{metric} has no {'/'.join(self.plabels)} labels: the process-wide total is "
                    "shown for every queue (it is shared by all controllers of the process)")
        return None

    def reason(self, q: str, att: Attributed) -> str | None:
        """Why queue ``q`` has no value of the attributed metric (None: it has one)."""
        if att.empty or att.series is None:
            return att.absent_reason
        if not att.labelled:
            return None
        procs = self.of_name.get(q)
        if not procs:
            return "cannot tell which process (job/instance) runs this queue"
        if not procs & att.present:
            where = ", ".join(f"{k}={v}" for k, v in self.process_labels(q).items())
            return f"{att.absent_reason} for the process running this queue ({where})"
        return None

    def process_labels(self, q: str) -> dict[str, str]:
        keys = sorted(self.keys_of_name.get(q, ()))
        out: dict[str, str] = {}
        for j, lb in enumerate(self.plabels):
            vals = sorted({k[j] for k in keys if k[j]})
            if vals:
                out[lb] = ",".join(vals)
        return out

    @classmethod
    def for_range(cls, profile: Profile, topology: Sequence[Sample],
                  results: Mapping[str, Any], t: np.ndarray, step: float,
                  warnings: list[str]) -> Processes:
        """The range answers of the process-wide queries of one batch of queues (their
        ``topology`` rows), decoded once."""
        procs = cls(profile, topology)
        for signal, total_field, sub, class_field, metric in (
                ("api_calls", "api_calls_per_s", "code", "api_calls_by_class_per_s",
                 profile.metrics.rest_client_requests),
                ("throttle_s_per_s", "throttle_s_per_s", None, "",
                 profile.metrics.rate_limiter_duration),
                ("cpu_used_cores", "cpu_used_cores", None, "",
                 profile.metrics.process_cpu)):
            if signal not in results:
                continue
            res: RangeResult = results[signal]
            note_dropped(signal, res, warnings)
            vals = np.full((len(res.labels), len(t)), np.nan)
            scatter_series(vals, res, np.arange(len(res.labels), dtype=np.int64), t, step)
            rows = list(zip(res.labels, vals, strict=True))
            text = procs.note(metric, procs.add(rows, total_field, sub, class_field))
            if text and text not in warnings:
                warnings.append(text)
        warnings += [n for n in procs.notes if n not in warnings]
        return procs


CPU_SCHED_Q = 0.99
"""The run-queue wait quantile reported (``cpu_sched_latency_p99_s``). client_golang's Go
collector exposes ``go_sched_latencies_seconds`` in buckets about ×11 apart (64 ns … 0.117 s,
the reference expositions): p99 is honest only as its bucket — which decade the tail of the
run-queue wait is in — so it goes out with :attr:`QueueSnapshot.quantile_bounds`."""


_CONTAINER_FIELDS: Mapping[str, str] = {
    "cpu_limit_cores": "cpu_limit_cores",
    "cpu_cfs_throttled_per_s": "cpu_throttled_share",
    "cpu_cfs_periods_per_s": "cpu_throttled_share",
}
"""Container query -> the snapshot field it feeds."""


class _Containers:
    """The controllers' containers, joined to their processes.

    The kube-state-metrics and cAdvisor series carry ``namespace``, ``pod`` and
    ``container`` (:data:`collectors.profile.CONTAINER_LABELS`), not the controller's
    job/instance; the topology answer gives each process its pod (and namespace and container
    where its series carry them: :attr:`Profile.container_labels`). The rule, per process:

    * its pod: the pod label of its series (no pod label: nothing is joined); its namespace:
      the namespace label of its series, else the one namespace a pod of that name has in the
      answers (a pod name in two namespaces and no namespace label: not joined);
    * its container: the container label of its series (the Prometheus Operator sets it),
      else the pod's one container (``kube_pod_container_info``, containers other than
      ``POD``/empty). A pod with several containers and no container label is *not* summed:
      the Go process runs in one of them, its GOMAXPROCS and its CFS quota are that
      container's, and a sidecar's limit (a kube-rbac-proxy's 500m) added in would state a
      ceiling the controller cannot use; nor is a container guessed from which containers have
      a limit (the controller's may be the one without);
    * a process whose series name several pods (process labels without ``pod``) gets the sum
      of its pods' containers, like its summed ``process_cpu_seconds_total``; every one must
      have the value, else the process has none (a partial sum would understate it)."""

    def __init__(self, profile: Profile, topology: Sequence[Sample], procs: Processes,
                 results: Mapping[str, Any], metric_of: Mapping[str, str]) -> None:
        self.profile = profile
        ns_l, pod_l, ctr_l = profile.container_labels
        clusters = profile.cluster_labels
        self.where: dict[tuple[str, ...], set[tuple[tuple[str, ...], str, str, str]]] = \
            defaultdict(set)
        for smp in topology:
            lb = smp.labels
            self.where[procs.key(lb)].add((tuple(lb.get(c, "") for c in clusters),
                                          lb.get(ns_l, ""), lb.get(pod_l, ""),
                                          lb.get(ctr_l, "")))
        ns, pod, ctr = CONTAINER_LABELS
        self.values: dict[str, dict[tuple[tuple[str, ...], str, str, str], float]] = {}
        self.namespaces: dict[tuple[tuple[str, ...], str], set[str]] = defaultdict(set)
        self.containers: dict[tuple[tuple[str, ...], str, str], set[str]] = defaultdict(set)
        for signal in ("cpu_pod_containers", *_CONTAINER_FIELDS):
            out: dict[tuple[tuple[str, ...], str, str, str], float] = {}
            for smp in results[signal].samples if signal in results else ():
                lb = smp.labels
                cl = tuple(lb.get(c, "") for c in clusters)
                key = (cl, lb.get(ns, ""), lb.get(pod, ""), lb.get(ctr, ""))
                self.namespaces[(cl, key[2])].add(key[1])
                if signal == "cpu_pod_containers":
                    self.containers[key[:3]].add(key[3])
                elif smp.value is not None:
                    out[key] = smp.value
            self.values[signal] = out
        self.metric_of = metric_of
        self.info_seen = bool(self.containers)

    def chosen(self, key: tuple[str, ...]
               ) -> tuple[list[tuple[tuple[str, ...], str, str, str]], str | None]:
        """The containers of process ``key`` (one per pod), or why they cannot be told."""
        ns_l, pod_l, ctr_l = self.profile.container_labels
        out = []
        for cl, ns, pod, ctr in sorted(self.where.get(key, ())):
            if not pod:
                return [], (f"the controller's series carry no {pod_l!r} label: its "
                            "container's kube-state-metrics and cAdvisor series cannot be "
                            "joined (profile labels.pod names the label)")
            if not ns:
                seen = sorted(self.namespaces.get((cl, pod), set()) - {""})
                if len(seen) > 1:
                    return [], (f"pod {pod!r} exists in {len(seen)} namespaces "
                                f"({', '.join(seen)}) and the controller's series carry no "
                                f"{ns_l!r} label: its container cannot be told")
                ns = seen[0] if seen else ""
            if not ctr:
                names = sorted(self.containers.get((cl, ns, pod), set()))
                if len(names) > 1:
                    return [], (f"pod {ns}/{pod} has {len(names)} containers "
                                f"({', '.join(names)}) and the controller's series carry no "
                                f"{ctr_l!r} label: the controller's container cannot be told "
                                "(a sidecar's CPU is not the controller's; relabel "
                                "__meta_kubernetes_pod_container_name to container)")
                if not names:
                    return [], (f"which container of pod {ns}/{pod} is the controller's is "
                                f"unknown: no {self.metric_of['cpu_pod_containers']} series "
                                "for the pod (kube-state-metrics not scraped by this "
                                f"Prometheus) and no {ctr_l!r} label on the controller's "
                                "series")
                ctr = names[0]
            out.append((cl, ns, pod, ctr))
        return out, None

    def rows(self, procs: Processes, signal: str
             ) -> tuple[list[tuple[Mapping[str, str], np.ndarray]], dict[int, str]]:
        """One row per process that has the value of ``signal`` (its containers' sum, under
        the process's labels) and, for the others, why not."""
        rows: list[tuple[Mapping[str, str], np.ndarray]] = []
        why: dict[int, str] = {}
        values = self.values[signal]
        metric = self.metric_of[signal]
        for key in self.where:
            idx = procs.process(key)
            containers, reason = self.chosen(key)
            total = 0.0
            for c in containers:
                value = values.get(c)
                if value is None:
                    reason = self._absent(signal, metric, c)
                    break
                total += value
            if reason is not None or not containers:
                why[idx] = reason or "not available"
                continue
            rows.append((dict(zip(procs.plabels, key, strict=True)), np.array([total])))
        return rows, why

    def _absent(self, signal: str, metric: str, c: tuple[tuple[str, ...], str, str, str]
                ) -> str:
        _, ns, pod, ctr = c
        where = f"container {ctr!r} of pod {ns}/{pod}" if ns else f"container {ctr!r} of pod {pod}"
        if signal == "cpu_limit_cores":
            if (c[0], ns, pod) in self.containers:
                return (f"{where} has no CPU limit (resources.limits.cpu unset: "
                        f"{metric}{{resource=\"cpu\"}} has no series for it)")
            return (f"no {metric}{{resource=\"cpu\"}} series for {where} "
                    "(kube-state-metrics not scraped by this Prometheus?)")
        return (f"no {metric} series for {where} (the kubelet's cAdvisor endpoint not scraped, "
                "or the container has no CPU limit: CFS periods are counted only under a "
                "quota)")


class Cpu:
    """The controller's CPU (issue 20) for each queue of a snapshot, from the optional
    per-process (``process_*``, ``go_*``) and per-container (kube-state-metrics, cAdvisor)
    answers.

    Every figure is attributed to the processes running the queue like the REST-client ones
    (:class:`Processes`): summed over them — cores used, GOMAXPROCS and the CPU limit add
    up over a queue's processes (several pods of one controller: a failover within the
    window, shards) — and the two ratios are pooled: the mean run-queue wait is Σ rate(_sum)
    ÷ Σ rate(_count), p99 comes from the summed bucket rates, the throttled share is
    Σ throttled periods ÷ Σ periods. A queue gets a figure only when every one of its
    processes has it (a partial sum against a whole one would mislead)."""

    def __init__(self, profile: Profile, results: Mapping[str, Any], procs: Processes,
                 by_signal: Mapping[str, SignalQuery]) -> None:
        self.procs = procs
        self.metric_of = {k: sq.metric for k, sq in by_signal.items()}
        self.read = any(k in by_signal for k in CPU_PROCESS_SIGNALS)
        self.att: dict[str, Attributed] = {}
        self.why: dict[str, dict[int, str]] = {}
        if not self.read:
            return
        fix = {
            "cpu_used_cores": " (client_golang's process collector: controller-runtime "
                              "registers it; Linux only)",
            "cpu_gomaxprocs": " (client_golang's Go collector with the runtime metrics, "
                              "as controller-runtime registers it)",
        }
        for signal in CPU_PROCESS_SIGNALS:
            rows = instant_rows(results[signal].samples) if signal in results else []
            metric = self.metric_of[signal]
            absent = f"no {metric} series{fix.get(signal, ' (client_golang Go collector)')}"
            if signal == "cpu_sched_buckets":
                self.att[signal] = procs.add(rows, signal, "le", "cpu_sched_bucket", absent,
                                             classify=str)
            else:
                self.att[signal] = procs.add(rows, signal, absent=absent)
        self.containers = _Containers(profile, results["topology"].samples, procs, results,
                                      self.metric_of)
        for signal in _CONTAINER_FIELDS:
            rows, why = self.containers.rows(procs, signal)
            metric = self.metric_of[signal]
            self.att[signal] = procs.add(rows, signal, absent=f"no {metric} series for the "
                                         "controllers' pods")
            self.why[signal] = why
        self.columns: dict[str, list[float]] = {}
        self.p99: tuple[list[float], list[float], list[float], list[bool]] | None = None

    def derived(self, derived: DerivedSignals) -> Cpu | None:
        """The per-queue columns of the derived read (and the run-queue wait's p99 for every
        queue in one :func:`models.histogram.bucket_quantile` call per bucket layout)."""
        if not self.read:
            return None
        for signal in (*CPU_PROCESS_SIGNALS, *_CONTAINER_FIELDS):
            col = derived.values.get(signal)
            if col is not None:
                self.columns[signal] = col[:, 0].tolist()
        prefix = "cpu_sched_bucket."
        les = [(parse_le(k[len(prefix):]), k) for k in derived.values if k.startswith(prefix)]
        cols = sorted((le, k) for le, k in les if le is not None)
        n = len(derived.queues)
        value, lo, hi = [math.nan] * n, [math.nan] * n, [math.nan] * n
        low = [False] * n
        if cols:
            counts = np.column_stack([derived.values[k][:, 0] for _, k in cols])
            bounds = np.array([le for le, _ in cols])
            have = np.isfinite(counts)
            layouts: dict[bytes, list[int]] = defaultdict(list)
            for i in range(n):
                if have[i].any():
                    layouts[have[i].tobytes()].append(i)
            for mask_bytes, rows in layouts.items():
                mask = np.frombuffer(mask_bytes, dtype=bool)
                picked = counts[np.ix_(np.array(rows, dtype=np.int64), np.flatnonzero(mask))]
                res = bucket_quantile(CPU_SCHED_Q, bounds[mask].tolist(), picked)
                for j, i in enumerate(rows):
                    value[i] = float(res.values[j])
                    lo[i], hi[i] = float(res.bucket_lo[j]), float(res.bucket_hi[j])
                    low[i] = bool(res.lower_bound[j])
        self.p99 = (value, lo, hi, low)
        return self

    def _value(self, signal: str, i: int, q: str) -> tuple[float | None, str | None]:
        """Queue ``q``'s (row ``i``) attributed value of ``signal`` or why it has none."""
        att = self.att[signal]
        reason = self.procs.reason(q, att)
        mine = self.procs.of_name.get(q, set())
        if reason is None and att.labelled:
            lacking = sorted(mine - att.present)
            if lacking:
                known = self.why.get(signal, {})
                reason = next((known[p] for p in lacking if p in known), None) or (
                    f"{att.absent_reason} for {len(lacking)} of the {len(mine)} processes "
                    "running this queue")
        elif reason is not None and signal in self.why:
            reason = next((self.why[signal][p] for p in sorted(mine) if p in self.why[signal]),
                          reason)
        if reason is not None:
            return None, reason
        v = self.columns.get(signal, [math.nan] * (i + 1))[i]
        return (v, None) if math.isfinite(v) else (None, "not available")

    def fields(self, i: int, q: str, warnings: list[str]
               ) -> tuple[dict[str, Any], dict[str, str], dict[str, tuple[float, float]]]:
        """(the CPU fields of queue ``q`` at row ``i``, why the missing ones are missing, the
        bucket of its run-queue wait p99)."""
        values: dict[str, Any] = {}
        missing: dict[str, str] = {}
        bounds: dict[str, tuple[float, float]] = {}

        def put(name: str, value: float | None, reason: str | None) -> None:
            if value is None:
                missing[name] = reason or "not available"
            else:
                values[name] = value

        put("cpu_used_cores", *self._value("cpu_used_cores", i, q))
        put("cpu_gomaxprocs", *self._value("cpu_gomaxprocs", i, q))
        put("cpu_limit_cores", *self._value("cpu_limit_cores", i, q))
        for name, num, den, zero in (
                ("cpu_sched_latency_mean_s", "cpu_sched_s_per_s", "cpu_sched_count_per_s",
                 "no goroutine was scheduled in the window (0/0)"),
                ("cpu_throttled_share", "cpu_cfs_throttled_per_s", "cpu_cfs_periods_per_s",
                 "the container ran no CFS period in the window (0/0)")):
            top, why_top = self._value(num, i, q)
            bottom, why_bottom = self._value(den, i, q)
            if top is None or bottom is None:
                put(name, None, why_top or why_bottom)
            else:
                put(name, top / bottom if bottom > 0 else None, zero)
        p99 = "cpu_sched_latency_p99_s"
        _, why_buckets = self._value("cpu_sched_buckets", i, q)
        if why_buckets is not None or self.p99 is None:
            put(p99, None, why_buckets)
        else:
            value, lo, hi, low = (part[i] for part in self.p99)
            if math.isfinite(value):
                values[p99] = value
                bounds[p99] = (lo, hi)
                if low:
                    warnings.append(
                        f"{q}: {p99} is a lower bound: more than 1 % of the run-queue waits "
                        f"took longer than the highest finite bucket of "
                        f"{self.metric_of['cpu_sched_buckets'].removesuffix('_bucket')} "
                        f"({value:g} s)")
            else:
                put(p99, None, f"{self.metric_of['cpu_sched_buckets']}: no observation in "
                               "the window, or no +Inf bucket")
        return values, missing, bounds
