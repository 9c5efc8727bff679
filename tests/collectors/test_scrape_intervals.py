"""Mixed scrape intervals on a REAL Prometheus: a queue scraped every 30 s beside queues scraped
every 15 s is not a scrape gap, and a real gap in the 30 s queue still is.

The data are simulated controllers (``models.simulate`` with ``scrape_interval_s``), written as
OpenMetrics and backfilled: ``fast`` at 15 s, ``slow`` at 30 s with its samples in
[GAP_FROM, GAP_TO) removed (a target that stopped answering)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from collectors.config import ConnectionSettings
from collectors.openmetrics import simulated_families, write_families
from collectors.profile import learnt_scrape_interval_s
from collectors.prom_client import PrometheusClient
from collectors.snapshot import PrometheusSource
from models.simulate import simulate
from tests.support.prometheus import PrometheusProcess, backfill_file, start_prometheus

START = 1704067200
DURATION_S = 7200.0
GAP_FROM, GAP_TO = START + 5400, START + 5700
IN_GAP = GAP_FROM + 240  # the 5 m window ending here holds 2 of its 10 samples
AFTER_GAP = GAP_TO + 900  # the window lies after the gap; the hour before still holds it


def _without_gap(text: str) -> str:
    keep = []
    for line in text.splitlines():
        m = re.match(r'^\S+\{[^}]*pod="slow"[^}]*\} \S+ (\d+)$', line)
        if m and GAP_FROM <= int(m.group(1)) < GAP_TO:
            continue
        keep.append(line)
    return "\n".join(keep) + "\n"


@pytest.fixture(scope="module")
def mixed_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    work = tmp_path_factory.mktemp("intervals")
    ctl = []
    for name, step in (("fast", 15.0), ("slow", 30.0)):
        r = simulate(arrival_rate_per_s=5.0, keys=100_000, workers=2, service_mean_s=0.1,
                     duration_s=DURATION_S, seed=3, scrape_interval_s=step)
        assert r.metrics is not None
        ctl.append((name, name, r.metrics))
    raw = work / "raw.om"
    with raw.open("w") as out:
        write_families(out, simulated_families(ctl, float(START)))
    om = work / "mixed.om"
    om.write_text(_without_gap(raw.read_text()))
    server = start_prometheus(work / "prom", tsdb=backfill_file(om, work))
    try:
        yield server
    finally:
        server.stop()


def _source(url: str) -> PrometheusSource:
    return PrometheusSource(PrometheusClient(ConnectionSettings(url=url, timeout_s=10)))


@pytest.mark.prometheus
def test_a_30s_queue_beside_15s_queues_is_not_a_gap(mixed_prometheus: PrometheusProcess) -> None:
    snap = _source(mixed_prometheus.url).snapshot(START + 3600, 300)
    by = {q.queue: q for q in snap.queues}
    for name in ("fast", "slow"):
        assert by[name].arrival_rate_per_s == pytest.approx(5.0, rel=0.25), by[name].missing
        assert "arrival_rate_per_s" not in by[name].missing
    assert not any("scrape gap" in w for w in snap.warnings)


@pytest.mark.prometheus
def test_a_gap_in_the_30s_queue_is_still_seen(mixed_prometheus: PrometheusProcess) -> None:
    src = _source(mixed_prometheus.url)
    snap = src.snapshot(IN_GAP, 300)
    by = {q.queue: q for q in snap.queues}
    assert by["slow"].arrival_rate_per_s is None
    assert by["slow"].missing["arrival_rate_per_s"].startswith("scrape gap")
    assert by["fast"].arrival_rate_per_s is not None
    after = {q.queue: q for q in src.snapshot(AFTER_GAP, 300).queues}
    assert after["slow"].arrival_rate_per_s is not None


@pytest.mark.prometheus
def test_range_windows_fit_the_slowest_queue_and_gaps_are_per_queue(
    mixed_prometheus: PrometheusProcess,
) -> None:
    rng = _source(mixed_prometheus.url).range(START + 3600, START + 7200, 60)
    t = rng.t
    i_slow, i_fast = rng.index("slow"), rng.index("fast")
    assert i_slow is not None
    assert i_fast is not None
    slow = rng.matrix("arrival_rate_per_s")[i_slow]
    fast = rng.matrix("arrival_rate_per_s")[i_fast]
    # the window is max(60 + 30, 4 × 30) = 120 s: every point of both queues has a rate
    # except where the slow queue's window falls in its gap
    in_gap = (t - 120 < GAP_TO) & (t > GAP_FROM)
    assert np.all(np.isfinite(fast))
    assert np.all(np.isfinite(slow[~in_gap]))
    assert np.isnan(slow[in_gap]).sum() >= 4


def test_learnt_interval_snaps_to_the_usual_ones() -> None:
    assert learnt_scrape_interval_s(40) == 15.0  # 10 minutes at 15 s
    assert learnt_scrape_interval_s(39) == 15.0  # one scrape missed: 15.4 s is 15 s
    assert learnt_scrape_interval_s(20) == 30.0
    assert learnt_scrape_interval_s(19) == 30.0
    assert learnt_scrape_interval_s(10) == 60.0
    assert learnt_scrape_interval_s(1) is None
    assert learnt_scrape_interval_s(None) is None
    assert learnt_scrape_interval_s(2) == 300.0  # sparse: capped at the largest listed
    assert learnt_scrape_interval_s(240, 3600.0) == 15.0


def test_gap_fixture_removes_only_the_slow_queue_in_the_gap(tmp_path: Path) -> None:
    text = (f'workqueue_adds_total{{name="slow",pod="slow"}} 1 {GAP_FROM}\n'
            f'workqueue_adds_total{{name="fast",pod="fast"}} 1 {GAP_FROM}\n'
            f'workqueue_adds_total{{name="slow",pod="slow"}} 1 {GAP_TO}\n')
    assert _without_gap(text).splitlines() == text.splitlines()[1:]
