"""State that survives a refresh and travels in the address (issue 21), in real Chromium.

One demo app pinned at :data:`tests.support.browser.DEMO_AT_S` with a 2 s refresh, so "the
zoom survives two refreshes" takes seconds, not the 15 s default's half a minute.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dashboard.numbers import number_text
from dashboard.pages.queue import GRAPH_IDS
from tests.support.browser import DEMO_AT_S, Browser, chrome_driver, serve_wsgi

pytestmark = pytest.mark.browser

REFRESH_S = 2


@pytest.fixture(scope="module")
def state_browser() -> Iterator[Browser]:
    from collectors.demo import DemoSource
    from dashboard.app import create_app

    app = create_app(DemoSource(seed=0), refresh_s=REFRESH_S, at=DEMO_AT_S)
    with serve_wsgi(app) as url, chrome_driver() as driver:
        yield Browser(driver, url)


_X_RANGE_MS = (
    "const gd = document.querySelector('#' + arguments[0] + ' .js-plotly-plot');"
    "if (!gd || !gd._fullLayout || !gd._fullLayout.xaxis) return null;"
    "const ax = gd._fullLayout.xaxis;"
    "if (ax.visible === false || !ax.range) return null;"
    "return [ax.r2l(ax.range[0]), ax.r2l(ax.range[1])];"
)


def _x_range_ms(browser: Browser, graph_id: str) -> list[float] | None:
    """The chart's drawn x-range as epoch milliseconds (None: not drawn, or "no data")."""
    value = browser.driver.execute_script(_X_RANGE_MS, graph_id)
    return None if value is None else [float(v) for v in value]


def _open_queue(browser: Browser, path: str) -> None:
    browser.open(path)
    browser.wait_text("queue-name", "replicaset", timeout=30)
    browser.wait_for(lambda: browser.count_charts() >= len(GRAPH_IDS)
                     and _x_range_ms(browser, "queue-rates-graph"), timeout=30,
                     what="the charts drawn")


def _time_charts(browser: Browser) -> list[str]:
    """The charts drawing a time axis (replicaset has no external effects: "no data")."""
    return [g for g in GRAPH_IDS if _x_range_ms(browser, g) is not None]


def _checked_range(browser: Browser) -> str | None:
    value = browser.driver.execute_script(
        "const e = document.querySelector('#queue-range input:checked');"
        "return e ? e.value : null;")
    return None if value is None else str(value)


def test_zoom_survives_refreshes_and_is_shared_by_the_time_charts(
        state_browser: Browser) -> None:
    b = state_browser
    _open_queue(b, "/queue/replicaset")
    full = _x_range_ms(b, "queue-rates-graph")
    assert full is not None
    charts = _time_charts(b)
    assert len(charts) == len(GRAPH_IDS) - 1, charts
    # zoom the rates chart to the 2nd quarter of its hour, as a script (Plotly.relayout)
    zoom = [full[0] + (full[1] - full[0]) / 4, full[0] + (full[1] - full[0]) / 2]
    b.driver.execute_script(
        "const gd = document.querySelector('#queue-rates-graph .js-plotly-plot');"
        "const ax = gd._fullLayout.xaxis;"
        "window.Plotly.relayout(gd, {'xaxis.range': [ax.l2r(arguments[0]), ax.l2r(arguments[1])]});"
        # count the refreshes drawn from now on, on a chart that was not zoomed by hand
        "window.__qlReacts = 0;"
        "document.querySelector('#queue-depth-graph .js-plotly-plot')"
        ".on('plotly_react', () => { window.__qlReacts += 1; });", *zoom)

    def same(r: list[float] | None) -> bool:
        return r is not None and abs(r[0] - zoom[0]) < 1000 and abs(r[1] - zoom[1]) < 1000

    b.wait_for(lambda: all(same(_x_range_ms(b, g)) for g in charts), timeout=10,
               what="every time chart at the zoomed range")
    b.wait_for(lambda: b.driver.execute_script("return window.__qlReacts;") >= 2,
               timeout=8 * REFRESH_S, what="two refreshes")
    ranges = {g: _x_range_ms(b, g) for g in charts}
    assert all(same(r) for r in ranges.values()), ranges
    assert not same(full)  # the zoom is a real change of range
    # another history range starts unzoomed: the charts show their whole 6 h again
    b.driver.find_element("css selector", "#queue-range input[value='6h']").click()
    b.wait_for(lambda: (r := _x_range_ms(b, "queue-rates-graph")) is not None
               and r[1] - r[0] > 3 * 3600e3, timeout=20, what="the 6 h range, unzoomed")
    wide = {g: _x_range_ms(b, g) for g in charts}
    assert not any(same(r) for r in wide.values()), wide


def test_history_range_in_the_address(state_browser: Browser) -> None:
    b = state_browser
    _open_queue(b, "/queue/replicaset?range=6h")
    assert _checked_range(b) == "6h"
    assert b.text("queue-address-note") == ""
    b.driver.find_element("css selector", "#queue-range input[value='24h']").click()
    b.wait_for(lambda: "range=24h" in b.driver.current_url, what="range=24h in the address")
    assert b.driver.current_url.endswith("/queue/replicaset?range=24h")
    b.driver.refresh()
    _open_queue(b, "/queue/replicaset?range=24h")
    assert _checked_range(b) == "24h"
    span = _x_range_ms(b, "queue-rates-graph")
    assert span is not None
    assert span[1] - span[0] > 12 * 3600e3
    # a bad value: the default, and one sentence saying so
    _open_queue(b, "/queue/replicaset?range=%3Cb%3E9y")
    assert _checked_range(b) == "1h"
    assert b.text("queue-address-note") == (
        "The address asks for the history range '<b>9y', which is not one of 15m, 1h, 6h, "
        "24h, 7d: showing 1h.")


def test_whatif_inputs_in_the_address(state_browser: Browser) -> None:
    from selenium.webdriver.common.keys import Keys

    b = state_browser
    b.open("/whatif?queue=replicaset&lambda=20&slo=0.5")
    text = b.wait_for(lambda: (t := b.text("whatif-recommendation")).startswith("Recommended")
                      and "λ = 20" in t and t, timeout=30, what="the recommendation at λ = 20")
    assert b.find("whatif-arrival").get_attribute("value") == "20"
    assert b.find("whatif-slo").get_attribute("value") == "0.5"
    # the recommendation is computed with them (the measured λ would be 13.6/s)
    assert f"λ = {number_text(20.0, '/s')} (×1)" in text
    assert f"wait ≤ {number_text(0.5, 's')}" in text
    assert "From the address: lambda, slo" in b.text("whatif-notes")
    # the sweep wrote every input into the address; the measured work time among them
    b.wait_for(lambda: "workers=" in b.driver.current_url, what="the inputs in the address")
    url = b.driver.current_url
    assert "queue=replicaset" in url
    assert "lambda=20" in url
    assert "slo=0.5" in url
    assert "service=" in url
    assert "contention=" in url
    # a typed change goes to the address
    b.set_input("whatif-slo", "2")
    b.find("whatif-slo").send_keys(Keys.ENTER)
    b.wait_for(lambda: "slo=2&" in b.driver.current_url or b.driver.current_url.endswith("slo=2"),
               what="slo=2 in the address")
    assert "lambda=20" in b.driver.current_url
    # and a reload keeps it (the address wins over the measured prefill)
    b.driver.refresh()
    b.wait_for(lambda: f"wait ≤ {number_text(2.0, 's')}" in b.text("whatif-recommendation"),
               timeout=30, what="the recommendation at the SLO from the address")
    assert b.find("whatif-arrival").get_attribute("value") == "20"


def test_tab_titles_name_the_queue(state_browser: Browser) -> None:
    b = state_browser

    def title_is(expected: str) -> bool:
        return bool(b.driver.title == expected)

    _open_queue(b, "/queue/replicaset")
    b.wait_for(lambda: title_is("queuelens — replicaset"), what="the queue page's title")
    b.open("/whatif?queue=replicaset")
    b.wait_for(lambda: title_is("queuelens — what-if replicaset"), timeout=20,
               what="the what-if page's title")
    b.open("/")
    b.wait_for(lambda: title_is("queuelens — fleet"), what="the fleet page's title")
