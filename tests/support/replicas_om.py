"""The same OpenMetrics series stored once per replica of a Prometheus HA pair (issue 23 §3).

Two Prometheus servers scraping the same targets, read through one query endpoint without
deduplication (a Thanos Query without ``--query.replica-label``, two remote writes into one
Mimir/VictoriaMetrics without HA dedup), hold every series twice, told apart only by the
replica's external label. :func:`replicated` turns the text of any OpenMetrics builder of
this folder (:func:`tests.support.workqueue_om.main_text`) into that: each family's samples
once per replica value, the label added to every sample line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+ \S+)\Z")


def _with_label(line: str, label: str, value: str) -> str:
    m = _SAMPLE.match(line)
    if m is None:
        raise ValueError(f"not an OpenMetrics sample line: {line[:80]!r}")
    name, labels, rest = m.group(1), m.group(2), m.group(3)
    extra = f'{label}="{value}"'
    inner = f"{labels[1:-1]},{extra}" if labels and labels != "{}" else extra
    return f"{name}{{{inner}}} {rest}"


def replicated(text: str, label: str = "replica", values: Sequence[str] = ("a", "b")) -> str:
    """``text`` (OpenMetrics, ``# EOF`` last) with every series once per ``values``, labelled
    ``label``: within each family all samples of the first replica, then the second's (each
    series stays in time order, as promtool requires)."""
    out: list[str] = []
    family: list[str] = []

    def flush() -> None:
        for value in values:
            out.extend(_with_label(line, label, value) for line in family)
        family.clear()

    for line in text.splitlines():
        if line.startswith("#"):
            flush()
            out.append(line)
        elif line:
            family.append(line)
    flush()
    return "\n".join(out) + "\n"
