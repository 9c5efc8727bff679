"""The priority-queue starvation verdict, end to end: two controllers with controller-runtime's
priority queue (strict priority between 0 and -100, simulated by its mechanism in
``tests/support/priority_sim.py``), backfilled into a REAL Prometheus, judged by
``queuelens advise`` from the recorded depth by priority and the work histogram only."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dashboard.cli import main
from tests.support import priority_sim as ps
from tests.support.prometheus import PrometheusProcess, backfill, start_prometheus

pytestmark = pytest.mark.prometheus


@pytest.fixture(scope="module")
def prio_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    work: Path = tmp_path_factory.mktemp("prio")
    text = ps.openmetrics([
        # 97.5 % of the workers' time goes to priority 0: the -100 items are never reached
        ps.simulate("starving", workers=4, high_per_s=39.0, low_per_s=2.0, service_s=0.1,
                    seed=1),
        # 55 % busy: a -100 item waits only for the next free worker
        ps.simulate("fed", workers=4, high_per_s=20.0, low_per_s=2.0, service_s=0.1, seed=2),
    ])
    server = start_prometheus(work / "prom", tsdb=backfill(text, work))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def advice(prio_prometheus: PrometheusProcess) -> dict[str, list[dict[str, Any]]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["advise", "--prometheus", prio_prometheus.url,
                     "--at", str(ps.START + ps.DURATION_S - ps.STEP_S), "--range", "50m",
                     "--format", "json"])
    assert code == 0
    return {q["queue"]: q["verdicts"] for q in json.loads(out.getvalue())["queues"]}


def test_low_priority_items_starve_behind_a_busy_high_priority(
        advice: dict[str, list[dict[str, Any]]]) -> None:
    (v,) = [v for v in advice["starving"] if v["kind"] == "priority_starvation"]
    assert v["evidence"]["lowest_priority"] == "-100"
    assert v["evidence"]["lowest_priority_min_depth"] >= 1
    assert v["evidence"]["utilization"] >= 0.9
    assert "-100" in v["summary"]
    assert "blend" in v["summary"]


def test_a_queue_with_room_does_not_starve(advice: dict[str, list[dict[str, Any]]]) -> None:
    assert "priority_starvation" not in {v["kind"] for v in advice["fed"]}
