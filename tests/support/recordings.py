"""Real client-go work queues, recorded: the regime tests that are not our own assumption.

``tests/data/recordings/`` holds 13 recordings of real, unmodified client-go v0.36.3 work
queues (``NewTypedRateLimitingQueueWithConfig``, each driven by N worker goroutines the way
controller-runtime v0.24 drives one, each peer its own Go process exposing controller-runtime's
metric names and the Go process metrics), scraped once a second for 360 s on a busy 2-core
machine, as gzipped OpenMetrics for ``promtool tsdb create-blocks-from openmetrics``; beside
each its truth (what the peer measured itself, ``*.truth.json``) and ``manifest.json`` (every
peer's command line). The corpus and its README are the user's (``shared/recordings``); the
known right answers below are that README's table, the mechanism's ceiling computed from its
flags.

:data:`ANSWERS` is what ``queuelens advise --window 30s`` over the recorded 330 s must say of
each: the verdict (one of ``expect``, none of ``never``), the binding limit the plan names, the
ceiling where the mechanism has one, and — for the queues that keep up — the headroom to the
limit near them.
"""

from __future__ import annotations

import gzip
import shutil
from dataclasses import dataclass
from pathlib import Path

DIR = Path(__file__).resolve().parent.parent / "data" / "recordings"

AT = 1796623442
"""The last scrape of the batch (2026-12-07 06:04:02 UTC)."""
RANGE = "330s"
"""The recorded 360 s less the peers' 10-s warm-up and the first rate window."""
WINDOW = "30s"

CEILING_TOLERANCE = 0.15
"""A stated ceiling within 15 % of the mechanism's: the recordings ran on a busy machine
(the README: "compare verdicts, not exact values"), and 15 % is the issue's bound for a row
the history never ran."""


@dataclass(frozen=True)
class Answer:
    name: str
    expect: frozenset[str]
    """Verdict kinds of which the advice must have one."""
    never: frozenset[str]
    binding: str
    """The plan's binding limit."""
    ceiling_per_s: float | None = None
    """The mechanism's ceiling, which the plan's must be within :data:`CEILING_TOLERANCE`
    of."""
    headroom_limit: str | None = None
    """For a queue that keeps up: the limit its least headroom must name."""
    headroom_ratio: float | None = None
    """The mechanism's ceiling ÷ the recorded peak demand, which the stated headroom's range
    (or its ratio within :data:`CEILING_TOLERANCE`) must hold."""
    more_workers: bool = False
    """Whether the plan may recommend more workers."""
    saturated: bool = True
    """Whether the queue was saturated at its peaks (every worker busy, items waiting): its
    add rate is then a lower bound of the demand, and the plan must say so."""


_NEVER_ADD = frozenset({"add_workers"})

ANSWERS: tuple[Answer, ...] = (
    Answer("io-a", frozenset({"add_workers", "backlog_growing"}),
           frozenset({"contention", "hot_key"}), "workers", 3 / 0.12, more_workers=True),
    Answer("lock-a", frozenset({"contention"}), _NEVER_ADD, "shared_resource", 1 / 0.03),
    Answer("lock-b", frozenset({"healthy"}), _NEVER_ADD | {"contention"}, "none",
           headroom_limit="shared_resource", headroom_ratio=(1 / 0.03) / 15.2,
           saturated=False),
    Answer("limiter-a", frozenset({"contention"}), _NEVER_ADD, "client_limiter", 12 / 2),
    Answer("hot-a", frozenset({"hot_key"}), _NEVER_ADD | {"contention"}, "hot_key",
           saturated=False),
    Answer("retry-a", frozenset({"retry_storm"}), _NEVER_ADD | {"contention"}, "retry_policy",
           saturated=False),
    Answer("pool-a", frozenset({"healthy"}), _NEVER_ADD | {"contention"}, "none",
           headroom_limit="shared_resource", headroom_ratio=(3 / (0.8 * 0.05)) / 57.3,
           saturated=False),
    Answer("pool-b", frozenset({"contention"}), _NEVER_ADD, "shared_resource",
           2 / (0.8 * 0.05)),
    Answer("down-a", frozenset({"contention"}), _NEVER_ADD, "shared_resource", 15.0),
    Answer("cpu-a", frozenset({"contention"}), _NEVER_ADD, "cpu", 1 / (0.8 * 0.025)),
    Answer("conflict-a", frozenset({"retry_storm", "contention"}), _NEVER_ADD,
           "write_conflicts", saturated=False),
    Answer("poll-a", frozenset({"add_workers", "requeue_misuse"}), frozenset({"contention"}),
           "workers", 2 / 0.02, more_workers=True),
    Answer("step-a", frozenset({"contention"}), _NEVER_ADD, "shared_resource",
           # the history's c = 3 with every worker busy: 39.0–44.5/s (the pool's X* 44.4/s)
           41.0),
)
"""The README's right answers (its table; the ceilings from each mechanism's flags). lock-b's
peak demand is its busiest 30-s segment (15.2/s), pool-a's 57.3/s."""

STEP_A_C7_THROUGHPUT = 35.8
"""step-a's flags at c = 7, a count its history (1 → 2 → 3) never ran (``step-a-c7.truth.json``,
the run on the quiet machine)."""


def write_openmetrics(workdir: Path) -> list[Path]:
    """Every recording uncompressed into ``workdir`` (promtool reads plain files)."""
    out = []
    for a in ANSWERS:
        path = workdir / f"{a.name}.om"
        with gzip.open(DIR / f"{a.name}.om.gz", "rb") as src, path.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        out.append(path)
    return out
