"""The queue lab in real headless Chromium: the seed's two experiments."""

from __future__ import annotations

import pytest

from tests.support.browser import Browser

pytestmark = pytest.mark.browser


def _reset_with(browser: Browser, lam: str, mu: str, q0: str) -> None:
    browser.set_input("lab-arrival-rate", lam)
    browser.set_input("lab-service-rate", mu)
    browser.set_input("lab-initial-backlog", q0)
    browser.click("lab-reset")
    browser.wait_text("lab-time", "0")
    browser.wait_text("lab-backlog", q0)


def test_growing_queue_two_steps(browser: Browser) -> None:
    browser.open("/lab")
    browser.find("lab-reset")
    _reset_with(browser, "4", "3", "4")
    browser.wait_for(lambda: "4 + t" in browser.text("lab-prediction"),
                     what="the prediction 'backlog 4 + t'")
    browser.click("lab-step")
    browser.wait_text("lab-time", "1")
    browser.click("lab-step")
    browser.wait_text("lab-time", "2")
    assert browser.text("lab-backlog") == "6"
    assert "4 + t" in browser.text("lab-prediction")
    assert "unstable" in browser.text("lab-mm1")
    browser.wait_for(lambda: browser.count_charts() >= 1, what="the lab chart")


def test_stable_queue_plays_to_empty_at_t4(browser: Browser) -> None:
    browser.open("/lab")
    browser.find("lab-reset")
    _reset_with(browser, "2", "3", "4")
    assert browser.text("lab-prediction") == "clears at t = 4"
    browser.click("lab-play")
    browser.wait_text("lab-play", "Pause", timeout=5)
    browser.wait_text("lab-backlog", "0", timeout=15)
    assert browser.text("lab-time") == "4"
    # Play pauses by itself once the stable queue is empty: the clock stays at 4
    browser.wait_text("lab-play", "Play", timeout=5)
    assert browser.text("lab-time") == "4"
    assert "1/(μ − λ) = 1 time units" in browser.text("lab-mm1")
    browser.wait_for(lambda: browser.count_charts() >= 1, what="the lab chart")
    browser.screenshot("lab")
