"""The fuzz tests' wall-clock bound fires (an unbounded run fails the test instead of
hanging it)."""

from __future__ import annotations

import time

import pytest

from tests.fuzz.strategies import Overran, time_bound


def test_the_time_bound_stops_a_run_that_overruns() -> None:
    start = time.monotonic()
    def spin() -> None:
        with time_bound(0.2, "spin"):
            while True:
                time.sleep(0.01)

    with pytest.raises(Overran, match=r"spin ran longer than 0\.2 s"):
        spin()
    assert time.monotonic() - start < 2
    with time_bound(1.0, "quick"):  # a run within the bound is untouched, the timer cleared
        pass
    time.sleep(1.1)


def test_the_time_bound_rearms_an_outer_timer() -> None:
    import signal

    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 5.0)  # as pytest-timeout's signal method does
        with time_bound(0.5, "inner"):
            pass
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 4.0 < left <= 5.0  # still armed, with what was left
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert fired == []
