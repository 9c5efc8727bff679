"""queuelens against a real Prometheus holding N controller queues, vs the bare requests.

Fixture: N controller-runtime queues, each in its own process (``job``/``instance`` of its
own), 2 h of samples at 15 s backfilled with ``promtool tsdb create-blocks-from openmetrics``
into a TSDB that a real ``prometheus`` (Debian package) serves on 127.0.0.1. Per queue: the
39 series a controller-runtime controller exposes that queuelens reads — ``workqueue_depth``,
adds, retries, the queue/work duration histograms (client-go's 10 decade buckets + ``+Inf``,
``_sum``, ``_count``), unfinished work, longest running, ``controller_runtime_reconcile_total``
by result, reconcile errors, ``max_concurrent_reconciles`` and two
``rest_client_requests_total`` codes. Load over the 2 h is a sine per queue (random phase),
so the range reads have something to follow. The TSDB is built once per N and kept under
``--workdir`` (the OpenMetrics text is written and backfilled in chunks of queues, two at a
time, and deleted).

Measured, each in a fresh Python process (so peak RSS is that command's own):
* ``snapshot``: :meth:`PrometheusSource.snapshot` (its instant queries and everything after);
* ``advise``: :func:`dashboard.advice.advise_fleet` over 2 h (snapshot + range read + the
  advisor over every queue);
* ``overview``: the overview callback's :func:`dashboard.pages.overview.load_overview`, cold
  cache;
* ``refresh``: the same callback one step (60 s) after a cold one, on the same cache: the
  snapshot read anew, the range read extended by the new step only
  (:mod:`collectors.incremental`).
Every HTTP request the project sends is recorded, then replayed **bare** (``requests`` + JSON
decode, the same concurrency as the project's client) so each time is compared with the cost
Prometheus and the wire put on it.

Run: python benchmarks/bench_scale.py --queues 1000 10000 [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402 - after the path set-up, like the other benchmarks

START = 1_704_067_200  # 2024-01-01T00:00:00Z, on a 2 h block boundary
DURATION_S = 7200
STEP_S = 15
AT = START + DURATION_S - STEP_S
CHUNK = 500
BOUNDS = [1e-8 * 10**k for k in range(10)]  # client-go ExponentialBuckets(10e-9, 10, 10)


# --- fixture --------------------------------------------------------------------------------


def _chunk_text(lo: int, hi: int, seed: int = 0) -> str:
    """OpenMetrics text of queues [lo, hi): families contiguous, timestamps ascending."""
    rng = np.random.default_rng([seed, lo])
    n = hi - lo
    times = START + STEP_S * np.arange(DURATION_S // STEP_S)
    stamps = [str(int(t)) for t in times]
    tau = (times - START)[None, :]
    workers = rng.integers(1, 9, n)
    service = rng.uniform(0.01, 0.5, n)
    rho = rng.uniform(0.2, 0.95, n)
    lam = rho * workers / service
    phase = rng.uniform(0, 2 * math.pi, n)
    # Load over the day: λ(t) = λ (1 + 0.4 sin(2πt/1 h + φ)); counters are its integral.
    w = 2 * math.pi / 3600.0
    adds = lam[:, None] * (tau + 0.4 / w * (np.cos(phase[:, None]) - np.cos(w * tau
                                                                              + phase[:, None])))
    done = adds * 0.999
    wait_mean = service * rho / (1 - np.minimum(rho, 0.97)) / workers
    names = [f"q{i:05d}" for i in range(lo, hi)]
    heads = [f'name="{q}",controller="{q}",job="ctl-{q}",instance="10.0.{i // 250}.{i % 250}:8080"'
             for i, q in zip(range(lo, hi), names, strict=True)]
    crh = [f'controller="{q}",job="ctl-{q}",instance="10.0.{i // 250}.{i % 250}:8080"'
           for i, q in zip(range(lo, hi), names, strict=True)]
    out: list[str] = []

    def family(name: str, typ: str) -> None:
        out.append(f"# TYPE {name} {typ}")

    def series(sample: str, labels: str, values: np.ndarray, integer: bool = True) -> None:
        vals = np.floor(values).astype(np.int64).tolist() if integer else \
            np.round(values, 3).tolist()
        head = f"{sample}{{{labels}}} "
        out.append("\n".join([f"{head}{v} {ts}" for v, ts in zip(vals, stamps, strict=True)]))

    family("workqueue_depth", "gauge")
    for i in range(n):
        series("workqueue_depth", heads[i] + ',priority="0"',
               np.maximum(0, lam[i] * wait_mean[i] * (1 + 0.4 * np.sin(w * tau[0] + phase[i]))))
    family("workqueue_adds", "counter")
    for i in range(n):
        series("workqueue_adds_total", heads[i], adds[i])
    family("workqueue_retries", "counter")
    for i in range(n):
        series("workqueue_retries_total", heads[i], adds[i] * 0.02)
    for fam, mean in (("workqueue_queue_duration_seconds", wait_mean),
                      ("workqueue_work_duration_seconds", service)):
        family(fam, "histogram")
        for i in range(n):
            # exponential durations: share below a bound b is 1 − exp(−b / mean)
            for b in BOUNDS:
                series(fam + "_bucket", heads[i] + f',le="{b:.0e}"',
                       done[i] * (1 - math.exp(-b / mean[i])))
            series(fam + "_bucket", heads[i] + ',le="+Inf"', done[i])
            series(fam + "_sum", heads[i], done[i] * mean[i], integer=False)
            series(fam + "_count", heads[i], done[i])
    family("workqueue_unfinished_work_seconds", "gauge")
    for i in range(n):
        series("workqueue_unfinished_work_seconds", heads[i], np.zeros(len(stamps)),
               integer=False)
    family("workqueue_longest_running_processor_seconds", "gauge")
    for i in range(n):
        series("workqueue_longest_running_processor_seconds", heads[i],
               np.full(len(stamps), service[i]), integer=False)
    family("controller_runtime_reconcile", "counter")
    for i in range(n):
        for result, share in (("success", 0.97), ("error", 0.02), ("requeue", 0.0),
                              ("requeue_after", 0.01)):
            series("controller_runtime_reconcile_total", crh[i] + f',result="{result}"',
                   done[i] * share)
    family("controller_runtime_reconcile_errors", "counter")
    for i in range(n):
        series("controller_runtime_reconcile_errors_total", crh[i], done[i] * 0.02)
    family("controller_runtime_max_concurrent_reconciles", "gauge")
    for i in range(n):
        series("controller_runtime_max_concurrent_reconciles", crh[i],
               np.full(len(stamps), workers[i]))
    family("rest_client_requests", "counter")
    for i in range(n):
        proc = heads[i].split(",", 2)[2]
        series("rest_client_requests_total", proc + ',code="200",method="GET"', done[i] * 2)
        series("rest_client_requests_total", proc + ',code="409",method="PUT"', done[i] * 0.01)
    out.append("# EOF")
    return "\n".join(out) + "\n"


def _backfill_chunk(job: tuple[int, int, str, str]) -> float:
    lo, hi, tsdb, tmp = job
    t0 = time.perf_counter()
    om = Path(tmp) / f"chunk-{lo}.om"
    om.write_text(_chunk_text(lo, hi))
    res = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q",
                          str(om), tsdb], capture_output=True, text=True, timeout=3600)
    om.unlink()
    if res.returncode != 0:
        raise RuntimeError(f"promtool failed: {res.stderr[-2000:]}")
    return time.perf_counter() - t0


def build_tsdb(n: int, workdir: Path) -> Path:
    tsdb = workdir / f"tsdb-{n}"
    done = workdir / f"tsdb-{n}.done"
    if done.exists():
        return tsdb
    shutil.rmtree(tsdb, ignore_errors=True)
    tsdb.mkdir(parents=True)
    tmp = workdir / "om"
    tmp.mkdir(exist_ok=True)
    jobs = [(lo, min(n, lo + CHUNK), str(tsdb), str(tmp)) for lo in range(0, n, CHUNK)]
    t0 = time.perf_counter()
    with Pool(2) as pool:
        for k, _ in enumerate(pool.imap_unordered(_backfill_chunk, jobs), 1):
            print(f"  backfill {n} queues: chunk {k}/{len(jobs)} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
    done.write_text("ok\n")
    return tsdb


# --- measured commands (each run in a fresh process) -------------------------------------

_CHILD = r"""
import json, resource, sys, time
ROOT, URL, WHAT, AT = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
sys.path.insert(0, ROOT)
import requests
sent = []
_orig = requests.Session.send
def send(self, request, **kw):
    sent.append(request.url)
    return _orig(self, request, **kw)
requests.Session.send = send
from collectors.config import ConnectionSettings
from collectors.prom_client import PrometheusClient
from collectors.snapshot import PrometheusSource
if WHAT == "advise":
    from dashboard.advice import advise_fleet
    from models.settings import AnalysisSettings
elif WHAT in ("overview", "refresh"):
    from collectors.cache import CachedSource
    from dashboard.context import AppContext
    from dashboard.pages import overview
client = PrometheusClient(ConnectionSettings(url=URL, timeout_s=600.0))
src = PrometheusSource(client)
if WHAT == "refresh":
    # the overview a step ago (cold), then the refresh a step later: what is timed is the
    # refresh, with the cache's clock moved on so nothing is reused by age — its snapshot is
    # read anew and its range read extended by the new step (collectors.incremental)
    clock = [0.0]
    cache = CachedSource(src, monotonic=lambda: clock[0])
    overview.load_overview(AppContext(source=cache, at=AT - 60), AT - 60)
    clock[0] += 3600.0
    sent.clear()
t0 = time.perf_counter()
c0 = time.process_time()
if WHAT == "refresh":
    rows, _, _notes = overview.load_overview(AppContext(source=cache, at=AT), AT)
    n = len(rows)
    assert cache.range_reads.get("delta") == 1, cache.range_reads
elif WHAT == "snapshot":
    n = len(src.snapshot(AT, 300.0).queues)
elif WHAT == "advise":
    n = len(advise_fleet(src, AT, AnalysisSettings()).queues)
else:
    rows, _, _notes = overview.load_overview(AppContext(source=CachedSource(src), at=AT), AT)
    n = len(rows)
elapsed = time.perf_counter() - t0
cpu = time.process_time() - c0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"s": elapsed, "cpu": cpu, "rss": rss, "queues": n, "urls": sent,
                  "parallelism": client.settings.parallelism}))
"""


def run_child(url: str, what: str) -> dict[str, object]:
    res = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT), url, what, str(AT)],
                         capture_output=True, text=True,
                         timeout=3600, env={**os.environ, "NO_PROXY": "127.0.0.1"})
    if res.returncode != 0:
        raise RuntimeError(res.stderr[-3000:])
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


def bare(urls: list[str], parallelism: int) -> float:
    """The same GETs with plain requests + JSON decode, as concurrent as the project's."""
    import requests

    session = requests.Session()

    def one(u: str) -> None:
        r = session.get(u, timeout=600)
        r.raise_for_status()
        r.json()

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max(1, parallelism)) as pool:
        list(pool.map(one, urls))
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queues", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--what", nargs="+",
                        default=["snapshot", "advise", "overview", "refresh"])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/queuelens-bench-scale"))
    args = parser.parse_args()
    from tests.support.prometheus import start_prometheus

    args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    for n in args.queues:
        tsdb = build_tsdb(n, args.workdir)
        server = start_prometheus(args.workdir / f"prom-{n}", tsdb=tsdb, ready_timeout_s=600,
                                  extra_args=["--query.max-samples=200000000"])
        try:
            run_child(server.url, "snapshot")  # warm Prometheus's page cache once
            for what in args.what:
                own, raw, rss, cpu = [], [], [], []
                for _ in range(args.repeats):
                    r = run_child(server.url, what)
                    own.append(float(r["s"]))  # type: ignore[arg-type]
                    cpu.append(float(r["cpu"]))  # type: ignore[arg-type]
                    rss.append(int(r["rss"]))  # type: ignore[call-overload]
                    urls = list(r["urls"])  # type: ignore[call-overload]
                    raw.append(bare(urls, int(r["parallelism"])))  # type: ignore[call-overload]
                mo, mb = statistics.median(own), statistics.median(raw)
                print(f"{n:>6} queues  {what:<9} {mo:7.2f} s  (runs {min(own):.2f}–"
                      f"{max(own):.2f})  its {len(urls)} requests bare {mb:6.2f} s  "
                      f"ratio {mo / mb:4.2f}×  own CPU {statistics.median(cpu):5.2f} s  "
                      f"peak RSS {max(rss) / 2**30:.2f} GiB  "
                      f"[{r['queues']} queues]", flush=True)
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
