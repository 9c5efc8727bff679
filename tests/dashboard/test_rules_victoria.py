"""The generated rules evaluated by VictoriaMetrics' own rule engine (Debian's ``vmalert``
beside a single-node ``victoria-metrics``, both on 127.0.0.1): the same scenario as the
Prometheus test of ``tests/dashboard/test_rules.py``, ending now, the same rules file. The
recorded series must carry the scenario's ground truth and the same alerts must fire.

MetricsQL's ``rate()`` does not extrapolate to the window's edges and its windows exclude
their start (``docs/collectors.md``, VictoriaMetrics): on the scenario's linear counters both
give the exact rate, so the tolerance is the Prometheus test's (a rate may read low by the part
of the window that lies before the data)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from collectors.profile import Profile
from dashboard.cli import main as cli_main
from dashboard.rules import recorded_names
from tests.conftest import require_binary
from tests.dashboard.test_rules import CONFIG_YAML, STORM, STORM_SPEC
from tests.support.victoria import HINT, VictoriaProcess, free_port, start_victoria
from tests.support.workqueue_om import (
    DURATION_S,
    STEP_S,
    TRUTH,
    WINDOW_S,
    generate,
    main_scenario,
)

pytestmark = pytest.mark.prometheus


@pytest.fixture(scope="module")
def ruled_victoria(tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[tuple[VictoriaProcess, str]]:
    """VictoriaMetrics with the scenario ending now, and vmalert evaluating the generated
    rules every second against it, writing what it records back into it."""
    work = tmp_path_factory.mktemp("vm-rules")
    cfg = work / "queuelens.yaml"
    cfg.write_text(CONFIG_YAML)
    rules_file = work / "rules.yaml"
    assert cli_main(["rules", "--config", str(cfg), "-o", str(rules_file)]) == 0
    queues, processes = main_scenario()
    last = int(time.time())
    text = generate([*queues, STORM_SPEC], processes, start=last - DURATION_S + STEP_S,
                    duration_s=DURATION_S, step_s=STEP_S)
    # latencyOffset 0: the data end now, and VictoriaMetrics hides the last 30 s by default
    server = start_victoria(work / "vm", extra_args=["-search.latencyOffset=0s"])
    server.load_openmetrics(text)
    vmalert = require_binary("vmalert", HINT)
    port = free_port()
    log = open(work / "vmalert.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [vmalert, f"-rule={rules_file}", f"-datasource.url={server.url}",
         f"-remoteWrite.url={server.url}", "-remoteWrite.flushInterval=1s",
         "-evaluationInterval=1s", f"-httpListenAddr=127.0.0.1:{port}",
         # alerts must go somewhere: a closed loopback port (the test reads vmalert's API)
         f"-notifier.url=http://127.0.0.1:{free_port()}"],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        yield server, f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        server.stop()


def _latest(server: VictoriaProcess, record: str, wanted: set[str], deadline: float
            ) -> dict[str, float]:
    """queue -> the recorded value, once every wanted queue has one (or the deadline passed).

    vmalert writes each rule's samples back by remote write, flushed every second, so one
    rule's series can land over more than one flush: waiting for "some" queues (it once waited
    for five) can read before the rest arrived and fail on a queue that was merely late."""
    out: dict[str, float] = {}
    while time.monotonic() < deadline:
        server.force_flush()
        resp = requests.get(server.prometheus_url + "/api/v1/query",
                            params={"query": f"last_over_time({record}[1m])"}, timeout=10)
        resp.raise_for_status()
        out = {s["metric"]["name"]: float(s["value"][1]) for s in resp.json()["data"]["result"]}
        if wanted <= out.keys():
            break
        time.sleep(0.5)
    return out


def test_vmalert_records_the_ground_truth(ruled_victoria: tuple[VictoriaProcess, str]) -> None:
    server, _ = ruled_victoria
    names = recorded_names(Profile(), WINDOW_S)
    truth = {q: dict(v) for q, v in TRUTH.items()}
    truth[STORM] = {"arrival_rate_per_s": 10.0, "throughput_per_s": 10.0, "busy_workers": 1.0,
                    "queue_wait_mean_s": 0.5, "retries_per_s": 9.0}
    truth["replicaset"]["depth_growth_per_s"] = 4.0
    deadline = time.monotonic() + 60
    checked = 0
    for signal in ("arrival_rate_per_s", "throughput_per_s", "busy_workers", "retries_per_s",
                   "queue_wait_mean_s", "depth_growth_per_s"):
        wanted = {q for q, by_signal in truth.items() if signal in by_signal}
        values = _latest(server, names[signal], wanted, deadline)
        for queue, expected_by_signal in truth.items():
            expected = expected_by_signal.get(signal)
            if expected is None:
                continue
            assert queue in values, (signal, queue, sorted(values), server.log_tail())
            # the window may begin before the data (it ended at most a minute ago): low by
            # that part at most, never high
            assert expected * (1 - 60 / WINDOW_S) - 1e-9 <= values[queue] <= \
                expected * (1 + 1e-6) + 1e-9, (signal, queue, values[queue], expected)
            checked += 1
    assert checked >= 25


def test_vmalert_fires_the_alerts_prometheus_fires(ruled_victoria: tuple[VictoriaProcess, str]
                                                  ) -> None:
    _, vmalert = ruled_victoria
    expected = {
        ("WorkqueueSaturated", "replicaset"),
        ("WorkqueueBacklogGrowing", "replicaset"),
        ("WorkqueueStuckWorkers", "replicaset"),
        ("WorkqueueRetryStorm", STORM),
        ("WorkqueueRetryStorm", "endpoints"),
    }
    deadline = time.monotonic() + 60
    seen: set[tuple[str, str]] = set()
    while time.monotonic() < deadline:
        resp = requests.get(vmalert + "/api/v1/alerts", timeout=10)
        if resp.ok:
            alerts = resp.json()["data"]["alerts"] or []  # null before the first alert
            seen = {(a["labels"]["alertname"], a["labels"].get("name", ""))
                    for a in alerts if a.get("state") in ("pending", "firing")}
            if seen >= expected:
                break
        time.sleep(0.5)
    assert seen == expected, seen


def test_the_rules_file_is_the_one_prometheus_loads(tmp_path: Path) -> None:
    """vmalert reads the same generated file; it rejects what it cannot parse, so a rule
    MetricsQL does not understand fails here (-dryRun parses and checks every rule)."""
    cfg = tmp_path / "queuelens.yaml"
    cfg.write_text(CONFIG_YAML)
    rules_file = tmp_path / "rules.yaml"
    assert cli_main(["rules", "--config", str(cfg), "-o", str(rules_file)]) == 0
    vmalert = require_binary("vmalert", HINT)
    done = subprocess.run([vmalert, "-dryRun", f"-rule={rules_file}"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
