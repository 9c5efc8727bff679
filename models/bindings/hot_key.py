"""One key processed serially binds: a workqueue never runs a key on two workers.

Named by the hot-key verdict. Ceiling: one worker on that key, 1 / E[S_key] — the key's own
pass time, which no workqueue metric carries (the work-duration histogram mixes every key):
it is not measured here, and the queue's mean pass time is not it (the demo's ingress queue
completed 1.91/s over a "ceiling" of 1 / its mean pass time, 1.75/s: issue 35).
"""

from __future__ import annotations

from models.bindings.registry import BindingLimit, Option, register
from models.verdicts.kinds import Kind

__all__ = ["LIMIT"]


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
    unmeasured="one worker on the hot key: 1 ÷ that key's own pass time, which the workqueue "
               "metrics do not carry (the work-duration histogram mixes every key)",
))
