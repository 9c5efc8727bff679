"""The CPU limit's detector and a retry storm's cause: the boundaries each threshold's reason
gives (the mechanisms themselves are judged end to end in the regime matrix: ``cpu_bound``,
``cpu_roomy``, ``conflict_retry``)."""

from __future__ import annotations

import pytest

from models.bindings.cpu import (
    CPU_BUSY_SHARE_MIN,
    CPU_BUSY_SHARE_SHARED,
    cores_available,
    cpu_finding,
)
from models.bindings.failures import CAUSE_SHARE_MIN, failure_cause


def test_the_cores_available_are_the_smaller_of_gomaxprocs_and_the_limit() -> None:
    assert cores_available(8.0, 2.0) == 2.0   # Go < 1.25: GOMAXPROCS = the node's cores
    assert cores_available(2.0, None) == 2.0
    assert cores_available(None, 0.5) == 0.5
    assert cores_available(None, None) is None
    assert cores_available(0.0, float("nan")) is None


def test_the_cpu_binds_at_its_cores_and_gives_the_utilization_law_ceiling() -> None:
    # 0.95 of one core at 11.9 passes/s: 80 ms of CPU a pass, ceiling 1 / 0.08 = 12.5/s
    found = cpu_finding(0.952, 1.0, None, None, 0.004, 11.9)
    assert found is not None
    assert found.binds
    assert found.cpu_s_per_pass == pytest.approx(0.08)
    assert found.ceiling_per_s == pytest.approx(12.5)
    assert "4 ms" in found.reason


def test_a_busy_core_binds_only_when_the_passes_stretch() -> None:
    busy = (CPU_BUSY_SHARE_SHARED + CPU_BUSY_SHARE_MIN) / 2
    alone = cpu_finding(busy, 1.0, None, None, None, 10.0)
    stretching = cpu_finding(busy, 1.0, None, None, None, 10.0, stretching=True)
    assert alone is not None
    assert stretching is not None
    assert not alone.binds
    assert stretching.binds
    assert not cpu_finding(0.2, 8.0, None, None, None, 10.0, stretching=True).binds  # type: ignore[union-attr]


def test_throttling_binds_under_the_mean_and_nothing_without_the_cpu_rate() -> None:
    found = cpu_finding(0.3, 4.0, 0.5, 0.4, None, 10.0)
    assert found is not None
    assert found.binds
    assert found.cores_available == 0.5
    assert cpu_finding(None, 4.0, 0.5, 0.4, None, 10.0) is None


def test_a_storm_of_conflicts_is_a_write_problem() -> None:
    # 6 failing passes/s in a queue doing half the process's passes; 10 conflicts/s process-wide
    cause = failure_cause(6.0, {"2xx": 30.0, "409": 10.0}, 0.5)
    assert cause.cause.binding == "write_conflicts"
    assert cause.explained_share == pytest.approx(5.0 / 6.0)
    assert "patch or server-side apply" in cause.cause.fix


def test_the_largest_explanation_over_half_names_the_cause_else_the_reconciler() -> None:
    assert failure_cause(4.0, {"429": 3.0, "409": 1.0}, 1.0).cause.binding == "api_server"
    assert failure_cause(4.0, {"5xx": 4.0}, 1.0).cause.name == "5xx"
    below = CAUSE_SHARE_MIN * 4.0 * 0.9
    mixed = failure_cause(4.0, {"409": below, "429": below}, 1.0)
    assert mixed.cause.name == "reconciler"
    assert mixed.explained_share is None
    assert failure_cause(0.0, {"409": 5.0}, 1.0).cause.name == "reconciler"
