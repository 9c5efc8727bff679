"""The one number formatter (models.formatting): each rule of its docstring, case by case."""

from __future__ import annotations

import math

import pytest

from models.formatting import count_text, duration_text, number_text, percent_text, sig


@pytest.mark.parametrize(("value", "text"), [
    (0.0, "0"), (0.7151, "0.715"), (670.2, "670"), (12.0, "12"), (16.003, "16"),
    (14.773333, "14.8"), (1234.0, "1,230"), (8333.3, "8,330"), (1.2e7, "12,000,000"),
    (-0.5, "-0.5"), (4e-4, "< 0.001"), (7.7e-28, "< 0.001"), (-2e-5, "> -0.001"),
    (0.001, "0.001"), (0.0009996, "0.001"), (2.5e15, "2.50e+15"), (math.nan, "no data"),
])
def test_sig(value: float, text: str) -> None:
    assert sig(value) == text


@pytest.mark.parametrize(("value", "text"), [
    (None, "no data"), (math.inf, "no data"), (0.0, "0 s"), (0.7151, "0.715 s"),
    (0.0999999, "0.1 s"), (0.0454, "45.4 ms"), (4.04e-4, "404 µs"), (2e-5, "20 µs"),
    (9.999999999999999e-06, "10 µs"), (1e-8, "10 ns"), (1e-32, "< 1 ns"), (119.0, "119 s"),
    (300.0, "5 min"),
    (670.2, "11.2 min"), (7200.0, "2 h"), (3601.0, "1 h"), (5400.0, "90 min"),
    (172798.0, "48 h"), (259199.0, "72 h"),
    (12600.0, "3.5 h"),
])
def test_durations(value: float | None, text: str) -> None:
    assert duration_text(value) == text
    assert number_text(value, "s") == text


@pytest.mark.parametrize(("value", "unit", "text"), [
    (15.07, "/s", "15.1/s"), (16.003, "/s", "16/s"), (2e-5, "/s", "0.072/h"),
    (0.0, "/s", "0/s"), (3.0, "cores", "3 cores"), (None, "/s", "no data"),
    (8333.3, "req/s", "8,330 req/s"),
])
def test_units(value: float | None, unit: str, text: str) -> None:
    assert number_text(value, unit) == text


@pytest.mark.parametrize(("share", "text"), [
    (0.73, "73 %"), (0.8985, "90 %"), (0.9233, "92 %"), (0.042, "4.2 %"), (0.9971, "99.7 %"),
    (0.99999, "> 99.9 %"), (0.9995, "> 99.9 %"),
    (1.0, "100 %"), (9.9995, "1,000 %"), (0.0004, "< 0.1 %"), (0.0, "0 %"), (1.5, "150 %"),
    (None, "no data"), (0.1, "10 %"), (0.0994, "9.9 %"),
])
def test_percent(share: float | None, text: str) -> None:
    assert percent_text(share) == text


def test_counts() -> None:
    assert count_text(100482) == "100,482"
    assert count_text(7.6) == "8"
    assert count_text(None) == "no data"
