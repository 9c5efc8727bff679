"""One answer per queue on every surface (issue 11): the overview, the queue page, the what-if
page, ``advise``, ``whatif --demo`` and each report format give the same recommended worker
count, binding limit and demand for the same demo queue, from the same settings."""

from __future__ import annotations

import csv
import io
import json
from html import escape
from typing import Any

import pytest

from collectors.cache import CachedSource
from collectors.demo import DemoSource
from dashboard.cli import main
from dashboard.context import AppContext
from dashboard.pages import overview
from dashboard.pages import queue as qp
from dashboard.pages import whatif as wp
from dashboard.plan_words import binding_label, rate_text, workers_text
from dashboard.report import build_report, render
from models import fleet as fl

AT = fl.EPOCH_S + 40 * 86400 + 14 * 3600
QUEUES = ("replicaset", "certificate", "ingress", "deployment")
"""A count to change, a client limiter, a hot key, a healthy queue with a worker change."""


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def answers() -> dict[str, dict[str, Any]]:
    """{queue: the plan's payload} from `advise --format json`, the reference."""
    import contextlib

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["advise", "--demo", "--at", str(AT), "--format", "json"]) == 0
    return {q["queue"]: q["plan"] for q in json.loads(out.getvalue())["queues"]}


def _same(plan: dict[str, Any], workers: int | None, binding: str | None,
          demand: float | None, where: str) -> None:
    assert workers == plan["recommended_workers"], where
    assert binding == plan["binding_limit"], where
    assert demand == pytest.approx(plan["demand_per_s"], rel=1e-3), where


@pytest.mark.parametrize("queue", QUEUES)
def test_every_surface_gives_the_same_plan(queue: str, answers: dict[str, dict[str, Any]],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    plan = answers[queue]
    assert plan["recommended_workers"] is not None
    # whatif --demo --queue
    live = json.loads(_cli(capsys, "whatif", "--demo", "--at", str(AT), "--queue", queue,
                           "--format", "json"))
    _same(plan, live["recommendation"]["workers"], live["recommendation"]["binding_limit"],
          live["inputs"]["sized_with"]["arrival_rate_per_s"], "whatif")
    # the overview's row
    rows, _, _ = overview.load_overview(AppContext(source=CachedSource(DemoSource(seed=0))),
                                        now=AT)
    row = next(r for r in rows if r["queue_name"] == queue)
    _same(plan, row["workers_advised"], row["binding_limit"], row["demand_per_s"], "overview")
    assert row["workers_advice"] == workers_text(plan)
    # the queue page's card
    view = qp.queue_view(CachedSource(DemoSource(seed=0)), queue, "1h", AT)
    assert view.plan is not None
    _same(plan, view.plan.recommended_workers, view.plan.binding_limit,
          view.plan.demand_per_s, "queue page")
    # the what-if page: the mark on its charts and the λ it pre-fills
    mark = wp.advisor_mark(DemoSource(seed=0), queue, AT)
    measured = wp.measured_inputs(DemoSource(seed=0), queue, AT)
    _same(plan, mark.workers, view.plan.binding_limit, measured.arrival_rate_per_s,
          "what-if page")


def test_every_report_format_gives_the_same_plans(answers: dict[str, dict[str, Any]],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    report = build_report(DemoSource(seed=0), AT)
    payload = json.loads(render(report, "json"))
    by = {q["queue"]: q for q in payload["queues"]}
    rows = {r["queue"]: r for r in csv.DictReader(io.StringIO(render(report, "csv")))}
    md = render(report, "md")
    html = render(report, "html")
    for queue in QUEUES:
        plan = answers[queue]
        got = by[queue]["plan"]
        _same(plan, got["recommended_workers"], got["binding_limit"], got["demand_per_s"],
              "json report")
        assert by[queue]["whatif"]["recommended_workers"] == plan["recommended_workers"]
        assert int(rows[queue]["recommended_workers"]) == plan["recommended_workers"]
        # the Markdown and HTML say it in the card's words
        words = (plan["headline"], workers_text(plan), binding_label(plan["binding_limit"]),
                 rate_text(plan["demand_per_s"]))
        md_section = md.split(f"## {queue}", 1)[1].split("\n## ", 1)[0]
        html_section = html.split(f">{queue} ", 1)[1].split("</section>", 1)[0]
        for text in words:
            assert text.replace("_", "\\_") in md_section, (queue, text)
            assert escape(text) in html_section, (queue, text)  # escaped, as every label
    # the same settings are stated in each
    described = "last 2 h (a point every 60 s), rates over 5 min, p95 wait ≤ 1 s"
    assert payload["described"].startswith(described)
    assert described in md
    assert described in html
