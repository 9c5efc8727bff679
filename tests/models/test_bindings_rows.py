"""The rows' inputs under a limit (models.bindings.rows, steps, polling): the rules that the
end-to-end regimes only reach through many layers, pinned where a review found them wrong."""

from __future__ import annotations

import numpy as np
import pytest

from models.bindings.polling import poll_overrun
from models.bindings.rows import limit_prediction, limit_sizing
from models.bindings.steps import step_ceiling
from models.whatif import WhatIfInputs, whatif_tables

SIZING = WhatIfInputs(11.6, 0.35, workers_min=1, workers_max=16, slo_wait_s=1.0)


def test_a_gauge_at_half_a_worker_is_no_worker_count() -> None:
    # np.rint(0.5) is 0: that level must not divide by zero
    found = step_ceiling(np.array([0.5] * 6 + [1.0] * 6), np.array([2.0] * 6 + [2.1] * 6),
                         np.array([0.5] * 6 + [1.0] * 6), np.full(12, 0.4),
                         min_points=6, busy_share_min=0.8)
    assert found is None


def test_the_rows_ceiling_is_never_below_what_the_queue_does_now() -> None:
    ev = {"ceiling_reconciles_per_s": 10.2, "ceiling_scope": "queue"}
    # within 10 %: a saturated limit measured at its throughput, raised to it
    low = limit_sizing("client_limiter", SIZING, ev, None, None, 10.9)
    assert low.inputs.ceiling_per_s == pytest.approx(10.9)
    assert "raised to what the queue does now" in low.basis
    (table,) = whatif_tables([low.inputs])
    assert table.throughput_per_s.max() <= 10.9 + 1e-9
    kept = limit_sizing("client_limiter", SIZING, ev, None, None, 9.0)
    assert kept.inputs.ceiling_per_s == pytest.approx(10.2)
    # beyond it the estimate is wrong: no ceiling in the rows, and the reason
    wrong = limit_sizing("client_limiter", SIZING, ev, None, None, 11.42)
    assert wrong.inputs.ceiling_per_s is None
    assert wrong.ceiling_per_s is None
    assert "below what the queue completes now" in wrong.basis


def test_a_process_ceiling_leaves_the_queue_what_the_others_do_not_use() -> None:
    # ceiling 10 for the process, which does 10/s, this queue 3/s of it (behind a 5/s demand)
    ev = {"ceiling_reconciles_per_s": 10.0, "ceiling_scope": "process", "process_queues": 2,
          "process_reconciles_per_s": 10.0, "process_arrival_rate_per_s": 12.0}
    share = limit_sizing("client_limiter", SIZING, ev, None, None, 3.0)
    assert share.inputs.ceiling_per_s == pytest.approx(3.0)


def test_a_key_count_is_dropped_behind_a_ceiling_and_said() -> None:
    keyed = WhatIfInputs(11.6, 0.35, keys=500, workers_min=1, workers_max=16)
    out = limit_sizing("shared_resource", keyed,
                       {"ceiling_reconciles_per_s": 10.0, "ceiling_scope": "queue"},
                       None, None, None)
    assert out.inputs.keys is None
    assert out.inputs.ceiling_per_s == pytest.approx(10.0)
    assert "key count is not modelled" in out.basis


def test_the_change_check_predicts_with_the_limits_model() -> None:
    limited = limit_sizing("shared_resource", SIZING,
                           {"ceiling_reconciles_per_s": 10.0, "ceiling_scope": "queue"},
                           None, None, None).inputs
    predict = limit_prediction(limited)
    assert predict is not None
    x_over, wait_over = predict(8, 12.0, 0.35)
    assert x_over <= 10.0 + 1e-9
    assert wait_over is None  # over the ceiling: the backlog grows
    assert limit_prediction(SIZING) is None  # plain M/M/c: the check's own default


def test_late_polls_follow_littles_law_on_the_loop() -> None:
    # 300 keys polled every 10 s, 0.1 s passes, 3.5 s waits: every key every 13.6 s
    found = poll_overrun(10.0, 300 / 13.6, 0.1, 3.5, 300 / 13.6 + 0.5)
    assert found is not None
    assert found.effective_s == pytest.approx(13.6)
    assert found.keys == pytest.approx(300.0)
    assert found.demand_restored_per_s == pytest.approx(300 / 10.1 + 0.5)
    assert found.overrun
    assert not poll_overrun(10.0, 300 / 10.1, 0.1, 0.05, 300 / 10.1).overrun  # type: ignore[union-attr]
    assert poll_overrun(10.0, 0.0, 0.1, 0.05, 1.0) is None
