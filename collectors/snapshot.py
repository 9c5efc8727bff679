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
  the ``+Inf`` bucket as a lower bound, and keeping the bucket each one fell in
  (``QueueSnapshot.quantile_bounds``);
* flags scrape gaps: a queue whose window holds fewer than 90 % of the expected samples gets
  ``None`` (with the reason) for every rate, because ``rate()`` over a half-empty window
  under-reports;
* ``None`` + a reason in ``missing`` for whatever cannot be measured; NaN/±Inf never escape;
* refuses duplicate series: two series of one answer with the same key labels (a federation or
  a proxy that merged two answers) could be two replicas of one number (sum → twice the truth)
  or two halves of it (keep one → half the truth), so neither is guessed: the value is left out
  (``None``, with the reason) and a warning names the series.

Every read runs in one :func:`collectors.deadlines.query_group`: the first failing query
cancels the others (their sockets are shut down, the ones not sent fail at once), so a hung
Prometheus costs one timeout, not one per round of parallel queries; the queries run on daemon
threads (:class:`collectors.query_pool.QueryPool`) in copies of the caller's context, so they
carry the caller's :func:`~collectors.deadlines.deadline_scope`. With ``budget_s`` (a
one-shot command) every read of the source shares one deadline, counted from its first read.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

import numpy as np

from collectors.deadlines import Deadline, QueryGroup, deadline_scope, query_group
from collectors.decoding import (
    DUPLICATE_REASON,
    duplicate_keys,
    instant_histograms,
    instant_rows,
    nan_if_none,
    warn_duplicates,
)
from collectors.errors import AnswerTooLarge, CollectorError, PrometheusTimeout
from collectors.histogram import parse_le
from collectors.processes import Attributed, Cpu, Processes
from collectors.profile import (
    CPU_CONTAINER_SIGNALS,
    CPU_PROCESS_SIGNALS,
    PRIORITY_SERIES_MAX,
    Matcher,
    Profile,
    SignalQuery,
    learnt_scrape_interval_s,
    rate_window_s,
)
from collectors.prom_client import InstantResult, PrometheusClient, Sample, plan_range
from collectors.query_pool import QueryPool, gather, run_all, wait_bound_s
from collectors.range_decoding import RangeOutput, learnt_expected, range_raw
from models.formatting import number_text, percent_text
from models.histogram import QUANTILES
from models.measurements import QueueSnapshot, RangeData, Snapshot
from models.priority import CAPPED_PRIORITY, uncapped
from models.signals import HISTOGRAMS, RATE_FIELDS, DerivedSignals, RawSignals, derive, raw_inputs
from models.verdicts.screen import screen

T = TypeVar("T")
log = logging.getLogger(__name__)


# --- helpers ------------------------------------------------------------------------------


def _replica_note(profile: Profile, replicas: Sequence[Sample], topology: Sequence[Sample]
                  ) -> str | None:
    """The warning of an HA pair read without deduplication, None when every queue's series
    are stored once per process.

    ``topology`` (:meth:`Profile.topology_query`) counts each queue's adds counters per
    process: more than one means copies that differ only in a label the reads do not group
    by, which every ``sum by`` then adds up. ``replicas`` (the presence answer,
    :meth:`Profile.presence_query`, grouped by :meth:`Profile.replica_labels` too) names
    that label when it is one of those (two or more values). A replica label whose values
    do not overlap on any queue (two servers scraping different targets: shards) is no
    duplicate; with
    :attr:`Profile.replica_label` set the reads are deduplicated by it, and only another
    splitting label is still reported."""
    counts = [(s.labels.get(profile.queue_label, ""), s.value or 0.0) for s in topology]
    twice = sorted({q for q, n in counts if n > 1 and q})
    if not twice:
        return None
    copies = int(max(n for _, n in counts))
    split = {}
    for label in profile.replica_labels():
        values = sorted({s.labels.get(label, "") for s in replicas} - {""})
        if len(values) > 1 and label != profile.replica_label:
            split[label] = values
    shown = ", ".join(repr(q) for q in twice[:3]) + (
        f" and {len(twice) - 3} more" if len(twice) > 3 else "")
    where = f"{len(twice)} of the queues ({shown})"
    doubled = (f"their arrivals, throughput, busy workers, depth and utilization read up to "
               f"{copies}× the truth")
    if split:
        label, values = next(iter(split.items()))
        told = ", ".join(f"{label}={v!r}" for v in values[:4]) + (
            ", …" if len(values) > 4 else "")
        return (f"the series of {where} are stored {copies} times, told apart by {told} "
                "(the replicas of a Prometheus HA pair behind one query endpoint without "
                f"deduplication): {doubled}; set profile.replica_label: {label} in the config "
                "to read each series once")
    return (f"the adds counters of {where} are stored {copies} times per process, told apart "
            "by a label queuelens does not group by (an HA pair without deduplication? set "
            f"profile.replica_label to that label): {doubled}")


UTILIZATION_NOTE_ABOVE = 1.05
"""A utilization above this is said with its possible causes. Busy workers come from the
work-duration ``_sum``, to which a pass is added when it ends: passes that began before the
window and end inside it, and the scrape timing, can lift a fully busy queue a few per cent
over its worker count; beyond 5 % the count or the series are more likely wrong."""


def _over_busy_note(queues: Sequence[QueueSnapshot]) -> str | None:
    """One warning for the queues whose busy workers exceed their worker count (utilization
    above :data:`UTILIZATION_NOTE_ABOVE`), None when there are none: a utilization above 1
    is never shown without this comment."""
    over = [q for q in queues if q.utilization is not None and math.isfinite(q.utilization)
            and q.utilization > UTILIZATION_NOTE_ABOVE]
    if not over:
        return None
    over.sort(key=lambda q: (-(q.utilization or 0.0), q.queue))
    shown = "; ".join(f"{q.queue}: {percent_text(q.utilization)} ("
                      f"{number_text(q.busy_workers)} busy of {number_text(q.workers)} workers)"
                      for q in over[:3])
    more = f"; and {len(over) - 3} more" if len(over) > 3 else ""
    return (f"utilization above 100 % — {shown}{more}: more workers busy than the worker "
            "count, so the series are counted twice (an HA pair without deduplication, "
            "profile.replica_label), the worker count is wrong, or passes longer than the "
            "window ended inside it")


def _special_reason(metric: str, special: str | None) -> str:
    if special == "NaN":
        return f"{metric}: NaN (no observations in the window, 0/0)"
    return f"{metric}: {special} (overflow)"


class PrometheusSource:
    """Snapshots and ranges of work-queue signals from a Prometheus-compatible API."""

    incremental_range = True
    """A range read's columns depend only on the samples at or before each column's time, so
    :class:`collectors.cache.CachedSource` may extend the last read with the new steps only
    (:mod:`collectors.incremental`)."""

    def __init__(self, client: PrometheusClient, profile: Profile | None = None, *,
                 budget_s: float | None = None, budget_what: str = "this command",
                 budget_hint: str | None = None) -> None:
        """``budget_s``: every read of this source (a one-shot command's snapshot and range
        read) shares one deadline, counted from the first read; ``budget_what`` and
        ``budget_hint`` name it in messages ("the 30 s budget of this command", "set by
        --timeout")."""
        self.client = client
        self.profile = profile or Profile()
        self.budget_s = budget_s
        self.budget_what = budget_what
        self.budget_hint = budget_hint
        self._budget: Deadline | None = None
        self._budget_lock = threading.Lock()
        self._presence: dict[tuple[str, float], tuple[float, InstantResult]] = {}
        self._presence_lock = threading.Lock()
        self._presence_pending: dict[tuple[str, float], Future[InstantResult]] = {}

    @property
    def name(self) -> str:
        return self.client.source

    def _fleet_presence(self, promql: str, at: float) -> InstantResult:
        """:meth:`_presence_answer`, waiting for the answer."""
        result = self._presence_answer(promql, at, wait=True)
        assert result is not None  # a waiting read has the answer or raises its error
        return result

    def _known_presence(self, promql: str, at: float) -> InstantResult | None:
        """:meth:`_presence_answer`, not waiting for the answer (None while it is not known)."""
        return self._presence_answer(promql, at, wait=False)

    def _presence_answer(self, promql: str, at: float, wait: bool) -> InstantResult | None:
        """A fleet-wide presence answer (which metrics, recorded series and replica labels
        exist) asked once per instant for :data:`PRESENCE_REUSE_S`: the batches of the
        streaming cold start read at one instant, and each asked it again — 3.3 s of the
        snapshot's and 4.3 s of the range read's time for every batch of 25 queues at 10,000
        queues with recorded rules (the answer counts every series of those names). Reads
        asking at once share one request.

        ``wait=False`` (a read of named queues, :meth:`_known_presence`): the answer if it
        is known, else None — it is then asked in the background for the next reads — so
        that the first batch of a cold start does not wait 13 s for the recorded series'
        answer to read its few queues: those read their raw counters, which give the same
        numbers (the recorded rates are the raw rates, tested to 1e-9)."""
        key = (promql, at)
        with self._presence_lock:
            hit = self._presence.get(key)
            if hit is not None and time.monotonic() - hit[0] < PRESENCE_REUSE_S:
                return hit[1]
            pending = self._presence_pending.get(key)
            mine = pending is None
            if pending is None:
                pending = self._presence_pending[key] = Future()
        if mine and not wait:
            threading.Thread(target=self._ask_presence, args=(key, pending), daemon=True,
                             name="queuelens-presence").start()
            return None
        if mine:
            self._ask_presence(key, pending)
        elif not wait:
            done = pending.done() and pending.exception() is None
            return pending.result() if done else None
        try:
            return pending.result(timeout=self.timeout_s + PRESENCE_WAIT_MARGIN_S)
        except FutureTimeout:
            raise PrometheusTimeout(
                f"the presence query asked by another read did not answer within "
                f"{self.timeout_s:g} s") from None

    def _ask_presence(self, key: tuple[str, float], pending: Future[InstantResult]) -> None:
        """Ask one presence query and give its answer (or its error) to every read waiting
        for it; a good answer is kept for :data:`PRESENCE_REUSE_S`."""
        try:
            result = self.client.query(*key)
        except BaseException as exc:  # handed to the reads waiting for it
            with self._presence_lock:
                self._presence_pending.pop(key, None)
            pending.set_exception(exc)
            log.debug("presence query failed: %s", exc)
            return
        with self._presence_lock:
            self._presence[key] = (time.monotonic(), result)
            self._presence_pending.pop(key, None)
            while len(self._presence) > PRESENCE_MEMO_SIZE:
                del self._presence[next(iter(self._presence))]
        pending.set_result(result)

    @property
    def timeout_s(self) -> float:
        """The per-query timeout (also the natural budget of a page refresh)."""
        return self.client.settings.timeout_s

    def close(self) -> None:
        self.client.close()

    @contextlib.contextmanager
    def _read(self) -> Iterator[QueryGroup]:
        """One read: the source's budget (if any) and one query group."""
        budget = None
        if self.budget_s is not None:
            with self._budget_lock:
                if self._budget is None:
                    self._budget = Deadline.after(self.budget_s, self.budget_what,
                                                  self.budget_hint)
                budget = self._budget
        with deadline_scope(budget), query_group() as group:
            yield group

    # ------------------------------------------------------------------ snapshot

    def snapshot(self, at: float, window_s: float, queues: Sequence[str] | None = None
                 ) -> Snapshot:
        """Every queue's signals at ``at``; ``queues``: only those (a batch of the overview's
        streaming cold start, :mod:`dashboard.streaming`): their topology is read first, so
        the per-process queries keep to the processes running them, and a batch holding every
        queue of its processes gives those queues the values a whole-fleet snapshot gives."""
        if not (math.isfinite(at) and math.isfinite(window_s) and window_s > 0):
            raise CollectorError(f"snapshot needs a finite time and a window > 0, got {at}, "
                                 f"{window_s}")
        with self._read():
            return self._snapshot(at, window_s, list(queues) if queues else None)

    def queue_processes(self, at: float, span_s: float) -> dict[str, tuple[str, ...]]:
        """{queue: the processes running it} for every queue with a sample in the ``span_s``
        before ``at``, in the order a whole-fleet read lists them (one instant query: the
        topology). A process is named as :attr:`QueueSnapshot.process` names it."""
        if not (math.isfinite(at) and math.isfinite(span_s) and span_s > 0):
            raise CollectorError(f"the queue list needs a finite time and a span > 0, got "
                                 f"{at}, {span_s}")
        profile = self.profile
        with self._read():
            samples = self.client.query(profile.topology_query(span_s), at).samples
        self._check_queue_count({smp.labels.get(profile.queue_label, "") for smp in samples})
        procs = Processes(profile, samples)
        names = sorted(set(procs.of_name) - {""})
        out: dict[str, tuple[str, ...]] = {}
        for q in names:
            named = (",".join(f"{lb}={v}" for lb, v in zip(procs.plabels, k, strict=True) if v)
                     for k in sorted(procs.keys_of_name[q]))
            out[q] = tuple(n for n in named if n)  # no process label: not known
        return out

    def _check_queue_count(self, names: Collection[str]) -> None:
        """Refuse a read of more queues than :attr:`ConnectionSettings.max_queues`, from
        the topology answer's names, before any queue is modelled (issue 23 §4: the
        per-queue work of 100,000 queues took 107 s and 3.7 GB)."""
        limit = self.client.settings.max_queues
        count = len(set(names) - {""})
        if count > limit:
            raise AnswerTooLarge(
                f"the selector matches {count:,} queues in {self.name}, more than the "
                f"{limit:,} one read may hold; read fewer — narrow the selector, e.g. "
                "--selector '{namespace=\"team-a\"}' or '{job=\"my-controller\"}' "
                "(profile.selector in the config) — or raise prometheus.max_queues "
                "(QUEUELENS_PROMETHEUS_MAX_QUEUES)")

    def _snapshot(self, at: float, window_s: float, only: list[str] | None = None) -> Snapshot:
        profile = self.profile
        client = self.client
        topology: InstantResult | None = None
        processes: Sequence[Matcher] = ()
        if only:
            topology = client.query(profile.topology_query(window_s, only), at)
            self._check_queue_count({smp.labels.get(profile.queue_label, "")
                                     for smp in topology.samples})
            processes = profile.process_filter(smp.labels for smp in topology.samples) or ()
        queries = profile.queries(window_s, only, processes)

        def instant(promql: str) -> Callable[[], InstantResult]:
            return lambda: client.query(promql, at)

        # The queries beyond the queue are sent only when their metrics exist: a small
        # presence query goes with the others, and the conditional ones follow for the
        # metrics it found — most Prometheus servers have no API-server series or opt-in
        # REST metrics, and 19 empty answers cost the snapshot a quarter of its time.
        # The rates that recorded series can serve (queuelens rules --recording) are read from
        # them or raw once the recorded names' presence is known. Those names are asked apart
        # (their answer counts every recorded series: 13 s at 10,000 queues): a whole-fleet
        # read waits for it, a read of named queues does not (:meth:`_known_presence`) and
        # reads the raw counters until it is known.
        recordable = set(profile.read_rates()) if profile.recorded_presence_regex() else set()
        conditional = [sq for sq in queries if sq.requires]
        probe = profile.presence_query(conditional)
        recorded_probe = profile.recorded_presence_query() if recordable else None
        jobs = {sq.signal: instant(sq.promql) for sq in queries
                if not sq.requires and sq.signal not in recordable}
        if probe is not None:
            asked: str = probe
            jobs["presence"] = lambda: self._fleet_presence(asked, at)
        recorded_answer: InstantResult | None = None
        if recorded_probe is not None:
            rec_asked: str = recorded_probe
            if only:
                recorded_answer = self._known_presence(rec_asked, at)
            else:
                jobs["recorded"] = lambda: self._fleet_presence(rec_asked, at)
        if topology is None:
            jobs["topology"] = instant(profile.topology_query(window_s))
        if not profile.scrape_interval_s:
            jobs["scrape_samples"] = instant(profile.scrape_samples_query(only))
        for i, eff in enumerate(profile.external_effects):
            jobs[f"external:{i}"] = instant(eff.render(window_s))
        results = run_all(jobs, self.client.settings.parallelism, self.timeout_s)
        if topology is not None:
            results["topology"] = topology
        else:
            self._check_queue_count({smp.labels.get(profile.queue_label, "")
                                     for smp in results["topology"].samples})
        replicas: Sequence[Sample] = ()
        present: set[str] = set()
        if probe is not None:
            replicas = results.pop("presence").samples
            present = {smp.labels.get("__name__", "") for smp in replicas}
        if "recorded" in results:
            recorded_answer = results.pop("recorded")
        if recorded_answer is not None:
            present |= {smp.labels.get("__name__", "") for smp in recorded_answer.samples}
        wanted = [sq for sq in conditional if present & set(sq.requires)]
        if recordable:
            queries = profile.queries(window_s, only, processes, recorded=present)
            wanted += [sq for sq in queries if sq.signal in recordable]
            if recorded_answer is None:
                log.debug("snapshot at %s: the recorded series' presence is not known yet; "
                          "the named queues are read from the raw counters", at)
            elif (why := profile.recorded_mismatch(present, window_s)) is not None:
                log.debug("snapshot at %s: %s", at, why)
        if wanted:
            results.update(run_all({sq.signal: instant(sq.promql) for sq in wanted},
                                    self.client.settings.parallelism, self.timeout_s))
        results.update({sq.signal: InstantResult([]) for sq in conditional
                        if sq.signal not in results})

        warnings: list[str] = []
        for res in results.values():
            warnings += [w for w in res.warnings if w not in warnings]
        if (note := _replica_note(profile, replicas, results["topology"].samples)) is not None:
            warnings.append(note)
        by_signal = {sq.signal: sq for sq in queries}
        ql, cl = profile.queue_label, profile.controller_label

        duplicated: dict[str, set[str]] = defaultdict(set)
        """signal -> queues left out of it: their series came twice with the same labels."""

        def keyed(signal: str) -> dict[str, Sample]:
            sq = by_signal.get(signal)
            if sq is None:
                return {}
            label = ql if sq.key.startswith("queue") else cl
            samples = results[signal].samples
            out = {s.labels.get(label, ""): s for s in samples}
            if len(out) < len(samples):
                dups = duplicate_keys(s.labels.get(label, "") for s in samples)
                if signal == "samples_in_window":
                    # The gap check keeps the fewest samples (a gap in either copy counts).
                    for smp in samples:
                        key = smp.labels.get(label, "")
                        if key in dups and (smp.value or 0.0) < (out[key].value or 0.0):
                            out[key] = smp
                else:
                    for key in dups:
                        del out[key]
                    duplicated[signal] |= dups
                warn_duplicates(signal, label, dups, warnings)
            return out

        per_queue = {sq.signal: keyed(sq.signal) for sq in queries
                     if sq.key in ("queue", "controller")}
        buckets: dict[str, dict[str, list[tuple[float, float]]]] = {}
        le_of: dict[str, float | None] = {}  # a dozen distinct le texts, parsed once each
        for signal in ("queue_wait_buckets", "work_buckets"):
            acc: dict[str, list[tuple[float, float]]] = defaultdict(list)
            for labels, value, _special in results[signal].samples:
                text = labels.get("le", "")
                le = le_of[text] if text in le_of else le_of.setdefault(text, parse_le(text))
                if le is not None:
                    acc[labels.get(ql, "")].append((le, math.nan if value is None else value))
            dups = {q for q, pairs in acc.items()
                    if q and len({le for le, _ in pairs}) < len(pairs)}
            for q in dups:
                del acc[q]
            if dups:
                duplicated[signal] |= dups
                warn_duplicates(signal, ql, dups, warnings)
            buckets[signal] = acc
        outcomes: dict[str, dict[str, float]] = defaultdict(dict)
        if "reconcile_results_per_s" in results:
            twice: set[str] = set()
            for s in results["reconcile_results_per_s"].samples:
                if s.value is not None:
                    kinds = outcomes[s.labels.get(cl, "")]
                    kind = s.labels.get("result", "")
                    if kind in kinds:
                        twice.add(s.labels.get(cl, ""))
                    kinds[kind] = s.value
            twice.discard("")
            for c in twice:
                del outcomes[c]
            if twice:
                duplicated["reconcile_results_per_s"] |= twice
                warn_duplicates("reconcile_results_per_s", cl, twice, warnings)

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
        if only:
            names &= set(only)  # a query without a queue label (beyond the queue) names all
        m = profile.metrics
        unknown = sorted((set(profile.workers) & set(only or profile.workers)) - names)
        if unknown:
            warnings.append(
                "the config sets workers for queue(s) not found in this snapshot (check the name "
                "and the selector): "
                + ", ".join(repr(u) for u in unknown)
            )
        order = tuple(sorted(names))
        rows = {q: i for i, q in enumerate(order)}
        t = np.array([at])

        def column(samples: Mapping[str, Sample]) -> np.ndarray:
            out = np.full((len(order), 1), np.nan)
            for q, sm in samples.items():
                i = rows.get(q)
                if i is not None and sm.value is not None:
                    out[i, 0] = sm.value
            return out

        direct = {sig: column(samples) for sig, samples in per_queue.items()
                  if sig != "samples_in_window"}
        for q, kinds in outcomes.items():
            row = rows.get(q)
            if row is None:
                continue
            for kind, value in kinds.items():
                name = f"reconcile_results_per_s.{kind}"
                if name not in direct:
                    direct[name] = np.full((len(order), 1), np.nan)
                direct[name][row, 0] = value
        external = [self._external(q, results) for q in order]
        direct["external_effects_per_s"] = np.array(
            [nan_if_none(value) for value, _ in external]).reshape(-1, 1)
        hists = {prefix: instant_histograms(buckets[signal], rows)
                 for signal, prefix in (("queue_wait_buckets", "queue_wait"),
                                        ("work_buckets", "work"))}
        procs = Processes(profile, results["topology"].samples)
        api = procs.add(instant_rows(results["api_calls"].samples), "api_calls_per_s", "code",
                        "api_calls_by_class_per_s")
        throttle = procs.add(instant_rows(results["throttle_s_per_s"].samples),
                             "throttle_s_per_s")
        beyond_procs: dict[str, Attributed] = {}
        for sq in queries:
            if sq.signal in _PROCESS_BEYOND:
                beyond_procs[sq.signal] = procs.add(
                    instant_rows(results[sq.signal].samples), sq.signal,
                    absent=f"no {sq.metric} series{_PROCESS_BEYOND[sq.signal]}")
        for metric, att in ((m.rest_client_requests, api), (m.rate_limiter_duration, throttle)):
            note = procs.note(metric, att)
            if note and note not in warnings:
                warnings.append(note)
        cpu = Cpu(profile, results, procs, by_signal)
        warnings += [n for n in procs.notes if n not in warnings]
        raw = RawSignals(
            queues=order, t=t, direct=direct, histograms=hists,
            configured_workers=np.array([nan_if_none(profile.configured_workers(q))
                                         for q in order]),
            samples_in_window=(column(per_queue["samples_in_window"])
                               if "samples_in_window" in per_queue else None),
            expected_samples=(window_s / profile.scrape_interval_s
                              if profile.scrape_interval_s
                              else learnt_expected(results, ql, order, window_s)),
            processes=procs.count, queue_process=procs.pairs(order),
            process_series=procs.series)
        derived = derive(raw)
        reasons = _SnapshotReasons(profile, per_queue, buckets, outcomes, procs, api, throttle,
                                   window_s, duplicated)
        reasons.beyond = _Beyond(profile, results, procs, beyond_procs, warnings)
        reasons.cpu = cpu.derived(derived)
        queues = [reasons.queue(i, q, derived, external[i][1], warnings)
                  for i, q in enumerate(order)]
        # values no queue can have (a negative rate, 1e12 workers), named once (the models
        # leave them out: models.verdicts.screen)
        warnings += [p for qs in queues for p in screen(qs).problems if p not in warnings]
        if (note := _over_busy_note(queues)) is not None:
            warnings.append(note)
        return Snapshot(at=at, window_s=window_s, source=self.name, queues=queues,
                        warnings=tuple(warnings))

    def _external(self, q: str, results: Mapping[str, Any]) -> tuple[float | None, str]:
        """The configured external-effects queries for queue ``q`` (instant answers)."""
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

    def range_window_s(self, step_s: float, learnt_s: float | None = None) -> float:
        """Rate window for a range query: :func:`collectors.profile.rate_window_s` with the
        profile's scrape interval, else the slowest learnt one of the read's queues, else
        15 s."""
        return rate_window_s(step_s, self.profile.scrape_interval_s or learnt_s or 15.0)

    def range(
        self, start: float, end: float, step_s: float, queues: Sequence[str] | None = None,
        signals: Collection[str] | None = None,
    ) -> RangeData:
        """Every signal over [start, end] for all queues (or those named); ``signals``: only
        those (and only the queries :func:`models.signals.raw_inputs` says they need — the
        advisor's history needs no histogram, the heaviest answers of a range read).

        The topology query (which process runs which queue) goes first and names the queues;
        a fleet whose answers would pass :func:`_unbatched_points` (and any named list of more
        than :data:`RANGE_BATCH_QUEUES` queues) is then read in batches of that
        many queue names (one query per signal per batch, ``name=~"a|b|…"``), each batch's
        answers decoded into its rows of the result and dropped; the next batch is asked for
        while one is decoded, so a 10,000-queue read holds at most two batches of answers."""
        try:
            a, b, step = plan_range(start, end, step_s)
        except ValueError as exc:
            raise CollectorError(f"invalid range: {exc}") from None
        with self._read() as group:
            return self._range(a, b, step, step_s, queues, signals, group)

    def _range(self, a: int, b: int, step: int, step_s: float, queues: Sequence[str] | None,
               signals: Collection[str] | None, group: QueryGroup) -> RangeData:
        profile = self.profile
        client = self.client
        parallelism = self.client.settings.parallelism
        # Without a configured scrape interval, each queue's is learnt from its samples in the
        # hour before the end: the windows are sized for the slowest-scraped queue (so every
        # window holds ≥ 4 of its samples) and each queue's gaps are judged by its own rate.
        intervals: dict[str, float] = {}
        if not profile.scrape_interval_s:
            named = queues if queues and len(queues) <= RANGE_BATCH_QUEUES else None
            for smp in client.query(profile.scrape_samples_query(named), b).samples:
                learnt = learnt_scrape_interval_s(smp.value)
                q = smp.labels.get(profile.queue_label, "")
                if learnt is not None and learnt < intervals.get(q, math.inf):
                    intervals[q] = learnt  # a series twice: the shorter interval
        read = [intervals[q] for q in queues if q in intervals] if queues else intervals.values()
        window = self.range_window_s(step, max(read, default=None))

        def ranged(promql: str) -> Callable[[], Any]:
            return lambda: client.query_range(promql, a, b, step)

        # A long list of names is not put in one URL: the topology of the whole selector is
        # read and the names are kept here.
        topo_q = profile.topology_query(
            b - a + window, queues if queues and len(queues) <= RANGE_BATCH_QUEUES else None)
        fleet_jobs: dict[str, Callable[[], Any]] = {"topology": lambda: client.query(topo_q, b)}
        # Recorded series stand in for the raw rates when they cover the whole range
        # (present at its start and its end) at this read's rate window.
        recorded_q = profile.recorded_presence_query(since=a)
        recorded_answer: InstantResult | None = None
        if recorded_q is not None and queues:
            # named queues do not wait for the fleet's answer (:meth:`_known_presence`)
            recorded_answer = self._known_presence(recorded_q, b)
        elif recorded_q is not None:
            fleet_jobs["recorded"] = lambda: self._fleet_presence(recorded_q, b)
        needed = raw_inputs(signals) if signals is not None else None

        def wanted_query(sq: SignalQuery) -> bool:
            return needed is None or _RAW_OF_QUERY.get(sq.signal, sq.signal) in needed

        if needed is None or "external_effects_per_s" in needed:
            for i, eff in enumerate(profile.external_effects):
                fleet_jobs[f"external:{i}"] = ranged(eff.render(window))
        fleet = run_all(fleet_jobs, parallelism, self.timeout_s)
        recorded_answer = fleet.pop("recorded", recorded_answer)
        recorded = (profile.recorded_found(smp.labels for smp in recorded_answer.samples)
                    if recorded_answer is not None else set())
        if recorded_q is not None and recorded_answer is None:
            log.debug("range [%s, %s]: the recorded series' presence is not known yet; the "
                      "named queues are read from the raw counters", a, b)
        elif (why := profile.recorded_mismatch(recorded, window)) is not None:
            log.debug("range [%s, %s]: %s", a, b, why)
        known = sorted({smp.labels.get(profile.queue_label, "")
                        for smp in fleet["topology"].samples} - {""})
        wanted = list(queues) if queues else known
        self._check_queue_count(set(wanted))
        batches: list[list[str] | None]
        points = (b - a) // step + 1
        histograms = needed is None or any(r.startswith("histogram:") for r in needed)
        if not queues and len(wanted) * points <= _unbatched_points(histograms):
            batches = [None]  # one small answer per signal: no names in the URL
        elif len(wanted) > RANGE_BATCH_QUEUES:
            batches = [wanted[k:k + RANGE_BATCH_QUEUES]
                       for k in range(0, len(wanted), RANGE_BATCH_QUEUES)]
        else:
            batches = [list(queues) if queues else None]
        warnings: list[str] = []
        for res in fleet.values():
            warnings += [w for w in res.warnings if w not in warnings]
        if step != step_s:
            warnings.append(f"step widened from {step_s:g} s to {step} s (whole seconds, at most "
                            f"11,000 points per series)")
        t = a + step * np.arange((b - a) // step + 1, dtype=np.float64)
        out = RangeOutput(t, wanted, len(batches))
        topology: Sequence[Sample] = fleet["topology"].samples
        rows_of: dict[str, list[Sample]] = defaultdict(list)
        for smp in topology:
            rows_of[smp.labels.get(profile.queue_label, "")].append(smp)

        def batch_topology(batch: list[str] | None) -> Sequence[Sample]:
            if batch is None:
                return topology
            return [smp for q in batch for smp in rows_of.get(q, ())]

        def batch_queries(batch: list[str] | None) -> list[SignalQuery]:
            # The per-process queries go with their batch, kept to the batch's processes: a
            # fleet-wide one answered 73 MiB at 10,000 processes (over the answer cap), and a
            # one-queue page read every process of the fleet.
            limit: Sequence[Matcher] | None = ()
            if batch is not None or queues:
                limit = profile.process_filter(smp.labels for smp in batch_topology(batch))
            return [sq for sq in profile.queries(window, batch, limit or (), recorded)
                    if wanted_query(sq) and sq.signal not in SNAPSHOT_ONLY
                    and (sq.key in _RANGE_KEYS
                         or (sq.key.startswith("process") and limit is not None))]

        # Pipelined: batch k+1's queries are in flight while batch k is decoded, so the
        # connections never idle at a batch boundary; at most two batches' answers are held.
        pool = QueryPool(max(1, parallelism), group)
        pending: deque[tuple[list[str] | None, list[SignalQuery], dict[str, Future[Any]]]] = \
            deque()

        def submit(batch: list[str] | None) -> None:
            queries = batch_queries(batch)
            pending.append((batch, queries, {sq.signal: pool.submit(ranged(sq.promql))
                                             for sq in queries}))

        try:
            for batch in batches[:2]:
                submit(batch)
            for k in range(len(batches)):
                batch, queries, futures = pending.popleft()
                answers = gather(futures, group,
                                  wait_bound_s(len(futures), parallelism, self.timeout_s))
                if k + 2 < len(batches):
                    submit(batches[k + 2])
                results = {**fleet, **answers}
                del answers
                for sq in queries:
                    warnings += [w for w in results[sq.signal].warnings if w not in warnings]
                procs = Processes.for_range(profile, batch_topology(batch), results, t,
                                             float(step), warnings)
                queries = [sq for sq in queries if not sq.key.startswith("process")]
                raw = range_raw(profile, results, queries, batch, t, float(step), window,
                                 procs, warnings, intervals)
                del results
                out.add(derive(raw))
        finally:
            pool.close()
        queues_out, matrices, gap = out.result()
        if signals is not None:
            keep = set(signals)
            matrices = {k: v for k, v in matrices.items() if k in keep}
        return RangeData(start=a, end=b, step_s=step, source=self.name, queues=queues_out,
                         t=t, signals=matrices, notes=tuple(warnings),
                         gap=gap if gap.any() else None)


_RAW_OF_QUERY: Mapping[str, str] = {
    "queue_wait_buckets": "histogram:queue_wait", "work_buckets": "histogram:work",
    "api_calls": "process:api_calls_per_s", "throttle_s_per_s": "process:throttle_s_per_s",
    "cpu_used_cores": "process:cpu_used_cores",
}
"""Profile query signal -> the raw input of :func:`models.signals.derive` it answers (the
others answer the direct matrix of their own name)."""

_RANGE_KEYS = frozenset({"queue", "controller", "queue_le", "controller_result"})
"""The keys of the queries a range batch reads (per process and per cluster: read once)."""

PRESENCE_REUSE_S = 60.0
"""How long a fleet-wide presence answer at one instant is reused by the reads at that
instant (:meth:`PrometheusSource._fleet_presence`): one cold start's batches, not a later
refresh (it reads at a later instant)."""
PRESENCE_MEMO_SIZE = 8
PRESENCE_WAIT_MARGIN_S = 5.0
"""A read waiting for the presence query another read sent waits for that query's own
timeout and this much more (the answer's decoding) before it gives up."""

RANGE_BATCH_QUEUES = 250
"""Queue names per batch of a large range read: 250 names of 60 characters keep each query's
URL near 15 kB (under the 1 MB header limit of Go's HTTP server and common proxies' 64 kB), and
a batch's bucket answer near 50 MB of decoded JSON at 2 h / 60 s (two batches are in flight)."""

BATCH_GRID_POINTS = 121
"""Points per series of the read :data:`RANGE_BATCH_QUEUES` was sized for (2 h at 60 s)."""
BUCKETS_PER_HISTOGRAM = 12
"""About the series a histogram query answers per queue (client-go's 10 decade buckets, the
``+Inf`` bucket and a spare): a read without histograms answers that many times fewer."""


def _unbatched_points(histograms: bool) -> int:
    """Queue × point budget under which a whole-fleet range read sends each signal once,
    without a name filter: the answer of a full batch (:data:`RANGE_BATCH_QUEUES` queues at
    :data:`BATCH_GRID_POINTS` points, its bucket series if histograms are read, else as many
    series-points of plain rates). A refresh that reads only the new steps (a few points,
    :mod:`collectors.incremental`) of 10,000 queues is then 15 requests, not 40 batches of
    them; a 2 h read of 10,000 queues stays batched."""
    return RANGE_BATCH_QUEUES * BATCH_GRID_POINTS * (1 if histograms else BUCKETS_PER_HISTOGRAM)


# --- a snapshot's queues, with the reason for every missing value ----------------------


class _Beyond:
    """The signals beyond the queue (issue 13) for each queue of a snapshot: the priority
    queue's depth by priority, why the per-process REST-client figures are missing, and the
    API server's figures of the queue's cluster — joined here on the profile's
    ``cluster_labels`` through the topology answer, since one cluster value goes to every queue
    of that cluster (no sum over queues is involved)."""

    def __init__(self, profile: Profile, results: Mapping[str, Any], procs: Processes,
                 attributed: Mapping[str, Attributed], warnings: list[str]) -> None:
        self.profile = profile
        self.procs = procs
        self.attributed = attributed
        queries = {sq.signal: sq for sq in profile.queries(1.0)}
        self.metric_of = {k: sq.metric for k, sq in queries.items()}
        labels = profile.cluster_labels
        self.clusters_of: dict[str, set[tuple[str, ...]]] = defaultdict(set)
        for smp in results["topology"].samples:
            self.clusters_of[smp.labels.get(profile.queue_label, "")].add(
                tuple(smp.labels.get(lb, "") for lb in labels))
        self.priority: dict[str, dict[str, dict[str, float]]] = {}
        for signal in ("depth_by_priority", "depth_min_by_priority"):
            by_queue: dict[str, dict[str, float]] = defaultdict(dict)
            for smp in results[signal].samples if signal in results else ():
                if smp.value is not None:
                    by_queue[smp.labels.get(profile.queue_label, "")][
                        smp.labels.get("priority", "")] = smp.value
            self.priority[signal] = by_queue
        read = self.priority["depth_by_priority"]
        many = sorted(
            q for smp in (results["priority_series"].samples
                          if "priority_series" in results else ())
            if uncapped(int(smp.value or 0), CAPPED_PRIORITY in read.get(
                q := smp.labels.get(profile.queue_label, ""), {})))
        if many:
            shown = ", ".join(repr(q) for q in many[:5]) + (" …" if len(many) > 5 else "")
            warnings.append(
                f"{len(many)} queue(s) expose more than {PRIORITY_SERIES_MAX} priority values "
                f"of {profile.metrics.depth} ({shown}): only the {PRIORITY_SERIES_MAX} deepest "
                "are read. controller-runtime#3396 saw 810K such series from incrementing "
                "priorities; v0.23 caps them at 25 (PR #3419): upgrade, or keep priorities to "
                "a few fixed values")
        self.cluster: dict[str, dict[tuple[str, ...], Any]] = {}
        """signal -> cluster key -> a value, or {reason|name: value}."""
        for signal in _CLUSTER_FIELDS:
            sq = queries.get(signal)
            if sq is None or signal not in results:
                continue
            sub = {"cluster_reason": "reason", "cluster_name": "name"}.get(sq.key)
            out: dict[tuple[str, ...], Any] = {}
            # Each answer is a `sum by` the cluster labels (and the level): one row per key.
            # A mean with no request in the window is 0/0, NaN: kept, so that the queue is
            # told "no request in the window" rather than "not scraped".
            for smp in results[signal].samples:
                key = tuple(smp.labels.get(lb, "") for lb in labels)
                value = smp.value if smp.value is not None else (
                    math.nan if smp.special == "NaN" else None)
                if value is None:
                    continue
                if sub is None:
                    out[key] = value
                else:
                    out.setdefault(key, {})[smp.labels.get(sub, "")] = value
            self.cluster[signal] = out
        self._clustered = [sig for sig in _CLUSTER_FIELDS if self.cluster.get(sig)]
        self._constant: dict[str, str] = {
            sig: (f"no {self.metric_of.get(sig, sig)} series (the API server is not scraped "
                  "by this Prometheus, or no request reached the level "
                  f"{profile.priority_level!r})")
            for sig in _CLUSTER_FIELDS if not self.cluster.get(sig)}
        self._constant["apf_priority_level"] = (
            f"no API Priority and Fairness series of the level {profile.priority_level!r} "
            "for this queue's cluster")
        self._plain_queue = (f"not a priority queue: no {profile.metrics.depth} series with a "
                             "priority label")
        self._per_queue_attributed = []
        for sig, att in attributed.items():
            if att.empty or att.series is None:
                self._constant[sig] = att.absent_reason  # procs.reason's answer for any queue
            else:
                self._per_queue_attributed.append((sig, att))

    def fields(self, q: str, have: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        """(the fields beyond the queue, why the missing ones are missing) of queue ``q``;
        ``have``: its derived values (the per-process ones are attributed there)."""
        # The reasons that are the same for every queue (no series at all: the common case,
        # 10,000 queues) are written once, in __init__'s _constant.
        missing = dict(self._constant)
        for signal, att in self._per_queue_attributed:
            if have.get(signal) is None:
                missing[signal] = self.procs.reason(q, att) or "not available"
        if have.get("priority_series") is None:
            missing["priority_series"] = self._plain_queue
        values: dict[str, Any] = {}
        if self._clustered:
            self._cluster_values(q, values, missing)
        for signal in ("depth_by_priority", "depth_min_by_priority"):
            prio = self.priority[signal].get(q)
            if prio:
                values[signal] = dict(sorted(prio.items(), key=lambda kv: _prio(kv[0])))
        return values, missing

    def _cluster_values(self, q: str, values: dict[str, Any], missing: dict[str, str]) -> None:
        keys = self.clusters_of.get(q, set())
        for signal in self._clustered:
            by_key = self.cluster[signal]
            metric = self.metric_of.get(signal, signal)
            if len(keys) > 1:
                missing[signal] = ("this queue runs in several clusters "
                                   f"({len(keys)}): its API server cannot be told")
                continue
            key = next(iter(keys), tuple("" for _ in self.profile.cluster_labels))
            if key not in by_key:
                where = ", ".join(f"{lb}={v}" for lb, v in
                                  zip(self.profile.cluster_labels, key, strict=True))
                missing[signal] = f"no {metric} series for this queue's cluster ({where})"
                continue
            values[signal] = by_key[key]
        rejected = values.pop("apf_rejected_per_s", None)
        if rejected is not None:
            values["apf_rejected_by_reason"] = dict(sorted(rejected.items()))
            values["apf_rejected_per_s"] = float(sum(rejected.values()))
        webhooks = values.pop("admission_webhook_mean_s", None)
        if webhooks is not None:
            values["admission_webhook_mean_s"] = {
                k: v for k, v in sorted(webhooks.items()) if math.isfinite(v)}
            if not values["admission_webhook_mean_s"]:
                missing["admission_webhook_mean_s"] = (
                    f"{self.metric_of['admission_webhook_mean_s']}: no admission in the "
                    "window (0/0)")
        for k in list(values):
            if isinstance(values[k], float) and not math.isfinite(values[k]):
                missing[k] = f"{self.metric_of.get(k, k)}: no request in the window (0/0)"
                del values[k]
        if any(k.startswith("apf_") for k in values):
            values["apf_priority_level"] = self.profile.priority_level
            missing.pop("apf_priority_level", None)


def _prio(text: str) -> tuple[int, float, str]:
    """Priorities in order, highest first (numbers; then anything else by name)."""
    try:
        return (0, -float(text), text)
    except ValueError:
        return (1, 0.0, text)


class _SnapshotReasons:
    """Builds each :class:`QueueSnapshot` from the derived column, with the reason for every
    value that is missing (the reasons name the metric and label the user has to check)."""

    def __init__(self, profile: Profile, per_queue: Mapping[str, Mapping[str, Sample]],
                 buckets: Mapping[str, Mapping[str, list[tuple[float, float]]]],
                 outcomes: Mapping[str, Mapping[str, float]], procs: Processes,
                 api: Attributed, throttle: Attributed, window_s: float,
                 duplicated: Mapping[str, set[str]]) -> None:
        self.profile = profile
        self.duplicated = duplicated
        self.per_queue = per_queue
        self.buckets = buckets
        self.outcomes = outcomes
        self.procs = procs
        self.api = api
        self.throttle = throttle
        self.window_s = window_s
        self.metric_of = {sq.signal: sq.metric for sq in profile.queries(window_s)}
        self.controller_keyed = {sq.signal for sq in profile.queries(window_s)
                                 if sq.key == "controller"}
        self._columns: dict[str, list[float]] | None = None
        self.beyond: _Beyond | None = None
        """The fields beyond the queue, when the read has them."""
        self.cpu: Cpu | None = None
        """The controller's CPU fields, when the read has them."""
        self._keyed: dict[str, list[tuple[str, str]]] = defaultdict(list)
        """Mapping fields (``reconcile_results_per_s``…) -> their (signal, key) names."""

    def columns(self, derived: DerivedSignals) -> dict[str, list[float]]:
        """Each derived signal's one column as Python floats (converted once, not per queue)."""
        if self._columns is None:
            self._columns = {k: v[:, 0].tolist() for k, v in derived.values.items()}
            for k in self._columns:
                field, _, kind = k.partition(".")
                if kind:
                    self._keyed[field].append((k, kind))
        return self._columns

    def _why(self, signal: str, q: str) -> str | None:
        """Why a directly read signal has no value for ``q`` (None: it has one)."""
        profile = self.profile
        metric = self.metric_of.get(signal, signal)
        if signal not in self.per_queue:
            return (f"{metric} is not read by the {profile.name} profile "
                    "(no controller_runtime_* metrics)")
        sample = self.per_queue[signal].get(q)
        if sample is None:
            label = (profile.controller_label if signal in self.controller_keyed
                     else profile.queue_label)
            if q in self.duplicated.get(signal, ()):
                return DUPLICATE_REASON.format(metric=metric, label=label, q=q)
            return f"no {metric} series with {label}={q!r} in the window"
        if sample.value is None:
            return _special_reason(metric, sample.special)
        return None

    def queue(self, i: int, q: str, derived: DerivedSignals, external_reason: str,
              warnings: list[str]) -> QueueSnapshot:
        profile = self.profile
        m = profile.metrics
        values: dict[str, Any] = {}
        for name, col in self.columns(derived).items():
            v = col[i]
            values[name] = v if v == v else None  # NaN is the only value unequal to itself
        missing: dict[str, str] = {}

        def need(name: str, reason: str | None) -> None:
            if values.get(name) is None:
                missing[name] = reason or "not available"

        for name in _DIRECT_FIELDS:
            if values.get(name) is None:
                missing[name] = self._why(name, q) or "not available"
        thr, busy = values.get("throughput_per_s"), values.get("busy_workers")
        need("service_mean_s", "no completed items in the window"
             if thr is not None and busy is not None else "needs throughput_per_s and busy_workers")
        reason = self._why("workers", q)
        if values.get("workers") is None:
            need("workers", f"{reason}; no worker count for this queue in the config "
                            "(profile.workers)")
        need("utilization", "needs busy_workers and workers")
        wait_reason = self._why("queue_wait_mean_s", q)
        if wait_reason and "NaN" in wait_reason:
            wait_reason = f"{m.queue_duration}: no item left the queue in the window"
        need("queue_wait_mean_s", wait_reason)
        for signal, prefix, metric in (("queue_wait_buckets", "queue_wait", m.queue_duration),
                                       ("work_buckets", "work", m.work_duration)):
            pairs = self.buckets[signal].get(q)
            for p, qv in QUANTILES:
                name = f"{prefix}_{p}_s"
                if not pairs:
                    need(name, DUPLICATE_REASON.format(metric=metric + "_bucket",
                                                        label=profile.queue_label, q=q)
                         if q in self.duplicated.get(signal, ()) else
                         f"no {metric}_bucket series with {profile.queue_label}={q!r}")
                    continue
                value = values.get(name)
                if value is None:
                    need(name, f"{metric}: {_bucket_reason(pairs)}")
                elif derived.lower_bound[name][i, 0]:
                    warnings.append(
                        f"{q}: {name} is a lower bound: more than {100 * (1 - qv):g} % of "
                        f"items took longer than the highest finite bucket of {metric} "
                        f"({value:g} s)")
        results_by_kind = {kind: values[k] for k, kind in self._keyed["reconcile_results_per_s"]
                           if values[k] is not None}
        if not results_by_kind and q not in self.outcomes:
            missing["reconcile_results_per_s"] = (
                DUPLICATE_REASON.format(metric=m.reconcile_total,
                                         label=profile.controller_label, q=q)
                if q in self.duplicated.get("reconcile_results_per_s", ()) else
                f"no {m.reconcile_total} series with {profile.controller_label}={q!r}"
                if profile.has_controller_metrics
                else f"{m.reconcile_total} is not read by the {profile.name} profile")
        need("api_calls_per_s", self.procs.reason(q, self.api))
        need("throttle_s_per_s", self.procs.reason(q, self.throttle))
        need("external_effects_per_s", external_reason)
        littles_reason = ("arrival_rate_per_s × queue_wait_mean_s is 0"
                          if None not in (values.get("depth_mean"),
                                          values.get("arrival_rate_per_s"),
                                          values.get("queue_wait_mean_s"))
                          else "needs depth_mean, arrival_rate_per_s and queue_wait_mean_s")
        need("littles_law_ratio", littles_reason)

        if derived.gap[i, 0]:
            n = self.per_queue["samples_in_window"][q].value or 0.0
            cov = float(derived.coverage[i, 0]) if derived.coverage is not None else 0.0
            reason = (f"scrape gap: only {n:g} samples ({100 * cov:.0f} % of those expected) in "
                      f"the {self.window_s:g} s window; a rate over it would be under-reported")
            for name in RATE_FIELDS:
                missing[name] = reason
            if q in self.outcomes:
                missing["reconcile_results_per_s"] = reason
            results_by_kind = {}
            warnings.append(f"{q}: {reason}; last values (depth, unfinished work) may be stale")

        classes = {kind: values[k] for k, kind in self._keyed["api_calls_by_class_per_s"]
                   if values[k] is not None}
        if values.get("api_calls_per_s") is None:
            classes = {}
        fields: dict[str, Any] = {name: values.get(name) for name in _FIELDS}
        if self.beyond is not None:
            more, why = self.beyond.fields(q, fields)
            fields.update(more)
            missing.update(why)
        bounds = {k: b for k, b in derived.quantile_bounds(i, 0).items()
                  if fields.get(k) is not None}
        if self.cpu is not None:
            more, why, cpu_bounds = self.cpu.fields(i, q, warnings)
            fields.update(more)
            missing.update(why)
            bounds.update(cpu_bounds)
        plabels = self.procs.process_labels(q)
        return QueueSnapshot(
            queue=q,
            labels={profile.queue_label: q, **plabels},
            process=",".join(f"{k}={v}" for k, v in plabels.items()) or None,
            reconcile_results_per_s=results_by_kind,
            api_calls_by_class_per_s=dict(sorted(classes.items())),
            missing=missing,
            quantile_bounds=bounds,
            **fields,
        )


_PROCESS_BEYOND: Mapping[str, str] = {
    "api_request_s_per_s": " (controller-runtime exposes it only after "
                           "metrics.RegisterRESTClientMetrics)",
    "api_retries_per_s": " (controller-runtime exposes it only after "
                         "metrics.RegisterRESTClientMetrics)",
    "api_writes_per_s": "",
    **dict.fromkeys(("served_webhook_s_per_s", "served_webhook_requests_per_s",
                     "served_webhook_in_flight"),
                    " (the manager serves no admission or conversion webhook)"),
}
"""The per-process REST-client signals beyond the request count, and what their absence
usually means."""

_CLUSTER_FIELDS: tuple[str, ...] = (
    "apf_wait_mean_s", "apf_rejected_per_s", "apf_dispatched_per_s", "apf_inqueue_mean",
    "apf_seats_in_use_mean", "apf_seat_limit", "apiserver_write_latency_mean_s",
    "apiserver_write_sli_mean_s", "admission_webhook_mean_s",
)
"""The API server's signals, one value (or one per reason / webhook) per cluster."""

SNAPSHOT_ONLY = frozenset({"depth_while_idle", "depth_by_priority", "depth_min_by_priority",
                           "priority_series", "reconcile_panics_per_s",
                           "reconcile_timeouts_per_s", "terminal_errors_per_s",
                           *_PROCESS_BEYOND, *_CLUSTER_FIELDS,
                           *(c for c in CPU_PROCESS_SIGNALS if c != "cpu_used_cores"),
                           *CPU_CONTAINER_SIGNALS})
"""Signals read by snapshots only: a subquery per range step costs more than the rules that
read them (the hot-key rule reads the snapshot) are worth; the signals beyond the queue
(issue 13) and the controller's CPU (issue 20) are read by rules that judge the snapshot —
but for the process's CPU in cores, which the CPU limit is judged by at the demand's peaks
over the range (issue 35)."""

_DIRECT_FIELDS = (
    "arrival_rate_per_s", "throughput_per_s", "busy_workers", "depth_mean", "depth_current",
    "depth_while_idle",
    "retries_per_s", "errors_per_s", "unfinished_work_s", "unfinished_work_growth",
    "longest_running_s", "reconcile_panics_per_s", "reconcile_timeouts_per_s",
    "terminal_errors_per_s",
)
"""Fields read as they are: their reason when missing is about the one query behind them."""

_FIELDS = (
    "arrival_rate_per_s", "throughput_per_s", "service_mean_s", "busy_workers", "workers",
    "utilization", "depth_mean", "depth_current", "depth_while_idle", "queue_wait_mean_s",
    *(f"{h}_{p}_s" for h in HISTOGRAMS for p, _ in QUANTILES),
    "retries_per_s", "errors_per_s", "api_calls_per_s", "throttle_s_per_s",
    "external_effects_per_s", "unfinished_work_s", "unfinished_work_growth",
    "longest_running_s", "littles_law_ratio", "reconcile_panics_per_s",
    "reconcile_timeouts_per_s", "terminal_errors_per_s", "priority_series", *_PROCESS_BEYOND,
)
"""The scalar fields of :class:`QueueSnapshot`, as derived signals."""


def _bucket_reason(pairs: Sequence[tuple[float, float]]) -> str:
    bounds = {le for le, _ in pairs}
    if not any(math.isinf(b) and b > 0 for b in bounds):
        return "the histogram has no +Inf bucket"
    if len(bounds) < 2:
        return "the histogram has fewer than two buckets"
    return "no observations in the window"


