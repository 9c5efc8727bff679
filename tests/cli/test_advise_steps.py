"""Worker-count steps under saturating load, end to end, and the rows at a count never run.

Each controller of ``tests/support/regimes.py``'s ``STEP_REGIMES`` ran 1, then 2, then 3
workers while offered more than it could do; its mechanism (a lock, an external rate limit the
metrics never name, the API client's token bucket, or nothing shared) was simulated, scraped as
controller-runtime exposes it and backfilled into a REAL Prometheus. ``queuelens advise`` and
``whatif --queue`` judge it from what was recorded. Beside the verdict and the binding limit,
the plan's ceiling must be within 10 % of the mechanism's, and the plan's row at 8 workers — a
count the history never ran — within 15 % of the same mechanism simulated at 8 workers
(throughput; and the mean wait where the queue keeps up, or "the backlog grows" where it does
not).
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dashboard.cli import main
from models.simulate import simulate
from tests.support import regimes as rg
from tests.support.prometheus import PrometheusProcess

CASES = list(rg.step_cases())
END = rg.START + int(rg.DURATION_S)


@pytest.fixture(scope="module")
def steps_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    with rg.serving(CASES, tmp_path_factory.mktemp("steps")) as server:
        yield server


def _run(argv: list[str]) -> dict[str, Any]:
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        code = main(argv)
    assert code == 0, argv
    out: dict[str, Any] = json.loads(text.getvalue())
    return out


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("steps-config") / "queuelens.yaml"
    path.write_text(rg.CONFIG)
    return path


@pytest.fixture(scope="module")
def judged(steps_prometheus: PrometheusProcess, config: Path) -> dict[str, dict[str, Any]]:
    payload = _run(["advise", "--prometheus", steps_prometheus.url, "--config", str(config),
                    "--selector", '{pod=~"pod-step_.*"}', "--at", str(END), "--range",
                    rg.RANGE, "--format", "json"])
    return {q["queue"]: q for q in payload["queues"]}


@pytest.fixture(scope="module")
def rows(steps_prometheus: PrometheusProcess, config: Path) -> dict[str, dict[int, Any]]:
    """Each case's what-if rows (``whatif --queue``), by worker count."""
    out: dict[str, dict[int, Any]] = {}
    for case in CASES:
        payload = _run(["whatif", "--prometheus", steps_prometheus.url, "--config",
                        str(config), "--queue", case.queue, "--at", str(END), "--range",
                        rg.RANGE, "--workers", f"1-{2 * rg.PROBE_WORKERS}", "--format",
                        "json"])
        out[case.queue] = {int(r["workers"]): r for r in payload["rows"]}
    return out


@pytest.fixture(scope="module")
def probes(judged: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The mechanism of each case simulated at the probe count (no scrape: the truth), offered
    the demand the plan sizes with (its design demand: the rows are computed there)."""
    out = {}
    for case in CASES:
        kw = rg.probe_kwargs(case)
        kw["arrival_rate_per_s"] = judged[case.queue]["plan"]["demand_per_s"]
        out[case.queue] = (simulate(**kw), kw["arrival_rate_per_s"])
    return out


@pytest.mark.prometheus
@pytest.mark.parametrize("case", CASES, ids=[c.queue for c in CASES])
def test_a_step_under_load_names_the_limit_and_its_rows_hold(
        case: rg.Case, judged: dict[str, dict[str, Any]], rows: dict[str, dict[int, Any]],
        probes: dict[str, Any]) -> None:
    sim, demand = probes[case.queue]
    row = rows[case.queue][rg.PROBE_WORKERS]
    assert rg.step_misses(case, judged[case.queue], row, sim, demand) == [], case.queue


@pytest.mark.prometheus
def test_a_step_rises_above_the_ceiling_in_no_row(rows: dict[str, dict[int, Any]]) -> None:
    for case in CASES:
        if case.regime.ceiling_per_s is not None:
            top = max(r["throughput_per_s"] for r in rows[case.queue].values())
            assert top <= 1.1 * case.regime.ceiling_per_s, case.queue


def test_the_step_regimes_are_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "advisor.md").read_text()
    for regime in rg.STEP_REGIMES:
        assert f"`{regime.name}`" in doc, regime.name
