"""Equality of reads for the equivalence tests (an incremental read against a full one, a
read of recorded series against the raw one, VictoriaMetrics against Prometheus):

* :func:`assert_same_range`: two range reads with the same queues, columns and signals, each
  matrix equal to ``rtol`` relative or ``atol`` absolute (NaN equal to NaN);
* :func:`assert_close`: any two results — snapshots, plans, verdicts — equal through
  dataclasses, mappings and sequences, floats to a tolerance, the rest exactly.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from models.measurements import RangeData

__all__ = ["assert_close", "assert_same_range"]


def assert_same_range(got: RangeData, want: RangeData, *, rtol: float = 1e-9,
                      atol: float = 1e-12, notes: bool = True) -> None:
    """``got`` reads what ``want`` does: matrices, warnings and scrape-gap masks. ``notes``
    False: of the warnings, the scrape-gap sentences only, not the read-wide notes about the
    answers (a merged read keeps each part's "N +Inf point(s) left out")."""
    assert got.queues == want.queues
    np.testing.assert_array_equal(got.t, want.t)
    assert set(got.signals) == set(want.signals)
    for name, matrix in want.signals.items():
        np.testing.assert_allclose(got.signals[name], matrix, rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=name)
    skip_got, skip_want = (0, 0) if notes else (len(got.notes), len(want.notes))
    assert got.warnings[skip_got:] == want.warnings[skip_want:]
    assert (got.gap is None) == (want.gap is None)
    if want.gap is not None:
        np.testing.assert_array_equal(got.gap, want.gap, err_msg="scrape-gap mask")


def assert_close(got: Any, want: Any, where: str = "", abs_tol: float = 1e-12,
                 rel_tol: float = 1e-9) -> None:
    """Equal, floats to ``rel_tol`` relative or ``abs_tol`` (NaN equal to NaN), through
    dataclasses, mappings and sequences (ints and verdict kinds exactly; strings word for word,
    a number in them to one unit of its last shown digit: :func:`_same_words`)."""
    if dataclasses.is_dataclass(want) and not isinstance(want, type):
        assert type(got) is type(want), where
        for f in dataclasses.fields(want):
            assert_close(getattr(got, f.name), getattr(want, f.name), f"{where}.{f.name}",
                         abs_tol, rel_tol)
    elif isinstance(want, Mapping):
        assert isinstance(got, Mapping), where
        assert set(got) == set(want), where
        for k in want:
            assert_close(got[k], want[k], f"{where}[{k!r}]", abs_tol, rel_tol)
    elif isinstance(want, np.ndarray):
        np.testing.assert_allclose(got, want, rtol=rel_tol, atol=abs_tol, equal_nan=True,
                                   err_msg=where)
    elif isinstance(want, Sequence) and not isinstance(want, str):
        assert isinstance(got, Sequence), where
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_close(g, w, f"{where}[{i}]", abs_tol, rel_tol)
    elif isinstance(want, float) and not isinstance(got, bool):
        assert isinstance(got, float | int), where
        if math.isnan(want):
            assert math.isnan(got), where
        else:
            assert got == pytest.approx(want, rel=rel_tol, abs=abs_tol), where
    elif isinstance(want, str):
        assert isinstance(got, str), where
        assert _same_words(got, want), (where, got, want)
    else:
        assert got == want, where


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _same_words(got: str, want: str) -> bool:
    """The same text, each number in it within one unit of its last shown digit: a value
    that sits on a rounding boundary (a median of exactly 0.3675 s, read as 0.36750000000002
    one way and 0.36749999999998 the other) is shown '0.368' or '0.367', and nothing else may
    differ."""
    if got == want:
        return True
    words_got, words_want = _NUMBER.split(got), _NUMBER.split(want)
    nums_got, nums_want = _NUMBER.findall(got), _NUMBER.findall(want)
    if words_got != words_want or len(nums_got) != len(nums_want):
        return False
    for g, w in zip(nums_got, nums_want, strict=True):
        digits = len(w.partition(".")[2])
        if len(g.partition(".")[2]) != digits or \
                abs(float(g) - float(w)) > 1.000001 * 10.0 ** -digits:
            return False
    return True
