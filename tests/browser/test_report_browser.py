"""The HTML capacity report in real headless Chromium, opened from file:// (offline): the
charts' data is embedded once and a queue's charts are drawn when its section is opened
(scrolled into view), not all at load; hostile queue names stay text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collectors.demo import DemoSource
from dashboard.report import build_report, render
from models.settings import AnalysisSettings
from tests.dashboard.test_report import HostileSource
from tests.support.browser import Browser, chrome_driver

pytestmark = pytest.mark.browser

AT = 1_700_000_000.0
QUEUES = 40

_DRAWN = """
return Array.from(document.querySelectorAll('.ql-chart'))
  .filter(e => e.querySelector('.main-svg')).map(e => e.id);
"""


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    with chrome_driver() as d:
        yield d


def _open(driver: Any, tmp_path: Path, html: str) -> Browser:
    path = tmp_path / "report.html"
    path.write_text(html, encoding="utf-8")
    page = Browser(driver, "")
    driver.get(path.as_uri())
    page.find("fleet-summary")
    return page


def _drawn(page: Browser) -> list[str]:
    ids: list[str] = page.driver.execute_script(_DRAWN)
    return ids


def _charts_of(i: int) -> list[str]:
    return [f"queue-{i}-chart-0", f"queue-{i}-chart-1"]


@pytest.fixture(scope="module")
def demo_html() -> str:
    return render(build_report(DemoSource(seed=0, queues=QUEUES), AT,
                               AnalysisSettings(range_s=6 * 3600)), "html")


def test_opening_a_queue_section_draws_its_charts(
    driver: Any, demo_html: str, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    page = _open(driver, tmp_path, demo_html)
    last = QUEUES - 1
    # nothing below the fleet summary is drawn yet: the last queue is far out of view
    assert not set(_charts_of(last)) & set(_drawn(page))
    driver.find_element(By.CSS_SELECTOR, f'#fleet-summary a[href="#queue-{last}"]').click()
    page.wait_for(lambda: set(_charts_of(last)) <= set(_drawn(page)), timeout=20,
                  what=f"queue {last}'s two charts to be drawn")
    section = driver.find_element(By.ID, f"queue-{last}")
    assert driver.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return r.top < innerHeight && "
        "r.bottom > 0;", section)
    rates = driver.find_element(By.ID, f"queue-{last}-chart-0")
    assert "Is work arriving faster than it can be done?" in rates.text
    assert len(rates.find_elements(By.CSS_SELECTOR, ".scatterlayer .trace")) == 3
    wait = driver.find_element(By.ID, f"queue-{last}-chart-1")
    assert "How long will items wait with c workers?" in wait.text
    # on demand: only the charts near what was looked at, not the whole report
    drawn = _drawn(page)
    assert len(drawn) < 2 * QUEUES // 2, drawn
    assert not set(_charts_of(0)) & set(drawn)


def test_every_chart_is_drawn_before_printing(
    driver: Any, demo_html: str, tmp_path: Path
) -> None:
    page = _open(driver, tmp_path, demo_html)
    assert len(_drawn(page)) < 2 * QUEUES
    driver.execute_script("window.dispatchEvent(new Event('beforeprint'));")
    page.wait_for(lambda: len(_drawn(page)) == 2 * QUEUES, timeout=60,
                  what=f"all {2 * QUEUES} charts to be drawn")


BREAKOUTS = ("</script><script>window.__pwned = 1</script>", "<!--<script>",
             "<img src=x onerror='window.__pwned = 2'>")


def test_breakout_queue_names_stay_text_and_charts_still_draw(
    driver: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    report = build_report(HostileSource(BREAKOUTS), AT, AnalysisSettings(range_s=3600))
    page = _open(driver, tmp_path, render(report, "html"))
    assert driver.execute_script("return window.__pwned === undefined;")
    assert len(driver.find_elements(By.TAG_NAME, "script")) == 3
    headings = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "section[id^=queue-] h2")]
    for name in BREAKOUTS:
        assert any(h.startswith(name + " ") for h in headings), (name, headings)
    for i in range(len(BREAKOUTS)):
        # the charts follow the queue's plan and verdicts: bring them into view to draw them
        driver.execute_script(f"document.querySelector('#queue-{i} .charts').scrollIntoView();")
        page.wait_for(lambda i=i: set(_charts_of(i)) <= set(_drawn(page)), timeout=20,
                      what=f"queue {i}'s charts to be drawn")
    assert driver.execute_script("return window.__pwned === undefined;")
