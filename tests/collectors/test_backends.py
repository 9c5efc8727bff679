"""Snapshot, range and ``queuelens advise`` over BOTH real backends: Prometheus (promtool
backfill) and single-node VictoriaMetrics (``/api/v1/import/prometheus``), loaded with the same
ground-truth fixture (:func:`tests.support.workqueue_om.main_text`).

VictoriaMetrics is queried under its ``/prometheus`` path prefix, set through the
``QUEUELENS_PROMETHEUS_PATH_PREFIX`` setting, so the path prefix is exercised for real.

Tolerances (measured differences in docs/collectors.md, "VictoriaMetrics"):

* rates: ``REL_RATE`` (1e-6). MetricsQL's ``rate()`` does not extrapolate to the window edges;
  it divides the increase since the last sample before the window by the time between them.
  On the fixture's linear counters and inside steady data both formulations are exact, so they
  agree to float rounding; at the edge of the data they do not (see the docs).
* ``*_over_time`` over a window (depth_mean, depth_min): VictoriaMetrics' window is left-open
  ``(t-w, t]``, Prometheus 2.x's is closed ``[t-w, t]``, so VictoriaMetrics holds one sample
  fewer and a mean of a gauge growing ``g``/s is ``g`` × half a scrape interval higher:
  ``DEPTH_ABS`` = 4/s × 7.5 s = 30 for replicaset, 0 for the constant depths.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from collectors.config import connection_settings
from collectors.profile import Profile
from collectors.prom_client import PrometheusClient
from collectors.snapshot import PrometheusSource
from dashboard.cli import main
from models.measurements import Snapshot
from models.signals import RATE_FIELDS
from tests.support.prometheus import PrometheusProcess
from tests.support.victoria import VictoriaProcess, start_victoria
from tests.support.workqueue_om import (
    AT,
    AT_AFTER_GAP,
    AT_RESET,
    START,
    TRUTH,
    WEIRD,
    WEIRD_WORKERS_FROM_CONFIG,
    WINDOW_S,
    main_text,
)

pytestmark = pytest.mark.prometheus

REL_RATE = 1e-6
DEPTH_GROWTH = 4.0  # replicaset's depth grows 4/s (tests/support/workqueue_om.py)
SCRAPE_S = 15.0
DEPTH_ABS = DEPTH_GROWTH * SCRAPE_S / 2 + 1e-9
WINDOWED = ("depth_mean", "littles_law_ratio")  # left-open vs closed window (module docstring)
BACKENDS = ("prometheus", "victoria")
DOCS = Path(__file__).resolve().parents[2] / "docs" / "collectors.md"


@pytest.fixture(scope="module")
def victoria(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VictoriaProcess]:
    server = start_victoria(tmp_path_factory.mktemp("vm-main"))
    try:
        server.load_openmetrics(main_text())
        yield server
    finally:
        server.stop()


def _env(backend: str, prom: PrometheusProcess, vm: VictoriaProcess) -> dict[str, str]:
    if backend == "prometheus":
        return {"QUEUELENS_PROMETHEUS_URL": prom.url}
    return {"QUEUELENS_PROMETHEUS_URL": vm.url,
            "QUEUELENS_PROMETHEUS_PATH_PREFIX": VictoriaProcess.PATH_PREFIX}


@pytest.fixture(scope="module")
def sources(backfilled_prometheus: PrometheusProcess, victoria: VictoriaProcess
            ) -> dict[str, PrometheusSource]:
    out = {}
    for backend in BACKENDS:
        settings = connection_settings(env=_env(backend, backfilled_prometheus, victoria))
        assert settings is not None
        out[backend] = PrometheusSource(PrometheusClient(settings),
                                        Profile(workers={WEIRD: WEIRD_WORKERS_FROM_CONFIG}))
    return out


def test_the_path_prefix_setting_builds_the_victoria_metrics_url(
        backfilled_prometheus: PrometheusProcess, victoria: VictoriaProcess) -> None:
    settings = connection_settings(env=_env("victoria", backfilled_prometheus, victoria))
    assert settings is not None
    assert settings.url == victoria.url + "/prometheus" == victoria.prometheus_url


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("queue", sorted(TRUTH))
def test_snapshot_recovers_ground_truth(sources: dict[str, PrometheusSource], backend: str,
                                        queue: str) -> None:
    snap = _snapshot(sources, backend, AT)
    q = next(q for q in snap.queues if q.queue == queue)
    for fieldname, expected in TRUTH[queue].items():
        got = getattr(q, fieldname)
        assert got == pytest.approx(expected, rel=REL_RATE, abs=1e-9), (backend, fieldname)


_SNAPS: dict[tuple[str, float], Snapshot] = {}


def _snapshot(sources: dict[str, PrometheusSource], backend: str, at: float) -> Snapshot:
    key = (backend, at)
    if key not in _SNAPS:
        _SNAPS[key] = sources[backend].snapshot(at, WINDOW_S)
    return _SNAPS[key]


@pytest.mark.parametrize("at", [AT, AT_RESET, AT_AFTER_GAP], ids=["steady", "reset", "after_gap"])
def test_victoria_snapshot_equals_prometheus(sources: dict[str, PrometheusSource],
                                             at: float) -> None:
    prom, vm = _snapshot(sources, "prometheus", at), _snapshot(sources, "victoria", at)
    assert sorted(q.queue for q in vm.queues) == sorted(q.queue for q in prom.queues)
    by = {q.queue: q for q in vm.queues}
    for p in prom.queues:
        v = by[p.queue]
        for name in (*RATE_FIELDS, "workers", "depth_current", "unfinished_work_s",
                     "longest_running_s", "api_calls_per_s", "throttle_s_per_s"):
            want, got = getattr(p, name), getattr(v, name)
            if want is None:
                assert got is None, (p.queue, name, got)
            elif name in WINDOWED:
                rel = DEPTH_ABS / max(p.depth_mean or 1.0, 1.0)
                assert got == pytest.approx(want, rel=rel, abs=DEPTH_ABS), (p.queue, name)
            else:
                assert got == pytest.approx(want, rel=REL_RATE, abs=1e-9), (p.queue, name)
        assert v.api_calls_by_class_per_s == pytest.approx(p.api_calls_by_class_per_s,
                                                           rel=REL_RATE)
        assert v.reconcile_results_per_s == pytest.approx(p.reconcile_results_per_s,
                                                          rel=REL_RATE)
    assert sorted(vm.warnings) == sorted(prom.warnings)


def test_victoria_range_equals_prometheus_in_steady_data(
        sources: dict[str, PrometheusSource]) -> None:
    """Interior of the data (every window full, before the reset): rates agree to REL_RATE,
    the windowed means within DEPTH_ABS (the left-open window)."""
    start, end, step = START + 600, AT, 60
    prom = sources["prometheus"].range(start, end, step)
    vm = sources["victoria"].range(start, end, step)
    assert np.array_equal(prom.t, vm.t)
    assert set(prom.signal_names) == set(vm.signal_names)
    assert sorted(prom.warnings) == sorted(vm.warnings)
    for name in prom.signal_names:
        for queue in prom.queues:
            i, j = prom.index(queue), vm.index(queue)
            assert i is not None
            assert j is not None
            a, b = prom.matrix(name)[i], vm.matrix(name)[j]
            assert np.array_equal(np.isnan(a), np.isnan(b)), (queue, name)
            ok = ~np.isnan(a)
            if name == "depth_mean":
                np.testing.assert_allclose(b[ok], a[ok], rtol=0, atol=DEPTH_ABS,
                                           err_msg=f"{queue} {name}")
            elif name == "littles_law_ratio":
                np.testing.assert_allclose(b[ok], a[ok], rtol=0.05, err_msg=f"{queue} {name}")
            else:
                np.testing.assert_allclose(b[ok], a[ok], rtol=REL_RATE, atol=1e-9,
                                           err_msg=f"{queue} {name}")


def test_a_window_with_no_sample_is_a_gap_on_both_backends(
        sources: dict[str, PrometheusSource]) -> None:
    """Deep inside the endpoints queue's scrape gap a 135 s window holds no sample:
    VictoriaMetrics answers its rate() with 0 where Prometheus answers nothing, and neither
    has a sample count there. Both must show a hole, not a measured 0 (a stalled queue)."""
    from tests.support.workqueue_om import GAP

    start, end, step = START + GAP[0] - 600, START + GAP[1] + 600, 120
    inside = START + GAP[0] + 120  # the window [t − 135 s, t] lies in the gap
    for backend in BACKENDS:
        rng = sources[backend].range(start, end, step)
        i = rng.index("endpoints")
        assert i is not None
        col = int(np.flatnonzero(rng.t == inside)[0])
        for name in ("throughput_per_s", "arrival_rate_per_s", "busy_workers"):
            assert np.isnan(rng.matrix(name)[i, col]), (backend, name)
        before = int(np.flatnonzero(rng.t == start)[0])
        assert np.isfinite(rng.matrix("throughput_per_s")[i, before]), backend


@pytest.mark.parametrize("backend", BACKENDS)
def test_range_point_recovers_ground_truth_rates(sources: dict[str, PrometheusSource],
                                                 backend: str) -> None:
    step = WINDOW_S - SCRAPE_S  # window = step + scrape interval = the snapshot window
    point = math.floor(AT / step) * step
    rng = sources[backend].range(point - 2 * step, point, step)
    col = int(np.flatnonzero(rng.t == point)[0])
    for queue, truth in TRUTH.items():
        i = rng.index(queue)
        assert i is not None
        for name in RATE_FIELDS:
            if name in truth and truth[name] is not None and name not in WINDOWED:
                got = float(rng.matrix(name)[i, col])
                assert got == pytest.approx(truth[name], rel=REL_RATE, abs=1e-9), (queue, name)


def _advise(backend: str, prom: PrometheusProcess, vm: VictoriaProcess,
            monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    for key, value in _env(backend, prom, vm).items():
        monkeypatch.setenv(key, value)
    code = main(["advise", "--at", str(AT), "--range", "30m", "--format", "json"])
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == 0
    return out


def test_advise_gives_the_same_verdicts_on_both_backends(
        backfilled_prometheus: PrometheusProcess, victoria: VictoriaProcess,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    outs = {b: _advise(b, backfilled_prometheus, victoria, monkeypatch, capsys)
            for b in BACKENDS}
    kinds = {b: {q["queue"]: sorted(v["kind"] for v in q["verdicts"]) for q in o["queues"]}
             for b, o in outs.items()}
    assert kinds["victoria"] == kinds["prometheus"]
    assert {"backlog_growing", "stuck_workers"} <= set(kinds["victoria"]["replicaset"])
    assert "insufficient_data" in kinds["victoria"][WEIRD]
    assert outs["victoria"]["source"] == victoria.prometheus_url


def test_docs_name_the_metricsql_differences() -> None:
    text = DOCS.read_text()
    section = text.split("#### VictoriaMetrics", 1)[1].split("\n### ", 1)[0]
    for needle in ("/prometheus", "left-open", "extrapolat", "count_over_time",
                   "vmalert", "tests/collectors/test_backends.py"):
        assert needle in section, needle
