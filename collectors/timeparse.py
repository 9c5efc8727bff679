"""Durations and times as users write them (flags, YAML, env), parsed in one place.

Both raise ``ValueError`` with a sentence; callers wrap it into their own error type
(``argparse.ArgumentTypeError`` in the CLI, ``ConfigError`` in config files).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_duration(text: str) -> float:
    """'90s', '5m', '1h30m', '250ms' or a bare number of seconds -> seconds (> 0)."""
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        pos, seconds = 0, 0.0
        for m in _DURATION.finditer(text):
            if m.start() != pos:
                break
            seconds += float(m.group(1)) * _UNIT_S[m.group(2)]
            pos = m.end()
        if pos != len(text) or not text:
            raise ValueError(f"not a duration: {text!r} (use e.g. 30s, 5m, 2h, 7d)") from None
    if not math.isfinite(seconds):
        raise ValueError(f"not a finite duration: {text!r} (use e.g. 30s, 5m, 2h, 7d)")
    if seconds <= 0:
        raise ValueError(f"duration must be > 0, got {text!r}")
    return seconds


MAX_TIME_S = 253402300799.0
"""9999-12-31T23:59:59Z: the last time RFC 3339 (and Prometheus's API) can write."""


def parse_time(text: str) -> float:
    """Unix seconds or RFC 3339 ('2024-01-01T00:30:00Z') -> unix seconds (UTC if no zone)."""
    try:
        value = float(text)
        if math.isfinite(value):
            if not 0 <= value <= MAX_TIME_S:
                raise ValueError(f"not a time: {text!r} (unix seconds from 0 to {MAX_TIME_S:.0f},"
                                 " the year 9999)")
            return value
    except ValueError as exc:
        if str(exc).startswith("not a time"):
            raise

    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not a time: {text!r} (use unix seconds or RFC 3339)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()
