"""Retry rate limiters as composable policies, with the semantics of client-go's workqueue.

Every limiter answers three questions, exactly like client-go's ``TypedRateLimiter`` interface
(``k8s.io/client-go/util/workqueue/default_rate_limiters.go``):

* ``when(key, now_s)`` — how long the key must wait before it is added again. Calling it *is*
  recording a failure: the per-key count goes up by one on every call.
* ``forget(key)`` — stop tracking the key (the next failure starts from the base delay again).
* ``num_requeues(key)`` — how many failures are being tracked for the key.

Time is an explicit argument (``now_s``), never the wall clock, and jitter draws from an injected
``numpy.random.Generator``, so every run is reproducible. The objects carry per-key state (as the
Go ones do); a frozen :class:`RetryPolicy` describes a limiter and ``build()`` makes a fresh one.

Rules and their source (client-go ``util/workqueue/default_rate_limiters.go``, unchanged in
substance from v0.20 to v0.36):

* ``ItemExponentialFailureRateLimiter``: ``delay = min(cap, base · 2^n)`` where ``n`` is the
  number of failures recorded *before* this call; then ``n ← n + 1``. ``Forget`` deletes ``n``.
* ``BucketRateLimiter``: ``When`` returns ``Reserve().Delay()`` of a ``golang.org/x/time/rate``
  token bucket (rate r, burst b): tokens refill at r/s up to b, each call takes one token even
  when that leaves the bucket in debt, and the delay is ``debt / r`` — with no upper bound. It
  tracks no per-key state (``NumRequeues`` = 0, ``Forget`` does nothing).
* ``MaxOfRateLimiter``: calls ``When`` on *every* member (so the bucket spends a token even when
  the exponential delay is larger) and returns the largest; ``NumRequeues`` is the max and
  ``Forget`` forgets in all members.
* ``DefaultControllerRateLimiter`` = MaxOf(exponential 5 ms → 1000 s, bucket 10 qps / burst 100).

controller-runtime (``pkg/controller/controller.go``, v0.23+ where the priority queue is the
default) uses ``NewTypedItemExponentialFailureRateLimiter(5ms, 1000s)`` alone: no global bucket.

Jitter is not in client-go; the three variants follow Brooker, "Exponential Backoff And Jitter"
(AWS Architecture Blog, 2015), with ``d = min(cap, base · 2^n)``:

* full: ``U(0, d)``;  equal: ``d/2 + U(0, d/2)``;
* decorrelated: ``min(cap, U(base, 3 · previous))`` with ``previous`` starting at ``base``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from models.errors import ModelInputError

Jitter = Literal["none", "full", "equal", "decorrelated"]
JITTERS: tuple[str, ...] = ("none", "full", "equal", "decorrelated")

CLIENT_GO_BASE_S = 0.005
CLIENT_GO_CAP_S = 1000.0
CLIENT_GO_QPS = 10.0
CLIENT_GO_BURST = 100


class RateLimiter(Protocol):
    """The client-go ``RateLimiter`` contract with an explicit clock."""

    def when(self, key: object, now_s: float) -> float: ...

    def forget(self, key: object) -> None: ...

    def num_requeues(self, key: object) -> int: ...

    def failures(self) -> Mapping[object, int]:
        """Per-key failure counts currently tracked (keys with a count of zero are absent)."""
        ...


def _finite(name: str, value: float, *, positive: bool = False) -> float:
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise ModelInputError(f"{name} must be a finite number, got {value!r}.")
    if value < 0 or (positive and value == 0):
        raise ModelInputError(f"{name} must be {'positive' if positive else 'non-negative'}, "
                              f"got {value!r}.")
    return float(value)


class ItemExponential:
    """Per-key capped exponential backoff (client-go ``ItemExponentialFailureRateLimiter``,
    ``default_rate_limiters.go``): the n-th call for a key (n from 0) returns
    ``min(cap, base · 2^n)``, optionally jittered (see the module docstring)."""

    def __init__(
        self,
        base_s: float = CLIENT_GO_BASE_S,
        cap_s: float = CLIENT_GO_CAP_S,
        jitter: Jitter = "none",
        rng: np.random.Generator | None = None,
    ) -> None:
        self.base_s = _finite("base delay", base_s)
        self.cap_s = _finite("maximum delay", cap_s)
        if self.cap_s < self.base_s:
            raise ModelInputError(
                f"maximum delay ({cap_s} s) must not be below the base delay ({base_s} s)."
            )
        if jitter not in JITTERS:
            raise ModelInputError(f"jitter must be one of {', '.join(JITTERS)}; got {jitter!r}.")
        if jitter != "none" and rng is None:
            raise ModelInputError("jitter needs a random generator (pass rng=...).")
        self.jitter: Jitter = jitter
        self._rng = rng
        self._failures: dict[object, int] = {}
        self._previous: dict[object, float] = {}

    def unjittered(self, n: int) -> float:
        """min(cap, base · 2^n) for every failure count n, without overflow.

        ``ldexp(base, n)`` is base · 2^n exactly; when that passes the largest float it is past
        any cap, so the delay is the cap — as in client-go, which computes the backoff as a
        float and returns maxDelay once it exceeds maxDelay or MaxInt64
        (``default_rate_limiters.go``). (``base * 2.0**n`` raised OverflowError from the
        1,025th failure of one key on: issue 12.)"""
        try:
            x = math.ldexp(self.base_s, n)
        except OverflowError:
            return self.cap_s
        return min(self.cap_s, x)

    def when(self, key: object, now_s: float) -> float:
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        d = self.unjittered(n)
        if self.jitter == "none":
            return d
        rng = self._rng
        assert rng is not None
        if self.jitter == "full":
            return float(rng.random()) * d
        if self.jitter == "equal":
            return d / 2.0 + float(rng.random()) * d / 2.0
        prev = self._previous.get(key, self.base_s)
        hi = max(self.base_s, 3.0 * prev)
        out = min(self.cap_s, self.base_s + float(rng.random()) * (hi - self.base_s))
        self._previous[key] = out
        return out

    def forget(self, key: object) -> None:
        self._failures.pop(key, None)
        self._previous.pop(key, None)

    def num_requeues(self, key: object) -> int:
        return self._failures.get(key, 0)

    def failures(self) -> Mapping[object, int]:
        return dict(self._failures)


class ConstantDelay:
    """A fixed delay on every failure (client-go ``ItemFastSlowRateLimiter`` with one speed).

    ``ConstantDelay(0)`` is the tight loop of calling ``AddAfter(key, 0)`` on every failure.
    It still counts failures per key, so ``num_requeues`` and ``forget`` behave as usual."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = _finite("retry delay", delay_s)
        self._failures: dict[object, int] = {}

    def when(self, key: object, now_s: float) -> float:
        self._failures[key] = self._failures.get(key, 0) + 1
        return self.delay_s

    def forget(self, key: object) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: object) -> int:
        return self._failures.get(key, 0)

    def failures(self) -> Mapping[object, int]:
        return dict(self._failures)


class TokenBucket:
    """One bucket shared by all keys (client-go ``BucketRateLimiter`` over
    ``golang.org/x/time/rate.Limiter``), as time-based arithmetic.

    At a call at time t: ``tokens ← min(burst, tokens + rate · (t − last))`` (no refill when t is
    earlier than the last call), ``last ← t``, then ``tokens ← tokens − 1`` and the delay is
    ``max(0, −tokens) / rate``. The bucket starts full. Per-key state: none."""

    def __init__(self, qps: float = CLIENT_GO_QPS, burst: int = CLIENT_GO_BURST) -> None:
        self.qps = _finite("global retry rate (qps)", qps, positive=True)
        if not isinstance(burst, int) or burst < 1:
            raise ModelInputError(f"burst must be a whole number of at least 1, got {burst!r}.")
        self.burst = burst
        self._tokens = float(burst)
        self._last_s: float | None = None

    def reserve(self, now_s: float) -> float:
        if self._last_s is not None and now_s > self._last_s:
            self._tokens = min(float(self.burst), self._tokens + (now_s - self._last_s) * self.qps)
        self._last_s = now_s  # x/time/rate sets last = t even when t is earlier
        self._tokens -= 1.0
        return -self._tokens / self.qps if self._tokens < 0 else 0.0

    def when(self, key: object, now_s: float) -> float:
        return self.reserve(now_s)

    def forget(self, key: object) -> None:
        return None

    def num_requeues(self, key: object) -> int:
        return 0

    def failures(self) -> Mapping[object, int]:
        return {}


class MaxOf:
    """client-go ``MaxOfRateLimiter``: every member's ``When`` is called; the largest wins."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ModelInputError("MaxOf needs at least one limiter.")
        self.limiters = limiters

    def when(self, key: object, now_s: float) -> float:
        return max([lim.when(key, now_s) for lim in self.limiters])

    def forget(self, key: object) -> None:
        for lim in self.limiters:
            lim.forget(key)

    def num_requeues(self, key: object) -> int:
        return max(lim.num_requeues(key) for lim in self.limiters)

    def failures(self) -> Mapping[object, int]:
        merged: dict[object, int] = {}
        for lim in self.limiters:
            for key, n in lim.failures().items():
                merged[key] = max(n, merged.get(key, 0))
        return merged


def client_go_default_controller_limiter() -> MaxOf:
    """client-go ``DefaultControllerRateLimiter`` (default_rate_limiters.go):
    MaxOf(exponential 5 ms → 1000 s, bucket 10 qps burst 100)."""
    return MaxOf(ItemExponential(CLIENT_GO_BASE_S, CLIENT_GO_CAP_S),
                 TokenBucket(CLIENT_GO_QPS, CLIENT_GO_BURST))


def controller_runtime_default_limiter() -> ItemExponential:
    """controller-runtime v0.23+ default (pkg/controller/controller.go, priority queue on):
    ``NewTypedItemExponentialFailureRateLimiter(5ms, 1000s)`` only."""
    return ItemExponential(CLIENT_GO_BASE_S, CLIENT_GO_CAP_S)


@dataclass(frozen=True)
class RetryPolicy:
    """A frozen description of a retry limiter; ``build(rng)`` returns a fresh stateful one.

    kind "exp": per-key ``min(cap, base · 2^n)`` (+ jitter); kind "const": ``base_s`` every time.
    With ``global_qps`` set, the per-key limiter is combined with a shared token bucket by MaxOf
    (client-go's default controller limiter is exp 0.005/1000 + 10 qps / burst 100)."""

    kind: Literal["exp", "const"] = "exp"
    base_s: float = CLIENT_GO_BASE_S
    cap_s: float = CLIENT_GO_CAP_S
    jitter: Jitter = "none"
    global_qps: float | None = None
    burst: int = CLIENT_GO_BURST

    def __post_init__(self) -> None:
        if self.kind not in ("exp", "const"):
            raise ModelInputError(f"retry kind must be 'exp' or 'const', got {self.kind!r}.")
        # validate by building once (raises ModelInputError on bad numbers)
        self.build(np.random.default_rng(0))

    def build(self, rng: np.random.Generator | None = None) -> RateLimiter:
        per_key: RateLimiter
        if self.kind == "const":
            if self.jitter != "none":
                raise ModelInputError("jitter applies only to the exponential retry policy.")
            per_key = ConstantDelay(self.base_s)
        else:
            per_key = ItemExponential(self.base_s, self.cap_s, self.jitter, rng)
        if self.global_qps is None:
            return per_key
        return MaxOf(per_key, TokenBucket(self.global_qps, self.burst))

    def describe(self) -> str:
        if self.kind == "const":
            text = f"constant {format_seconds(self.base_s)}"
        else:
            text = f"exponential {format_seconds(self.base_s)} → {format_seconds(self.cap_s)}"
            if self.jitter != "none":
                text += f", {self.jitter} jitter"
        if self.global_qps is not None:
            text += f", max with bucket {self.global_qps:g} qps / burst {self.burst}"
        return text


_NUM = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"


def parse_retry_spec(
    spec: str,
    *,
    jitter: str = "none",
    global_qps: float | None = None,
    burst: int | None = None,
    duration: Callable[[str], float] | None = None,
) -> RetryPolicy:
    """Parse ``exp:BASE:CAP``, ``const:DELAY``, ``client-go`` or ``controller-runtime``.

    BASE, CAP and DELAY are seconds; with ``duration`` (the caller's parser of a duration
    with units, >= 0, raising ``ValueError``, e.g. ``dashboard.cliutil.duration_or_zero``) they
    also take units: ``exp:5ms:1000s`` is ``exp:0.005:1000``, as :meth:`RetryPolicy.describe`
    prints it ("exponential 5ms → 1000s").

    ``client-go`` = exp 0.005:1000 with the 10 qps / burst 100 bucket (unless ``global_qps``
    overrides it); ``controller-runtime`` = exp 0.005:1000 alone. An explicit ``global_qps``
    adds a bucket; ``burst`` defaults to 10 s worth of tokens (client-go's 100 for 10 qps)."""
    text = spec.strip().lower()
    if jitter not in JITTERS:
        raise ModelInputError(f"jitter must be one of {', '.join(JITTERS)}; got {jitter!r}.")
    jit: Jitter = jitter  # type: ignore[assignment]
    kind: Literal["exp", "const"]
    head, _, rest = text.partition(":")
    values = rest.split(":") if rest else []
    if text == "client-go":
        kind, base, cap = "exp", CLIENT_GO_BASE_S, CLIENT_GO_CAP_S
        if global_qps is None:
            global_qps = CLIENT_GO_QPS
            burst = CLIENT_GO_BURST if burst is None else burst
    elif text == "controller-runtime":
        kind, base, cap = "exp", CLIENT_GO_BASE_S, CLIENT_GO_CAP_S
    elif head == "exp" and len(values) == 2:
        kind = "exp"
        base, cap = (_spec_seconds(spec, v, duration) for v in values)
    elif head == "const" and len(values) == 1:
        kind, base = "const", _spec_seconds(spec, values[0], duration)
        cap = base
    else:
        raise ModelInputError(
            f"retry policy {spec!r} is not understood; use exp:BASE:CAP (e.g. "
            f"{'exp:5ms:1000s' if duration else 'exp:0.005:1000'}), const:DELAY, client-go or "
            "controller-runtime."
        )
    if burst is None:
        burst = max(1, math.ceil(10.0 * global_qps)) if global_qps is not None else CLIENT_GO_BURST
    return RetryPolicy(kind=kind, base_s=base, cap_s=cap, jitter=jit,
                       global_qps=global_qps, burst=burst)


def _spec_seconds(spec: str, value: str, duration: Callable[[str], float] | None) -> float:
    """One delay of a retry spec: a number of seconds, or with ``duration`` a duration."""
    if re.fullmatch(_NUM, value):
        return float(value)
    if duration is not None:
        try:
            return float(duration(value))
        except ValueError:
            pass
    units = " (e.g. 5ms, 1.5s, 2m; a bare number is seconds)" if duration else " (seconds)"
    raise ModelInputError(f"retry policy {spec!r}: {value!r} is not a delay{units}.")


def failures_to_cap(base_s: float, cap_s: float) -> int:
    """Smallest n with base · 2^n ≥ cap: the failure count at which the delay stops doubling
    (client-go default 5 ms → 1000 s: n = 18, i.e. the 19th consecutive failure waits 1000 s)."""
    _finite("base delay", base_s, positive=True)
    _finite("maximum delay", cap_s)
    if cap_s <= base_s:
        return 0
    return math.ceil(math.log2(cap_s / base_s) - 1e-12)


def format_seconds(seconds: float) -> str:
    """A delay as the CLI's retry spec takes it back: 0s, 5ms, 1.28s, 3600.035s.

    Not a human quantity but the spec's own text (``exp:5ms:1000s`` prints as
    ``exponential 5ms → 1000s`` and parses back to the same policy), so it keeps the digits;
    sentences write a delay with :func:`models.formatting.duration_text`."""
    if seconds == 0:
        return "0s"
    if abs(seconds) < 1.0:
        return f"{seconds * 1000:.4g}ms"
    return f"{seconds:.7g}s"
