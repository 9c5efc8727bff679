"""Fleet overview rows, the advisor's status badges and link escaping (no browser)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from collectors.cache import CachedSource
from collectors.demo import DemoSource
from collectors.errors import PrometheusUnreachable
from dashboard.context import AppContext
from dashboard.numbers import snapshot_quantile_text
from dashboard.pages import overview
from dashboard.plan_words import binding_label, headroom_cell, workers_text
from models import fleet as fl
from models.measurements import QueueSnapshot, Snapshot


def _snap(*queues: QueueSnapshot) -> Snapshot:
    return Snapshot(at=0.0, window_s=300.0, source="test", queues=list(queues))


AT_DEMO = fl.EPOCH_S + 40 * 86400 + 14 * 3600


def test_badges_are_the_advisors_verdicts_on_the_demo() -> None:
    src = CachedSource(DemoSource(seed=0))
    rows, summary, error = overview.load_overview(AppContext(source=src), now=AT_DEMO)
    assert error == ""
    assert src.fetches == 2  # the advisor shares the sparklines' range read
    by = {r["queue_name"]: r for r in rows}
    assert by["replicaset"]["status"].split(", ")[0] == "more workers"
    assert by["dnsrecord"]["status"].split(", ")[0] == "retry storm"
    assert by["ingress"]["status"].split(", ")[0] == "hot key"
    assert by["deployment"]["status"] == "healthy"
    assert by["deployment"]["severity"] == "ok"
    assert by["dnsrecord"]["severity"] == "critical"
    # most severe first; the verdict's tooltip carries it in words (plain text) and its ids
    ranks = [overview.SEVERITY_ORDER.index(r["severity"]) for r in rows]
    assert ranks == sorted(ranks)
    assert [r["severity_rank"] for r in rows] == ranks
    assert "fail" in by["dnsrecord"]["verdict_summary"]
    # the cell says the kinds in words; the tooltip also names their ids
    assert by["dnsrecord"]["verdict_tip"].endswith("retry_storm") or \
        "retry_storm, " in by["dnsrecord"]["verdict_tip"]
    assert "critical" in summary
    # the settings every surface states
    assert "plans from the last 2 h (a point every 60 s), rates over 5 min, p95 wait ≤ 1 s" \
        in summary


def test_rows_carry_the_capacity_plan_in_the_same_words_as_every_surface() -> None:
    src = CachedSource(DemoSource(seed=0))
    ctx = AppContext(source=src)
    rows, _, _ = overview.load_overview(ctx, now=AT_DEMO)
    snapshot = src.snapshot(AT_DEMO, ctx.window_s)
    data, _ = overview.read_history(ctx, AT_DEMO)
    advice = overview.fleet_advice(snapshot, data, ctx.settings)
    assert src.fetches == 2  # the same cached reads: no third call
    by = {r["queue_name"]: r for r in rows}
    for qa in advice.queues:
        plan = qa.plan
        assert plan is not None
        row = by[qa.queue]
        assert row["workers_advised"] == plan.recommended_workers
        assert row["binding_limit"] == plan.binding_limit
        assert row["binding"] == binding_label(plan.binding_limit)
        # the same headroom cell as advise's table (its sort key: 0 where the limit binds
        # without a measured ceiling)
        assert row["headroom"] == headroom_cell(plan.payload())
        assert (row["headroom_ratio"] is None) == (plan.headroom_limit is None)
        assert row["workers_advice"] == workers_text(
            {"workers_now": plan.workers_now, "recommended_workers": plan.recommended_workers})
        assert row["verdict_summary"] == plan.headline
    replicaset = by["replicaset"]
    assert replicaset["workers_advised"] > replicaset["workers"]  # add_workers: c goes up
    assert " → " in replicaset["workers_advice"]


def test_rows_without_advice_say_no_verdict_and_stay_json_safe() -> None:
    rows = overview.overview_rows(_snap(
        QueueSnapshot(queue="b-ok", arrival_rate_per_s=1.0, throughput_per_s=1.0,
                      utilization=0.1234),
        QueueSnapshot(queue="a-none", queue_wait_p95_s=float("nan")),
    ))
    assert [r["queue_name"] for r in rows] == ["a-none", "b-ok"]
    assert {r["status"] for r in rows} == {overview.NO_VERDICT}
    assert rows[1]["utilization_pct"] == 12.3
    assert rows[0]["queue_wait_p95_s"] is None  # NaN never reaches the table
    assert rows[0]["arrival_rate_per_s"] is None


def test_queue_without_data_gets_insufficient_data_not_a_guess() -> None:
    snap = _snap(QueueSnapshot(queue="empty"))
    advice = overview.fleet_advice(snap, None)
    rows = overview.overview_rows(snap, {}, advice)
    assert rows[0]["status"].startswith("too little data")


@pytest.mark.parametrize(
    ("name", "href"),
    [("deployment", "/queue/deployment"),
     ("kube-system/ns", "/queue/kube-system%2Fns"),
     ('x"><script>', "/queue/x%22%3E%3Cscript%3E"),
     ("javascript:alert(1)", "/queue/javascript%3Aalert%281%29")],
)
def test_queue_href_is_percent_encoded(name: str, href: str) -> None:
    assert overview.queue_href(name) == href


HOSTILE = ("<img src=x onerror=alert(1)>", "a](javascript:alert(1)) <b>x</b>",
           'cfg"map\\sync', "kube-system/ns_x")


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_queue_names_stay_literal_text_with_an_encoded_link(name: str) -> None:
    rows = overview.overview_rows(_snap(QueueSnapshot(queue=name, arrival_rate_per_s=1.0)))
    row = rows[0]
    assert row["queue_name"] == name  # shown as it is: the grid renders it as text
    assert row["queue_href"] == overview.queue_href(name)
    assert row["queue_href"].startswith("/queue/")
    assert not set(row["queue_href"][len("/queue/"):]) & set('<>"/\\ ()[]:')
    # no other cell repeats the name as markup
    assert all(name not in str(v) for k, v in row.items() if k not in ("queue_name",))


def _leaves(defs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for d in defs:
        out += _leaves(d["children"]) if "children" in d else [d]
    return out


def test_no_cell_can_render_markup() -> None:
    """The only cell renderer is the text-only QueueLink, on the name; no Markdown, no HTML,
    dangerously_allow_code off; tooltips are plain-text fields."""
    grid = overview.grid()
    assert grid.dangerously_allow_code is False
    leaves = _leaves(overview.column_defs())
    renderers = {c["field"]: c["cellRenderer"] for c in leaves if "cellRenderer" in c}
    assert renderers == {"queue_name": "QueueLink"}
    text = json.dumps(grid.to_plotly_json(), default=str)
    assert "markdown" not in text.lower()
    assert "dangerously" not in json.dumps(overview.column_defs())
    assert all(c.get("tooltipField", "queue_name") in ROW_FIELDS for c in leaves)


def test_the_link_renderer_only_writes_text() -> None:
    """dashboard/assets/overview_grid.js: the name goes in as a React text child; nothing in
    the asset can parse HTML."""
    js = (Path(overview.__file__).parents[1] / "assets" / "overview_grid.js").read_text()
    assert 'React.createElement("a", {href: href}, text)' in js
    assert 'href.indexOf("/queue/") !== 0' in js  # any other target: plain text, no link
    for sink in ("innerHTML", "dangerouslySetInnerHTML", "outerHTML", "insertAdjacentHTML",
                 "document.write", "eval(", "new Function"):
        assert sink not in js


ROW_FIELDS = set(overview.overview_rows(_snap(QueueSnapshot(queue="q")))[0])


def test_every_column_shows_a_row_field() -> None:
    fields = [c["field"] for c in _leaves(overview.column_defs())]
    assert len(fields) == len(set(fields))
    assert set(fields) <= ROW_FIELDS


def test_columns_are_grouped_and_fit_a_1400px_window() -> None:
    """The name column is pinned at a fixed width; the other columns flex from their minimum
    widths, which together must fit the grid's width in a 1400 px window (1400 - the page's
    and the card's padding - a vertical scroll bar ≈ 1315 px), else a scroll bar appears."""
    defs = overview.column_defs()
    groups = [d["headerName"] for d in defs if "children" in d]
    assert groups[:3] == ["Advice", "Demand", "Workers"]
    assert "p95" in groups
    leaves = _leaves(defs)
    pinned = [c for c in leaves if c.get("pinned")]
    assert [c["field"] for c in pinned] == ["queue_name"]
    assert pinned[0]["width"] == overview.QUEUE_WIDTH
    flexible = [c for c in leaves if not c.get("pinned")]
    assert all(c["flex"] and c["minWidth"] for c in flexible)
    assert overview.QUEUE_WIDTH + sum(c["minWidth"] for c in flexible) <= 1315
    assert overview.grid().dashGridOptions["paginationPageSize"] == 50


def test_numbers_show_three_significant_digits() -> None:
    leaves = {c["field"]: c for c in _leaves(overview.column_defs())}
    formatter = leaves["arrival_rate_per_s"]["valueFormatter"]["function"]
    # the cell shows the text the one formatter wrote for it (models.formatting)
    assert "params.data.arrival_rate_per_s_text" in formatter
    rows = overview.overview_rows(Snapshot(at=0.0, window_s=300.0, source="t", queues=(
        QueueSnapshot(queue="q", arrival_rate_per_s=16.003, utilization=0.8985,
                      workers=4.0),)))
    assert rows[0]["arrival_rate_per_s_text"] == "16"
    assert rows[0]["utilization_pct_text"] == "90 %"
    assert rows[0]["workers_text"] == "4"
    assert leaves["arrival_rate_per_s"]["filter"] == "agNumberColumnFilter"
    # a p95 sorts on its number but shows what its bucket supports
    p95 = leaves["queue_wait_p95_s"]
    assert p95["filter"] == "agNumberColumnFilter"
    assert p95["valueFormatter"]["function"] == ("params.data ? params.data.queue_wait_p95_text"
                                                 " : ''")
    assert leaves["queue_name"]["floatingFilter"] is True


def test_load_overview_from_the_demo() -> None:
    ctx = AppContext(source=DemoSource(seed=0))
    rows, summary, error = overview.load_overview(ctx)
    assert error == ""
    assert len(rows) == len(DemoSource(seed=0).queue_names)
    assert summary.startswith(f"{len(rows)} queues from demo")
    assert all(r["queue_href"] == overview.queue_href(r["queue_name"]) for r in rows)


class _DownSource:
    name = "http://prom:9090"

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        raise PrometheusUnreachable("connection refused by http://prom:9090")

    def range(self, *args: object, **kwargs: object) -> object:
        raise PrometheusUnreachable("connection refused by http://prom:9090 (range)")


def test_unavailable_source_is_a_sentence_not_a_traceback() -> None:
    rows, _, error = overview.load_overview(AppContext(source=_DownSource()))  # type: ignore[arg-type]
    assert rows == []
    assert error == "Could not read the queues: connection refused by http://prom:9090"


class _MeetingSource(DemoSource):
    """A demo whose snapshot answers only once the range read has begun: read one after the
    other, the snapshot would give up waiting."""

    def __init__(self) -> None:
        super().__init__(seed=0)
        self.range_begun = threading.Event()
        self.met = False

    def snapshot(self, at: float, window_s: float, queues: Sequence[str] | None = None
                 ) -> Snapshot:
        self.met = self.range_begun.wait(timeout=10.0)
        return super().snapshot(at, window_s, queues)

    def range(self, *args: Any, **kwargs: Any) -> Any:
        self.range_begun.set()
        return super().range(*args, **kwargs)


def test_the_snapshot_and_the_range_read_are_made_at_once() -> None:
    """The refresh waits for the slower of its two reads, not for their sum: the range read is
    under way while the snapshot is read — and the page is what the sequential reads give."""
    met = _MeetingSource()
    rows, summary, error = overview.load_overview(AppContext(source=met), now=AT_DEMO)
    assert met.met
    alone = overview.load_overview(AppContext(source=DemoSource(seed=0)), now=AT_DEMO)
    assert (rows, summary, error) == alone


def test_500_queue_rows_build_quickly() -> None:
    source = DemoSource(seed=0, queues=500)
    snap = source.snapshot(time.time(), 300.0)
    rows = overview.overview_rows(snap)
    assert len(rows) == 500


def test_p95_cells_show_the_bucket_range() -> None:
    # the demo's queue waits sit in decade buckets: the cell says the range, not a point
    rows, _, _ = overview.load_overview(AppContext(source=DemoSource(seed=0)), now=AT_DEMO)
    by = {r["queue_name"]: r for r in rows}
    snap = DemoSource(seed=0).snapshot(AT_DEMO, 300.0)
    secret = next(q for q in snap.queues if q.queue == "secret")
    lo, hi = secret.quantile_bounds["queue_wait_p95_s"]
    assert hi / lo == pytest.approx(10)  # a decade bucket
    assert by["secret"]["queue_wait_p95_text"] == snapshot_quantile_text(
        secret, "queue_wait_p95_s", compact=True)
    assert "–" in by["secret"]["queue_wait_p95_text"]
