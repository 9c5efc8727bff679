"""Nothing binds: the workers keep up with the demand.

The plan's limit when no verdict names one; the verdicts that find something other than a
limit (fewer workers would do, requeue misuse, long passes, healthy) name it.
"""

from __future__ import annotations

from models.bindings.registry import BindingLimit, Option, register
from models.verdicts.kinds import Kind

__all__ = ["LIMIT"]

LIMIT = register(BindingLimit(
    name="none",
    words="nothing: the workers keep up with the demand",
    label="none",
    options=(
        Option("keep the current worker count", "none"),
    ),
    kinds=(Kind.OVER_PROVISIONED, Kind.HEALTHY, Kind.REQUEUE_MISUSE, Kind.LONG_PASSES),
    knobs=("workers",),
))
