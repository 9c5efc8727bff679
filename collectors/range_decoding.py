"""The range read's answers as :class:`models.signals.RawSignals` (one batch of queues on
the read's time grid, :func:`range_raw`) and the batches' derived rows written into one matrix
per signal (:class:`RangeOutput`)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from collectors.decoding import (
    duplicate_keys,
    nan_if_none,
    note_dropped,
    place_series,
    scatter_series,
    warn_duplicates,
)
from collectors.histogram import parse_le
from collectors.processes import Processes
from collectors.profile import Profile, SignalQuery, learnt_scrape_interval_s
from collectors.prom_client import RangeResult, RangeSeries
from models.signals import DerivedSignals, Histogram, RawSignals

__all__ = ["RangeOutput", "learnt_expected", "range_raw"]


class RangeOutput:
    """The rows of every batch of a range read, written into one matrix per signal as each
    batch arrives (a batch's own matrices are dropped right after)."""

    def __init__(self, t: np.ndarray, names: Sequence[str], batches: int) -> None:
        self.t = t
        self.single: DerivedSignals | None = None
        self.batches = batches
        self.names = sorted(set(names))
        self.rows = {q: i for i, q in enumerate(self.names)}
        self.seen = np.zeros(len(self.names), dtype=bool)
        self.signals: dict[str, np.ndarray] = {}
        self.gap = np.zeros((len(self.names) if batches > 1 else 0, len(t)), dtype=bool)

    def add(self, derived: DerivedSignals) -> None:
        if self.batches == 1:
            self.single = derived
            return
        idx = np.array([self.rows[q] for q in derived.queues], dtype=np.int64)
        self.seen[idx] = True
        self.gap[idx] = derived.gap
        for name, v in derived.values.items():
            if not np.isfinite(v).any():
                continue
            m = self.signals.get(name)
            if m is None:
                m = self.signals[name] = np.full((len(self.names), len(self.t)), np.nan)
            m[idx] = v

    def result(self) -> tuple[tuple[str, ...], dict[str, np.ndarray], np.ndarray]:
        """Queues, signal matrices and scrape-gap mask (rows in the queues' order)."""
        if self.single is not None:
            d = self.single
            return (d.queues, {k: v for k, v in d.values.items() if np.isfinite(v).any()},
                    d.gap)
        if self.seen.all():
            return tuple(self.names), self.signals, self.gap
        keep = np.flatnonzero(self.seen)
        return (tuple(self.names[i] for i in keep),
                {k: v[keep] for k, v in self.signals.items()}, self.gap[keep])


def range_raw(profile: Profile, results: Mapping[str, Any], queries: Sequence[SignalQuery],
               queues: Sequence[str] | None, t: np.ndarray, step: float, window_s: float,
               procs: Processes, warnings: list[str],
               intervals: Mapping[str, float]) -> RawSignals:
    """Range answers decoded straight into (queues × times) matrices on the read's grid: each
    answer is scattered in one operation (its points are flat arrays, see
    :class:`collectors.prom_client.RangeResult`). ``intervals``: the learnt scrape interval
    of each queue (a full window holds window ÷ interval of its samples)."""
    ql, cl = profile.queue_label, profile.controller_label
    wanted = set(queues) if queues else None
    label_of = {"queue": ql, "controller": cl, "controller_result": cl, "queue_le": ql}
    names: set[str] = set()
    for sq in queries:
        res: RangeResult = results[sq.signal]
        note_dropped(sq.signal, res, warnings)
        label = label_of.get(sq.key)
        if label is not None:
            names |= {lb.get(label, "") for lb in res.labels}
    names.discard("")
    if wanted is not None:
        names &= wanted
    order = tuple(sorted(names))
    rows = {q: i for i, q in enumerate(order)}
    shape = (len(order), len(t))

    def place(out: np.ndarray, row: int, s: RangeSeries) -> None:
        place_series(out, row, s, t, step)

    direct: dict[str, np.ndarray] = {}
    counts = None
    for sq in queries:
        label = label_of.get(sq.key)
        if label is None or sq.key == "queue_le":
            continue
        res = results[sq.signal]
        series_row = np.array([rows.get(lb.get(label, ""), -1) for lb in res.labels],
                              dtype=np.int64)
        keys = ([f"{lb.get(label, '')}\x00{lb.get('result', '')}" for lb in res.labels]
                if sq.key == "controller_result" else [lb.get(label, "") for lb in res.labels])
        dups = duplicate_keys(keys) if len(set(keys)) < len(keys) else set()
        if dups:
            twice = np.array([k in dups for k in keys])
            warn_duplicates(sq.signal, label, {k.split("\x00")[0] for k in dups}, warnings)
            if sq.signal == "samples_in_window":  # the gap check keeps the fewest samples
                extra = np.full(shape, np.nan)
                for j in np.flatnonzero(twice):
                    one = np.full(shape, np.nan)
                    only = np.full(len(keys), -1, dtype=np.int64)
                    only[j] = series_row[j]
                    scatter_series(one, res, only, t, step)
                    extra = np.fmin(extra, one)
                series_row = np.where(twice, -1, series_row)
                out = np.full(shape, np.nan)
                scatter_series(out, res, series_row, t, step)
                counts = np.fmin(out, extra)
                continue
            series_row = np.where(twice, -1, series_row)
        if sq.key == "controller_result":
            kinds = [lb.get("result", "") for lb in res.labels]
            for kind in sorted(set(kinds)):
                mine = np.where(np.array([k == kind for k in kinds]), series_row, -1)
                out = np.full(shape, np.nan)
                scatter_series(out, res, mine, t, step)
                if np.isfinite(out).any():
                    direct[f"reconcile_results_per_s.{kind}"] = out
            continue
        out = np.full(shape, np.nan)
        scatter_series(out, res, series_row, t, step)
        if sq.signal == "samples_in_window":
            counts = out
        else:
            direct[sq.signal] = out
    if all(f"external:{i}" in results for i in range(len(profile.external_effects))):
        direct.update(_range_external(profile, results, order, rows, place, shape))
    hists = {prefix: _range_layouts(results[signal], ql, rows, t, step, signal, warnings)
             for signal, prefix in (("queue_wait_buckets", "queue_wait"),
                                    ("work_buckets", "work")) if signal in results}
    pairs = procs.pairs(order)

    return RawSignals(
        queues=order, t=t, direct=direct, histograms=hists,
        configured_workers=np.array([nan_if_none(profile.configured_workers(q)) for q in order]),
        samples_in_window=counts,
        expected_samples=(window_s / profile.scrape_interval_s if profile.scrape_interval_s
                          else np.array([window_s / intervals[q] if q in intervals
                                         else math.nan for q in order]).reshape(-1, 1)),
        processes=procs.count, queue_process=pairs,
        process_series=procs.series_for(np.unique(pairs[1])))


def learnt_expected(results: Mapping[str, Any], queue_label: str,
                       order: Sequence[str], window_s: float) -> np.ndarray | None:
    """(Q, 1) samples a full window holds for each queue: window ÷ its learnt scrape interval
    (:func:`collectors.profile.learnt_scrape_interval_s`); NaN where none was learnt."""
    res = results.get("scrape_samples")
    if res is None:
        return None
    by_queue: dict[str, float | None] = {}
    for s in res.samples:  # a series twice: the shorter interval (more samples expected)
        q, iv = s.labels.get(queue_label, ""), learnt_scrape_interval_s(s.value)
        old = by_queue.get(q)
        by_queue[q] = iv if old is None or (iv is not None and iv < old) else old
    return np.array([window_s / iv if (iv := by_queue.get(q)) else math.nan
                     for q in order], dtype=np.float64).reshape(-1, 1)


def _range_layouts(res: RangeResult, label: str, rows: Mapping[str, int], t: np.ndarray,
                   step: float, signal: str, warnings: list[str]) -> list[Histogram]:
    """Bucket series grouped by queue, then by bucket layout: (queues, times, buckets)."""
    per_q: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for j, lb in enumerate(res.labels):
        i = rows.get(lb.get(label, ""))
        le = parse_le(lb.get("le", ""))
        if i is not None and le is not None:
            per_q[i].append((le, j))
    twice = [i for i, pairs in per_q.items() if len({le for le, _ in pairs}) < len(pairs)]
    if twice:
        names = {q for q, i in rows.items() if i in set(twice)}
        warn_duplicates(signal, label, names, warnings)
        for i in twice:
            del per_q[i]
    groups: dict[tuple[float, ...], list[int]] = defaultdict(list)
    for i, pairs in per_q.items():
        pairs.sort(key=lambda p: p[0])
        groups[tuple(le for le, _ in pairs)].append(i)
    out = []
    for bounds, members in groups.items():
        series_row = np.full(len(res.labels), -1, dtype=np.int64)
        series_col = np.zeros(len(res.labels), dtype=np.int64)
        for r, i in enumerate(members):
            for b, (_, j) in enumerate(per_q[i]):
                series_row[j], series_col[j] = r, b
        counts = np.full((len(members), len(bounds), len(t)), np.nan)
        scatter_series(counts, res, series_row, t, step, series_col)
        out.append(Histogram(np.array(bounds), np.ascontiguousarray(counts.transpose(0, 2, 1)),
                             np.array(members, dtype=np.int64)))
    return out


def _range_external(profile: Profile, results: Mapping[str, Any], order: Sequence[str],
                    rows: Mapping[str, int], place: Callable[[np.ndarray, int, RangeSeries], None],
                    shape: tuple[int, int]) -> dict[str, np.ndarray]:
    """The configured external-effects queries, summed per queue of their group."""
    ql, cl = profile.queue_label, profile.controller_label
    total = np.zeros(shape)
    seen = np.zeros(shape, dtype=bool)
    for i, eff in enumerate(profile.external_effects):
        ss = results[f"external:{i}"].series
        labelled = [s for s in ss if s.labels.get(ql) or s.labels.get(cl)]
        members = [q for q in order if eff.group.matches(q)]
        if not members:
            continue
        one = np.full((1, shape[1]), np.nan)
        if labelled:
            for s in labelled:
                for key in {s.labels.get(ql) or "", s.labels.get(cl) or ""}:
                    r = rows.get(key)
                    if r is not None and eff.group.matches(key):
                        one[:] = np.nan
                        place(one, 0, s)
                        ok = np.isfinite(one[0])
                        total[r][ok] += one[0][ok]
                        seen[r] |= ok
        else:
            agg = np.zeros(shape[1])
            agg_ok = np.zeros(shape[1], dtype=bool)
            for s in ss:
                one[:] = np.nan
                place(one, 0, s)
                ok = np.isfinite(one[0])
                agg[ok] += one[0][ok]
                agg_ok |= ok
            for q in members:
                r = rows[q]
                total[r][agg_ok] += agg[agg_ok]
                seen[r] |= agg_ok
    if not seen.any():
        return {}
    return {"external_effects_per_s": np.where(seen, total, np.nan)}
