"""Recorded series stand in for the raw counters on VictoriaMetrics (issue 22 §3): the same
history as :mod:`tests.collectors.test_recorded_prometheus` imported into a single-node
``victoria-metrics``, the rules of ``queuelens rules --recording --range 1h`` evaluated by
``vmalert`` in replay mode over the whole history (``-replay.timeFrom/-replay.timeTo``, writing
back with ``-remoteWrite.url``; ``-datasource.queryStep=0s`` so each group is evaluated at its
own 30 s interval (the step), on the grid of its start — the default 5 min step would record
one point in ten). Reads through the recorded series must equal the raw reads (MetricsQL's own
``rate()`` on both sides)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from dashboard.advice import advise_fleet
from tests.collectors.test_recorded_prometheus import (
    AT,
    SETTINGS,
    SINE_QUEUES,
    _recorded_reads,
    _sources,
)
from tests.conftest import require_binary
from tests.support.equality import assert_close, assert_same_range
from tests.support.recorded import write_rules
from tests.support.scale_om import fleet_text
from tests.support.victoria import HINT, VictoriaProcess, start_victoria
from tests.support.workqueue_om import main_text

pytestmark = pytest.mark.prometheus


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VictoriaProcess]:
    work = tmp_path_factory.mktemp("vm-recorded")
    server = start_victoria(work / "vm")
    try:
        server.load_openmetrics(main_text())
        server.load_openmetrics(fleet_text(0, SINE_QUEUES))
        rules = write_rules(work / "rules.yaml", "--range", "1h")
        vmalert = require_binary("vmalert", HINT)
        done = subprocess.run(
            [vmalert, f"-rule={rules}", f"-datasource.url={server.url}",
             f"-remoteWrite.url={server.url}", "-remoteWrite.flushInterval=100ms",
             "-datasource.queryStep=0s", "-replay.timeFrom=2024-01-01T00:00:00Z",
             "-replay.timeTo=2024-01-01T02:00:00Z", "-replay.rulesDelay=0s",
             "-replay.disableProgressBar"],
            capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert "replay finished" in done.stdout + done.stderr
        server.force_flush()
        yield server
    finally:
        server.stop()


def test_vm_range_read_through_recorded_series_equals_the_raw_read(
        replayed: VictoriaProcess) -> None:
    recorded, raw, spy = _sources(replayed.prometheus_url)
    a, b = AT - SETTINGS.range_s, AT
    got = recorded.range(a, b, SETTINGS.step_s)
    assert _recorded_reads(spy.sent, "1m") >= 10, spy.sent
    want = raw.range(a, b, SETTINGS.step_s)
    assert len(want.queues) == 6 + SINE_QUEUES
    assert_same_range(got, want)


def test_vm_snapshot_and_advice_through_recorded_series_equal_the_raw_ones(
        replayed: VictoriaProcess) -> None:
    recorded, raw, spy = _sources(replayed.prometheus_url)
    got = recorded.snapshot(AT, SETTINGS.window_s)
    assert _recorded_reads(spy.sent, "5m") >= 10, spy.sent
    assert_close(got, raw.snapshot(AT, SETTINGS.window_s))
    got_advice = advise_fleet(recorded, AT, SETTINGS)
    want_advice = advise_fleet(raw, AT, SETTINGS)
    assert [(q.queue, [v.kind for v in q.verdicts]) for q in got_advice.queues] == \
        [(q.queue, [v.kind for v in q.verdicts]) for q in want_advice.queues]
    # VictoriaMetrics answers 12 significant digits: a recorded mean wait is a ratio of
    # rounded rates, the raw one a rounded ratio (the matrices agree to 1e-12), and the USL
    # fit of a queue without contention (sigma ~3e-5, kappa ~1e-8: differences of
    # near-equal slopes) moves its coefficients and peak by up to 1e-6 relative for it.
    # Verdicts, worker counts, rules and words are compared exactly.
    assert_close(got_advice.queues, want_advice.queues, abs_tol=1e-9, rel_tol=1e-6)
