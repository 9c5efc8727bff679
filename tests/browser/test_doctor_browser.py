"""The metric-contract doctor page in real headless Chromium, on the demo."""

from __future__ import annotations

import pytest

from tests.support.browser import Browser

pytestmark = pytest.mark.browser


def test_the_doctor_reports_every_process_of_the_demo(browser: Browser) -> None:
    browser.open("/doctor")
    browser.wait_for(lambda: "processes" in browser.text("doctor-summary"), timeout=60,
                     what="the doctor's summary")
    summary = browser.text("doctor-summary")
    assert "5 processes (5 controller-runtime)" in summary
    processes = browser.driver.find_elements("css selector", "[id^='doctor-process-']")
    assert len(processes) == 5
    # the whole report, folded parts included (a fix sits in a closed <details>)
    text = browser.driver.execute_script(
        "return document.getElementById('doctor-report').textContent")
    shown = browser.text("doctor-report")
    assert shown.startswith("What to fix first")  # the gaps lead, each once
    # true of the demo: its managers expose the request count, not the opt-in latency
    assert "rest_client_request_duration_seconds" in text
    assert "RegisterRESTClientMetrics" in text
    assert browser.text("doctor-error") == ""
    assert "Traceback" not in browser.driver.page_source
    browser.screenshot("doctor")
