"""Overview sparklines: text blocks from one range read for all queues."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from collectors.cache import CachedSource
from collectors.demo import DemoSource
from collectors.types import RangeData
from dashboard import figures as fg
from dashboard.context import AppContext
from dashboard.pages import overview


@pytest.mark.parametrize(
    ("values", "width", "text"),
    [([0, 1, 2, 3, 4, 5, 6, 7], 8, "▁▂▃▄▅▆▇█"),
     ([0, 7, 7, 0], 2, "██"),  # each cell shows its bucket's maximum
     ([None, 7.0, float("nan"), 0.0], 4, " █ ▁"),  # missing is blank, not a zero bar
     ([0.0, 0.0], 4, "▁▁"),
     ([None, None], 4, "")],
)
def test_sparkline_text(values: list[float | None], width: int, text: str) -> None:
    assert fg.sparkline_text(values, width) == text


def test_sparklines_place_points_on_the_grid() -> None:
    frame = pd.DataFrame({"queue": ["a", "a", "b"], "signal": "depth_current",
                          "t": [100.0, 130.0, 110.0], "value": [1.0, 4.0, 2.0]})
    data = RangeData.from_frame(start=100.0, end=130.0, step_s=10.0, source="t", frame=frame)
    # a: 1/4 of the max → level round(1.75) = 2 (▃); b alone → its max (█)
    assert overview.sparklines(data, width=4) == {"a": "▃  █", "b": " █  "}


def test_overview_with_badges_reads_the_source_twice_for_500_queues() -> None:
    src = CachedSource(DemoSource(seed=0, queues=500))
    rows, _, error = overview.load_overview(AppContext(source=src))
    assert error == ""
    # one snapshot + one range, whatever the number of queues: the advisor's badges read the
    # sparklines' range data, not a range of their own
    assert src.fetches == 2
    assert len(rows) == 500
    assert all(r["status"] != overview.NO_VERDICT for r in rows)
    assert all(len(r["sparkline"]) == overview.SPARK_WIDTH for r in rows)


def test_row_without_history_says_no_data() -> None:
    snap = DemoSource(seed=0).snapshot(time.time(), 300.0)
    rows = overview.overview_rows(snap, {})
    assert {r["sparkline"] for r in rows} == {"no data"}
