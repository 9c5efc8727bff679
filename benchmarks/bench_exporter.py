"""`queuelens exporter` scrapes (issue 23 item 10): a cold scrape (the exposition computed),
a cached one (within the cache interval), and 8 concurrent cold scrapes of a fresh exporter
(one computation shared by all), for a synthetic fleet of N queues.

Each N runs in this process against :func:`collectors.exporter.serve` on 127.0.0.1 (port 0),
one HTTP GET per scrape with ``requests``; the load average is printed beside the figures.

Run: python benchmarks/bench_exporter.py --queues 1000 [10000]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from collectors.demo import DemoSource  # noqa: E402
from collectors.exporter import serve  # noqa: E402


def _scrape(url: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    answer = requests.get(url, timeout=600)
    answer.raise_for_status()
    return time.perf_counter() - t0, len(answer.content)


def bench(queues: int) -> str:
    fleet = DemoSource(queues=queues).fleet
    server, thread = serve(fleet, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.server_port}/metrics"
    try:
        cold, size = _scrape(url)
        cached, _ = _scrape(url)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    server, thread = serve(fleet, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.server_port}/metrics"
    try:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda _: _scrape(url), range(8)))
        concurrent = time.perf_counter() - t0
        computed = server.cache.stats.computed  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{queues:>6} queues: cold {cold:.2f} s, cached {cached * 1000:.1f} ms "
            f"({size / 1e6:.1f} MB); 8 concurrent cold {concurrent:.2f} s, {computed} "
            f"computation(s); peak RSS {rss_mb:.0f} MB; load average {load}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, nargs="+", default=[1000])
    for n in parser.parse_args().queues:
        print(bench(n), flush=True)


if __name__ == "__main__":
    main()
