"""Hostile values shared by the fuzz tests, and the settings every fuzz test runs with."""

from __future__ import annotations

import math
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from types import FrameType
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st


def fuzz_settings(max_examples: int, deadline_s: float | None) -> settings:
    """Derandomized (the same examples every run: CI is deterministic), no example database
    (nothing written to the tree), ``max_examples`` sized so the whole package stays within its
    time budget, and hypothesis's own per-example deadline (None where a timer of
    :func:`time_bound` is the bound instead: the first run of a command may compile)."""
    return settings(
        max_examples=max_examples,
        derandomize=True,
        database=None,
        deadline=None if deadline_s is None else timedelta(seconds=deadline_s),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.function_scoped_fixture],
        print_blob=False,
    )


class Overran(BaseException):
    """Raised by :func:`time_bound`'s timer; a BaseException so no ``except Exception`` in the
    code under test swallows it."""


@contextmanager
def time_bound(seconds: float, what: str) -> Iterator[None]:
    """Fail with :class:`Overran` when the block runs longer than ``seconds`` of wall-clock
    time (SIGALRM through :func:`signal.setitimer`: the tests run in the main thread).

    pytest-timeout's signal method uses the same timer: an earlier deadline of its own is kept
    (it fires first, as it would have), and its timer is re-armed with what is left on the
    way out, so the suite's per-test timeout still holds after the block."""

    def fire(_signum: int, _frame: FrameType | None) -> None:
        raise Overran(f"{what} ran longer than {seconds:g} s")

    start = time.monotonic()
    previous = signal.signal(signal.SIGALRM, fire)
    outer, _interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    if 0 < outer < seconds:  # the outer deadline comes first: its handler, its time
        signal.signal(signal.SIGALRM, previous)
        signal.setitimer(signal.ITIMER_REAL, outer)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer > 0:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - start), 1e-3))


CONTROL = "".join(chr(c) for c in [*range(32), 127, *range(0x80, 0xA0)]) + "\u202e\u200f"
"""C0, DEL, C1, the right-to-left override and mark."""

UNICODE_DIGITS = ["١٢٣", "۴۵", "१२", "１２", "𝟗", "²", "Ⅻ", "1_000", "0x1p3", "٣.٥"]

HOSTILE_NUMBER_TEXTS = [
    "0", "-0", "-1", "-5", "1e308", "-1e308", "1e309", "1e-320", "nan", "NaN", "inf", "-inf",
    "Infinity", "1e12", "10000000", "99999999999999999999999", "-9223372036854775809",
    "1.0e+12", "0.0", "1e", ".", "", " ", "5mm", "1h1h", "1e308s", "-1s", "999999999h",
    "253402300799", "1e-9", "3:0", "exp:5ms:1e308s", "1-1e12", "16-1", "a=b", "=", "NAME=nan",
]
"""Number-like text: huge, negative, non-finite, denormal, malformed, with units."""

hostile_text = st.one_of(
    st.sampled_from(HOSTILE_NUMBER_TEXTS),
    st.sampled_from(UNICODE_DIGITS),
    st.text(alphabet=st.sampled_from(CONTROL + "ab{}=,:;'\"\\/%$*-_. 0123456789"),
            max_size=24),
    st.text(max_size=16),
    st.integers(1000, 100_000).map(lambda n: "9" * n),
    st.integers(1000, 100_000).map(lambda n: "a" * n),
)
"""Text a person or an attacker could type: numbers of every shape, controls, long strings."""

hostile_numbers: st.SearchStrategy[float | int] = st.one_of(
    st.sampled_from([0, -1, -5, 10**12, 10**30, -(10**30), 2**63, 1e308, -1e308, 1e-320,
                     math.inf, -math.inf, math.nan]),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
)

json_scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), hostile_numbers, hostile_text)

json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(hostile_text, st.sampled_from(
            ["t", "backlog", "history", "steps", "value", "data", "id", "x", "y"])),
            children, max_size=4)),
    max_leaves=12,
)
"""JSON-shaped values of every type, nested, with hostile leaves (NaN and infinities included:
Python's JSON reader accepts them from a forged request)."""
