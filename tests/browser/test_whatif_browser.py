"""The what-if page in real headless Chromium: the slider drives the recommendation."""

from __future__ import annotations

import pytest

from tests.support.browser import Browser

pytestmark = pytest.mark.browser


def _recommendation(browser: Browser) -> str:
    return browser.text("whatif-recommendation")


def test_moving_the_worker_slider_changes_the_recommendation(browser: Browser) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.open("/whatif?queue=replicaset")
    browser.find("whatif-workers")
    first = browser.wait_for(
        lambda: (t := _recommendation(browser)).startswith("Recommended: 6 workers") and t,
        timeout=20, what="the measured queue's recommendation")
    # the SLO alone needs 5; the advisor's utilization design (ρ ≤ 0.7) makes it 6: the page
    # opened on the queue gives the plan's count and rule
    assert "the capacity plan's count" in first
    assert "utilization at or below 70 %" in first
    assert "That is 2 more than the 4 now." in first
    browser.wait_for(lambda: browser.count_charts() >= 3, what="the what-if charts")
    browser.wait_for(lambda: "More workers will help: 4 → 6. Recommended: 6 workers"
                     in browser.text("whatif-advice"), what="the plan's recommendation")
    browser.driver.execute_script("window.scrollTo(0, 430);")
    browser.screenshot("whatif")
    # move the range's upper handle from 16 down to 4 with the keyboard (as a user can)
    thumb = browser.driver.find_element(
        By.CSS_SELECTOR, "#whatif-workers [role=slider][aria-label=Maximum]")
    browser.driver.execute_script("arguments[0].focus();", thumb)
    for _ in range(12):  # 16 → 4, one worker per key press
        thumb.send_keys(Keys.ARROW_LEFT)
    browser.wait_for(lambda: thumb.get_attribute("aria-valuenow") == "4",
                     what="the slider's upper handle at 4")
    changed = browser.wait_for(
        lambda: "c=1..4" in (t := _recommendation(browser)) and t,
        what="the recommendation for workers 1–4")
    # 4 workers are stable (c·μ = 16/s > λ) but cannot meet the p95 SLO: the page says so
    assert changed != first
    assert changed.startswith("Recommended: 4 workers — the SLO (p95 wait ≤ 1 s) cannot be met")


def test_simulate_shows_simulated_vs_formula(browser: Browser) -> None:
    browser.open("/whatif?queue=replicaset")
    browser.wait_for(lambda: _recommendation(browser).startswith("Recommended"), timeout=20,
                     what="a recommendation")
    browser.click("whatif-simulate")
    text = browser.wait_for(
        lambda: (t := browser.text("whatif-sim-result")).startswith("Simulated") and t,
        timeout=30, what="the simulation result")
    assert "vs formula" in text
    assert "at c = 6" in text  # the recommended count (as advise)
