"""The fleet overview in real headless Chromium (dash-ag-grid): demo queues listed in a grid
that fits a 1400 px window, sortable and filterable, names link to their pages, and hostile
queue names stay text."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterator, Sequence
from typing import Any

import pytest

from collectors.demo import DemoSource
from dashboard.pages.overview import SPARK_WIDTH, queue_href
from models.measurements import RangeData, Snapshot
from tests.support.browser import WINDOW, Browser, browse

pytestmark = pytest.mark.browser

_ROWS = """
return Array.from(document.querySelectorAll(
    '#overview-table .ag-pinned-left-cols-container .ag-row'))
  .sort((a, b) => Number(a.getAttribute('row-index')) - Number(b.getAttribute('row-index')))
  .map(r => r.innerText.trim());
"""

_FIT = """
const grid = document.getElementById('overview-table');
const view = grid.querySelector('.ag-center-cols-viewport');
return [view.scrollWidth, view.clientWidth, grid.getBoundingClientRect().right,
        window.innerWidth];
"""


def _links(browser: Browser) -> dict[str, str]:
    from selenium.webdriver.common.by import By

    anchors = browser.driver.find_elements(By.CSS_SELECTOR, "#overview-table a")
    return {a.text: a.get_attribute("href") for a in anchors}


def _rows(browser: Browser) -> list[str]:
    return list(browser.driver.execute_script(_ROWS))


def test_overview_grid_fits_sorts_filters_and_links_to_queue_pages(browser: Browser) -> None:
    from selenium.webdriver.common.by import By

    names = DemoSource(seed=0).queue_names
    browser.open("/")
    browser.find("overview-table")
    found = browser.wait_for(lambda: links if len(links := _links(browser)) == len(names)
                             else None, what=f"{len(names)} queue links")
    assert set(found) == set(names)
    assert found[names[0]].endswith(f"/queue/{names[0]}")
    driver = browser.driver

    # the default columns fit the 1400 px window: no horizontal scroll
    assert driver.get_window_size()["width"] == WINDOW[0]
    scroll_width, client_width, right, inner = driver.execute_script(_FIT)
    assert scroll_width <= client_width, (scroll_width, client_width)
    assert right <= inner
    groups = [e.text for e in driver.find_elements(
        By.CSS_SELECTOR, "#overview-table .ag-header-group-cell .ag-header-group-text")]
    assert {"Advice", "Demand", "Workers", "Backlog"} <= set(groups)

    # most severe first; the verdict cell has its severity's colour
    assert _rows(browser)[0] in {"dnsrecord", "replicaset"}  # the two critical queues
    status = driver.find_element(
        By.CSS_SELECTOR, '#overview-table .ag-row[row-id="dnsrecord"] .ag-cell[col-id="status"]')
    assert status.text.startswith("retry storm")
    assert status.value_of_css_property("background-color") == "rgba(179, 38, 30, 1)"

    # sparklines: 25 blocks each, and the shared scale stated under the grid
    sparks = [e.text for e in driver.find_elements(
        By.CSS_SELECTOR, '#overview-table .ag-center-cols-container .ag-cell[col-id="sparkline"]')]
    assert len(sparks) == len(names)
    assert all(len(s) == SPARK_WIDTH and set(s) <= set("▁▂▃▄▅▆▇█ ") for s in sparks)
    assert browser.text("overview-scale").startswith("Depth sparklines share one log scale")
    browser.screenshot("overview")

    # click a header to sort, again to reverse
    header = driver.find_element(
        By.CSS_SELECTOR, '#overview-table .ag-header-cell[col-id="queue_name"] '
                         '.ag-header-cell-label')
    header.click()
    browser.wait_for(lambda: _rows(browser) == sorted(names), what="rows sorted by name")
    header.click()
    browser.wait_for(lambda: _rows(browser) == sorted(names, reverse=True),
                     what="rows sorted by name, descending")
    # numbers filter from their header's filter button
    assert driver.find_elements(
        By.CSS_SELECTOR, '#overview-table .ag-header-cell[col-id="arrival_rate_per_s"] '
                         '.ag-header-cell-filter-button')
    # type in the name's floating filter
    box = driver.find_element(
        By.CSS_SELECTOR, "#overview-table .ag-pinned-left-header .ag-floating-filter input")
    box.send_keys("repl")
    browser.wait_for(lambda: _rows(browser) == ["replicaset"], what="only replicaset")
    for _ in "repl":
        box.send_keys("\b")
    browser.wait_for(lambda: len(_rows(browser)) == len(names), what="the filter cleared")

    driver.find_element(By.LINK_TEXT, names[0]).click()
    browser.wait_for(lambda: driver.current_url.endswith(f"/queue/{names[0]}"),
                     what="the queue page URL")
    browser.wait_text("queue-name", names[0])


HOSTILE = {"deployment": "<img src=x onerror=alert(1)>",
           "secret": "a](javascript:alert(1)) <b>bold</b>"}


class _Renamed:
    """The demo fleet with two queues renamed to hostile label values."""

    def __init__(self, renames: dict[str, str]) -> None:
        self.inner = DemoSource(seed=0)
        self.renames = renames

    @property
    def name(self) -> str:
        return self.inner.name

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        snap = self.inner.snapshot(at, window_s)
        queues = [dataclasses.replace(q, queue=self.renames.get(q.queue, q.queue))
                  for q in snap.queues]
        return dataclasses.replace(snap, queues=queues)

    def range(self, start: float, end: float, step_s: float,
              queues: Sequence[str] | None = None,
              signals: Collection[str] | None = None) -> RangeData:
        back = {v: k for k, v in self.renames.items()}
        asked = None if queues is None else [back.get(q, q) for q in queues]
        data = self.inner.range(start, end, step_s, asked, signals)
        return dataclasses.replace(
            data, queues=tuple(self.renames.get(q, q) for q in data.queues))


@pytest.fixture(scope="module")
def hostile_browser() -> Iterator[Browser]:
    from dashboard.app import create_app

    with browse(create_app(_Renamed(HOSTILE), refresh_s=15)) as browser:  # type: ignore[arg-type]
        yield browser


def test_hostile_queue_names_are_shown_as_text(hostile_browser: Browser) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    browser = hostile_browser
    browser.open("/")
    browser.find("overview-table")
    found: dict[str, Any] = browser.wait_for(
        lambda: links if set(HOSTILE.values()) <= set(links := _links(browser)) else None,
        what="the hostile names as link text")
    for name in HOSTILE.values():
        assert found[name].endswith(queue_href(name))  # the target stays on /queue/
    grid = browser.driver.find_element(By.ID, "overview-table")
    assert grid.find_elements(By.TAG_NAME, "img") == []  # no markup was made from a name
    assert grid.find_elements(By.TAG_NAME, "b") == []
    assert not [a for a in grid.find_elements(By.TAG_NAME, "a")
                if "javascript" in (a.get_attribute("href") or "").split("/queue/")[0]]
    with pytest.raises(NoAlertPresentException):
        browser.driver.switch_to.alert.text  # noqa: B018 - onerror=alert(1) never ran
