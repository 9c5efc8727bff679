"""models.simulate against an equivalent SimPy model, side by side in one run, and its compile.

Workloads (``--workload``):

* ``mm4`` (default; issue 9's target, issue 22's sizes): M/M/4 at ρ = 0.8 — unique keys (no
  coalescing), λ = 3.2/s, exponential service with mean 1 s, 4 workers, for ``--arrivals``
  arrivals each (default 1,000,000 and 10,000,000: about 2 and 20 million events).
* ``keys``: λ = 90/s over K = 1000 uniform keys (client-go coalescing), c = 10, exponential
  service with mean 0.1 s, 20,000 simulated seconds (SimPy runs a quarter of it).

An event is one processed arrival or reconcile completion (the same count in both
implementations; the SimPy model's internal process wake-ups are not counted as extra events).

Measured for each size, medians of ``--repeat`` runs (SimPy: ``--simpy-repeat``; one run at
10M arrivals, where it takes about a minute):

* SimPy in-process (its import not included: this flatters SimPy);
* queuelens in-process (the compiled loop already loaded in this process);
* queuelens as a whole process, warm cache: ``python -c 'from models.simulate import
  simulate; …'`` timed from outside — interpreter start, the numpy/numba imports, numba's
  start-up and loading the compiled loop from numba's disk cache included;

and once (unless ``--no-cold``), each with a fresh empty ``NUMBA_CACHE_DIR`` (a new machine,
or a new install):

* the first ``queuelens simulate`` of the smallest size as a whole process (it compiles the
  loop for the run's mechanisms and fills the cache), then the same command again;
* :func:`models.simulate.warm_up` as a whole process: every copy of every loop, what
  ``queuelens serve`` compiles in the background and the container image at build time.

With ``--retries``: ``queuelens retries --keys 50000 --outage 15m --retry exp:0.005:1000`` as
a whole process (warm cache). The load average is printed beside every figure (the
development machine is shared), and a table at the end.

Run: python benchmarks/bench_simulate.py [--workload mm4|keys] [--arrivals 1e6,1e7]
     [--repeat N] [--simpy-repeat N] [--no-cold] [--retries]
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

MM4: dict[str, Any] = {"arrival_rate_per_s": 3.2, "keys": 10**15, "workers": 4,
                       "service_mean_s": 1.0}
KEYS: dict[str, Any] = {"arrival_rate_per_s": 90.0, "keys": 1000, "workers": 10,
                        "service_mean_s": 0.1, "duration_s": 20000.0}
SIMPY_SHARE = {"mm4": 1.0, "keys": 0.25}  # SimPy simulates this share of the duration

_WHOLE = """
import json, sys
sys.path.insert(0, {root!r})
from models.simulate import simulate
r = simulate(**json.loads(sys.argv[1]))
print(r.events)
"""
_WARM_UP = f"import sys; sys.path.insert(0, {str(ROOT)!r}); " \
           "from models.simulate import warm_up; warm_up()"


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
    return "load " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _timed(argv: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=env, cwd=ROOT)
    return time.perf_counter() - t0


def _whole_process(w: dict[str, Any], seed: int, env: dict[str, str] | None = None) -> float:
    return _timed([sys.executable, "-c", _WHOLE.format(root=str(ROOT)),
                   json.dumps({**w, "seed": seed})], env)


def _cli_simulate(w: dict[str, Any]) -> list[str]:
    """The ``queuelens simulate`` command of an M/M/c workload."""
    return [sys.executable, "-m", "dashboard.cli", "simulate",
            "--arrival-rate", repr(w["arrival_rate_per_s"]), "--keys", str(w["keys"]),
            "--workers", str(w["workers"]), "--service-mean", repr(w["service_mean_s"]),
            "--duration", repr(w["duration_s"]), "--seed", "0", "--format", "json"]


def _fresh_cache_env(cache: str) -> dict[str, str]:
    return {**os.environ, "NUMBA_CACHE_DIR": cache}


ROWS: list[tuple[str, str, str]] = []  # (what, figure, load) for the table at the end


def _row(what: str, figure: str) -> None:
    load = _load()
    ROWS.append((what, figure, load))
    print(f"  {what}: {figure}  ({load})", flush=True)


def bench(name: str, label: str, w: dict[str, Any], repeat: int, simpy_repeat: int) -> None:
    print(f"== {name} {label}: {w}  ({_load()})", flush=True)
    simulate(**{**w, "duration_s": 1.0})  # load the compiled loop into this process
    ours, events = [], []
    for r in range(repeat):
        t0 = time.perf_counter()
        res = simulate(**w, seed=r)
        ours.append(time.perf_counter() - t0)
        events.append(res.events)
    ev = statistics.median(float(e) for e in events)
    whole = [_whole_process(w, r) for r in range(repeat)]
    in_rate, whole_rate = ev / statistics.median(ours), ev / statistics.median(whole)
    _row(f"{label} queuelens in-process", f"{statistics.median(ours):.3f} s "
         f"({in_rate / 1e6:.1f} M events/s; runs {', '.join(f'{t:.3f}' for t in ours)})")
    _row(f"{label} queuelens whole process, warm cache", f"{statistics.median(whole):.3f} s "
         f"(runs {', '.join(f'{t:.2f}' for t in whole)})")
    try:
        import simpy  # noqa: F401
    except ImportError:
        print("  SimPy is not installed (pip install '.[bench]'); no comparison.")
        return
    share = SIMPY_SHARE[name]
    rates, runs = [], []
    for r in range(simpy_repeat):
        t0 = time.perf_counter()
        sev, _ = simpy_model(w, w["duration_s"] * share, r)
        dt = time.perf_counter() - t0
        runs.append(dt)
        rates.append(sev / dt)
    sp = statistics.median(rates)
    _row(f"{label} SimPy in-process", f"{ev / sp:.2f} s for {ev:,.0f} events "
         f"({sp / 1e6:.2f} M events/s; runs {', '.join(f'{t:.1f}' for t in runs)})")
    _row(f"{label} queuelens ÷ SimPy", f"in-process {in_rate / sp:.1f}×, "
         f"whole process {whole_rate / sp:.1f}×")


def bench_cold(label: str, w: dict[str, Any]) -> None:
    """The first runs on a new machine: a fresh, empty cache directory for each."""
    print(f"== cold cache ({_load()})", flush=True)
    with tempfile.TemporaryDirectory() as cache:
        env = _fresh_cache_env(cache)
        first = _timed(_cli_simulate(w), env)
        again = _timed(_cli_simulate(w), env)
    _row(f"{label} first `queuelens simulate`, empty cache",
         f"{first:.2f} s (compiles the queue's loop), then {again:.2f} s")
    with tempfile.TemporaryDirectory() as cache:
        env = _fresh_cache_env(cache)
        full = _timed([sys.executable, "-c", _WARM_UP], env)
        warm = _timed([sys.executable, "-c", _WARM_UP], env)
    _row("warm_up (serve's background compile), empty cache",
         f"{full:.2f} s (every copy of every loop), then {warm:.2f} s")


def bench_retries(repeat: int) -> None:
    argv = ["retries", "--keys", "50000", "--outage", "15m", "--retry", "exp:0.005:1000"]
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from dashboard.cli import main; " \
           f"raise SystemExit(main({argv!r}))"
    times = [_timed([sys.executable, "-c", code]) for _ in range(repeat + 1)]  # 1st may fill
    _row(f"queuelens {' '.join(argv)}, whole process, warm cache",
         f"{statistics.median(times[1:]):.2f} s (runs {', '.join(f'{t:.2f}' for t in times[1:])})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=("mm4", "keys"), default="mm4")
    parser.add_argument("--arrivals", default="1e6,1e7",
                        help="mm4: comma-separated arrival counts (default 1e6,1e7)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of queuelens (median)")
    parser.add_argument("--simpy-repeat", type=int, default=3,
                        help="runs of SimPy (median); one above 2M arrivals")
    parser.add_argument("--no-cold", action="store_true",
                        help="skip the runs with an empty numba cache (they compile: seconds)")
    parser.add_argument("--retries", action="store_true",
                        help="also time `queuelens retries --keys 50000 …` as a whole process")
    args = parser.parse_args()
    print(f"bench_simulate ({_load()}, {os.cpu_count()} CPUs)")
    sizes: list[tuple[str, dict[str, Any]]] = []
    if args.workload == "keys":
        sizes.append(("20,000 s", KEYS))
    else:
        for text in args.arrivals.split(","):
            n = float(text)
            sizes.append((f"{n / 1e6:g}M arrivals",
                          {**MM4, "duration_s": n / MM4["arrival_rate_per_s"]}))
    if not args.no_cold and args.workload == "mm4":
        bench_cold(*sizes[0])
    for label, w in sizes:
        big = w.get("duration_s", 0.0) * w["arrival_rate_per_s"] > 2e6
        bench(args.workload, label, w, args.repeat, 1 if big else args.simpy_repeat)
    if args.retries:
        bench_retries(args.repeat)
    t0 = time.perf_counter()  # a calibration of this machine, to compare figures across them
    x = 0
    for i in range(5_000_000):
        x += i
    _row("bare 'x += i' loop", f"{(time.perf_counter() - t0) / 5_000_000 * 1e9:.0f} ns/iteration")
    width = max(len(what) for what, _, _ in ROWS)
    print("\n| what | measured | load average |\n|---|---|---|")
    for what, figure, load in ROWS:
        print(f"| {what:<{width}} | {figure} | {load.removeprefix('load ')} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
