"""A controller-runtime priority queue, simulated by its mechanism and scraped.

``pkg/controller/priorityqueue``: a worker that asks for an item gets the highest priority
waiting (FIFO within a priority); only ``workqueue_depth`` carries the ``priority`` label,
the other workqueue metrics blend the priorities. Two priorities (0 and -100) of Poisson
arrivals over distinct keys, c workers, exponential work times. Every ``step_s`` the
series a scrape would read: depth per priority, adds, the work histogram, the worker gauges.
The starvation verdict is judged from what Prometheus records of this, never from the
simulation's own numbers.
"""

from __future__ import annotations

import heapq
from collections import deque

import numpy as np

START = 1704067200
DURATION_S = 3600
STEP_S = 15
BUCKETS = tuple(1e-8 * 10 ** i for i in range(12))


def _go(value: float) -> str:
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def simulate(queue: str, *, workers: int, high_per_s: float, low_per_s: float,
             service_s: float, seed: int) -> list[str]:
    """OpenMetrics lines (no ``# TYPE``/``# EOF``) of one controller, one per sample."""
    rng = np.random.default_rng(seed)
    arrivals: list[tuple[float, int]] = []
    for prio, rate in ((0, high_per_s), (-100, low_per_s)):
        t = 0.0
        n = int(rate * DURATION_S * 1.2) + 10
        gaps = rng.exponential(1.0 / rate, n)
        for g in gaps:
            t += g
            if t >= DURATION_S:
                break
            arrivals.append((t, prio))
    arrivals.sort()
    waiting: dict[int, deque[float]] = {0: deque(), -100: deque()}
    done: list[tuple[float, int]] = []  # (end time, worker) heap
    idle = workers
    adds = 0
    works: list[tuple[float, float]] = []  # (end time, duration)
    samples: list[tuple[int, int, int, int, int]] = []  # t, depth0, depth-100, adds, busy
    next_scrape = 0.0
    ai = 0

    def start(now: float) -> None:
        nonlocal idle
        while idle and (waiting[0] or waiting[-100]):
            prio = 0 if waiting[0] else -100
            waiting[prio].popleft()
            d = float(rng.exponential(service_s))
            heapq.heappush(done, (now + d, 0))
            works.append((now + d, d))
            idle -= 1

    while next_scrape <= DURATION_S - STEP_S:
        t_arr = arrivals[ai][0] if ai < len(arrivals) else float("inf")
        t_done = done[0][0] if done else float("inf")
        t_next = min(t_arr, t_done, next_scrape)
        if t_next == next_scrape:
            samples.append((int(next_scrape), len(waiting[0]), len(waiting[-100]), adds,
                            workers - idle))
            next_scrape += STEP_S
            continue
        if t_done <= t_arr:
            heapq.heappop(done)
            idle += 1
            start(t_done)
        else:
            waiting[arrivals[ai][1]].append(t_arr)
            adds += 1
            ai += 1
            start(t_arr)
    ends = np.array([e for e, _ in works])
    durs = np.array([d for _, d in works])
    order = np.argsort(ends)
    ends, durs = ends[order], durs[order]
    csum = np.concatenate(([0.0], np.cumsum(durs)))
    wq = f'name="{queue}",controller="{queue}",pod="pod-{queue}"'
    cr = f'controller="{queue}",pod="pod-{queue}"'
    lines: list[str] = []
    for t, d0, d100, n_adds, busy in samples:
        ts = START + t
        k = int(np.searchsorted(ends, t, side="right"))
        lines += [
            f'workqueue_depth{{{wq},priority="0"}} {d0} {ts}',
            f'workqueue_depth{{{wq},priority="-100"}} {d100} {ts}',
            f"workqueue_adds_total{{{wq}}} {n_adds} {ts}",
            f"controller_runtime_max_concurrent_reconciles{{{cr}}} {workers} {ts}",
            f"controller_runtime_active_workers{{{cr}}} {busy} {ts}",
        ]
        for b in BUCKETS:
            n_le = int(np.count_nonzero(durs[:k] <= b))
            lines.append(f'workqueue_work_duration_seconds_bucket{{{wq},le="{_go(b)}"}} '
                         f"{n_le} {ts}")
        lines += [f'workqueue_work_duration_seconds_bucket{{{wq},le="+Inf"}} {k} {ts}',
                  f"workqueue_work_duration_seconds_count{{{wq}}} {k} {ts}",
                  f"workqueue_work_duration_seconds_sum{{{wq}}} {float(csum[k])!r} {ts}"]
    return lines


def openmetrics(controllers: list[list[str]]) -> str:
    """The controllers' lines grouped into families, as promtool wants them."""
    families = {
        "workqueue_depth": "gauge", "workqueue_adds": "counter",
        "workqueue_work_duration_seconds": "histogram",
        "controller_runtime_max_concurrent_reconciles": "gauge",
        "controller_runtime_active_workers": "gauge",
    }
    out: list[str] = []
    for fam, kind in families.items():
        out.append(f"# TYPE {fam} {kind}")
        for lines in controllers:
            for line in lines:
                sample = line.split("{", 1)[0]
                base = sample.removesuffix("_total") if kind == "counter" else sample
                if kind == "histogram":
                    base = base.rsplit("_", 1)[0] if base.endswith(("_sum", "_count",
                                                                   "_bucket")) else base
                if base == fam:
                    out.append(line)
    out.append("# EOF")
    return "\n".join(out) + "\n"
