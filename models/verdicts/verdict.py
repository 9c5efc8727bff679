"""One verdict: its typed kind (:mod:`models.verdicts.kinds`), its severity, its evidence
and its headline; and the helpers every rule words its verdict with."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from models.formatting import duration_text
from models.verdicts.kinds import SEVERITIES, Kind, Severity

__all__ = [
    "SEVERITIES",
    "Headline",
    "Kind",
    "Severity",
    "Verdict",
    "clean",
    "fmt_s",
    "make_verdict",
    "margin_conf",
    "num",
]


Headline = Callable[[Mapping[str, Any], Mapping[str, Any]], str]
"""A rule's headline: (evidence, recommendation) → one line of plain words."""


@dataclass(frozen=True)
class Verdict:
    """One finding about a queue. ``evidence`` holds the numbers behind it, ``recommendation``
    what to do (``action`` plus figures); neither contains NaN or ±Inf (they become None)."""

    kind: Kind
    severity: Severity
    summary: str
    evidence: Mapping[str, Any]
    recommendation: Mapping[str, Any]
    confidence: float
    """0–1: how strongly the data support the verdict (margin over the threshold, history)."""
    headline: str = ""
    """The verdict in one line of plain words ("More workers will help: 4 → 6"); the kind is
    the stable identifier, shown beside it as a tag."""


def clean(value: Any) -> Any:
    """``value`` with NaN and ±Inf as None, numpy scalars as Python numbers, mappings
    read-only and lists as tuples (what a verdict's evidence may hold)."""
    kind = type(value)  # fast paths for the common exact types; the same results as below
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): clean(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(clean(v) for v in value)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        v = float(value)
        return v if math.isfinite(v) else None
    return value


def make_verdict(kind: Kind, severity: Severity, summary: str, evidence: Mapping[str, Any],
                 recommendation: Mapping[str, Any], confidence: float, headline: Headline
                 ) -> Verdict:
    """The verdict with its evidence cleaned (:func:`clean`), its confidence clamped to 0–1
    and rounded to 0.01, and its headline from its own numbers."""
    conf = min(max(float(confidence), 0.0), 1.0) if math.isfinite(confidence) else 0.5
    ev, rec = clean(evidence), clean(recommendation)
    return Verdict(kind, severity, summary, ev, rec, round(conf, 2), headline(ev, rec))


def margin_conf(ratio: float, base: float = 0.55) -> float:
    """Confidence from how far a signal is past its threshold (ratio ≥ 1): 0.55 at the
    threshold, +0.15 per doubling, capped at 0.9."""
    if not math.isfinite(ratio) or ratio <= 0:
        return base
    return min(0.9, base + 0.15 * max(math.log2(ratio), 0.0))


def fmt_s(seconds: float | None) -> str:
    """A duration in the verdicts' words — the one formatter's
    (:func:`models.formatting.duration_text`: µs, ms, s, min, h) — or 'n/a'."""
    if seconds is None or not math.isfinite(seconds):
        return "n/a"
    return duration_text(seconds)


def num(value: float | None) -> float | None:
    """A measured value as a finite float, or None."""
    if value is None:
        return None
    v = float(value)
    return v if math.isfinite(v) else None
