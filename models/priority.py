"""controller-runtime's priority queue: the cardinality cap of its depth gauge's ``priority``.

``workqueue_depth`` carries a ``priority`` label (controller-runtime ≥ v0.21; ``""`` for a
plain queue). Incrementing, LIFO-style priorities made 810K such series and 15 s scrapes
(controller-runtime#3396); since v0.23 (PR #3419) a queue keeps at most 25 values and folds
the rest into one placeholder value. One definition, read by the snapshot (which reads the 25
deepest) and the doctor.
"""

from __future__ import annotations

__all__ = ["CAPPED_PRIORITY", "PRIORITY_CAP", "uncapped"]

PRIORITY_CAP = 25
"""Distinct ``priority`` values a capped queue keeps (besides the placeholder)."""
CAPPED_PRIORITY = "exceeded_cardinality_limit"
"""The placeholder value the folded priorities share."""


def uncapped(distinct: int, capped: bool) -> bool:
    """Whether a queue with ``distinct`` priority values (the placeholder included, which
    ``capped`` says is there) has more than a capped controller-runtime can write: 25, plus
    the placeholder."""
    return distinct > PRIORITY_CAP + (1 if capped else 0)
