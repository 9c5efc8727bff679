"""Session fixtures: a REAL Prometheus backfilled with the deterministic work-queue scenario.

Registered for the whole suite by ``tests/conftest.py`` (``pytest_plugins``), so every test can
take ``backfilled_prometheus`` (a :class:`~tests.support.prometheus.PrometheusProcess`
whose ``url`` answers queries inside ``[START, START + DURATION_S)``); the ground truth is in
:mod:`tests.support.workqueue_om` (``TRUTH``, ``AT``, ``WINDOW_S`` ...).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.prometheus import PrometheusProcess, backfill, start_prometheus
from tests.support.workqueue_om import main_text, scale_text


def start_backfilled(workdir_factory: pytest.TempPathFactory, name: str, text: str
                     ) -> PrometheusProcess:
    work = workdir_factory.mktemp(name)
    tsdb = backfill(text, work)
    return start_prometheus(work, tsdb=tsdb)


@pytest.fixture(scope="session")
def backfilled_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    """Prometheus with :func:`tests.support.workqueue_om.main_scenario` backfilled."""
    server = start_backfilled(tmp_path_factory, "prom-main", main_text())
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def scale_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    """Prometheus with two fleets (3 and 30 queues, ``fleet`` label), no job labels."""
    server = start_backfilled(tmp_path_factory, "prom-scale", scale_text())
    try:
        yield server
    finally:
        server.stop()
