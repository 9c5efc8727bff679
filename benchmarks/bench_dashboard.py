"""Dashboard latency: the overview with 500 demo queues and the what-if callback.

    python benchmarks/bench_dashboard.py [--queues 500] [--repeats 5] [--browser]

Prints measured figures (nothing is asserted):

* overview, server side: the overview callback's work (one snapshot + one range read shared by the
  sparklines and the advisor's badges, through a cold ``CachedSource``, the advisor over every
  queue, and the table rows) for N demo queues; then two parts of it on their own: turning the
  range frame into the advisor's per-queue histories, and the advisor over all queues;
* overview, real browser (``--browser``; needs chromium + chromedriver): time from navigating
  to ``/`` until the table shows its first page of rows with sparklines (the first full render);
* figures: :func:`dashboard.figures.base_figure` (the empty figure every chart starts from;
  a plain dict since issue 9, it was a ``go.Figure``) and the what-if figures on their own;
* what-if: :func:`dashboard.pages.whatif.whatif_view` (sweep over 1–64 workers + three figures),
  the sweep callback's own Python function (what the server runs for it, without Dash's
  request handling and JSON) and the full Dash HTTP round trip of the sweep callback
  (``/_dash-update-component``);
* queue page: :func:`dashboard.pages.queue.queue_view` for one queue (1 h range).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _timed(fn: Callable[[], object], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _report(label: str, samples: list[float]) -> None:
    ms = sorted(s * 1000 for s in samples)
    print(f"{label:<58} median {statistics.median(ms):9.3f} ms   min {ms[0]:9.3f} ms   "
          f"max {ms[-1]:9.3f} ms   (n={len(ms)})")


SWEEP_VALUES: dict[str, object] = {
    "whatif-arrival": 13.6, "whatif-service": 0.25, "whatif-service-cv2": 1,
    "whatif-arrival-cv2": 1, "whatif-arrival-mult": 1, "whatif-service-mult": 1,
    "whatif-contention": "usl", "whatif-sigma": 0.02, "whatif-kappa": 0.001,
    "whatif-slo": 1, "whatif-slo-q": "p95", "whatif-workers": [1, 64],
    "whatif-current-workers": 4, "whatif-advisor": 6,
}
"""The what-if inputs of the sweep callback timings (c = 1..64, USL contention, SLO 1 s)."""


def _sweep_spec(app: object) -> tuple[str, dict[str, Any]]:
    from dash import Dash

    assert isinstance(app, Dash)
    key = next(k for k in app.callback_map if "whatif-recommendation.children" in k)
    return key, app.callback_map[key]


def _sweep_function(app: object) -> Callable[[], object]:
    """The sweep callback's own Python function, called with :data:`SWEEP_VALUES`."""
    _, spec = _sweep_spec(app)
    fn = spec["callback"].__wrapped__  # the function under Dash's request wrapper
    args = [SWEEP_VALUES[i["id"]] for i in spec["inputs"]]
    return lambda: fn(*args)


def _sweep_payload(app: object) -> dict[str, object]:
    """The JSON body Dash's renderer posts for the what-if sweep callback."""
    key, spec = _sweep_spec(app)
    inputs = [{"id": i["id"], "property": i["property"], "value": SWEEP_VALUES[i["id"]]}
              for i in spec["inputs"]]
    return {"output": key, "outputs": [{"id": o.split(".")[0], "property": o.split(".")[1]}
                                       for o in key.strip(".").split("...") if o],
            "inputs": inputs, "changedPropIds": ["whatif-workers.value"], "state": []}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queues", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--browser", action="store_true", help="also time the real browser")
    args = parser.parse_args()

    from collectors.cache import CachedSource
    from collectors.demo import DemoSource
    from dashboard.app import build_dash_app
    from dashboard.context import AppContext
    from dashboard.pages import overview, queue, whatif

    demo = DemoSource(seed=0, queues=args.queues)
    print(f"queuelens dashboard benchmark — {args.queues} demo queues, "
          f"{args.repeats} repeats\n")

    def overview_cold() -> None:
        src = CachedSource(demo)
        rows, _, error = overview.load_overview(AppContext(source=src))
        assert len(rows) == args.queues
        assert not error
        assert src.fetches == 2

    _report(f"overview callback, cold cache ({args.queues} queues, sparklines, advisor)",
            _timed(overview_cold, args.repeats))
    from dashboard.advice import advise_data, histories_from_range
    from models.settings import AnalysisSettings

    now = time.time()
    snap = demo.snapshot(now, 300.0)
    rng = demo.range(now - AnalysisSettings().range_s, now, AnalysisSettings().step_s, None)
    _report(f"  of which: range matrices → {args.queues} advisor histories",
            _timed(lambda: histories_from_range(rng), args.repeats))
    _report(f"  of which: advisor over {args.queues} queues (histories included)",
            _timed(lambda: advise_data(snap, rng, AnalysisSettings()), args.repeats))
    warm = CachedSource(demo, ttl_s=3600)
    ctx = AppContext(source=warm)
    overview.load_overview(ctx)
    _report("overview callback, warm cache (another tab)",
            _timed(lambda: overview.load_overview(ctx), args.repeats))

    from dashboard import figures

    _report("base_figure (one empty figure)",
            _timed(lambda: figures.base_figure("t?", "x", "y"), args.repeats * 40))
    params = whatif.parse_params(13.6, 0.25, 1, 1, 1, 1, "usl", 0.02, 0.001, 1.0, "p95",
                                 [1, 64])
    whatif.whatif_view(params, 4)
    _report("what-if view (sweep c=1..64 + 3 figures), in process",
            _timed(lambda: whatif.whatif_view(params, 4), args.repeats * 20))

    small = DemoSource(seed=0)
    qsrc = CachedSource(small, ttl_s=3600)
    queue.queue_view(qsrc, "replicaset", "1h", time.time())
    _report("queue page view (1 h, 7 charts), warm cache",
            _timed(lambda: queue.queue_view(qsrc, "replicaset", "1h", time.time()),
                   args.repeats))

    app = build_dash_app(CachedSource(demo, ttl_s=3600))
    sweep = _sweep_function(app)
    sweep()
    _report("what-if sweep callback, its Python function (server)",
            _timed(sweep, args.repeats * 20))
    client = app.server.test_client()
    body = json.dumps(_sweep_payload(app))

    def roundtrip() -> None:
        resp = client.post("/_dash-update-component", data=body,
                           content_type="application/json")
        assert resp.status_code == 200, resp.status_code

    roundtrip()
    _report("what-if callback, full Dash HTTP round trip (server)",
            _timed(roundtrip, args.repeats * 20))

    if args.browser:
        _browser(demo, args.repeats)
    return 0


def _browser(demo: object, repeats: int) -> None:
    from selenium.webdriver.common.by import By

    from dashboard.app import create_app
    from dashboard.figures import SPARK_BLOCKS
    from tests.support.browser import chrome_driver, serve_wsgi

    samples = []
    with chrome_driver() as driver:
        for _ in range(repeats):
            # a fresh app each time: cold cache, as on the first visit after start
            with serve_wsgi(create_app(demo, refresh_s=15)) as url:  # type: ignore[arg-type]
                t0 = time.perf_counter()
                driver.get(url + "/")
                deadline = t0 + 60
                while time.perf_counter() < deadline:
                    cells = driver.find_elements(
                        By.CSS_SELECTOR, "#overview-table .ag-cell[col-id=sparkline]")
                    if len(cells) >= 50 and any(b in cells[0].text for b in SPARK_BLOCKS):
                        break
                    time.sleep(0.02)
                else:
                    raise SystemExit("the overview did not render within 60 s")
                samples.append(time.perf_counter() - t0)
    _report("overview first full render in headless Chromium", samples)


if __name__ == "__main__":
    raise SystemExit(main())
