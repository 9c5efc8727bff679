"""The dashboard on a REAL Prometheus (the collectors' backfilled fixture) in real headless
Chromium: the overview lists the fixture's queues, names shown as text (quote and backslash
included), and a queue page draws its charts.

The fixture's data lie in the past (2024-01-01), so the app is built with a fixed evaluation
time ``at=AT`` (``queuelens serve --at``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from collectors.connect import open_source
from dashboard.app import create_app
from dashboard.pages.overview import queue_href
from dashboard.pages.queue import GRAPH_IDS
from tests.support.browser import Browser, browse
from tests.support.prometheus import PrometheusProcess
from tests.support.workqueue_om import AT, WEIRD, iter_queue_names

pytestmark = [pytest.mark.browser, pytest.mark.prometheus]


@pytest.fixture(scope="module")
def prom_browser(backfilled_prometheus: PrometheusProcess) -> Iterator[Browser]:
    source = open_source(backfilled_prometheus.url, False, env={})
    with browse(create_app(source, refresh_s=15, at=float(AT))) as browser:
        yield browser


def _links(browser: Browser) -> dict[str, str]:
    from selenium.webdriver.common.by import By

    anchors = browser.driver.find_elements(By.CSS_SELECTOR, "#overview-table a")
    return {a.text: a.get_attribute("href") for a in anchors}


def test_overview_lists_the_prometheus_queues_and_opens_one(
    prom_browser: Browser, backfilled_prometheus: PrometheusProcess
) -> None:

    browser = prom_browser
    names = sorted(iter_queue_names())
    assert WEIRD in names
    browser.open("/")
    browser.find("overview-table")
    found = browser.wait_for(lambda: (links := _links(browser)) and len(links) == len(names)
                             and links, timeout=30, what=f"{len(names)} queue links")
    assert sorted(found) == names  # 'cfg"map\\sync' shown literally, as text
    assert found[WEIRD].endswith(queue_href(WEIRD))
    assert browser.text("nav-source") == f"source: {backfilled_prometheus.url}"
    # the only note is the fixture's truth: 6 % of cfg"map\sync's waits exceed the top bucket
    assert "Could not read" not in browser.text("overview-error")
    assert "queue_wait_p95_s is a lower bound" in browser.text("overview-error")
    summary = browser.text("overview-summary")
    assert summary.startswith(f"{len(names)} queues from {backfilled_prometheus.url}")
    assert " at 00:50:00 UTC " in summary  # read at the fixture's AT, not now
    browser.screenshot("overview-prometheus")

    browser.open_queue_from_overview("replicaset", charts=len(GRAPH_IDS))
    assert browser.text("queue-message") == ""


def test_the_weird_queue_page_shows_its_name_as_text(prom_browser: Browser) -> None:
    browser = prom_browser
    browser.open(queue_href(WEIRD))
    browser.wait_text("queue-name", WEIRD)
    browser.wait_for(lambda: browser.count_charts() >= len(GRAPH_IDS), timeout=30,
                     what=f"{len(GRAPH_IDS)} drawn charts")
    assert browser.text("queue-message") == ""
