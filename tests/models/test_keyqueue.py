"""Each client-go workqueue rule with its own trace; expected states written from the rule."""

from __future__ import annotations

import pytest

from models.errors import ModelInputError
from models.keyqueue import EXAMPLES, KeyQueue, cells, example, run_trace
from models.limits import KEY_TRACE_MAX_CELLS, KEY_TRACE_MAX_KEY_CHARS, KEY_TRACE_MAX_STEPS


def state(trace: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    last = run_trace(trace)[-1]
    return last.queue, last.dirty, last.processing


def test_add_of_a_dirty_key_is_coalesced() -> None:  # queue.go Add: dirty.has → return
    steps = run_trace("add A; add A; add A")
    assert [s.queue for s in steps] == [("A",)] * 3
    assert "coalesced" in steps[1].note
    assert "coalesced" in steps[2].note


def test_add_during_processing_marks_dirty_and_requeues_at_done() -> None:  # queue.go Add/Done
    steps = run_trace("add A; get; add A; done A")
    assert (steps[1].queue, steps[1].dirty, steps[1].processing) == ((), (), ("A",))
    assert (steps[2].queue, steps[2].dirty, steps[2].processing) == ((), ("A",), ("A",))
    assert (steps[3].queue, steps[3].dirty, steps[3].processing) == (("A",), ("A",), ())


def test_fifo_order_and_get_on_empty_would_block() -> None:  # queue.go Get
    steps = run_trace("add B; add A; get; get; get")
    assert steps[2].processing == ("B",)
    assert steps[3].processing == ("A", "B")
    assert "would block" in steps[4].note
    assert steps[4].processing == steps[3].processing


def test_done_without_get_is_an_error_naming_the_step() -> None:
    with pytest.raises(ModelInputError, match=r"step 2 \('done B'\)"):
        run_trace("add A; done B")


def test_unknown_op_and_bad_arguments_name_the_step() -> None:
    with pytest.raises(ModelInputError, match=r"step 3 \('frobnicate A'\)"):
        run_trace("add A; get; frobnicate A")
    with pytest.raises(ModelInputError, match=r"step 1 \('add'\)"):
        run_trace("add")
    with pytest.raises(ModelInputError, match=r"step 2"):
        run_trace("add A; add_after A soon")
    with pytest.raises(ModelInputError, match="empty"):
        run_trace(" ; ")


def test_add_after_zero_or_negative_adds_at_once() -> None:  # delaying_queue.go AddAfter
    assert state("add_after A 0") == (("A",), ("A",), ())
    assert state("add_after A -1s") == (("A",), ("A",), ())


def test_add_after_waits_keeps_earliest_and_fires_through_add() -> None:  # delaying_queue.go
    steps = run_trace("add_after A 1s; add_after A 3s; add_after A 500ms; wait 0.4; wait 0.1")
    assert steps[0].delayed == (("A", 1.0),)
    assert steps[1].delayed == (("A", 1.0),)  # later time ignored
    assert steps[2].delayed == (("A", 0.5),)  # earlier time wins
    assert steps[3].queue == ()
    assert steps[3].delayed == (("A", 0.5),)
    assert steps[4].queue == ("A",)
    assert steps[4].delayed == ()
    # a delayed key that is already dirty when it fires is coalesced
    steps = run_trace("add_after A 10ms; add A; tick 10ms")
    assert steps[-1].queue == ("A",)
    assert "coalesced" in steps[-1].note


def test_add_rate_limited_uses_limiter_and_forget_resets() -> None:  # rate_limiting_queue.go
    steps = run_trace("add_rate_limited A; add_rate_limited A; num_requeues A; forget A; "
                      "num_requeues A; add_rate_limited A")
    assert steps[0].delayed == (("A", pytest.approx(0.005)),)
    # second failure: 10 ms, but the earlier 5 ms entry is kept (earliest ready time)
    assert steps[1].delayed == (("A", pytest.approx(0.005)),)
    assert steps[1].failures == (("A", 2),)
    assert steps[2].note == "num_requeues A = 2"
    assert steps[3].failures == ()
    assert steps[4].note == "num_requeues A = 0"
    assert steps[5].failures == (("A", 1),)


def test_shutdown_ignores_adds_drops_delayed_but_hands_out_queued() -> None:  # queue.go
    steps = run_trace("add A; add_after B 1s; shutdown; add C; get; get")
    assert steps[2].delayed == ()
    assert steps[2].shutting_down
    assert steps[3].queue == ("A",)  # C ignored
    assert steps[4].processing == ("A",)
    assert "shutdown=true" in steps[5].note


def test_rate_limited_during_shutdown_still_counts_a_failure() -> None:
    # AddRateLimited evaluates When(item) before AddAfter sees the shutdown
    steps = run_trace("shutdown; add_rate_limited A")
    assert steps[-1].failures == (("A", 1),)
    assert steps[-1].delayed == ()


def test_shutdown_with_drain_waits_for_processing() -> None:
    steps = run_trace("add A; get; shutdown_with_drain; done A")
    assert "blocks until done is called for A" in steps[2].note
    assert "drain complete" in steps[3].note
    assert "returns at once" in run_trace("shutdown_with_drain")[0].note


def test_examples_show_their_pitfalls() -> None:
    names = {e.name for e in EXAMPLES}
    assert {"coalescing", "readd-during-processing", "get-without-done", "stale-penalty",
            "tight-loop"} <= names
    stale = run_trace(example("stale-penalty").trace)
    assert "20 ms" in stale[-2].note  # third failure, an hour later, 5 ms · 2^2
    fixed = run_trace(example("forget-on-success").trace)
    assert "says 5 ms" in fixed[-2].note
    stranded = run_trace(example("get-without-done").trace)[-1]
    assert stranded.processing == ("A",)
    assert stranded.dirty == ("A",)
    assert stranded.queue == ()
    loop = run_trace(example("tight-loop").trace)
    assert all(s.time_s == 0.0 for s in loop)
    assert loop[-1].processing == ("A",)
    with pytest.raises(ModelInputError, match="no example"):
        example("nope")


def test_queue_object_rejects_done_of_unknown_key() -> None:
    q = KeyQueue()
    with pytest.raises(ModelInputError):
        q.done("A")
    with pytest.raises(ModelInputError):
        q.advance(-1.0)


# --- issue 12: limits ------------------------------------------------------------------------

def test_the_snapshots_key_places_are_counted_and_capped() -> None:
    # n adds of distinct keys: after step i the queue and the dirty set hold i keys each,
    # so the snapshots hold 2·(1 + … + n) = n(n + 1) places
    trace = "; ".join(f"add k{i}" for i in range(50))
    steps = run_trace(trace)
    assert sum(cells(s) for s in steps) == 50 * 51
    assert run_trace(trace, max_cells=50 * 51) == steps
    with pytest.raises(ModelInputError, match="by step 50 the trace's states hold more than "
                                              "2,549 key places"):
        run_trace(trace, max_cells=50 * 51 - 1)


def test_the_default_cap_stops_a_quadratic_trace_early() -> None:
    trace = "; ".join(f"add k{i}" for i in range(KEY_TRACE_MAX_STEPS))  # 100 million places
    with pytest.raises(ModelInputError, match=f"more than {KEY_TRACE_MAX_CELLS:,} key places"):
        run_trace(trace)


def test_steps_and_key_names_are_limited() -> None:
    with pytest.raises(ModelInputError, match="more than 10,000 steps"):
        run_trace("get; " * (KEY_TRACE_MAX_STEPS + 1))
    name = "n" * KEY_TRACE_MAX_KEY_CHARS
    assert run_trace(f"add {name}")[-1].queue == (name,)
    with pytest.raises(ModelInputError, match="318 characters long"):
        run_trace(f"add {name}n")


def test_the_clock_stays_finite() -> None:
    with pytest.raises(ModelInputError, match="largest number"):
        run_trace("tick 1e308; tick 1e308")
    with pytest.raises(ModelInputError, match=r"step 2 .*ready time is past the largest number"):
        run_trace("tick 1e308; add_after A 1e308")
