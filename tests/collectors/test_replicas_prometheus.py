"""An HA pair behind one query endpoint (issue 23 §3), on a REAL Prometheus.

The main scenario (:mod:`tests.support.workqueue_om`) backfilled twice, once per replica
(``replica="a"``/``"b"``, :func:`tests.support.replicas_om.replicated`): every series of the
single-replica fixture, twice. Without deduplication every surface says so (the snapshot's
warnings, which the CLI prints on stderr, the banner and the reports show) and the doctor
finds it; with ``profile.replica_label: replica`` the numbers are the single-replica
fixture's."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from collectors.config import ConnectionSettings, parse_config
from collectors.doctor import read_prometheus
from collectors.profile import Profile
from collectors.prom_client import PrometheusClient
from collectors.snapshot import PrometheusSource
from models.contract import diagnose
from models.measurements import QueueSnapshot, Snapshot
from tests.support.cli import run_cli
from tests.support.fixtures import start_backfilled
from tests.support.prometheus import PrometheusProcess
from tests.support.replicas_om import replicated
from tests.support.workqueue_om import (
    AT,
    TRUTH,
    WEIRD,
    WEIRD_WORKERS_FROM_CONFIG,
    WINDOW_S,
    main_text,
)

pytestmark = pytest.mark.prometheus

DEDUPE = Profile(workers={WEIRD: WEIRD_WORKERS_FROM_CONFIG}, replica_label="replica")
PLAIN = dataclasses.replace(DEDUPE, replica_label=None)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    server = start_backfilled(tmp_path_factory, "prom-ha", replicated(main_text()))
    try:
        yield server
    finally:
        server.stop()


class _Spy(PrometheusClient):
    def __init__(self, url: str) -> None:
        super().__init__(ConnectionSettings(url=url, timeout_s=10))
        self.sent: list[str] = []

    def query(self, promql: str, *args: Any, **kwargs: Any) -> Any:
        self.sent.append(promql)
        return super().query(promql, *args, **kwargs)


def _snap(url: str, profile: Profile) -> Snapshot:
    return PrometheusSource(_Spy(url), profile).snapshot(AT, WINDOW_S)


def _q(snap: Snapshot, name: str) -> QueueSnapshot:
    return next(q for q in snap.queues if q.queue == name)


def _replica_notes(snap: Snapshot) -> list[str]:
    return [w for w in snap.warnings if "told apart by" in w]


def test_an_unflagged_pair_is_said_on_the_snapshot(pair: PrometheusProcess) -> None:
    snap = _snap(pair.url, PLAIN)
    notes = _replica_notes(snap)
    assert len(notes) == 1, snap.warnings
    assert "replica='a'" in notes[0]
    assert "replica='b'" in notes[0]
    assert "profile.replica_label: replica" in notes[0]
    # the numbers are still the doubled ones: the warning is what tells
    rs = _q(snap, "replicaset")
    assert rs.arrival_rate_per_s == pytest.approx(2 * 20.0)
    assert rs.utilization == pytest.approx(2.0)
    over = [w for w in snap.warnings if "replicaset" in w and "utilization" in w]
    assert over, snap.warnings


def test_with_dedupe_the_numbers_are_the_single_replica_fixtures(
        pair: PrometheusProcess, backfilled_prometheus: PrometheusProcess) -> None:
    snap = _snap(pair.url, DEDUPE)
    single = _snap(backfilled_prometheus.url, PLAIN)
    assert _replica_notes(snap) == []
    assert sorted(q.queue for q in snap.queues) == sorted(q.queue for q in single.queues)
    for queue, truth in TRUTH.items():
        q = _q(snap, queue)
        for name, expected in truth.items():
            assert getattr(q, name) == pytest.approx(expected, rel=1e-6, abs=1e-9), (queue, name)
    for one in single.queues:
        q = _q(snap, one.queue)
        for f in dataclasses.fields(QueueSnapshot):
            a, b = getattr(q, f.name), getattr(one, f.name)
            if isinstance(b, float) and math.isfinite(b):
                assert a == pytest.approx(b, rel=1e-9, abs=1e-12), (one.queue, f.name)
            elif f.name not in ("labels",):
                assert a == b, (one.queue, f.name)
    assert not [w for w in snap.warnings if "utilization" in w]


def test_detection_is_one_query_and_dedupe_reaches_every_series(pair: PrometheusProcess) -> None:
    client = _Spy(pair.url)
    PrometheusSource(client, DEDUPE).snapshot(AT, WINDOW_S)
    probes = [p for p in client.sent if "prometheus_replica" in p]
    assert len(probes) == 1, probes
    signals = [p for p in client.sent if p not in probes and "rate(" in p]
    assert signals
    assert all("max without (replica)" in p for p in signals)


def test_the_doctor_finds_the_pair(pair: PrometheusProcess) -> None:
    client = PrometheusClient(ConnectionSettings(url=pair.url, timeout_s=10))
    report = diagnose(read_prometheus(client, PLAIN, AT, 3600.0))
    found = [s for s in report.signals if s.signal == "replica_copies"]
    assert [s.status for s in found] == ["malformed"], report.signals
    assert "replica='a'" in found[0].detail
    assert "replica_label" in (found[0].fix or "")
    assert "But the adds counters of" in report.summary
    fixed = diagnose(read_prometheus(client, DEDUPE, AT, 3600.0))
    ok = [s for s in fixed.signals if s.signal == "replica_copies"]
    assert [s.status for s in ok] == ["ok"], ok


def test_the_single_replica_doctor_is_quiet(backfilled_prometheus: PrometheusProcess) -> None:
    client = PrometheusClient(ConnectionSettings(url=backfilled_prometheus.url, timeout_s=10))
    report = diagnose(read_prometheus(client, PLAIN, AT, 3600.0))
    found = [s for s in report.signals if s.signal == "replica_copies"]
    assert [s.status for s in found] == ["ok"], found


def test_the_cli_says_it_and_the_config_dedupes(pair: PrometheusProcess, tmp_path: Path) -> None:
    # the warnings are the table's footer ("warning: …") and the JSON's "warnings"
    res = run_cli("advise", "--prometheus", pair.url, "--at", str(AT))
    assert res.returncode == 0, res.stderr
    said = [line for line in res.stdout.splitlines() if line.startswith("warning: ")]
    assert any("replica='a'" in w and "profile.replica_label: replica" in w for w in said), said
    assert any("utilization above 100 %" in w and "replicaset" in w for w in said), said
    config = tmp_path / "ha.yaml"
    config.write_text("profile:\n  replica_label: replica\n")
    assert parse_config(config.read_text()).profile.replica_label == "replica"
    res = run_cli("snapshot", "--prometheus", pair.url, "--at", str(AT), "--format", "json",
                  "--config", str(config))
    assert res.returncode == 0, res.stderr
    payload = json.loads(res.stdout)
    assert not [w for w in payload["warnings"] if "told apart by" in w or "100 %" in w]
    rs = next(q for q in payload["queues"] if q["queue"] == "replicaset")
    assert rs["arrival_rate_per_s"] == pytest.approx(20.0)


def test_with_dedupe_the_range_read_is_the_single_replica_fixtures(
        pair: PrometheusProcess, backfilled_prometheus: PrometheusProcess) -> None:
    start, end = AT - 1800, AT
    deduped = PrometheusSource(_Spy(pair.url), DEDUPE).range(start, end, 60.0)
    single = PrometheusSource(_Spy(backfilled_prometheus.url), PLAIN).range(start, end, 60.0)
    assert deduped.queues == single.queues
    assert sorted(deduped.signals) == sorted(single.signals)
    for name, matrix in single.signals.items():
        np.testing.assert_allclose(deduped.signals[name], matrix, rtol=1e-9, atol=1e-12,
                                   equal_nan=True, err_msg=name)
    doubled = PrometheusSource(_Spy(pair.url), PLAIN).range(start, end, 60.0)
    i = doubled.queues.index("replicaset")
    assert np.nanmax(doubled.signals["arrival_rate_per_s"][i]) == pytest.approx(40.0)
