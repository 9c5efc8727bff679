"""Something the passes share binds: a lock or serial section, a pool, a downstream.

The contention verdict's limit when no more specific one matches (the work time rising with
throughput, a USL fit without a peak inside the range, a worker-count step that did not
raise the throughput). Rows: the shared ceiling X* (:mod:`models.bindings.ceiling`), the
resource held for a variable time (cv² = 1).
"""

from __future__ import annotations

from models.bindings.registry import BindingLimit, Option, register

__all__ = ["LIMIT"]

LIMIT = register(BindingLimit(
    name="shared_resource",
    words="something shared by the workers (a lock or serial section, a database, a "
          "downstream service)",
    label="shared resource (lock, pool, downstream)",
    options=(
        Option("find what the passes wait on together (a mutex, a database connection pool, "
               "a downstream rate limit): the work time rises with throughput",
               "profiling (mutex/block profiles) before any change"),
        Option("shorten or split the serial part of the pass; more workers only queue on it",
               "a code change; it raises the ceiling for every worker count"),
    ),
    rows="ceiling",
    ceiling_cv2=1.0,
    headline="something the passes share binds (a lock, a pool, a downstream)",
    fallback=True,
))
