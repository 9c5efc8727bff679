"""The recorded client-go queues (``tests/support/recordings.py``) on a real Prometheus: each
recording's known right answer, from ``queuelens advise`` as a user runs it over the recorded
range — the verdict, the binding limit, the ceiling from the limit's own signals and, for the
queues that keep up, the headroom to the limit near them; and step-a's row at a worker count
its history never ran against the real queue run there."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dashboard.cli import main
from tests.support import recordings as rec
from tests.support.prometheus import PrometheusProcess, backfill_file, start_prometheus

pytestmark = pytest.mark.prometheus


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    work = tmp_path_factory.mktemp("recordings")
    tsdb = None
    for om in rec.write_openmetrics(work):
        tsdb = backfill_file(om, work)
        om.unlink()
    prom = start_prometheus(work / "prom", tsdb=tsdb)
    try:
        yield prom
    finally:
        prom.stop()


def _run(argv: list[str]) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    assert code == 0, out.getvalue()[-2000:]
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


@pytest.fixture(scope="module")
def advice(server: PrometheusProcess) -> dict[str, dict[str, Any]]:
    payload = _run(["advise", "--prometheus", server.url, "--at", str(rec.AT),
                    "--range", rec.RANGE, "--window", rec.WINDOW, "--format", "json"])
    return {q["queue"]: q for q in payload["queues"]}


def test_every_recording_is_judged(advice: dict[str, dict[str, Any]]) -> None:
    assert sorted(advice) == sorted(a.name for a in rec.ANSWERS)


@pytest.mark.parametrize("answer", rec.ANSWERS, ids=lambda a: a.name)
def test_the_recording_gets_its_known_answer(answer: rec.Answer,
                                            advice: dict[str, dict[str, Any]]) -> None:
    queue = advice[answer.name]
    plan = queue["plan"]
    kinds = {v["kind"] for v in queue["verdicts"]}
    said = f"{answer.name}: {sorted(kinds)}, {plan['binding_limit']}: {plan['headline']}"
    assert kinds & answer.expect, said
    assert not kinds & answer.never, said
    assert plan["binding_limit"] == answer.binding, said
    if not answer.more_workers:
        assert plan["recommended_workers"] <= plan["workers_now"], said
    else:
        assert plan["recommended_workers"] > plan["workers_now"], said
    assert plan["demand_lower_bound"] is answer.saturated, said
    if answer.ceiling_per_s is not None:
        got = plan["ceiling_per_s"]
        assert got is not None, said
        assert got == pytest.approx(answer.ceiling_per_s, rel=rec.CEILING_TOLERANCE), said


@pytest.mark.parametrize("answer", [a for a in rec.ANSWERS if a.headroom_limit is not None],
                         ids=lambda a: a.name)
def test_a_queue_that_keeps_up_states_its_headroom_to_the_limit_near_it(
        answer: rec.Answer, advice: dict[str, dict[str, Any]]) -> None:
    plan = advice[answer.name]["plan"]
    assert answer.headroom_ratio is not None
    assert plan["headroom_limit"] == answer.headroom_limit, plan["headroom_text"]
    least = plan["headroom"][0]
    lo = least["ratio_lo"] if least["ratio_lo"] is not None else least["ratio"]
    hi = least["ratio_hi"] if least["ratio_hi"] is not None else least["ratio"]
    within = lo <= answer.headroom_ratio <= hi
    close = least["ratio"] == pytest.approx(answer.headroom_ratio, rel=rec.CEILING_TOLERANCE)
    assert within or close, (least, answer.headroom_ratio)
    assert plan["headroom_text"].startswith("demand can grow")
    # the card's words say it too, not a bare "healthy"
    assert "headroom" in plan["headline"].lower()


def test_step_a_at_a_count_its_history_never_ran(server: PrometheusProcess) -> None:
    payload = _run(["whatif", "--prometheus", server.url, "--queue", "step-a", "--at",
                    str(rec.AT), "--range", rec.RANGE, "--window", rec.WINDOW,
                    "--workers", "1-7", "--format", "json"])
    row = next(r for r in payload["rows"] if r["workers"] == 7)
    assert row["throughput_per_s"] == pytest.approx(rec.STEP_A_C7_THROUGHPUT,
                                                    rel=rec.CEILING_TOLERANCE)
    # its history was saturated throughout: the add rate the rows are sized at is a lower
    # bound of what was offered (39–40/s), and the plan says so
    assert payload["plan"]["demand_lower_bound"] is True


def test_recordings_on_disk_match_their_manifest() -> None:
    manifest = json.loads((rec.DIR / "manifest.json").read_text())
    for a in rec.ANSWERS:
        peer = manifest["peers"][a.name]
        assert (rec.DIR / peer["file"]).is_file()
        assert (rec.DIR / peer["truth"]).is_file()


def test_the_recordings_readme_names_the_source() -> None:
    text = (Path(rec.DIR) / "README.md").read_text()
    assert "client-go" in text
    assert "v0.36.3" in text
