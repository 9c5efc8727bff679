"""Something the passes share binds: a lock or serial section, a pool, a downstream.

The contention verdict's limit when no more specific one matches (the work time rising with
throughput, a USL fit without a peak inside the range, a worker-count step that did not
raise the throughput). Rows: the shared ceiling X* (:mod:`models.bindings.ceiling`), the
resource held for a variable time (cv² = 1).
"""

from __future__ import annotations

from models.bindings.measured import CeilingInputs, MeasuredCeiling
from models.bindings.registry import BindingLimit, Option, register
from models.formatting import number_text

__all__ = ["LIMIT"]

FITTED = ("fitted from how the pass time grew with the passes in flight (the one shared "
          "station that best explains the range's pass times; range: its 90 % interval)")
"""The basis of a ceiling the pass times show."""


def _measure(i: CeilingInputs) -> MeasuredCeiling | None:
    st = i.station
    if st is None:
        return None if i.station_note is None else MeasuredCeiling(
            "shared_resource", None, None, None, i.station_note)
    if st.shown and st.ceiling_per_s is not None:
        basis = FITTED
        if st.at_edge:
            basis += ("; at the highest throughput the range reached: the ceiling is at "
                      "least that, not where it is")
        return MeasuredCeiling("shared_resource", st.ceiling_per_s, st.lo_per_s, st.hi_per_s,
                               basis, service_free_s=st.free_s)
    return MeasuredCeiling(
        "shared_resource", None, st.lo_per_s, None,
        f"no shared limit shows in the pass times: they grow with load no more than a "
        f"constant pass time explains, which rules out a ceiling below "
        f"{number_text(st.lo_per_s, '/s')}")

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
    measure=_measure,
))
