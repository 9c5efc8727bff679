"""The one settings object of an analysis: what every surface reads the data with.

The overview, the queue page, the what-if page, ``advise``, ``whatif``, ``report`` and the
capacity plan all judge a queue from the same read: a snapshot with rates over ``window_s``
and a history of ``range_s`` at one point per ``step_s``, against the same objective (the
``slo_quantile`` of queue wait within ``slo_wait_s``) and the same advisor thresholds. Two
surfaces with different ranges quote different demands for the same queue (a 24 h report
said 15.1/s where a 1 h page said 14.4/s), so there is one default and one step policy,
settable from the config file (``analysis:``) and CLI flags, and stated on every page and
report by :meth:`AnalysisSettings.describe`.

Step policy: ``step_s = max(range_s / RANGE_POINTS, MIN_STEP_S)`` — 120 points (60 s over
the default 2 h): enough points for the advisor's trend and scaling fits (it needs at least
``min_history_points``), and never finer than 15 s, the usual scrape interval, below which
neighbouring points repeat the same samples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from models.advisor import AdvisorThresholds
from models.errors import ModelInputError
from models.formatting import duration_text

__all__ = [
    "DEFAULT_AGGREGATE_BY",
    "DEFAULT_RANGE_S",
    "DEFAULT_SLO_WAIT_S",
    "DEFAULT_WINDOW_S",
    "MAX_AGGREGATE_LABELS",
    "MAX_RANGE_S",
    "MIN_STEP_S",
    "RANGE_POINTS",
    "AnalysisSettings",
    "describe_duration",
    "thresholds_from_mapping",
]

DEFAULT_WINDOW_S = 300.0
"""Rate window of the snapshot: 5 min holds 20 samples of a 15 s scrape, enough for rate()
to be stable, and short enough to show a change within minutes."""
DEFAULT_RANGE_S = 7200.0
"""History the advisor reads: 2 h covers several load swings of a typical controller and is
what the regime benchmark (``benchmarks/bench_regimes.py``) measures the verdicts with."""
DEFAULT_SLO_WAIT_S = 1.0
"""Queue-wait objective: a key waits at most 1 s before a worker picks it up."""
RANGE_POINTS = 120
MIN_STEP_S = 15.0
MAX_RANGE_S = 90 * 86400.0
"""A cap on the range: 90 days at 120 points is a 18 h step; beyond it the capacity math
mixes deployments."""
DEFAULT_AGGREGATE_BY: tuple[str, ...] = ("cluster", "namespace", "job", "name")
"""The labels the recorded series of ``queuelens rules`` keep (``sum by (...)``): the ones
that tell one controller's queue from another's of the same name — another cluster (Thanos,
Mimir), another namespace, another deployment (``job``) — and the queue label. A label a
series lacks groups as empty, so a single-cluster Prometheus loses nothing."""
MAX_AGGREGATE_LABELS = 16
"""A cap on the aggregation labels (user input): more is a mistake, and the level part of a
recorded series' name (the labels joined by ``_``) grows with each."""


def describe_duration(seconds: float) -> str:
    """'5 min', '2 h', '90 s', '1.5 h', '3 days': a duration for a sentence (the one
    formatter's :func:`models.formatting.duration_text`)."""
    return duration_text(seconds)


@dataclass(frozen=True)
class AnalysisSettings:
    """Window, range, step, objective and thresholds of every read and verdict (SI units)."""

    window_s: float = DEFAULT_WINDOW_S
    range_s: float = DEFAULT_RANGE_S
    slo_wait_s: float = DEFAULT_SLO_WAIT_S
    thresholds: AdvisorThresholds = field(default_factory=AdvisorThresholds)
    """Every threshold of the advisor, ``slo_quantile`` and ``util_target`` included."""
    aggregate_by: tuple[str, ...] = DEFAULT_AGGREGATE_BY
    """The labels the recorded series of ``queuelens rules`` keep (config
    ``analysis.aggregate_by``, flag ``--by``; :data:`DEFAULT_AGGREGATE_BY`). Each is checked
    as a Prometheus label name where it is read (config, flag)."""

    def __post_init__(self) -> None:
        by = self.aggregate_by
        if (not isinstance(by, tuple) or not by or len(by) > MAX_AGGREGATE_LABELS
                or not all(isinstance(lb, str) and lb for lb in by)):
            raise ModelInputError(f"the aggregation labels must be 1 to {MAX_AGGREGATE_LABELS} "
                                  f"label names, got {by!r}.")
        if len(set(by)) != len(by):
            raise ModelInputError(f"the aggregation labels repeat a label: {', '.join(by)}.")
        for name, value, floor, cap in (("window", self.window_s, 1.0, 86400.0),
                                        ("range", self.range_s, MIN_STEP_S, MAX_RANGE_S),
                                        ("wait SLO", self.slo_wait_s, 1e-6, 86400.0)):
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not math.isfinite(value) or value <= 0:
                raise ModelInputError(f"the {name} must be a positive duration, got {value!r}.")
            if not floor <= value <= cap:
                # below the floor a rate window or a step is shorter than any scrape
                raise ModelInputError(f"the {name} must be between {describe_duration(floor)} "
                                      f"and {describe_duration(cap)}, got {value:g} s.")

    @property
    def step_s(self) -> float:
        """One point every ``max(range / 120, 15 s)`` (see the module docstring)."""
        return max(self.range_s / RANGE_POINTS, MIN_STEP_S)

    @property
    def slo_quantile(self) -> float:
        return float(self.thresholds.slo_quantile)

    def describe(self) -> str:
        """The settings in one phrase, for every page and report:
        'last 2 h (a point every 60 s), rates over 5 min, p95 wait ≤ 1 s'."""
        q = 100 * self.slo_quantile
        qtext = f"{q:.0f}" if abs(q - round(q)) < 1e-9 else f"{q:.3g}"
        return (f"last {describe_duration(self.range_s)} (a point every "
                f"{describe_duration(self.step_s)}), rates over "
                f"{describe_duration(self.window_s)}, p{qtext} wait ≤ "
                f"{describe_duration(self.slo_wait_s)}")

    def with_overrides(self, *, window_s: float | None = None, range_s: float | None = None,
                       slo_wait_s: float | None = None, slo_quantile: float | None = None,
                       thresholds: Mapping[str, Any] | None = None,
                       where: str = "thresholds",
                       aggregate_by: tuple[str, ...] | None = None) -> AnalysisSettings:
        """These settings with the values given (None: keep), e.g. from CLI flags."""
        th = self.thresholds
        changes: dict[str, Any] = dict(thresholds or {})
        if slo_quantile is not None:
            changes["slo_quantile"] = slo_quantile
        if changes:
            th = thresholds_from_mapping(changes, where, th)
        return replace(
            self,
            window_s=self.window_s if window_s is None else window_s,
            range_s=self.range_s if range_s is None else range_s,
            slo_wait_s=self.slo_wait_s if slo_wait_s is None else slo_wait_s,
            thresholds=th,
            aggregate_by=self.aggregate_by if aggregate_by is None else aggregate_by,
        )

    def payload(self) -> dict[str, Any]:
        """The settings as JSON (every report and ``--format json`` output states them)."""
        return {"window_s": self.window_s, "range_s": self.range_s, "step_s": self.step_s,
                "slo_wait_s": self.slo_wait_s, "slo_quantile": self.slo_quantile,
                "described": self.describe(),
                "thresholds": {f.name: getattr(self.thresholds, f.name)
                               for f in fields(self.thresholds)}}


def thresholds_from_mapping(values: Mapping[str, Any], where: str,
                            base: AdvisorThresholds | None = None) -> AdvisorThresholds:
    """``base`` (default: the defaults) with the named thresholds replaced; an unknown name or
    a value that is not a number is one sentence naming it."""
    base = base or AdvisorThresholds()
    known = {f.name for f in fields(base)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ModelInputError(
            f"{where}: unknown threshold {unknown[0]!r} (known: {', '.join(sorted(known))}).")
    out: dict[str, float] = {}
    join = " " if where.startswith("--") else "."  # a flag's value, or a config key's
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ModelInputError(f"{where}{join}{name}: expected a number, got {value!r}.")
        try:
            number = float(value)
        except ValueError:
            raise ModelInputError(
                f"{where}{join}{name}: expected a number, got {value!r}.") from None
        out[name] = number
    try:
        return replace(base, **out)
    except ModelInputError as exc:
        raise ModelInputError(f"{where}: {exc}") from None
