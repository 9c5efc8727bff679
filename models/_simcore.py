"""Compiled event loops of :func:`models.simulate.simulate` and :func:`models.retry.retry_storm`.

The simulator's loop is the pure-Python loop it replaces, statement for statement; the storm's
loop is too, and has a faster equivalent (see "the retry storm" below). They are compiled with
numba (``njit``, ``cache=True``: the machine code is kept on disk, so only the first run on a
machine compiles). Same inputs and seed → the same numbers, bit for bit, as the interpreted
version:

* random numbers are still drawn by numpy, in the same blocks from the same generators, in
  Python (the loops only read them), so every stream is exactly the interpreted one's;
* the heap is CPython's ``heapq`` (``_siftdown`` / ``_siftup`` / ``heapify``) ported as it is,
  over (time, kind, key) entries compared as the tuples were, so events pop in the same order
  and the final heap has the same layout (its order fixes the order of one float sum);
* the retry limiter is :mod:`models.ratelimit`'s arithmetic, operation for operation
  (``min``/``max`` keep Python's choice on ties, ``base · 2^n`` is ``ldexp``, exact, and past
  the largest float it is the cap, as in ``ItemExponential.unjittered``);
* sums whose order matters are done in the same order (the dirty keys' areas in dict
  insertion order); no fast-math, so no reassociation or fused multiply-add.

Per-key state (dirty + add time, processing + start time, waiting retry, penalised, failure
count, decorrelated-jitter memory) is one 64-byte record in an open-addressing hash table
(linear probing, backward-shift deletion): keys may be anywhere in 0…2^63, and a record is
freed when its key has no state left, so memory follows the keys in play, as the dicts did.

The API server side of the simulator (writes, the APF priority level, client-go's retries,
the admission webhook, conflicts; see ``models.simulate``) is computed when a call leaves the
client's token bucket (``_server_call``), in the order of the calls; with it off, the loop
takes the very same steps as without it. One approximation: a request that times out in the
APF queue is fed to the Retry-After tracker when it is queued (at its time-out time), so a
drop of an earlier second processed later counts in that second.

The stations of a pass (the lock, the connection pool, the CPU cores; see "the stations"
below) and polling (``RequeueAfter``) were written for the compiled loop directly, with no
interpreted twin: with them off the loop takes the very steps it took without them (the lock
is the station code with one slot, the same arithmetic), which the simulator's tests check
against runs recorded before they existed.

A loop runs until it finishes or until one more event might need what it does not have (a
fresh block of random numbers, the next arrival block, a larger array); it then saves its
scalars in a one-row state record and returns ``NEED``. The Python driver refills or grows
what ran out and calls it again (the simulator's ``progress`` callback runs between calls, when
the next arrival block is made).

Why numba rather than mypyc or Cython: the loop is numeric code over arrays, which numba
compiles to plain machine code (about 10 M events/s here, against about 1 M/s interpreted);
mypyc compiles typed Python, but the loop's state would still be boxed Python objects (dicts,
heap tuples), so it would stay object-bound. Cython would do as well as numba but needs a C
compiler wherever the package is built, a ``setup.py`` extension and a platform wheel per
Python version and OS; numba is a dependency with binary wheels on PyPI, the source stays
Python, and the compiled code is cached on disk on first use. Its costs, measured on the
2-core development VM (``benchmarks/bench_simulate.py``): each process that simulates pays
about 0.6 s to import numba and initialise it (numba's initialisation imports
``scipy.linalg``) — this module is therefore imported only when a simulation or storm runs,
never by ``import models.simulate`` — and the first run on a machine (or with a new
numba/Python version) compiles what it needs and writes the cache.

Compiled per mechanism: a run compiles only the code of the mechanisms it uses. The driver
passes ``_sim_run`` ``lockh=None`` when no mechanism of a pass is on (no station, coherency
or API call: ``ext_on`` is 0) and ``seats=None`` when the API server side is off, and the
loop tests ``lockh is not None`` / ``seats is None`` in front of that code: numba compiles a
function once per set of argument types, and prunes a branch on whether an argument is
``None`` before it types the function (its "dead branch pruning"), so the copy for a queue
alone never types or compiles the stations, the API calls or the server (``_server_call``,
the APF level, the webhook). Three copies at most — the queue alone; with the stations or
API calls; with the server too — each the very code of the one loop with the same
arithmetic, so a run gives the same numbers in any copy. The queue alone (an M/M/c run)
compiles in about 4 s, a third of the whole loop (the other loops that every run calls,
``fsum`` and ``_busy_residual``, included: ``fsum`` grows its partials by a loop rather than
a slice assignment, whose shape check alone compiled for 3 s, and the dirty keys' residual is
plain numpy rather than a compiled sort, 1.7 s).

Where the cache goes: ``__pycache__`` beside this file, else numba's user cache directory
(``~/.cache/numba``), or ``$NUMBA_CACHE_DIR`` when set. With none of them writable (a
read-only site-packages and home, as in a container with a read-only root filesystem) the
cache goes to a folder of this user's in the temporary directory (:func:`_fallback_cache_dir`)
and only where even that fails are the loops compiled in memory in every process.
"""

from __future__ import annotations

import math
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numba
import numpy as np
import numpy.typing as npt

from models.scrape import ATTEMPT_LOG, BACKGROUND_LOG, LOG_KINDS

F = TypeVar("F", bound=Callable[..., Any])


def _jit(fn: F) -> F:
    """``numba.njit`` with the on-disk cache; typed so that mypy keeps ``fn``'s signature.
    ``nogil``: the loops touch only the arrays they are given, so a simulation run by one of
    the dashboard's threads does not stall the others. Where numba finds no writable cache
    directory it refuses ``cache=True``; the cache then goes to :func:`_fallback_cache_dir`,
    and only without that are the loops compiled in memory in each process."""
    for _ in range(2):
        try:
            return cast(F, numba.njit(cache=True, nogil=True, error_model="numpy")(fn))
        except RuntimeError:  # "cannot cache function …: no locator available"
            if not _use_fallback_cache_dir():
                break
    return cast(F, numba.njit(cache=False, nogil=True, error_model="numpy")(fn))


FALLBACK_CACHE_PREFIX = "queuelens-numba-"
_fallback_tried: list[bool] = []


def _fallback_cache_dir(tmp: str) -> str | None:
    """``<tmp>/queuelens-numba-<uid>``, made if missing, or None unless it is a directory owned
    by this user that nobody else may write into or read: numba's cache files are pickles, so
    a folder another user could write would let them run code in this process."""
    path = os.path.join(tmp, f"{FALLBACK_CACHE_PREFIX}{os.getuid()}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return None
    mine = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
    return path if mine and not st.st_mode & 0o077 else None


def _use_fallback_cache_dir() -> bool:
    """Point numba's cache at :func:`_fallback_cache_dir` (once per process); False when it
    was tried already or is not usable."""
    if _fallback_tried:
        return False
    _fallback_tried.append(True)
    path = _fallback_cache_dir(tempfile.gettempdir())
    if path is None:
        return False
    numba.config.CACHE_DIR = path  # type: ignore[attr-defined]
    return True


Arr = npt.NDArray[Any]

# --- status codes of a loop -------------------------------------------------------------------
DONE, NEED, OVERFLOW, BUDGET = 0, 1, 2, 3

# --- heap entries: (time, kind, key), compared as the tuple; the kind is the tie order --------
# (Constants passed to compiled functions are np.int64, not int: numba compiles a separate
# copy of a function for every distinct int literal it is called with.)


def _i64(value: int) -> int:
    return cast(int, np.int64(value))


HEAP = np.dtype([("t", np.float64), ("kind", np.int64), ("key", np.int64)])
COMPLETION, RETRY, BURST = _i64(0), _i64(1), _i64(2)
CALL, WORKER_UP, WORKER_DOWN = _i64(3), _i64(4), _i64(5)
"""The pass of key k makes its next API call; one worker joins; one worker leaves."""
STAGE = _i64(6)
"""The pass of key k reaches its next station (the pool or the CPU) after its first one."""
SENTINEL = _i64(-1)  # the (inf, -1) entry that keeps the simulator's heap non-empty
ROOT = _i64(0)  # the index of a heap's top (passed as np.int64: see above)

# --- per-key records ---------------------------------------------------------------------------
KEYREC = np.dtype([
    ("key", np.int64), ("flags", np.int64), ("seq", np.int64), ("fails", np.int64),
    ("add", np.float64), ("start", np.float64), ("wait", np.float64), ("prev", np.float64),
    ("calls", np.int64),
    # the API server side (models.simulate: writes, APF, webhook, conflicts): the attempt of
    # the current call, the time of the object version the pass has seen, and when the
    # current call's first attempt left the client's token bucket
    ("attempt", np.int64), ("seen", np.float64), ("first", np.float64),
    # the stations of a pass after its first one (pool, CPU): the next station, the pass's
    # service time and its coherency-stretched rest
    ("stage", np.int64), ("sv", np.float64), ("rest", np.float64),
])
EMPTY = -1
DIRTY, PROC, WAIT, PEN = 1, 2, 4, 8  # dirty (add time valid), processing, retry waiting, penalised
APIFAIL = 16  # the pass's API call failed (409, or 429 after the last retry): the pass fails

# --- trace entries -----------------------------------------------------------------------------
TRACE = np.dtype([("t", np.float64), ("kind", np.int64), ("key", np.int64), ("value", np.float64)])
T_ARRIVAL, T_COALESCED, T_START, T_SUCCESS, T_FAILURE, T_RETRY_READY = (
    _i64(0), _i64(1), _i64(2), _i64(3), _i64(4), _i64(5))
TRACE_KINDS = ("arrival", "coalesced", "start", "success", "failure", "retry-ready")

# --- the metric log (what a controller's /metrics would have observed, event by event) -------
LOG = np.dtype([("t", np.float64), ("kind", np.int64), ("value", np.float64)])
LOG_ADD, LOG_GET, LOG_OK, LOG_FAIL_DELAY, LOG_FAIL_NOW, LOG_CALL = (
    _i64(LOG_KINDS.index(name)) for name in ("add", "get", "ok", "fail_delay", "fail_now", "call"))
LOG_OK_AFTER, LOG_CPU_WAIT, LOG_CPU_RUN = (
    _i64(LOG_KINDS.index(name)) for name in ("ok_after", "cpu_wait", "cpu_run"))
"""The record kinds of :data:`models.scrape.LOG_KINDS` (defined there)."""
ALOG = ATTEMPT_LOG
"""One record per API request attempt when the API server side is modelled
(:data:`models.scrape.ATTEMPT_LOG`, defined there)."""
SLOG = BACKGROUND_LOG
"""One record per background request of the APF priority level
(:data:`models.scrape.BACKGROUND_LOG`)."""

# --- retry limiter (models.ratelimit.RetryPolicy.build) --------------------------------------
LIMITER = np.dtype([
    ("kind", np.int64), ("jitter", np.int64), ("bucket", np.int64),
    ("base", np.float64), ("cap", np.float64), ("qps", np.float64), ("burst", np.float64),
])
L_EXP, L_CONST = 0, 1
J_NONE, J_FULL, J_EQUAL, J_DECORRELATED = 0, 1, 2, 3
JITTER_CODES = {"none": J_NONE, "full": J_FULL, "equal": J_EQUAL, "decorrelated": J_DECORRELATED}
BUCKET = np.dtype([("tokens", np.float64), ("last", np.float64), ("has_last", np.int64)])

# --- the simulator's parameters and saved scalars ---------------------------------------------
SIM_PARAMS = np.dtype([
    ("warmup", np.float64), ("p_fail", np.float64), ("fw0", np.float64), ("fw1", np.float64),
    ("mean_s", np.float64), ("dq", np.float64), ("dburst", np.float64),
    ("m", np.int64), ("svc_const", np.int64), ("dep_on", np.int64), ("forget", np.int64),
    ("n_trace", np.int64),
    # the mechanisms of a real controller (off unless ext_on): serial section, coherency,
    # the API client's token bucket, and the metric log
    ("ext_on", np.int64), ("lock_f", np.float64), ("sigma", np.float64), ("kappa", np.float64),
    ("n_calls", np.int64), ("call_lat", np.float64), ("aq", np.float64), ("aburst", np.float64),
    ("log_on", np.int64),
    # the API server side (off unless srv_on): writes among the calls, the APF priority level
    # (seats = the size of the seat heap; queue limit, wait limit, fixed Retry-After or 0 for
    # the dynamic one, the background requests' seat time), client-go's retries, the
    # admission webhook (concurrency 0 = unlimited), the shared objects (0 = no conflicts),
    # and the end of the window
    ("srv_on", np.int64), ("n_writes", np.int64), ("apf_on", np.int64), ("apf_limit", np.int64),
    ("apf_wait_limit", np.float64), ("apf_ra", np.float64), ("bg_lat", np.float64),
    ("max_retries", np.int64), ("hook_lat", np.float64), ("hook_k", np.int64),
    ("n_objects", np.int64), ("horizon", np.float64),
    # the stations beyond the lock (the pool's and the CPU's fractions; off at 0), the
    # RequeueAfter period (0: none) and the metric-log records one event may write
    ("pool_f", np.float64), ("cpu_f", np.float64), ("poll", np.float64),
    ("log_need", np.int64),
])
SIM_STATE = np.dtype([
    # positions in the input blocks
    ("ia", np.int64), ("isv", np.int64), ("iu", np.int64), ("ij", np.int64),
    # counters (as in the interpreted loop)
    ("idle", np.int64), ("raw", np.int64), ("coalesced", np.int64), ("retry_adds", np.int64),
    ("completed", np.int64), ("early_done", np.int64), ("failed", np.int64),
    ("retries", np.int64), ("retry_pops", np.int64), ("hot_done", np.int64),
    ("depth_max", np.int64), ("ndirty", np.int64), ("seq", np.int64),
    # fill levels of the arrays
    ("hn", np.int64), ("qh", np.int64), ("qn", np.int64), ("n_used", np.int64),
    ("nwh", np.int64), ("nwf", np.int64), ("ndep", np.int64), ("ntr", np.int64),
    # sums and the dependency's token bucket
    ("depth_corr", np.float64), ("busy_area", np.float64), ("work_sum", np.float64),
    ("dtok", np.float64), ("dlast", np.float64),
    # workers in a pass, workers due to leave, the lock, API calls, the metric log
    ("busy", np.int64), ("retire", np.int64),
    ("lock_wait", np.float64), ("lock_n", np.int64), ("api_wait", np.float64),
    ("api_n", np.int64), ("nlog", np.int64),
    # the API server side (read and written in place, never cached in locals): attempts
    # answered in the window and their outcomes, the APF level's counts (controller and
    # background), its busy-seat area, the webhook's, the background position and the logs
    ("att_n", np.int64), ("n429", np.int64), ("n409", np.int64), ("nretry", np.int64),
    ("nfailcall", np.int64), ("nwrite_ok", np.int64), ("apf_wait_sum", np.float64),
    ("apf_wait_n", np.int64), ("apf_disp", np.int64), ("apf_rej_qf", np.int64),
    ("apf_rej_to", np.int64), ("apf_busy", np.float64), ("hook_n", np.int64),
    ("hook_wait", np.float64), ("hook_sum", np.float64), ("ibg", np.int64),
    ("rq_head", np.int64), ("rq_len", np.int64), ("nalog", np.int64), ("nslog", np.int64),
    # the pool and the CPU (read and written in place): waits and counts per pass (the
    # lock's are lock_wait, lock_n above), CPU seconds run in the window, RequeueAfters
    ("pool_wait", np.float64), ("pool_n", np.int64), ("cpu_wait", np.float64),
    ("cpu_n", np.int64), ("cpu_busy", np.float64), ("requeue_n", np.int64),
])


# === CPython's heapq over HEAP records ========================================================
# (Records are copied field by field: whole-record assignment inside some loops crashed
# numba 0.68's generated code.)

@_jit
def _copy_entry(dst: Arr, i: int, src: Arr, j: int) -> None:
    dst[i].t, dst[i].kind, dst[i].key = src[j].t, src[j].kind, src[j].key


@_jit
def _lt(t1: float, c1: int, k1: int, t2: float, c2: int, k2: int) -> bool:
    """(t1, c1, k1) < (t2, c2, k2) as tuples."""
    return t1 < t2 or (t1 == t2 and (c1 < c2 or (c1 == c2 and k1 < k2)))


@_jit
def _sift_down(h: Arr, start: int, pos: int) -> None:
    """heapq._siftdown: the entry at ``pos`` moves towards the root while smaller than its
    parent."""
    t, c, k = h[pos].t, h[pos].kind, h[pos].key
    while pos > start:
        parent = (pos - 1) >> 1
        if _lt(t, c, k, h[parent].t, h[parent].kind, h[parent].key):
            _copy_entry(h, pos, h, parent)
            pos = parent
            continue
        break
    h[pos].t, h[pos].kind, h[pos].key = t, c, k


@_jit
def _sift_up(h: Arr, n: int, pos: int) -> None:
    """heapq._siftup: move the smaller child up until a leaf, then sift the entry down."""
    start = pos
    t, c, k = h[pos].t, h[pos].kind, h[pos].key
    child = 2 * pos + 1
    while child < n:
        right = child + 1
        if right < n and not _lt(h[child].t, h[child].kind, h[child].key,
                                 h[right].t, h[right].kind, h[right].key):
            child = right
        _copy_entry(h, pos, h, child)
        pos = child
        child = 2 * pos + 1
    h[pos].t, h[pos].kind, h[pos].key = t, c, k
    _sift_down(h, start, pos)


@_jit
def _push(h: Arr, n: int, t: float, c: int, k: int) -> int:
    """heapq.heappush; returns the new size."""
    h[n].t, h[n].kind, h[n].key = t, c, k
    _sift_down(h, ROOT, n)
    return n + 1


@_jit
def _pop(h: Arr, n: int) -> int:
    """heapq.heappop without the returned entry (read ``h[0]`` first); returns the new size."""
    n -= 1
    if n > 0:
        _copy_entry(h, ROOT, h, n)
        _sift_up(h, n, ROOT)
    return n


@_jit
def _replace(h: Arr, n: int, t: float, c: int, k: int) -> None:
    """heapq.heapreplace without the returned entry."""
    h[0].t, h[0].kind, h[0].key = t, c, k
    _sift_up(h, n, ROOT)


@_jit
def heapify(h: Arr, n: int) -> None:
    """heapq.heapify (CPython's cache-friendly order builds the same heap)."""
    for i in range(n // 2 - 1, -1, -1):
        _sift_up(h, n, i)


# === the per-key hash table ====================================================================

@_jit
def _copy_record(dst: Arr, i: int, src: Arr, j: int) -> None:
    d, r = dst[i], src[j]
    d.key, d.flags, d.seq, d.fails = r.key, r.flags, r.seq, r.fails
    d.add, d.start, d.wait, d.prev = r.add, r.start, r.wait, r.prev
    d.calls = r.calls
    d.attempt, d.seen, d.first = r.attempt, r.seen, r.first
    d.stage, d.sv, d.rest = r.stage, r.sv, r.rest


@_jit
def _home(k: int, mask: int) -> int:
    x = np.uint64(k) * np.uint64(0x9E3779B97F4A7C15)
    x ^= x >> np.uint64(29)
    return int(np.int64(x & np.uint64(mask)))


@_jit
def _slot(tab: Arr, k: int) -> int:
    """The slot holding key ``k``, or the empty slot where it would go."""
    mask = tab.size - 1
    i = _home(k, mask)
    while True:
        kk = tab[i].key
        if kk == k or kk == EMPTY:  # noqa: SIM109 (two integer compares in compiled code)
            return i
        i = (i + 1) & mask


@_jit
def _delete(tab: Arr, i: int) -> None:
    """Free slot ``i`` (backward-shift deletion: later entries of the probe run move up)."""
    mask = tab.size - 1
    j = i
    while True:
        j = (j + 1) & mask
        kj = tab[j].key
        if kj == EMPTY:
            break
        h = _home(kj, mask)
        # the entry at j may fill the hole at i unless its home lies cyclically in (i, j]
        if (j > i and (h <= i or h > j)) or (j < i and h <= i and h > j):
            _copy_record(tab, i, tab, j)
            i = j
    tab[i].key = EMPTY


@_jit
def rehash(old: Arr, new: Arr) -> None:
    """Move every record of ``old`` into the empty table ``new``."""
    for i in range(old.size):
        if old[i].key != EMPTY:
            _copy_record(new, _slot(new, old[i].key), old, i)


def new_table(size: int) -> Arr:
    tab = np.zeros(size, dtype=KEYREC)
    tab["key"] = EMPTY
    return tab


# === the retry limiter (models.ratelimit) =====================================================

@_jit
def _reserve(bucket: Arr, qps: float, burst: float, t: float) -> float:
    """TokenBucket.reserve: refill (only forward in time), take a token, delay = debt / qps."""
    b = bucket[0]
    if b.has_last and t > b.last:
        x = b.tokens + (t - b.last) * qps
        b.tokens = x if x < burst else burst  # min(burst, x)
    b.last = t
    b.has_last = 1
    b.tokens -= 1.0
    return -b.tokens / qps if b.tokens < 0 else 0.0


@_jit
def _when(lim: Arr, bucket: Arr, n: int, prev: float, u: float,
          t: float) -> tuple[float, float, bool]:
    """One ``when(key, t)`` of the policy's limiter for a key with ``n`` failures recorded
    before this call; ``prev`` = the key's previous decorrelated delay (base if none), ``u`` =
    its jitter draw. Returns (delay, the per-key member's delay, overflow); overflow is never
    set since the delay is computed for every failure count (issue 12), and is kept for the
    loops' status plumbing."""
    p = lim[0]
    if p.kind == L_CONST:
        d = p.base
    else:
        # min(cap, base · 2^n) for every n: ldexp is exact, and +inf once base · 2^n passes
        # the largest float, which is past any cap (ItemExponential.unjittered; issue 12)
        x = math.ldexp(p.base, n)
        d = x if x < p.cap else p.cap
        if p.jitter == J_FULL:
            d = u * d
        elif p.jitter == J_EQUAL:
            d = d / 2.0 + u * d / 2.0
        elif p.jitter == J_DECORRELATED:
            hi = 3.0 * prev if 3.0 * prev > p.base else p.base  # max(base, 3 · prev)
            x = p.base + u * (hi - p.base)
            d = x if x < p.cap else p.cap
    own = d
    if p.bucket:
        b = _reserve(bucket, p.qps, p.burst, t)
        if b > d:  # MaxOf: max([per_key, bucket])
            d = b
    return d, own, False


# === the API server side: the APF priority level, the webhook, Retry-After =====================
#
# Every controller request reaches the server in the order of its CALL event (the client's
# token bucket grants in reservation order, so the arrival times t + delay never decrease), and
# the level is one FIFO queue over its seats: a request's start is max(arrival, the earliest
# free seat), decided when it arrives; the background requests are drawn in advance and
# admitted, in time order, up to each controller arrival. The queue itself is a ring of the
# times the waiting requests leave it (their start, or their time-out), which never decrease
# in arrival order either; the webhook is a FIFO over its own slots, fed in start order.

TRK_CUR, TRK_CNT, TRK_RA, TRK_UPD, TRK_HEAD, TRK_LEN, TRK_LAST = (_i64(i) for i in range(7))
"""Fields of the Retry-After tracker's state row (apiserver ``dropped_requests_tracker.go``):
the current second and its drops, the Retry-After, when it was last raised, the history ring
(head, length) and the last second fed."""
MAX_RETRY_AFTER = 32
_NEVER = -(1 << 40)


def new_tracker() -> tuple[Arr, Arr, Arr]:
    """A fresh Retry-After tracker: its state row and its history ring (seconds, drops)."""
    trk = np.zeros(8, dtype=np.int64)
    trk[TRK_CUR] = trk[TRK_UPD] = trk[TRK_LAST] = _NEVER
    trk[TRK_RA] = 1
    return trk, np.zeros(64, dtype=np.int64), np.zeros(64, dtype=np.int64)


@_jit
def _dropped(trk: Arr, hu: Arr, hc: Arr, t: float) -> int:
    """``RecordDroppedRequest`` then ``GetRetryAfter`` of k8s.io/apiserver's
    ``pkg/util/flowcontrol/dropped_requests_tracker.go`` for a drop at time t (its unix
    second): the Retry-After starts at 1 s; when the second changes, the drops of the last
    Retry-After seconds (before the new one) are summed: at least 3 × Retry-After (and one
    Retry-After since the last raise) doubles it, up to 32 s; fewer than Retry-After lowers it
    by 1 s. Seconds are fed in non-decreasing order (an earlier one counts as the last)."""
    u = np.int64(math.floor(t))
    if u < trk[TRK_LAST]:
        u = trk[TRK_LAST]
    trk[TRK_LAST] = u
    if trk[TRK_CUR] == u:
        trk[TRK_CNT] += 1
        return int(trk[TRK_RA])
    cap = hu.size
    cur = trk[TRK_CUR]
    j = (trk[TRK_HEAD] + trk[TRK_LEN]) % cap
    hu[j], hc[j] = cur, trk[TRK_CNT]
    trk[TRK_LEN] += 1
    while trk[TRK_LEN] > 0 and cur - hu[trk[TRK_HEAD]] > MAX_RETRY_AFTER:
        trk[TRK_HEAD] = (trk[TRK_HEAD] + 1) % cap
        trk[TRK_LEN] -= 1
    trk[TRK_CUR], trk[TRK_CNT] = u, 1
    ra = trk[TRK_RA]
    dropped = 0
    for i in range(trk[TRK_LEN] - 1, -1, -1):
        e = (trk[TRK_HEAD] + i) % cap
        if u - hu[e] > ra:
            break
        if hu[e] < u:
            dropped += hc[e]
    if u - trk[TRK_UPD] >= ra and dropped >= 3 * ra:
        ra = 2 * ra if 2 * ra < MAX_RETRY_AFTER else MAX_RETRY_AFTER
        trk[TRK_UPD] = u
    elif dropped < ra and ra > 1:
        ra -= 1
    trk[TRK_RA] = ra
    return int(ra)


@_jit
def _fheap_replace(h: Arr, v: float) -> None:
    """heapq.heapreplace on a min-heap of floats (seat or webhook-slot free times): the
    smallest is replaced by v."""
    n = h.size
    pos = 0
    while True:
        c = 2 * pos + 1
        if c >= n:
            break
        if c + 1 < n and h[c + 1] < h[c]:
            c += 1
        if h[c] < v:
            h[pos] = h[c]
            pos = c
        else:
            break
    h[pos] = v


@_jit
def _overlap(a: float, b: float, lo: float, hi: float) -> float:
    x = (b if b < hi else hi) - (a if a > lo else lo)
    return x if x > 0 else 0.0


@_jit
def _apf_arrive(st: Arr, seats: Arr, ring: Arr, x: float, limit: int,
                wait_limit: float) -> tuple[float, int]:
    """A request arrives at the level at x: (its start, 0) if it will be dispatched; (x, 1)
    if no seat is free and the queue already holds ``limit`` requests (queue-full, or
    concurrency-limit for a level without a queue, ``limit`` 0); (x + wait limit, 2) if its
    wait would pass the wait limit (time-out). The caller takes the seat of a dispatched
    request."""
    S = st[0]
    cap = ring.size
    h, n = S.rq_head, S.rq_len
    while n > 0 and ring[h] <= x:
        h += 1
        if h == cap:
            h = 0
        n -= 1
    outcome = 0
    f = seats[0]
    start = x if f <= x else f
    if start > x and n >= limit:
        start = x
        outcome = 1
    elif start - x > wait_limit:
        start = x + wait_limit
        outcome = 2
        ring[(h + n) % cap] = start
        n += 1
    elif start > x:
        ring[(h + n) % cap] = start
        n += 1
    S.rq_head, S.rq_len = h, n
    return start, outcome


@_jit
def _background_upto(st: Arr, prm: Arr, x: float, bg: Arr, seats: Arr, ring: Arr,
                     trk: Arr, hu: Arr, hc: Arr, slog: Arr) -> None:
    """Admit the background requests that arrive at or before x (in time order): each is
    dispatched for ``bg_lat`` seconds of a seat, or rejected (and dropped)."""
    S, P = st[0], prm[0]
    W, T, limit, L = P.warmup, P.horizon, P.apf_limit, P.apf_wait_limit
    i = S.ibg
    while i < bg.size and bg[i] <= x:
        b = bg[i]
        i += 1
        start, outcome = _apf_arrive(st, seats, ring, b, limit, L)
        end = start
        if outcome == 0:
            end = start + P.bg_lat
            _fheap_replace(seats, end)
            if start >= W and start <= T:
                S.apf_disp += 1
            S.apf_busy += _overlap(start, end, W, T)
        else:
            if P.apf_ra <= 0:
                _dropped(trk, hu, hc, start)
            if start >= W and start <= T:
                if outcome == 1:
                    S.apf_rej_qf += 1
                else:
                    S.apf_rej_to += 1
        if P.log_on:
            n = S.nslog
            slog[n].arr, slog[n].start, slog[n].end, slog[n].outcome = b, start, end, outcome
            S.nslog = n + 1
    S.ibg = i


# === the stations of a pass: the lock, the connection pool, the CPU ============================
#
# One mechanism, three uses: a FIFO over k slots, the slots a min-heap of their free times (as
# the webhook's). A request at x is granted at max(x, the earliest free time) and holds that
# slot ``hold`` seconds — exact FIFO when the requests are taken in time order (the
# Kiefer–Wolfowitz recursion). The lock is k = 1 (a one-element heap: g = max(x, free),
# free = g + hold, the arithmetic it always had), the pool k = its size, the CPU k = the cores.

LOCK, POOL, CPU = _i64(0), _i64(1), _i64(2)
NO_STATION = _i64(-1)


@_jit
def _take(slots: Arr, x: float, hold: float) -> float:
    """A request at x for one of the slots, held ``hold`` seconds: returns its grant time."""
    f = slots[0]
    g = x if x > f else f
    _fheap_replace(slots, g + hold)
    return g


@_jit
def _next_station(prm: Arr, j: int, sv: float) -> int:
    """The station after ``j`` (NO_STATION: before the first) that a pass of service time
    ``sv`` goes through (its part F·sv is positive): lock, then pool, then CPU."""
    P = prm[0]
    if j < LOCK and P.lock_f * sv > 0:
        return LOCK
    if j < POOL and P.pool_f * sv > 0:
        return POOL
    if j < CPU and P.cpu_f * sv > 0:
        return CPU
    return NO_STATION


@_jit
def _enter(st: Arr, prm: Arr, j: int, lock: Arr, pool: Arr, cpu: Arr, x: float, sv: float,
           counted: bool, lg: Arr, nlog: int) -> tuple[float, int]:
    """A pass (of service time ``sv``; ``counted``: it started in the window) asks station
    ``j`` at x for its part F·sv: returns when it leaves the station and the log's fill. The
    CPU's grant and part go to the metric log (the scheduler latency and the CPU seconds)."""
    S, P = st[0], prm[0]
    if j == LOCK:
        hold = P.lock_f * sv
        g = _take(lock, x, hold)
        if counted:
            S.lock_wait += g - x
            S.lock_n += 1
    elif j == POOL:
        hold = P.pool_f * sv
        g = _take(pool, x, hold)
        if counted:
            S.pool_wait += g - x
            S.pool_n += 1
    else:
        hold = P.cpu_f * sv
        g = _take(cpu, x, hold)
        if counted:
            S.cpu_wait += g - x
            S.cpu_n += 1
        S.cpu_busy += _overlap(g, g + hold, P.warmup, P.horizon)
        nlog = _log(lg, nlog, P.log_on, g, LOG_CPU_WAIT, g - x)
        nlog = _log(lg, nlog, P.log_on, g, LOG_CPU_RUN, hold)
    return g + hold, nlog


# === the simulator's event loop ================================================================

@_jit
def _trace(tr: Arr, ntr: int, n_trace: int, t: float, kind: int, k: int, v: float) -> int:
    if ntr < n_trace:
        tr[ntr].t, tr[ntr].kind, tr[ntr].key, tr[ntr].value = t, kind, k, v
        ntr += 1
    return ntr


@_jit
def _log(lg: Arr, nlog: int, log_on: int, t: float, kind: int, v: float) -> int:
    if log_on:
        lg[nlog].t, lg[nlog].kind, lg[nlog].value = t, kind, v
        nlog += 1
    return nlog


@_jit
def _server_call(st: Arr, prm: Arr, t: float, d: float, k: int, tab: Arr, s: int,
                 seats: Arr, ring: Arr, hooks: Arr, commits: Arr, bg: Arr, trk: Arr, hu: Arr,
                 hc: Arr, alog: Arr, slog: Arr) -> tuple[float, int]:
    """One attempt of the current API call of k's pass, asked for at t and granted by the
    client's token bucket d later: through the APF level (if any), the admission webhook (for
    a write) and the optimistic-concurrency check (for a write to a shared object). Returns
    the time and kind of k's next heap entry: the next call or the pass's completion at the
    response, or the same call again Retry-After seconds after a 429 (client-go
    ``rest/with_retry.go``: attempt n is retried while n ≤ maxRetries)."""
    S, P = st[0], prm[0]
    r = tab[s]
    W, T = P.warmup, P.horizon
    a = t + d  # the request reaches the server
    write = _is_write(P.n_calls, P.n_writes, r.calls)
    att = r.attempt + 1
    r.attempt = att
    if att == 1:
        r.first = a
    start = a
    outcome = 0
    ra = 0.0
    if P.apf_on:
        _background_upto(st, prm, a, bg, seats, ring, trk, hu, hc, slog)
        start, outcome = _apf_arrive(st, seats, ring, a, P.apf_limit, P.apf_wait_limit)
    wait = start - a
    hook = 0.0
    ex = 0.0
    code = 200
    if outcome != 0:  # rejected by the level: 429 with Retry-After
        code = 429
        resp = start
        ra = P.apf_ra if P.apf_ra > 0 else float(_dropped(trk, hu, hc, resp))
        if resp >= W and resp <= T:
            if outcome == 1:
                S.apf_rej_qf += 1
            else:
                S.apf_rej_to += 1
    else:
        if write and P.hook_lat > 0:  # admission, at the start of the execution
            if P.hook_k > 0:
                f = hooks[0]
                ws = start if f <= start else f
                done = ws + P.hook_lat
                _fheap_replace(hooks, done)
                hook = done - start
                wq = ws - start
            else:
                hook = P.hook_lat
                wq = 0.0
            if start + hook >= W and start + hook <= T:
                S.hook_n += 1
                S.hook_wait += wq
                S.hook_sum += hook
        ex = hook + P.call_lat if hook > 0 else P.call_lat
        resp = start + ex
        if P.apf_on:
            _fheap_replace(seats, resp)
            if start >= W and start <= T:
                S.apf_disp += 1
                S.apf_wait_sum += wait
                S.apf_wait_n += 1
            S.apf_busy += _overlap(start, resp, W, T)
        if write and P.n_objects > 0:  # resourceVersion check when the update is stored
            o = k % P.n_objects
            if commits[o] > r.seen:
                code = 409
            else:
                commits[o] = resp
                r.seen = resp
    window = resp >= W and resp <= T
    final = True
    if code == 200:
        r.calls -= 1
        r.attempt = 0
        te = resp
        nk = CALL if r.calls > 0 else COMPLETION
        if window and write:
            S.nwrite_ok += 1
    elif code == 429 and att <= P.max_retries:
        final = False
        te = resp + ra
        nk = CALL
    else:  # 409, or 429 after the last retry: the call fails and so does the pass
        r.flags |= APIFAIL
        r.calls = 0
        r.attempt = 0
        te = resp
        nk = COMPLETION
        if window:
            S.nfailcall += 1
    if window:
        S.att_n += 1
        if code == 429:
            S.n429 += 1
        elif code == 409:
            S.n409 += 1
        if att >= 2:
            S.nretry += 1
    if P.log_on:
        n = S.nalog
        g = alog[n]
        g.t, g.lim, g.wait, g.exec, g.hook, g.resp = t, d, wait, ex, hook, resp
        g.dur = resp - r.first if final else 0.0
        g.write, g.code, g.attempt, g.final = int(write), code, att, int(final)
        S.nalog = n + 1
    return te, nk


@_jit
def _is_write(n_calls: int, n_writes: int, left: int) -> bool:
    """With ``left`` calls of the pass still to make (the current one included), whether the
    current one is a write: the last ``n_writes`` calls of a pass are."""
    return n_calls - left >= n_calls - n_writes


@_jit
def _sim_run(st: Arr, prm: Arr, lim: Arr, bucket: Arr, abucket: Arr, heap: Arr, tab: Arr,
             q: Arr, at: Arr, ak: Arr, svc: Arr, u: Arr, jit: Arr,
             wh: Arr, wf: Arr, dep: Arr, tr: Arr, lg: Arr,
             seats: Arr | None, ring: Arr, hooks: Arr, commits: Arr, bg: Arr, trk: Arr, hu: Arr,
             hc: Arr, alog: Arr, slog: Arr, lockh: Arr | None, poolh: Arr, cpuh: Arr) -> int:
    """The event loop of ``models.simulate`` (see there for the model and the comments on each
    step); resumes from ``st`` and saves into it. Returns DONE, NEED or OVERFLOW. ``lockh``,
    ``poolh``, ``cpuh``: the free times of the lock (one), the pool's slots and the cores."""
    P = prm[0]
    W, p_fail, fw0, fw1 = P.warmup, P.p_fail, P.fw0, P.fw1
    mean_s, dq, dburst = P.mean_s, P.dq, P.dburst
    m, svc_const, dep_on, forget, n_trace = P.m, P.svc_const, P.dep_on, P.forget, P.n_trace
    ext_on, lock_f, sigma, kappa = P.ext_on, P.lock_f, P.sigma, P.kappa
    n_calls, call_lat, aq, aburst, log_on = P.n_calls, P.call_lat, P.aq, P.aburst, P.log_on
    srv_on = P.srv_on
    poll, log_need = P.poll, P.log_need
    jittered = lim[0].jitter != J_NONE
    decorrelated = lim[0].jitter == J_DECORRELATED
    base = lim[0].base
    S = st[0]
    ia, isv, iu, ij = S.ia, S.isv, S.iu, S.ij
    idle, raw, coalesced, retry_adds = S.idle, S.raw, S.coalesced, S.retry_adds
    completed, early_done, failed = S.completed, S.early_done, S.failed
    retries, retry_pops, hot_done = S.retries, S.retry_pops, S.hot_done
    depth_max, ndirty, seq = S.depth_max, S.ndirty, S.seq
    hn, qh, qn, n_used = S.hn, S.qh, S.qn, S.n_used
    nwh, nwf, ndep, ntr = S.nwh, S.nwf, S.ndep, S.ntr
    depth_corr, busy_area, work_sum = S.depth_corr, S.busy_area, S.work_sum
    dtok, dlast = S.dtok, S.dlast
    busy, retire = S.busy, S.retire
    api_wait, api_n, nlog = S.api_wait, S.api_n, S.nlog
    qmask = q.size - 1
    status = DONE
    while True:
        # room for one more event: it takes at most one of each input and adds at most one
        # key record, heap entry, queue entry, wait and request, and two trace lines
        if (ia >= at.size or isv >= svc.size or iu >= u.size or ij >= jit.size
                or 2 * (n_used + 2) > tab.size or hn + 2 > heap.size or qn + 2 > q.size
                or nwh >= wh.size or nwf >= wf.size or ndep >= dep.size
                or (ntr + 2 > tr.size and ntr < n_trace)
                or (log_on and nlog + log_need > lg.size)
                or (srv_on and log_on and S.nalog + 2 > alog.size)):
            status = NEED
            break
        ta = at[ia]
        if heap[0].t >= ta:
            # the arrival at ta (heap events due before it are done)
            k = ak[ia]
            if k < 0:
                break  # the end marker: everything up to T is done
            ia += 1
            t = ta
            s = _slot(tab, k)
            r = tab[s]
            if r.key == k and r.flags & DIRTY:
                coalesced += 1
                ntr = _trace(tr, ntr, n_trace, t, T_COALESCED, k, 0.0)
                continue
            if r.key == EMPTY:
                r.key, r.flags, r.fails = k, 0, 0
                n_used += 1
            r.flags |= DIRTY
            r.add, r.seq = t, seq
            seq += 1
            ndirty += 1
            nlog = _log(lg, nlog, log_on, t, LOG_ADD, 0.0)
            ntr = _trace(tr, ntr, n_trace, t, T_ARRIVAL, k, 0.0)
            if ndirty > depth_max:
                depth_max = ndirty
            if r.flags & PROC:
                continue
            if idle == 0:
                q[(qh + qn) & qmask] = k
                qn += 1
                continue
            idle -= 1
            replace_top = False
        else:
            t, kind, k = heap[0].t, heap[0].kind, heap[0].key
            if kind == COMPLETION:
                # the reconcile of k finished at t; its heap entry stays at the top until the
                # worker goes idle or takes its next key, which replaces it
                s = _slot(tab, k)
                r = tab[s]
                ts = r.start
                r.flags &= ~PROC
                busy -= 1
                if t > W:
                    w = t - ts
                    busy_area += w if ts > W else t - W
                    completed += 1
                    work_sum += w
                    if k == 0:
                        hot_done += 1
                else:
                    early_done += 1
                fails_now = False
                if p_fail != 0.0 and k < m and fw0 <= ts and ts < fw1:
                    fails_now = u[iu] < p_fail
                    iu += 1
                if r.flags & APIFAIL:  # an API call of the pass failed: the pass returns it
                    r.flags &= ~APIFAIL
                    fails_now = True
                if fails_now:
                    failed += 1
                    retries += 1
                    r.flags |= PEN
                    n = r.fails
                    r.fails = n + 1
                    uj = 0.0
                    if jittered:
                        uj = jit[ij]
                        ij += 1
                    d, own, overflow = _when(lim, bucket, n, r.prev if n > 0 else base, uj, t)
                    if overflow:
                        status = OVERFLOW
                        break
                    if decorrelated:
                        r.prev = own
                    ntr = _trace(tr, ntr, n_trace, t, T_FAILURE, k, d)
                    if d <= 0:
                        nlog = _log(lg, nlog, log_on, t, LOG_FAIL_NOW, ts)
                        if not r.flags & DIRTY:
                            r.flags |= DIRTY
                            r.add, r.seq = t, seq
                            seq += 1
                            ndirty += 1
                            retry_adds += 1
                            nlog = _log(lg, nlog, log_on, t, LOG_ADD, 0.0)
                    else:
                        nlog = _log(lg, nlog, log_on, t, LOG_FAIL_DELAY, ts)
                        rt = t + d
                        if not r.flags & WAIT or rt < r.wait:
                            r.flags |= WAIT
                            r.wait = rt
                            hn = _push(heap, hn, rt, RETRY, k)
                else:
                    if r.flags & PEN and forget:
                        r.fails = 0  # Forget: the failure count (and jitter memory) go
                        r.flags &= ~PEN
                    if poll > 0:
                        # Result{RequeueAfter: P}: Forget (above), then AddAfter(k, P) — the
                        # delaying queue keeps the earliest ready time, as for a retry
                        ntr = _trace(tr, ntr, n_trace, t, T_SUCCESS, k, poll)
                        nlog = _log(lg, nlog, log_on, t, LOG_OK_AFTER, ts)
                        if t > W:
                            S.requeue_n += 1
                        rt = t + poll
                        if not r.flags & WAIT or rt < r.wait:
                            r.flags |= WAIT
                            r.wait = rt
                            hn = _push(heap, hn, rt, RETRY, k)
                    else:
                        ntr = _trace(tr, ntr, n_trace, t, T_SUCCESS, k, 0.0)
                        nlog = _log(lg, nlog, log_on, t, LOG_OK, ts)
                if r.flags & DIRTY:
                    q[(qh + qn) & qmask] = k
                    qn += 1
                if r.flags == 0 and r.fails == 0:
                    _delete(tab, s)  # no state left for k
                    n_used -= 1
                if retire > 0:  # the worker count went down: this worker leaves
                    retire -= 1
                    hn = _pop(heap, hn)
                    continue
                if qn == 0:
                    idle += 1
                    hn = _pop(heap, hn)
                    continue
                k = q[qh]
                qh = (qh + 1) & qmask
                qn -= 1
                s = _slot(tab, k)
                replace_top = True
            elif lockh is not None and kind == CALL:
                # the pass of k asks the API client's token bucket for its next call (client-go
                # flowcontrol: a reservation; the delay is the debt / QPS), then waits the call
                s = _slot(tab, k)
                r = tab[s]
                d = _reserve(abucket, aq, aburst, t)
                if t >= W:
                    api_wait += d
                    api_n += 1
                if seats is None or not srv_on:
                    nlog = _log(lg, nlog, log_on, t, LOG_CALL, d)
                    r.calls -= 1
                    _replace(heap, hn, t + d + call_lat, CALL if r.calls > 0 else COMPLETION, k)
                    continue
                te, nk = _server_call(st, prm, t, d, k, tab, s, seats, ring, hooks, commits, bg,
                                      trk, hu, hc, alog, slog)
                _replace(heap, hn, te, nk, k)
                continue
            elif lockh is not None and kind == STAGE:
                # the pass of k reaches its next station (FIFO: the stations are asked in
                # time order), then the next one, or its rest and its API calls
                s = _slot(tab, k)
                r = tab[s]
                end, nlog = _enter(st, prm, r.stage, lockh, poolh, cpuh, t, r.sv, r.start >= W,
                                   lg, nlog)
                j = _next_station(prm, r.stage, r.sv)
                if j != NO_STATION:
                    r.stage = j
                    _replace(heap, hn, end, STAGE, k)
                else:
                    _replace(heap, hn, end + r.rest, CALL if n_calls > 0 else COMPLETION, k)
                continue
            elif kind == WORKER_UP:
                hn = _pop(heap, hn)
                if retire > 0:
                    retire -= 1  # a worker due to leave stays instead
                    continue
                if qn == 0:
                    idle += 1
                    continue
                k = q[qh]
                qh = (qh + 1) & qmask
                qn -= 1
                s = _slot(tab, k)
                replace_top = False
            elif kind == WORKER_DOWN:
                hn = _pop(heap, hn)
                if idle > 0:
                    idle -= 1
                else:
                    retire += 1  # the next worker to finish its pass leaves
                continue
            else:
                hn = _pop(heap, hn)
                replace_top = False
                s = _slot(tab, k)
                r = tab[s]
                if kind == RETRY:
                    # a delayed retry of k is ready at t
                    retry_pops += 1
                    if r.key != k or not r.flags & WAIT or r.wait != t:
                        continue  # superseded by an earlier ready time
                    r.flags &= ~WAIT
                    ntr = _trace(tr, ntr, n_trace, t, T_RETRY_READY, k, 0.0)
                    if r.flags & DIRTY:
                        continue
                    retry_adds += 1
                else:
                    # initial burst: a raw event for k at t = 0
                    raw += 1
                    if r.key == k and r.flags & DIRTY:
                        coalesced += 1
                        continue
                    ntr = _trace(tr, ntr, n_trace, t, T_ARRIVAL, k, 0.0)
                    if r.key == EMPTY:
                        r.key, r.flags, r.fails = k, 0, 0
                        n_used += 1
                r.flags |= DIRTY
                r.add, r.seq = t, seq
                seq += 1
                ndirty += 1
                nlog = _log(lg, nlog, log_on, t, LOG_ADD, 0.0)
                if ndirty > depth_max:
                    depth_max = ndirty
                if r.flags & PROC:
                    continue
                if idle == 0:
                    q[(qh + qn) & qmask] = k
                    qn += 1
                    continue
                idle -= 1
        # a worker gets k at time t
        r = tab[s]
        r.flags = (r.flags | PROC) & ~DIRTY
        r.start = t
        a = r.add
        ndirty -= 1
        busy += 1
        nlog = _log(lg, nlog, log_on, t, LOG_GET, t - a)
        if t >= W:
            if k < m:
                wf[nwf] = t - a
                nwf += 1
            else:
                wh[nwh] = t - a
                nwh += 1
            if a < W:
                depth_corr += W - a
        if svc_const:
            sv = mean_s
        else:
            sv = svc[isv]
            isv += 1
        dd = 0.0  # the wait for the dependency's token bucket
        if k < m:
            if dep_on:
                if t > dlast:
                    dtok += (t - dlast) * dq
                    if dtok > dburst:
                        dtok = dburst
                    dlast = t
                dtok -= 1.0
                if dtok < 0:
                    dd = -dtok / dq
                    dep[ndep] = t + dd
                else:
                    dep[ndep] = t
            else:
                dep[ndep] = t
            ndep += 1
        ntr = _trace(tr, ntr, n_trace, t, T_START, k, t - a)
        nk = COMPLETION
        if lockh is not None and ext_on:
            # the pass: its stations — the serial section (F of the work, under the one lock),
            # the connection pool, the CPU, each FIFO over its slots — then the rest stretched
            # by the coherency cost of the busy workers, then the API calls. The first station
            # is asked at the start (so a request at t + dd is granted at max(t + dd, when a
            # slot is next free), in the order the passes start), the next ones when the pass
            # reaches them (a STAGE event)
            free = sv - lock_f * sv
            if P.pool_f > 0 or P.cpu_f > 0:
                free = free - P.pool_f * sv - P.cpu_f * sv
                if free < 0.0:  # parts adding up to 1, rounded
                    free = 0.0
            rest = free * (1.0 + sigma * (busy - 1) + kappa * busy * (busy - 1))
            tend = t + dd
            j = _next_station(prm, NO_STATION, sv)
            if j != NO_STATION:
                tend, nlog = _enter(st, prm, j, lockh, poolh, cpuh, tend, sv, t >= W, lg, nlog)
                j = _next_station(prm, j, sv)
            if j != NO_STATION:
                r.stage, r.sv, r.rest = j, sv, rest
                nk = STAGE
            else:
                tend += rest
            if n_calls > 0:
                r.calls = n_calls
                if nk == COMPLETION:
                    nk = CALL
                if srv_on:
                    r.attempt = 0
                    r.seen = t  # the pass reads its object at its start
        else:
            tend = t + (sv + dd)
        if replace_top:
            _replace(heap, hn, tend, nk, k)
        else:
            hn = _push(heap, hn, tend, nk, k)

    S.ia, S.isv, S.iu, S.ij = ia, isv, iu, ij
    S.idle, S.raw, S.coalesced, S.retry_adds = idle, raw, coalesced, retry_adds
    S.completed, S.early_done, S.failed = completed, early_done, failed
    S.retries, S.retry_pops, S.hot_done = retries, retry_pops, hot_done
    S.depth_max, S.ndirty, S.seq = depth_max, ndirty, seq
    S.hn, S.qh, S.qn, S.n_used = hn, qh, qn, n_used
    S.nwh, S.nwf, S.ndep, S.ntr = nwh, nwf, ndep, ntr
    S.depth_corr, S.busy_area, S.work_sum = depth_corr, busy_area, work_sum
    S.dtok, S.dlast = dtok, dlast
    S.busy, S.retire = busy, retire
    S.api_wait, S.api_n, S.nlog = api_wait, api_n, nlog
    return status


@_jit
def _busy_residual(heap: Arr, hn: int, tab: Arr, busy_area: float, T: float, W: float) -> float:
    """Add the reconciles still in flight at T, in heap order (the interpreted sum's order)."""
    for i in range(hn):
        if heap[i].kind == COMPLETION or heap[i].kind == CALL or heap[i].kind == STAGE:
            ts = tab[_slot(tab, heap[i].key)].start
            busy_area += T - (ts if ts > W else W)
    return busy_area


def dirty_residual(tab: Arr, depth_area: float, T: float, W: float) -> float:
    """Add the keys still dirty at T, in the order they were added (the dict's order: their
    ``seq``, distinct, so any sort gives the one order), one float addition at a time as the
    interpreted sum did. Plain numpy (compiling it with its sort took 1.7 s)."""
    dirty = (tab["key"] != EMPTY) & ((tab["flags"] & DIRTY) != 0)
    adds = tab["add"][dirty][np.argsort(tab["seq"][dirty])]
    for part in (T - np.where(adds > W, adds, W)).tolist():
        depth_area += part
    return float(depth_area)


@_jit
def fsum(x: Arr) -> float:
    """``math.fsum`` of finite floats: CPython's algorithm (Shewchuk's exact partials, then
    the sum of the partials rounded half-even), so the very same float."""
    p = np.empty(64, np.float64)
    n = 0
    for v in x:
        i = 0
        for j in range(n):
            y = p[j]
            if abs(v) < abs(y):
                v, y = y, v
            hi = v + y
            lo = y - (hi - v)
            if lo != 0.0:
                p[i] = lo
                i += 1
            v = hi
        n = i
        if v != 0.0:
            if n == p.size:
                bigger = np.empty(2 * n, np.float64)
                for j in range(n):  # (not bigger[:n] = p: its shape check compiles for 3 s)
                    bigger[j] = p[j]
                p = bigger
            p[n] = v
            n += 1
    hi = 0.0
    if n > 0:
        n -= 1
        hi = p[n]
        lo = 0.0
        while n > 0:
            v = hi
            n -= 1
            y = p[n]
            hi = v + y
            lo = y - (hi - v)
            if lo != 0.0:
                break
        if n > 0 and ((lo < 0.0 and p[n - 1] < 0.0) or (lo > 0.0 and p[n - 1] > 0.0)):
            y = lo * 2.0
            v = hi + y
            if y == v - hi:
                hi = v
    return float(hi)


def _grow(arr: Arr, need: int) -> Arr:
    out = np.zeros(max(2 * arr.size, need, 16), dtype=arr.dtype)
    out[: arr.size] = arr
    return out


@dataclass
class SimRun:
    """What the loop left: the state record (counters, sums) and the filled arrays."""

    state: dict[str, Any]
    """The SIM_STATE fields at the end, as Python numbers."""
    wh: npt.NDArray[np.float64]
    wf: npt.NDArray[np.float64]
    dep: npt.NDArray[np.float64]
    trace: Arr
    busy_area: float
    """Busy-worker area, the reconciles still in flight at T included."""
    table: Arr
    """The per-key records at T (for :func:`dirty_residual`)."""
    log: Arr
    """The metric log (LOG records in event order), empty unless the run kept one."""
    attempts: Arr
    """The API request attempts (ALOG records in CALL order), with the server side and a log."""
    background: Arr
    """The APF level's background requests (SLOG records in arrival order), with a log."""


def limiter_record(kind: str, base_s: float, cap_s: float, jitter: str,
                   global_qps: float | None, burst: int) -> Arr:
    """The LIMITER row for a ``RetryPolicy``'s fields."""
    lim = np.zeros(1, dtype=LIMITER)
    lim[0] = (L_CONST if kind == "const" else L_EXP, JITTER_CODES[jitter],
              global_qps is not None, base_s, cap_s,
              global_qps if global_qps is not None else 1.0, float(burst))
    return lim


def new_bucket(burst: int) -> Arr:
    bucket = np.zeros(1, dtype=BUCKET)
    bucket[0] = (float(burst), 0.0, 0)
    return bucket


def run_simulation(
    *,
    params: Arr,
    lim: Arr,
    bucket: Arr,
    workers: int,
    burst_keys: int,
    worker_changes: tuple[tuple[float, int], ...],
    api_burst: float,
    blocks: Iterator[tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]],
    draw_svc: Callable[[], npt.NDArray[np.float64]] | None,
    draw_u: Callable[[], npt.NDArray[np.float64]] | None,
    draw_jitter: Callable[[], npt.NDArray[np.float64]] | None,
    size_hint: int,
    T: float,
    apf_seats: int = 0,
    hook_slots: int = 0,
    objects: int = 0,
    background: npt.NDArray[np.float64] | None = None,
    pool_slots: int = 0,
    cpu_slots: int = 0,
) -> SimRun:
    """Drive :func:`_sim_run`: set up the state, refill inputs and grow arrays until done.

    ``worker_changes``: (time, +1 or −1) — one worker joins or leaves at that time (a leaving
    worker that is in a pass leaves when the pass ends). ``api_burst``: the API client's
    token bucket size (it starts full, as golang.org/x/time/rate does). The API server side
    (``params`` ``srv_on``): ``apf_seats`` seats of the APF level (0: none), ``hook_slots``
    of the webhook (0: unlimited), ``objects`` shared objects (0: no conflicts), and the
    arrival times of the level's background requests (ascending, up to T). ``pool_slots``
    and ``cpu_slots``: the connection pool's size and the cores (0: none; the lock is always
    one slot)."""
    st = np.zeros(1, dtype=SIM_STATE)
    st[0]["idle"] = workers
    st[0]["dtok"] = params[0]["dburst"]
    n_trace = int(params[0]["n_trace"])
    log_on = bool(params[0]["log_on"])
    n_changes = len(worker_changes)
    heap = np.zeros(max(1024, burst_keys + n_changes + 16), dtype=HEAP)
    heap[0] = (math.inf, SENTINEL, 0)
    hn = 1
    if burst_keys:
        # N keys failing together: raw events for keys 0…m−1 at t = 0, through the heap
        heap["kind"][1: burst_keys + 1] = BURST
        heap["key"][1: burst_keys + 1] = np.arange(burst_keys)
        hn += burst_keys
    for i, (when, delta) in enumerate(worker_changes):
        heap[hn] = (when, WORKER_UP if delta > 0 else WORKER_DOWN, i)
        hn += 1
    if hn > 1:
        heapify(heap, hn)
    st[0]["hn"] = hn
    tab = new_table(1 << max(10, (4 * burst_keys).bit_length()))
    q = np.zeros(1024, dtype=np.int64)
    first = max(1024, min(size_hint, 1 << 25))
    wh = np.zeros(first)
    wf = np.zeros(first if params[0]["m"] > 0 else 16)
    dep = np.zeros(first if params[0]["m"] > 0 else 16)
    tr = np.zeros(min(n_trace, 1 << 12) + 2, dtype=TRACE)
    lg = np.zeros(max(1024, min(3 * size_hint, 1 << 23)) if log_on else 1, dtype=LOG)
    abucket = new_bucket(1)
    abucket[0]["tokens"] = api_burst
    one = np.zeros(1)  # stands in for a stream the run never reads
    at, ak = one, np.zeros(1, dtype=np.int64)
    svc = draw_svc() if draw_svc is not None else one
    u = draw_u() if draw_u is not None else one
    jit = draw_jitter() if draw_jitter is not None else one
    st[0]["ia"] = 1  # no arrival block yet
    srv_on = bool(params[0]["srv_on"])
    ext_on = bool(params[0]["ext_on"])
    seats = np.zeros(max(apf_seats, 1))  # free times, a min-heap
    ring = np.zeros(max(int(params[0]["apf_limit"]), 1))
    hooks = np.zeros(max(hook_slots, 1))
    commits = np.full(max(objects, 1), -math.inf)  # when each object was last written
    bg = background if background is not None else np.zeros(0)
    trk, hu, hc = new_tracker()
    calls = max(int(params[0]["n_calls"]), 1)
    alog = np.zeros(max(1024, min(calls * size_hint, 1 << 23)) if srv_on and log_on else 1,
                    dtype=ALOG)
    slog = np.zeros(bg.size + 1 if log_on else 1, dtype=SLOG)
    lockh = np.zeros(1)  # free times, min-heaps (the lock's is one slot)
    poolh = np.zeros(max(pool_slots, 1))
    cpuh = np.zeros(max(cpu_slots, 1))
    log_need = int(params[0]["log_need"])
    while True:
        status = _sim_run(st, params, lim, bucket, abucket, heap, tab, q, at, ak, svc, u, jit,
                          wh, wf, dep, tr, lg, seats if srv_on else None, ring, hooks, commits,
                          bg, trk, hu, hc, alog, slog, lockh if ext_on else None, poolh, cpuh)
        if status == DONE:
            break
        if status == OVERFLOW:
            raise OverflowError(34, "Numerical result out of range")
        s = st[0]
        if s["ia"] >= at.size:
            at, ak = next(blocks)
            s["ia"] = 0
        if s["isv"] >= svc.size and draw_svc is not None:
            svc, s["isv"] = draw_svc(), 0
        if s["iu"] >= u.size and draw_u is not None:
            u, s["iu"] = draw_u(), 0
        if s["ij"] >= jit.size and draw_jitter is not None:
            jit, s["ij"] = draw_jitter(), 0
        if 2 * (s["n_used"] + 2) > tab.size:
            bigger = new_table(2 * tab.size)
            rehash(tab, bigger)
            tab = bigger
        if s["hn"] + 2 > heap.size:
            heap = _grow(heap, s["hn"] + 2)
        if s["qn"] + 2 > q.size:
            order = (s["qh"] + np.arange(s["qn"])) & (q.size - 1)
            bigger_q = np.zeros(2 * q.size, dtype=np.int64)
            bigger_q[: s["qn"]] = q[order]
            q, s["qh"] = bigger_q, 0
        if s["nwh"] >= wh.size:
            wh = _grow(wh, s["nwh"] + 1)
        if s["nwf"] >= wf.size:
            wf = _grow(wf, s["nwf"] + 1)
        if s["ndep"] >= dep.size:
            dep = _grow(dep, s["ndep"] + 1)
        if s["ntr"] + 2 > tr.size and s["ntr"] < n_trace:
            tr = _grow(tr, min(2 * tr.size, n_trace + 2))
        if log_on and s["nlog"] + log_need > lg.size:
            lg = _grow(lg, s["nlog"] + log_need)
        if srv_on and log_on and s["nalog"] + 2 > alog.size:
            alog = _grow(alog, s["nalog"] + 2)
    if params[0]["apf_on"]:  # the background requests after the last controller request
        _background_upto(st, params, T, bg, seats, ring, trk, hu, hc, slog)
    s = st[0]
    busy = _busy_residual(heap, int(s["hn"]), tab, float(s["busy_area"]), T,
                          float(params[0]["warmup"]))
    state = {name: s[name].item() for name in SIM_STATE.names or ()}
    return SimRun(state=state, wh=wh[: s["nwh"]], wf=wf[: s["nwf"]], dep=dep[: s["ndep"]],
                  trace=tr[: s["ntr"]], busy_area=float(busy), table=tab,
                  log=lg[: s["nlog"]], attempts=alog[: s["nalog"]],
                  background=slog[: s["nslog"]])


# === the retry storm (models.retry.retry_storm) ===============================================
#
# Every key has exactly one pending entry (its next attempt or the failure of the attempt in
# progress), so the storm's heap is kept as a loser tree over the keys: the popped entry is
# always the key whose entry changes next, and one pass from its leaf to the root replaces
# heapq's pop + push. The entries are distinct (one per key), so the pop order is the heap's.

ATTEMPT, FAILURE, FINISHED = _i64(0), _i64(1), _i64(3)  # FINISHED sorts last

STORM_STATE = np.dtype([
    ("ij", np.int64), ("attempts", np.int64), ("failed", np.int64), ("nlags", np.int64),
    ("budget", np.int64),
])


@_jit
def _tree_build(tree: Arr, leaves: Arr) -> None:
    """Loser tree over ``leaves`` (size P, a power of two): ``tree[j]`` for 1 ≤ j < P holds the
    loser of the match at node j, ``tree[0]`` the overall winner."""
    P = leaves.size
    win = np.empty(2 * P, dtype=leaves.dtype)
    for i in range(P):
        _copy_entry(win, P + i, leaves, i)
    for j in range(P - 1, 0, -1):
        a, b = 2 * j, 2 * j + 1
        if not _lt(win[a].t, win[a].kind, win[a].key, win[b].t, win[b].kind, win[b].key):
            a, b = b, a
        _copy_entry(win, j, win, a)
        _copy_entry(tree, j, win, b)
    _copy_entry(tree, ROOT, win, ROOT + 1)


@_jit
def _tree_replay(tree: Arr, t: float, c: int, k: int) -> None:
    """The winner, key k, now has the entry (t, c, k): replay its matches up to the root."""
    j = (tree.size + k) >> 1
    while j >= 1:
        n = tree[j]
        if _lt(n.t, n.kind, n.key, t, c, k):
            lt, lc, lk = n.t, n.kind, n.key
            n.t, n.kind, n.key = t, c, k
            t, c, k = lt, lc, lk
        j >>= 1
    tree[0].t, tree[0].kind, tree[0].key = t, c, k


@_jit
def _storm_run(ss: Arr, lim: Arr, bucket: Arr, tree: Arr, bins: Arr, lags: Arr, counts: Arr,
               fails: Arr, prev: Arr, jit: Arr, out: float, att: float, hz: float, bw: float,
               nbins: int) -> int:
    """The event loop of ``retry_storm``: take the smallest (t, kind, key); an attempt is a
    request, failing while t < outage; a failure schedules the next attempt ``when`` later.
    Returns DONE, NEED, OVERFLOW or BUDGET."""
    S = ss[0]
    ij, attempts, failed, nlags, budget = S.ij, S.attempts, S.failed, S.nlags, S.budget
    jittered = lim[0].jitter != J_NONE
    decorrelated = lim[0].jitter == J_DECORRELATED
    base = lim[0].base
    status = DONE
    while True:
        if jittered and ij >= jit.size:
            status = NEED
            break
        t, kind, k = tree[0].t, tree[0].kind, tree[0].key
        if kind == FINISHED or t > hz:
            break  # every key recovered, or the horizon is reached
        if kind == ATTEMPT:  # an attempt starts: one request to the dependency
            attempts += 1
            if t > 0:  # a retry (the first attempts at t = 0 are the same for every policy)
                b = int(t / bw)
                bins[b if b < nbins else nbins] += 1
            if t < out:
                _tree_replay(tree, t + att, FAILURE, k)
            else:
                lags[nlags] = t - out
                nlags += 1
                _tree_replay(tree, math.inf, FINISHED, k)
        else:  # the attempt failed: AddRateLimited
            failed += 1
            counts[k] += 1
            n = fails[k]
            fails[k] = n + 1
            uj = 0.0
            if jittered:
                uj = jit[ij]
                ij += 1
            d, own, overflow = _when(lim, bucket, n, prev[k] if n > 0 else base, uj, t)
            if overflow:
                status = OVERFLOW
                break
            if decorrelated:
                prev[k] = own
            _tree_replay(tree, t + d, ATTEMPT, k)
        budget -= 1
        if budget == 0:
            status = BUDGET
            break
    S.ij, S.attempts, S.failed, S.nlags, S.budget = ij, attempts, failed, nlags, budget
    return status


@_jit
def _storm_fast(ss: Arr, lim: Arr, bucket: Arr, tree: Arr, bins: Arr, lags: Arr,
                counts: Arr, fails: Arr, prev: Arr, jit: Arr, out: float, att: float,
                hz: float, bw: float, nbins: int) -> int:
    """:func:`_storm_run` with one tree entry per cycle instead of two: the tree holds each
    key's next *failure* (t, FAILURE, key), and the attempt before it is counted when the
    failure before that is handled. Failures — the only events that call ``when`` or read a
    random number — are handled in the same (t, key) order as by :func:`_storm_run`: a
    failure's attempt always comes earlier or, at the same time, first (kind 0 < 1). The
    other outputs are counts and a set of lags, which do not depend on the order. Returns
    DONE, NEED, or OVERFLOW / BUDGET, on which the caller replays with :func:`_storm_run` to
    learn which of the two the interpreted loop would have met first."""
    S = ss[0]
    ij, attempts, failed, nlags, budget = S.ij, S.attempts, S.failed, S.nlags, S.budget
    jittered = lim[0].jitter != J_NONE
    decorrelated = lim[0].jitter == J_DECORRELATED
    base = lim[0].base
    status = DONE
    while True:
        if jittered and ij >= jit.size:
            status = NEED
            break
        t, kind, k = tree[0].t, tree[0].kind, tree[0].key
        if kind == FINISHED or t > hz:
            break
        failed += 1
        counts[k] += 1
        n = fails[k]
        fails[k] = n + 1
        uj = 0.0
        if jittered:
            uj = jit[ij]
            ij += 1
        d, own, overflow = _when(lim, bucket, n, prev[k] if n > 0 else base, uj, t)
        if overflow:
            status = OVERFLOW
            break
        if decorrelated:
            prev[k] = own
        budget -= 1
        a = t + d  # the next attempt
        if a > hz:
            _tree_replay(tree, math.inf, FINISHED, k)
        else:
            attempts += 1
            budget -= 1
            if a > 0:
                b = int(a / bw)
                bins[b if b < nbins else nbins] += 1
            if a < out:
                _tree_replay(tree, a + att, FAILURE, k)
            else:
                lags[nlags] = a - out
                nlags += 1
                _tree_replay(tree, math.inf, FINISHED, k)
        if budget <= 0:
            status = BUDGET
            break
    S.ij, S.attempts, S.failed, S.nlags, S.budget = ij, attempts, failed, nlags, budget
    return status


@dataclass
class StormRun:
    attempts: int
    failed: int
    bins: npt.NDArray[np.float64]
    lags: npt.NDArray[np.float64]
    counts: npt.NDArray[np.int64]
    over_budget: bool


def run_storm(*, keys: int, lim: Arr, bucket: Arr, outage_s: float, attempt_s: float,
              horizon_s: float, bin_s: float, nbins: int, budget: int, seed: int,
              replicate: bool = True, exact: bool = False) -> StormRun:
    """The storm from the N first attempts at t = 0 to the horizon; jitter is drawn from
    ``default_rng(seed)``, one number per failure.

    Without jitter and without a shared bucket nothing links the keys: each one's timeline
    is a function of its own failures, and all N start alike, so (``replicate``) one key is
    replayed and the counts are multiplied by N (exact: they are whole numbers far below
    2^53); the step budget is then N × one key's steps. :func:`_storm_fast` runs the storm
    unless it meets an error (or ``exact``), then :func:`_storm_run` does."""
    if replicate and lim[0]["jitter"] == J_NONE and not lim[0]["bucket"] and keys > 1:
        one = run_storm(keys=1, lim=lim, bucket=bucket, outage_s=outage_s,
                        attempt_s=attempt_s, horizon_s=horizon_s, bin_s=bin_s, nbins=nbins,
                        budget=-(-budget // keys), seed=seed, exact=exact)
        return StormRun(attempts=one.attempts * keys, failed=one.failed * keys,
                        bins=one.bins * keys, lags=np.repeat(one.lags, keys),
                        counts=np.repeat(one.counts, keys), over_budget=one.over_budget)
    if not exact:
        fast = _run_storm_loop(_storm_fast, keys, lim, bucket, outage_s, attempt_s, horizon_s,
                               bin_s, nbins, budget, seed)
        if fast is not None:
            return fast
    exact_run = _run_storm_loop(_storm_run, keys, lim, bucket, outage_s, attempt_s, horizon_s,
                                bin_s, nbins, budget, seed)
    assert exact_run is not None
    return exact_run


def _run_storm_loop(loop: Callable[..., int], keys: int, lim: Arr, bucket: Arr,
                    outage_s: float, attempt_s: float, horizon_s: float, bin_s: float,
                    nbins: int, budget: int, seed: int) -> StormRun | None:
    """Run ``loop`` (``_storm_run`` or ``_storm_fast``) on fresh state; None when
    ``_storm_fast`` stopped on an error (OverflowError / over budget) that only the exact
    loop can order."""
    fast = loop is _storm_fast
    bucket = bucket.copy()
    ss = np.zeros(1, dtype=STORM_STATE)
    ss[0]["budget"] = budget
    size = 1 << (keys - 1).bit_length()
    leaves = np.zeros(size, dtype=HEAP)  # (0.0, ATTEMPT, k): the N first attempts at t = 0
    leaves["key"] = np.arange(size)
    if fast:  # the first attempts (t = 0 < outage) are counted; their failures are next
        leaves["t"][:keys] = 0.0 + attempt_s
        leaves["kind"][:keys] = FAILURE
        ss[0]["attempts"] = keys
        ss[0]["budget"] = budget - keys
    leaves["t"][keys:] = math.inf  # padding
    leaves["kind"][keys:] = FINISHED
    tree = np.zeros(size, dtype=HEAP)
    _tree_build(tree, leaves)
    bins = np.zeros(nbins + 1)
    lags = np.zeros(keys)
    counts = np.zeros(keys, dtype=np.int64)
    fails = np.zeros(keys, dtype=np.int64)
    prev = np.zeros(keys)
    jittered = lim[0]["kind"] == L_EXP and lim[0]["jitter"] != J_NONE
    rng = np.random.default_rng(seed)
    jit = rng.random(_JITTER_BLOCK) if jittered else np.zeros(1)
    if fast and ss[0]["budget"] <= 0:
        return None
    while True:
        status = loop(ss, lim, bucket, tree, bins, lags, counts, fails, prev, jit,
                      outage_s, attempt_s, horizon_s, bin_s, nbins)
        if status == NEED:
            jit = rng.random(_JITTER_BLOCK)
            ss[0]["ij"] = 0
            continue
        break
    if fast and status in (OVERFLOW, BUDGET):
        return None
    if status == OVERFLOW:
        raise OverflowError(34, "Numerical result out of range")
    s = ss[0]
    return StormRun(attempts=int(s["attempts"]), failed=int(s["failed"]), bins=bins,
                    lags=lags[: s["nlags"]], counts=counts, over_budget=status == BUDGET)


_JITTER_BLOCK = 1 << 15
