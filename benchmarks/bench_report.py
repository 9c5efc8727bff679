"""Capacity report latency: the HTML and JSON reports of N demo queues, built and opened.

    python benchmarks/bench_report.py [--queues 100 1000] [--repeats 3] [--no-browser]

Prints measured figures (nothing is asserted), per queue count:

* build: :func:`dashboard.report.build_report` on ``DemoSource(queues=N)`` (one snapshot and
  one range read, the advisor and the what-if sweep per queue) — shared by every format;
* render: :func:`dashboard.report.render` as JSON and as HTML, and each report's total
  (build + render) with the HTML/JSON ratio;
* browser (needs chromium + chromedriver; ``tests/support/browser.py`` starts them): the HTML
  written to a temporary file and opened from ``file://`` in headless Chromium —

  - ``load``: from navigation until the load event (``driver.get`` returns);
  - ``first queue drawn``: opening ``report.html#queue-0`` (the fleet summary's link to the
    first queue; the browser scrolls there) until both of its charts are drawn;
  - ``last queue drawn``: then following the summary's link to the last queue until its
    charts are drawn; and how many charts the page had drawn by then (charts are drawn as
    they come into view, so this stays small).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BROWSER_TIMEOUT_S = 180.0


def _timed(repeats: int, fn: Callable[..., Any], *args: Any) -> tuple[list[float], Any]:
    """(seconds of each of ``repeats`` calls of fn(*args), the last call's value)."""
    out, value = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        value = fn(*args)
        out.append(time.perf_counter() - t0)
    return out, value


def _report(label: str, samples: list[float], unit: str = "s") -> None:
    scale = 1.0 if unit == "s" else 1000.0
    xs = sorted(s * scale for s in samples)
    print(f"{label:<52} median {statistics.median(xs):9.3f} {unit}   min {xs[0]:9.3f} {unit}   "
          f"max {xs[-1]:9.3f} {unit}   (n={len(xs)})")


_CHARTS_DRAWN = """
const ids = arguments[0];
return ids.every(id => document.querySelector('#' + CSS.escape(id) + ' .main-svg'));
"""

_DRAWN_COUNT = """
return Array.from(document.querySelectorAll('.js-plotly-plot'))
  .filter(e => e.querySelector('.main-svg')).length;
"""


def _wait_drawn(driver: Any, ids: list[str], deadline: float) -> None:
    while not driver.execute_script(_CHARTS_DRAWN, ids):
        if time.perf_counter() > deadline:
            raise SystemExit(f"charts {ids} were not drawn within {BROWSER_TIMEOUT_S:g} s")
        time.sleep(0.01)


def _browser(path: Path, queues: int, repeats: int) -> None:
    from selenium.webdriver.common.by import By

    from tests.support.browser import chrome_driver

    uri = path.as_uri()
    first = [f"queue-0-chart-{j}" for j in range(2)]
    last = [f"queue-{queues - 1}-chart-{j}" for j in range(2)]
    load, open_first, open_last, drawn = [], [], [], []
    with chrome_driver() as driver:
        driver.set_page_load_timeout(BROWSER_TIMEOUT_S)
        for _ in range(repeats):
            driver.get("about:blank")
            t0 = time.perf_counter()
            driver.get(uri)
            load.append(time.perf_counter() - t0)

            driver.get("about:blank")
            t0 = time.perf_counter()
            driver.get(uri + "#queue-0")
            _wait_drawn(driver, first, t0 + BROWSER_TIMEOUT_S)
            open_first.append(time.perf_counter() - t0)

            link = driver.find_element(By.CSS_SELECTOR, f'a[href="#queue-{queues - 1}"]')
            t0 = time.perf_counter()
            driver.execute_script("arguments[0].click();", link)
            _wait_drawn(driver, last, t0 + BROWSER_TIMEOUT_S)
            open_last.append(time.perf_counter() - t0)
            drawn.append(int(driver.execute_script(_DRAWN_COUNT)))
    _report("  browser: load (navigation → load event)", load)
    _report("  browser: open #queue-0 → its 2 charts drawn", open_first)
    _report("  browser: then link to the last queue → drawn", open_last)
    print(f"  browser: charts drawn by then: {statistics.median(drawn):g} of {2 * queues}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queues", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-browser", action="store_true", help="skip headless Chromium")
    args = parser.parse_args()

    from collectors.demo import DemoSource
    from dashboard.report import build_report, render

    at = time.time()
    print(f"queuelens report benchmark — {args.repeats} repeats\n")
    for n in args.queues:
        print(f"{n} demo queues")
        source = DemoSource(seed=0, queues=n)
        build, report = _timed(args.repeats, build_report, source, at)
        assert len(report.queues) == n
        as_json, json_text = _timed(args.repeats, render, report, "json")
        as_html, html_text = _timed(args.repeats, render, report, "html")
        b, j, h = (statistics.median(s) for s in (build, as_json, as_html))
        _report("  build_report (shared by every format)", build)
        _report("  render JSON", as_json)
        _report("  render HTML", as_html)
        print(f"  JSON report {b + j:.3f} s ({len(json_text) / 1e6:.1f} MB) · HTML report "
              f"{b + h:.3f} s ({len(html_text) / 1e6:.1f} MB) · HTML/JSON = "
              f"{(b + h) / (b + j):.2f}")
        if not args.no_browser:
            with tempfile.TemporaryDirectory(prefix="queuelens-bench-report-") as tmp:
                path = Path(tmp) / "report.html"
                path.write_text(html_text, encoding="utf-8")
                _browser(path, n, args.repeats)
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
