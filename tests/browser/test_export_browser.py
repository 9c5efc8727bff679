"""The "Export report" control in real headless Chromium: the report downloads, and the
downloaded HTML opens from file:// (offline) with its charts drawn."""

from __future__ import annotations

import csv
import time
from pathlib import Path

import pytest

from collectors.demo import DemoSource
from tests.support.browser import Browser

pytestmark = pytest.mark.browser


def _allow_downloads(browser: Browser, directory: Path) -> None:
    params = {"behavior": "allow", "downloadPath": str(directory)}
    try:
        browser.driver.execute_cdp_cmd("Browser.setDownloadBehavior", params)
    except Exception:  # older Chromium: only the page-level command
        browser.driver.execute_cdp_cmd("Page.setDownloadBehavior", params)


def _downloaded(browser: Browser, directory: Path, suffix: str, after: float) -> Path:
    def done() -> Path | None:
        files = [p for p in directory.iterdir() if p.suffix == suffix
                 and p.stat().st_mtime >= after - 1]
        return files[0] if files else None

    path: Path = browser.wait_for(done, timeout=60, what=f"a {suffix} download")
    return path


def _choose_format(browser: Browser, value: str) -> None:
    from selenium.webdriver.common.by import By

    browser.find("export-format")
    radio = browser.driver.find_element(By.CSS_SELECTOR, f"#export-format input[value='{value}']")
    radio.click()
    browser.wait_for(lambda: radio.is_selected(), what=f"{value} to be chosen")


def test_export_downloads_reports_and_the_html_opens_offline(
    browser: Browser, tmp_path: Path
) -> None:
    names = DemoSource(seed=0).queue_names
    _allow_downloads(browser, tmp_path)
    browser.open("/")
    browser.find("overview-table")

    _choose_format(browser, "csv")
    start = time.time()
    browser.click("export-button")
    csv_file = _downloaded(browser, tmp_path, ".csv", start)
    rows = browser.wait_for(
        lambda: list(csv.DictReader(csv_file.read_text(encoding="utf-8").splitlines())),
        what="the CSV to be written")
    assert sorted(r["queue"] for r in rows) == sorted(names)
    browser.wait_text("export-status", f"{len(names)} queues exported.")

    _choose_format(browser, "html")
    start = time.time()
    browser.click("export-button")
    html_file = _downloaded(browser, tmp_path, ".html", start)
    text = browser.wait_for(lambda: (t := html_file.read_text(encoding="utf-8")).endswith(
        "</html>\n") and t, what="the HTML report to be written")
    assert all(name in text for name in names)

    browser.driver.get(html_file.as_uri())
    browser.find("fleet-summary")
    browser.wait_for(lambda: browser.count_charts() == 2 * len(names), timeout=30,
                     what=f"{2 * len(names)} drawn charts")
    assert browser.text("report-source") == "demo"
    browser.screenshot("report")
