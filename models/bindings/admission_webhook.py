"""An admission webhook on the controller's writes binds: the API server waits for it inside
every write, and it fills up with load.

Named by the contention reason ``webhook`` (writes per pass × the slowest webhook's mean
≥ ``webhook_share_min`` of the pass, with the work time rising with load). Rows: the shared
ceiling, a webhook slot held for a variable time (cv² = 1). Knob: the webhook configuration.
"""

from __future__ import annotations

from models.bindings.registry import BindingLimit, Option, register

__all__ = ["LIMIT"]

LIMIT = register(BindingLimit(
    name="admission_webhook",
    words="an admission webhook on the controller's writes (the API server "
          "waits for it inside every write)",
    label="admission webhook",
    options=(
        Option("make the webhook keep up: more replicas, or a faster handler (it is called "
               "inside every write of this controller)",
               "the webhook's owner must change it; its timeoutSeconds bounds each call"),
        Option("narrow the webhook's rules, namespaceSelector or objectSelector so it does not "
               "see this controller's writes (or skip no-op writes)",
               "objects the webhook no longer sees are no longer validated or mutated by it"),
        Option("do not add workers: they queue on the webhook",
               "none: the throughput is the webhook's"),
    ),
    rows="ceiling",
    ceiling_cv2=1.0,
    headline="an admission webhook on its writes fills up with load",
    reasons=frozenset({"webhook"}),
    precedence=30,
    knobs=("webhook",),
))
