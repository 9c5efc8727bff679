"""The signals beyond the queue, read from a REAL Prometheus backfilled with series in the
shapes upstream code exposes (``tests/support/beyond_om.py``): the newer controller-runtime
counters, the priority queue's depth, the REST client's latency, retries and writes, and the
API server's priority level — a 1.36 cluster (both seat generations), a 1.37 cluster (the
pre-1.37 metrics gone) and an old one (only those) — with its write latency and webhooks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from collectors.profile import Profile, parse_selector
from collectors.prom_client import ConnectionSettings, PrometheusClient
from collectors.snapshot import PrometheusSource
from models.measurements import QueueSnapshot, Snapshot
from tests.support import beyond_om as bo
from tests.support.prometheus import PrometheusProcess, backfill, start_prometheus

pytestmark = pytest.mark.prometheus


@pytest.fixture(scope="module")
def beyond_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    work: Path = tmp_path_factory.mktemp("beyond")
    server = start_prometheus(work / "prom", tsdb=backfill(bo.text(), work))
    try:
        yield server
    finally:
        server.stop()


def _snap(server: PrometheusProcess, profile: Profile) -> Snapshot:
    src = PrometheusSource(PrometheusClient(ConnectionSettings(url=server.url)), profile)
    return src.snapshot(float(bo.AT), bo.WINDOW_S)


def _q(snap: Snapshot, name: str) -> QueueSnapshot:
    return next(q for q in snap.queues if q.queue == name)


@pytest.fixture(scope="module")
def snap(beyond_prometheus: PrometheusProcess) -> Snapshot:
    return _snap(beyond_prometheus, Profile(cluster_labels=("cluster",)))


@pytest.mark.parametrize("queue", list(bo.queues()))
def test_the_controller_and_client_figures(snap: Snapshot, queue: str) -> None:
    q = _q(snap, queue)
    for name, value in bo.CLIENT.items():
        assert getattr(q, name) == pytest.approx(value, rel=1e-9), (queue, name)
    assert q.depth_by_priority == pytest.approx(bo.DEPTH_BY_PRIORITY)
    assert list(q.depth_by_priority) == ["10", "0", "-100"]  # highest priority first
    assert q.depth_current == pytest.approx(sum(bo.DEPTH_BY_PRIORITY.values()))
    assert q.depth_min_by_priority == pytest.approx(bo.DEPTH_MIN_BY_PRIORITY)
    assert q.priority_series == 3


def test_a_queue_with_too_many_priorities_is_named(snap: Snapshot) -> None:
    q = _q(snap, "lifo")
    assert q.priority_series == 40
    # the 25 deepest are read (depths 16 … 40), the whole depth is still summed
    assert len(q.depth_by_priority) == 25
    assert min(q.depth_by_priority.values()) == 16.0
    assert q.depth_current == sum(range(1, 41))
    (warning,) = [w for w in snap.warnings if "priority values" in w]
    for part in ("'lifo'", "#3396", "25"):
        assert part in warning


@pytest.mark.parametrize("queue", list(bo.queues()))
def test_the_api_server_of_each_queues_cluster(snap: Snapshot, queue: str) -> None:
    q = _q(snap, queue)
    for name, value in bo.TRUTH[queue].items():
        if value is None:
            assert getattr(q, name) is None, (queue, name)
            assert name in q.missing, (queue, name)
        else:
            assert getattr(q, name) == pytest.approx(value, rel=1e-9), (queue, name)
    if queue in bo.REJECTED_BY_REASON:
        assert q.apf_rejected_by_reason == pytest.approx(bo.REJECTED_BY_REASON[queue])
        assert q.apf_priority_level == "workload-low"
    if queue == "lonely":
        assert q.missing["apf_seat_limit"].endswith("for this queue's cluster (cluster=elsewhere)")
        assert q.admission_webhook_mean_s == {}
    else:
        assert q.admission_webhook_mean_s == pytest.approx(bo.WEBHOOKS)


def test_the_137_generation_reads_like_136(snap: Snapshot) -> None:
    # one replica of the same level: the same per-replica figures, whichever generation
    new, both = _q(snap, "gadgets"), _q(snap, "widgets")
    assert new.apf_seat_limit == pytest.approx(both.apf_seat_limit / 2)
    assert new.apf_seats_in_use_mean == pytest.approx(both.apf_seats_in_use_mean / 2)


def test_a_dedicated_flow_schema_reads_only_its_flows(beyond_prometheus: PrometheusProcess
                                                      ) -> None:
    own = _snap(beyond_prometheus, Profile(cluster_labels=("cluster",),
                                           flow_schema="service-accounts"))
    q = _q(own, "widgets")
    assert q.apf_wait_mean_s == pytest.approx(0.05)
    assert q.apf_seats_in_use_mean == pytest.approx(2 * 30.0)
    assert q.apf_inqueue_mean == pytest.approx(2 * 5.0)
    assert q.apf_seat_limit == pytest.approx(2 * 40.0)  # the level's, not the flow's


def test_another_level_and_a_selector_on_controller_labels(
        beyond_prometheus: PrometheusProcess) -> None:
    # namespace="ops" is on the controllers' series only: the API server's answers keep it off
    other = _snap(beyond_prometheus, Profile(
        cluster_labels=("cluster",), priority_level="global-default",
        selector=parse_selector('{namespace="ops"}')))
    q = _q(other, "widgets")
    assert q.apf_priority_level == "global-default"
    assert q.apf_seat_limit == pytest.approx(2 * 1000.0)
    assert q.apf_wait_mean_s == pytest.approx(5.0)
    assert q.apf_rejected_by_reason == pytest.approx({"concurrency-limit": 200.0})


def test_without_cluster_labels_the_clusters_are_one(beyond_prometheus: PrometheusProcess
                                                     ) -> None:
    # The default is one cluster per Prometheus. Here the clusters are summed, as the docs
    # warn: 2 × 40 seats of c136 + 40 of c137 + the old cluster's 50 (the fallback to the
    # pre-1.37 metric is per series, inside the sum: an old server still counts).
    one = _snap(beyond_prometheus, Profile())
    q = _q(one, "lonely")
    assert q.apf_seat_limit == pytest.approx(170.0)
    assert q.apf_seats_in_use_mean == pytest.approx(2 * 39.0 + 39.0 + 45.0)
    assert q.apf_dispatched_per_s == pytest.approx(2 * 30.0 + 30.0)


def test_queries_beyond_the_queue_are_sent_only_where_their_metrics_exist(
        beyond_prometheus: PrometheusProcess, tmp_path: Path) -> None:
    # this Prometheus has every metric: all of them are asked, after the one presence query
    client = PrometheusClient(ConnectionSettings(url=beyond_prometheus.url))
    profile = Profile(cluster_labels=("cluster",))
    PrometheusSource(client, profile).snapshot(float(bo.AT), bo.WINDOW_S)
    # 40 signals, the presence of the metrics and of the recorded series, topology, lookback
    assert client.request_count == 44
