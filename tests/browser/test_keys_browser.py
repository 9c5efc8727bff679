"""The key trace page in real headless Chromium: the seed's trace, stepped through."""

from __future__ import annotations

import pytest

from tests.support.browser import Browser

pytestmark = pytest.mark.browser

SPEC = "add A; add A; get; add A; done A; get; done A"


def _enter_trace(browser: Browser, trace: str) -> None:
    from selenium.webdriver.common.keys import Keys

    browser.set_input("keys-trace", trace)
    browser.find("keys-trace").send_keys(Keys.ENTER)  # the input is debounced: Enter runs it


def _step_to(browser: Browser, position: int, total: int, op: str) -> None:
    browser.click("keys-step")
    browser.wait_text("keys-position", f"step {position} of {total}: {op}")


def test_spec_trace_coalesces_then_requeues_at_done(browser: Browser) -> None:
    browser.open("/keys")
    # the page opens on the first example (coalescing while waiting: 8 steps)
    browser.wait_text("keys-position", "step 0 of 8 (start)")
    _enter_trace(browser, SPEC)
    browser.wait_text("keys-position", "step 0 of 7 (start)")
    assert browser.text("keys-queue") == "empty"

    _step_to(browser, 1, 7, "add A")
    assert browser.text("keys-note") == "A queued"
    assert browser.text("keys-queue") == "A"
    _step_to(browser, 2, 7, "add A")
    assert "coalesced" in browser.text("keys-note")
    assert browser.text("keys-queue") == "A"  # still one entry
    _step_to(browser, 3, 7, "get")
    assert browser.text("keys-processing") == "A"
    assert browser.text("keys-queue") == "empty"
    _step_to(browser, 4, 7, "add A")
    assert browser.text("keys-dirty") == "A"
    assert browser.text("keys-queue") == "empty"  # not queued while processing
    _step_to(browser, 5, 7, "done A")
    assert browser.text("keys-queue") == "A"  # back in the queue at done
    assert browser.text("keys-processing") == "empty"
    assert "queued again" in browser.text("keys-note")
    browser.wait_for(lambda: browser.count_charts() >= 1, what="the key chart")
    browser.wait_for(
        lambda: len(browser.driver.find_elements("css selector", "#keys-table tbody tr")) == 5,
        what="five rows in the steps table",
    )
    browser.screenshot("keys")

    browser.click("keys-back")
    browser.wait_text("keys-position", "step 4 of 7: add A")
    assert browser.text("keys-queue") == "empty"
    assert browser.text("keys-processing") == "A"


def test_play_runs_to_the_end_and_pauses(browser: Browser) -> None:
    browser.open("/keys")
    browser.wait_text("keys-position", "step 0 of 8 (start)")
    _enter_trace(browser, SPEC)
    browser.wait_text("keys-position", "step 0 of 7 (start)")
    browser.click("keys-play")
    browser.wait_text("keys-play", "Pause", timeout=5)
    browser.wait_text("keys-position", "step 7 of 7: done A", timeout=15)
    browser.wait_text("keys-play", "Play", timeout=5)
    assert browser.text("keys-note") == "A finished"
    assert browser.text("keys-queue") == "empty"


def test_bad_trace_shows_the_models_sentence(browser: Browser) -> None:
    browser.open("/keys")
    browser.wait_text("keys-position", "step 0 of 8 (start)")
    _enter_trace(browser, "add A; done B")
    browser.wait_for(lambda: "step 2" in browser.text("keys-error"), what="the inline error")
    error = browser.text("keys-error")
    assert "not being processed" in error
    assert "Traceback" not in browser.driver.page_source
    assert browser.text("keys-position") == "no trace loaded"
