"""The seam: snapshot, range and demo all go through the one ``models.signals.derive``.

Checked on a REAL Prometheus backfilled with the ground-truth fixture (and on the demo): a
range point whose rate window equals the snapshot's window carries exactly the snapshot's
numbers, a range read split into batches of queue names equals the unbatched read, and the
per-process attribution gives every queue its process's total.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import collectors.snapshot as snapshot_mod
from collectors.config import ConnectionSettings
from collectors.demo import DemoSource
from collectors.prom_client import PrometheusClient
from collectors.snapshot import PrometheusSource
from models.measurements import QueueSnapshot, RangeData
from models.signals import RATE_FIELDS
from tests.support.prometheus import PrometheusProcess
from tests.support.workqueue_om import AT, WEIRD, WEIRD_WORKERS_FROM_CONFIG, WINDOW_S

STEP = WINDOW_S - 15  # rate_window_s(step, 15 s) = step + 15 s = the snapshot window
POINT = math.floor(AT / STEP) * STEP  # a grid point of the range read, inside steady data
COMPARED = (*RATE_FIELDS, "workers", "depth_current", "unfinished_work_s", "longest_running_s",
            "api_calls_per_s", "throttle_s_per_s")


def _source(url: str) -> PrometheusSource:
    from collectors.profile import Profile

    return PrometheusSource(PrometheusClient(ConnectionSettings(url=url, timeout_s=10)),
                            Profile(workers={WEIRD: WEIRD_WORKERS_FROM_CONFIG}))


def _assert_point_equals_snapshot(rng: RangeData, queues: list[QueueSnapshot],
                                   point: float) -> int:
    col = int(np.flatnonzero(rng.t == point)[0])
    checked = 0
    for q in queues:
        for name in COMPARED:
            want = getattr(q, name)
            i = rng.index(q.queue)
            assert i is not None, q.queue
            got = float(rng.matrix(name)[i, col])
            if want is None:
                assert math.isnan(got), (q.queue, name, got)
            else:
                assert got == pytest.approx(want, rel=1e-9, abs=1e-12), (q.queue, name)
                checked += 1
        classes = {k.split(".", 1)[1]: float(rng.matrix(k)[rng.index(q.queue) or 0, col])
                   for k in rng.signal_names if k.startswith("api_calls_by_class_per_s.")}
        for cls, want in q.api_calls_by_class_per_s.items():
            assert classes[cls] == pytest.approx(want, rel=1e-9), (q.queue, cls)
    return checked


@pytest.mark.prometheus
def test_range_point_equals_snapshot_on_real_prometheus(
    backfilled_prometheus: PrometheusProcess,
) -> None:
    src = _source(backfilled_prometheus.url)
    assert src.range_window_s(STEP) == WINDOW_S
    snap = src.snapshot(float(POINT), WINDOW_S)
    rng = src.range(POINT - 4 * STEP, POINT + 4 * STEP, STEP)
    assert rng.step_s == STEP
    # service time, utilization, quantiles, Little's ratio and API attribution all compared
    assert _assert_point_equals_snapshot(rng, list(snap.queues), POINT) > 100


@pytest.mark.prometheus
def test_batched_range_equals_one_read(backfilled_prometheus: PrometheusProcess,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    src = _source(backfilled_prometheus.url)
    whole = src.range(AT - 3600, AT, 60)
    monkeypatch.setattr(snapshot_mod, "RANGE_BATCH_QUEUES", 2)
    calls = src.client.query_count
    batched = src.range(AT - 3600, AT, 60)
    per_signal = len([sq for sq in src.profile.queries(60)
                      if sq.key in snapshot_mod._RANGE_KEYS
                      and sq.signal not in snapshot_mod.SNAPSHOT_ONLY])
    # 6 queues in 3 batches: the per-queue queries are sent once per batch
    assert src.client.query_count - calls > 2 * per_signal
    assert batched.queues == whole.queues
    assert set(batched.signals) == set(whole.signals)
    for name in whole.signals:
        np.testing.assert_array_equal(batched.matrix(name), whole.matrix(name), err_msg=name)


@pytest.mark.prometheus
def test_a_small_fleet_answer_is_read_unbatched(backfilled_prometheus: PrometheusProcess,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole-fleet read whose answers are small (few points: a refresh's new steps) sends
    each query once with no name filter, where the same fleet over an hour is batched; both
    give the batched read's matrices."""
    from dashboard.advice import HISTORY_SIGNALS

    src = _source(backfilled_prometheus.url)
    monkeypatch.setattr(snapshot_mod, "RANGE_BATCH_QUEUES", 2)
    sent: list[str] = []
    query_range = src.client.query_range

    def recording(promql: str, *args: float) -> object:
        sent.append(promql)
        return query_range(promql, *args)

    monkeypatch.setattr(src.client, "query_range", recording)
    short = src.range(AT - 180, AT, 60, signals=HISTORY_SIGNALS)
    assert sent
    assert not any("=~" in q for q in sent)  # no name filter
    assert len(sent) == len(set(sent))  # each query once: one batch
    unbatched = len(sent)
    sent.clear()
    monkeypatch.setattr(snapshot_mod, "BUCKETS_PER_HISTOGRAM", 0)  # no budget: batches of 2
    batched = src.range(AT - 180, AT, 60, signals=HISTORY_SIGNALS)
    assert len(sent) > unbatched
    assert all("=~" in q for q in sent)
    assert batched.queues == short.queues
    for name in short.signals:
        np.testing.assert_array_equal(short.matrix(name), batched.matrix(name), err_msg=name)


def test_demo_range_point_equals_demo_snapshot() -> None:
    demo = DemoSource(seed=0)
    at = 1_704_067_200.0 + 14 * 3600
    point = math.floor(at / STEP) * STEP
    snap = demo.snapshot(float(point), WINDOW_S)
    rng = demo.range(float(point - 2 * STEP), float(point), STEP)
    assert _assert_point_equals_snapshot(rng, list(snap.queues), point) > 100


@pytest.mark.prometheus
def test_range_of_some_signals_reads_only_their_queries(
    backfilled_prometheus: PrometheusProcess,
) -> None:
    from dashboard.advice import HISTORY_SIGNALS

    src = _source(backfilled_prometheus.url)
    before = src.client.query_count
    whole = src.range(AT - 3600, AT, 60)
    full_queries = src.client.query_count - before
    before = src.client.query_count
    some = src.range(AT - 3600, AT, 60, signals=HISTORY_SIGNALS)
    # the advisor's history needs neither histogram nor the slope of unfinished work: the two
    # bucket queries and the deriv() query are not sent, and the fleet's presence answer at
    # that instant is the first read's (PrometheusSource._fleet_presence)
    assert src.client.query_count - before == full_queries - 4
    assert set(some.signals) <= HISTORY_SIGNALS
    assert {"arrival_rate_per_s", "service_mean_s", "api_calls_by_class_per_s.429",
            "depth_mean"} <= set(some.signals)
    for name in some.signals:
        np.testing.assert_array_equal(some.matrix(name), whole.matrix(name), err_msg=name)


@pytest.mark.prometheus
def test_a_time_with_no_data_is_an_empty_read_not_an_error(
    backfilled_prometheus: PrometheusProcess,
) -> None:
    from tests.support.workqueue_om import START

    src = _source(backfilled_prometheus.url)
    before = START - 30 * 86_400  # a month before the backfilled data: every answer is empty
    assert list(src.snapshot(before, WINDOW_S).queues) == []
    rng = src.range(before - 3600, before, 60)
    assert rng.queues == ()
    assert rng.signals == {}
    assert len(rng.t) == 61


@pytest.mark.prometheus
def test_signals_restricted_read_with_external_effects_configured(
    backfilled_prometheus: PrometheusProcess,
) -> None:
    from collectors.config import parse_config
    from dashboard.advice import HISTORY_SIGNALS

    cfg = parse_config(
        "profile:\n"
        "  external_effects:\n"
        "    - queues: [deployment]\n"
        "      query: 'sum(rate(rest_client_requests_total{code=\"409\"}[$window]))'\n")
    src = PrometheusSource(
        PrometheusClient(ConnectionSettings(url=backfilled_prometheus.url, timeout_s=10)),
        cfg.profile)
    some = src.range(AT - 3600, AT, 60, signals=HISTORY_SIGNALS)  # the advisor's read
    assert "external_effects_per_s" not in some.signals
    every = src.range(AT - 3600, AT, 60)
    t, v = every.series("deployment", "external_effects_per_s")
    assert len(t) > 10
    assert v[-10:] == pytest.approx(0.5)  # the 409 rate of the deployment's process


@pytest.mark.prometheus
def test_a_one_queue_read_masks_its_scrape_gap_like_the_fleet_read(
    backfilled_prometheus: PrometheusProcess, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The expected samples of a window are the fleet's, whichever queues a read (or a batch
    of a read) holds: a queue alone is not compared with itself only."""
    from tests.support.workqueue_om import AT_GAP

    src = _source(backfilled_prometheus.url)
    fleet = src.range(AT_GAP - 600, AT_GAP + 600, 60)
    alone = src.range(AT_GAP - 600, AT_GAP + 600, 60, queues=["endpoints"])
    monkeypatch.setattr(snapshot_mod, "RANGE_BATCH_QUEUES", 1)
    batched = src.range(AT_GAP - 600, AT_GAP + 600, 60)
    want = fleet.matrix("arrival_rate_per_s")[fleet.index("endpoints") or 0]
    assert np.isnan(want).any()  # the gap is masked in the fleet read
    for rng in (alone, batched):
        got = rng.matrix("arrival_rate_per_s")[rng.index("endpoints") or 0]
        np.testing.assert_array_equal(got, want)


@pytest.mark.prometheus
def test_a_long_queue_list_is_not_put_in_the_topology_url(
    backfilled_prometheus: PrometheusProcess, monkeypatch: pytest.MonkeyPatch,
) -> None:
    src = _source(backfilled_prometheus.url)
    sent: list[str] = []
    query = src.client.query

    def recording(promql: str, at: float) -> object:
        sent.append(promql)
        return query(promql, at)

    monkeypatch.setattr(src.client, "query", recording)
    monkeypatch.setattr(snapshot_mod, "RANGE_BATCH_QUEUES", 2)
    names = ["deployment", "node.lease", "nodeXlease", "no-such-queue"]
    rng = src.range(AT - 600, AT, 60, queues=names)
    assert rng.queues == ("deployment", "node.lease", "nodeXlease")
    # the whole selector's topology and scrape intervals (and which recorded series of
    # `queuelens rules --recording` exist), filtered here
    assert len(sent) == 3
    assert not any("node" in promql for promql in sent)
    one = src.range(AT - 600, AT, 60, queues=["node.lease"])
    np.testing.assert_array_equal(one.matrix("api_calls_per_s")[0],
                                  rng.matrix("api_calls_per_s")[rng.index("node.lease") or 0])


@pytest.mark.prometheus
def test_a_batch_reads_only_its_processes(backfilled_prometheus: PrometheusProcess,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-process range queries go with their batch, kept to the batch's processes (a
    fleet-wide one answered 73 MiB at 10,000 processes): a one-queue read asks for that
    queue's process only, and its figures equal the whole read's."""
    src = _source(backfilled_prometheus.url)
    whole = src.range(AT - 3600, AT, 60)
    sent: list[str] = []
    real = src.client.query_range

    def spy(promql: str, *args: object, **kwargs: object) -> object:
        sent.append(promql)
        return real(promql, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(src.client, "query_range", spy)
    one = src.range(AT - 3600, AT, 60, queues=["deployment"])
    (api,) = [p for p in sent if "rest_client_requests_total" in p]
    assert 'instance=~"10\\\\.0\\\\.0\\\\.1:8080"' in api, api  # the queue's process alone
    i, j = one.index("deployment"), whole.index("deployment")
    assert i is not None
    assert j is not None
    for name in ("api_calls_per_s", "throttle_s_per_s"):
        np.testing.assert_array_equal(one.matrix(name)[i], whole.matrix(name)[j], err_msg=name)


@pytest.mark.prometheus
def test_the_batches_of_one_instant_ask_the_fleets_presence_once(
    backfilled_prometheus: PrometheusProcess, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The streaming cold start's batches read at one instant: the fleet-wide presence answer
    (it counts every series of the names it asks for: seconds at 10,000 queues) is asked by the
    first batch only; a read at another instant asks again."""
    src = _source(backfilled_prometheus.url)
    sent: list[str] = []
    query = src.client.query

    def recording(promql: str, at: float) -> object:
        sent.append(promql)
        return query(promql, at)

    monkeypatch.setattr(src.client, "query", recording)
    names = sorted(q.queue for q in src.snapshot(AT, WINDOW_S).queues)
    sent.clear()
    first = src.snapshot(AT, WINDOW_S, queues=names[:2])
    second = src.snapshot(AT, WINDOW_S, queues=names[2:])
    presence = [q for q in sent if q.startswith("count by (__name__")]
    assert presence == []  # the whole-fleet snapshot at AT asked it already
    assert {q.queue for q in first.queues} | {q.queue for q in second.queues} == set(names)
    src.snapshot(AT + 60, WINDOW_S, queues=names[:2])
    # the metrics' presence (the recorded series' is asked apart, in the background)
    assert len([q for q in sent if q.startswith("count by (__name__, ")]) == 1
