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
    # the advisor's verdict card: visible, replicaset's add_workers verdict with its evidence
    card = browser.wait_for(
        lambda: browser.driver.find_elements(By.CSS_SELECTOR,
                                             "#queue-verdicts .ql-kind-add_workers") or None,
        what="the advisor's verdict card")[0]
    assert card.is_displayed()
    card_text = browser.text("queue-verdicts")
    assert "Advisor: will more workers help?" in card_text
    assert "add_workers" in card_text
    assert "Recommendation: add workers" in card_text
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
