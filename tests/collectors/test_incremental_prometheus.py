"""Incremental range reads on a real Prometheus scraping a live exporter (issue 22): while
samples arrive, each refresh reads only the new steps, and every merged matrix equals a fresh
full read of the same range to 1e-9 (NaN where NaN)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from collectors.cache import CachedSource
from collectors.config import ConnectionSettings
from collectors.demo import DemoSource
from collectors.exporter import serve
from collectors.profile import Profile
from collectors.prom_client import PrometheusClient
from collectors.snapshot import PrometheusSource
from models.measurements import RangeData
from tests.support.equality import assert_same_range
from tests.support.prometheus import start_prometheus

pytestmark = pytest.mark.prometheus

STEP = 2.0
LENGTH = 16.0
SETTLED_S = 5.0
"""The range ends this long before now: every sample at or before its end has been scraped
(1 s interval), so the full read made just after sees the same samples."""


class _Clocked(CachedSource):
    """The cache's clock moves an hour before each range read: nothing is reused by age, so
    every refresh goes through the incremental path."""

    def __init__(self, source: PrometheusSource) -> None:
        self.clock = 0.0
        super().__init__(source, ttl_s=60.0, monotonic=lambda: self.clock)

    def range(self, *args: object, **kwargs: object) -> RangeData:
        self.clock += 3600.0
        return super().range(*args, **kwargs)  # type: ignore[arg-type]


def test_refreshes_while_data_arrive_equal_fresh_full_reads(tmp_path: Path) -> None:
    server, _thread = serve(DemoSource().fleet, "127.0.0.1", 0)
    prom = None
    try:
        prom = start_prometheus(tmp_path, scrape_targets=[f"127.0.0.1:{server.server_port}"],
                                scrape_interval_s=1)
        source = PrometheusSource(PrometheusClient(ConnectionSettings(url=prom.url)),
                                  Profile(scrape_interval_s=1.0))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until the whole first range has samples
            probe = source.range(time.time() - SETTLED_S - LENGTH, time.time() - SETTLED_S,
                                 STEP, signals=["arrival_rate_per_s"])
            m = probe.matrix("arrival_rate_per_s")
            if m.size and np.isfinite(m).all():
                break
            time.sleep(1)
        else:
            pytest.fail(f"no complete range within 60 s:\n{prom.log_tail()}")
        cache = _Clocked(source)
        refreshes = 6
        for _ in range(refreshes):
            end = time.time() - SETTLED_S
            got = cache.range(end - LENGTH, end, STEP)
            # the reference: the same read made directly, as advise makes it (one full read)
            fresh = source.range(end - LENGTH, end, STEP)
            assert got.end == np.ceil(end / STEP) * STEP
            # the scrape-gap warnings too: its dropped points are counted once, as one read
            # does; not the answers' notes ("N +Inf point(s) left out" is counted per read)
            assert_same_range(got, fresh, notes=False)
            assert np.isfinite(got.matrix("arrival_rate_per_s")).any()
            time.sleep(2.5)  # a step or so of new samples
        assert cache.range_reads.get("full") == 1
        assert cache.range_reads.get("delta") == refreshes - 1
    finally:
        if prom is not None:
            prom.stop()
        server.shutdown()


def _advice(source: PrometheusSource, rng: RangeData, at: float) -> list[tuple[object, ...]]:
    """Every queue's verdict kinds and plan (count, limit, ceiling) from a range read."""
    from dashboard.advice import advise_data
    from models.settings import AnalysisSettings

    fleet = advise_data(source.snapshot(at, 10.0), rng, AnalysisSettings())
    return [(q.queue, tuple(str(v.kind) for v in q.verdicts),
             None if q.plan is None else (q.plan.recommended_workers, str(q.plan.binding_limit)))
            for q in fleet.queues]


def test_a_counter_reset_a_scrape_gap_and_a_prometheus_restart(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """After each event the cached read equals a fresh full read (1e-9) and gives the same
    verdicts and plans, and each refresh is read the right way (the debug log's reason). A
    counter reset (the exporter's clock set back: every counter drops), a scrape gap (the
    exporter down for a few seconds) and a restart that keeps the TSDB leave the past as it
    was: the refresh reads the new steps (or reads in full because a signal appeared — the
    demo's errors come and go). A restart that lost the TSDB (a new, empty one: the past
    rewritten as empty) is caught in the overlap and read in full."""
    import logging

    from prometheus_client import start_http_server

    from collectors.exporter import registry_for

    caplog.set_level(logging.DEBUG, logger="collectors.incremental")
    fleet = DemoSource().fleet
    offset = [0.0]
    registry = registry_for(fleet, clock=lambda: time.time() - offset[0])
    server, _thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    port = server.server_port
    target = [f"127.0.0.1:{port}"]
    prom = start_prometheus(tmp_path / "a", scrape_targets=target, scrape_interval_s=1)
    source = PrometheusSource(PrometheusClient(ConnectionSettings(url=prom.url)),
                              Profile(scrape_interval_s=1.0))
    try:
        time.sleep(SETTLED_S + 3)  # the range may start before the first sample
        cache = _Clocked(source)
        length = 120.0  # longer than the whole test: every refresh may extend the last

        def refresh() -> str:
            caplog.clear()
            end = time.time() - SETTLED_S
            got = cache.range(end - length, end, STEP)
            fresh = source.range(end - length, end, STEP)
            # the scrape-gap warnings too: its dropped points are counted once, as one read
            # does; not the answers' notes ("N +Inf point(s) left out" is counted per read)
            assert_same_range(got, fresh, notes=False)
            at = float(got.end)
            assert _advice(source, got, at) == _advice(source, fresh, at)
            said = [r.getMessage() for r in caplog.records
                    if r.name == "collectors.incremental"]
            assert len(said) == 1, said  # the cached read only: the fresh one is direct
            return said[0]

        def kept_the_past(reason: str) -> bool:
            return "new step(s) read" in reason or "a queue or a signal is new" in reason

        assert "first read" in refresh()
        time.sleep(2.5)
        assert kept_the_past(reason := refresh()), reason
        offset[0] = 3600.0  # the counter reset: the exporter's counters an hour lower
        time.sleep(SETTLED_S + 3)
        assert kept_the_past(reason := refresh()), reason
        server.shutdown()  # the scrape gap
        server.server_close()
        time.sleep(4)
        server, _thread = start_http_server(port, addr="127.0.0.1", registry=registry)
        time.sleep(SETTLED_S + 3)
        assert kept_the_past(reason := refresh()), reason
        prom.stop()  # a restart that keeps its TSDB
        prom = start_prometheus(tmp_path / "a", scrape_targets=target, scrape_interval_s=1)
        source.client = PrometheusClient(ConnectionSettings(url=prom.url))
        time.sleep(3)
        assert kept_the_past(reason := refresh()), reason
        prom.stop()  # a restart that lost it
        prom = start_prometheus(tmp_path / "b", scrape_targets=target, scrape_interval_s=1)
        source.client = PrometheusClient(ConnectionSettings(url=prom.url))
        time.sleep(SETTLED_S + 3)
        assert "the past changed in the overlap" in (reason := refresh()), reason
    finally:
        prom.stop()
        server.shutdown()
