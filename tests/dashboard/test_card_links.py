"""Every PromQL on the card links to the source's own graph page (issue 21), and only when
the source is an http(s) URL: the link's expression is the PromQL itself, whole."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from dashboard.card import graph_href

PROMQL = 'sum by (name) (rate(workqueue_adds_total{name="a&b #1"}[5m])) / on (name) 2'


@pytest.mark.parametrize("source", ["http://prometheus:9090", "http://prometheus:9090/",
                                    "https://thanos.example/query/"])
def test_the_link_carries_the_promql_whole(source: str) -> None:
    href = graph_href(source, PROMQL)
    assert href is not None
    parts = urlsplit(href)
    assert parts.path.endswith("/graph")
    assert not parts.path.startswith("//")
    assert "//graph" not in parts.path
    assert parse_qs(parts.query) == {"g0.expr": [PROMQL], "g0.tab": ["0"]}


@pytest.mark.parametrize("source", ["demo", "", "javascript:alert(1)", "file:///etc/passwd",
                                    "http://"])
def test_no_link_without_an_http_source(source: str) -> None:
    assert graph_href(source, PROMQL) is None
