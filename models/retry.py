"""Retry-policy what-if: N keys failing together against one dependency.

Scenario (the spec's "thousands of keys fail together"): at t = 0 a dependency goes down for
``outage_s`` seconds and N keys that need it are attempted at once. Every attempt takes
``attempt_s`` and fails while the dependency is down; a failure calls ``AddRateLimited``, so the
next attempt comes ``limiter.when(key, t)`` later (client-go ``rate_limiting_queue.go``). The
first attempt started after the outage succeeds. Workers are not the bottleneck here (one worker
per key) so the numbers isolate the policy; :func:`healthy_impact` puts the same storm on a
shared queue with c workers using :func:`models.simulate.simulate`.

Outputs per policy: the request rate the dependency sees over time (retry synchronisation shows
as spikes: without jitter every key that failed at the same instant retries at the same
instant), the time from recovery until each key's next attempt (the recovery lag: the backoff
delay in force when the dependency came back, or the global bucket's debt), and the penalty a
key keeps without ``Forget``: its failure count stays at n, so its next unrelated failure waits
``min(cap, base · 2^n)`` instead of ``base`` — for as long as the process runs (client-go's
limiter never expires counts; ``default_rate_limiters.go``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from models.errors import ModelInputError
from models.limits import STORM_MAX_STEPS
from models.ratelimit import CLIENT_GO_BURST, CLIENT_GO_QPS, ItemExponential, RetryPolicy
from models.simulate import simulate


class StormBudgetExceeded(ModelInputError):
    """A storm needed more steps than its ``max_steps`` (the sentence says how many)."""


@dataclass(frozen=True)
class StormResult:
    """Retry storm of N keys against one dependency under one policy."""

    policy: str
    keys: int
    outage_s: float
    horizon_s: float
    attempts: int
    """Requests sent to the dependency (first attempts + retries) within the horizon."""
    failed_attempts: int
    bin_s: float
    request_rate_per_s: tuple[float, ...]
    """Retry requests per second in each bin from t = 0 (the N first attempts at t = 0 are
    left out: they are the same under every policy)."""
    peak_rate_per_s: float
    """Highest bin of ``request_rate_per_s`` (depends on ``bin_s``)."""
    outage_mean_rate_per_s: float
    """Mean retry rate while the dependency was down."""
    recovered: int
    """Keys whose successful attempt started within the horizon."""
    recovery_lag_p50_s: float | None
    recovery_lag_p99_s: float | None
    recovery_lag_max_s: float | None
    """Time from the end of the outage until the key's next (successful) attempt."""
    failures_per_key_median: float
    penalty_without_forget_s: float | None
    """Delay of a later, unrelated failure for a key that kept the median failure count
    (no Forget); None for policies without per-key memory."""
    penalty_with_forget_s: float | None
    """The same delay after Forget: the base delay."""


def _check(name: str, value: float, *, positive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ModelInputError(f"{name} must be a finite number, got {value!r}.")
    if value < 0 or (positive and value == 0):
        raise ModelInputError(f"{name} must be {'positive' if positive else 'non-negative'}, "
                              f"got {value!r}.")
    return float(value)


def default_horizon_s(outage_s: float) -> float:
    """The horizon a storm is followed over when none is given: max(10 × the outage, the
    outage + 1 h) — long enough for client-go's 1000 s cap to let every key back. The one
    default of ``queuelens retries`` and the Retry storm page: the rate bins are horizon /
    1000, so two horizons would give two peaks for the same storm."""
    return max(10.0 * outage_s, outage_s + 3600.0)


_GROWTH_STEPS_MAX = 5_000
"""Failures of one key walked one by one in :func:`storm_steps_estimate` while its delay still
grows (doubling from the base, a doubling takes at most 1,024 steps to any float cap; the
decorrelated jitter's ×1.5 at most 1,750); past them, or once the delay stops changing, the
rest of the outage is counted in one division."""


def _mean_delay(policy: RetryPolicy, n: int, previous: float) -> float:
    """The expected delay after a key's failure number n (0-based) under ``policy``'s
    per-key limiter: min(cap, base·2^n) scaled by its jitter's mean — none 1, full ½
    (uniform on [0, d]), equal ¾ (d/2 + uniform on [0, d/2]); decorrelated (uniform on
    [base, max(base, 3·previous)], capped: ``models.ratelimit.ItemExponential``): the mean
    of that uniform, which grows faster than most keys' delays do, so the count is low —
    51, 67 and 125 steps a key estimated where 113, 167 and 340 were measured (10 min, 2 h,
    10 h outages): an over-limit run it misses is stopped by the loop itself."""
    if policy.kind == "const":
        return policy.base_s
    if policy.jitter == "decorrelated":
        hi = max(policy.base_s, 3.0 * previous)
        return min(policy.cap_s, (policy.base_s + hi) / 2.0)
    d = policy.cap_s if n >= 1100 else min(policy.cap_s, policy.base_s * 2.0 ** n)
    return d * {"none": 1.0, "full": 0.5, "equal": 0.75}[policy.jitter]


def storm_steps_estimate(keys: int, policy: RetryPolicy, outage_s: float,
                         attempt_s: float) -> float:
    """The steps (failures and retries sent: attempts + failed attempts) one
    :func:`retry_storm` run is expected to take, computed before it runs (issue 23: an
    over-limit run computed for 57 s before it was refused).

    One key alone: it fails at t = 0 and at every next attempt t + ``attempt_s`` + delay while
    t < ``outage_s``, with the delay at its jitter's mean (:func:`_mean_delay`); each of the N
    keys then takes 2·f + 1 steps (f failures and f retries, and the successful attempt).
    Exact for a policy without jitter or bucket; with jitter the mean of the count, which for
    thousands of keys is the count within a few per cent (1,000 keys, full jitter, a 2 h
    outage: 64.5 estimated, 64.5 measured per key). A global token bucket only delays retries:
    it grants at most burst + qps·outage of them during the outage, so the steps are at most
    2·(N + burst + qps·outage) + N, and the estimate is the smaller of the two."""
    t, failures, previous, last = 0.0, 0, policy.base_s, -1.0
    for n in range(_GROWTH_STEPS_MAX):
        if t >= outage_s:
            break
        failures += 1
        d = _mean_delay(policy, n, previous)
        step = attempt_s + d
        if step <= 0:
            return math.inf
        if d == last or n == _GROWTH_STEPS_MAX - 1:  # steady: the rest in one division
            failures += max(0, math.ceil((outage_s - t) / step) - 1)
            break
        previous, last = d, d
        t += step
    steps = float(keys) * (2.0 * failures + 1.0)
    if policy.global_qps is not None:
        steps = min(steps, 2.0 * (keys + policy.burst + policy.global_qps * outage_s) + keys)
    return steps


def _storm_times(keys: int, outage_s: float, attempt_s: float, horizon_s: float | None,
                 bin_s: float | None) -> tuple[float, float, float, float]:
    """The checked key count, outage, attempt time, horizon and bin width of a storm."""
    if isinstance(keys, bool) or not isinstance(keys, int) or not 1 <= keys <= 1_000_000:
        raise ModelInputError(f"keys must be a whole number from 1 to 1,000,000, got {keys!r}.")
    out = _check("outage", outage_s)
    att = _check("attempt time", attempt_s, positive=False)
    if horizon_s is None and not math.isfinite(10 * out):
        raise ModelInputError(f"the outage ({out:.6g} s) is too long for the default horizon "
                              "(10 × the outage); give a horizon.")
    hz = _check("horizon", horizon_s) if horizon_s is not None else default_horizon_s(out)
    if hz <= out:
        raise ModelInputError(f"horizon ({hz} s) must be longer than the outage ({out} s).")
    bw = _check("bin width", bin_s) if bin_s is not None else hz / 1000.0
    if not hz / bw <= 1_000_000:  # also when hz / bw overflows to inf
        raise ModelInputError("too many rate bins (over 1,000,000); use a larger bin width.")
    return out, att, hz, bw


STORM_ESTIMATE_MARGIN = 1.05
"""How far over the step limit a storm's estimate must be to be refused before it runs: the
estimate with full or equal jitter is the mean count, within 1 % of the measured one for
1,000 keys (65 against 64.5 steps a key); a run estimated between the limit and 5 % over it
runs, and the loop stops it if it needs more."""


def check_storm_budget(keys: int, policies: Sequence[RetryPolicy], outage_s: float,
                       attempt_s: float, *, horizon_s: float | None = None,
                       bin_s: float | None = None, max_steps: int = STORM_MAX_STEPS) -> None:
    """Refuse, before any of them runs, storms whose expected steps
    (:func:`storm_steps_estimate`) exceed ``max_steps`` each (by more than
    :data:`STORM_ESTIMATE_MARGIN`): one sentence with the estimate and the limit."""
    out, att, _, _ = _storm_times(keys, outage_s, attempt_s, horizon_s, bin_s)
    for policy in policies:
        expected = storm_steps_estimate(keys, policy, out, att)
        if expected > STORM_ESTIMATE_MARGIN * max_steps:
            shown = f"{expected:,.0f}" if math.isfinite(expected) else "unboundedly many"
            raise StormBudgetExceeded(
                f"the storm ({policy.describe()}) needs about {shown} steps, more than "
                f"{max_steps:,} steps (failures and retries; the limit); use fewer keys, a "
                "shorter outage or a longer minimum delay.")


def retry_storm(
    keys: int,
    policy: RetryPolicy,
    outage_s: float,
    *,
    attempt_s: float = 0.05,
    horizon_s: float | None = None,
    bin_s: float | None = None,
    seed: int = 0,
    max_steps: int = STORM_MAX_STEPS,
) -> StormResult:
    """Event-driven replay of the storm (a heap of (time, kind, key); ``when`` is called in
    time order, so a shared token bucket sees failures in the order they happen). The loop is
    compiled: ``models._simcore.run_storm``, same results as the interpreted loop.

    ``max_steps`` bounds the work: a step is one failure or one retry sent; a storm that needs
    more raises :class:`StormBudgetExceeded` (a ModelInputError) saying so. The default is
    :data:`models.limits.STORM_MAX_STEPS`; the Retry storm page passes what is left of its
    storm step budget. ``attempts + failed_attempts`` of the result is the steps it took."""
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ModelInputError(f"the step budget must be a whole number of at least 1, "
                              f"got {max_steps!r}.")
    out, att, hz, bw = _storm_times(keys, outage_s, attempt_s, horizon_s, bin_s)
    nbins = math.ceil(hz / bw)
    check_storm_budget(keys, (policy,), out, att, max_steps=max_steps)  # before any work
    # The event loop is compiled (models/_simcore.py, numba), imported here so that importing
    # this module stays cheap.
    from models import _simcore as core

    run = core.run_storm(
        keys=keys,
        lim=core.limiter_record(policy.kind, policy.base_s, policy.cap_s, policy.jitter,
                                policy.global_qps, policy.burst),
        bucket=core.new_bucket(policy.burst), outage_s=out, attempt_s=att, horizon_s=hz,
        bin_s=bw, nbins=nbins, budget=max_steps, seed=seed,
    )
    if run.over_budget:
        raise StormBudgetExceeded(
            f"the storm needs more than {max_steps:,} steps (failures and retries; the limit); "
            "use fewer keys, a shorter outage or a longer minimum delay."
        )
    attempts, failed, bins, lags, counts = run.attempts, run.failed, run.bins, run.lags, run.counts
    rates = bins[:nbins] / bw
    rates[-1] = bins[nbins - 1] / (hz - (nbins - 1) * bw)
    in_outage = bins[: max(1, int(out / bw))].sum() / max(out, bw)
    med = float(np.median(counts))
    per_key = _per_key_exponential(policy)
    penalty = base = None
    if per_key is not None:
        penalty = per_key.unjittered(int(med))
        base = per_key.unjittered(0)
    lag = lags
    return StormResult(
        policy=policy.describe(),
        keys=keys,
        outage_s=out,
        horizon_s=hz,
        attempts=attempts,
        failed_attempts=failed,
        bin_s=bw,
        request_rate_per_s=tuple(rates.tolist()),
        peak_rate_per_s=float(rates.max()),
        outage_mean_rate_per_s=float(in_outage),
        recovered=len(lags),
        recovery_lag_p50_s=float(np.percentile(lag, 50)) if len(lag) else None,
        recovery_lag_p99_s=float(np.percentile(lag, 99)) if len(lag) else None,
        recovery_lag_max_s=float(lag.max()) if len(lag) else None,
        failures_per_key_median=med,
        penalty_without_forget_s=penalty,
        penalty_with_forget_s=base,
    )


def _per_key_exponential(policy: RetryPolicy) -> ItemExponential | None:
    if policy.kind != "exp":
        return None
    return ItemExponential(policy.base_s, policy.cap_s)


def policy_variants(policy: RetryPolicy) -> tuple[tuple[str, RetryPolicy], ...]:
    """The four comparisons of the spec: ± jitter × ± global bucket, around ``policy``.

    The jittered variants use the policy's jitter, or full jitter if it has none; the bucket
    variants use its global limit, or client-go's 10 qps / burst 100 if it has none."""
    if policy.kind != "exp":
        return (("as given", policy),)
    jitter = policy.jitter if policy.jitter != "none" else "full"
    qps = policy.global_qps if policy.global_qps is not None else CLIENT_GO_QPS
    burst = policy.burst if policy.global_qps is not None else CLIENT_GO_BURST
    plain = replace(policy, jitter="none", global_qps=None)
    return (
        ("no jitter, no bucket", plain),
        (f"{jitter} jitter, no bucket", replace(plain, jitter=jitter)),
        ("no jitter, bucket", replace(plain, global_qps=qps, burst=burst)),
        (f"{jitter} jitter, bucket", replace(plain, jitter=jitter, global_qps=qps, burst=burst)),
    )


@dataclass(frozen=True)
class HealthyImpact:
    """Queue wait of healthy keys sharing c workers with N keys in a retry storm."""

    policy: str
    healthy_wait_mean_s: float | None
    healthy_wait_p99_s: float | None
    baseline_wait_mean_s: float | None
    """The same healthy traffic with no failing keys."""
    baseline_wait_p99_s: float | None
    failing_retries: int
    busy_workers_mean: float


def healthy_impact(
    failing: int,
    policy: RetryPolicy,
    outage_s: float,
    *,
    healthy_rate_per_s: float,
    workers: int,
    service_mean_s: float,
    duration_s: float | None = None,
    seed: int = 0,
) -> HealthyImpact:
    """Simulate N failing keys (added together at t = 0, failing every attempt during the
    outage) plus a stream of healthy, effectively unique keys at ``healthy_rate_per_s``, on one
    queue with c workers and exponential service; compare healthy waits with a run without the
    failing keys (same seed, so the same healthy arrivals)."""
    dur = _check("duration", duration_s) if duration_s is not None else _check("outage", outage_s)
    pool = 1_000_000_000  # healthy keys effectively never repeat
    lam = healthy_rate_per_s * (failing + pool) / pool
    storm = simulate(
        arrival_rate_per_s=lam, keys=failing + pool, workers=workers,
        service_mean_s=service_mean_s, duration_s=dur, seed=seed, failing_keys=failing,
        fail_prob=1.0, fail_window_s=(0.0, outage_s), retry=policy, initial_burst=True,
    )
    base = simulate(
        arrival_rate_per_s=lam, keys=failing + pool, workers=workers,
        service_mean_s=service_mean_s, duration_s=dur, seed=seed, failing_keys=failing,
        fail_prob=0.0, retry=policy,
    )
    return HealthyImpact(
        policy=policy.describe(),
        healthy_wait_mean_s=storm.healthy_wait_mean_s,
        healthy_wait_p99_s=storm.healthy_wait_p99_s,
        baseline_wait_mean_s=base.healthy_wait_mean_s,
        baseline_wait_p99_s=base.healthy_wait_p99_s,
        failing_retries=storm.retries,
        busy_workers_mean=storm.busy_workers_mean,
    )


def seconds_over_limit(storm: StormResult, limit_per_s: float | None) -> float | None:
    """Total length of the rate bins in which the storm's requests exceed a dependency's
    limit (the last bin may be shorter than ``bin_s``); None when there is no limit."""
    if limit_per_s is None:
        return None
    n = len(storm.request_rate_per_s)
    over = 0.0
    for i, rate in enumerate(storm.request_rate_per_s):
        if rate > limit_per_s:
            end = storm.horizon_s if i == n - 1 else storm.bin_s * (i + 1)
            over += end - storm.bin_s * i
    return over
