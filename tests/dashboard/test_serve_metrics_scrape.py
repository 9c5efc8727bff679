"""A real Prometheus scrapes a real ``queuelens serve --demo``: the plans it stores are the
ones ``queuelens advise`` prints for the same instant, queue by queue."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import require_binary
from tests.support.cli import interrupt
from tests.support.prometheus import HINT, start_prometheus

pytestmark = pytest.mark.prometheus

REPO = Path(__file__).resolve().parents[2]
AT = "1581343200"
SCRAPE_DEADLINE_S = 30.0
"""Wall-clock limit for the first complete scrape to be queryable (measured: 5.2 s after
Prometheus is ready, the serve process's start included)."""

WANTS_MORE_WORKERS = ("queuelens_plan_recommended_workers > queuelens_plan_current_workers\n"
                      "  and on (queue, job, instance) queuelens_plan_severity >= 2")
"""The expression of the README's ``QueuelensWantsMoreWorkers`` alert."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _query(url: str, promql: str) -> list[dict[str, Any]]:
    answer = requests.get(f"{url}/api/v1/query", params={"query": promql}, timeout=5).json()
    assert answer["status"] == "success", answer
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def _by_queue(result: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["metric"]["queue"]: r for r in result}


def test_prometheus_scrapes_the_plans_advise_gives(tmp_path: Path) -> None:
    require_binary("prometheus", HINT)
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost"}
    env.pop("QUEUELENS_PROMETHEUS_URL", None)
    cli = [sys.executable, "-m", "dashboard.cli"]
    advise = subprocess.Popen([*cli, "advise", "--demo", "--at", AT, "--format", "json"],
                              cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    port = _free_port()
    serve = subprocess.Popen([*cli, "serve", "--demo", "--at", AT, "--port", str(port)],
                             cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        prom = start_prometheus(tmp_path / "prometheus", scrape_targets=[f"127.0.0.1:{port}"],
                                scrape_interval_s=1.0)
        try:
            deadline = time.monotonic() + SCRAPE_DEADLINE_S
            while True:
                recommended = _by_queue(_query(prom.url, "queuelens_plan_recommended_workers"))
                info = _by_queue(_query(prom.url, "queuelens_plan_verdict_info"))
                if len(recommended) == 8 and len(info) == 8:
                    break
                assert serve.poll() is None, "queuelens serve exited"
                assert time.monotonic() < deadline, (
                    f"no complete scrape within {SCRAPE_DEADLINE_S:g} s: "
                    f"{_query(prom.url, 'up')}\n{prom.log_tail()}")
                time.sleep(0.25)
            current = _by_queue(_query(prom.url, "queuelens_plan_current_workers"))
            demand = _by_queue(_query(prom.url, "queuelens_plan_design_demand_per_second"))
            ceiling = _by_queue(_query(prom.url, "queuelens_plan_ceiling_per_second"))
            up = _query(prom.url, 'up{job="queuelens-test"}')
            evaluated = _query(prom.url, "queuelens_evaluation_timestamp_seconds")
            # the README's alert: the plan wants more workers, and says so at warning or worse
            short = _by_queue(_query(prom.url, WANTS_MORE_WORKERS))
        finally:
            prom.stop()
        out, err = advise.communicate(timeout=60)
        assert advise.returncode == 0, err
    finally:
        interrupt(serve)
        if advise.poll() is None:
            advise.kill()
            advise.communicate()

    plans = {q["queue"]: q["plan"] for q in json.loads(out)["queues"]}
    assert len(plans) == 8
    assert [float(u["value"][1]) for u in up] == [1.0]
    assert [float(e["value"][1]) for e in evaluated] == [float(AT)]
    assert set(recommended) == set(current) == set(info) == set(plans)
    for queue, plan in plans.items():
        assert float(recommended[queue]["value"][1]) == plan["recommended_workers"], queue
        assert float(current[queue]["value"][1]) == plan["workers_now"], queue
        labels = info[queue]["metric"]
        assert (labels["kind"], labels["severity"], labels["binding_limit"], labels["rule"]) \
            == (plan["kind"], plan["severity"], plan["binding_limit"], plan["rule"]), queue
        assert labels["controller"] == queue  # the demo's controller label is the queue name
        assert float(demand[queue]["value"][1]) == pytest.approx(plan["demand_per_s"],
                                                                  rel=1e-12)
        if plan["ceiling_per_s"] is None:
            assert queue not in ceiling, queue  # absent, not 0
        else:
            assert float(ceiling[queue]["value"][1]) == pytest.approx(plan["ceiling_per_s"],
                                                                       rel=1e-12)
    assert set(short) == {q for q, p in plans.items()
                          if p["recommended_workers"] > p["workers_now"]
                          and p["severity"] in ("warning", "critical")}
    assert "replicaset" in short  # the saturated demo queue: 4 workers, 6 recommended
