"""Events per second of models.simulate vs an equivalent SimPy model, same workload.

Workload: Poisson raw events at λ over K keys (uniform), client-go coalescing (dirty +
processing sets, re-queue at Done), c workers, exponential service, no failures. An event is
one processed arrival or reconcile completion (the same count in both implementations; the
SimPy model's internal process wake-ups are not counted as extra events).

Run: python benchmarks/bench_simulate.py [--duration SECONDS]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import deque

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np

from models.simulate import simulate

LAM, KEYS, WORKERS, MEAN_S = 90.0, 1000, 10, 0.1


def simpy_model(duration_s: float, seed: int) -> tuple[int, float]:
    """The same controller in SimPy: an arrival process and c worker processes sharing the
    dirty/processing sets and a FIFO. Returns (events, mean wait)."""
    import simpy

    rng = np.random.default_rng(seed)
    env = simpy.Environment()
    queue: deque[int] = deque()
    dirty: dict[int, float] = {}
    processing: set[int] = set()
    waits: list[float] = []
    counts = {"events": 0}
    idle: list[simpy.Event] = []

    def wake() -> None:
        if idle and queue:
            idle.pop().succeed()

    def arrivals() -> simpy.events.ProcessGenerator:
        gaps = rng.exponential(1 / LAM, 10_000_000).tolist()
        keys = rng.integers(0, KEYS, 10_000_000).tolist()
        i = 0
        while True:
            yield env.timeout(gaps[i])
            k = keys[i]
            i += 1
            counts["events"] += 1
            if k in dirty:
                continue
            dirty[k] = env.now
            if k in processing:
                continue
            queue.append(k)
            wake()

    def worker() -> simpy.events.ProcessGenerator:
        svc = rng.exponential(MEAN_S, 10_000_000).tolist()
        j = 0
        while True:
            if not queue:
                ev = env.event()
                idle.append(ev)
                yield ev
                continue
            k = queue.popleft()
            processing.add(k)
            waits.append(env.now - dirty.pop(k))
            yield env.timeout(svc[j])
            j += 1
            counts["events"] += 1
            processing.discard(k)
            if k in dirty:
                queue.append(k)
                wake()

    env.process(arrivals())
    for _ in range(WORKERS):
        env.process(worker())
    env.run(until=duration_s)
    return counts["events"], float(np.mean(waits))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=20000.0,
                        help="simulated seconds (default 20000 ≈ 3.6 M events)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; best is reported")
    args = parser.parse_args()

    best_ours = best_simpy = 0.0
    for r in range(args.repeat):
        t0 = time.perf_counter()
        res = simulate(arrival_rate_per_s=LAM, keys=KEYS, workers=WORKERS, service_mean_s=MEAN_S,
                       duration_s=args.duration, seed=r)
        dt = time.perf_counter() - t0
        ours = res.events / dt
        best_ours = max(best_ours, ours)
        print(f"queuelens simulate: {res.events:,} events in {dt:.2f} s = {ours:,.0f} events/s "
              f"(wait mean {res.wait_mean_s:.4f} s)")
    try:
        import simpy  # noqa: F401
    except ImportError:
        print("SimPy is not installed (pip install '.[bench]'); no comparison.")
        return 0
    simpy_duration = args.duration / 4
    for r in range(args.repeat):
        t0 = time.perf_counter()
        events, wait = simpy_model(simpy_duration, r)
        dt = time.perf_counter() - t0
        rate = events / dt
        best_simpy = max(best_simpy, rate)
        print(f"SimPy model:        {events:,} events in {dt:.2f} s = {rate:,.0f} events/s "
              f"(wait mean {wait:.4f} s)")
    # a calibration of this machine: a bare Python loop, to compare figures across machines
    t0 = time.perf_counter()
    x = 0
    for i in range(5_000_000):
        x += i
    loop_ns = (time.perf_counter() - t0) / 5_000_000 * 1e9
    print(f"best: queuelens {best_ours:,.0f} events/s, SimPy {best_simpy:,.0f} events/s, "
          f"ratio {best_ours / best_simpy:.1f}×; bare 'x += i' loop: {loop_ns:.0f} ns/iteration")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
