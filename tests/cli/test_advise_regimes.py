"""The regime matrix, end to end: controllers with a known bottleneck are simulated by their
mechanism, scraped as controller-runtime exposes them, backfilled into a REAL Prometheus, and
judged by ``queuelens advise`` from what was recorded.

9 regimes × 3 load shapes (constant, sine, step) × 2 scrape intervals (15 s, 30 s) × 2 seeds
= 108 controllers, each in its own process (pod), in one Prometheus; one ``advise`` over the
recorded 2 h. Each regime's verdicts must include one of ``expect`` and none of ``never``
(``tests/support/regimes.py``; the table is also in ``docs/advisor.md``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashboard.cli import main
from tests.support import regimes as rg
from tests.support.prometheus import PrometheusProcess, backfill_file, start_prometheus

CASES = list(rg.cases())


@pytest.fixture(scope="module")
def matrix_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    work = tmp_path_factory.mktemp("regimes")
    om = work / "regimes.om"
    rg.write_openmetrics(CASES, om)
    tsdb = backfill_file(om, work)
    om.unlink()
    server = start_prometheus(work / "prom", tsdb=tsdb)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def verdicts(matrix_prometheus: PrometheusProcess) -> dict[str, list[str]]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["advise", "--prometheus", matrix_prometheus.url,
                     "--at", str(rg.START + int(rg.DURATION_S)), "--range", rg.RANGE,
                     "--format", "json"])
    assert code == 0
    data = json.loads(out.getvalue())
    return {q["queue"]: [v["kind"] for v in q["verdicts"]] for q in data["queues"]}


@pytest.mark.prometheus
@pytest.mark.parametrize("case", CASES, ids=[c.queue for c in CASES])
def test_regime_gets_its_verdict(case: rg.Case, verdicts: dict[str, list[str]]) -> None:
    kinds = set(verdicts[case.queue])
    assert kinds & case.regime.expect, (case.queue, sorted(kinds))
    assert not kinds & case.regime.never, (case.queue, sorted(kinds))


@pytest.mark.prometheus
def test_every_case_was_judged(verdicts: dict[str, list[str]]) -> None:
    assert set(verdicts) == {c.queue for c in CASES}


def test_the_matrix_covers_every_shape_interval_and_seed() -> None:
    assert len(CASES) == len(rg.REGIMES) * 3 * 2 * 2
    assert {c.load for c in CASES} == {"constant", "sine", "step"}
    assert {c.scrape_interval_s for c in CASES} == {15.0, 30.0}


def test_docs_carry_the_matrix() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "advisor.md").read_text()
    for regime in rg.REGIMES:
        assert f"`{regime.name}`" in doc, regime.name
