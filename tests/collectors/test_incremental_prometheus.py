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


def _same(got: RangeData, want: RangeData) -> None:
    assert got.queues == want.queues
    np.testing.assert_array_equal(got.t, want.t)
    assert set(got.signals) == set(want.signals)
    for name, matrix in want.signals.items():
        np.testing.assert_allclose(got.signals[name], matrix, rtol=1e-9, atol=1e-12,
                                   equal_nan=True, err_msg=name)


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
            _same(got, fresh)
            assert np.isfinite(got.matrix("arrival_rate_per_s")).any()
            time.sleep(2.5)  # a step or so of new samples
        assert cache.range_reads.get("full") == 1
        assert cache.range_reads.get("delta") == refreshes - 1
    finally:
        if prom is not None:
            prom.stop()
        server.shutdown()
