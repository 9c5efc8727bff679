"""One key processed serially binds: a workqueue never runs a key on two workers.

Named by the hot-key verdict. Ceiling: one worker on that key, 1 / E[S] (for that key).
"""

from __future__ import annotations

from models.bindings.registry import BindingLimit, Option, register
from models.verdicts.kinds import Kind

__all__ = ["LIMIT"]


def _ceiling(service_mean_s: float, workers: int | None) -> tuple[float, str] | None:
    del workers  # one key never runs on two of them
    return 1.0 / service_mean_s, "one worker on the hot key: 1 / mean work time (for that key)"


LIMIT = register(BindingLimit(
    name="hot_key",
    words="one key processed serially: a workqueue never runs a key on two workers",
    label="hot key",
    options=(
        Option("split the hot key's work into bounded passes (requeue with progress instead "
               "of one long pass)",
               "a code change; each pass must be resumable"),
        Option("spread the work over more keys (one key per sub-object)",
               "more objects to watch and more keys in the queue"),
    ),
    kinds=(Kind.HOT_KEY,),
    ceiling=_ceiling,
))
