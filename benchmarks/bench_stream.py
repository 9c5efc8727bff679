"""The overview's streaming cold start (issue 22 §2) against a real Prometheus of N queues:
the time to the first rows, to every row, and the one-shot cold read beside them.

Fixture: :mod:`bench_scale`'s (N controller-runtime queues, each its own process, 2 h at
15 s, backfilled with promtool and served by a real ``prometheus`` on 127.0.0.1; the TSDB is
built once per N under ``--workdir`` and shared with bench_scale).

Measured, each in a fresh Python process (imports excluded, as bench_scale):
* ``stream``: a cold app cache, :class:`dashboard.streaming.ColdStart` polled as the page
  polls it (every 50 ms here: the page's 1 s poll would round every figure to a second);
  ``first rows`` is when the first batch's rows are published (planned), ``all rows`` when
  the last batch has landed and the whole read is in the cache;
* ``one-shot``: the overview's cold read in one go (:func:`dashboard.pages.overview.
  load_overview` on a cold cache), what a fleet at or under the stream threshold gets.

Run: python benchmarks/bench_stream.py --queues 1000 [10000] [--batch 250] [--in-flight 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_scale import AT, build_tsdb  # noqa: E402 - the fixture of bench_scale, shared

_CHILD = r"""
import json, sys, time
ROOT, URL, WHAT, AT, BATCH, IN_FLIGHT = (sys.argv[1], sys.argv[2], sys.argv[3],
                                         float(sys.argv[4]), int(sys.argv[5]),
                                         int(sys.argv[6]))
sys.path.insert(0, ROOT)
from collectors.cache import CachedSource
from collectors.config import ConnectionSettings
from collectors.prom_client import PrometheusClient
from collectors.snapshot import PrometheusSource
from dashboard.context import AppContext
from dashboard.pages import overview
from dashboard.advice import HISTORY_SIGNALS
from dashboard.streaming import ColdStart, StreamSettings
src = PrometheusSource(PrometheusClient(ConnectionSettings(url=URL, timeout_s=600.0)))
ctx = AppContext(source=CachedSource(src), at=AT)
out = {}
t0 = time.perf_counter()
if WHAT == "stream":
    cold = ColdStart(ctx.source, ctx.settings, StreamSettings(
        above_queues=0, batch_queues=BATCH, in_flight=IN_FLIGHT, deadline_s=3600.0))
    signals = HISTORY_SIGNALS | set(overview.SPARK_SIGNALS)
    plan = overview._plan(ctx)
    first = listed = None
    while True:
        p = cold.poll(AT, signals, plan)
        now = time.perf_counter() - t0
        if listed is None and p.total is not None:
            listed = now
        if first is None and p.batches:
            first = now
            overview.stream_view(p, ctx.settings)  # the page's rows of the first batch
            out["first_rows_built_s"] = time.perf_counter() - t0
            out["first_rows"] = len(p.batches[0].snapshot.queues)
        if not p.running:
            break
        time.sleep(0.05)
    if p.error:
        raise SystemExit(p.error)
    out.update(listed_s=listed, first_s=first, all_s=time.perf_counter() - t0, queues=p.done)
    from dashboard.streaming import process_batches
    s = ctx.settings
    out["batches"] = len(process_batches(src.queue_processes(AT, s.range_s + s.step_s
                                                             + s.window_s), BATCH, 25))
else:
    rows, _, _ = overview.load_overview(ctx, AT)
    out.update(all_s=time.perf_counter() - t0, queues=len(rows))
print(json.dumps(out))
"""


def run_child(url: str, what: str, batch: int, in_flight: int) -> dict[str, float]:
    res = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT), url, what, str(AT),
                          str(batch), str(in_flight)], capture_output=True, text=True,
                         timeout=3600, env={**os.environ, "NO_PROXY": "127.0.0.1"})
    if res.returncode != 0:
        raise RuntimeError(res.stderr[-3000:])
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queues", type=int, nargs="+", default=[1000])
    parser.add_argument("--batch", type=int, default=250)
    parser.add_argument("--in-flight", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/queuelens-bench-scale"))
    args = parser.parse_args()
    from tests.support.prometheus import start_prometheus

    args.workdir.mkdir(parents=True, exist_ok=True)
    for n in args.queues:
        tsdb = build_tsdb(n, args.workdir)
        server = start_prometheus(args.workdir / f"prom-{n}", tsdb=tsdb, ready_timeout_s=600,
                                  extra_args=["--query.max-samples=200000000"])
        try:
            run_child(server.url, "one-shot", args.batch, args.in_flight)  # warm page cache
            load = os.getloadavg()[0]
            s = run_child(server.url, "stream", args.batch, args.in_flight)
            one = run_child(server.url, "one-shot", args.batch, args.in_flight)
            print(f"{n:>6} queues  stream (batches of {args.batch}, {args.in_flight} in "
                  f"flight): listed {s['listed_s']:.2f} s, first rows ({s['first_rows']:.0f}) "
                  f"{s['first_s']:.2f} s (built {s['first_rows_built_s']:.2f} s), all "
                  f"{s['queues']:.0f} rows {s['all_s']:.2f} s in {s['batches']:.0f} batches;"
                  f"  one-shot cold {one['all_s']:.2f} s  [load {load:.2f} before, "
                  f"{os.getloadavg()[0]:.2f} after]", flush=True)
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
