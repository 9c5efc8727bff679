"""Fluid model: the seed's two queue-lab cases, computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.errors import ModelInputError
from models.fluid import (
    check_lab_inputs,
    default_step,
    fluid_backlog,
    fluid_line,
    fluid_summary,
    fluid_trace,
)
from models.limits import FLUID_MAX_STEPS, FLUID_MAX_VALUE


def test_overload_backlog_is_4_plus_t() -> None:
    t, q = fluid_trace(4, 4, 3, until_s=10, step_s=1)
    np.testing.assert_array_equal(q, 4 + t)
    s = fluid_summary(4, 4, 3)
    assert s.growth_per_s == 1
    assert s.clear_time_s is None


def test_stable_case_clears_at_t_4() -> None:
    s = fluid_summary(4, 2, 3)
    assert s.growth_per_s == -1
    assert s.clear_time_s == 4
    t, q = fluid_trace(4, 2, 3, until_s=6, step_s=0.5)
    assert q[t == 4][0] == 0
    assert q[t == 2][0] == 2
    assert np.all(q[t >= 4] == 0)


def test_bad_input() -> None:
    with pytest.raises(ModelInputError):
        fluid_backlog(4, -1, 3, [0.0])
    with pytest.raises(ModelInputError):
        fluid_trace(4, 1, 3, until_s=1, step_s=0)


# --- limits (issue 12): one limit for the page and the CLI, models.limits ----------------------

def test_a_trace_has_at_most_the_shared_number_of_steps() -> None:
    t, _ = fluid_trace(0, 0, 1, until_s=FLUID_MAX_STEPS, step_s=1)
    assert len(t) == FLUID_MAX_STEPS + 1
    for until, step in ((FLUID_MAX_STEPS + 1, 1.0), (1.0, 5e-324), (1e308, 5e-324)):
        with pytest.raises(ModelInputError, match=f"more than {FLUID_MAX_STEPS:,}"):
            fluid_trace(0, 0, 1, until_s=until, step_s=step)


def test_inputs_above_the_lab_limit_are_refused() -> None:
    check_lab_inputs(FLUID_MAX_VALUE, FLUID_MAX_VALUE, FLUID_MAX_VALUE)
    for args in ((FLUID_MAX_VALUE * 2, 1, 1), (1, 1e300, 1), (1, 1, math.nextafter(1e9, 2e9))):
        with pytest.raises(ModelInputError, match="at most 1e"):
            check_lab_inputs(*args)
        with pytest.raises(ModelInputError):
            fluid_trace(*args, until_s=1)


@pytest.mark.parametrize(("until", "step"), [
    (0.0, 1.0), (5e-324, 1.0), (10_000.0, 1.0), (10_001.0, 2.0), (20_000.0, 2.0),
    (20_001.0, 2.0), (20_002.0, 5.0), (4e6, 500.0), (1e18, 1e14), (1.7e308, 2e304),
])
def test_default_step_is_the_smallest_1_2_5_step_within_the_limit(until: float,
                                                                   step: float) -> None:
    assert default_step(until) == step
    assert math.floor(until / step + 1e-9) <= FLUID_MAX_STEPS
    smaller = {1.0: None, 2.0: 1.0, 5.0: 2.0}.get(step / 10 ** math.floor(math.log10(step)))
    if smaller is not None:  # the next step down on the 1-2-5 ladder would be too many
        assert until / (smaller * 10 ** math.floor(math.log10(step))) > FLUID_MAX_STEPS


def test_the_drawn_line_is_short_and_exactly_the_prediction() -> None:
    # issue 12's page DoS: q0 = 10,000,000, λ = 0, μ = 1 drew 12.5 million points
    q0, lam, mu, span = 1e7, 0.0, 1.0, 1.25e7
    tau, q = fluid_line(q0, lam, mu, span)
    assert len(tau) <= FLUID_MAX_STEPS + 2
    assert tau[0] == 0
    assert tau[-1] == span
    assert 1e7 in tau  # the clearing time t* = q0 / (μ − λ) is a point of the line
    np.testing.assert_array_equal(q, np.maximum(0.0, q0 - tau))
    # between the points, the straight segments are q(t) itself (checked at random times)
    rng = np.random.default_rng(0)
    t = rng.uniform(0, span, 2000)
    np.testing.assert_allclose(np.interp(t, tau, q), np.maximum(0.0, q0 - t), atol=1e-6)
    # short spans keep one point per time unit
    tau, q = fluid_line(4, 2, 3, 6)
    assert tau.tolist() == [0, 1, 2, 3, 4, 5, 6]
    assert q.tolist() == [4, 3, 2, 1, 0, 0, 0]
