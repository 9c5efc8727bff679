"""Time the embedded demo source: fleet build, snapshots and ranges of 8 and 500 queues, an
exporter scrape, and the OpenMetrics rendering used for backfill tests.

Run: python benchmarks/bench_demo.py [--repeat N]
Prints median wall times (target: a 500-queue snapshot well under 100 ms on 2 cores).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prometheus_client import generate_latest

from collectors.demo import DemoSource
from collectors.exporter import registry_for
from collectors.openmetrics import render_openmetrics

AT = 1_704_067_200.0 + 14 * 3600


def median_s(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    n = parser.parse_args().repeat
    print(f"build 8-queue fleet        {1000 * median_s(DemoSource, n):8.1f} ms")
    build_big = median_s(lambda: DemoSource(queues=500), 3)
    print(f"build 500-queue fleet      {1000 * build_big:8.1f} ms")
    small, big = DemoSource(), DemoSource(queues=500)
    snap_small = median_s(lambda: small.snapshot(AT, 300), n)
    print(f"snapshot, 8 queues         {1000 * snap_small:8.1f} ms")
    print(f"snapshot, 500 queues       {1000 * median_s(lambda: big.snapshot(AT, 300), n):8.1f} ms")
    print(f"range 8 queues 24h @ 60 s  "
          f"{1000 * median_s(lambda: small.range(AT - 86_400, AT, 60), 3):8.1f} ms")
    print(f"range 500 queues 2h @ 60 s "
          f"{1000 * median_s(lambda: big.range(AT - 7200, AT, 60), 3):8.1f} ms")
    reg = registry_for(small.fleet)
    print(f"exporter scrape, 8 queues  {1000 * median_s(lambda: generate_latest(reg), n):8.1f} ms "
          f"({len(generate_latest(reg)) / 1e3:.0f} kB)")
    start = 1_704_067_200.0
    text = render_openmetrics(small.fleet, start, start + 7200, 15.0)
    print(f"OpenMetrics 8 queues 2h @ 15 s "
          f"{1000 * median_s(lambda: render_openmetrics(small.fleet, start, start + 7200), 2):8.1f}"
          f" ms ({len(text) / 1e6:.1f} MB, {text.count(chr(10))} lines)")


if __name__ == "__main__":
    main()
