"""``PrometheusSource``: the :class:`collectors.types.Source` backed by a Prometheus API.

A snapshot (or a range) issues one query per signal for all queues at once (the expressions are
in :mod:`collectors.profile`), so its cost does not grow with the number of queues. Queries of
one snapshot run concurrently; the first unavailability error aborts the snapshot.

What it does with the answers, and nothing more (collectors decide nothing):

* joins ``controller_runtime_*`` (keyed by ``controller``) and ``workqueue_*`` (keyed by
  ``name``; controller-runtime sets both to the controller name);
* attributes ``rest_client_*`` (per process, no controller label) to the queues running in the
  same job/instance; without those labels, the process-wide total is given to every queue and a
  warning says so;
* computes histogram quantiles from ``sum by (name, le) (rate(..._bucket[w]))`` exactly like
  PromQL's ``histogram_quantile`` (``le`` parsed as a float), flagging a quantile that falls in
  the ``+Inf`` bucket as a lower bound;
* flags scrape gaps: a queue whose window holds fewer than 90 % of the expected samples gets
  ``None`` (with the reason) for every rate, because ``rate()`` over a half-empty window
  under-reports;
* ``None`` + a reason in ``missing`` for whatever cannot be measured; NaN/±Inf never escape.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from collectors.errors import CollectorError
from collectors.histogram import QUANTILES, bucket_quantile, parse_le
from collectors.profile import Profile, SignalQuery, code_class, rate_window_s
from collectors.prom_client import (
    InstantResult,
    PrometheusClient,
    RangeResult,
    RangeSeries,
    Sample,
    plan_range,
)
from collectors.types import QueueSnapshot, RangeData, Snapshot

MIN_COVERAGE = 0.9
"""A rate window with fewer than this share of the expected samples is a scrape gap."""

RATE_FIELDS = (
    "arrival_rate_per_s", "throughput_per_s", "busy_workers", "service_mean_s", "utilization",
    "queue_wait_mean_s", "depth_mean", "retries_per_s", "errors_per_s", "unfinished_work_growth",
    "littles_law_ratio",
    *(f"queue_wait_{p}_s" for p, _ in QUANTILES), *(f"work_{p}_s" for p, _ in QUANTILES),
)

T = TypeVar("T")


# --- helpers ------------------------------------------------------------------------------


def _run_all(
    jobs: Mapping[str, Callable[[], T]], parallelism: int
) -> dict[str, T]:
    """Run the callables concurrently; the first exception cancels what has not started and
    is raised at once (running requests finish on their own within their timeout)."""
    if parallelism <= 1 or len(jobs) <= 1:
        return {k: fn() for k, fn in jobs.items()}
    pool = ThreadPoolExecutor(max_workers=min(parallelism, len(jobs)),
                              thread_name_prefix="queuelens-query")
    try:
        futures: dict[Future[T], str] = {pool.submit(fn): k for k, fn in jobs.items()}
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for fut in done:
            exc = fut.exception()
            if exc is not None:
                raise exc
        return {k: fut.result() for fut, k in futures.items()}
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


@dataclass
class _Reasons:
    missing: dict[str, str] = field(default_factory=dict)

    def take(self, name: str, value: float | None, reason: str | None) -> float | None:
        if value is None:
            self.missing[name] = reason or "not available"
        return value


def _special_reason(metric: str, special: str | None) -> str:
    if special == "NaN":
        return f"{metric}: NaN (no observations in the window, 0/0)"
    return f"{metric}: {special} (overflow)"


class PrometheusSource:
    """Snapshots and ranges of work-queue signals from a Prometheus-compatible API."""

    def __init__(self, client: PrometheusClient, profile: Profile | None = None) -> None:
        self.client = client
        self.profile = profile or Profile()

    @property
    def name(self) -> str:
        return self.client.source

    def close(self) -> None:
        self.client.close()

    # ------------------------------------------------------------------ snapshot

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        if not (math.isfinite(at) and math.isfinite(window_s) and window_s > 0):
            raise CollectorError(f"snapshot needs a finite time and a window > 0, got {at}, "
                                 f"{window_s}")
        profile = self.profile
        queries = profile.queries(window_s)
        client = self.client

        def instant(promql: str) -> Callable[[], InstantResult]:
            return lambda: client.query(promql, at)

        jobs = {sq.signal: instant(sq.promql) for sq in queries}
        jobs["topology"] = instant(profile.topology_query(window_s))
        for i, eff in enumerate(profile.external_effects):
            jobs[f"external:{i}"] = instant(eff.render(window_s))
        results = _run_all(jobs, self.client.settings.parallelism)

        warnings: list[str] = []
        for res in results.values():
            warnings += [w for w in res.warnings if w not in warnings]
        by_signal = {sq.signal: sq for sq in queries}
        ql, cl = profile.queue_label, profile.controller_label

        def keyed(signal: str) -> dict[str, Sample]:
            sq = by_signal.get(signal)
            if sq is None:
                return {}
            label = ql if sq.key.startswith("queue") else cl
            return {s.labels.get(label, ""): s for s in results[signal].samples}

        per_queue = {sq.signal: keyed(sq.signal) for sq in queries
                     if sq.key in ("queue", "controller")}
        buckets: dict[str, dict[str, list[tuple[float, float]]]] = {}
        for signal in ("queue_wait_buckets", "work_buckets"):
            acc: dict[str, list[tuple[float, float]]] = defaultdict(list)
            for s in results[signal].samples:
                le = parse_le(s.labels.get("le", ""))
                if le is not None:
                    acc[s.labels.get(ql, "")].append((le, math.nan if s.value is None else s.value))
            buckets[signal] = acc
        outcomes: dict[str, dict[str, float]] = defaultdict(dict)
        if "reconcile_results_per_s" in results:
            for s in results["reconcile_results_per_s"].samples:
                if s.value is not None:
                    outcomes[s.labels.get(cl, "")][s.labels.get("result", "")] = s.value

        names: set[str] = set()
        for samples in per_queue.values():
            names |= set(samples)
        for acc in buckets.values():
            names |= set(acc)
        names |= set(outcomes)
        if "" in names:
            names.discard("")
            warnings.append(
                f"some series have no {ql!r}/{cl!r} label and were ignored (check the profile's "
                "labels section)"
            )

        m = profile.metrics
        api = _ProcessAttribution(
            profile, results["api_calls"].samples, results["topology"].samples, "code",
            f"no {m.rest_client_requests} series")
        throttle = _ProcessAttribution(
            profile, results["throttle_s_per_s"].samples, results["topology"].samples, None,
            f"no {m.rate_limiter_duration}_sum series (stock controller-runtime does not expose "
            "the client-side rate limiter histogram)")
        for note in (api.note(m.rest_client_requests), throttle.note(m.rate_limiter_duration)):
            if note and note not in warnings:
                warnings.append(note)

        unknown = sorted(set(profile.workers) - names)
        if unknown:
            warnings.append(
                "the config sets workers for queue(s) not found in this snapshot (check the name "
                "and the selector): "
                + ", ".join(repr(u) for u in unknown)
            )
        coverage = self._coverage(per_queue.get("samples_in_window", {}), window_s)
        queues = [
            self._queue(q, per_queue, buckets, outcomes, api, throttle, results, coverage,
                        warnings, window_s)
            for q in sorted(names)
        ]
        return Snapshot(at=at, window_s=window_s, source=self.name, queues=queues,
                        warnings=tuple(warnings))

    def _coverage(self, samples: Mapping[str, Sample], window_s: float) -> dict[str, float]:
        counts = {q: s.value for q, s in samples.items() if s.value is not None and q}
        if not counts:
            return {}
        if self.profile.scrape_interval_s:
            expected = window_s / self.profile.scrape_interval_s
        else:
            expected = max(counts.values())
        return {q: min(1.0, n / expected) if expected > 0 else 1.0 for q, n in counts.items()}

    def _queue(
        self,
        q: str,
        per_queue: Mapping[str, Mapping[str, Sample]],
        buckets: Mapping[str, Mapping[str, list[tuple[float, float]]]],
        outcomes: Mapping[str, Mapping[str, float]],
        api: _ProcessAttribution,
        throttle: _ProcessAttribution,
        results: Mapping[str, InstantResult],
        coverage: Mapping[str, float],
        warnings: list[str],
        window_s: float,
    ) -> QueueSnapshot:
        profile = self.profile
        m = profile.metrics
        r = _Reasons()
        metric_of = {sq.signal: sq.metric for sq in profile.queries(window_s)}

        def get(signal: str, what: str | None = None) -> tuple[float | None, str | None]:
            metric = what or metric_of.get(signal, signal)
            if signal not in per_queue:
                return None, (f"{metric} is not read by the {profile.name} profile "
                              "(no controller_runtime_* metrics)")
            sample = per_queue[signal].get(q)
            if sample is None:
                label = profile.queue_label if signal not in (
                    "workers", "errors_per_s") else profile.controller_label
                return None, f"no {metric} series with {label}={q!r} in the window"
            if sample.value is None:
                return None, _special_reason(metric, sample.special)
            return sample.value, None

        arrival = r.take("arrival_rate_per_s", *get("arrival_rate_per_s"))
        throughput = r.take("throughput_per_s", *get("throughput_per_s"))
        busy = r.take("busy_workers", *get("busy_workers"))
        service = None
        if throughput is not None and busy is not None:
            if throughput > 0:
                service = busy / throughput
            else:
                r.missing["service_mean_s"] = "no completed items in the window"
        else:
            r.missing["service_mean_s"] = "needs throughput_per_s and busy_workers"

        workers, reason = get("workers")
        if workers is None:
            configured = profile.configured_workers(q)
            if configured is not None:
                workers = configured
            else:
                reason = (f"{reason}; no worker count for this queue in the config "
                          "(profile.workers)")
        r.take("workers", workers, reason)
        utilization = None
        if busy is not None and workers is not None and workers > 0:
            utilization = busy / workers
        else:
            r.missing["utilization"] = "needs busy_workers and workers"

        depth_mean = r.take("depth_mean", *get("depth_mean"))
        depth_current = r.take("depth_current", *get("depth_current"))
        wait_value, wait_reason = get("queue_wait_mean_s")
        if wait_value is None and wait_reason and "NaN" in wait_reason:
            wait_reason = f"{m.queue_duration}: no item left the queue in the window"
        wait_mean = r.take("queue_wait_mean_s", wait_value, wait_reason)

        quantiles: dict[str, float | None] = {}
        for signal, prefix, metric in (("queue_wait_buckets", "queue_wait", m.queue_duration),
                                       ("work_buckets", "work", m.work_duration)):
            pairs = buckets[signal].get(q)
            for p, qv in QUANTILES:
                name = f"{prefix}_{p}_s"
                if not pairs:
                    quantiles[name] = r.take(
                        name, None, f"no {metric}_bucket series with {profile.queue_label}={q!r}")
                    continue
                res = bucket_quantile(qv, [b for b, _ in pairs], np.array([[c for _, c in pairs]]))
                value = float(res.values[0])
                if math.isfinite(value):
                    quantiles[name] = value
                    if res.lower_bound[0]:
                        warnings.append(
                            f"{q}: {name} is a lower bound: more than {100 * (1 - qv):g} % of "
                            f"items took longer than the highest finite bucket of {metric} "
                            f"({value:g} s)"
                        )
                else:
                    quantiles[name] = r.take(name, None, f"{metric}: {res.reason or 'undefined'}")

        retries = r.take("retries_per_s", *get("retries_per_s"))
        errors = r.take("errors_per_s", *get("errors_per_s"))
        results_by_kind = dict(outcomes.get(q, {}))
        if not results_by_kind:
            r.missing["reconcile_results_per_s"] = (
                f"no {m.reconcile_total} series with {profile.controller_label}={q!r}"
                if profile.has_controller_metrics
                else f"{m.reconcile_total} is not read by the {profile.name} profile")

        api_total, api_classes, api_reason = api.for_queue(q)
        r.take("api_calls_per_s", api_total, api_reason)
        thr, _, thr_reason = throttle.for_queue(q)
        r.take("throttle_s_per_s", thr, thr_reason)
        external = r.take("external_effects_per_s", *self._external(q, results))
        unfinished = r.take("unfinished_work_s", *get("unfinished_work_s"))
        growth = r.take("unfinished_work_growth", *get("unfinished_work_growth"))
        longest = r.take("longest_running_s", *get("longest_running_s"))

        littles = None
        if depth_mean is not None and arrival is not None and wait_mean is not None:
            if arrival * wait_mean > 0:
                littles = depth_mean / (arrival * wait_mean)
            else:
                r.missing["littles_law_ratio"] = "arrival_rate_per_s × queue_wait_mean_s is 0"
        else:
            r.missing["littles_law_ratio"] = (
                "needs depth_mean, arrival_rate_per_s and queue_wait_mean_s")

        values: dict[str, Any] = {
            "arrival_rate_per_s": arrival, "throughput_per_s": throughput,
            "service_mean_s": service, "busy_workers": busy, "workers": workers,
            "utilization": utilization, "depth_mean": depth_mean, "depth_current": depth_current,
            "queue_wait_mean_s": wait_mean, **quantiles, "retries_per_s": retries,
            "errors_per_s": errors, "unfinished_work_s": unfinished,
            "unfinished_work_growth": growth, "longest_running_s": longest,
            "littles_law_ratio": littles,
        }

        cov = coverage.get(q)
        if cov is not None and cov < MIN_COVERAGE:
            n = per_queue["samples_in_window"][q].value
            reason = (f"scrape gap: only {n:g} samples ({100 * cov:.0f} % of those expected) in "
                      f"the {window_s:g} s window; a rate over it would be under-reported")
            for name in RATE_FIELDS:
                if values.get(name) is not None:
                    values[name] = None
                r.missing[name] = reason
            if results_by_kind:
                results_by_kind = {}
                r.missing["reconcile_results_per_s"] = reason
            warnings.append(f"{q}: {reason}; last values (depth, unfinished work) may be stale")

        labels = {profile.queue_label: q, **api.process_labels(q)}
        final = {**values, "api_calls_per_s": api_total, "throttle_s_per_s": thr,
                 "external_effects_per_s": external}
        return QueueSnapshot(
            queue=q,
            labels=labels,
            reconcile_results_per_s=results_by_kind,
            api_calls_by_class_per_s=api_classes,
            throttle_s_per_s=thr,
            api_calls_per_s=api_total,
            external_effects_per_s=external,
            missing={k: v for k, v in r.missing.items()
                     if k == "reconcile_results_per_s" or final.get(k) is None},
            **values,
        )

    def _external(self, q: str, results: Mapping[str, InstantResult]) -> tuple[float | None, str]:
        groups = [(i, e) for i, e in enumerate(self.profile.external_effects) if e.group.matches(q)]
        if not groups:
            return None, "no external-effects query is configured for this queue (profile." \
                         "external_effects)"
        ql, cl = self.profile.queue_label, self.profile.controller_label
        total: float | None = None
        for i, _ in groups:
            samples = results[f"external:{i}"].samples
            labelled = [s for s in samples if s.labels.get(ql) or s.labels.get(cl)]
            chosen = ([s for s in labelled if q in (s.labels.get(ql), s.labels.get(cl))]
                      if labelled else samples)
            vals = [s.value for s in chosen if s.value is not None]
            if vals:
                total = (total or 0.0) + sum(vals)
        if total is None:
            return None, "the external-effects query returned no finite value for this queue"
        return total, ""

    # ------------------------------------------------------------------ range

    def range_window_s(self, step_s: float) -> float:
        """Rate window for a range query: :func:`collectors.profile.rate_window_s` with the
        profile's scrape interval (15 s unless set)."""
        return rate_window_s(step_s, self.profile.scrape_interval_s or 15.0)

    def range(
        self, start: float, end: float, step_s: float, queues: Sequence[str] | None = None
    ) -> RangeData:
        try:
            a, b, step = plan_range(start, end, step_s)
        except ValueError as exc:
            raise CollectorError(f"invalid range: {exc}") from None
        profile = self.profile
        window = self.range_window_s(step)
        queries = profile.queries(window, queues)
        client = self.client

        def ranged(promql: str) -> Callable[[], Any]:
            return lambda: client.query_range(promql, a, b, step)

        jobs = {sq.signal: ranged(sq.promql) for sq in queries}
        topo = profile.topology_query(b - a + window, queues)
        jobs["topology"] = lambda: client.query(topo, b)
        for i, eff in enumerate(profile.external_effects):
            jobs[f"external:{i}"] = ranged(eff.render(window))
        results = _run_all(jobs, self.client.settings.parallelism)
        warnings: list[str] = []
        for res in results.values():
            warnings += [w for w in res.warnings if w not in warnings]
        if step != step_s:
            warnings.append(f"step widened from {step_s:g} s to {step} s (whole seconds, at most "
                            f"11,000 points per series)")
        frame = _RangeBuilder(profile, results, queries, queues, window).build(warnings)
        return RangeData(start=a, end=b, step_s=step, source=self.name, frame=frame,
                         warnings=tuple(warnings))


# --- process attribution (rest_client_* has no controller label) --------------------------


class _ProcessAttribution:
    """Per-process samples (job/instance[, code]) attributed to the queues of that process."""

    def __init__(self, profile: Profile, samples: Sequence[Sample], topology: Sequence[Sample],
                 sub_label: str | None, absent_reason: str):
        self.absent_reason = absent_reason
        self.profile = profile
        self.sub_label = sub_label
        self.plabels = profile.process_labels
        self.samples = [s for s in samples if s.value is not None]
        self.labelled = any(any(s.labels.get(lb) for lb in self.plabels) for s in samples)
        self.procs: dict[str, set[tuple[str, ...]]] = defaultdict(set)
        for s in topology:
            key = tuple(s.labels.get(lb, "") for lb in self.plabels)
            self.procs[s.labels.get(profile.queue_label, "")].add(key)
        self.empty = not samples

    def note(self, metric: str) -> str | None:
        if self.samples and not self.labelled:
            return (f"{metric} has no {'/'.join(self.plabels)} labels: the process-wide total is "
                    "shown for every queue (it is shared by all controllers of the process)")
        return None

    def process_labels(self, q: str) -> dict[str, str]:
        keys = sorted(self.procs.get(q, ()))
        out: dict[str, str] = {}
        for i, lb in enumerate(self.plabels):
            vals = sorted({k[i] for k in keys if k[i]})
            if vals:
                out[lb] = ",".join(vals)
        return out

    def for_queue(self, q: str) -> tuple[float | None, dict[str, float], str | None]:
        if self.empty:
            return None, {}, self.absent_reason
        if self.labelled:
            procs = self.procs.get(q)
            if not procs:
                return None, {}, "cannot tell which process (job/instance) runs this queue"
            chosen = [s for s in self.samples
                      if tuple(s.labels.get(lb, "") for lb in self.plabels) in procs]
            if not chosen:
                where = ", ".join(f"{k}={v}" for k, v in self.process_labels(q).items())
                return None, {}, f"{self.absent_reason} for the process running this queue " \
                                 f"({where})"
        else:
            chosen = self.samples
        total = float(sum(s.value for s in chosen if s.value is not None))
        classes: dict[str, float] = defaultdict(float)
        if self.sub_label:
            for s in chosen:
                classes[code_class(s.labels.get(self.sub_label, ""))] += s.value or 0.0
        return total, dict(sorted(classes.items())), None


# --- range frame ------------------------------------------------------------------------


class _RangeBuilder:
    def __init__(self, profile: Profile, results: Mapping[str, Any],
                 queries: Sequence[SignalQuery], queues: Sequence[str] | None, window_s: float):
        self.profile = profile
        self.window_s = window_s
        self.results = results
        self.queries = queries
        self.queues = set(queues) if queues else None
        self.parts: list[pd.DataFrame] = []

    def _add(self, queue: str, signal: str, t: np.ndarray, v: np.ndarray) -> None:
        if self.queues is not None and queue not in self.queues:
            return
        ok = np.isfinite(v)
        if ok.any():
            self.parts.append(pd.DataFrame({"queue": queue, "signal": signal,
                                            "t": t[ok].astype(float), "value": v[ok]}))

    def build(self, warnings: list[str]) -> pd.DataFrame:
        p = self.profile
        ql, cl = p.queue_label, p.controller_label
        series: dict[str, dict[str, pd.Series]] = {}
        for sq in self.queries:
            res: RangeResult = self.results[sq.signal]
            for s in res.series:
                for kind, n in s.dropped.items():
                    note = f"{sq.signal}: {n} {kind} point(s) left out"
                    if note not in warnings:
                        warnings.append(note)
            if sq.key in ("queue", "controller"):
                label = ql if sq.key == "queue" else cl
                series[sq.signal] = {s.labels.get(label, ""): pd.Series(s.v, index=s.t)
                                     for s in res.series}
        gap = self._gap_mask(series.get("samples_in_window", {}), warnings)

        def emit(queue: str, signal: str, s: pd.Series) -> None:
            if signal in RATE_FIELDS and queue in gap:
                s = s[~s.index.isin(gap[queue])]
            self._add(queue, signal, s.index.to_numpy(dtype=float), s.to_numpy(dtype=float))

        for signal, per in series.items():
            if signal == "samples_in_window":
                continue
            for q, ser in per.items():
                if q:
                    emit(q, signal, ser)
        busy = series.get("busy_workers", {})
        thr = series.get("throughput_per_s", {})
        workers = series.get("workers", {})
        for q, b in busy.items():
            if q in thr:
                x = thr[q]
                ratio = (b / x.where(x > 0)).dropna()
                emit(q, "service_mean_s", ratio)
            w = workers.get(q)
            if w is None and p.configured_workers(q) is not None:
                w = pd.Series(p.configured_workers(q), index=b.index)
                emit(q, "workers", w)
            if w is not None:
                emit(q, "utilization", (b / w.where(w > 0)).dropna())
        depth = series.get("depth_mean", {})
        arr = series.get("arrival_rate_per_s", {})
        wait = series.get("queue_wait_mean_s", {})
        for q, d in depth.items():
            if q in arr and q in wait:
                den = arr[q] * wait[q]
                emit(q, "littles_law_ratio", (d / den.where(den > 0)).dropna())

        for signal, prefix in (("queue_wait_buckets", "queue_wait"), ("work_buckets", "work")):
            per_q: dict[str, list[RangeSeries]] = defaultdict(list)
            for s in self.results[signal].series:
                per_q[s.labels.get(ql, "")].append(s)
            for q, ss in per_q.items():
                les = [parse_le(s.labels.get("le", "")) for s in ss]
                keep = [(le, s) for le, s in zip(les, ss, strict=True) if le is not None]
                if not keep:
                    continue
                mat = pd.concat({i: pd.Series(s.v, index=s.t) for i, (_, s) in enumerate(keep)},
                                axis=1)
                for name, qv in QUANTILES:
                    qres = bucket_quantile(qv, [le for le, _ in keep], mat.to_numpy())
                    emit(q, f"{prefix}_{name}_s", pd.Series(qres.values, index=mat.index))

        if "reconcile_results_per_s" in self.results:
            for s in self.results["reconcile_results_per_s"].series:
                q = s.labels.get(cl, "")
                emit(q, f"reconcile_results_per_s.{s.labels.get('result', '')}",
                     pd.Series(s.v, index=s.t))
        self._process(warnings, emit)
        self._external(emit)
        if not self.parts:
            return pd.DataFrame({"queue": pd.Series(dtype=str), "signal": pd.Series(dtype=str),
                                 "t": pd.Series(dtype=float), "value": pd.Series(dtype=float)})
        frame = pd.concat(self.parts, ignore_index=True)
        return frame.sort_values(["queue", "signal", "t"], ignore_index=True)

    def _gap_mask(self, counts: Mapping[str, pd.Series], warnings: list[str]
                  ) -> dict[str, np.ndarray]:
        if not counts:
            return {}
        frame = pd.DataFrame(counts)
        if self.profile.scrape_interval_s:
            expected = pd.Series(self.window_s / self.profile.scrape_interval_s, index=frame.index)
        else:
            expected = frame.max(axis=1)
        out: dict[str, np.ndarray] = {}
        for q in frame.columns:
            col = frame[q].dropna()
            bad = col.index[(col / expected.loc[col.index]) < MIN_COVERAGE].to_numpy()
            if len(bad):
                out[q] = bad
                warnings.append(f"{q}: {len(bad)} point(s) dropped from rate signals: scrape gap "
                                "(fewer than 90 % of the expected samples in the rate window)")
        return out

    def _process(self, warnings: list[str], emit: Callable[[str, str, pd.Series], None]) -> None:
        p = self.profile
        topo: dict[str, set[tuple[str, ...]]] = defaultdict(set)
        for s in self.results["topology"].samples:
            topo[s.labels.get(p.queue_label, "")].add(
                tuple(s.labels.get(lb, "") for lb in p.process_labels))
        queue_names = {q for q in topo if q}
        for signal, sub in (("api_calls", "code"), ("throttle_s_per_s", None)):
            res: RangeResult = self.results[signal]
            if not res.series:
                continue
            labelled = any(any(s.labels.get(lb) for lb in p.process_labels) for s in res.series)
            if not labelled:
                note = (f"{signal}: no {'/'.join(p.process_labels)} labels: process-wide totals "
                        "shown for every queue")
                if note not in warnings:
                    warnings.append(note)
            for q in sorted(queue_names):
                chosen = [s for s in res.series if not labelled or tuple(
                    s.labels.get(lb, "") for lb in p.process_labels) in topo[q]]
                if not chosen:
                    continue
                total = pd.concat([pd.Series(s.v, index=s.t) for s in chosen], axis=1).sum(
                    axis=1, min_count=1)
                name = "api_calls_per_s" if sub else "throttle_s_per_s"
                emit(q, name, total)
                if sub:
                    by: dict[str, list[pd.Series]] = defaultdict(list)
                    for s in chosen:
                        by[code_class(s.labels.get(sub, ""))].append(pd.Series(s.v, index=s.t))
                    for cls, parts in by.items():
                        emit(q, f"api_calls_by_class_per_s.{cls}",
                             pd.concat(parts, axis=1).sum(axis=1, min_count=1))

    def _external(self, emit: Callable[[str, str, pd.Series], None]) -> None:
        p = self.profile
        known: set[str] = set()
        for key in ("arrival_rate_per_s", "depth_current"):
            res = self.results.get(key)
            if res is not None:
                known |= {s.labels.get(p.queue_label, "") for s in res.series}
        for i, eff in enumerate(p.external_effects):
            res = self.results[f"external:{i}"]
            labelled = [s for s in res.series
                        if s.labels.get(p.queue_label) or s.labels.get(p.controller_label)]
            for q in sorted(x for x in known if x and eff.group.matches(x)):
                chosen = ([s for s in labelled if q in (s.labels.get(p.queue_label),
                                                        s.labels.get(p.controller_label))]
                          if labelled else res.series)
                if chosen:
                    emit(q, "external_effects_per_s", pd.concat(
                        [pd.Series(s.v, index=s.t) for s in chosen], axis=1).sum(axis=1,
                                                                                 min_count=1))
