"""Where most queues live (issue 35 §4): a limit near, the queue keeping up on average, its
peaks over the limit or not — simulated by mechanism (a lock, a pool, an external limit, the
CPU, the client's token bucket), backfilled into a REAL Prometheus and judged by ``queuelens
advise``. Each (regime, load) runs on several seeds: every seed must be right
(:func:`tests.support.regimes.near_misses`) and all must give the same answer — the limit
named and more, fewer or the same workers — so a user who runs it twice reads the same thing."""

from __future__ import annotations

import contextlib
import io
import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dashboard.cli import main
from tests.support import regimes as rg
from tests.support.prometheus import PrometheusProcess

pytestmark = pytest.mark.prometheus

NEAR = list(rg.near_cases())
IDS = [c.queue for _, c in NEAR]


@pytest.fixture(scope="module")
def near_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    with rg.serving([c for _, c in NEAR], tmp_path_factory.mktemp("near")) as server:
        yield server


@pytest.fixture(scope="module")
def judged(near_prometheus: PrometheusProcess, tmp_path_factory: pytest.TempPathFactory
           ) -> dict[str, dict[str, Any]]:
    config = tmp_path_factory.mktemp("near-config") / "queuelens.yaml"
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        assert main(rg.advise_argv(near_prometheus.url, 15.0, config)) == 0
    return {q["queue"]: q for q in json.loads(text.getvalue())["queues"]}


@pytest.mark.parametrize(("near", "case"), NEAR, ids=IDS)
def test_a_near_limit_queue_gets_its_answer(near: rg.NearRegime, case: rg.Case,
                                            judged: dict[str, dict[str, Any]]) -> None:
    assert rg.near_misses(near, case, judged[case.queue]) == [], case.queue


def test_every_seed_gives_the_same_answer(judged: dict[str, dict[str, Any]]) -> None:
    answers: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for _, case in NEAR:
        answers[(case.regime.name, case.load)].add(rg.answer_of(judged[case.queue]))
    flips = {k: sorted(v) for k, v in answers.items() if len(v) > 1}
    assert flips == {}
    assert len(answers) == len(rg.NEAR_REGIMES) * len(rg.LOADS)


def test_docs_carry_the_near_limit_regimes() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "advisor.md").read_text()
    for near in rg.NEAR_REGIMES:
        assert f"`{near.regime.name}`" in doc, near.regime.name
