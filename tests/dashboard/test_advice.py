"""dashboard.advice: RangeData → QueueHistory, and the fleet advisor over the demo and a REAL
backfilled Prometheus (the scenario's ground truth is in tests/support/workqueue_om.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from collectors.config import ConnectionSettings
from collectors.demo import DemoSource
from collectors.errors import ConfigError
from collectors.prom_client import PrometheusClient
from collectors.snapshot import PrometheusSource
from dashboard.advice import advise_fleet, history_from_range
from dashboard.cliutil import dump_json
from models import fleet as fl
from models.measurements import RangeData, Snapshot
from models.settings import AnalysisSettings
from tests.support.prometheus import PrometheusProcess
from tests.support.workqueue_om import AT, JOB_A, TRUTH, WEIRD, main_scenario

AT_DEMO = fl.EPOCH_S + 40 * 86400 + 14 * 3600


class CountingSource:
    """A source that counts how often it is read (wraps the real demo source)."""

    def __init__(self, inner: DemoSource) -> None:
        self.inner = inner
        self.calls: list[tuple[str, Any]] = []

    @property
    def name(self) -> str:
        return self.inner.name

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        self.calls.append(("snapshot", window_s))
        return self.inner.snapshot(at, window_s)

    def range(self, start: float, end: float, step_s: float,
              queues: Sequence[str] | None = None, signals: object = None) -> RangeData:
        self.calls.append(("range", None if queues is None else tuple(queues)))
        return self.inner.range(start, end, step_s, queues)


def test_history_from_range_aligns_and_renames_signals() -> None:
    src = DemoSource()
    rng = src.range(AT_DEMO - 3600, AT_DEMO, 60.0)
    frame = rng.frame
    hist = history_from_range(rng, "certificate")
    mine = frame[frame["queue"] == "certificate"]
    assert np.array_equal(hist.t_s, np.unique(mine["t"]))
    for field, signal in (("arrival_rate_per_s", "arrival_rate_per_s"),
                          ("depth", "depth_mean"),
                          ("api_429_per_s", "api_calls_by_class_per_s.429"),
                          ("api_409_per_s", "api_calls_by_class_per_s.409")):
        want = mine[mine["signal"] == signal].sort_values("t")["value"].to_numpy()
        assert np.allclose(getattr(hist, field), want), field
    # A series the source does not have is all-NaN in the history (never a made-up 0).
    secret = history_from_range(rng, "secret")  # its process has no client-side limiter
    assert np.all(np.isnan(secret.throttle_s_per_s))
    assert history_from_range(rng, "no-such-queue").points == 0


@pytest.mark.parametrize("queues", [None, 40])
def test_fleet_reads_the_source_twice_whatever_the_queue_count(queues: int | None) -> None:
    src = CountingSource(DemoSource(queues=queues))
    advice = advise_fleet(src, AT_DEMO, AnalysisSettings())
    assert [c[0] for c in src.calls] == ["snapshot", "range"]
    assert len(advice.queues) == len(src.inner.queue_names)
    for qa in advice.queues:
        assert qa.verdicts


def test_fleet_expected_verdicts_and_json_shape() -> None:
    src = CountingSource(DemoSource())
    advice = advise_fleet(src, AT_DEMO, AnalysisSettings())
    by_queue = {qa.queue: [v.kind for v in qa.verdicts] for qa in advice.queues}
    for qa in advice.queues:
        expected = src.inner.params(qa.queue).advisor_expectation
        assert expected in by_queue[qa.queue], qa.queue
    assert by_queue["deployment"] == ["healthy"]
    payload = advice.payload()
    assert set(payload) == {"at", "window_s", "range_s", "source", "slo_wait_s", "settings",
                            "queues", "warnings"}
    assert payload["settings"]["step_s"] == 60.0
    assert payload["settings"]["described"] == (
        "last 2 h (a point every 60 s), rates over 5 min, p95 wait ≤ 1 s")
    first = payload["queues"][0]
    assert set(first) == {"queue", "plan", "verdicts"}
    assert first["plan"]["headline"] == first["verdicts"][0]["headline"]
    assert set(first["verdicts"][0]) == {"kind", "severity", "headline", "summary",
                                         "confidence", "evidence", "recommendation"}
    import io

    buf = io.StringIO()
    dump_json(payload, buf)  # allow_nan=False: raises if a NaN slipped through
    json.loads(buf.getvalue())


@pytest.mark.parametrize("hour", range(0, 24, 3))
def test_every_regime_keeps_its_verdict_through_the_day(hour: int) -> None:
    src = DemoSource()
    at = fl.EPOCH_S + 10 * 86400 + hour * 3600 + 17 * 60
    for qa in advise_fleet(src, at, AnalysisSettings()).queues:
        ks = [v.kind for v in qa.verdicts]
        expected = src.params(qa.queue).advisor_expectation
        assert expected in ks, (qa.queue, ks)
        if expected == "healthy":
            assert ks == ["healthy"]
        if expected in ("contention", "retry_storm", "hot_key"):
            assert "add_workers" not in ks, (qa.queue, ks)
        if expected in ("add_workers", "retry_storm"):
            # Their decade-bucket p99 can read 10x the median; the exact mean says otherwise.
            assert "long_passes" not in ks, (qa.queue, ks)


def test_one_queue_reads_only_that_queue() -> None:
    src = CountingSource(DemoSource())
    advice = advise_fleet(src, AT_DEMO, AnalysisSettings(range_s=3600.0), queue="ingress")
    assert [qa.queue for qa in advice.queues] == ["ingress"]
    assert src.calls[1] == ("range", ("ingress",))
    with pytest.raises(ConfigError, match="No queue named 'nope'"):
        advise_fleet(src, AT_DEMO, AnalysisSettings(range_s=3600.0), queue="nope")


def test_without_range_there_is_no_range_read() -> None:
    src = CountingSource(DemoSource(scenario="saturated"))
    advice = advise_fleet(src, AT_DEMO, AnalysisSettings(), history=False)
    assert [c[0] for c in src.calls] == ["snapshot"]
    assert advice.queues[0].verdicts[0].kind in ("add_workers", "backlog_growing")


# --- a REAL Prometheus ----------------------------------------------------------------------


@pytest.mark.prometheus
def test_advisor_on_backfilled_prometheus(backfilled_prometheus: PrometheusProcess) -> None:
    source = PrometheusSource(PrometheusClient(
        ConnectionSettings(url=backfilled_prometheus.url, timeout_s=10)))
    advice = advise_fleet(source, AT, AnalysisSettings(range_s=1800.0))
    by = {qa.queue: qa for qa in advice.queues}

    rs = {v.kind: v for v in by["replicaset"].verdicts}
    # adds 20/s against 8 workers × 1/0.5 s = 16/s: the backlog grows 4 keys/s (fluid model).
    assert "backlog_growing" in rs
    growth = rs["backlog_growing"].evidence["growth_per_s"]
    t = TRUTH["replicaset"]
    assert t["arrival_rate_per_s"] is not None
    assert t["workers"] is not None
    assert t["service_mean_s"] is not None
    assert growth == pytest.approx(t["arrival_rate_per_s"] - t["workers"] / t["service_mean_s"])
    # Two workers never finish: unfinished work grows 2 s/s and the longest pass keeps ageing.
    assert "stuck_workers" in rs
    assert by["replicaset"].verdicts[0].severity == "critical"
    # Job A gets 1.0 of its 13.7 calls/s answered 429: contention, shared by its 5 queues.
    assert "contention" in rs
    ev = rs["contention"].evidence
    assert ev["share_429"] == pytest.approx(1.0 / 13.7, rel=1e-3)
    job_a_x = sum(TRUTH[q]["throughput_per_s"] or 0 for q in ("deployment", "replicaset",
                                                              "endpoints"))
    job_a_x += 3.0 + 7.0  # node.lease, nodeXlease
    assert by["replicaset"].labels.get("job") == JOB_A
    assert ev["api_calls_per_reconcile"] == pytest.approx(13.7 / job_a_x, rel=1e-3)
    assert "add_workers" not in rs
    # node.lease shares job A's throttled API budget but is 1.5 % busy (3/s × 5 ms on one
    # worker): the process-wide 429s are not a reason to judge its worker count.
    lease = next(q for q in main_scenario()[0] if q.name == "node.lease")
    assert lease.workers is not None
    assert lease.done * lease.work_mean / lease.workers < 0.1
    assert "contention" not in [v.kind for v in by["node.lease"].verdicts]

    # The component-base queue has no worker count: said plainly, with the collector's reason.
    weird = by[WEIRD].verdicts
    ins = next(v for v in weird if v.kind == "insufficient_data")
    assert "workers" in ins.evidence["missing"]
    assert "workers" in ins.summary
    assert "healthy" not in [v.kind for v in weird]
