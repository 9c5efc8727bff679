"""Write conflicts bind: 409s rising with concurrency, each a re-read and a retry.

Named by the contention reason ``api_409`` (409 share ≥ ``share_409_min``, correlated with
busy workers ≥ ``corr_409_min``). Rows: the shared ceiling (cv² = 1).
"""

from __future__ import annotations

from models.bindings.registry import BindingLimit, Option, register

__all__ = ["LIMIT"]

LIMIT = register(BindingLimit(
    name="write_conflicts",
    words="write conflicts (409s rising with concurrency)",
    label="write conflicts (409)",
    options=(
        Option("patch (server-side apply) instead of update, so concurrent writers do not "
               "collide",
               "a code change; field ownership must be set up"),
        Option("shard the keys so one object is not written by several controllers",
               "an architecture change"),
        Option("key the queue by the contended object, so that one worker writes it at a "
               "time, or run fewer workers than the conflicts start at",
               "the work on one object is serial again (a hot key, but without the "
               "wasted passes)"),
    ),
    rows="ceiling",
    ceiling_cv2=1.0,
    headline="write conflicts rise with concurrency",
    reasons=frozenset({"api_409"}),
    precedence=40,
))
