"""`queuelens whatif --queue NAME`: the what-if of a measured queue, on the demo and on a REAL
backfilled Prometheus. Its recommendation is the one `advise` gives for that queue, and its
sweep is the one the advisor sized the queue with."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dashboard.cli import main
from models import fleet as fl
from tests.support.prometheus import PrometheusProcess
from tests.support.workqueue_om import AT

AT_DEMO = fl.EPOCH_S + 40 * 86400 + 14 * 3600


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    code = main(argv)
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def _advised(advise: dict[str, Any]) -> dict[str, int | None]:
    """Per queue: the recommended count of its plan — what `advise` recommends."""
    return {q["queue"]: q["plan"]["recommended_workers"] for q in advise["queues"]}


def _check_same_as_advise(source: list[str], at: float, window: str, range_: str,
                          capsys: pytest.CaptureFixture[str]) -> int:
    common = [*source, "--at", str(at), "--window", window, "--range", range_]
    advise = _json(["advise", *common, "--format", "json"], capsys)
    advised = _advised(advise)
    named = 0
    for queue, workers in advised.items():
        live = _json(["whatif", *common, "--queue", queue, "--format", "json"], capsys)
        rec = live["recommendation"]
        assert rec["workers"] == workers, queue
        plan = next(q for q in advise["queues"] if q["queue"] == queue)["plan"]
        assert live["plan"] == plan, queue  # the same plan, every field
        kinds = next(q for q in advise["queues"] if q["queue"] == queue)["verdicts"]
        assert rec["verdicts"] == [v["kind"] for v in kinds], queue
        named += workers is not None and workers != plan["workers_now"]  # a change
        sized = live["inputs"]["sized_with"]
        if sized is not None:
            # the sweep covers the recommendation, and the measured λ is at most the design λ
            assert sized["workers_min"] <= (workers or 1) <= sized["workers_max"], queue
            lam = live["inputs"]["measured"]["arrival_rate_per_s"]["value"]
            assert lam <= sized["arrival_rate_per_s"] + 1e-9, queue
            assert len(live["rows"]) == sized["workers_max"] - sized["workers_min"] + 1
    return named


def test_demo_whatif_recommends_what_advise_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert _check_same_as_advise(["--demo"], AT_DEMO, "5m", "2h", capsys) >= 1


@pytest.mark.prometheus
def test_prometheus_whatif_recommends_what_advise_does(
    backfilled_prometheus: PrometheusProcess, capsys: pytest.CaptureFixture[str],
) -> None:
    _check_same_as_advise(["--prometheus", backfilled_prometheus.url], AT, "5m", "30m", capsys)
    live = _json(["whatif", "--prometheus", backfilled_prometheus.url, "--at", str(AT),
                  "--range", "30m", "--queue", "deployment", "--format", "json"], capsys)
    promql = live["inputs"]["measured"]["arrival_rate_per_s"]["promql"]
    assert "workqueue_adds_total" in promql


def test_a_contention_queue_names_its_binding_limit(capsys: pytest.CaptureFixture[str]) -> None:
    advise = _json(["advise", "--demo", "--at", str(AT_DEMO), "--format", "json"], capsys)
    limited = [q["queue"] for q in advise["queues"]
               if any(v["kind"] == "contention" for v in q["verdicts"])]
    assert limited, "the demo has a contention queue"
    live = _json(["whatif", "--demo", "--at", str(AT_DEMO), "--queue", limited[0],
                  "--format", "json"], capsys)
    contention = next(v for q in advise["queues"] if q["queue"] == limited[0]
                      for v in q["verdicts"] if v["kind"] == "contention")
    assert live["recommendation"]["binding_limit"] == contention["evidence"]["binding_limit"]


@pytest.mark.parametrize(("argv", "needle"), [
    (["--demo", "--queue", "no-such-queue"], "No queue named"),
    (["--demo", "--queue", "replicaset", "--arrival-rate", "3"], "offline form"),
    (["--demo", "--queue", "replicaset", "--sigma", "0.1", "--kappa", "0"], "offline form"),
    (["--demo", "--queue", "replicaset", "--service-cv2", "2"], "offline form"),
    (["--service-mean", "0.1"], "--arrival-rate and --service-mean, or --queue"),
])
def test_bad_live_arguments_exit_2(argv: list[str], needle: str,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["whatif", "--at", str(AT_DEMO), *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1


def test_offline_default_utilization_target_is_the_advisors() -> None:
    from dashboard.commands import whatif
    from models.advisor import AdvisorThresholds

    assert AdvisorThresholds().util_target == whatif._DEFAULT_TARGET


def test_offline_whatif_applies_the_utilization_design(capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    # λ·E[S] = 3.8 busy: the SLO (p95 ≤ 1 s) needs 5 workers, ρ ≤ 0.7 needs ⌈3.8/0.7⌉ = 6
    argv = ["whatif", "--arrival-rate", "15.2", "--service-mean", "0.25", "--slo", "1s",
            "--format", "json"]
    design = _json(argv, capsys)["recommendation"]
    assert design["workers"] == 6
    assert "utilization design" in design["reason"]
    slo_only = _json([*argv, "--utilization-target", "off"], capsys)["recommendation"]
    assert slo_only["workers"] == 5
