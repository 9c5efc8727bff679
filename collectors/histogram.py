"""Parsing of histogram ``le`` label values: :func:`models.histogram.parse_le` (the quantile
itself is :func:`models.histogram.bucket_quantile`)."""

from __future__ import annotations

from models.histogram import parse_le

__all__ = ["parse_le"]
