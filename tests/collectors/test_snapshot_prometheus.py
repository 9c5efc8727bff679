"""PrometheusSource against a REAL Prometheus backfilled with known ground truth."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from collectors.config import ConnectionSettings, parse_config
from collectors.errors import BadQuery
from collectors.profile import Matcher, Profile, component_base_profile
from collectors.prom_client import PrometheusClient
from collectors.snapshot import PrometheusSource
from models.measurements import QueueSnapshot, Snapshot
from tests.support.prometheus import PrometheusProcess
from tests.support.workqueue_om import (
    API_CLASSES_A,
    API_CLASSES_K,
    AT,
    AT_AFTER_GAP,
    AT_GAP,
    AT_RESET,
    START,
    TRUTH,
    WEIRD,
    WEIRD_WORKERS_FROM_CONFIG,
    WINDOW_S,
    iter_queue_names,
)

pytestmark = pytest.mark.prometheus


def _source(url: str, profile: Profile | None = None) -> PrometheusSource:
    return PrometheusSource(PrometheusClient(ConnectionSettings(url=url, timeout_s=10)),
                            profile or Profile(workers={WEIRD: WEIRD_WORKERS_FROM_CONFIG}))


@pytest.fixture(scope="module")
def snap_at(backfilled_prometheus: PrometheusProcess) -> Snapshot:
    return _source(backfilled_prometheus.url).snapshot(AT, WINDOW_S)


def _q(snap: Snapshot, name: str) -> QueueSnapshot:
    return next(q for q in snap.queues if q.queue == name)


def test_every_queue_is_found_once(snap_at: Snapshot) -> None:
    assert sorted(q.queue for q in snap_at.queues) == sorted(iter_queue_names())
    assert snap_at.at == AT
    assert snap_at.window_s == WINDOW_S


@pytest.mark.parametrize("queue", sorted(TRUTH))
def test_snapshot_recovers_ground_truth(snap_at: Snapshot, queue: str) -> None:
    q = _q(snap_at, queue)
    for fieldname, expected in TRUTH[queue].items():
        got = getattr(q, fieldname)
        assert got == pytest.approx(expected, rel=1e-6, abs=1e-9), (queue, fieldname, q.missing)


def test_depth_is_summed_over_priority_and_mean_follows_growth(snap_at: Snapshot) -> None:
    # deployment: priority "0" holds 3, priority "-100" holds 2
    assert _q(snap_at, "deployment").depth_current == 5
    # replicaset grows 4/s: the 5 m average sits ~150 s behind the current value
    rs = _q(snap_at, "replicaset")
    assert rs.depth_mean == pytest.approx(4 * (AT - START - 150), rel=0.01)
    assert rs.littles_law_ratio == pytest.approx(rs.depth_mean / (20 * 30), rel=1e-6)


def test_reconcile_results_and_api_classes(snap_at: Snapshot) -> None:
    dep = _q(snap_at, "deployment")
    assert dep.reconcile_results_per_s == pytest.approx(
        {"success": 4, "error": 0.25, "requeue": 0, "requeue_after": 0.75})
    assert dep.api_calls_by_class_per_s == pytest.approx(API_CLASSES_A)
    assert sum(dep.api_calls_by_class_per_s.values()) == pytest.approx(dep.api_calls_per_s)
    assert dep.labels["job"] == "controller-a"
    weird = _q(snap_at, WEIRD)
    assert weird.api_calls_by_class_per_s == pytest.approx(API_CLASSES_K)
    # the rate-limiter histogram exists only for the component-base process
    assert dep.throttle_s_per_s is None
    assert "rate_limiter" in dep.missing["throttle_s_per_s"]


def test_component_base_queue_without_worker_gauge(
    backfilled_prometheus: PrometheusProcess, snap_at: Snapshot
) -> None:
    weird = _q(snap_at, WEIRD)
    assert weird.workers == WEIRD_WORKERS_FROM_CONFIG
    assert weird.utilization == pytest.approx(0.05 / WEIRD_WORKERS_FROM_CONFIG)
    assert weird.reconcile_results_per_s == {}
    assert "reconcile_results_per_s" in weird.missing
    plain = _source(backfilled_prometheus.url, Profile()).snapshot(AT, WINDOW_S)
    w = _q(plain, WEIRD)
    assert w.workers is None
    assert w.utilization is None
    assert "max_concurrent_reconciles" in w.missing["workers"]
    assert "config" in w.missing["workers"]


def test_quantile_above_top_bucket_is_flagged_as_lower_bound(snap_at: Snapshot) -> None:
    flagged = [w for w in snap_at.warnings if "lower bound" in w]
    assert any(WEIRD in w and "queue_wait_p99_s" in w for w in flagged)
    assert any(WEIRD in w and "queue_wait_p95_s" in w for w in flagged)
    # deployment's p99 (9.775 s) is below its 1000 s top bucket: no flag
    assert not any(w.startswith("deployment") for w in flagged)


def test_client_quantiles_match_prometheus_histogram_quantile(
    backfilled_prometheus: PrometheusProcess, snap_at: Snapshot
) -> None:
    """Second formulation: PromQL's own histogram_quantile on the same bucket rates."""
    client = PrometheusClient(ConnectionSettings(url=backfilled_prometheus.url))
    for metric, prefix in (("workqueue_queue_duration_seconds", "queue_wait"),
                           ("workqueue_work_duration_seconds", "work")):
        for p, qv in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
            res = client.query(
                f"histogram_quantile({qv}, sum by (name, le) (rate({metric}_bucket[5m])))", AT)
            for s in res.samples:
                ours = getattr(_q(snap_at, s.labels["name"]), f"{prefix}_{p}_s")
                assert ours == pytest.approx(s.value, rel=1e-9), (s.labels, p)


def test_counter_reset_is_handled_by_rate(backfilled_prometheus: PrometheusProcess) -> None:
    ep = _q(_source(backfilled_prometheus.url).snapshot(AT_RESET, WINDOW_S), "endpoints")
    assert ep.arrival_rate_per_s == pytest.approx(2.0, rel=1e-6)
    assert ep.throughput_per_s == pytest.approx(2.0, rel=1e-6)
    assert ep.busy_workers == pytest.approx(0.5, rel=1e-6)
    assert ep.errors_per_s == pytest.approx(0.5, rel=1e-6)
    assert ep.queue_wait_mean_s == pytest.approx(0.05, rel=1e-6)


def test_scrape_gap_gives_none_with_reason_not_a_wrong_rate(
    backfilled_prometheus: PrometheusProcess,
) -> None:
    src = _source(backfilled_prometheus.url)
    snap = src.snapshot(AT_GAP, WINDOW_S)
    ep = _q(snap, "endpoints")
    for name in ("arrival_rate_per_s", "throughput_per_s", "busy_workers", "utilization",
                 "queue_wait_mean_s", "errors_per_s", "queue_wait_p99_s"):
        assert getattr(ep, name) is None, name
        assert "scrape gap" in ep.missing[name]
    assert any("endpoints" in w and "scrape gap" in w for w in snap.warnings)
    # other queues are unaffected
    assert _q(snap, "deployment").arrival_rate_per_s == pytest.approx(5.0)
    after = _q(src.snapshot(AT_AFTER_GAP, WINDOW_S), "endpoints")
    assert after.arrival_rate_per_s == pytest.approx(2.0, rel=1e-6)
    assert "arrival_rate_per_s" not in after.missing


def test_query_count_does_not_grow_with_queue_count(scale_prometheus: PrometheusProcess) -> None:
    at = START + 1800
    counts = {}
    for fleet, n in (("small", 3), ("large", 30)):
        client = PrometheusClient(ConnectionSettings(url=scale_prometheus.url))
        src = PrometheusSource(client, Profile(selector=(Matcher("fleet", "=", fleet),)))
        snap = src.snapshot(at, WINDOW_S)
        assert len(snap.queues) == n
        counts[fleet] = client.request_count
        # no job/instance labels: the process-wide API rate is shown and a warning says so
        assert snap.queues[0].api_calls_per_s == pytest.approx(5.0)
        assert any("process-wide" in w for w in snap.warnings)
        assert snap.queues[-1].arrival_rate_per_s == pytest.approx(n, rel=1e-6)
    assert counts["small"] == counts["large"]
    # one query per signal of the profile whose metrics exist (asked first, in one query),
    # the topology and the scrape-interval lookback: no API-server or opt-in REST-client
    # series here, so those queries are not sent
    # 23 core queries + the presence query + topology + lookback; the 17 queries of the
    # API server and the opt-in metrics and the 9 of the controller's CPU are not sent (49
    # with them)
    assert counts["small"] == 26
    assert len(Profile().queries(WINDOW_S)) == 49


def test_selector_with_quote_and_backslash_selects_only_that_queue(
    backfilled_prometheus: PrometheusProcess,
) -> None:
    profile = Profile(selector=(Matcher("name", "=", WEIRD),))
    snap = _source(backfilled_prometheus.url, profile).snapshot(AT, WINDOW_S)
    assert [q.queue for q in snap.queues] == [WEIRD]
    assert snap.queues[0].arrival_rate_per_s == pytest.approx(1.0)


def test_range_queue_filter_escapes_regex_metacharacters(
    backfilled_prometheus: PrometheusProcess,
) -> None:
    src = _source(backfilled_prometheus.url)
    data = src.range(START + 600, START + 1800, 60, queues=["node.lease", WEIRD])
    assert set(data.frame["queue"]) == {"node.lease", WEIRD}
    arr = data.frame[(data.frame.queue == "node.lease")
                     & (data.frame.signal == "arrival_rate_per_s")]
    assert arr["value"].to_numpy() == pytest.approx(3.0)  # not 3 + 7 from nodeXlease


def test_range_shape_and_values(backfilled_prometheus: PrometheusProcess) -> None:
    src = _source(backfilled_prometheus.url)
    data = src.range(START + 600, START + 2400, 60)
    f = data.frame
    assert list(f.columns) == ["queue", "signal", "t", "value"]
    assert data.step_s == 60
    assert data.start == START + 600
    assert data.end == START + 2400
    assert not f["value"].isna().any()
    dep = f[(f.queue == "deployment")]
    arr = dep[dep.signal == "arrival_rate_per_s"]
    assert len(arr) == 31  # (2400 - 600) / 60 + 1 aligned points
    assert arr["t"].tolist() == [START + 600 + 60 * i for i in range(31)]
    assert arr["value"].to_numpy() == pytest.approx(5.0)
    for signal, value in (("utilization", 0.25), ("service_mean_s", 0.2),
                          ("queue_wait_p95_s", TRUTH["deployment"]["queue_wait_p95_s"]),
                          ("reconcile_results_per_s.requeue_after", 0.75),
                          ("api_calls_by_class_per_s.429", 1.0)):
        assert dep[dep.signal == signal]["value"].to_numpy() == pytest.approx(value), signal
    weird = f[(f.queue == WEIRD) & (f.signal == "utilization")]
    assert weird["value"].to_numpy() == pytest.approx(0.05 / WEIRD_WORKERS_FROM_CONFIG)


def test_range_drops_points_inside_the_scrape_gap(backfilled_prometheus: PrometheusProcess
                                                  ) -> None:
    data = _source(backfilled_prometheus.url).range(START + 5100, START + 6000, 15)
    ep = data.frame[(data.frame.queue == "endpoints") & (data.frame.signal == "arrival_rate_per_s")]
    assert len(ep) > 0
    # every rate point that survives is the true rate: no under-reported edge of the gap
    assert ep["value"].to_numpy() == pytest.approx(2.0, rel=1e-6)
    assert ep["t"].between(START + 5400, START + 5700, inclusive="neither").sum() == 0


def test_range_step_is_capped_at_11000_points(backfilled_prometheus: PrometheusProcess) -> None:
    src = _source(backfilled_prometheus.url)
    data = src.range(START, START + 3 * 86400, 1, queues=["deployment"])
    assert (data.end - data.start) / data.step_s + 1 <= 11000
    assert data.start % data.step_s == 0
    assert data.end % data.step_s == 0
    assert any("step widened" in w for w in data.warnings)


def test_external_effects_from_config(backfilled_prometheus: PrometheusProcess) -> None:
    cfg = parse_config(
        "profile:\n"
        "  external_effects:\n"
        "    - queues: [deployment]\n"
        "      query: 'sum(rate(rest_client_requests_total{code=\"409\"}[$window]))'\n"
        "    - queue_regex: 'node.*'\n"
        "      query: 'sum by (name) (rate(workqueue_retries_total[$window]) + 0.25)'\n"
    )
    snap = _source(backfilled_prometheus.url, cfg.profile).snapshot(AT, WINDOW_S)
    assert _q(snap, "deployment").external_effects_per_s == pytest.approx(0.5)
    assert _q(snap, "node.lease").external_effects_per_s == pytest.approx(0.25)
    assert _q(snap, "replicaset").external_effects_per_s is None
    assert "external" in _q(snap, "replicaset").missing["external_effects_per_s"]


def test_bad_promql_in_config_is_bad_query_and_never_retried(
    backfilled_prometheus: PrometheusProcess,
) -> None:
    cfg = parse_config(
        "profile:\n  external_effects:\n    - queues: [a]\n      query: 'sum(rate(x[$window]'\n")
    client = PrometheusClient(ConnectionSettings(url=backfilled_prometheus.url, retries=3))
    src = PrometheusSource(client, replace(cfg.profile))
    with pytest.raises(BadQuery) as info:
        src.snapshot(AT, WINDOW_S)
    message = str(info.value)
    assert "bad_data" in message
    assert "parse error" in message
    assert "b'" not in message
    assert backfilled_prometheus.url in message
    single = PrometheusClient(ConnectionSettings(url=backfilled_prometheus.url, retries=3))
    with pytest.raises(BadQuery):
        single.query("sum(rate(x[5m]", AT)
    assert single.request_count == 1


def test_bad_metric_name_override_is_a_config_error() -> None:
    from collectors.errors import ConfigError

    with pytest.raises(ConfigError, match=r"metrics\.adds"):
        parse_config("profile:\n  metrics:\n    adds: 'x{y}'\n")


def test_component_base_profile_reads_no_controller_runtime_metrics(
    backfilled_prometheus: PrometheusProcess,
) -> None:
    client = PrometheusClient(ConnectionSettings(url=backfilled_prometheus.url))
    profile = replace(component_base_profile(), workers={"deployment": 4})
    snap = PrometheusSource(client, profile).snapshot(AT, WINDOW_S)
    dep = _q(snap, "deployment")
    assert dep.workers == 4  # from config, the gauge is not read
    assert dep.errors_per_s is None
    assert "component-base" in dep.missing["errors_per_s"]
    assert dep.arrival_rate_per_s == pytest.approx(5.0)


def test_no_value_is_nan_or_inf(snap_at: Snapshot) -> None:
    for q in snap_at.queues:
        for name, value in vars(q).items():
            if isinstance(value, float):
                assert math.isfinite(value), (q.queue, name)
            if value is None:
                assert name in q.missing, (q.queue, name)


def test_a_selector_on_the_queue_name_keeps_workers_errors_api_and_the_gap_check(
    backfilled_prometheus: PrometheusProcess,
) -> None:
    """``--selector '{name="endpoints"}'``: controller_runtime_* series have no ``name`` and
    rest_client_* no queue label at all, so the selector reaches them by their own labels; the
    worker count, errors, results and API calls stay, and the scrape gap is still caught."""
    url = backfilled_prometheus.url
    full = _q(_source(url).snapshot(AT, WINDOW_S), "endpoints")
    src = _source(url, Profile(selector=(Matcher("name", "=", "endpoints"),)))
    snap = src.snapshot(AT, WINDOW_S)
    assert [q.queue for q in snap.queues] == ["endpoints"]
    one = snap.queues[0]
    for name in ("arrival_rate_per_s", "workers", "utilization", "errors_per_s",
                 "api_calls_per_s", "depth_while_idle"):
        assert getattr(one, name) is not None, (name, one.missing.get(name))
        assert getattr(one, name) == pytest.approx(getattr(full, name)), name
    assert one.reconcile_results_per_s == pytest.approx(full.reconcile_results_per_s)
    gap = src.snapshot(AT_GAP, WINDOW_S).queues[0]
    assert gap.arrival_rate_per_s is None
    assert "scrape gap" in gap.missing["arrival_rate_per_s"]
    assert gap.workers == pytest.approx(full.workers)
    data = src.range(START + 5000, START + 6200, 60)
    workers = data.matrix("workers")[data.index("endpoints")]
    arrivals = data.matrix("arrival_rate_per_s")[data.index("endpoints")]
    assert math.isfinite(workers[0])
    assert not all(math.isfinite(v) for v in arrivals)  # the points inside the gap are dropped
