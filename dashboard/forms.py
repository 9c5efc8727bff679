"""Reading numbers typed into the pages' form fields, the same way on every page."""

from __future__ import annotations

import math

from models.errors import ModelInputError


def parse_number(name: str, value: object, *, positive: bool = False) -> float:
    """A finite non-negative (or, with ``positive``, positive) number from a form field.

    Anything else raises :class:`models.errors.ModelInputError` with a sentence naming the
    field, which the page shows instead of a traceback."""
    if value is None or value == "":
        raise ModelInputError(f"Enter a number for the {name}.")
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ModelInputError(f"The {name} must be a number, got {_shown(value)}.")
    shown = _shown(value)
    try:
        number = float(value)
    except ValueError:
        raise ModelInputError(f"The {name} must be a number, got {shown}.") from None
    except OverflowError:  # an integer beyond the largest float (a 400-digit JSON number)
        raise ModelInputError(f"The {name} must be a finite number, got {shown}.") from None
    if not math.isfinite(number) or number < 0 or (positive and number == 0):
        kind = "positive" if positive else "non-negative"
        raise ModelInputError(f"The {name} must be a {kind} number, got {shown}.")
    return number


def _shown(value: object) -> str:
    """The value as the sentence quotes it: its repr, cut to 40 characters (a form field or a
    forged request may hold a megabyte)."""
    try:
        text = repr(value)
    except ValueError:  # an int of more than 4,300 digits has no repr (int_max_str_digits)
        return "a number too long to show"
    return text if len(text) <= 40 else text[:39] + "…"
