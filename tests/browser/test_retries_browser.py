"""The retry storm page in real headless Chromium: changing the jitter redraws the charts."""

from __future__ import annotations

import pytest

from tests.support.browser import Browser

pytestmark = pytest.mark.browser


def _legend(browser: Browser, graph_id: str) -> list[str]:
    elements = browser.driver.find_elements("css selector", f"#{graph_id} .legendtext")
    return [str(e.text) for e in elements]


def test_changing_jitter_redraws_the_storm(browser: Browser) -> None:
    browser.open("/retries")
    # On a clean clone the first storm compiles the numba loop in the server (10–15 s, more
    # while the machine is busy), so the first figures get a generous deadline.
    browser.wait_for(lambda: browser.count_charts() >= 4, timeout=60, what="the four charts")
    browser.wait_for(
        lambda: "no jitter, no bucket (your policy)" in _legend(browser, "retries-chart"),
        timeout=60, what="the default policy highlighted",
    )
    assert "full jitter, no bucket" in _legend(browser, "retries-chart")
    assert browser.text("retries-retries") == "14,000"  # 1000 keys × 14 failures (60 s outage)
    before = browser.text("retries-peak")

    browser.driver.find_element("css selector", "#retries-jitter input[value='equal']").click()
    browser.wait_for(
        lambda: "equal jitter, no bucket (your policy)" in _legend(browser, "retries-chart"),
        timeout=30, what="the chart redrawn with equal jitter",
    )
    assert "full jitter, no bucket" not in _legend(browser, "retries-chart")
    assert "equal jitter" in browser.text("retries-policy")
    assert browser.text("retries-peak") != before
    assert browser.text("retries-error") == ""
    browser.driver.execute_script(
        "document.getElementById('retries-summary').scrollIntoView({block: 'start'});")
    browser.screenshot("retries")


def test_bucket_on_and_bad_input(browser: Browser) -> None:
    browser.open("/retries")
    browser.wait_for(lambda: browser.count_charts() >= 4, timeout=30, what="the four charts")
    browser.driver.find_element("css selector", "#retries-bucket input[value='on']").click()
    browser.wait_for(
        lambda: "no jitter, bucket (your policy)" in _legend(browser, "retries-chart"),
        timeout=30, what="the bucket variant highlighted",
    )
    from selenium.webdriver.common.keys import Keys

    browser.set_input("retries-horizon", "30")
    browser.find("retries-horizon").send_keys(Keys.TAB)
    browser.wait_for(lambda: "must be longer than the outage" in browser.text("retries-error"),
                     what="the horizon error")
    assert "Traceback" not in browser.driver.page_source
