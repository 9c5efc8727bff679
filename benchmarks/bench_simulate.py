"""Events per second of models.simulate vs an equivalent SimPy model, same workload.

Workloads (``--workload``):

* ``mm4`` (default; issue 9's target): M/M/4 at ρ = 0.8 — unique keys (no coalescing), λ = 3.2/s,
  exponential service with mean 1 s, 4 workers, 312,500 simulated seconds ≈ 1,000,000 arrivals
  ≈ 2,000,000 events.
* ``keys``: λ = 90/s over K = 1000 uniform keys (client-go coalescing), c = 10, exponential
  service with mean 0.1 s, ``--duration`` simulated seconds (SimPy runs a quarter of it).

An event is one processed arrival or reconcile completion (the same count in both
implementations; the SimPy model's internal process wake-ups are not counted as extra events).

Reported, as medians of ``--repeat`` runs (SimPy: ``--simpy-repeat``):

* SimPy, in-process (its import not included: this flatters SimPy);
* queuelens in-process (the numba loop already loaded in this process);
* queuelens as a whole process: ``python -c 'from models.simulate import simulate; …'`` timed
  from outside — interpreter start, numpy/numba imports and loading the compiled loop from
  numba's on-disk cache included (warm cache);
* the same with an empty cache directory (``NUMBA_CACHE_DIR``): the one-off compile on a new
  machine (cold), then once more with that directory (warm again);
* with ``--retries``: ``queuelens retries --keys 50000 --outage 15m --retry exp:0.005:1000``
  as a whole process (warm cache).

The load average is printed with the figures: the development machine is shared.

Run: python benchmarks/bench_simulate.py [--workload mm4|keys|all] [--repeat N] [--retries]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from models.simulate import simulate

ROOT = Path(__file__).resolve().parents[1]

WORKLOADS: dict[str, dict[str, Any]] = {
    "mm4": {"arrival_rate_per_s": 3.2, "keys": 10**15, "workers": 4, "service_mean_s": 1.0,
            "duration_s": 1_000_000 / 3.2},
    "keys": {"arrival_rate_per_s": 90.0, "keys": 1000, "workers": 10, "service_mean_s": 0.1,
             "duration_s": 20000.0},
}
SIMPY_SHARE = {"mm4": 1.0, "keys": 0.25}  # SimPy simulates this share of the duration

_WHOLE = """
import json, sys
sys.path.insert(0, {root!r})
from models.simulate import simulate
r = simulate(**json.loads(sys.argv[1]))
print(r.events)
"""


def simpy_model(w: dict[str, Any], duration_s: float, seed: int) -> tuple[int, float]:
    """The same controller in SimPy: an arrival process and c worker processes sharing the
    dirty/processing sets and a FIFO. Returns (events, mean wait)."""
    import simpy

    lam, keys, mean_s = w["arrival_rate_per_s"], w["keys"], w["service_mean_s"]
    n = int(lam * duration_s + 10 * math.sqrt(lam * duration_s)) + 1000  # draws needed, at most
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
        gaps = rng.exponential(1 / lam, n).tolist()
        ks = rng.integers(0, keys, n).tolist()
        i = 0
        while True:
            yield env.timeout(gaps[i])
            k = ks[i]
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
        svc = rng.exponential(mean_s, n).tolist()
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
    for _ in range(w["workers"]):
        env.process(worker())
    env.run(until=duration_s)
    return counts["events"], float(np.mean(waits))


def _load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _whole_process(w: dict[str, Any], seed: int, env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", _WHOLE.format(root=str(ROOT)),
                    json.dumps({**w, "seed": seed})], check=True, capture_output=True, env=env)
    return time.perf_counter() - t0


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


def bench(name: str, w: dict[str, Any], repeat: int, simpy_repeat: int, cold: bool) -> None:
    print(f"== workload {name}: {w}  ({_load()})")
    simulate(**{**w, "duration_s": 1.0})  # load the compiled loop into this process
    ours, events = [], []
    for r in range(repeat):
        t0 = time.perf_counter()
        res = simulate(**w, seed=r)
        ours.append(time.perf_counter() - t0)
        events.append(res.events)
        print(f"  queuelens in-process:   {res.events:,} events in {ours[-1]:.3f} s = "
              f"{res.events / ours[-1]:,.0f} events/s (wait mean {res.wait_mean_s:.4f} s)")
    ev = _median([float(e) for e in events])
    whole = [_whole_process(w, r) for r in range(repeat)]
    for dt in whole:
        print(f"  queuelens whole process (warm cache): {dt:.3f} s")
    cold_s = warm_again = None
    if cold:
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache}
            cold_s = _whole_process(w, 0, env)
            warm_again = _whole_process(w, 0, env)
        print(f"  queuelens whole process, empty cache dir: {cold_s:.2f} s (compiles), "
              f"then {warm_again:.2f} s")
    simpy_rates: list[float] = []
    try:
        import simpy  # noqa: F401
    except ImportError:
        print("  SimPy is not installed (pip install '.[bench]'); no comparison.")
    else:
        share = SIMPY_SHARE[name]
        for r in range(simpy_repeat):
            t0 = time.perf_counter()
            sev, wait = simpy_model(w, w["duration_s"] * share, r)
            dt = time.perf_counter() - t0
            simpy_rates.append(sev / dt)
            print(f"  SimPy in-process:       {sev:,} events in {dt:.2f} s = "
                  f"{sev / dt:,.0f} events/s (wait mean {wait:.4f} s)")
    in_rate = ev / _median(ours)
    whole_rate = ev / _median(whole)
    print(f"  median: queuelens in-process {_median(ours):.3f} s = {in_rate:,.0f} events/s; "
          f"whole process {_median(whole):.3f} s = {whole_rate:,.0f} events/s")
    if simpy_rates:
        sp = _median(simpy_rates)
        print(f"  median: SimPy {sp:,.0f} events/s = {ev / sp:.1f} s for this workload; "
              f"queuelens/SimPy: in-process {in_rate / sp:.1f}×, whole process "
              f"{whole_rate / sp:.1f}×")
    print(f"  ({_load()})")


def bench_retries(repeat: int) -> None:
    argv = ["retries", "--keys", "50000", "--outage", "15m", "--retry", "exp:0.005:1000"]
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from dashboard.cli import main; " \
           f"raise SystemExit(main({argv!r}))"
    times = []
    for _ in range(repeat + 1):  # the first run may fill the cache
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    print(f"== queuelens {' '.join(argv)}: whole process (warm cache) "
          f"median {_median(times[1:]):.2f} s, runs {', '.join(f'{t:.2f}' for t in times[1:])} "
          f"({_load()})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=(*WORKLOADS, "all"), default="mm4")
    parser.add_argument("--duration", type=float, default=None,
                        help="simulated seconds (default: the workload's)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of queuelens (median)")
    parser.add_argument("--simpy-repeat", type=int, default=3, help="runs of SimPy (median)")
    parser.add_argument("--no-cold", action="store_true",
                        help="skip the run with an empty numba cache (it compiles: seconds)")
    parser.add_argument("--retries", action="store_true",
                        help="also time `queuelens retries --keys 50000 …` as a whole process")
    args = parser.parse_args()
    names = list(WORKLOADS) if args.workload == "all" else [args.workload]
    for name in names:
        w = dict(WORKLOADS[name])
        if args.duration is not None:
            w["duration_s"] = args.duration
        bench(name, w, args.repeat, args.simpy_repeat, not args.no_cold)
    if args.retries:
        bench_retries(args.repeat)
    # a calibration of this machine: a bare Python loop, to compare figures across machines
    t0 = time.perf_counter()
    x = 0
    for i in range(5_000_000):
        x += i
    loop_ns = (time.perf_counter() - t0) / 5_000_000 * 1e9
    print(f"bare 'x += i' loop: {loop_ns:.0f} ns/iteration")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
