"""Classical queueing formulas: M/M/1, M/M/c (Erlang C) and the G/G/c approximation.

Every result here is conditional on the model's stochastic assumptions (for M/M/·: Poisson
arrivals and exponentially distributed service times, FIFO, infinite waiting room).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models.errors import ModelInputError
from models.formatting import sig
from models.limits import MAX_WORKERS


@dataclass(frozen=True)
class MM1Result:
    """M/M/1 steady state. Waits and lengths are None when the queue is unstable (λ ≥ μ)."""

    arrival_rate_per_s: float
    service_rate_per_s: float
    utilization: float
    stable: bool
    residence_mean_s: float | None
    """W = 1/(μ − λ): mean time in system (wait + service)."""
    wait_mean_s: float | None
    """Wq = ρ/(μ − λ)."""
    in_system_mean: float | None
    """L = ρ/(1 − ρ)."""
    in_queue_mean: float | None
    """Lq = ρ²/(1 − ρ)."""


def mm1(arrival_rate_per_s: float, service_rate_per_s: float) -> MM1Result:
    """M/M/1 (Kleinrock, *Queueing Systems* vol. 1, 1975, §3.2): ρ = λ/μ, W = 1/(μ − λ),
    Wq = ρ/(μ − λ), L = ρ/(1 − ρ), Lq = ρ²/(1 − ρ). Unstable (all None) when λ ≥ μ."""
    lam, mu = arrival_rate_per_s, service_rate_per_s
    if not (math.isfinite(lam) and lam >= 0):
        raise ModelInputError(f"arrival rate must be a finite non-negative number, got {lam!r}.")
    if not (math.isfinite(mu) and mu > 0):
        raise ModelInputError(f"service rate must be a finite positive number, got {mu!r}.")
    rho = lam / mu
    if lam >= mu:
        return MM1Result(lam, mu, rho, False, None, None, None, None)
    return MM1Result(
        arrival_rate_per_s=lam,
        service_rate_per_s=mu,
        utilization=rho,
        stable=True,
        residence_mean_s=1.0 / (mu - lam),
        wait_mean_s=rho / (mu - lam),
        in_system_mean=rho / (1.0 - rho),
        in_queue_mean=rho * rho / (1.0 - rho),
    )


# --------------------------------------------------------------------------------------------
# M/M/c (Erlang C), vectorized
# --------------------------------------------------------------------------------------------

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

WAIT_PERCENTILES: tuple[float, ...] = (0.5, 0.9, 0.95, 0.99)
"""The wait percentiles the models report (p50, p90, p95, p99)."""

# Above this many table cells the Erlang B recursion stops storing every step and instead
# picks the needed worker counts out as it goes (keeps memory bounded for c up to 10,000+).
_TABLE_CELLS_MAX = 4_000_000


@dataclass(frozen=True)
class MMcResult:
    """M/M/c steady state, one value per element of the broadcast inputs (numpy arrays).

    Unstable elements (λ ≥ c·μ) have ``stable`` False, ``p_wait`` 1 and +inf waits and
    lengths: the backlog grows without bound. Never NaN, never negative.
    """

    arrival_rate_per_s: FloatArray
    service_rate_per_s: FloatArray
    workers: IntArray
    utilization: FloatArray
    """ρ = λ/(c·μ); above 1 means unstable (the offered load, not a busy fraction)."""
    stable: BoolArray
    p_wait: FloatArray
    """Erlang C: probability that an arriving item finds all c workers busy."""
    wait_mean_s: FloatArray
    """Wq = C/(c·μ − λ)."""
    response_mean_s: FloatArray
    """W = Wq + 1/μ."""
    queue_length_mean: FloatArray
    """Lq = λ·Wq (Little's law)."""
    in_system_mean: FloatArray
    """L = λ·W."""


def _as_float_array(name: str, value: npt.ArrayLike, *, positive: bool) -> FloatArray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ModelInputError(f"{name} must be numeric, got {value!r}.") from None
    if not np.all(np.isfinite(arr)):
        raise ModelInputError(f"{name} must be finite (no NaN or infinity).")
    if positive and np.any(arr <= 0):
        raise ModelInputError(f"{name} must be positive.")
    if not positive and np.any(arr < 0):
        raise ModelInputError(f"{name} must be non-negative.")
    return arr


def _as_workers(value: npt.ArrayLike) -> IntArray:
    try:
        raw = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ModelInputError(f"worker count must be a whole number, got {value!r}.") from None
    if not np.all(np.isfinite(raw)) or np.any(raw != np.round(raw)):
        raise ModelInputError("worker count must be a whole number.")
    if np.any(raw < 1):
        raise ModelInputError("worker count must be at least 1.")
    if np.any(raw > MAX_WORKERS):
        raise ModelInputError(f"at most {MAX_WORKERS:,} workers can be modelled (the Erlang "
                              f"recursion runs one step per worker), got {sig(raw.max())}.")
    return raw.astype(np.int64)


def erlang_b_table(offered_load: npt.ArrayLike, max_workers: int) -> FloatArray:
    """Erlang B blocking probability B(k, A) for every k = 0..max_workers (last axis).

    Uses the numerically stable recursion B(0) = 1, B(k) = A·B(k−1) / (k + A·B(k−1))
    (Jagerman, "Some properties of the Erlang loss function", Bell Syst. Tech. J. 53, 1974):
    no factorials and no powers, so it neither overflows nor loses precision at c = 10,000.
    """
    a = _as_float_array("offered load", offered_load, positive=False)
    if max_workers < 0:
        raise ModelInputError("max_workers must be non-negative.")
    if max_workers > MAX_WORKERS:
        raise ModelInputError(f"at most {MAX_WORKERS:,} workers can be modelled, got "
                              f"{max_workers!r}.")
    # k is the last axis so that picking each element's own worker count reads memory in order.
    table = np.empty((*a.shape, max_workers + 1), dtype=np.float64)
    b = np.ones_like(a)
    table[..., 0] = b
    ab = np.empty_like(a)
    for k in range(1, max_workers + 1):
        np.multiply(a, b, out=ab)
        b = ab / (k + ab)
        table[..., k] = b
    return table


def _erlang_b(a: FloatArray, c: IntArray, out: FloatArray) -> None:
    """Write B(c, A) into ``out`` (the broadcast shape of same-rank ``a`` and ``c``).

    The recursion runs over a's own shape (one row of loads, not the broadcast product) and
    each step's B is copied to wherever that worker count is wanted.
    """
    cmax = int(c.max()) if c.size else 0
    if (cmax + 1) * max(a.size, 1) <= _TABLE_CELLS_MAX:
        table = erlang_b_table(a, cmax)  # shape (*a.shape, cmax+1)
        c_full = np.broadcast_to(c, out.shape)
        out[...] = np.take_along_axis(table, c_full[..., np.newaxis], axis=-1)[..., 0]
        return
    # Large c with loads that vary along the worker axis: one recursion, masked pick-up.
    c_full = np.broadcast_to(c, out.shape)
    wanted = set(np.unique(c_full).tolist())
    b = np.ones_like(a)
    for k in range(1, cmax + 1):
        ab = a * b
        b = ab / (k + ab)
        if k in wanted:
            mask = c_full == k
            out[mask] = np.broadcast_to(b, out.shape)[mask]


def erlang_c(
    arrival_rate_per_s: npt.ArrayLike,
    service_rate_per_s: npt.ArrayLike,
    workers: npt.ArrayLike,
    *,
    workspace: ErlangCWorkspace | None = None,
) -> MMcResult:
    """M/M/c (Erlang C) for every element of the broadcast inputs, in one numpy pass.

    With offered load A = λ/μ and ρ = A/c < 1 (Kleinrock, *Queueing Systems* vol. 1, §3.5;
    Gross & Harris, *Fundamentals of Queueing Theory*, §2.3):

        C(c, A) = B / (1 − ρ·(1 − B))        B = Erlang B(c, A), by recursion (see
                                              :func:`erlang_b_table`)
        Wq = C / (c·μ − λ),  W = Wq + 1/μ,  Lq = λ·Wq,  L = λ·W.

    Inputs broadcast like numpy arrays, e.g. λ of shape (10000, 1) against workers of shape
    (64,) gives (10000, 64) results. λ ≥ c·μ is reported as unstable (p_wait 1, +inf waits).
    Conditional on Poisson arrivals, exponential service, FIFO and unlimited waiting room.

    For that column × row layout, ``workspace`` (an :class:`ErlangCWorkspace` of the same
    size) makes the call write into preallocated buffers, for callers that repeat the sweep;
    the result then holds views of the workspace, valid until its next use.
    """
    lam = _as_float_array("arrival rate", arrival_rate_per_s, positive=False)
    mu = _as_float_array("service rate", service_rate_per_s, positive=True)
    c = _as_workers(workers)
    shape = np.broadcast_shapes(lam.shape, mu.shape, c.shape)
    # Work on arrays of one common rank (scalars become 1-element arrays, since the in-place
    # arithmetic below needs arrays), then give the caller back the broadcast shape.
    ndim = max(len(shape), 1)
    lam_nd = lam.reshape((1,) * (ndim - lam.ndim) + lam.shape)
    mu_nd = mu.reshape((1,) * (ndim - mu.ndim) + mu.shape)
    c_nd = c.reshape((1,) * (ndim - c.ndim) + c.shape)
    full = np.broadcast_shapes(lam_nd.shape, mu_nd.shape, c_nd.shape)
    if len(full) == 2 and lam_nd.shape[1] == mu_nd.shape[1] == 1 and c_nd.shape[0] == 1:
        # The what-if layout: a column of queues against a row of worker counts.
        n, m = full
        if workspace is None:
            workspace = ErlangCWorkspace(n, m)
        elif (workspace.n_queues, workspace.n_workers) != (n, m):
            raise ModelInputError(
                f"the workspace is for {workspace.n_queues} queues × {workspace.n_workers} "
                f"worker counts, not {n} × {m}."
            )
        ws = workspace
        _erlang_c_grid(
            np.broadcast_to(lam_nd[:, 0], (n,)), np.broadcast_to(mu_nd[:, 0], (n,)), c_nd[0], ws
        )
        return MMcResult(
            arrival_rate_per_s=np.broadcast_to(lam, shape),
            service_rate_per_s=np.broadcast_to(mu, shape),
            workers=np.broadcast_to(c, shape),
            utilization=ws.utilization.T.reshape(shape),
            stable=ws.stable.T.reshape(shape),
            p_wait=ws.p_wait.T.reshape(shape),
            wait_mean_s=ws.wait_mean_s.T.reshape(shape),
            response_mean_s=ws.response_mean_s.T.reshape(shape),
            queue_length_mean=ws.queue_length_mean.T.reshape(shape),
            in_system_mean=ws.in_system_mean.T.reshape(shape),
        )
    if workspace is not None:
        raise ModelInputError(
            "a workspace applies to a column of queues (shape (N, 1)) against a row of worker "
            "counts (shape (C,))."
        )
    out = {name: np.empty(full, dtype=np.float64) for name in _MMC_FLOAT_FIELDS}
    stable = np.empty(full, dtype=np.bool_)
    # Erlang B once over the whole input: the recursion runs on the loads' own shape.
    _erlang_b(lam_nd / mu_nd, c_nd, out["p_wait"])
    # Large inputs are processed in blocks of rows so that each block's temporaries stay in
    # the CPU cache (the sweep is memory-bound otherwise); small inputs are one block.
    row_cells = max(math.prod(full[1:]), 1)
    step = max(1, _BLOCK_CELLS // row_cells)
    for start in range(0, full[0], step):
        rows = slice(start, min(start + step, full[0]))
        _erlang_c_block(
            lam_nd[rows] if lam_nd.shape[0] > 1 else lam_nd,
            mu_nd[rows] if mu_nd.shape[0] > 1 else mu_nd,
            c_nd[rows] if c_nd.shape[0] > 1 else c_nd,
            {k: v[rows] for k, v in out.items()},
            stable[rows],
        )
    return MMcResult(
        arrival_rate_per_s=np.broadcast_to(lam, shape),
        service_rate_per_s=np.broadcast_to(mu, shape),
        workers=np.broadcast_to(c, shape),
        stable=stable.reshape(shape),
        **{k: v.reshape(shape) for k, v in out.items()},
    )


_MMC_FLOAT_FIELDS = (
    "utilization",
    "p_wait",
    "wait_mean_s",
    "response_mean_s",
    "queue_length_mean",
    "in_system_mean",
)
_BLOCK_CELLS = 131_072


# Cells per post-processing block of the grid sweep: large enough that the Python overhead per
# block is negligible, small enough that a block's rows are still in cache when they are read.
_GRID_BLOCK_CELLS = 160_000


class ErlangCWorkspace:
    """Preallocated outputs for :func:`erlang_c` over a column of ``n_queues`` queues against a
    row of ``n_workers`` worker counts (the what-if / fleet layout), reusable across calls.

    ``erlang_c(lam[:, None], mu[:, None], workers, workspace=ws)`` then writes its results into
    these buffers instead of allocating ~50 bytes per cell (30 MB for 10,000 × 64) whose
    first-touch page faults cost more than the arithmetic. The returned :class:`MMcResult`
    holds (n_queues, n_workers) *views* of the buffers, so the next call with the same
    workspace overwrites them: copy what must outlive it. Not thread-safe: one per thread.
    """

    def __init__(self, n_queues: int, n_workers: int) -> None:
        if n_queues < 1 or n_workers < 1:
            raise ModelInputError("a workspace needs at least one queue and one worker count.")
        self.n_queues = int(n_queues)
        self.n_workers = int(n_workers)
        # Worker counts on the first axis: each step of the Erlang B recursion then writes one
        # contiguous row and every later operation runs along contiguous rows of queues; the
        # caller sees (n_queues, n_workers) transposed views.
        grid = (self.n_workers, self.n_queues)
        self.utilization: FloatArray = np.empty(grid, dtype=np.float64)
        self.stable: BoolArray = np.empty(grid, dtype=np.bool_)
        self.p_wait: FloatArray = np.empty(grid, dtype=np.float64)
        self.wait_mean_s: FloatArray = np.empty(grid, dtype=np.float64)
        self.response_mean_s: FloatArray = np.empty(grid, dtype=np.float64)
        self.queue_length_mean: FloatArray = np.empty(grid, dtype=np.float64)
        self.in_system_mean: FloatArray = np.empty(grid, dtype=np.float64)
        self._block_rows = max(1, min(self.n_workers, _GRID_BLOCK_CELLS // self.n_queues))
        self._scratch: FloatArray = np.empty((self._block_rows, self.n_queues), dtype=np.float64)
        row = (self.n_queues,)
        self._load: FloatArray = np.empty(row, dtype=np.float64)
        self._inv_mu: FloatArray = np.empty(row, dtype=np.float64)
        self._ab: FloatArray = np.empty(row, dtype=np.float64)
        self._den: FloatArray = np.empty(row, dtype=np.float64)
        self._b: FloatArray = np.empty(row, dtype=np.float64)


def _erlang_c_grid(lam: FloatArray, mu: FloatArray, c: IntArray, ws: ErlangCWorkspace) -> None:
    """Erlang C for queues (``lam``, ``mu``: shape (N,)) × worker counts (``c``: shape (C,)),
    written in place into the (C, N) buffers of ``ws``.

    The Erlang B recursion of :func:`erlang_b_table` runs once over the N loads; at step k it
    computes x = A·B(k − 1, A) anyway, and with it (substituting B(k) = x/(k + x) into
    B/(1 − ρ(1 − B)))

        C(k, A) = x / (k − A + x),

    which needs no extra pass: x is written straight into the p_wait row of worker count k,
    then each block of rows is finished while it is still in cache. In floating point, with
    s = max(k − A, 0) (exactly 0 iff A ≥ k, i.e. unstable): stable cells have s + x ≥ x, so
    C ≤ 1; unstable cells get C = x/x = 1 exactly (x > 0 there) and Wq = C/(s·μ) = +inf.
    It agrees with :func:`_erlang_c_block` to ~1e-14 relative (both are within ~1e-15 of
    exact rational arithmetic; k − A + x adds two non-negative terms, and k − A is exact for
    A in [k/2, 2k]). Every operation writes into preallocated memory and none is masked
    (``where=``): the 10,000 × 64 sweep of benchmarks/bench_erlang.py is bound by memory
    traffic and ufunc passes, so it makes 3 passes per recursion step and 11 per output cell.
    """
    a = np.divide(lam, mu, out=ws._load)
    inv_mu = np.divide(1.0, mu, out=ws._inv_mu)
    rows: dict[int, list[int]] = {}
    for i, k in enumerate(c.tolist()):
        rows.setdefault(int(k), []).append(i)
    # A block of rows is finished at the step that produces the largest worker count in it.
    step = ws._block_rows
    ready: dict[int, list[slice]] = {}
    for start in range(0, c.size, step):
        block = slice(start, min(start + step, c.size))
        ready.setdefault(int(c[block].max()), []).append(block)
    cf = c.astype(np.float64)[:, np.newaxis]
    p_wait, wq_all = ws.p_wait, ws.wait_mean_s
    den, b = ws._den, ws._b
    b.fill(1.0)  # B(0) = 1
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for k in range(1, max(rows, default=0) + 1):
            wanted = rows.get(k)
            x = ws._ab if wanted is None else p_wait[wanted[0]]
            np.multiply(a, b, out=x)  # x = A·B(k−1)
            if wanted is not None:
                for i in wanted[1:]:
                    p_wait[i] = x
            np.add(x, k, out=den)
            np.divide(x, den, out=b)  # B(k) = A·B(k−1) / (k + A·B(k−1))
            for block in ready.get(k, ()):
                ck, xk = cf[block], p_wait[block]
                np.divide(a, ck, out=ws.utilization[block])  # ρ = A/c
                s = np.subtract(ck, a, out=wq_all[block])  # c − A (Wq's buffer until Wq)
                np.greater(s, 0.0, out=ws.stable[block])  # the sign of c − A is exact
                np.maximum(s, 0.0, out=s)
                q = np.add(s, xk, out=ws._scratch[: block.stop - block.start])
                pw = np.divide(xk, q, out=xk)  # C = x / (max(c − A, 0) + x)
                s *= mu  # c·μ − λ (0 when unstable, so Wq = +inf)
                wq = np.divide(pw, s, out=s)  # Wq = C/(c·μ − λ)
                np.add(wq, inv_mu, out=ws.response_mean_s[block])  # W = Wq + 1/μ
                # Little's law. Unstable elements have λ > 0, so λ·inf = inf (never NaN).
                lq = np.multiply(lam, wq, out=ws.queue_length_mean[block])
                np.add(lq, a, out=ws.in_system_mean[block])  # L = Lq + λ/μ


def _erlang_c_block(
    lam: FloatArray, mu: FloatArray, c: IntArray, out: dict[str, FloatArray], stable: BoolArray
) -> None:
    """Erlang C for one block of broadcast inputs, written into ``out`` and ``stable``."""
    a = lam / mu
    cf = c.astype(np.float64)
    p_wait = out["p_wait"]  # holds Erlang B on entry, Erlang C on return
    rho = np.divide(a, cf, out=out["utilization"])
    np.less(a, cf, out=stable)  # λ < c·μ, decided exactly as the sign of c − A below
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        denom = np.subtract(p_wait, 1.0)
        denom *= rho
        denom += 1.0  # 1 − ρ(1 − B)
        # Stable: 1 − ρ(1 − B) ≥ B exactly, so this only removes rounding (C ≤ 1).
        # Unstable (ρ ≥ 1): 1 − ρ(1 − B) ≤ B, so C becomes B/B ≈ 1 (B > 0 whenever A ≥ c).
        np.maximum(denom, p_wait, out=denom)
        p_wait /= denom  # C = B / (1 − ρ(1 − B))
        np.copyto(p_wait, 1.0, where=~stable)  # exactly 1, not 1 − 1e-16
        slack = np.subtract(cf, a, out=denom)  # reuse the buffer
        np.maximum(slack, 0.0, out=slack)  # unstable: 0, so Wq = C/0 = +inf
        slack *= mu  # c·μ − λ
        wq = np.divide(p_wait, slack, out=out["wait_mean_s"])
    np.add(wq, 1.0 / mu, out=out["response_mean_s"])
    # Little's law. Unstable elements have λ > 0, so λ·inf = inf (never NaN).
    lq = np.multiply(lam, wq, out=out["queue_length_mean"])
    np.add(lq, a, out=out["in_system_mean"])  # L = Lq + λ/μ


def erlang_c_wait_tail(result: MMcResult, t_s: npt.ArrayLike) -> FloatArray:
    """P(Wq > t) = C · exp(−(c·μ − λ)·t) for t ≥ 0 (exact for M/M/c under FIFO;
    Gross & Harris §2.3). Broadcasts ``t_s`` against the result; 1 where unstable."""
    t = _as_float_array("wait threshold", t_s, positive=False)
    slack = result.workers * result.service_rate_per_s - result.arrival_rate_per_s
    with np.errstate(over="ignore", invalid="ignore"):
        tail = result.p_wait * np.exp(-np.where(result.stable, slack, 0.0) * t)
    return np.asarray(np.where(result.stable, tail, 1.0), dtype=np.float64)


def erlang_c_wait_quantile(result: MMcResult, q: float) -> FloatArray:
    """The q-quantile of the M/M/c wait, inverted from the exact tail:
    t_q = ln(C / (1 − q)) / (c·μ − λ) when C > 1 − q, else 0 (an atom at zero); +inf where
    unstable. ``q`` in (0, 1), e.g. 0.95 for p95."""
    check_quantile(q)
    slack = result.workers * result.service_rate_per_s - result.arrival_rate_per_s
    return wait_quantile_from_atom(
        result.p_wait, np.where(result.stable, slack, 0.0), q, result.stable
    )


def erlang_c_wait_percentiles(result: MMcResult) -> dict[str, FloatArray]:
    """{'p50': …, 'p90': …, 'p95': …, 'p99': …} wait quantiles (seconds) from the exact tail."""
    return {f"p{round(q * 100)}": erlang_c_wait_quantile(result, q) for q in WAIT_PERCENTILES}


def wait_quantile_from_atom(
    p_wait: npt.ArrayLike, decay_per_s: npt.ArrayLike, q: float, stable: npt.ArrayLike
) -> FloatArray:
    """Quantile of a wait distributed as an atom at 0 of mass 1 − P plus P·Exp(decay):
    P(W > t) = P·exp(−decay·t), so t_q = ln(P/(1 − q))/decay if P > 1 − q, else 0."""
    check_quantile(q)
    p = np.asarray(p_wait, dtype=np.float64)
    d = np.asarray(decay_per_s, dtype=np.float64)
    ok = np.asarray(stable, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        tq = np.log(np.maximum(p, 1e-300) / (1.0 - q)) / np.where(d > 0, d, 1.0)
    tq = np.where(p > 1.0 - q, tq, 0.0)
    return np.asarray(np.where(ok, np.maximum(tq, 0.0), np.inf), dtype=np.float64)


def check_quantile(q: float) -> None:
    """Raise ModelInputError unless ``q`` is a number strictly between 0 and 1."""
    if not (isinstance(q, int | float) and math.isfinite(q) and 0.0 < q < 1.0):
        raise ModelInputError(f"quantile must be strictly between 0 and 1, got {q!r}.")


# --------------------------------------------------------------------------------------------
# G/G/c (Allen–Cunneen; Kingman for c = 1)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GGcResult:
    """G/G/c approximation, arrays like :class:`MMcResult` (+inf waits where unstable)."""

    workers: IntArray
    utilization: FloatArray
    stable: BoolArray
    p_wait: FloatArray
    """Erlang C probability of waiting, used by Allen–Cunneen as the M/M/c proxy."""
    wait_mean_s: FloatArray
    response_mean_s: FloatArray
    queue_length_mean: FloatArray
    in_system_mean: FloatArray
    arrival_cv2: FloatArray
    service_cv2: FloatArray


def ggc_wait(
    arrival_rate_per_s: npt.ArrayLike,
    service_mean_s: npt.ArrayLike,
    workers: npt.ArrayLike,
    arrival_cv2: npt.ArrayLike = 1.0,
    service_cv2: npt.ArrayLike = 1.0,
) -> GGcResult:
    """Allen–Cunneen approximation for the mean wait of a G/G/c queue:

        Wq ≈ Wq(M/M/c) · (ca² + cs²) / 2

    where ca², cs² are the squared coefficients of variation of inter-arrival and service
    times (Allen, *Probability, Statistics and Queueing Theory*, 2nd ed. 1990, §6;
    Hopp & Spearman, *Factory Physics*, eq. 8.10). For c = 1 it is Kingman's formula
    Wq ≈ (ρ/(1 − ρ))·((ca² + cs²)/2)·E[S]; with ca² = cs² = 1 it is exactly M/M/c.
    It is a heavy-traffic approximation: least accurate at low utilization and for very
    bursty arrivals. Vectorized and unstable-safe like :func:`erlang_c`.
    """
    s = _as_float_array("service time mean", service_mean_s, positive=True)
    ca2 = _as_float_array("arrival cv²", arrival_cv2, positive=False)
    cs2 = _as_float_array("service cv²", service_cv2, positive=False)
    base = erlang_c(arrival_rate_per_s, 1.0 / s, workers)
    factor = (ca2 + cs2) / 2.0
    with np.errstate(invalid="ignore"):
        wq = np.where(base.stable, base.wait_mean_s * factor, np.inf)
    lam = base.arrival_rate_per_s
    w = np.asarray(wq + s, dtype=np.float64)
    shape = wq.shape
    return GGcResult(
        workers=np.broadcast_to(base.workers, shape),
        utilization=np.broadcast_to(base.utilization, shape),
        stable=np.broadcast_to(base.stable, shape),
        p_wait=np.broadcast_to(base.p_wait, shape),
        wait_mean_s=wq,
        response_mean_s=w,
        queue_length_mean=np.where(base.stable, lam * wq, np.inf),
        in_system_mean=np.where(base.stable, lam * w, np.inf),
        arrival_cv2=np.broadcast_to(ca2, shape),
        service_cv2=np.broadcast_to(cs2, shape),
    )
