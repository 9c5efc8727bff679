"""The overview's streaming cold start in real headless Chromium (issue 22 §2): with a source
slowed down per batch, the page shows "Reading queues: N of 60 — about … left" and a partial
grid first, then every row, the progress line gone and the summary whole."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from collectors.demo import DemoSource
from dashboard.app import create_app
from tests.support.browser import DEMO_AT_S, Browser, browse, screenshot_dir
from tests.support.slow_source import SlowBatches

pytestmark = pytest.mark.browser

QUEUES = 60
BATCH = 10
DELAY_S = 0.8
"""Each batch's snapshot and range read sleep this long (two reads of a batch in parallel,
two batches in flight): about 3 s for the six batches — long enough to look at."""

_GRID_ROWS = """
const api = window.dash_ag_grid && window.dash_ag_grid.getApi
  ? window.dash_ag_grid.getApi('overview-table') : null;
if (api) { let n = 0; api.forEachNode(() => n++); return n; }
return document.querySelectorAll('#overview-table .ag-pinned-left-cols-container .ag-row').length;
"""


Opened = tuple[Browser, SlowBatches]


@pytest.fixture
def streaming(monkeypatch: pytest.MonkeyPatch
              ) -> Iterator[Callable[..., Opened]]:
    """Open a dashboard whose source sleeps ``delay_s`` per batch read (not for a batch
    holding one of the ``fast`` queues)."""
    monkeypatch.setenv("QUEUELENS_STREAM_ABOVE", "20")
    monkeypatch.setenv("QUEUELENS_STREAM_BATCH", str(BATCH))
    with contextlib.ExitStack() as stack:
        opened: list[tuple[Any, SlowBatches]] = []

        def open_app(delay_s: float, fast: tuple[str, ...] = ()) -> Opened:
            source = SlowBatches(DemoSource(seed=0, queues=QUEUES), delay_s, fast)
            app = create_app(source, refresh_s=15, at=DEMO_AT_S)
            opened.append((app, source))
            return stack.enter_context(browse(app)), source

        try:
            yield open_app
        finally:
            for app, source in opened:  # a job still reading is stopped, not left to run
                cold = app.extensions["queuelens"].get("cold_start")
                if cold is not None:
                    cold.cancel()
                source.release()


def _rows(browser: Browser) -> int:
    return int(browser.driver.execute_script(_GRID_ROWS))


PROGRESS = re.compile(r"^Reading queues: (\d+) of 60( — about \S+ \S+ left)?$")


def _partial(browser: Browser) -> re.Match[str]:
    """Wait for the progress line with a partial grid: some batches landed, not all."""
    found: re.Match[str] = browser.wait_for(
        lambda: (m if (m := PROGRESS.match(browser.text("overview-progress-text")))
                 and 0 < int(m.group(1)) < QUEUES and 0 < _rows(browser) < QUEUES else None),
        timeout=30, what="the progress line with a partial grid")
    return found


def test_the_cold_start_shows_progress_then_the_whole_grid(
        streaming: Callable[..., Opened]) -> None:
    browser, _ = streaming(DELAY_S)
    browser.open("/")
    seen = _partial(browser)
    assert seen.group(2), "no time left shown once a batch has landed"
    partial = browser.text("overview-summary")
    assert partial.startswith("Partial: ")
    assert "of 60 queues read so far" in partial
    assert "Partial: the peak of the" in browser.text("overview-scale")
    # then every row, the progress line gone, the summary whole
    browser.wait_for(lambda: _rows(browser) == QUEUES
                     and not browser.driver.find_elements("id", "overview-progress-text"),
                     timeout=30, what="the whole grid")
    summary = browser.text("overview-summary")
    assert summary.startswith(f"{QUEUES} queues from demo"), summary
    assert "Partial" not in browser.text("overview-scale")


def test_progress_state_screenshots(streaming: Callable[..., Opened]) -> None:
    """The progress state at 1400 and 1024 px, light and dark (written to the screenshot
    folder, :func:`tests.support.browser.screenshot_dir`), each taken while it lasts."""
    first = DemoSource(seed=0, queues=QUEUES).queue_names[0]
    # the first batch lands at once, the others wait (until the teardown releases them)
    browser, _ = streaming(120.0, (first,))
    browser.open("/")
    _partial(browser)
    folder = screenshot_dir()
    for width in (1400, 1024):
        for dark in (False, True):
            browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [
                {"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]})
            browser.driver.set_window_size(width, 900)
            time.sleep(0.8)  # the grid re-measures its wrapped rows after a resize
            assert PROGRESS.match(browser.text("overview-progress-text")), "stream ended"
            name = f"overview-stream-{width}-{'dark' if dark else 'light'}"
            browser.screenshot(name, (width, 900))
            assert (folder / f"{name}.png").stat().st_size > 10_000
    browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
