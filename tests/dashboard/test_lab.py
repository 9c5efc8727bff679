"""The queue lab's state machine and readouts, called directly (no browser)."""

from __future__ import annotations

import dash
import numpy as np
import pytest

from dashboard.pages import lab
from models.errors import ModelInputError
from models.limits import FLUID_MAX_STEPS


def _run(state: lab.LabState, trigger: str, lam: float, mu: float, q0: float = 4,
         playing: bool = False) -> tuple[lab.LabState, bool, str]:
    new, play, error = lab.lab_control(trigger, lam, mu, q0, state, playing)
    assert new is not None
    return new, play, error


def test_reset_then_two_steps_grows_by_one_per_step() -> None:
    state = lab.reset_state(1, 1, 0)
    state, _, err = _run(state, "lab-reset", 4, 3, 4)
    assert err == ""
    assert (state["t"], state["backlog"]) == (0, 4.0)
    for _ in range(2):
        state, _, _ = _run(state, "lab-step", 4, 3)
    # q(t) = 4 + (4 - 3)·t by hand: t=2 -> 6
    assert (state["t"], state["backlog"]) == (2, 6.0)
    assert state["history"] == [[0, 4.0], [1, 5.0], [2, 6.0]]
    _, time_text, backlog_text, sentence, mm1_text = lab.lab_render(state, 4, 3)
    assert (time_text, backlog_text) == ("2", "6")
    assert sentence.startswith("backlog 4 + t")
    assert "unstable" in mm1_text


def test_stable_queue_clears_at_four_and_play_pauses_itself() -> None:
    state, _, _ = _run(lab.reset_state(4, 3, 4), "lab-reset", 2, 3, 4)
    assert lab.lab_render(state, 2, 3)[3] == "clears at t = 4"
    state, playing, _ = _run(state, "lab-play", 2, 3)
    assert playing
    backlogs = []
    while playing:
        state, playing, _ = _run(state, "lab-interval", 2, 3, playing=playing)
        backlogs.append(state["backlog"])
        assert state["t"] <= 4, "Play must pause once the stable queue is empty"
    # 4 - (3 - 2)·t: 3, 2, 1, 0 and then it stops
    assert backlogs == [3.0, 2.0, 1.0, 0.0]
    assert state["t"] == 4


def test_play_toggles_and_interval_ignored_while_paused() -> None:
    state = lab.reset_state(4, 3, 4)
    _, playing, _ = _run(state, "lab-play", 4, 3)
    assert playing
    _, playing, _ = _run(state, "lab-play", 4, 3, playing=True)
    assert not playing
    same, playing, _ = _run(state, "lab-interval", 4, 3, playing=False)
    assert same["t"] == 0
    assert not playing


def test_reset_pauses_and_uses_current_inputs() -> None:
    state = lab.reset_state(4, 3, 4)
    state, _, _ = _run(state, "lab-step", 4, 3)
    state, playing, _ = _run(state, "lab-reset", 2, 5, 7, playing=True)
    assert not playing
    assert (state["t"], state["backlog"], state["arrival_rate"], state["service_rate"]) == (
        0, 7.0, 2.0, 5.0)


def test_step_uses_inputs_changed_after_reset_and_starts_a_segment() -> None:
    # the seed's order: Reset, then set λ and μ, then Step
    state = lab.reset_state(4, 3, 4)
    state, _, _ = _run(state, "lab-step", 4, 3)            # t=1, q=5
    assert lab.prediction_sentence(state, 2, 3) == "clears at t = 6"  # 1 + 5/(3-2)
    state, _, _ = _run(state, "lab-step", 2, 3)            # t=2, q=4
    assert (state["origin_t"], state["origin_backlog"]) == (1, 5.0)
    assert state["backlog"] == 4.0
    assert lab.prediction_sentence(state, 2, 3) == "clears at t = 6"


@pytest.mark.parametrize(
    ("lam", "mu", "q0", "expected"),
    [
        (4, 3, 4, "backlog 4 + t"),
        (5, 3, 4, "backlog 4 + 2t"),
        (3.5, 3, 0, "backlog 0.5t"),
        (3, 3, 4, "backlog stays at 4"),
        (1, 3, 4, "clears at t = 2"),
        (0, 3, 1, "clears at t = 0.333"),
        (2, 3, 0, "clears at t = 0"),
    ],
)
def test_prediction_sentence(lam: float, mu: float, q0: float, expected: str) -> None:
    assert lab.prediction_sentence(lab.reset_state(lam, mu, q0), lam, mu).startswith(expected)


def test_prediction_after_a_mid_run_change_names_the_segment_start() -> None:
    state = lab.reset_state(3, 3, 4)
    state, _, _ = _run(state, "lab-step", 3, 3)
    state, _, _ = _run(state, "lab-step", 3, 3)          # t=2, q=4
    assert lab.prediction_sentence(state, 5, 3).startswith("backlog 4 + 2·(t − 2)")


def test_mm1_residence_and_unstable() -> None:
    # W = 1/(μ − λ) = 1/(3 − 2) = 1; ρ = 2/3
    text = lab.mm1_sentence(2, 3)
    assert "= 1 time units" in text
    assert "ρ = 0.667" in text
    assert "Poisson arrivals and exponential service" in text
    assert "unstable" in lab.mm1_sentence(3, 3)
    assert "unstable" in lab.mm1_sentence(4, 3)
    assert "= 0.25 time units" in lab.mm1_sentence(1, 5)


@pytest.mark.parametrize(
    ("lam", "mu", "q0", "needle"),
    [(None, 3, 4, "arrival rate"), (4, None, 4, "service rate"), (4, 3, -1, "initial backlog"),
     (float("nan"), 3, 4, "arrival rate")],
)
def test_bad_inputs_give_a_sentence_and_keep_state(
    lam: float | None, mu: float | None, q0: float, needle: str
) -> None:
    state = lab.reset_state(4, 3, 4)
    for trigger in ("lab-reset", "lab-step"):
        new, playing, error = lab.lab_control(trigger, lam, mu, q0, state, True)
        assert new is state
        assert not playing
        assert needle in error
        assert error.endswith(".")


def test_render_with_bad_inputs_shows_no_traceback() -> None:
    state = lab.reset_state(4, 3, 4)
    fig, t, q, sentence, _ = lab.lab_render(state, None, 3)
    assert (t, q) == ("0", "4")
    assert sentence.startswith("no prediction:")
    # the chart still shows the lab's own history, predicted with the last good λ = 4, μ = 3
    predicted, steps = fig["data"]
    assert list(steps["y"]) == [4.0]
    assert list(predicted["y"])[:3] == [4.0, 5.0, 6.0]


def test_text_in_a_number_field_is_a_sentence_not_a_traceback() -> None:
    state = lab.reset_state(4, 3, 4)
    new, playing, error = lab.lab_control("lab-step", "four", 3, 4, state, False)
    assert new is state
    assert not playing
    assert error == "The arrival rate λ must be a number, got 'four'."


def test_zero_service_rate_is_unstable_not_an_error() -> None:
    state = lab.reset_state(1, 0, 2)
    assert lab.prediction_sentence(state, 1, 0).startswith("backlog 2 + t")
    assert "unstable" in lab.mm1_sentence(1, 0)


def test_play_pauses_after_max_steps() -> None:
    state = lab.reset_state(4, 3, 0)
    state = {**state, "t": lab.MAX_STEPS - 1}
    new, playing, _ = _run(state, "lab-interval", 4, 3, playing=True)
    assert new["t"] == lab.MAX_STEPS
    assert not playing


def test_reset_state_rejects_bad_values() -> None:
    with pytest.raises(ModelInputError):
        lab.reset_state(-1, 3, 4)


def test_layout_has_the_stable_ids() -> None:
    text = str(lab.layout())
    for element_id in ("lab-arrival-rate", "lab-service-rate", "lab-initial-backlog",
                       "lab-reset", "lab-step", "lab-play", "lab-time", "lab-backlog",
                       "lab-prediction", "lab-interval"):
        assert f"id='{element_id}'" in text, element_id
    assert "no dirty set, no Done, no Forget, no jitter" in text


# --- issue 12: bounded work whatever the numbers or the store -----------------------------------

def _points(fig: object) -> int:
    return sum(len(trace["x"]) for trace in fig["data"])  # type: ignore[index]


@pytest.mark.parametrize(("lam", "mu", "q0", "sentence"), [
    (0, 1, 100_000, "clears at t = 100,000"),            # 125,000 prediction points before
    (0, 1, 10_000_000, "clears at t = 10,000,000"),       # 12.5 million (52 s, 1.76 GB) before
    (2.999999, 3, 4, "clears at t = 4,000,000"),      # 5 million (33 s) before
    (0, 1e-300, 1e9, "clears, but only after"),         # q0 / (μ − λ) overflows to inf
])
def test_a_long_prediction_is_drawn_with_at_most_the_limit_of_points(
        lam: float, mu: float, q0: float, sentence: str) -> None:
    state, _, error = _run(lab.reset_state(4, 3, 4), "lab-reset", lam, mu, q0)
    assert error == ""
    fig, _, _, text, _ = lab.lab_render(state, lam, mu)
    assert text.startswith(sentence)
    predicted, steps = fig["data"]
    assert len(predicted["x"]) <= FLUID_MAX_STEPS + 2
    assert list(steps["y"]) == [q0]
    # the drawn points lie on q(t) = max(0, q0 + (λ − μ)·t), the line's ends included
    t, q = np.asarray(predicted["x"]), np.asarray(predicted["y"])
    np.testing.assert_allclose(q, np.maximum(0.0, q0 + (lam - mu) * t), rtol=1e-12, atol=1e-6)


def test_the_clock_stops_at_the_shared_limit_with_a_sentence() -> None:
    state = {**lab.reset_state(4, 3, 4), "t": FLUID_MAX_STEPS, "origin_t": 0}
    new, playing, error = _run(state, "lab-step", 4, 3)
    assert new["t"] == FLUID_MAX_STEPS
    assert not playing
    assert f"t = {FLUID_MAX_STEPS:,}" in error
    assert "Reset" in error


def test_numbers_above_the_lab_limit_are_a_sentence() -> None:
    state = lab.reset_state(4, 3, 4)
    new, _, error = lab.lab_control("lab-reset", 4, 3, 1e10, state, False)
    assert new is state
    assert error == "The initial backlog q0 must be at most 1e+09 (the lab's limit), got 1e+10."
    assert "at most 1e+09" in lab.lab_render(state, 1e300, 3)[3]


FORGED: list[object] = [
    None, [], "state", 7, {},
    {**lab.reset_state(4, 3, 4), "t": 1e300},                     # the client's own t
    {**lab.reset_state(4, 3, 4), "t": 10**400},                    # a 400-digit JSON integer
    {**lab.reset_state(4, 3, 4), "t": -1},
    {**lab.reset_state(4, 3, 4), "t": 2.5},
    {**lab.reset_state(4, 3, 4), "t": True},
    {**lab.reset_state(4, 3, 4), "backlog": float("nan")},
    {**lab.reset_state(4, 3, 4), "backlog": "4"},
    {**lab.reset_state(4, 3, 4), "arrival_rate": 1e300},
    {**lab.reset_state(4, 3, 4), "service_rate": -3},
    {**lab.reset_state(4, 3, 4), "origin_t": 5},                   # after t
    {**lab.reset_state(4, 3, 4), "history": []},
    {**lab.reset_state(4, 3, 4), "history": [[0, 4.0]] * (FLUID_MAX_STEPS + 2)},
    {**lab.reset_state(4, 3, 4), "history": [[0, 4.0, 1]]},
    {**lab.reset_state(4, 3, 4), "history": [[1e300, 4.0]]},
    {**lab.reset_state(4, 3, 4), "history": "[[0, 4]]"},
    {k: v for k, v in lab.reset_state(4, 3, 4).items() if k != "history"},
]


@pytest.mark.parametrize("forged", FORGED[5:], ids=range(len(FORGED) - 5))
def test_a_forged_store_is_a_sentence_in_render(forged: object) -> None:
    fig, t, q, sentence, _ = lab.lab_render(forged, 4, 3)  # type: ignore[arg-type]
    assert fig is dash.no_update
    assert (t, q) == ("—", "—")
    assert sentence.startswith("The lab's saved state is not valid: ")
    assert sentence.endswith("Press Reset.")


@pytest.mark.parametrize("forged", FORGED[:5] + FORGED[5:], ids=range(len(FORGED)))
@pytest.mark.parametrize("trigger", ["lab-step", "lab-interval", "lab-play"])
def test_a_forged_store_is_reset_by_control(forged: object, trigger: str) -> None:
    new, playing, error = lab.lab_control(trigger, 4, 3, 4, forged, True)  # type: ignore[arg-type]
    if forged is None:  # no store yet: the first callback resets
        assert error == ""
    else:
        assert error.startswith("The lab's saved state is not valid: ")
        assert error.endswith("The lab was reset.")
    assert new == lab.reset_state(4, 3, 4)
    assert not playing


def test_a_full_valid_store_is_read_in_linear_time() -> None:
    state = lab.reset_state(4, 3, 4)
    state = {**state, "t": FLUID_MAX_STEPS,
             "history": [[k, 4.0 + k] for k in range(FLUID_MAX_STEPS + 1)],
             "backlog": 4.0 + FLUID_MAX_STEPS}
    assert lab.validate_state(state)["history"][-1] == [FLUID_MAX_STEPS, 4.0 + FLUID_MAX_STEPS]
    fig, t, _, sentence, _ = lab.lab_render(state, 4, 3)
    assert t == f"{FLUID_MAX_STEPS:,}"
    assert sentence.startswith("backlog 4 + t")
    assert _points(fig) <= 2 * (FLUID_MAX_STEPS + 2)


def test_the_page_states_its_limits() -> None:
    text = str(lab.layout())
    assert f"t = {FLUID_MAX_STEPS:,}" in text
    assert "up to 1e+09" in text
    assert "`queuelens lab fluid` has the same limits" in text
