"""Overview sparklines: text blocks from one range read for all queues."""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import pytest

from collectors.cache import CachedSource
from collectors.demo import DemoSource
from dashboard import figures as fg
from dashboard.context import AppContext
from dashboard.pages import overview
from models.measurements import RangeData


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


def _range(values: dict[str, list[tuple[float, float]]], step_s: float = 10.0) -> RangeData:
    rows = [(q, t, v) for q, points in values.items() for t, v in points]
    frame = pd.DataFrame({"queue": [r[0] for r in rows], "signal": "depth_current",
                          "t": [r[1] for r in rows], "value": [r[2] for r in rows]})
    end = max(r[1] for r in rows)
    return RangeData.from_frame(start=100.0, end=end, step_s=step_s, source="t", frame=frame)


def test_sparklines_place_points_on_the_grid_on_one_shared_log_scale() -> None:
    data = _range({"a": [(100.0, 1.0), (130.0, 4.0)], "b": [(110.0, 2.0)]})
    # one log scale from 0.1 (▁) to the fleet's peak 4 (█): 1 → 7·log(10)/log(40) = 4.4 →
    # ▅; 2 → 5.7 → ▇; missing samples are blanks
    assert overview.sparklines(data, width=4) == {"a": "▅  █", "b": " ▇  "}
    assert overview.depth_peaks(data) == {"a": 4.0, "b": 2.0}
    # only the queues shown set the scale
    assert overview.sparklines(data, width=4, only={"b"}) == {"b": " █  "}


def test_a_nearly_empty_queue_does_not_draw_like_a_busy_one() -> None:
    """Per-row scaling drew a depth of 6e-05 as full blocks, the same as 16 items."""
    data = _range({"empty": [(100.0, 6e-05), (110.0, 6e-05)],
                   "busy": [(100.0, 16.0), (110.0, 16.0)]})
    sparks = overview.sparklines(data, width=2)
    assert sparks == {"empty": "▁▁", "busy": "██"}
    assert fg.sparkline_text([6e-05, 6e-05], 2) == "██"  # the per-row scale, for contrast


@pytest.mark.parametrize(
    ("row", "text"),
    [([0.0, 0.1, 0.11, 1.0, 10.0], "▁▁▂▅█"),  # at the floor: lowest; just above: second
     ([None, 0.05, math.inf, 3.0], " ▁ █"),  # a lone 3 is one decade+ above the floor
     ([0.0, 0.0], "▁▁"),  # an idle queue: lowest blocks, never blank
     ([0.3, 0.5], "▄▆")],  # the top is at least a decade above the floor: 0.5 is not █
)
def test_shared_log_scale_levels(row: list[float | None], text: str) -> None:
    table = np.array([[math.nan if v is None else v for v in row]])
    assert fg.sparklines_text(table, len(row), log_floor=0.1) == [text]


def test_shared_log_scale_rejects_a_bad_floor() -> None:
    with pytest.raises(ValueError, match="log_floor"):
        fg.sparklines_text([[1.0]], 1, log_floor=0.0)


def test_the_scale_is_stated_in_words() -> None:
    note = overview.spark_scale([0.2, 19.1])
    assert note.startswith("Depth sparklines share one log scale: ▁ ≤ 0.1 items, █ = 19.1")
    assert "×2.12" in note  # (19.1 / 0.1) ** (1/7)
    assert overview.spark_scale([]) == ""
    rows = [{"depth_peak": 0.2}, {"depth_peak": None}, {"depth_peak": 19.1}]
    assert overview.rows_scale(rows) == note


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
    assert {r["sparkline_tip"] for r in rows} == {"no depth history"}
    assert overview.rows_scale(rows) == ""
