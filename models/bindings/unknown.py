"""Not known: the data do not say (named by the insufficient-data verdict)."""

from __future__ import annotations

from models.bindings.registry import BindingLimit, Option, register
from models.verdicts.kinds import Kind

__all__ = ["LIMIT"]

LIMIT = register(BindingLimit(
    name="unknown",
    words="not known: the data do not say",
    label="not known",
    options=(
        Option("measure first: see which signals are missing",
               "no change can be sized without them"),
    ),
    kinds=(Kind.INSUFFICIENT_DATA,),
))
