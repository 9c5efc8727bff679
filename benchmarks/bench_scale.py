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

``--recorded``: the rules of ``queuelens rules --recording`` (2 h range: a 60 s step, 15 s
scrape interval, so the 5m and 1m15s windows) are backfilled into the same TSDB once with
``promtool tsdb create-blocks-from rules`` (its evaluation instants are offset from the reads'
grid: the figures are costs, not the equality the tests check), and every measured command
runs twice, reading the raw counters (``raw``: ``recorded_rules`` off) and the recorded series
(``rec``), each beside its own bare time. Without ``--recorded`` the commands read with the
default profile (recorded series used when present).

Run: python benchmarks/bench_scale.py --queues 1000 10000 [--repeats 3] [--recorded]
"""

from __future__ import annotations

import argparse
import json
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

from tests.support.scale_om import DURATION_S, START, STEP_S, fleet_text  # noqa: E402

AT = START + DURATION_S - STEP_S
CHUNK = 500


# --- fixture --------------------------------------------------------------------------------


def _backfill_chunk(job: tuple[int, int, str, str]) -> float:
    lo, hi, tsdb, tmp = job
    t0 = time.perf_counter()
    om = Path(tmp) / f"chunk-{lo}.om"
    om.write_text(fleet_text(lo, hi))
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


def add_recorded(n: int, tsdb: Path, workdir: Path) -> None:
    """The recording rules' blocks in ``tsdb``, once per N: ``queuelens rules --recording``
    evaluated by ``promtool tsdb create-blocks-from rules`` against a Prometheus on the raw
    TSDB, the blocks moved in (the server stopped between)."""
    import hashlib

    from tests.support.prometheus import start_prometheus
    from tests.support.recorded import move_blocks, promtool_backfill_rules

    rules = workdir / "rules.yaml"
    res = subprocess.run([sys.executable, "-m", "dashboard.cli", "rules", "--recording", "-o",
                          str(rules)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        raise RuntimeError(res.stderr[-2000:])
    digest = hashlib.sha256(rules.read_bytes()).hexdigest()
    done = workdir / f"tsdb-{n}.rules.done"
    if done.exists():
        if done.read_text().strip() != digest:
            raise RuntimeError(f"{tsdb} holds the blocks of other recording rules: delete it "
                               f"and {done}, and run again")
        return
    t0 = time.perf_counter()
    server = start_prometheus(workdir / f"prom-{n}-rules", tsdb=tsdb, ready_timeout_s=600,
                              extra_args=["--query.max-samples=200000000"])
    blocks = workdir / f"rules-{n}"
    shutil.rmtree(blocks, ignore_errors=True)
    try:
        promtool_backfill_rules(server.url, rules, START, START + DURATION_S, blocks)
    finally:
        server.stop()
    before = _blocks(tsdb)
    moved = move_blocks(blocks, tsdb)
    print(f"  recording rules of {n} queues backfilled: {moved} block(s) "
          f"({time.perf_counter() - t0:.0f} s)", flush=True)
    compact(n, tsdb, workdir, before)
    done.write_text(digest + "\n")


def _blocks(tsdb: Path) -> int:
    return sum(1 for p in tsdb.iterdir() if p.is_dir() and (p / "meta.json").exists())


def compact(n: int, tsdb: Path, workdir: Path, target: int) -> None:
    """Let Prometheus's compactor merge the rules' blocks into the raw ones, as a live server
    holds recorded series (written to its head, compacted with the rest): promtool writes one
    overlapping block per rule, and a query over 30 overlapping blocks merges them on every
    read — the first measurement, before this, had the recorded reads at twice the raw ones'
    cost. The compactor runs a minute after start; wait until no more blocks than before."""
    from tests.support.prometheus import start_prometheus

    t0 = time.perf_counter()
    server = start_prometheus(workdir / f"prom-{n}-compact", tsdb=tsdb, ready_timeout_s=600)
    try:
        deadline = time.monotonic() + 1800
        while _blocks(tsdb) > target and time.monotonic() < deadline:
            time.sleep(5)
        time.sleep(5)  # the old blocks deleted after the new one is written
    finally:
        server.stop()
    print(f"  compacted to {_blocks(tsdb)} block(s) ({time.perf_counter() - t0:.0f} s)",
          flush=True)


# --- measured commands (each run in a fresh process) -------------------------------------

_CHILD = r"""
import json, sys, time
ROOT, URL, WHAT, AT = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
RECORDED = sys.argv[5] != "raw"
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
from collectors.profile import Profile
src = PrometheusSource(client, Profile(use_recorded=RECORDED))
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
# VmHWM (this process's own peak): Linux keeps ru_maxrss across execve, so ru_maxrss here
# would be at least the benchmark parent's peak
import re
rss = int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1)) * 1024
print(json.dumps({"s": elapsed, "cpu": cpu, "rss": rss, "queues": n, "urls": sent,
                  "parallelism": client.settings.parallelism}))
"""


def run_child(url: str, what: str, mode: str = "default") -> dict[str, object]:
    """One measured command in a fresh process; ``mode`` ``raw``: recorded series off."""
    res = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT), url, what, str(AT), mode],
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
    parser.add_argument("--recorded", action="store_true",
                        help="backfill the recording rules and time each command reading "
                             "the raw counters and the recorded series")
    args = parser.parse_args()
    from tests.support.prometheus import start_prometheus

    args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    for n in args.queues:
        tsdb = build_tsdb(n, args.workdir)
        if args.recorded:
            add_recorded(n, tsdb, args.workdir)
        server = start_prometheus(args.workdir / f"prom-{n}", tsdb=tsdb, ready_timeout_s=600,
                                  extra_args=["--query.max-samples=200000000"])
        modes = ["raw", "rec"] if args.recorded else ["default"]
        try:
            run_child(server.url, "snapshot")  # warm Prometheus's page cache once
            for what, mode in ((w, m) for w in args.what for m in modes):
                own, raw, rss, cpu = [], [], [], []
                for _ in range(args.repeats):
                    r = run_child(server.url, what, mode)
                    own.append(float(r["s"]))  # type: ignore[arg-type]
                    cpu.append(float(r["cpu"]))  # type: ignore[arg-type]
                    rss.append(int(r["rss"]))  # type: ignore[call-overload]
                    urls = list(r["urls"])  # type: ignore[call-overload]
                    raw.append(bare(urls, int(r["parallelism"])))  # type: ignore[call-overload]
                mo, mb = statistics.median(own), statistics.median(raw)
                label = what if mode == "default" else f"{what}/{mode}"
                print(f"{n:>6} queues  {label:<13} {mo:7.2f} s  (runs {min(own):.2f}–"
                      f"{max(own):.2f})  its {len(urls)} requests bare {mb:6.2f} s  "
                      f"ratio {mo / mb:4.2f}×  own CPU {statistics.median(cpu):5.2f} s  "
                      f"peak RSS {max(rss) / 2**30:.2f} GiB  "
                      f"[{r['queues']} queues]", flush=True)
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
