"""Fluid model: the seed's two queue-lab cases, computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from models.errors import ModelInputError
from models.fluid import fluid_backlog, fluid_summary, fluid_trace


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
