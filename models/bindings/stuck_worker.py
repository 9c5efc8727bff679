"""A pass that never finishes binds: it holds its worker. Named by the stuck-workers verdict."""

from __future__ import annotations

from models.bindings.registry import BindingLimit, Option, register
from models.verdicts.kinds import Kind

__all__ = ["LIMIT"]

LIMIT = register(BindingLimit(
    name="stuck_worker",
    words="a pass that never finishes holds its worker",
    label="stuck worker",
    options=(
        Option("find the pass that never returns: give every call a context deadline",
               "a pass that times out is retried; it must be idempotent"),
    ),
    kinds=(Kind.STUCK_WORKERS,),
))
