"""Serving under slow clients and a hung Prometheus (issue 23 items 2 and 5).

    python benchmarks/bench_serve.py [--seconds 20] [--drip 5] [--gunicorn]

Starts a real ``queuelens serve --demo`` on 127.0.0.1 (tests/support/serving.py) and probes
``/health`` every 0.25 s (timeout 5 s) while, in turn:

* nothing else happens (the baseline);
* 8 sockets send one header line every ``--drip`` seconds (slowloris);
* 8 sockets send one body byte every ``--drip`` seconds;
* 200 connections are open and silent;
* all three at once;
* and, against a Prometheus that accepts and never answers (``fault_servers.hang``), ten
  Doctor-page callbacks are in flight (``/livez`` and ``/readyz`` probed as well).

Prints, per scenario, the probes' median / 95th percentile / max latency and how many took
1 s or more (the issue's bar) or failed. ``--gunicorn`` runs the attack scenarios against the
server ``serve`` used before issue 23 (gunicorn gthread, 1 worker, 8 threads) for comparison —
only where gunicorn happens to be installed (it is no longer a dependency). Every attack is
bounded by ``--seconds``; nothing is asserted. Note ``uptime``'s load average beside the
figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.fault_servers import FaultServer, hang
from tests.support.serving import Served, health_seconds, serve_process
from tests.support.slow_clients import SlowClients
from tests.support.victoria import free_port

PROBE_TIMEOUT_S = 5.0
BAR_S = 1.0


def _probe(url: str, seconds: float, path: str = "/health") -> list[float | None]:
    out: list[float | None] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            out.append(health_seconds(url, PROBE_TIMEOUT_S, path))
        except OSError:
            out.append(None)
        time.sleep(0.25)
    return out


def _line(name: str, samples: list[float | None]) -> str:
    ok = sorted(s for s in samples if s is not None)
    failed = len(samples) - len(ok)
    slow = sum(1 for s in ok if s >= BAR_S) + failed
    if not ok:
        return f"{name:38s} probes {len(samples):3d}  all failed"
    p95 = ok[min(len(ok) - 1, round(0.95 * (len(ok) - 1)))]
    return (f"{name:38s} probes {len(samples):3d}  median {statistics.median(ok) * 1000:7.1f} ms"
            f"  p95 {p95 * 1000:7.1f} ms  max {ok[-1] * 1000:7.1f} ms  >=1s or failed {slow}")


@contextmanager
def _gunicorn() -> Iterator[Served]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "QUEUELENS_PROMETHEUS_URL"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1",
         "--threads", "8", "--timeout", "120", "dashboard.app:create_app()"],
        cwd=Path(__file__).resolve().parents[1], env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, text=True)
    served = Served(f"http://127.0.0.1:{port}", port, proc)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health_seconds(served.url, 2.0)
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("gunicorn did not start") from None
                time.sleep(0.2)
        yield served
    finally:
        proc.terminate()
        proc.wait(20)


ATTACKS: list[tuple[str, dict[str, int]]] = [
    ("baseline", {}),
    ("8 slow-header sockets", {"slow_headers": 8}),
    ("8 slow-body sockets", {"slow_bodies": 8}),
    ("200 idle connections", {"idle": 200}),
    ("all three at once", {"slow_headers": 8, "slow_bodies": 8, "idle": 200})]


def _doctor_post(url: str, n_clicks: int) -> None:
    outputs = (("doctor-report", "children"), ("doctor-summary", "children"),
               ("doctor-error", "children"))
    body = json.dumps({
        "output": "..{}..".format("...".join(f"{i}.{p}" for i, p in outputs)),
        "outputs": [{"id": i, "property": p} for i, p in outputs],
        "inputs": [{"id": "doctor-run", "property": "n_clicks", "value": n_clicks}],
        "changedPropIds": ["doctor-run.n_clicks"], "state": []}).encode()
    request = urllib.request.Request(url + "/_dash-update-component", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            answer.read()
    except OSError:
        pass


def run(seconds: float, drip: float, start: Callable[[], Any], label: str) -> None:
    for name, counts in ATTACKS:
        with start() as served:
            attack = (SlowClients(served.port, interval_s=drip, max_duration_s=seconds + 10,
                                  **counts) if counts else nullcontext())
            with attack:
                samples = _probe(served.url, seconds)
            print(_line(f"{label}: {name}", samples), flush=True)


def run_hung(seconds: float) -> None:
    with FaultServer(hang()) as prometheus, \
            serve_process("--prometheus", prometheus.url, "--timeout", "120s") as served:
        posts = [threading.Thread(target=_doctor_post, args=(served.url, i + 1), daemon=True)
                 for i in range(10)]
        for post in posts:
            post.start()
        time.sleep(2.0)
        results: dict[str, list[float | None]] = {}
        probers = [threading.Thread(target=lambda p=p: results.__setitem__(
            p, _probe(served.url, seconds, p))) for p in ("/livez", "/readyz", "/health")]
        for prober in probers:
            prober.start()
        for prober in probers:
            prober.join()
        prometheus.stop()
        for post in posts:
            post.join(30)
    for path, samples in results.items():
        print(_line(f"hung Prometheus + 10 callbacks: {path}", samples), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="probing time per scenario (default 20)")
    parser.add_argument("--drip", type=float, default=5.0,
                        help="seconds between the slow clients' lines/bytes (default 5)")
    parser.add_argument("--gunicorn", action="store_true",
                        help="also run the attacks against gunicorn gthread (before issue 23)")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()}", flush=True)
    run(args.seconds, args.drip, lambda: serve_process("--demo"), "serve")
    run_hung(args.seconds)
    if args.gunicorn:
        run(args.seconds, args.drip, _gunicorn, "gunicorn")
    print(f"load average: {os.getloadavg()}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
