"""The fleet overview in real headless Chromium: demo queues listed, names link to pages."""

from __future__ import annotations

import pytest

from collectors.demo import DemoSource
from tests.support.browser import Browser

pytestmark = pytest.mark.browser


def test_overview_lists_demo_queues_and_links_to_their_pages(browser: Browser) -> None:
    from selenium.webdriver.common.by import By

    names = DemoSource(seed=0).queue_names
    browser.open("/")
    browser.find("overview-table")

    def links() -> dict[str, str]:
        anchors = browser.driver.find_elements(By.CSS_SELECTOR, "#overview-table a")
        return {a.text: a.get_attribute("href") for a in anchors}

    found = browser.wait_for(lambda: links() if len(links()) == len(names) else None,
                             what=f"{len(names)} queue links")
    assert set(found) == set(names)
    assert found[names[0]].endswith(f"/queue/{names[0]}")
    browser.screenshot("overview")
    browser.driver.find_element(By.LINK_TEXT, names[0]).click()
    browser.wait_for(lambda: browser.driver.current_url.endswith(f"/queue/{names[0]}"),
                     what="the queue page URL")
    browser.wait_text("queue-name", names[0])
