"""What a user sees, measured in real headless Chromium (issue 21): the card's options agree
with its rule on every demo queue; the fleet grid cuts no text at 1400 and 1024 px; the
decisive chart's labels overlap neither each other nor the title; an unknown path is a page
that says so."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest

from collectors.demo import DemoSource
from dashboard.cli import main
from tests.support.browser import DEMO_AT_S, Browser

pytestmark = pytest.mark.browser

_CLIPPED = """
const out = [];
const sel = '#overview-table .ag-header-cell-text, #overview-table .ag-header-group-text, ' +
            '#overview-table .ag-center-cols-container .ag-cell-value';
for (const el of document.querySelectorAll(sel)) {
  const text = el.innerText.trim();
  if (!text) continue;
  if (el.scrollWidth > el.clientWidth + 1) out.push([text, el.scrollWidth, el.clientWidth]);
}
return out;
"""

_BOXES = """
const root = document.getElementById(arguments[0]);
if (!root || !root.querySelector('.main-svg')) return null;
const boxes = [];
for (const el of root.querySelectorAll('.annotation-text, .gtitle')) {
  const r = el.getBoundingClientRect();
  if (r.width > 0) boxes.push([el.textContent, r.left, r.top, r.right, r.bottom]);
}
return boxes;
"""


@pytest.fixture(scope="module")
def plans() -> dict[str, dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["advise", "--demo", "--at", str(DEMO_AT_S), "--format", "json"]) == 0
    return {q["queue"]: q["plan"] for q in json.loads(out.getvalue())["queues"]}


def _overlaps(a: list[Any], b: list[Any]) -> bool:
    return a[1] < b[3] - 1 and b[1] < a[3] - 1 and a[2] < b[4] - 1 and b[2] < a[4] - 1


def test_every_card_says_its_rule_and_its_labels_stay_apart(
        browser: Browser, plans: dict[str, dict[str, Any]]) -> None:
    for queue in DemoSource(seed=0).queue_names:
        plan = plans[queue]
        browser.open(f"/queue/{queue}")
        browser.wait_for(lambda: browser.text("plan-headline"), timeout=30,
                         what=f"{queue}'s card")
        assert browser.text("plan-headline") == plan["headline"], queue
        first = browser.text("plan-options").split("\n")[0]
        assert first.startswith(plan["options"][0]["action"]), (queue, first)
        rec, now = plan["recommended_workers"], plan["workers_now"]
        if plan["rule"] == "fewer":
            assert first.startswith(f"lower the worker count to {rec}"), (queue, first)
        elif rec is not None and now is not None and rec > now:
            assert first.startswith(f"raise the worker count to {rec}"), (queue, first)
        else:  # the count stays: no option on the card changes it
            assert "worker count to" not in browser.text("plan-options"), queue
        for graph in ("plan-decisive-graph", "plan-wait-graph"):
            boxes = browser.wait_for(lambda g=graph: browser.driver.execute_script(_BOXES, g),
                                     what=f"{queue}'s {graph}")
            clashes = [(a[0], b[0]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
                       if _overlaps(a, b)]
            assert not clashes, (queue, graph, clashes)


@pytest.mark.parametrize("width", [1400, 1024])
def test_the_grid_cuts_no_text(browser: Browser, width: int) -> None:
    browser.driver.set_window_size(width, 900)
    try:
        browser.open("/")
        names = DemoSource(seed=0).queue_names
        browser.wait_for(lambda: len(browser.driver.find_elements(
            "css selector", "#overview-table .ag-center-cols-container .ag-row")) == len(names),
            what="the grid's rows")
        clipped = browser.driver.execute_script(_CLIPPED)
        assert not clipped, clipped
        status = browser.driver.find_element(
            "css selector",
            '#overview-table .ag-row[row-id="replicaset"] .ag-cell[col-id="status"]')
        assert status.text.startswith("more workers")  # words, not add_workers
        if width != 1400:  # the 1400 px one is the overview browser test's
            browser.screenshot(f"overview-{width}", size=(width, 900))
    finally:
        browser.driver.set_window_size(1400, 900)


def test_an_unknown_path_is_a_page_that_says_so(browser: Browser) -> None:
    browser.open("/no/such/page")
    text = browser.wait_for(lambda: browser.text("not-found-message"), what="the 404 page")
    assert text.startswith("queuelens has no page at this address")
    assert "Traceback" not in browser.driver.page_source


class _Down:
    """A source whose every read fails as an unreachable Prometheus does."""

    name = "http://127.0.0.1:1"
    queue_names: tuple[str, ...] = ()

    def snapshot(self, at: float, window_s: float) -> Any:
        from collectors.errors import PrometheusUnreachable

        raise PrometheusUnreachable("connection refused (is Prometheus running on that port?)")

    def range(self, *args: object, **kwargs: object) -> Any:
        return self.snapshot(0.0, 0.0)


def test_a_source_that_is_down_is_said_once() -> None:
    from dashboard.app import create_app
    from tests.support.browser import browse

    with browse(create_app(_Down(), at=DEMO_AT_S)) as browser:  # type: ignore[arg-type]
        browser.open("/queue/foo")
        browser.wait_for(lambda: browser.text("queue-message"), timeout=30,
                         what="the queue page's message")
        body = browser.wait_for(
            lambda: (t := browser.driver.find_element("tag name", "body").text).count(
                "connection refused") and t, timeout=10, what="the error in the banner")
        assert body.count("connection refused") == 1, body[:600]
        hidden = browser.driver.find_element("id", "queue-body")
        assert not hidden.is_displayed()  # no empty panels, no "no data" charts
        assert "no data" not in body


def test_the_whatif_charts_labels_stay_apart(browser: Browser) -> None:
    """Each what-if chart's labels (the typed inputs' recommendation, the plan's count, the
    SLO, the target) overlap neither each other nor the chart's title, at both widths."""
    # replicaset recommends 6; secret 1 and 2, at the left edge beside the SLO's label
    for queue, width in (("replicaset", 1400), ("replicaset", 1024), ("secret", 1400),
                         ("secret", 1024)):
        browser.driver.set_window_size(width, 900)
        browser.open(f"/whatif?queue={queue}")
        for graph in ("whatif-wait-graph", "whatif-slo-graph", "whatif-throughput-graph"):
            boxes = browser.wait_for(
                lambda g=graph: (b := browser.driver.execute_script(_BOXES, g)) and any(
                    "advisor c" in x[0] for x in b) and b, timeout=30, what=f"{graph}'s marks")
            clashes = [(a[0], b[0]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
                       if _overlaps(a, b)]
            assert not clashes, (queue, width, graph, clashes)
    browser.driver.set_window_size(1400, 900)


def test_the_grid_keeps_its_sort_and_filter_in_the_address(browser: Browser) -> None:
    """Sort by a header, filter by typing: the address says so; a reload (or the link)
    opens the grid sorted and filtered the same."""
    from selenium.webdriver.common.by import By

    def names() -> list[str]:
        return [e.text for e in browser.driver.find_elements(
            By.CSS_SELECTOR, "#overview-table .ag-pinned-left-cols-container .ag-row a")]

    def header(col: str) -> Any:
        return browser.driver.find_element(
            By.CSS_SELECTOR, f'#overview-table .ag-header-cell[col-id="{col}"] '
                             '.ag-header-cell-text')

    browser.open("/")
    all_names = set(DemoSource(seed=0).queue_names)
    browser.wait_for(lambda: set(names()) == all_names, what="every queue in the grid")
    header("headroom").click()  # ascending by the headroom: the queues nearest a limit first
    browser.wait_for(lambda: "sort=headroom%3Aasc" in browser.driver.current_url,
                     what="the sort in the address")
    box = browser.driver.find_element(
        By.CSS_SELECTOR, '#overview-table .ag-floating-filter[aria-colindex="1"] input')
    box.send_keys("re")
    browser.wait_for(lambda: "filter=" in browser.driver.current_url,
                     what="the filter in the address")
    shown = browser.wait_for(lambda: (n := names()) and len(n) < len(all_names) and n,
                             what="the filtered rows")
    assert all("re" in n for n in shown)
    url = browser.driver.current_url
    browser.driver.get(url)  # a reload, or someone opening the link
    browser.wait_for(lambda: names() == shown, what="the same rows, in the same order")
    assert browser.text("overview-state-note") == ""
