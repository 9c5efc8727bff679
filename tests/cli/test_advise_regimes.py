"""The regime matrix, end to end: controllers with a known bottleneck are simulated by their
mechanism, scraped as controller-runtime exposes them, backfilled into a REAL Prometheus, and
judged by ``queuelens advise`` from what was recorded.

18 regimes × 3 load shapes (constant, sine, step) × 2 scrape intervals (15 s, 30 s) × 2 seeds
= 216 controllers, each in its own process (pod), in one Prometheus; one ``advise`` over the
recorded 2 h per scrape interval (a selector on the pod), so the 15 s controllers are read at
their own resolution. Each regime's verdicts must include one of ``expect`` and none of
``never``, and a contention verdict must name the regime's binding limit
(``tests/support/regimes.py``; the table is also in ``docs/advisor.md``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dashboard.cli import main
from tests.support import regimes as rg
from tests.support.prometheus import PrometheusProcess

CASES = list(rg.cases())


@pytest.fixture(scope="module")
def matrix_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    with rg.serving(CASES, tmp_path_factory.mktemp("regimes")) as server:
        yield server


@pytest.fixture(scope="module")
def judged(matrix_prometheus: PrometheusProcess, tmp_path_factory: pytest.TempPathFactory
           ) -> dict[str, dict[str, Any]]:
    """Each queue's ``advise --format json`` entry (its verdicts and its plan)."""
    import contextlib
    import io

    out: dict[str, dict[str, Any]] = {}
    config = tmp_path_factory.mktemp("regimes-config") / "queuelens.yaml"
    for step in rg.SCRAPE_INTERVALS_S:
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            code = main(rg.advise_argv(matrix_prometheus.url, step, config))
        assert code == 0
        out.update({q["queue"]: q for q in json.loads(text.getvalue())["queues"]})
    return out


@pytest.fixture(scope="module")
def advice(judged: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    return {q: p["verdicts"] for q, p in judged.items()}


@pytest.fixture(scope="module")
def verdicts(advice: dict[str, list[dict[str, Any]]]) -> dict[str, list[str]]:
    return {q: [v["kind"] for v in vs] for q, vs in advice.items()}


@pytest.mark.prometheus
@pytest.mark.parametrize("case", CASES, ids=[c.queue for c in CASES])
def test_regime_gets_its_verdict(case: rg.Case, verdicts: dict[str, list[str]],
                                 advice: dict[str, list[dict[str, Any]]]) -> None:
    kinds = set(verdicts[case.queue])
    if case.load in case.regime.undecidable and not kinds & case.regime.expect:
        # the metrics could not tell: every verdict must say a shared resource was not ruled out
        for v in advice[case.queue]:
            said = v["evidence"].get("caveats") or v["evidence"].get(
                "rules_not_evaluated", {}).get("contention/duration")
            assert "could not be told" in str(said or ""), (case.queue, v["kind"])
        assert not kinds & (case.regime.never - {"add_workers"}), (case.queue, sorted(kinds))
        return
    assert kinds & case.regime.expect, (case.queue, sorted(kinds))
    assert not kinds & case.regime.never, (case.queue, sorted(kinds))
    if case.regime.binding is not None:
        (contention,) = [v for v in advice[case.queue] if v["kind"] == "contention"]
        assert contention["evidence"]["binding_limit"] == case.regime.binding, case.queue


KNOBS = {
    # the limit beyond the queue → what the plan must tell the operator to change
    "api_server": ("FlowSchema", "kind: FlowSchema"),
    "admission_webhook": ("ValidatingWebhookConfiguration / MutatingWebhookConfiguration",
                          None),
    "client_limiter": ("rest.Config QPS / Burst", None),
}


@pytest.mark.prometheus
@pytest.mark.parametrize("case", [c for c in CASES if c.regime.binding is not None],
                         ids=[c.queue for c in CASES if c.regime.binding is not None])
def test_the_plan_names_the_limit_and_its_knob(case: rg.Case,
                                               judged: dict[str, dict[str, Any]]) -> None:
    plan = judged[case.queue]["plan"]
    if case.load in case.regime.undecidable and plan["binding_limit"] != case.regime.binding:
        return  # said it could not tell (test_regime_gets_its_verdict checks how)
    assert plan["binding_limit"] == case.regime.binding, case.queue
    assert plan["recommended_workers"] is None or plan["workers_now"] is None or \
        plan["recommended_workers"] <= plan["workers_now"], case.queue  # never more workers
    want = KNOBS.get(case.regime.binding)
    if want is not None:
        setting, manifest = want
        (knob,) = [k for k in plan["knobs"] if k["setting"] == setting]
        if manifest is not None:
            assert manifest in knob["manifest"], case.queue
    if case.regime.binding == "write_conflicts":
        assert any("contended object" in o["action"] for o in plan["options"]), case.queue


@pytest.mark.prometheus
def test_every_case_was_judged(verdicts: dict[str, list[str]]) -> None:
    assert set(verdicts) == {c.queue for c in CASES}


def test_the_matrix_covers_every_shape_interval_and_seed() -> None:
    assert len(CASES) == len(rg.REGIMES) * 3 * 2 * 2 == 216
    assert {c.load for c in CASES} == {"constant", "sine", "step"}
    assert {c.scrape_interval_s for c in CASES} == {15.0, 30.0}


def test_docs_carry_the_matrix() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "advisor.md").read_text()
    for regime in rg.REGIMES:
        assert f"`{regime.name}`" in doc, regime.name


CEILING_CASES = [c for c in CASES if c.regime.ceiling_per_s is not None]


@pytest.fixture(scope="module")
def probe_rows(matrix_prometheus: PrometheusProcess, judged: dict[str, dict[str, Any]],
               tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, Any, float]]:
    """For each case with a mechanism ceiling: the plan's row at twice the current count (a
    count the history never ran), the mechanism simulated there, and the design demand."""
    config = tmp_path_factory.mktemp("regimes-rows") / "queuelens.yaml"
    config.write_text(rg.CONFIG)
    return {case.queue: rg.probe_row(case, judged[case.queue]["plan"], matrix_prometheus.url,
                                     config) for case in CEILING_CASES}


@pytest.mark.prometheus
@pytest.mark.parametrize("case", CEILING_CASES, ids=[c.queue for c in CEILING_CASES])
def test_the_plan_ceiling_and_rows_follow_the_mechanism(
        case: rg.Case, judged: dict[str, dict[str, Any]],
        probe_rows: dict[str, tuple[Any, Any, float]]) -> None:
    q = judged[case.queue]
    if q["plan"]["binding_limit"] != case.regime.binding:
        return  # could not tell (test_regime_gets_its_verdict checks how)
    row, sim, demand = probe_rows[case.queue]
    assert rg.matrix_row_misses(case, q, row, sim, demand) == [], case.queue


@pytest.mark.prometheus
@pytest.mark.parametrize("case", [c for c in CASES if c.regime.plan_binding is not None],
                         ids=[c.queue for c in CASES if c.regime.plan_binding is not None])
def test_a_retry_storm_names_its_cause(case: rg.Case,
                                       judged: dict[str, dict[str, Any]]) -> None:
    q = judged[case.queue]
    assert q["plan"]["binding_limit"] == case.regime.plan_binding, case.queue
    storm = [v for v in q["verdicts"] if v["kind"] == "retry_storm"]
    for v in storm:
        assert v["evidence"]["failure_cause"] == "409", case.queue
        assert "patch or server-side apply" in v["recommendation"]["steps"][0], case.queue
