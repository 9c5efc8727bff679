"""histories_from_range (all queues in one pass, from RangeData matrices) against a per-queue
pandas reference written out here, and histories_from_table's checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from collectors.demo import DemoSource
from dashboard.advice import _SIGNALS, histories_from_range, history_from_range
from models import fleet as fl
from models.advisor import HISTORY_FIELDS, QueueHistory, histories_from_table
from models.errors import ModelInputError
from models.measurements import RangeData

AT = fl.EPOCH_S + 40 * 86400 + 14 * 3600


def histories_from_frame(frame: pd.DataFrame, queues: list[str] | None = None
                         ) -> dict[str, QueueHistory]:
    """The long form through RangeData.from_frame (irregular, shuffled, duplicated rows)."""
    return histories_from_range(RangeData.from_frame(0.0, 0.0, 1.0, "t", frame), queues)


def reference(frame: pd.DataFrame, queue: str) -> QueueHistory | None:
    """The definition, one queue at a time with plain pandas: the queue's rows of the signals
    the advisor reads, on the sorted union of their times; per series the first candidate
    signal the queue has; a repeated (signal, time) keeps its last row; ±inf becomes NaN."""
    wanted = {s for cands in _SIGNALS.values() for s in cands}
    sub = frame[(frame["queue"] == queue) & frame["signal"].isin(wanted)]
    if sub.empty:
        return None
    grid = np.sort(sub["t"].unique().astype(np.float64))
    columns = {}
    for name, candidates in _SIGNALS.items():
        for sig in candidates:
            rows = sub[sub["signal"] == sig]
            if rows.empty:
                continue
            last = rows.drop_duplicates(subset="t", keep="last").set_index("t")["value"]
            arr = last.reindex(grid).to_numpy(dtype=np.float64)
            columns[name] = np.where(np.isfinite(arr), arr, np.nan)
            break
    return QueueHistory.from_columns(grid, **columns)


def assert_same(got: dict[str, QueueHistory], frame: pd.DataFrame) -> None:
    names = sorted(frame["queue"].unique())
    expected = {q: h for q in names if (h := reference(frame, q)) is not None}
    assert sorted(got) == sorted(expected)
    for q, ref in expected.items():
        for name in ("t_s", *HISTORY_FIELDS):
            a, b = getattr(got[q], name), getattr(ref, name)
            assert a.shape == b.shape, (q, name)
            assert np.array_equal(a, b, equal_nan=True), (q, name)


@pytest.fixture(scope="module")
def demo_frame() -> pd.DataFrame:
    src = DemoSource(seed=0, queues=20)
    return src.range(AT - 3600, AT, 150.0, None).frame


def test_demo_frame_matches_the_per_queue_definition(demo_frame: pd.DataFrame) -> None:
    got = histories_from_frame(demo_frame)
    assert len(got) == 20
    assert_same(got, demo_frame)
    one = next(iter(got))
    assert set(histories_from_frame(demo_frame, [one, "no-such-queue"])) == {one}


def test_shuffled_irregular_duplicated_frames(demo_frame: pd.DataFrame) -> None:
    rng = np.random.default_rng(3)
    for trial in range(6):
        g = demo_frame.sample(frac=float(rng.uniform(0.2, 1.0)), random_state=trial)
        g = g.reset_index(drop=True)
        if trial == 1:  # queues on different time grids
            g["t"] = g["t"] + rng.integers(0, 3, len(g)) * 7.0
        if trial == 2:  # infinities become NaN
            g.loc[g.sample(frac=0.05, random_state=trial).index, "value"] = np.inf
        if trial == 3:  # a repeated (queue, signal, time): the later row wins
            g = pd.concat([g, g.iloc[:200].assign(value=-1.0)], ignore_index=True)
        if trial == 4:  # depth falls back to depth_current; unwanted-only queues vanish
            g = g[g["signal"] != "depth_mean"]
            g = pd.concat([g, pd.DataFrame({"queue": ["odd"], "signal": ["not_a_signal"],
                                            "t": [1.0], "value": [1.0]})], ignore_index=True)
        if trial == 5:  # every time distinct: the sort path for the point ranks
            g["t"] = g["t"] + rng.uniform(0, 1, len(g))
        assert_same(histories_from_frame(g), g)


def test_history_from_range_of_an_unknown_queue_is_empty() -> None:
    src = DemoSource(seed=0, queues=3)
    rng = src.range(AT - 600, AT, 150.0, None)
    assert history_from_range(rng, "nope").points == 0
    assert histories_from_frame(rng.frame.iloc[:0]) == {}


def test_table_builds_what_from_columns_builds() -> None:
    t = np.array([[0.0, 1.0, 2.0], [5.0, 7.0, np.nan]])
    depth = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, np.inf]])  # inf past the length: ignored
    a, b = histories_from_table(t, [3, 2], {"depth": depth})
    for got, want in ((a, QueueHistory.from_columns(t[0], depth=depth[0])),
                      (b, QueueHistory.from_columns(t[1, :2], depth=depth[1, :2]))):
        for name in ("t_s", *HISTORY_FIELDS):
            assert np.array_equal(getattr(got, name), getattr(want, name), equal_nan=True)


@pytest.mark.parametrize(("t", "lengths", "columns", "message"), [
    ([[0.0, 0.0]], [2], {}, "strictly increasing"),
    ([[0.0, np.nan]], [2], {}, "finite"),
    ([[0.0, 1.0]], [2], {"depth": [[1.0, np.inf]]}, "infinite"),
    ([[0.0, 1.0]], [3], {}, "length"),
    ([[0.0, 1.0]], [2], {"depth": [[1.0]]}, "shape"),
    ([[0.0, 1.0]], [2], {"nonsense": [[1.0, 2.0]]}, "unknown"),
])
def test_table_rejects_what_queue_history_rejects(
        t: list[list[float]], lengths: list[int], columns: dict[str, list[list[float]]],
        message: str) -> None:
    with pytest.raises(ModelInputError, match=message):
        histories_from_table(t, lengths, columns)
