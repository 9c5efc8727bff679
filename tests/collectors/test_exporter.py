"""The demo exporter: exact metric names, labels and bucket layouts, and one live scrape by a
real Prometheus."""

from __future__ import annotations

import time

import pytest
import requests
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from collectors.demo import DemoSource
from collectors.exporter import registry_for, serve
from models import fleet as fl
from tests.support.prometheus import start_prometheus

AT = 1_704_067_200.0 + 14 * 3600

DECADES = [1e-8 * 10**i for i in range(10)]  # client-go ExponentialBuckets(10e-9, 10, 10)
RECONCILE = [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
             0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9,
             10, 15, 20, 25, 30, 40, 50, 60]


def scrape_text() -> str:
    return generate_latest(registry_for(DemoSource().fleet, clock=lambda: AT)).decode()


def test_exposition_names_labels_and_buckets() -> None:
    text = scrape_text()
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    expected = {
        "workqueue_depth": ("gauge", {"name", "controller", "priority", "pod"}),
        "workqueue_adds": ("counter", {"name", "controller", "pod"}),
        "workqueue_retries": ("counter", {"name", "controller", "pod"}),
        "workqueue_queue_duration_seconds": ("histogram", {"name", "controller", "pod"}),
        "workqueue_work_duration_seconds": ("histogram", {"name", "controller", "pod"}),
        "workqueue_unfinished_work_seconds": ("gauge", {"name", "controller", "pod"}),
        "workqueue_longest_running_processor_seconds": ("gauge", {"name", "controller", "pod"}),
        "controller_runtime_reconcile": ("counter", {"controller", "result", "pod"}),
        "controller_runtime_reconcile_errors": ("counter", {"controller", "pod"}),
        "controller_runtime_reconcile_time_seconds": ("histogram", {"controller", "pod"}),
        "controller_runtime_max_concurrent_reconciles": ("gauge", {"controller", "pod"}),
        "controller_runtime_active_workers": ("gauge", {"controller", "pod"}),
        "rest_client_requests": ("counter", {"code", "method", "host", "pod"}),
        "rest_client_rate_limiter_duration_seconds": ("histogram", {"verb", "host", "pod"}),
    }
    for name, (kind, labels) in expected.items():
        assert name in fams, name
        assert fams[name].type == kind, name
        for s in fams[name].samples:
            assert set(s.labels) - {"le"} == labels, (name, s.labels)
    assert "_created" not in text
    adds = {s.labels["name"]: s for s in fams["workqueue_adds"].samples}
    assert set(adds) == {p.controller for p in fl.DEMO_QUEUES}
    assert all(s.name == "workqueue_adds_total" for s in adds.values())
    results = {s.labels["result"] for s in fams["controller_runtime_reconcile"].samples}
    assert results == {"success", "error", "requeue", "requeue_after"}

    def layout(family: str, queue_label: str, queue: str) -> list[float]:
        return [float(s.labels["le"]) for s in fams[family].samples
                if s.name.endswith("_bucket") and s.labels[queue_label] == queue]

    for fam in ("workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"):
        les = layout(fam, "name", "replicaset")
        assert les[-1] == float("inf")
        assert les[:-1] == pytest.approx(DECADES, rel=1e-12)
    les = layout("controller_runtime_reconcile_time_seconds", "controller", "replicaset")
    assert les[:-1] == pytest.approx(RECONCILE, rel=1e-12)
    assert les[-1] == float("inf")
    # Go prints 1e-5 computed by repeated multiplication as 9.999999999999999e-06, and 1 as "1"
    assert 'le="9.999999999999999e-06"' in text
    assert 'le="1"' in text
    assert 'le="1.0"' not in text


def test_histograms_are_cumulative_and_consistent() -> None:
    fams = {f.name: f for f in text_string_to_metric_families(scrape_text())}
    for fam in ("workqueue_queue_duration_seconds", "controller_runtime_reconcile_time_seconds"):
        by: dict[str, dict[str, list[float]]] = {}
        for s in fams[fam].samples:
            key = s.labels["controller"]
            kind = s.name.rsplit("_", 1)[1]
            by.setdefault(key, {}).setdefault(kind, []).append(s.value)
        for key, parts in by.items():
            buckets = parts["bucket"]
            assert buckets == sorted(buckets), key
            assert buckets[-1] == parts["count"][0], key
            assert parts["sum"][0] > 0


def test_exporter_values_follow_the_clock() -> None:
    fleet = DemoSource().fleet
    now = [AT]
    reg = registry_for(fleet, clock=lambda: now[0])

    def adds() -> float:
        fams = text_string_to_metric_families(generate_latest(reg).decode())
        fam = next(f for f in fams if f.name == "workqueue_adds")
        return sum(s.value for s in fam.samples)

    first = adds()
    now[0] = AT + 60
    demo = DemoSource().compute([AT + 60], 60.0)["arrival_rate_per_s"].sum()
    assert (adds() - first) / 60 == pytest.approx(demo, rel=1e-9)


def test_worker_gauge_follows_the_deployment_schedule() -> None:
    # deployment runs 5 workers from 00:00 UTC, then 3 from 00:45, in 45-minute blocks
    day = 1_704_067_200.0
    for at, expected in ((day + 10 * 60, 5.0), (day + 50 * 60, 3.0), (day + 100 * 60, 5.0)):
        text = generate_latest(registry_for(DemoSource().fleet, clock=lambda t=at: t)).decode()
        fam = next(f for f in text_string_to_metric_families(text)
                   if f.name == "controller_runtime_max_concurrent_reconciles")
        value = next(s.value for s in fam.samples if s.labels["controller"] == "deployment")
        assert value == expected, at


@pytest.mark.prometheus
def test_live_scrape_by_real_prometheus(tmp_path: object) -> None:
    from pathlib import Path

    source = DemoSource()
    server, thread = serve(source.fleet, "127.0.0.1", 0)
    prom = None
    try:
        target = f"127.0.0.1:{server.server_port}"
        prom = start_prometheus(Path(str(tmp_path)), scrape_targets=[target],
                                scrape_interval_s=1)
        promql = "sum(rate(workqueue_adds_total[5s]))"
        deadline = time.monotonic() + 25
        got = None
        while time.monotonic() < deadline:
            t_eval = time.time() - 0.5
            body = requests.get(f"{prom.url}/api/v1/query",
                                params={"query": promql, "time": t_eval}, timeout=5).json()
            result = body["data"]["result"]
            if result:
                got = float(result[0]["value"][1])
                want = float(source.compute([t_eval], 5.0)["arrival_rate_per_s"].sum())
                if abs(got - want) <= 0.03 * want:
                    break
            time.sleep(0.5)
        assert got is not None, "Prometheus never answered the rate:\n" + prom.log_tail()
        assert got == pytest.approx(want, rel=0.03)
        up = requests.get(f"{prom.url}/api/v1/query", params={"query": "up"}, timeout=5).json()
        assert up["data"]["result"][0]["value"][1] == "1"
    finally:
        if prom is not None:
            prom.stop()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
