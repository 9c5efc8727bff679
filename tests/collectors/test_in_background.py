"""collectors.query_pool.in_background: a read beside another, in the caller's context."""

from __future__ import annotations

import threading
import time

import pytest

from collectors.deadlines import current_deadline, deadline_scope
from collectors.errors import PrometheusTimeout, PrometheusUnreachable
from collectors.query_pool import in_background


def test_the_read_runs_on_another_thread_under_the_callers_deadline() -> None:
    with deadline_scope(30.0, "this page refresh") as mine:
        join = in_background(lambda: (threading.get_ident(), current_deadline()))
        ident, seen = join()
    assert ident != threading.get_ident()
    assert seen is mine


def test_its_error_is_raised_by_the_join() -> None:
    def fail() -> None:
        raise PrometheusUnreachable("connection refused")

    join = in_background(fail)
    with pytest.raises(PrometheusUnreachable, match="connection refused"):
        join()


def test_the_join_gives_up_at_the_deadline_naming_the_budget() -> None:
    gate = threading.Event()
    try:
        with deadline_scope(0.2, "this page refresh"):
            join = in_background(lambda: gate.wait(30.0))
            t0 = time.monotonic()
            with pytest.raises(PrometheusTimeout, match=r"0\.2 s budget of this page refresh"):
                join()
        assert time.monotonic() - t0 < 10.0  # the 2 s slack past the deadline, not 30 s
    finally:
        gate.set()
