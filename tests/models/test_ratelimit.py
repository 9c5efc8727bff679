"""Rate limiters against client-go default_rate_limiters.go rules (values derived by hand)."""

from __future__ import annotations

import numpy as np
import pytest

from models.errors import ModelInputError
from models.ratelimit import (
    ItemExponential,
    MaxOf,
    RetryPolicy,
    TokenBucket,
    client_go_default_controller_limiter,
    controller_runtime_default_limiter,
    failures_to_cap,
    parse_retry_spec,
)


def test_exponential_doubles_from_base_and_caps() -> None:
    lim = ItemExponential(0.005, 1000.0)
    delays = [lim.when("A", 0.0) for _ in range(20)]
    assert delays[:4] == pytest.approx([0.005, 0.010, 0.020, 0.040])
    assert delays[17] == pytest.approx(655.36)  # 18th failure: 5 ms · 2^17
    assert delays[18] == 1000.0
    assert delays[19] == 1000.0
    assert lim.num_requeues("A") == 20
    assert failures_to_cap(0.005, 1000.0) == 18


def test_exponential_is_per_key_and_forget_resets() -> None:
    lim = ItemExponential(0.005, 1000.0)
    lim.when("A", 0.0)
    lim.when("A", 0.0)
    assert lim.when("B", 0.0) == pytest.approx(0.005)  # B has its own count
    lim.forget("A")
    assert lim.num_requeues("A") == 0
    assert lim.when("A", 0.0) == pytest.approx(0.005)


def test_token_bucket_burst_then_debt() -> None:
    b = TokenBucket(10.0, 100)
    first = [b.when(i, 0.0) for i in range(100)]
    assert first == [0.0] * 100  # the bucket starts full
    assert b.when(100, 0.0) == pytest.approx(0.1)  # one token short at 10/s
    for i in range(101, 109):
        b.when(i, 0.0)
    assert b.when(109, 0.0) == pytest.approx(1.0)  # 10 tokens of debt
    # 2 s later 20 tokens have refilled: debt 10 → +10 tokens, the next call is free
    assert b.when("x", 2.0) == 0.0
    assert b.num_requeues("x") == 0


def test_max_of_calls_every_member_so_the_bucket_is_spent() -> None:
    m = MaxOf(ItemExponential(1.0, 1000.0), TokenBucket(1.0, 1))
    assert m.when("A", 0.0) == pytest.approx(1.0)  # exp 1, bucket 0
    assert m.when("B", 0.0) == pytest.approx(1.0)  # exp 1, bucket debt 1 → 1
    assert m.when("C", 0.0) == pytest.approx(2.0)  # bucket debt 2 wins
    assert m.num_requeues("A") == 1
    m.forget("A")
    assert m.num_requeues("A") == 0


def test_client_go_default_vs_controller_runtime_default() -> None:
    cg = client_go_default_controller_limiter()
    cr = controller_runtime_default_limiter()
    cg_delays = [cg.when(k, 0.0) for k in range(200)]
    cr_delays = [cr.when(k, 0.0) for k in range(200)]
    assert cr_delays == [pytest.approx(0.005)] * 200  # no global bucket
    assert cg_delays[99] == pytest.approx(0.005)
    assert cg_delays[199] == pytest.approx(10.0)  # (200 − 100) / 10 qps


def test_jitter_ranges_and_determinism() -> None:
    full = ItemExponential(1.0, 100.0, "full", np.random.default_rng(1))
    xs = [full.when(k, 0.0) for k in range(4000)]
    assert all(0.0 <= x <= 1.0 for x in xs)
    assert np.mean(xs) == pytest.approx(0.5, abs=0.03)
    equal = ItemExponential(1.0, 100.0, "equal", np.random.default_rng(1))
    ys = [equal.when(k, 0.0) for k in range(4000)]
    assert all(0.5 <= y <= 1.0 for y in ys)
    deco = ItemExponential(1.0, 10.0, "decorrelated", np.random.default_rng(1))
    prev = 1.0
    for _ in range(50):
        d = deco.when("A", 0.0)
        assert 1.0 <= d <= min(10.0, 3 * prev) + 1e-12
        prev = d
    again = ItemExponential(1.0, 100.0, "full", np.random.default_rng(1))
    assert [again.when(k, 0.0) for k in range(4000)] == xs


def test_parse_retry_spec() -> None:
    p = parse_retry_spec("exp:0.01:60", jitter="full")
    assert (p.kind, p.base_s, p.cap_s, p.jitter, p.global_qps) == ("exp", 0.01, 60.0, "full", None)
    cg = parse_retry_spec("client-go")
    assert (cg.global_qps, cg.burst) == (10.0, 100)
    assert parse_retry_spec("const:0").kind == "const"
    assert parse_retry_spec("exp:1:2", global_qps=5.0).burst == 50
    for bad in ("exp:1", "linear:1:2", "exp:2:1"):
        with pytest.raises(ModelInputError):
            parse_retry_spec(bad)
    with pytest.raises(ModelInputError):
        parse_retry_spec("exp:1:2", jitter="wild")
    with pytest.raises(ModelInputError):
        RetryPolicy(kind="const", base_s=1.0, cap_s=1.0, jitter="full")
    with pytest.raises(ModelInputError):
        TokenBucket(0.0, 1)
