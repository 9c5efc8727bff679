"""Fleet overview rows, status badges and link escaping (no browser)."""

from __future__ import annotations

import time

import pytest

from collectors.demo import DemoSource
from collectors.errors import PrometheusUnreachable
from collectors.types import QueueSnapshot, Snapshot
from dashboard.context import AppContext
from dashboard.pages import overview


def _snap(*queues: QueueSnapshot) -> Snapshot:
    return Snapshot(at=0.0, window_s=300.0, source="test", queues=list(queues))


@pytest.mark.parametrize(
    ("fields", "status"),
    [
        ({}, "no data"),
        ({"arrival_rate_per_s": 10.0, "throughput_per_s": 9.0, "utilization": 1.0},
         "falling behind"),
        ({"arrival_rate_per_s": 10.0, "throughput_per_s": 10.0, "utilization": 0.95},
         "saturated"),
        ({"arrival_rate_per_s": 10.0, "throughput_per_s": 10.0, "utilization": 0.5,
          "errors_per_s": 1.0}, "errors"),
        ({"arrival_rate_per_s": 10.0, "throughput_per_s": 10.0, "utilization": 0.8}, "busy"),
        ({"arrival_rate_per_s": 10.0, "throughput_per_s": 10.0, "utilization": 0.3}, "ok"),
    ],
)
def test_queue_status(fields: dict[str, float], status: str) -> None:
    assert overview.queue_status(QueueSnapshot(queue="q", **fields)) == status  # type: ignore[arg-type]


def test_rows_worst_first_and_json_safe() -> None:
    rows = overview.overview_rows(_snap(
        QueueSnapshot(queue="b-ok", arrival_rate_per_s=1.0, throughput_per_s=1.0,
                      utilization=0.1234),
        QueueSnapshot(queue="a-none"),
        QueueSnapshot(queue="c-behind", arrival_rate_per_s=5.0, throughput_per_s=2.0,
                      utilization=1.0, queue_wait_p95_s=float("nan")),
    ))
    assert [r["queue_name"] for r in rows] == ["c-behind", "b-ok", "a-none"]
    assert rows[1]["utilization_pct"] == 12.3
    assert rows[0]["queue_wait_p95_s"] is None  # NaN never reaches the table
    assert rows[2]["arrival_rate_per_s"] is None


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
