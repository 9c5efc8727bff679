"""The card's "Check the change" panel: clean points per side, the drain apart, and what a
too-short "after" cannot tell yet (no browser: the Dash tree's text)."""

from __future__ import annotations

import numpy as np

from collectors.cache import CachedSource
from collectors.demo import DemoSource
from dashboard import card
from dashboard.pages import queue as qp
from models import fleet as fl
from models.advisor import QueueHistory
from models.change import CHANGE_MIN_POINTS, check_change
from tests.support.dash_tree import component_texts

AT_DEMO = fl.EPOCH_S + 40 * 86400 + 14 * 3600


def test_the_queue_card_shows_the_clean_points_of_each_side() -> None:
    # the demo's deployment queue runs 5 and 3 workers in turn, 45 minutes each
    view = qp.queue_view(CachedSource(DemoSource(seed=0)), "deployment", "1h", AT_DEMO)
    assert view.plan is not None
    change, h = view.plan.change, view.plan.history
    assert change is not None
    assert h is not None
    w = change.window_s
    assert w == 300.0  # the plan's bound on its range read's windows (5 min, 60 s step)
    # counted here from the plan's history: the points of the count after the change whose
    # window (t − w, t] starts at or after it, up to the end or the next change
    first = int(np.flatnonzero(h.t_s == change.at)[0])
    end = first
    while end < h.points and h.workers[end] == change.workers_after:
        end += 1
    run = h.t_s[first:end]
    another_change = end < h.points
    clean = run[(run - w >= change.at) & ((run <= run[-1] - w) if another_change else True)]
    assert change.points_after == clean.size >= CHANGE_MIN_POINTS
    texts = component_texts(qp.render_verdicts(view))
    lead = next(t for t in texts if t.startswith("Measured from"))
    assert lead.startswith(f"Measured from {change.points_before} clean points before the "
                           f"change and {change.points_after} after it")
    assert "rate windows reach across the change" in lead
    assert "Check the change" in texts
    assert not any(t.startswith("Too early") for t in texts)  # a whole block after it


def _backlog_history(n_after: int) -> QueueHistory:
    """8 points at 1 worker with a backlog growing to 800 items, then 4 workers: two points drain it
    (throughput 30/s against a demand of 10/s), the rest are steady."""
    n = 8 + n_after
    t = np.arange(n, dtype=float) * 60.0
    workers = np.array([1.0] * 8 + [4.0] * n_after)
    depth = np.array([100.0 * k for k in range(1, 9)] + [500.0, 40.0] + [0.2] * (n_after - 2))
    x = np.array([9.0] * 8 + [30.0, 30.0] + [10.0] * (n_after - 2))
    wait = np.array([50.0] * 8 + [20.0, 5.0] + [0.002] * (n_after - 2))
    return QueueHistory.from_columns(
        t, arrival_rate_per_s=np.full(n, 10.0), throughput_per_s=x,
        service_mean_s=np.full(n, 0.1), workers=workers, depth=depth,
        queue_wait_mean_s=wait)


def test_the_panel_shows_the_drain_apart() -> None:
    change = check_change(_backlog_history(10))
    assert change is not None
    assert (change.drain_points, change.points_after, change.status) == (2, 8, "checked")
    texts = component_texts(card._change_panel(change))
    assert "Measured from 8 clean points before the change and 8 after it." in texts
    assert ("The backlog from before the change (800 items deep) drained first: 2 points "
            "over 60 s after it, left out of the measured figures.") in texts
    assert "2 ms" in texts  # the steady wait, in the one number format (not '0.002 s')
    assert "10/s" in texts  # the steady throughput: the demand, not the drain's 30/s


def test_the_panel_says_what_a_too_short_after_cannot_tell_yet() -> None:
    change = check_change(_backlog_history(5))
    assert change is not None
    assert (change.status, change.points_after) == ("after_too_short", 3)
    texts = component_texts(card._change_panel(change))
    assert ("Too early to check: only 3 steady points after the change (6 needed), so the "
            "steady throughput and wait at 4 workers cannot be told yet — about 3 min more."
            ) in texts


def test_a_change_early_in_the_range_is_never_silent() -> None:
    # 2 → 4 workers 3 points into the range (issue 35: a step 150 s into a 280-s range gave
    # no block at all): no plan from before, what the after side measured, and how far back
    n_before, n_after = 3, 12
    n = n_before + n_after
    h = QueueHistory.from_columns(
        np.arange(n, dtype=float) * 15.0, arrival_rate_per_s=np.full(n, 12.0),
        throughput_per_s=np.full(n, 12.0), service_mean_s=np.full(n, 0.2),
        workers=np.array([2.0] * n_before + [4.0] * n_after),
        queue_wait_mean_s=np.full(n, 0.01))
    change = check_change(h)
    assert change is not None
    assert change.status == "before_too_short"
    texts = component_texts(card._change_panel(change))
    assert "Check the change" in texts
    assert any("no plan from before it to check" in t for t in texts)
    assert ("Too few clean points before the change (3 of 6) for a plan from before it: a "
            "range starting about 45 s earlier would hold them.") in texts
    assert "12/s" in texts  # what the after side measured
