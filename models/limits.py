"""Work limits of the models, in one place: the CLI and the pages read the same numbers.

Each limit bounds the time and memory one request or one command can cost, whatever numbers it
is given (issue 12: a page or a command must end in bounded time with a clear outcome). Input
above a limit is refused with a sentence naming the limit (:class:`models.errors.ModelInputError`:
exit code 2 in the CLI, the page's error line in the dashboard), never truncated silently.

To change a limit, change it here; every caller imports it from this module (the tests read it
from here too). The costs quoted were measured on the 2-core development VM.
"""

from __future__ import annotations

# --- the fluid queue lab (`/lab`, `queuelens lab fluid`) ----------------------------------------

FLUID_MAX_STEPS = 10_000
"""Most steps after t = 0 in a fluid trace: the CLI's rows (``--until`` / ``--step``), the
page's Step clock and the points of the page's prediction line (one point per time unit, or
this many evenly spaced points when the prediction is longer; the line is exact either way, as
q(t) is linear between its ends and the clearing time). 10,000 points are 0.2–0.3 MB of figure
JSON and about 15 ms; the uncapped page built 12.5 million points (52 s, 1.76 GB, a 235 MB
response) for q0 = 10,000,000 and μ = 1. The CLI's limit was 1,000,000 steps."""

FLUID_MAX_VALUE = 1e9
"""Largest λ, μ and initial backlog q0 the lab takes (items, items per time unit). With at
most :data:`FLUID_MAX_STEPS` steps the backlog stays below 1e9 + 1e9 · 10,000 ≈ 1e13, where
whole numbers are still exact floats (below 2^53 ≈ 9e15): the lab's arithmetic stays exact
and readable, and no backlog overflows to infinity."""

# --- the retry storm (`/retries`, `queuelens retries`) ------------------------------------------

STORM_MAX_STEPS = 50_000_000
"""Steps (one failure or one retry) of one :func:`models.retry.retry_storm` run in the CLI:
a few seconds of the compiled loop. Above it the run stops and says so (it is not truncated)."""

RETRIES_PAGE_MAX_EVENTS = 4_000_000
"""Event budget of the eight healthy-key simulations of one Retry storm page computation (raw
arrivals, completions, retries), estimated from above before any of them runs: about 1 s of
CPU, and as the simulator keeps one wait per pass (8 bytes), at most about 32 MB (11 MB
measured at 3.6 million estimated). Up to 8 simulations of up to 5e8 events each (108 s, +2 GB,
then an HTTP 500) were possible before."""

RETRIES_PAGE_MAX_STORM_STEPS = 30_000_000
"""Step budget (failures and retries) of the four storms of one Retry storm page computation,
shared in order: a hard stop, about 1.5 s at most (25 million steps took 1.3 s; a storm keeps
only per-key arrays and its rate bins, so memory does not grow with steps: 4 MB). 1,000 keys
failing for 15 minutes against a 1 s cap take about 5 million."""

# --- the queueing models' worker counts -----------------------------------------------------

MAX_WORKERS = 10_000
"""Largest worker count c the queueing models compute with: the Erlang B/C recursion
(:mod:`models.queueing`), the mean-value analysis of a shared ceiling
(:mod:`models.bindings.ceiling`), the finite-key model and every what-if sweep run one step
per worker, so their time and memory grow linearly with c (1e7 measured workers took 42.5 s
per queue, 1e12 would never end). A typed range above it is refused (``whatif --workers``); a
worker count *measured* above it (``controller_runtime_max_concurrent_reconciles``) or
*configured* above it (``profile.workers``) is refused for that queue
(:mod:`models.verdicts.screen`): the queue is judged without a worker count, with a sentence
naming the queue and the value, and the rest of the fleet is evaluated as usual. No
controller runs 10,000 concurrent reconciles (controller-runtime's default is 1, kube-
controller-manager's largest default 50); the 10,000 × 64 fleet sweep of
benchmarks/bench_erlang.py stays within it."""

# --- the finite-key model (M/M/c//K) ------------------------------------------------------------

FINITE_KEYS_MAX = 10_000_000
"""Largest key count K of :mod:`models.finite_keys` (``whatif --keys``, ``advise --keys``).
Memory does not grow with K: only the states with non-negligible probability are kept, one
worker count at a time, at most about 78·√K of them (250,000 for K = 10,000,000; 16 MB)."""

FINITE_KEYS_MAX_CELLS = 25_000_000
"""Most states × worker counts of one finite-key computation, counting each worker count at
its worst case min(K + 1, 78·√K) states: with K = 10,000,000 at most 100 worker counts at once
(about 3 s; the earlier dense arrays took 102 s and 22.3 GB for that), with K = 10,000 about
3,200, with K ≤ 2,500 the what-if's whole 10,000."""

# --- the key trace (`/keys`, `queuelens lab keys`) ----------------------------------------------

KEY_TRACE_MAX_STEPS = 10_000
"""Most operations in one key trace (page and CLI)."""

KEY_TRACE_MAX_KEY_CHARS = 317
"""Longest key name in a trace: a Kubernetes work-queue key is ``namespace/name``, at most
63 + 1 + 253 characters."""

KEY_TRACE_MAX_CELLS = 1_000_000
"""Most key places one trace's states may hold in total — the sum over its steps of the keys
in the queue, dirty, processing, delayed and failure lists — in the CLI: every step's state is
kept and printed, so a trace adding n distinct keys holds n·(n + 1) (each is queued and
dirty): 10,000 steps of new keys would be 100 million. A million places are about 10 MB of
output."""

KEY_TRACE_PAGE_MAX_CHARS = 5_000
"""Longest trace the `/keys` page runs (longer ones belong in ``queuelens lab keys``)."""

KEY_TRACE_PAGE_MAX_CELLS = 50_000
"""The `/keys` page's :data:`KEY_TRACE_MAX_CELLS`: its store, chart (one marker per place) and
table are linear in this number; 50,000 places are about 0.5 MB of store and 0.25 s of
rendering (a trace within the page's 5,000 characters can hold a quarter of a million: 500
distinct adds hold 500 · 501)."""

KEY_TRACE_PAGE_MAX_STORE_CHARS = 4_000_000
"""Most characters in the strings of a `/keys` store accepted back from the browser (key names,
operations, notes): a store the page built from a trace within the limits above has well under
1,000,000."""

# --- the demo exporter --------------------------------------------------------------------------

EXPORTER_MAX_QUEUES = 10_000
"""Largest synthetic fleet ``queuelens exporter --queues`` serves: a scrape evaluates every
queue's series (500 queues: about 2 s and 6.5 MB per scrape, docs/collectors.md, so 10,000
queues about 40 s and 130 MB by extrapolation; 10,000 is the largest fleet the benchmarks put
into a real Prometheus)."""
