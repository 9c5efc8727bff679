"""The embedded demo source: the simulated fleet of :mod:`models.fleet`, read the way
the Prometheus source reads a real fleet, with no Prometheus.

Every figure is computed from the fleet's cumulative counters and gauges exactly as the
PromQL would compute it from samples scraped every ``SAMPLE_S`` seconds (Prometheus 2.x
range selection, both ends included):

* a rate is ``(C(at) − C(at − w)) / w`` — ``rate(x[w])`` when samples sit at both ends;
* a mean is ``Δsum / Δcount``; a quantile is ``histogram_quantile`` (the shared
  :func:`models.histogram.bucket_quantile`) over the bucket
  increases of ``workqueue_{queue,work}_duration_seconds`` (decade buckets; linear
  interpolation inside the bucket, the +Inf rule, the zero lower bound), with the bucket it
  fell in (``QueueSnapshot.quantile_bounds``);
* a gauge mean / max / slope is ``avg_over_time`` / ``max_over_time`` / ``deriv`` over the
  samples at ``at, at − 15 s, …, at − w``;
* the worker count is the ``controller_runtime_max_concurrent_reconciles`` gauge at ``at``
  (an instant read, like ``max by (controller) (…)``): it follows a queue's
  ``workers_schedule`` (the demo's ``deployment`` runs 5 and 3 workers in turn), so a window
  that straddles a change reads the new count with rates that still hold some of the old.

API calls are per process (label ``pod``): every queue of a process reports the process's
calls, as ``rest_client_requests_total`` has no controller label.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from collectors.errors import ConfigError
from collectors.profile import code_class, rate_window_s
from models import fleet as fl
from models.measurements import QueueSnapshot, RangeData, Snapshot
from models.signals import Histogram, ProcessSeries, RawSignals, derive

FloatArray = npt.NDArray[np.float64]

SAMPLE_S = 15.0
"""The scrape interval the demo's gauge statistics assume (the backfill uses it too)."""
MAX_GAUGE_SAMPLES = 41
"""Range queries read at most this many gauge samples per point (a coarser sample step)."""
API_CLASSES = ("2xx", "4xx", "409", "429", "5xx")
"""Code classes of ``api_calls_by_class_per_s``; ``4xx`` excludes 409 and 429."""

_SCALAR_FIELDS = (
    "arrival_rate_per_s", "throughput_per_s", "service_mean_s", "busy_workers", "workers",
    "utilization", "depth_mean", "depth_current", "queue_wait_mean_s", "queue_wait_p50_s",
    "queue_wait_p95_s", "queue_wait_p99_s", "work_p50_s", "work_p95_s", "work_p99_s",
    "retries_per_s", "errors_per_s", "api_calls_per_s", "throttle_s_per_s",
    "external_effects_per_s", "unfinished_work_s", "unfinished_work_growth",
    "longest_running_s", "littles_law_ratio",
)


_NOT_IN_DEMO: dict[str, str] = {
    **dict.fromkeys(("api_request_s_per_s", "api_retries_per_s"),
                    "the demo's processes expose only rest_client_requests_total and the "
                    "rate limiter (controller-runtime without RegisterRESTClientMetrics)"),
    "api_writes_per_s": "the demo's API calls carry no method (it does not model writes)",
    **dict.fromkeys(("reconcile_panics_per_s", "reconcile_timeouts_per_s",
                     "terminal_errors_per_s"),
                    "the demo does not expose controller-runtime's panic, timeout and "
                    "terminal-error counters"),
    "priority_series": "the demo does not read depth by priority",
    **dict.fromkeys(("served_webhook_s_per_s", "served_webhook_requests_per_s",
                     "served_webhook_in_flight"),
                    "the demo's managers serve no webhook"),
    **dict.fromkeys(("apf_priority_level", "apf_wait_mean_s", "apf_rejected_per_s",
                     "apf_dispatched_per_s", "apf_inqueue_mean", "apf_seats_in_use_mean",
                     "apf_seat_limit", "apiserver_write_latency_mean_s",
                     "apiserver_write_sli_mean_s"),
                    "the demo has no API server (see queuelens simulate --api-calls N "
                    "--apf-seats N for one)"),
    **dict.fromkeys(("cpu_used_cores", "cpu_gomaxprocs", "cpu_sched_latency_mean_s",
                     "cpu_sched_latency_p99_s", "cpu_limit_cores", "cpu_throttled_share"),
                    "the demo simulates queues, not the processes' CPU: its pods expose no "
                    "process_* or go_* series and it has no kube-state-metrics or cAdvisor"),
}
"""The signals beyond the queue (issue 13) that the demo fleet does not model, and why."""


LAST_S = 253402300799.0
"""9999-12-31T23:59:59Z: the demo fleet's last time (issue 12: ``--at 1e20`` reached
``time.gmtime`` in the commands and was a traceback). Within it a sample step of 15 s is still
exact in a float (spacing ≤ 3.1e-5 s)."""


def range_window_s(step_s: float) -> float:
    """The rate window of each range point, picked as the Prometheus source picks it
    (:func:`collectors.profile.rate_window_s` with the demo's scrape interval)."""
    return rate_window_s(step_s, SAMPLE_S)


class DemoSource:
    """The simulated fleet as a :class:`collectors.types.Source`.

    ``scenario``: ``all`` or one regime (``saturated``, ...) or controller (``replicaset``).
    ``queues``: build a larger fleet of that many queues cycling through the regimes with
    varied parameters (names like ``replicaset-007``), for benchmarks.
    """

    def __init__(self, scenario: str = "all", seed: int = 0, queues: int | None = None) -> None:
        try:
            specs = (
                fl.demo_specs(scenario)
                if queues is None
                else fl.large_fleet_specs(queues, seed=seed, scenario=scenario)
            )
            self.fleet = fl.Fleet(specs, seed=seed)
        except ValueError as exc:
            raise ConfigError(f"Cannot build the demo fleet: {exc}.") from None
        self.scenario = scenario
        self.seed = seed
        self._index = {name: i for i, name in enumerate(self.fleet.names)}
        specs_t = self.fleet.specs
        pods = self.fleet.pods
        self._pod_limiter = np.array(
            [any(s.params.client_limiter for s in specs_t if s.params.pod == p) for p in pods]
        )
        self._external = np.array([s.params.external_effects for s in specs_t])

    @property
    def name(self) -> str:
        return "demo"

    @property
    def queue_names(self) -> tuple[str, ...]:
        return self.fleet.names

    # --- the computation, vectorized over queues and evaluation times ---------------------

    def _check(self, at: float, window_s: float) -> None:
        if not (math.isfinite(window_s) and window_s > 0):
            raise ConfigError(f"The window must be a positive number of seconds, got {window_s!r}.")
        if not math.isfinite(at) or at - window_s < fl.EPOCH_S:
            raise ConfigError(
                f"The demo data start at 2020-01-01T00:00:00Z (unix {fl.EPOCH_S:.0f}); "
                f"the window ending at {at!r} begins before that."
            )
        if at > LAST_S:
            raise ConfigError(
                f"The demo data end at 9999-12-31T23:59:59Z (unix {LAST_S:.0f}), the last time "
                f"RFC 3339 and the reports can write; got {at:.6g}."
            )

    def compute(
        self,
        ends: npt.ArrayLike,
        window_s: float,
        select: npt.ArrayLike | None = None,
        sample_s: float = SAMPLE_S,
    ) -> dict[str, FloatArray]:
        """Every signal as an array [queue, end time]; NaN where the signal does not exist.

        The fleet's counters and gauges are read as PromQL would read them (rates, bucket
        increases, gauge statistics) into a :class:`models.signals.RawSignals`; everything
        else is :func:`models.signals.derive`, the same derive the Prometheus source uses."""
        return dict(derive(self.raw(ends, window_s, select, sample_s)).values)

    def raw(
        self,
        ends: npt.ArrayLike,
        window_s: float,
        select: npt.ArrayLike | None = None,
        sample_s: float = SAMPLE_S,
    ) -> RawSignals:
        """The measured matrices (see :meth:`compute`)."""
        t = np.atleast_1d(np.asarray(ends, dtype=np.float64))
        sel = (
            np.arange(len(self.fleet), dtype=np.int64)
            if select is None
            else np.asarray(select, dtype=np.int64)
        )
        both = np.concatenate([t - window_s, t])
        c = self.fleet.counters(both, select=sel)
        inc = c[:, :, len(t):] - c[:, :, : len(t)]  # [queue, signal, time]
        rate = inc / window_s

        def row(name: str) -> FloatArray:
            return np.asarray(rate[:, fl.SIGNALS[name], :], dtype=np.float64)

        d: dict[str, FloatArray] = {}
        d["arrival_rate_per_s"] = row("adds")
        d["throughput_per_s"] = row("wd:count")
        d["busy_workers"] = row("wd:sum")
        d["workers"] = self.fleet.workers(t, select=sel)  # the gauge at the end time
        with np.errstate(invalid="ignore", divide="ignore"):
            qd_count = row("qd:count")
            d["queue_wait_mean_s"] = np.where(qd_count > 0, row("qd:sum") / qd_count, np.nan)
        hists: dict[str, list[Histogram]] = {}
        for prefix, name in (("qd", "queue_wait"), ("wd", "work")):
            rows, count_row, _ = fl.hist_rows(prefix)
            cum = np.moveaxis(inc[:, [*rows, count_row], :], 1, -1)  # [queue, time, bucket]
            hists[name] = [Histogram(np.array([*fl.WORKQUEUE_BUCKETS, math.inf]), cum)]
        d["retries_per_s"] = row("retries")
        d["errors_per_s"] = row("errors")
        for result in fl.RESULTS:
            d[f"reconcile_results_per_s.{result}"] = row(f"result:{result}")
        d["external_effects_per_s"] = np.where(
            self._external[sel][:, None], row("ext:success"), np.nan
        )

        # Per process: every queue's own API-call rows, summed per pod by derive (over the
        # whole fleet, not the selection: a process's calls do not depend on what is shown).
        api_rows = [fl.SIGNALS[f"api:{code}:{method}"] for code, method in fl.API_SERIES]
        lim_sum = fl.SIGNALS["lim:sum"]
        if select is None:
            all_rate = rate[:, [*api_rows, lim_sum], :]
        else:
            all_c = self.fleet.counters(both, rows=[*api_rows, lim_sum])
            all_rate = (all_c[:, :, len(t):] - all_c[:, :, : len(t)]) / window_s
        pod_of = self.fleet.pod_index
        n_q, n_api = all_rate.shape[0], len(api_rows)
        class_idx = np.array([API_CLASSES.index(code_class(code)) for code, _ in fl.API_SERIES])
        api = ProcessSeries(
            process=np.repeat(pod_of, n_api), values=all_rate[:, :n_api, :].reshape(-1, len(t)),
            total_field="api_calls_per_s", class_of=np.tile(class_idx, n_q),
            classes=API_CLASSES, class_field="api_calls_by_class_per_s")
        limited = np.flatnonzero(self._pod_limiter[pod_of])
        throttle = ProcessSeries(process=pod_of[limited], values=all_rate[limited, -1, :],
                                 total_field="throttle_s_per_s")

        # Gauges: samples at end, end − s, …, end − w (avg/max_over_time, deriv).
        n = math.floor(window_s / sample_s + 1e-9)
        if n + 1 > MAX_GAUGE_SAMPLES:
            n = MAX_GAUGE_SAMPLES - 1
            sample_s = window_s / n
        offsets = np.arange(n, -1, -1, dtype=np.float64) * sample_s  # oldest first
        st = (t[:, None] - offsets[None, :]).ravel()
        g = self.fleet.gauges(st, select=sel).reshape(len(sel), len(fl.GAUGES), len(t), n + 1)
        depth = g[:, fl.GAUGES["depth"]] + g[:, fl.GAUGES["depth_low_priority"]]
        d["depth_mean"] = depth.mean(axis=-1)
        d["depth_current"] = depth[..., -1]
        unfinished = g[:, fl.GAUGES["unfinished_work_s"]]
        d["unfinished_work_s"] = unfinished[..., -1]
        if n >= 1:
            x = -offsets - (-offsets).mean()
            d["unfinished_work_growth"] = (
                (unfinished - unfinished.mean(axis=-1, keepdims=True)) * x
            ).sum(axis=-1) / (x * x).sum()
        else:
            d["unfinished_work_growth"] = np.full_like(d["depth_mean"], np.nan)
        d["longest_running_s"] = g[:, fl.GAUGES["longest_running_s"]].max(axis=-1)
        return RawSignals(
            queues=tuple(self.fleet.names[i] for i in sel), t=t, direct=d, histograms=hists,
            processes=len(self.fleet.pods),
            queue_process=(np.arange(len(sel), dtype=np.int64), pod_of[sel]),
            process_series=(api, throttle))

    # --- Source protocol ---------------------------------------------------------------------

    def snapshot(self, at: float, window_s: float, queues: Sequence[str] | None = None
                 ) -> Snapshot:
        """Every queue's signals at ``at``; ``queues``: only those (in the fleet's order)."""
        self._check(at, window_s)
        sel = None if not queues else np.array(
            sorted({self._index[q] for q in queues if q in self._index}), dtype=np.int64)
        derived = derive(self.raw([at], window_s, sel))
        data = {k: v[:, 0].tolist() for k, v in derived.values.items()}
        specs = self.fleet.specs if sel is None else [self.fleet.specs[j] for j in sel]
        queues_out = []
        for i, spec in enumerate(specs):
            values: dict[str, Any] = {}
            missing: dict[str, str] = {}
            missing.update(_NOT_IN_DEMO)
            for field in _SCALAR_FIELDS:
                v = data[field][i]
                if math.isfinite(v):
                    values[field] = v
                else:
                    values[field] = None
                    missing[field] = self._why_missing(field, spec)
            results = {r: data[f"reconcile_results_per_s.{r}"][i] for r in fl.RESULTS}
            classes = {k: data[f"api_calls_by_class_per_s.{k}"][i] for k in API_CLASSES}
            queues_out.append(
                QueueSnapshot(
                    queue=spec.name,
                    labels=self.labels(spec),
                    process=f"pod={spec.params.pod}",
                    reconcile_results_per_s=results,
                    api_calls_by_class_per_s=classes,
                    missing=missing,
                    quantile_bounds={k: b for k, b in derived.quantile_bounds(i, 0).items()
                                     if values.get(k) is not None},
                    **values,
                )
            )
        return Snapshot(at=at, window_s=window_s, source="demo", queues=queues_out)

    def queue_processes(self, at: float, span_s: float) -> dict[str, tuple[str, ...]]:
        """{queue: the process running it} in the fleet's order (every demo queue always
        exists; the pod is its process, as :attr:`QueueSnapshot.process` names it)."""
        return {spec.name: (f"pod={spec.params.pod}",) for spec in self.fleet.specs}

    def range(
        self, start: float, end: float, step_s: float, queues: Sequence[str] | None = None,
        signals: Collection[str] | None = None,
    ) -> RangeData:
        if not (math.isfinite(step_s) and step_s > 0):
            raise ConfigError(f"The step must be a positive number of seconds, got {step_s!r}.")
        if not (math.isfinite(start) and math.isfinite(end)) or end < start:
            raise ConfigError(f"The range end ({end!r}) is before its start ({start!r}).")
        window = range_window_s(step_s)
        self._check(start, window)
        if queues is None:
            sel = np.arange(len(self.fleet), dtype=np.int64)
        else:
            unknown = [q for q in queues if q not in self._index]
            if unknown:
                raise ConfigError(
                    f"The demo fleet has no queue named {', '.join(map(repr, unknown))}."
                )
            sel = np.array([self._index[q] for q in queues], dtype=np.int64)
        times = start + np.arange(math.floor((end - start) / step_s + 1e-9) + 1) * step_s
        chunks = [self.compute(times[lo : lo + 2000], window, select=sel)
                  for lo in range(0, len(times), 2000)]
        keep = set(chunks[0]) if signals is None else set(signals) & set(chunks[0])
        matrices = {k: np.concatenate([c[k] for c in chunks], axis=1) for k in chunks[0]
                    if k in keep}
        names = tuple(self.fleet.names[i] for i in sel)
        return RangeData(start=start, end=end, step_s=step_s, source="demo", queues=names,
                         t=np.asarray(times, dtype=np.float64), signals=matrices)

    # --- helpers ------------------------------------------------------------------------------

    def labels(self, spec: fl.QueueSpec) -> Mapping[str, str]:
        return {"name": spec.name, "controller": spec.name, "pod": spec.params.pod,
                "regime": spec.params.regime}

    def params(self, queue: str) -> fl.QueueParams:
        """The regime parameters behind a queue (for tests and documentation)."""
        try:
            return self.fleet.specs[self._index[queue]].params
        except KeyError:
            raise ConfigError(f"The demo fleet has no queue named {queue!r}.") from None

    @staticmethod
    def _why_missing(field: str, spec: fl.QueueSpec) -> str:
        if field == "external_effects_per_s":
            return (
                "no external-effects metric for this queue (in the demo only the dnsrecord "
                "regime writes to an external API)"
            )
        if field == "throttle_s_per_s":
            return (
                f"process {spec.params.pod} does not expose "
                "rest_client_rate_limiter_duration_seconds (controller-runtime registers only "
                "rest_client_requests_total)"
            )
        if field == "unfinished_work_growth":
            return "the window holds fewer than two gauge samples"
        return "no items were processed in the window, so the ratio is undefined"
