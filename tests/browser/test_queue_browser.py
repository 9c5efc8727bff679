"""The queue page in real headless Chromium: opened from the overview, charts drawn."""

from __future__ import annotations

import pytest

from dashboard.pages.queue import GRAPH_IDS
from tests.support.browser import Browser

pytestmark = pytest.mark.browser


def test_clicking_a_queue_opens_its_page_with_charts(browser: Browser) -> None:
    from selenium.webdriver.common.by import By

    browser.open("/")
    browser.find("overview-table")
    browser.open_queue_from_overview("replicaset", charts=len(GRAPH_IDS), timeout=20)
    assert browser.text("queue-message") == ""
    assert browser.text("queue-fluid").startswith("Fluid view")
    assert "M/M/c model" in browser.text("queue-model-fit")
    assert "queue age" in browser.text("queue-measures")
    # the plan card: visible, with replicaset's add_workers verdict folded inside it
    card = browser.wait_for(
        lambda: browser.driver.find_elements(By.CSS_SELECTOR, "#queue-verdicts #plan-card")
        or None, what="the capacity plan card")[0]
    assert card.is_displayed()
    assert browser.driver.find_elements(By.CSS_SELECTOR, "#plan-card .ql-kind-add_workers")
    card_text = browser.text("queue-verdicts")
    assert "Capacity plan: will more workers help?" in card_text
    assert browser.text("plan-headline").startswith("More workers will help: 4 → ")
    assert browser.text("plan-workers").startswith("4 → ")
    assert browser.text("plan-binding-limit") == "workers"
    assert browser.text("plan-confidence").endswith(" %")
    assert "add_workers" in card_text  # the verdict id, as a tag
    assert "What to do, best first" in card_text
    assert "<" not in card_text  # text only, no markup leaked into the page
    browser.driver.execute_script(
        "document.getElementById('queue-verdicts').scrollIntoView({block: 'start'});")
    browser.screenshot("queue")


def test_unknown_queue_shows_a_message(browser: Browser) -> None:
    browser.open("/queue/no-such%3Cqueue%3E")
    browser.find("queue-message")
    browser.wait_for(lambda: "There is no queue named" in browser.text("queue-message"),
                     what="the unknown-queue message")
    assert "“no-such<queue>”" in browser.text("queue-message")  # shown literally


def _trace_points(browser: Browser, graph_id: str) -> dict[str, int]:
    """{trace name: points drawn} of a Plotly chart in the page."""
    counts = browser.driver.execute_script(
        "const g = document.querySelector('#' + arguments[0] + ' .js-plotly-plot');"
        "if (!g || !g.data) return null;"
        "const out = {}; for (const t of g.data) { out[t.name] = (t.x || []).length; }"
        "return out;", graph_id)
    return dict(counts or {})


def test_plan_card_draws_measured_points_and_checks_the_change(browser: Browser) -> None:
    from dashboard.plan_figures import MEASURED_NAME

    # the demo's deployment queue runs 5 and 3 workers in turn, 45 minutes each
    browser.open("/queue/deployment")
    browser.find("plan-card", timeout=30)
    # a queue that keeps up reads its headroom to the nearest limit, not a bare "healthy"
    headline = browser.text("plan-headline")
    assert headline.startswith("Healthy: headroom ")
    assert headline.endswith("× to the workers")
    points = browser.wait_for(
        lambda: _trace_points(browser, "plan-decisive-graph") or None, timeout=30,
        what="the decisive chart")
    # the measured (busy workers, throughput) points of the 2 h range, and the lines
    assert points[MEASURED_NAME] >= 100
    assert points["linear scaling c / E[S]"] == 2
    assert points["plan: throughput at the design demand"] >= 8
    wait = _trace_points(browser, "plan-wait-graph")
    assert wait["p95 wait"] >= 4
    change = browser.find("plan-change")
    assert change.is_displayed()
    text = browser.text("plan-change")
    assert "Check the change" in text
    assert ("5 → 3" in text) or ("3 → 5" in text)
    assert "predicted" in text
    assert "measured" in text
    browser.driver.execute_script(
        "document.getElementById('plan-card').scrollIntoView({block: 'start'});")
    browser.screenshot("plan-card")


def test_plan_card_keeps_hostile_names_as_text() -> None:
    from urllib.parse import quote

    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    from dashboard.app import create_app
    from tests.dashboard.test_report import SCRIPT, HostileSource
    from tests.support.browser import browse

    with browse(create_app(HostileSource(), refresh_s=15, at=1_700_000_000.0)) as b:
        b.open("/queue/" + quote(SCRIPT, safe=""))
        b.find("plan-card", timeout=30)
        assert SCRIPT in b.text("queue-name")  # shown literally
        assert "Capacity plan" in b.text("plan-card")
        # an injected <script> would have raised an alert by now
        with pytest.raises(NoAlertPresentException):
            _ = b.driver.switch_to.alert.text
        assert not b.driver.find_elements(By.CSS_SELECTOR, "#plan-card script")
