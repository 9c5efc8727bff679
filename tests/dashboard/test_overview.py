"""Fleet overview rows, the advisor's status badges and link escaping (no browser)."""

from __future__ import annotations

import time

import pytest

from collectors.cache import CachedSource
from collectors.demo import DemoSource
from collectors.errors import PrometheusUnreachable
from collectors.types import QueueSnapshot, Snapshot
from dashboard.context import AppContext
from dashboard.pages import overview
from models import fleet as fl


def _snap(*queues: QueueSnapshot) -> Snapshot:
    return Snapshot(at=0.0, window_s=300.0, source="test", queues=list(queues))


AT_DEMO = fl.EPOCH_S + 40 * 86400 + 14 * 3600


def test_badges_are_the_advisors_verdicts_on_the_demo() -> None:
    src = CachedSource(DemoSource(seed=0))
    rows, summary, error = overview.load_overview(AppContext(source=src), now=AT_DEMO)
    assert error == ""
    assert src.fetches == 2  # the advisor shares the sparklines' range read
    by = {r["queue_name"]: r for r in rows}
    assert by["replicaset"]["status"].split(", ")[0] == "add_workers"
    assert by["dnsrecord"]["status"].split(", ")[0] == "retry_storm"
    assert by["ingress"]["status"].split(", ")[0] == "hot_key"
    assert by["deployment"]["status"] == "healthy"
    assert by["deployment"]["severity"] == "ok"
    assert by["dnsrecord"]["severity"] == "critical"
    # most severe first; the tooltip carries the verdict summary as plain text
    ranks = [overview.SEVERITY_ORDER.index(r["severity"]) for r in rows]
    assert ranks == sorted(ranks)
    tips = overview.status_tooltips(rows)
    assert tips[0]["status"]["type"] == "text"
    assert "fail" in tips[[r["queue_name"] for r in rows].index("dnsrecord")]["status"]["value"]
    assert "critical" in summary
    assert "advisor verdicts over the last 1 h" in summary


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
    advice = overview.fleet_advice(snap, None, 1.0)
    rows = overview.overview_rows(snap, {}, advice)
    assert rows[0]["status"].startswith("insufficient_data")


@pytest.mark.parametrize(
    ("name", "href"),
    [("deployment", "/queue/deployment"),
     ("kube-system/ns", "/queue/kube-system%2Fns"),
     ('x"><script>', "/queue/x%22%3E%3Cscript%3E"),
     ("javascript:alert(1)", "/queue/javascript%3Aalert%281%29")],
)
def test_queue_href_is_percent_encoded(name: str, href: str) -> None:
    assert overview.queue_href(name) == href


def test_markdown_link_cannot_inject() -> None:
    link = overview.markdown_link("a](javascript:alert(1)) <b>x</b>")
    text, _, target = link.partition("](/queue/")
    # the only unescaped "](" is the real one; markup is escaped; target is encoded
    assert "\\]" in text
    assert "\\<b\\>" in text
    assert target.startswith("a%5D%28javascript%3A")
    assert overview.markdown_link("kube-system_x") == "[kube-system_x](/queue/kube-system_x)"


def test_load_overview_from_the_demo() -> None:
    ctx = AppContext(source=DemoSource(seed=0))
    rows, summary, error = overview.load_overview(ctx)
    assert error == ""
    assert len(rows) == len(DemoSource(seed=0).queue_names)
    assert summary.startswith(f"{len(rows)} queues from demo")
    assert all(r["queue"].startswith("[") for r in rows)


class _DownSource:
    name = "http://prom:9090"

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        raise PrometheusUnreachable("connection refused by http://prom:9090")

    def range(self, *args: object, **kwargs: object) -> object:
        raise AssertionError


def test_unavailable_source_is_a_sentence_not_a_traceback() -> None:
    rows, _, error = overview.load_overview(AppContext(source=_DownSource()))  # type: ignore[arg-type]
    assert rows == []
    assert error == "Could not read the queues: connection refused by http://prom:9090"


def test_500_queue_rows_build_quickly() -> None:
    source = DemoSource(seed=0, queues=500)
    snap = source.snapshot(time.time(), 300.0)
    rows = overview.overview_rows(snap)
    assert len(rows) == 500
