"""The demo against a REAL Prometheus: its OpenMetrics backfilled through promtool must give,
in PromQL, the very numbers DemoSource.snapshot computes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from collectors.demo import DemoSource
from collectors.openmetrics import render_openmetrics
from models.measurements import QueueSnapshot
from tests.support.prometheus import PrometheusProcess, backfill, start_prometheus

pytestmark = pytest.mark.prometheus

START = 1_704_067_200.0  # 2024-01-01T00:00:00Z, a 2-hour boundary
AT = START + 5400.0  # inside the data, on the 15 s sample grid
WINDOW = 300.0


@pytest.fixture(scope="module")
def demo() -> DemoSource:
    return DemoSource()


@pytest.fixture(scope="module")
def prom(demo: DemoSource, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("demo-backfill")
    text = render_openmetrics(demo.fleet, START, START + 7200, 15.0,
                              extra_labels={"job": "queuelens-demo"})
    tsdb = backfill(text, work)
    server: PrometheusProcess = start_prometheus(work, tsdb=tsdb)
    try:
        yield server.url
    finally:
        server.stop()


def query(url: str, promql: str, by: str) -> dict[str, float]:
    r = requests.get(f"{url}/api/v1/query", params={"query": promql, "time": AT}, timeout=10)
    r.raise_for_status()
    body = r.json()
    assert body["status"] == "success", body
    return {s["metric"].get(by, ""): float(s["value"][1]) for s in body["data"]["result"]}


@pytest.fixture(scope="module")
def snap(demo: DemoSource) -> dict[str, QueueSnapshot]:
    return {q.queue: q for q in demo.snapshot(AT, WINDOW).queues}


W = "[5m]"
CASES = [
    ("arrival_rate_per_s", f"sum by (name) (rate(workqueue_adds_total{W}))", 1e-9),
    ("throughput_per_s", f"sum by (name) (rate(workqueue_work_duration_seconds_count{W}))", 1e-9),
    ("busy_workers", f"sum by (name) (rate(workqueue_work_duration_seconds_sum{W}))", 1e-9),
    ("retries_per_s", f"sum by (name) (rate(workqueue_retries_total{W}))", 1e-9),
    ("queue_wait_mean_s", f"sum by (name) (rate(workqueue_queue_duration_seconds_sum{W})) / "
     f"sum by (name) (rate(workqueue_queue_duration_seconds_count{W}))", 1e-9),
    ("queue_wait_p99_s", "histogram_quantile(0.99, sum by (name, le) "
     f"(rate(workqueue_queue_duration_seconds_bucket{W})))", 1e-9),
    ("queue_wait_p50_s", "histogram_quantile(0.5, sum by (name, le) "
     f"(rate(workqueue_queue_duration_seconds_bucket{W})))", 1e-9),
    ("work_p95_s", "histogram_quantile(0.95, sum by (name, le) "
     f"(rate(workqueue_work_duration_seconds_bucket{W})))", 1e-9),
    ("depth_mean", f"sum by (name) (avg_over_time(workqueue_depth{W}))", 1e-9),
    ("depth_current", "sum by (name) (workqueue_depth)", 1e-9),
    ("unfinished_work_growth", f"sum by (name) (deriv(workqueue_unfinished_work_seconds{W}))",
     1e-6),
    ("longest_running_s",
     f"max by (name) (max_over_time(workqueue_longest_running_processor_seconds{W}))", 1e-9),
    ("workers", "max by (controller) (controller_runtime_max_concurrent_reconciles)", 1e-12),
    ("errors_per_s", f"sum by (controller) (rate(controller_runtime_reconcile_errors_total{W}))",
     1e-9),
]


@pytest.mark.parametrize(("field", "promql", "rel"), CASES, ids=[c[0] for c in CASES])
def test_promql_equals_demo_snapshot(
    prom: str, snap: dict[str, QueueSnapshot], field: str, promql: str, rel: float
) -> None:
    by = "controller" if "by (controller)" in promql else "name"
    got = query(prom, promql, by)
    assert set(got) == set(snap)
    for name, q in snap.items():
        expected = getattr(q, field)
        assert expected is not None
        assert got[name] == pytest.approx(expected, rel=rel, abs=1e-12), name


def test_results_api_calls_and_throttle_per_process(
    prom: str, snap: dict[str, QueueSnapshot]
) -> None:
    errors = query(prom, f'sum by (controller) (rate(controller_runtime_reconcile_total'
                   f'{{result="requeue_after"}}{W}))', "controller")
    api = query(prom, f"sum by (pod) (rate(rest_client_requests_total{W}))", "pod")
    api_429 = query(prom, f'sum by (pod) (rate(rest_client_requests_total{{code="429"}}{W}))',
                    "pod")
    throttle = query(prom, f"sum by (pod) (rate(rest_client_rate_limiter_duration_seconds_sum{W}))",
                     "pod")
    external = query(prom, 'sum by (controller) (rate(external_dns_provider_requests_total'
                     f'{{result="success"}}{W}))', "controller")
    for name, q in snap.items():
        pod = q.labels["pod"]
        assert errors[name] == pytest.approx(q.reconcile_results_per_s["requeue_after"], rel=1e-9)
        assert api[pod] == pytest.approx(q.api_calls_per_s, rel=1e-9)
        assert api_429[pod] == pytest.approx(q.api_calls_by_class_per_s["429"], rel=1e-9)
        if q.throttle_s_per_s is None:
            assert pod not in throttle
        else:
            assert throttle[pod] == pytest.approx(q.throttle_s_per_s, rel=1e-9)
    assert set(external) == {"dnsrecord"}
    assert external["dnsrecord"] == pytest.approx(snap["dnsrecord"].external_effects_per_s)


def test_le_labels_are_go_formatted(prom: str) -> None:
    r = requests.get(f"{prom}/api/v1/label/le/values", timeout=10).json()["data"]
    assert "9.999999999999999e-06" in r
    assert "1" in r
    assert "+Inf" in r
    assert "1.0" not in r
