"""Parsing of histogram ``le`` label values (the quantile itself is
:func:`models.histogram.bucket_quantile`)."""

from __future__ import annotations

import math

__all__ = ["parse_le"]


def parse_le(text: str) -> float | None:
    """An ``le`` label value as a float (``+Inf`` included), None when it is not a number."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value
