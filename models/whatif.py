"""What-if sweep: how a work queue behaves for each worker count in a range.

Given the arrival rate λ, the mean service time E[S] (μ = 1/E[S]) and optionally variability,
a key count and contention parameters, every worker count c in [workers_min, workers_max] is
evaluated in one vectorized pass with the model that fits the inputs:

* **M/M/c (Erlang C)** when ca² = cs² = 1 and no key count: exact means, P(wait) and wait
  quantiles from the exact tail P(Wq > t) = C·exp(−(cμ − λ)t) (:mod:`models.queueing`).
* **G/G/c (Allen–Cunneen)** when ca² or cs² ≠ 1: mean wait Wq(M/M/c)·(ca² + cs²)/2. Its wait
  *distribution* is not known in closed form; p95 and P(wait > SLO) are approximated by keeping
  the Erlang C probability of waiting C and making the conditional wait exponential with the
  Allen–Cunneen conditional mean Wq/C, i.e. P(Wq > t) ≈ C·exp(−t·C/Wq). This is exact at
  ca² = cs² = 1 and a heavy-traffic approximation otherwise (Whitt, "Approximations for the
  GI/G/m queue", Prod. Oper. Manag. 2, 1993, uses the same shape).
* **M/M/c//K (finite keys)** when ``keys`` is given: a coalescing workqueue holds at most one
  entry per key (:mod:`models.finite_keys`); λ is then the total rate if every key were idle.
  Wait quantiles come from that model's exact tail. It needs ca² = cs² = 1.

**Contention (USL).** With σ, κ the per-worker service rate at c workers is
μ_c = μ / (1 + σ(c − 1) + κc(c − 1)), so total capacity c·μ_c follows the Universal
Scalability Law (:mod:`models.contention`) and can *fall* beyond N* = sqrt((1 − σ)/κ): more
workers can then make waits worse, and the sweep shows it.

**Recommendation.** With an SLO on wait and a quantile q (default 0.95): the smallest stable c
with P(wait > SLO) ≤ 1 − q (its q-quantile of wait is within the SLO). With an SLO and no
quantile: the smallest stable c whose mean wait ≤ SLO. Without an SLO: the smallest stable c.
If nothing meets the SLO: the stable c with the lowest wait by the same criterion, with a reason;
if nothing is stable: None, with a reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models.bindings.ceiling import CeilingModel
from models.contention import usl_slowdown
from models.errors import ModelInputError
from models.finite_keys import finite_keys_sweep, finite_keys_wait_quantile
from models.formatting import number_text, sig
from models.limits import FINITE_KEYS_MAX
from models.limits import MAX_WORKERS as MAX_WORKERS  # the one limit, re-exported
from models.queueing import ggc_wait, wait_quantile_from_atom

CEILING_MIN_PER_S = 1e-6
"""The smallest shared ceiling a sweep takes: below it the pass times overflow to infinity
or lose every digit (a ceiling of 1e-320 printed empty columns)."""


@dataclass(frozen=True)
class WhatIfInputs:
    """Inputs of a what-if sweep (SI units)."""

    arrival_rate_per_s: float
    service_mean_s: float
    service_cv2: float = 1.0
    arrival_cv2: float = 1.0
    keys: int | None = None
    sigma: float | None = None
    kappa: float | None = None
    workers_min: int = 1
    workers_max: int = 16
    slo_wait_s: float | None = None
    slo_quantile: float | None = 0.95
    """Quantile the SLO applies to; None means the SLO applies to the mean wait."""
    utilization_target: float | None = None
    """The recommendation also keeps utilization at most this (the advisor's design cap,
    ``AdvisorThresholds.util_target``); None: the SLO alone decides."""
    ceiling_per_s: float | None = None
    """A shared resource's ceiling X* in items/s (:mod:`models.bindings.ceiling`): the pass
    time then grows with the demand and the worker count as the passes queue on it, and
    ``service_mean_s`` is the pass time *without* that wait (S₀). None: no shared limit."""
    ceiling_cv2: float = 1.0
    """cv² of the shared resource's service (1: held for an exponential time; 0: a rate
    limiter that spaces its grants evenly)."""


@dataclass(frozen=True)
class WhatIfRow:
    """One worker count. None where a value does not exist (e.g. waits of an unstable row)."""

    workers: int
    utilization: float
    """Offered load per worker λ/(c·μ_c) (above 1: unstable); for finite keys the busy fraction."""
    stable: bool
    p_wait: float | None
    wait_mean_s: float | None
    response_mean_s: float | None
    wait_p95_s: float | None
    p_wait_over_slo: float | None
    """P(wait > SLO); None without an SLO or when unstable."""
    throughput_per_s: float
    """Completions per second: λ when stable, the capacity c·μ_c when saturated."""
    service_rate_per_worker_per_s: float
    """μ_c: per-worker service rate after USL contention (μ without σ, κ)."""


@dataclass(frozen=True)
class Recommendation:
    workers: int | None
    reason: str


@dataclass(frozen=True)
class WhatIfResult:
    inputs: WhatIfInputs
    model: str
    rows: tuple[WhatIfRow, ...]
    recommendation: Recommendation


def _finite(name: str, value: float, *, positive: bool = False, upper: float | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ModelInputError(f"{name} must be a finite number, got {value!r}.")
    if positive and value <= 0:
        raise ModelInputError(f"{name} must be greater than 0, got {value!r}.")
    if value < 0:
        raise ModelInputError(f"{name} must not be negative, got {value!r}.")
    if upper is not None and value > upper:
        raise ModelInputError(f"{name} must be at most {upper:g}, got {value!r}.")


def validate_inputs(inp: WhatIfInputs) -> None:
    """Raise ModelInputError (one sentence) for inputs the sweep cannot use."""
    _finite("arrival rate", inp.arrival_rate_per_s)
    _finite("service time mean", inp.service_mean_s, positive=True)
    _finite("service cv²", inp.service_cv2)
    _finite("arrival cv²", inp.arrival_cv2)
    if (inp.sigma is None) != (inp.kappa is None):
        raise ModelInputError(
            "give both sigma and kappa (the USL contention parameters) or neither."
        )
    if inp.sigma is not None and inp.kappa is not None:
        _finite("sigma", inp.sigma, upper=1.0)
        _finite("kappa", inp.kappa, upper=1.0)
    if inp.ceiling_per_s is not None:
        _finite("shared ceiling", inp.ceiling_per_s, positive=True)
        if inp.ceiling_per_s < CEILING_MIN_PER_S:
            raise ModelInputError(f"the shared ceiling must be at least {CEILING_MIN_PER_S:g} "
                                  f"items/s (one a week and a half), got "
                                  f"{inp.ceiling_per_s:g}.")
        _finite("shared resource cv²", inp.ceiling_cv2, upper=1.0)
        if inp.sigma is not None:
            raise ModelInputError(
                "give either a shared ceiling or the USL contention parameters, not both.")
        if inp.keys is not None:
            raise ModelInputError(
                "a shared ceiling and a key count are not modelled together: give one.")
        if inp.service_cv2 != 1.0 or inp.arrival_cv2 != 1.0:
            raise ModelInputError(
                "the shared-ceiling model assumes Poisson arrivals and exponential work "
                "times: leave the cv² values at 1 when giving a ceiling.")
    for name, value in (("workers_min", inp.workers_min), ("workers_max", inp.workers_max)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ModelInputError(f"{name} must be a whole number of at least 1, got {value!r}.")
    if inp.workers_max < inp.workers_min:
        raise ModelInputError(f"the worker range is reversed: {inp.workers_min}-{inp.workers_max}.")
    if inp.workers_max > MAX_WORKERS:
        raise ModelInputError(f"at most {MAX_WORKERS} workers can be swept, got {inp.workers_max}.")
    if inp.keys is not None:
        if isinstance(inp.keys, bool) or not isinstance(inp.keys, int) or inp.keys < 1:
            raise ModelInputError(
                f"the key count must be a whole number of at least 1, got {inp.keys!r}."
            )
        if inp.keys > FINITE_KEYS_MAX:
            raise ModelInputError(
                f"at most {FINITE_KEYS_MAX:,} keys are supported by the finite-key model (its "
                "time grows as the square root of the key count)."
            )
        if inp.service_cv2 != 1.0 or inp.arrival_cv2 != 1.0:
            raise ModelInputError(
                "the finite-key model assumes exponential times: leave the cv² values at 1 "
                "when giving a key count."
            )
    if inp.slo_wait_s is not None:
        _finite("wait SLO", inp.slo_wait_s, positive=True)
    if inp.utilization_target is not None and not (
        isinstance(inp.utilization_target, int | float) and 0.0 < inp.utilization_target < 1.0
    ):
        raise ModelInputError(
            f"the utilization target must be between 0 and 1, got {inp.utilization_target!r}.")
    if inp.slo_quantile is not None and not (
        isinstance(inp.slo_quantile, int | float) and 0.0 < inp.slo_quantile < 1.0
    ):
        raise ModelInputError(
            f"the SLO quantile must be between 0 and 1, got {inp.slo_quantile!r}."
        )


def whatif_sweep(inputs: WhatIfInputs) -> WhatIfResult:
    """Evaluate every worker count in [workers_min, workers_max] (see the module docstring).

    The rows and recommendation of the single-input :func:`whatif_tables` table."""
    return whatif_tables([inputs])[0].result()


def _opt(value: float | np.floating, stable: bool | np.bool_) -> float | None:
    v = float(value)
    return v if bool(stable) and math.isfinite(v) else None


def _infinite_columns(
    lam: npt.NDArray[np.float64],
    mu_c: npt.NDArray[np.float64],
    c: npt.NDArray[np.int64],
    ca2: npt.NDArray[np.float64],
    cs2: npt.NDArray[np.float64],
    slo: npt.NDArray[np.float64],
) -> dict[str, npt.NDArray[np.float64]]:
    """M/M/c or G/G/c columns for same-shape element arrays (one element per worker count)."""
    res = ggc_wait(lam, 1.0 / mu_c, c, ca2, cs2)
    stable = np.asarray(res.stable)
    wq = np.asarray(res.wait_mean_s)
    pw = np.asarray(res.p_wait)
    # Tail P(Wq > t) = C·exp(−decay·t) with decay = C/Wq (= c·μ − λ exactly for M/M/c).
    with np.errstate(divide="ignore", invalid="ignore"):
        decay = np.where(stable & (wq > 0), pw / np.where(wq > 0, wq, 1.0), np.inf)
    with np.errstate(over="ignore", invalid="ignore"):
        over_slo = np.where(stable, pw * np.exp(-np.minimum(decay, 1e300) * slo), 1.0)
    return {
        "utilization": np.asarray(res.utilization),
        "stable": stable.astype(np.float64),
        "p_wait": pw,
        "wait_mean_s": wq,
        "response_mean_s": np.asarray(res.response_mean_s),
        "wait_p95_s": wait_quantile_from_atom(pw, decay, 0.95, stable),
        "throughput_per_s": np.where(stable, lam, c * mu_c),
        "over_slo": over_slo,
        "_decay": decay,
    }


def _finite_keys_columns(
    keys: int,
    lam: float,
    mu_c: npt.NDArray[np.float64],
    c: npt.NDArray[np.int64],
    slo: float | None,
) -> dict[str, npt.NDArray[np.float64]]:
    # one pass over each worker count's states (memory O(√K), models.finite_keys)
    sweep = finite_keys_sweep(keys, lam, mu_c, c, quantile=0.95, slo_s=slo)
    res = sweep.result
    cols: dict[str, npt.NDArray[np.float64]] = {
        "utilization": res.utilization,
        "p_wait": res.p_wait,
        "wait_mean_s": res.wait_mean_s,
        "response_mean_s": res.response_mean_s,
        "wait_p95_s": sweep.wait_quantile_s,
        "throughput_per_s": res.throughput_per_s,
    }
    if sweep.wait_tail is not None:
        cols["over_slo"] = sweep.wait_tail
    return cols


def _recommend(table: WhatIfTable, rows: tuple[WhatIfRow, ...]) -> Recommendation:
    inputs = table.inputs
    stable_rows = [r for r in rows if r.stable]
    span = f"c={inputs.workers_min}..{inputs.workers_max}"
    if not stable_rows and inputs.ceiling_per_s is not None \
            and inputs.arrival_rate_per_s >= inputs.ceiling_per_s:
        return Recommendation(
            None,
            f"the demand λ = {number_text(inputs.arrival_rate_per_s, '/s')} is at or over the "
            f"shared ceiling of {number_text(inputs.ceiling_per_s, '/s')}: no worker count serves "
            "it and the "
            "backlog grows at every one; raise the ceiling or lower the demand.",
        )
    if not stable_rows:
        return Recommendation(
            None,
            f"unstable at every worker count: λ ≥ c·μ up to c={inputs.workers_max}; "
            "add capacity per worker or reduce the arrival rate.",
        )
    chosen = _recommend_for_slo(table, stable_rows, span)
    design = table.design_workers()
    if chosen.workers is None or design is None or design <= chosen.workers:
        return chosen
    target = inputs.utilization_target
    basis = (f"with no SLO given, the smallest stable worker count in {span} is "
             f"c={chosen.workers}" if inputs.slo_wait_s is None
             else f"the {chosen.reason.rstrip('.')}: c={chosen.workers}")
    return Recommendation(
        design,
        f"utilization design: ρ ≤ {target:g} at c={design} leaves headroom for bursts and a "
        f"lost pod ({basis}).")


def _recommend_for_slo(table: WhatIfTable, stable_rows: list[WhatIfRow], span: str
                       ) -> Recommendation:
    inputs = table.inputs
    slo = inputs.slo_wait_s
    if slo is None:
        first = stable_rows[0]
        return Recommendation(
            first.workers, f"no SLO given: smallest stable worker count in {span}."
        )
    q = inputs.slo_quantile
    if q is None:
        metric = {r.workers: r.wait_mean_s for r in stable_rows}
        label = "mean wait"
        meets = {w: m is not None and m <= slo for w, m in metric.items()}
    else:
        ok = table.meets_slo(q)
        meets = {r.workers: bool(ok[r.workers - inputs.workers_min]) for r in stable_rows}
        metric = {r.workers: table.wait_quantile_s(r.workers, q) for r in stable_rows}
        label = f"p{_pct(q)} wait"
    for r in stable_rows:
        if meets[r.workers]:
            crit = (
                f"mean wait ≤ {slo:g} s"
                if q is None
                else f"P(wait > {slo:g} s) ≤ {sig(1.0 - q)} (p{_pct(q)} wait ≤ {slo:g} s)"
            )
            return Recommendation(r.workers, f"smallest stable worker count with {crit}.")
    best = min(stable_rows, key=lambda r: _key(metric[r.workers]))
    value = metric[best.workers]
    shown = "n/a" if value is None else f"{number_text(value, 's')}"
    return Recommendation(
        best.workers,
        f"the SLO ({label} ≤ {slo:g} s) cannot be met in {span}; "
        f"c={best.workers} has the lowest {label} ({shown}).",
    )


def _key(value: float | None) -> float:
    return math.inf if value is None else value


def _pct(q: float) -> str:
    return f"{q * 100:g}"


# --------------------------------------------------------------------------------------------
# Column form and batches (many sweeps in one vectorized pass)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class WhatIfTable:
    """A what-if sweep as columns (one array element per worker count), without the
    recommendation: what :func:`whatif_sweep` computes, before it builds one
    :class:`WhatIfRow` per worker count. :func:`whatif_tables` builds many of them at once.

    ``stable`` is boolean; every other column is float64 and holds the raw model value
    (±inf or NaN where :class:`WhatIfRow` has None). ``p_wait_over_slo`` is all-NaN without an
    SLO. :meth:`row` and :meth:`result` give exactly the rows and result of
    :func:`whatif_sweep` for the same inputs.
    """

    inputs: WhatIfInputs
    model: str
    workers: npt.NDArray[np.int64]
    utilization: npt.NDArray[np.float64]
    stable: npt.NDArray[np.bool_]
    p_wait: npt.NDArray[np.float64]
    wait_mean_s: npt.NDArray[np.float64]
    response_mean_s: npt.NDArray[np.float64]
    wait_p95_s: npt.NDArray[np.float64]
    p_wait_over_slo: npt.NDArray[np.float64]
    throughput_per_s: npt.NDArray[np.float64]
    service_rate_per_worker_per_s: npt.NDArray[np.float64]
    decay_per_s: npt.NDArray[np.float64]
    """Tail decay of the infinite-population models (NaN for finite keys): used only for
    wait quantiles other than p95."""

    def row(self, workers: int) -> WhatIfRow | None:
        """The row of one worker count, or None outside the swept range."""
        i = workers - int(self.workers[0]) if self.workers.size else -1
        return self._row_at(i) if 0 <= i < self.workers.size else None

    def _row_at(self, i: int) -> WhatIfRow:
        stable = bool(self.stable[i])
        return WhatIfRow(
            workers=int(self.workers[i]),
            utilization=float(self.utilization[i]),
            stable=stable,
            p_wait=_opt(self.p_wait[i], stable),
            wait_mean_s=_opt(self.wait_mean_s[i], stable),
            response_mean_s=_opt(self.response_mean_s[i], stable),
            wait_p95_s=_opt(self.wait_p95_s[i], stable),
            p_wait_over_slo=None if self.inputs.slo_wait_s is None
            else _opt(self.p_wait_over_slo[i], stable),
            throughput_per_s=float(self.throughput_per_s[i]),
            service_rate_per_worker_per_s=float(self.service_rate_per_worker_per_s[i]),
        )

    def design_workers(self) -> int | None:
        """The smallest stable worker count with utilization ≤ the inputs'
        ``utilization_target`` (the top of the range when none reaches it); None without a
        target or with no stable count."""
        target = self.inputs.utilization_target
        if target is None or not self.stable.any():
            return None
        ok = np.flatnonzero(self.stable & (self.utilization <= target))
        return int(self.workers[ok[0]]) if ok.size else int(self.workers[-1])

    def meets_slo(self, quantile: float) -> npt.NDArray[np.bool_]:
        """Per worker count: stable and P(wait > SLO) ≤ 1 − quantile (all False without an
        SLO) — the test :func:`whatif_sweep`'s recommendation applies to each row."""
        if self.inputs.slo_wait_s is None:
            return np.zeros(self.workers.shape, dtype=np.bool_)
        p = self.p_wait_over_slo
        with np.errstate(invalid="ignore"):
            ok = self.stable & np.isfinite(p) & (p <= 1.0 - quantile + 1e-12)
        return np.asarray(ok, dtype=np.bool_)

    def wait_quantile_s(self, workers: int, q: float) -> float | None:
        """The q-quantile of wait (seconds) at one swept worker count; None where it does not
        exist (unstable) or the worker count is outside the range."""
        i = workers - int(self.workers[0]) if self.workers.size else -1
        if not 0 <= i < self.workers.size:
            return None
        if q == 0.95:
            v = float(self.wait_p95_s[i])
        elif self.inputs.keys is not None:
            v = float(finite_keys_wait_quantile(
                self.inputs.keys, self.inputs.arrival_rate_per_s,
                self.service_rate_per_worker_per_s[i : i + 1], self.workers[i : i + 1], q,
            )[0])
        else:
            v = float(wait_quantile_from_atom(
                self.p_wait[i], self.decay_per_s[i], q, bool(self.stable[i])
            ))
        return v if bool(self.stable[i]) and math.isfinite(v) else None

    def rows(self) -> tuple[WhatIfRow, ...]:
        return tuple(self._row_at(i) for i in range(self.workers.size))

    def result(self) -> WhatIfResult:
        """The full :class:`WhatIfResult` (rows and recommendation), as :func:`whatif_sweep`."""
        rows = self.rows()
        return WhatIfResult(self.inputs, self.model, rows, _recommend(self, rows))


_BATCH_FIELDS = ("utilization", "p_wait", "wait_mean_s", "response_mean_s", "wait_p95_s",
                 "throughput_per_s")


def whatif_tables(inputs: Sequence[WhatIfInputs]) -> list[WhatIfTable]:
    """:func:`whatif_sweep` for many inputs, as :class:`WhatIfTable` columns, in a few
    vectorized passes instead of one per input.

    Every input is validated first (the first invalid one raises ModelInputError, as
    :func:`whatif_sweep` would). The M/M/c and G/G/c inputs are evaluated together: their
    worker ranges are concatenated into one array per size class (largest worker count within
    a power of two, so the Erlang B recursion for one large sweep does not run over every other
    input's elements) and :func:`models.queueing.ggc_wait` is called once per class. Each element
    goes through the same arithmetic as in the single sweep, so the numbers are identical.
    Finite-key inputs are solved one by one (their state space depends on the key count).
    """
    for inp in inputs:
        validate_inputs(inp)
    out: list[WhatIfTable | None] = [None] * len(inputs)
    infinite: dict[int, list[int]] = {}
    for i, inp in enumerate(inputs):
        if inp.ceiling_per_s is not None:
            out[i] = _ceiling_table(inp)
        elif inp.keys is not None:
            out[i] = _finite_keys_table(inp)
        else:
            infinite.setdefault(int(inp.workers_max).bit_length(), []).append(i)
    for group in infinite.values():
        for i, table in zip(group, _infinite_tables([inputs[i] for i in group]), strict=True):
            out[i] = table
    return [t for t in out if t is not None]


def _mu_c(inp: WhatIfInputs, c: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    mu = 1.0 / inp.service_mean_s
    if inp.sigma is not None and inp.kappa is not None:
        return np.asarray(mu / usl_slowdown(c, inp.sigma, inp.kappa), dtype=np.float64)
    return np.full(c.shape, mu)


def _model_name(inp: WhatIfInputs) -> str:
    if inp.ceiling_per_s is not None:
        return "workers behind a shared ceiling (MVA + flow-equivalent server)"
    if inp.keys is not None:
        return "M/M/c//K finite keys (machine-repairman)"
    if inp.arrival_cv2 == 1.0 and inp.service_cv2 == 1.0:
        return "M/M/c (Erlang C)"
    return "G/G/c (Allen–Cunneen approximation)"


def _ceiling_table(inp: WhatIfInputs) -> WhatIfTable:
    """The sweep behind a shared ceiling (:mod:`models.bindings.ceiling`)."""
    assert inp.ceiling_per_s is not None
    c = np.arange(inp.workers_min, inp.workers_max + 1, dtype=np.int64)
    model = CeilingModel(inp.ceiling_per_s, inp.service_mean_s, inp.ceiling_cv2)
    cols = model.columns(inp.arrival_rate_per_s, c)
    stable = cols["stable"] != 0.0
    decay = cols["decay_per_s"]
    p_wait = cols["p_wait"]
    slo = inp.slo_wait_s
    with np.errstate(over="ignore", invalid="ignore"):
        over_slo = (np.where(stable, p_wait * np.exp(-np.minimum(decay, 1e300) * slo), 1.0)
                    if slo is not None else np.full(c.shape, np.nan))
    return WhatIfTable(
        inp, _model_name(inp), c, utilization=cols["utilization"], stable=stable,
        p_wait=p_wait, wait_mean_s=cols["wait_mean_s"],
        response_mean_s=cols["response_mean_s"],
        wait_p95_s=wait_quantile_from_atom(p_wait, decay, 0.95, stable),
        p_wait_over_slo=over_slo, throughput_per_s=cols["throughput_per_s"],
        service_rate_per_worker_per_s=1.0 / cols["pass_mean_s"], decay_per_s=decay)


def _finite_keys_table(inp: WhatIfInputs) -> WhatIfTable:
    assert inp.keys is not None
    c = np.arange(inp.workers_min, inp.workers_max + 1, dtype=np.int64)
    mu_c = _mu_c(inp, c)
    cols = _finite_keys_columns(inp.keys, float(inp.arrival_rate_per_s), mu_c, c,
                                inp.slo_wait_s)
    nan = np.full(c.shape, np.nan)
    return WhatIfTable(
        inp, _model_name(inp), c,
        stable=np.ones(c.shape, dtype=np.bool_),
        p_wait_over_slo=np.asarray(cols.get("over_slo", nan), dtype=np.float64),
        service_rate_per_worker_per_s=mu_c, decay_per_s=nan,
        **{k: np.asarray(cols[k], dtype=np.float64) for k in _BATCH_FIELDS},
    )


def _infinite_tables(inputs: Sequence[WhatIfInputs]) -> list[WhatIfTable]:
    lo = np.array([inp.workers_min for inp in inputs], dtype=np.int64)
    hi = np.array([inp.workers_max for inp in inputs], dtype=np.int64)
    sizes = hi - lo + 1
    ends = np.cumsum(sizes)
    starts = ends - sizes
    total = int(ends[-1]) if len(inputs) else 0
    # c runs lo..hi within each input's slice of the concatenation.
    c = np.arange(total, dtype=np.int64) + np.repeat(lo - starts, sizes)
    lam = np.repeat(np.array([float(inp.arrival_rate_per_s) for inp in inputs]), sizes)
    ca2 = np.repeat(np.array([float(inp.arrival_cv2) for inp in inputs]), sizes)
    cs2 = np.repeat(np.array([float(inp.service_cv2) for inp in inputs]), sizes)
    # A missing SLO is evaluated at 1 s and its column discarded (per input, below).
    slo = np.repeat(np.array([1.0 if inp.slo_wait_s is None else float(inp.slo_wait_s)
                              for inp in inputs]), sizes)
    mu_c = np.repeat(np.array([1.0 / inp.service_mean_s for inp in inputs]), sizes)
    for i, inp in enumerate(inputs):
        if inp.sigma is not None:
            part = slice(int(starts[i]), int(ends[i]))
            mu_c[part] = _mu_c(inp, c[part])
    cols = _infinite_columns(lam, mu_c, c, ca2, cs2, slo)
    stable = cols["stable"] != 0.0
    tables = []
    for i, inp in enumerate(inputs):
        part = slice(int(starts[i]), int(ends[i]))
        tables.append(WhatIfTable(
            inp, _model_name(inp), c[part],
            stable=stable[part],
            p_wait_over_slo=cols["over_slo"][part] if inp.slo_wait_s is not None
            else np.full(int(sizes[i]), np.nan),
            service_rate_per_worker_per_s=mu_c[part], decay_per_s=cols["_decay"][part],
            **{k: cols[k][part] for k in _BATCH_FIELDS},
        ))
    return tables
