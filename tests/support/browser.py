"""Real headless Chromium against a real dashboard server, for the browser tests.

* :func:`serve_wsgi` runs a WSGI app (``dashboard.app.create_app(...)``) on a free
  127.0.0.1 port in a background thread (werkzeug's threaded server) and stops it afterwards.
* :func:`chrome_driver` starts Debian's ``/usr/bin/chromium`` through ``chromedriver`` with
  selenium (3.141 or 4.x), headless, with a fresh profile and no background networking.
* :class:`Browser` wraps the driver with bounded explicit waits and :meth:`Browser.screenshot`,
  which writes ``<name>.png`` at a fixed 1400×900 window into a temporary directory — tests
  never rewrite tracked files; ``QUEUELENS_SCREENSHOT_DIR=docs/screenshots`` refreshes the
  README's pictures.

Fixtures (import them into a conftest.py): ``dashboard_url`` (module scope; the demo-backed
app) and ``browser`` (module scope). For an app on another source (a real Prometheus, a fixed
evaluation time), :func:`browse` serves it and opens Chromium on it in one step. Missing
chromium/chromedriver fails under CI=true and skips elsewhere (``tests.conftest.require_binary``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_binary

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "docs" / "screenshots"
"""Where the README's pictures live (written only when QUEUELENS_SCREENSHOT_DIR names it)."""


def screenshot_dir() -> Path:
    """$QUEUELENS_SCREENSHOT_DIR (relative to the repository), else a temporary directory."""
    chosen = os.environ.get("QUEUELENS_SCREENSHOT_DIR")
    if chosen:
        return (REPO / chosen).resolve()
    return Path(tempfile.gettempdir()) / "queuelens-screenshots"
WINDOW = (1400, 900)
DEFAULT_TIMEOUT_S = 15.0
#: the instant the test dashboard shows (the demo's day 40, 14:00 — the figures the tests name)
DEMO_AT_S = 1_581_343_200.0

CHROME_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-extensions",
    "--disable-default-apps",
    f"--window-size={WINDOW[0]},{WINDOW[1]}",
)


@contextmanager
def serve_wsgi(app: Any) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1:<free port> in a thread; yields the base URL."""
    from werkzeug.serving import WSGIRequestHandler, make_server

    class _Quiet(WSGIRequestHandler):
        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            pass

    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_Quiet)
    thread = threading.Thread(target=server.serve_forever, name="dashboard-test-server",
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()


@contextmanager
def chrome_driver() -> Iterator[Any]:
    """A headless Chromium WebDriver with a throwaway profile."""
    chromium = require_binary("chromium", "apt-get install chromium (scripts/test.sh does)")
    chromedriver = require_binary(
        "chromedriver", "apt-get install chromium-driver (scripts/test.sh does)"
    )
    import selenium
    from selenium import webdriver

    profile = tempfile.mkdtemp(prefix="queuelens-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in (*CHROME_ARGS, f"--user-data-dir={profile}"):
        options.add_argument(arg)
    if int(selenium.__version__.split(".")[0]) >= 4:
        from selenium.webdriver.chrome.service import Service

        driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    else:  # selenium 3.141
        driver = webdriver.Chrome(executable_path=chromedriver, options=options)
    try:
        driver.set_window_size(*WINDOW)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


class Browser:
    """A driver plus the dashboard's base URL, with bounded explicit waits."""

    def __init__(self, driver: Any, base_url: str) -> None:
        self.driver = driver
        self.base_url = base_url

    def open(self, path: str) -> None:
        self.driver.get(self.base_url + path)

    def find(self, element_id: str, timeout: float = DEFAULT_TIMEOUT_S) -> Any:
        from selenium.webdriver.common.by import By

        return self.wait_for(
            lambda: self.driver.find_element(By.ID, element_id), timeout,
            f"element #{element_id} to appear",
        )

    def text(self, element_id: str) -> str:
        from selenium.common.exceptions import StaleElementReferenceException
        from selenium.webdriver.common.by import By

        for _ in range(3):  # a refresh may replace the element between finding and reading it
            try:
                return str(self.driver.find_element(By.ID, element_id).text)
            except StaleElementReferenceException:
                continue
        return str(self.driver.find_element(By.ID, element_id).text)

    def wait_for(
        self, check: Callable[[], Any], timeout: float = DEFAULT_TIMEOUT_S, what: str = "condition"
    ) -> Any:
        """Poll ``check`` until it returns something truthy (exceptions count as not yet)."""
        deadline = time.monotonic() + timeout
        last: object = None
        while True:
            try:
                value = check()
                if value:
                    return value
                last = value
            except Exception as exc:  # element not there yet, stale element...
                last = exc
            if time.monotonic() > deadline:
                pytest.fail(f"timed out after {timeout:g}s waiting for {what} (last: {last!r})")
            time.sleep(0.05)

    def wait_text(
        self, element_id: str, expected: str, timeout: float = DEFAULT_TIMEOUT_S
    ) -> str:
        """Wait until #element_id's visible text equals ``expected``."""
        self.find(element_id, timeout)
        self.wait_for(lambda: self.text(element_id) == expected, timeout,
                      f"#{element_id} to read {expected!r} (reads {self._safe_text(element_id)!r})")
        return expected

    def set_input(self, element_id: str, value: str) -> None:
        """Replace an input's value the way a user does (select all, type)."""
        from selenium.webdriver.common.keys import Keys

        element = self.find(element_id)
        element.click()
        element.send_keys(Keys.CONTROL, "a")
        element.send_keys(Keys.BACKSPACE)
        element.send_keys(value)
        self.wait_for(lambda: element.get_attribute("value") == value,
                      what=f"#{element_id} to hold {value!r}")

    def click(self, element_id: str) -> None:
        self.find(element_id).click()

    def count_charts(self) -> int:
        """Drawn Plotly charts: .js-plotly-plot elements that contain a .main-svg."""
        count = self.driver.execute_script(
            "return Array.from(document.querySelectorAll('.js-plotly-plot'))"
            ".filter(e => e.querySelector('.main-svg')).length;"
        )
        return int(count)

    def open_queue_from_overview(self, queue: str, charts: int, timeout: float = 30.0) -> None:
        """Click ``queue``'s link in the overview and wait until its page has drawn ``charts``
        charts, with the arrivals/throughput/capacity lines on the rates chart."""
        from selenium.webdriver.common.by import By

        link = self.wait_for(lambda: self.driver.find_element(By.LINK_TEXT, queue),
                             what=f"the {queue} link")
        link.click()
        self.wait_for(lambda: self.driver.current_url.endswith(f"/queue/{queue}"),
                      what="the queue page URL")
        self.wait_text("queue-name", queue)
        self.wait_for(lambda: self.count_charts() >= charts, timeout=timeout,
                      what=f"{charts} drawn charts")
        self.wait_for(
            lambda: self.driver.execute_script(
                "return document.querySelectorAll('#queue-rates-graph .scatterlayer .trace')"
                ".length;") >= 3,
            what="arrivals, throughput and capacity lines")

    def screenshot(self, name: str, size: tuple[int, int] = WINDOW) -> Path:
        """Save <name>.png at the window ``size`` (the fixed one by default) into
        :func:`screenshot_dir`."""
        folder = screenshot_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.png"
        self.driver.set_window_size(*size)
        if not self.driver.save_screenshot(str(path)):
            pytest.fail(f"could not save screenshot {path}")
        return path

    def _safe_text(self, element_id: str) -> str:
        try:
            return self.text(element_id)
        except Exception:
            return "<missing>"


@contextmanager
def browse(app: Any) -> Iterator[Browser]:
    """Serve the WSGI ``app`` (e.g. ``create_app(source, at=...)``) and open Chromium on it."""
    with serve_wsgi(app) as url, chrome_driver() as driver:
        yield Browser(driver, url)


@pytest.fixture(scope="module")
def dashboard_url() -> Iterator[str]:
    """The dashboard app (embedded demo source) served on a free 127.0.0.1 port.

    Pinned to one demo instant: the demo's load follows a daily cycle, so a wall-clock
    dashboard recommends 5 workers at one hour and 6 at another (CI failed on exactly that).
    """
    from collectors.demo import DemoSource
    from dashboard.app import create_app

    with serve_wsgi(create_app(DemoSource(seed=0), refresh_s=15, at=DEMO_AT_S)) as url:
        yield url


@pytest.fixture(scope="module")
def browser(dashboard_url: str) -> Iterator[Browser]:
    with chrome_driver() as driver:
        yield Browser(driver, dashboard_url)
