"""Issue 23 item 5: liveness answers at once whatever the data path does.

A real ``queuelens serve`` reads a Prometheus that accepts and never answers (the fault server
``hang``), and ten page callbacks (the Doctor page's, each forced to read) are in flight — more
than the server's worker threads. ``/livez``, ``/readyz`` and ``/health`` must still answer
within 1 s, every time; ``/readyz`` says what the source does, ``/livez`` never looks."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

from dashboard.commands.serve import THREADS
from tests.support.fault_servers import FaultServer, hang
from tests.support.serving import health_seconds, serve_process

PROBE_TIMEOUT_S = 1.0
IN_FLIGHT = 10
_OUTPUTS = (("doctor-report", "children"), ("doctor-summary", "children"),
            ("doctor-error", "children"))


def _doctor_body(n_clicks: int) -> bytes:
    return json.dumps({
        "output": "..{}..".format("...".join(f"{i}.{p}" for i, p in _OUTPUTS)),
        "outputs": [{"id": i, "property": p} for i, p in _OUTPUTS],
        "inputs": [{"id": "doctor-run", "property": "n_clicks", "value": n_clicks}],
        "changedPropIds": ["doctor-run.n_clicks"],
        "state": [],
    }).encode()


def _post(url: str, body: bytes, done: list[float]) -> None:
    request = urllib.request.Request(url + "/_dash-update-component", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=90) as answer:
            answer.read()
    except (urllib.error.URLError, OSError):
        pass
    done.append(time.monotonic())


def test_probes_answer_at_once_while_prometheus_hangs_and_callbacks_wait() -> None:
    assert IN_FLIGHT > THREADS  # enough to take every worker thread
    with FaultServer(hang()) as prometheus, \
            serve_process("--prometheus", prometheus.url, "--timeout", "60s") as served:
        done: list[float] = []
        posts = [threading.Thread(target=_post, args=(served.url, _doctor_body(i + 1), done),
                                  daemon=True) for i in range(IN_FLIGHT)]
        for post in posts:
            post.start()
        time.sleep(2.0)  # every callback is in the server, waiting on Prometheus
        latencies: dict[str, list[float]] = {"/livez": [], "/readyz": [], "/health": []}
        for _ in range(4):
            for path, seen in latencies.items():
                seen.append(health_seconds(served.url, PROBE_TIMEOUT_S, path))
            time.sleep(0.5)
        assert not done, "the callbacks were meant to be still waiting on Prometheus"
        assert prometheus.requests  # they did ask it
        with urllib.request.urlopen(served.url + "/readyz", timeout=PROBE_TIMEOUT_S) as r:
            ready = json.loads(r.read())
        with urllib.request.urlopen(served.url + "/livez", timeout=PROBE_TIMEOUT_S) as r:
            live = json.loads(r.read())
        prometheus.stop()  # the callbacks end now
        for post in posts:
            post.join(30)
    assert all(max(seen) < PROBE_TIMEOUT_S for seen in latencies.values()), latencies
    assert live == {"status": "ok"}  # liveness does not look at the source at all
    assert ready["status"] == "ok"
    assert ready["source_state"] in ("unknown", "unreachable")  # nothing was ever read
