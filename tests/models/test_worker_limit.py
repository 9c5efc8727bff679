"""Issue 23 item 1 at the models: every loop that runs one step per worker refuses a count
above :data:`models.limits.MAX_WORKERS` with a sentence, and a measured count above it (in the
snapshot or the history) is left out for its queue instead of being computed with."""

from __future__ import annotations

import numpy as np
import pytest

from models.advisor import QueueHistory, advise
from models.bindings.ceiling import CeilingModel, closed_throughput
from models.errors import ModelInputError
from models.finite_keys import finite_keys
from models.limits import MAX_WORKERS
from models.measurements import QueueSnapshot
from models.queueing import erlang_b_table, erlang_c
from models.verdicts.screen import screen

TOO_MANY = 10**12


@pytest.mark.parametrize("call", [
    lambda: erlang_c(1.0, 1.0, TOO_MANY),
    lambda: erlang_c([1.0, 2.0], 1.0, [2, MAX_WORKERS + 1]),
    lambda: erlang_b_table(1.0, TOO_MANY),
    lambda: closed_throughput(TOO_MANY, 0.1, 0.01),
    lambda: CeilingModel(10.0, 0.1).columns(1.0, np.array([TOO_MANY])),
    lambda: finite_keys(100, 1.0, 1.0, TOO_MANY),
])
def test_a_count_above_the_limit_is_refused_at_once(call: object) -> None:
    with pytest.raises(ModelInputError, match=f"{MAX_WORKERS:,} workers"):
        call()  # type: ignore[operator]


def test_the_limit_itself_is_computed() -> None:
    assert bool(erlang_c(1.0, 1.0, MAX_WORKERS).stable)


def test_a_measured_count_above_the_limit_is_left_out_with_a_sentence() -> None:
    q = QueueSnapshot("huge", arrival_rate_per_s=10.0, throughput_per_s=10.0,
                      service_mean_s=0.1, busy_workers=1.0, workers=1e7, utilization=1e-7,
                      depth_mean=2.0, queue_wait_mean_s=0.5)
    t = np.arange(60, dtype=np.float64) * 60.0
    history = QueueHistory.from_columns(
        t, arrival_rate_per_s=np.full(60, 10.0), throughput_per_s=np.full(60, 10.0),
        busy_workers=np.full(60, 1.0), service_mean_s=np.full(60, 0.1),
        workers=np.where(t < 1800, 4.0, float(TOO_MANY)), depth=np.full(60, 2.0))
    found = screen(q, history)
    assert found.signals.workers is None
    assert found.signals.utilization is None
    assert found.problems == (
        "huge: the worker count 10,000,000 is above the 10,000 workers the queueing models "
        "compute with, implausible for one controller: the queue is judged without it; check "
        "controller_runtime_max_concurrent_reconciles or profile.workers",)
    assert np.isnan(found.history.workers[t >= 1800]).all()  # type: ignore[union-attr]
    verdicts = advise(q, history)  # ends: the recursion never sees 1e7 or 1e12
    assert [v.kind for v in verdicts] == ["insufficient_data"]
    assert "10,000,000" in verdicts[0].summary


def test_impossible_values_are_named_with_their_value() -> None:
    q = QueueSnapshot("q", workers=-1.0, depth_mean=-5.0, throughput_per_s=-3.0,
                      unfinished_work_growth=-0.5, reconcile_results_per_s={"error": -1.0})
    found = screen(q)
    text = " ".join(found.problems)
    for part in ("workers is -1", "depth_mean is -5", "throughput_per_s is -3",
                 "reconcile_results_per_s has impossible negative values, error=-1"):
        assert part in text
    assert "unfinished_work_growth" not in text  # a derivative may fall
    assert found.signals.unfinished_work_growth == -0.5
    assert screen(QueueSnapshot("ok", workers=4.0)).problems == ()
