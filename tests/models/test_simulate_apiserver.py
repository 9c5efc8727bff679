"""The simulator's API server side (writes, the APF priority level, client-go's retries, the
admission webhook, write conflicts) against values computed here: queueing closed forms, the
mechanism's own ceilings and exact identities, and the scraped series against the run's counts.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from collectors.openmetrics import Series, render_families, simulated_families
from models.errors import ModelInputError
from models.scrape import (
    ADMISSION_WEBHOOK_BUCKETS,
    APF_WAIT_BUCKETS,
    API_BUCKETS,
    REQUEST_DURATION_BUCKETS,
    REQUEST_SLI_BUCKETS,
    ScrapedHistogram,
    ScrapedMetrics,
)
from models.simulate import SimResult, simulate

UNIQUE = 10**12  # keys never repeat: no coalescing, every pass is its own key
CORE = [f for f in SimResult.__dataclass_fields__ if f not in {
    "api_attempts", "api_429", "api_409", "api_retries", "api_failed_calls", "api_writes_ok",
    "apf_dispatched", "apf_rejected_queue_full", "apf_rejected_timeout", "apf_wait_mean_s",
    "apf_busy_seats_mean", "webhook_admissions", "webhook_wait_mean_s", "admission_mean_s",
    "metrics"}]


def run(**kw: Any) -> SimResult:
    base: dict[str, Any] = {"keys": UNIQUE, "service_mean_s": 0.02, "service_dist": "const",
                            "seed": 3}
    base.update(kw)
    return simulate(**base)


def last(x: np.ndarray) -> float:
    return float(x[-1])


def mean_of(h: ScrapedHistogram) -> float:
    return float(h.sum[-1] / h.count[-1])


def scraped(r: SimResult) -> ScrapedMetrics:
    assert r.metrics is not None
    return r.metrics


# --- the APF priority level ---------------------------------------------------------------------

@pytest.mark.parametrize("workers", [4, 8, 16])
def test_apf_level_caps_throughput_at_seats_over_seat_time(workers: int) -> None:
    # 2 seats held 0.05 s per request, 2 requests per pass: at most 2 / 0.05 / 2 = 20 passes/s;
    # 30/s arrive and 4+ workers could do 4 / (0.02 + 2 · 0.05) > 20 without the level
    seats, lat, calls = 2, 0.05, 2
    ceiling = seats / lat / calls
    r = run(arrival_rate_per_s=30.0, workers=workers, api_calls=calls, api_latency_s=lat,
            apf_seats=seats, duration_s=600.0)
    assert r.throughput_per_s <= ceiling * (1 + 1e-9) + 1 / 600
    assert r.throughput_per_s >= 0.99 * ceiling
    assert r.apf_busy_seats_mean == pytest.approx(seats, rel=0.005)
    assert r.api_429 == 0  # 16 workers never fill a queue of 50
    assert r.apf_wait_mean_s is not None
    assert r.apf_wait_mean_s > 0


def test_apf_level_with_one_worker_per_seat_is_the_closed_cycle() -> None:
    # 2 workers, 2 seats: no request ever waits; each pass is S + 2 · lat, deterministic
    r = run(arrival_rate_per_s=30.0, workers=2, api_calls=2, api_latency_s=0.05, apf_seats=2,
            duration_s=600.0)
    assert r.throughput_per_s == pytest.approx(2 / (0.02 + 2 * 0.05), rel=0.002)
    assert r.apf_wait_mean_s == 0.0


def test_ample_seats_without_background_change_nothing() -> None:
    # as many seats as workers and no other clients: no APF wait, no 429, and the run is the
    # run without the level, number for number
    kw: dict[str, Any] = {"arrival_rate_per_s": 12.0, "workers": 3, "api_calls": 3,
                          "api_latency_s": 0.02, "api_qps": 40.0, "api_burst": 5,
                          "service_dist": "exp", "service_mean_s": 0.1, "keys": 500,
                          "duration_s": 400.0, "fail_prob": 0.1}
    plain = run(**kw)
    apf = run(**kw, apf_seats=3)
    assert apf.api_429 == 0
    assert apf.apf_rejected_queue_full == 0
    assert apf.apf_wait_mean_s == 0.0
    assert {f: getattr(apf, f) for f in CORE} == {f: getattr(plain, f) for f in CORE}


def md1k_blocking(lam: float, h: float, capacity: int) -> float:
    """M/D/1/K blocking probability (Gross & Harris, M/G/1/K): the embedded chain at
    departures on 0…K−1 with a_j = P(j Poisson arrivals in one service), then
    p_K = 1 − 1 / (π_0 + ρ)."""
    rho = lam * h
    K = capacity
    a = [math.exp(-rho) * rho**j / math.factorial(j) for j in range(K)]
    P = np.zeros((K, K))
    for i in range(K):
        lo = max(i - 1, 0)
        for j in range(lo, K - 1):
            P[i, j] = a[j - lo]
        P[i, K - 1] = 1.0 - P[i, : K - 1].sum()
    A = np.vstack([P.T - np.eye(K), np.ones(K)])
    rhs = np.zeros(K + 1)
    rhs[-1] = 1.0
    pi = np.linalg.lstsq(A, rhs, rcond=None)[0]
    return float(1.0 - 1.0 / (pi[0] + rho))


def test_queue_full_rejections_follow_the_md1k_blocking_probability() -> None:
    # one seat, 2 waiting places (capacity 3), nearly all load Poisson background held 0.05 s;
    # the controller adds a little load with the same seat time
    r = run(arrival_rate_per_s=0.3, workers=4, api_calls=1, api_latency_s=0.05, apf_seats=1,
            apf_queue_limit=2, apf_background_rate_per_s=12.0, apf_background_latency_s=0.05,
            duration_s=5000.0, seed=11)
    offered = r.apf_dispatched + r.apf_rejected_queue_full
    blocked = r.apf_rejected_queue_full / offered
    assert r.apf_rejected_timeout == 0
    assert blocked == pytest.approx(md1k_blocking(offered / 5000.0, 0.05, 3), rel=0.06)


def erlang_b(c: int, a: float) -> float:
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return b


def test_a_level_without_a_queue_blocks_as_erlang_b() -> None:
    # queue limit 0 (LimitResponse Reject): a loss system; blocking = Erlang B, whatever the
    # seat-time distribution; reason concurrency-limit
    r = run(arrival_rate_per_s=0.3, workers=4, api_calls=1, api_latency_s=0.05, apf_seats=3,
            apf_queue_limit=0, apf_background_rate_per_s=40.0, apf_background_latency_s=0.05,
            duration_s=3000.0, seed=5, scrape_interval_s=30.0)
    offered = r.apf_dispatched + r.apf_rejected_queue_full
    assert r.apf_rejected_queue_full / offered == pytest.approx(
        erlang_b(3, offered / 3000.0 * 0.05), rel=0.03)
    srv = scraped(r).server
    assert srv is not None
    assert set(srv.apf_rejected) == {"concurrency-limit"}
    assert last(srv.apf_inqueue) == 0
    assert srv.apf_inqueue.max() == 0


def test_littles_law_on_the_scraped_apf_series() -> None:
    # mean requests waiting (the gauge, sampled every second) = dispatch rate × mean wait
    # (the wait histogram); no rejections with a large queue
    T = 3000.0
    r = run(arrival_rate_per_s=5.0, workers=6, api_calls=2, api_latency_s=0.05, apf_seats=2,
            apf_queue_limit=10_000, apf_background_rate_per_s=25.0,
            apf_background_latency_s=0.05, duration_s=T, seed=7, scrape_interval_s=1.0,
            service_dist="exp")
    srv = scraped(r).server
    assert srv is not None
    assert r.apf_rejected_queue_full == 0
    waited = srv.apf_wait["true"]
    rate = last(srv.apf_dispatched) / T
    assert srv.apf_inqueue.mean() == pytest.approx(rate * mean_of(waited), rel=0.03)
    # and the seats: mean executing = dispatch rate × mean seat time
    assert srv.apf_executing.mean() == pytest.approx(r.apf_busy_seats_mean, rel=0.03)
    assert srv.apf_executing.max() <= 2
    assert srv.apf_inqueue.max() > 0


def test_queue_gauge_never_exceeds_the_limit_and_rejections_need_a_full_queue() -> None:
    common: dict[str, Any] = {"arrival_rate_per_s": 10.0, "workers": 8, "api_calls": 2,
                              "api_latency_s": 0.05, "apf_seats": 2,
                              "apf_background_rate_per_s": 30.0, "duration_s": 600.0,
                              "scrape_interval_s": 0.5, "apf_retry_after_s": 1.0}
    small = run(**common, apf_queue_limit=3)
    srv = scraped(small).server
    assert srv is not None
    assert small.apf_rejected_queue_full > 0
    assert small.api_429 > 0
    assert srv.apf_inqueue.max() <= 3
    assert (srv.apf_inqueue == 3).any()
    # an overloaded level whose queue never fills rejects nothing
    big = run(**{**common, "duration_s": 60.0}, apf_queue_limit=1_000_000, apf_wait_limit_s=60.0)
    assert big.apf_rejected_queue_full == 0
    assert big.api_429 == 0


def test_time_outs_wait_exactly_the_wait_limit() -> None:
    # overloaded level (ρ = 1.5 from the background alone), a 0.05 s wait limit
    r = run(arrival_rate_per_s=2.0, workers=4, api_calls=1, api_latency_s=0.05, apf_seats=1,
            apf_queue_limit=10_000, apf_wait_limit_s=0.05, apf_background_rate_per_s=30.0,
            apf_background_latency_s=0.05, duration_s=300.0, scrape_interval_s=15.0,
            apf_retry_after_s=1.0)
    srv = scraped(r).server
    assert srv is not None
    assert r.apf_rejected_timeout > 0
    assert last(srv.apf_rejected["time-out"]) == r.apf_rejected_timeout
    rejected = srv.apf_wait["false"]
    timeouts = last(srv.apf_rejected["time-out"])
    assert last(rejected.sum) == pytest.approx(0.05 * timeouts, rel=1e-9)
    ok = srv.apf_wait["true"]  # nobody dispatched waited longer than the limit
    assert ok.buckets[-1, APF_WAIT_BUCKETS.index(0.05)] == last(ok.count)


# --- client-go's retries -------------------------------------------------------------------------

def test_retries_sleep_the_retry_after_and_the_last_failure_fails_the_pass() -> None:
    r = run(arrival_rate_per_s=10.0, workers=8, api_calls=2, api_latency_s=0.05, apf_seats=2,
            apf_queue_limit=2, apf_background_rate_per_s=20.0, apf_retry_after_s=2.0,
            api_max_retries=1, duration_s=600.0, scrape_interval_s=15.0)
    m = scraped(r)
    assert m.api is not None
    assert r.api_retries > 0
    assert r.api_failed_calls > 0
    assert r.api_409 == 0
    # one retry at most: every call with a retry lasted at least the 2 s Retry-After (exactly
    # 2 s when both attempts found the queue full), the others well under 1 s
    one = API_BUCKETS.index(1)
    over_1s = sum(last(h.count) - h.buckets[-1, one] for h in m.api.request_duration.values())
    assert over_1s == r.api_retries
    # every 429 was retried or failed its call (but those near the end, retried after T)
    assert 0 <= r.api_429 - r.api_retries - r.api_failed_calls <= 8
    assert r.failed == r.api_failed_calls  # each failed call failed its pass
    assert r.retries == r.failed  # … which went back through AddRateLimited


def test_no_retries_means_every_429_fails_its_pass() -> None:
    r = run(arrival_rate_per_s=10.0, workers=8, api_calls=2, api_latency_s=0.05, apf_seats=2,
            apf_queue_limit=1, apf_background_rate_per_s=20.0, api_max_retries=0,
            duration_s=300.0)
    assert r.api_429 > 0
    assert r.api_retries == 0
    assert r.api_failed_calls == r.api_429 == r.failed


def test_dynamic_retry_after_follows_the_api_servers_tracker() -> None:
    # dropped_requests_tracker.go, worked by hand: the Retry-After starts at 1 s; entering a
    # new second with ≥ 3 × Retry-After drops in the last Retry-After seconds doubles it,
    # with fewer than Retry-After it drops by one
    from models._simcore import _dropped as dropped  # the compiled tracker
    from models._simcore import new_tracker

    trk, hu, hc = new_tracker()
    seen = [dropped(trk, hu, hc, t) for t in (10.1, 10.2, 10.9)]
    assert seen == [1, 1, 1]  # the first second: no history yet
    assert dropped(trk, hu, hc, 11.0) == 2  # second 10 had 3 ≥ 3 × 1 drops
    assert dropped(trk, hu, hc, 12.5) == 2  # seconds 10–11: 4 drops, < 6 and ≥ 2
    assert dropped(trk, hu, hc, 20.0) == 1  # nothing in the last 2 s: down by one
    for t in np.arange(30.0, 31.0, 0.1):  # 10 drops in second 30
        dropped(trk, hu, hc, float(t))
    assert dropped(trk, hu, hc, 31.0) == 2
    for t in np.arange(31.05, 33.0, 0.1):  # 20 more in seconds 31–32
        dropped(trk, hu, hc, float(t))
    assert dropped(trk, hu, hc, 33.0) == 4  # ≥ 6 in the last 2 s, 2 s after the raise
    for t in np.arange(33.01, 40.0, 0.01):  # a long storm: doubling stops at 32 s
        dropped(trk, hu, hc, float(t))
    for second in range(40, 200):
        for k in range(200):
            dropped(trk, hu, hc, second + k / 200)
    assert dropped(trk, hu, hc, 200.0) == 32


def test_dynamic_retry_after_slows_a_controller_down() -> None:
    kw: dict[str, Any] = {"arrival_rate_per_s": 15.0, "workers": 16, "api_calls": 2,
                          "api_latency_s": 0.05, "apf_seats": 2, "apf_queue_limit": 2,
                          "apf_background_rate_per_s": 30.0, "duration_s": 600.0}
    fixed = run(**kw, apf_retry_after_s=1.0)
    dynamic = run(**kw)
    # heavy dropping raises the server's Retry-After above 1 s: fewer attempts in the same time
    assert dynamic.api_429 < fixed.api_429
    assert dynamic.work_mean_s is not None
    assert fixed.work_mean_s is not None
    assert dynamic.work_mean_s > fixed.work_mean_s


# --- the admission webhook -----------------------------------------------------------------------

def test_an_unlimited_webhook_adds_exactly_its_latency_to_each_write() -> None:
    S, L, H = 0.02, 0.01, 0.03
    kw: dict[str, Any] = {"arrival_rate_per_s": 5.0, "workers": 2, "api_calls": 3,
                          "api_writes": 2, "api_latency_s": L, "duration_s": 300.0,
                          "scrape_interval_s": 15.0}
    plain = run(**kw)
    hooked = run(**kw, webhook_latency_s=H)
    pa, ha = scraped(plain).api, scraped(hooked).api
    assert pa is not None
    assert ha is not None
    assert mean_of(pa.request_duration["PUT"]) == pytest.approx(L, abs=1e-12)
    assert mean_of(ha.request_duration["PUT"]) == pytest.approx(L + H, abs=1e-12)
    assert mean_of(ha.request_duration["GET"]) == pytest.approx(L, abs=1e-12)
    assert hooked.admission_mean_s == pytest.approx(H, abs=1e-15)
    assert hooked.webhook_wait_mean_s == 0.0
    # a pass: its work, then 3 calls, 2 of them admitted (constant times, unique keys)
    assert hooked.work_mean_s == pytest.approx(S + 3 * L + 2 * H, rel=1e-12)
    srv = scraped(hooked).server
    assert srv is not None
    assert srv.webhook is not None
    assert srv.apf_seats is None
    assert mean_of(srv.webhook) == pytest.approx(H, abs=1e-12)
    # the SLI excludes the webhook; the request duration includes it
    assert mean_of(srv.request_sli["PUT"]) == pytest.approx(L, abs=1e-12)
    assert mean_of(srv.request_duration["PUT"]) == pytest.approx(L + H, abs=1e-12)


@pytest.mark.parametrize(("slots", "writes"), [(1, 1), (2, 2)])
def test_a_saturated_webhook_caps_passes_at_slots_over_latency_over_writes(
        slots: int, writes: int) -> None:
    H = 0.05
    ceiling = slots / H / writes  # 20 passes/s
    r = run(arrival_rate_per_s=30.0, workers=12, api_calls=writes + 1, api_writes=writes,
            api_latency_s=0.005, webhook_latency_s=H, webhook_concurrency=slots,
            duration_s=600.0)
    assert r.throughput_per_s <= ceiling * (1 + 1e-9) + 1 / 600
    assert r.throughput_per_s >= 0.99 * ceiling
    assert r.admission_mean_s is not None
    assert r.webhook_wait_mean_s is not None
    assert r.admission_mean_s == pytest.approx(H + r.webhook_wait_mean_s, rel=1e-9)
    assert r.webhook_wait_mean_s > H  # writes queue at the webhook


def test_webhook_and_apf_wait_both_count_in_the_request_duration_not_the_sli() -> None:
    r = run(arrival_rate_per_s=10.0, workers=6, api_calls=2, api_writes=1, api_latency_s=0.02,
            apf_seats=2, apf_background_rate_per_s=20.0, webhook_latency_s=0.03,
            duration_s=600.0, scrape_interval_s=30.0)
    srv = scraped(r).server
    assert srv is not None
    assert srv.webhook is not None
    put, sli = srv.request_duration["PUT"], srv.request_sli["PUT"]
    # per PUT: duration − SLI = its APF wait + its admission; the SLI is the rest (0.02 s)
    assert mean_of(sli) == pytest.approx(0.02, abs=1e-12)
    assert mean_of(put) - mean_of(sli) > 0.03


# --- write conflicts -----------------------------------------------------------------------------

def test_one_worker_never_conflicts() -> None:
    r = run(arrival_rate_per_s=20.0, workers=1, api_calls=2, api_writes=1, api_latency_s=0.01,
            conflict_objects=1, duration_s=300.0, service_dist="exp")
    assert r.api_409 == 0
    assert r.failed == 0
    assert r.api_writes_ok > 0


def test_the_conflict_share_rises_with_the_workers_on_one_object() -> None:
    shares = []
    for c in (1, 2, 4, 8):
        r = run(arrival_rate_per_s=30.0, workers=c, api_calls=1, api_writes=1,
                api_latency_s=0.01, conflict_objects=1, duration_s=300.0, service_dist="exp")
        shares.append(r.api_409 / r.api_attempts)
        assert r.api_409 == r.api_failed_calls == r.failed  # each 409 fails its pass
        assert r.api_writes_ok + r.api_409 == r.api_attempts
    assert shares[0] == 0.0
    assert shares == sorted(shares)
    assert len(set(shares)) == 4


def test_spread_objects_rarely_conflict() -> None:
    few = run(arrival_rate_per_s=30.0, workers=8, api_calls=1, api_writes=1, api_latency_s=0.01,
              conflict_objects=2, duration_s=300.0, service_dist="exp")
    many = run(arrival_rate_per_s=30.0, workers=8, api_calls=1, api_writes=1,
               api_latency_s=0.01, conflict_objects=1_000_000, duration_s=300.0,
               service_dist="exp")
    assert many.api_409 < few.api_409 / 100


# --- the scraped series --------------------------------------------------------------------------

def everything(**kw: Any) -> SimResult:
    base: dict[str, Any] = {
        "arrival_rate_per_s": 12.0, "workers": 6, "api_calls": 3, "api_writes": 1,
        "api_latency_s": 0.02, "api_qps": 50.0, "apf_seats": 2, "apf_queue_limit": 3,
        "apf_background_rate_per_s": 25.0, "webhook_latency_s": 0.02, "webhook_concurrency": 2,
        "conflict_objects": 5, "duration_s": 600.0, "scrape_interval_s": 15.0,
        "service_dist": "exp", "service_mean_s": 0.05, "keys": 200}
    base.update(kw)
    return run(**base)


def test_scraped_counters_equal_the_runs_counts() -> None:
    r = everything()
    m = scraped(r)
    api, srv = m.api, m.server
    assert api is not None
    assert srv is not None
    assert r.api_429 > 0
    assert r.api_409 > 0
    assert r.api_retries > 0
    req = {k: last(v) for k, v in api.requests.items()}
    assert sum(req.values()) == r.api_attempts == last(m.counters["api_requests"])
    assert sum(v for (code, _), v in req.items() if code == "429") == r.api_429
    assert sum(v for (code, _), v in req.items() if code == "409") == r.api_409
    assert req[("200", "PUT")] == r.api_writes_ok
    assert sum(last(v) for v in api.retries.values()) == r.api_retries
    assert sum(last(v) for v in srv.request_total.values()) == r.api_attempts
    assert last(srv.apf_dispatched) == r.apf_dispatched
    assert last(srv.apf_rejected["queue-full"]) == r.apf_rejected_queue_full
    assert srv.webhook is not None
    assert last(srv.webhook.count) == r.webhook_admissions
    assert mean_of(srv.webhook) == pytest.approx(r.admission_mean_s, rel=1e-9)
    assert last(m.counters["reconcile_error"]) == r.failed
    # the wait histogram counts every request of the level, dispatched or rejected
    waits = last(srv.apf_wait["true"].count) + last(srv.apf_wait["false"].count)
    assert waits == r.apf_dispatched + r.apf_rejected_queue_full + r.apf_rejected_timeout
    # the token bucket is asked once per attempt
    assert sum(last(h.count) for h in api.limiter.values()) == r.api_calls


def test_with_the_mechanisms_off_the_series_are_the_plain_ones() -> None:
    kw: dict[str, Any] = {"arrival_rate_per_s": 8.0, "workers": 2, "api_calls": 2,
                          "api_latency_s": 0.01, "duration_s": 120.0, "scrape_interval_s": 15.0}
    plain = run(**kw)
    explicit = run(**kw, api_writes=0, apf_seats=None, webhook_latency_s=0.0,
                   conflict_objects=None, apf_background_rate_per_s=0.0)
    fields = [f for f in SimResult.__dataclass_fields__ if f != "metrics"]
    assert [getattr(explicit, f) for f in fields] == [getattr(plain, f) for f in fields]
    a, b = scraped(explicit), scraped(plain)
    for name in ("counters", "gauges"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.keys() == y.keys()
        assert all(np.array_equal(x[k], y[k]) for k in x)
    assert a.histograms.keys() == b.histograms.keys()
    for k, h in a.histograms.items():
        assert np.array_equal(h.buckets, b.histograms[k].buckets)
        assert np.array_equal(h.sum, b.histograms[k].sum)
    m = scraped(plain)
    assert m.api is None
    assert m.server is None
    fams = {f.name for f in simulated_families([("q", "p", m)], 0.0)}
    assert not {f for f in fams if f.startswith("apiserver_")}
    assert "rest_client_request_retries" not in fams


def parse(text: str) -> dict[str, Any]:
    parser = pytest.importorskip("prometheus_client.openmetrics.parser")
    return {f.name: f for f in parser.text_string_to_metric_families(text)}


def bounds(family: Any) -> set[tuple[float, ...]]:
    """The bucket bounds of each series of a histogram family."""
    per: dict[tuple[tuple[str, str], ...], list[float]] = {}
    for s in family.samples:
        if s.name.endswith("_bucket"):
            key = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
            le = float(s.labels["le"])
            if le not in per.setdefault(key, []):
                per[key].append(le)
    return {tuple(v) for v in per.values()}


def labelsets(family: Any) -> set[frozenset[str]]:
    return {frozenset(k for k in s.labels if k != "le") for s in family.samples}


@pytest.mark.parametrize("generation", ["1.36", "1.37"])
def test_openmetrics_round_trip_names_labels_and_buckets(generation: str) -> None:
    r = everything(duration_s=60.0, apf_wait_limit_s=0.1)
    families = simulated_families([("widgets", "pod-w", scraped(r))], 1704067200.0,
                                  cluster_label="cluster", apiserver_generation=generation)
    # the last scrape only: prometheus_client's parser wants a histogram's samples grouped by
    # timestamp, which a backfill file (series by series, as promtool reads it) is not
    for f in families:
        f.series[:] = [Series(s.sample, s.labels, s.values[-1:],
                              None if s.times is None else s.times[-1:]) for s in f.series]
    fams = parse(render_families(families))
    inf = (math.inf,)
    plfs = frozenset({"priority_level", "flow_schema", "job", "cluster"})
    req = frozenset({"verb", "dry_run", "group", "version", "resource", "subresource", "scope",
                     "component", "job", "cluster"})
    expected: dict[str, tuple[str, set[frozenset[str]]]] = {
        "rest_client_requests": ("counter", {frozenset({"code", "method", "host", "pod",
                                                        "cluster"})}),
        "rest_client_request_retries": ("counter", {frozenset({"code", "verb", "host", "pod",
                                                               "cluster"})}),
        "rest_client_request_duration_seconds": ("histogram", {frozenset({"verb", "host", "pod",
                                                                          "cluster"})}),
        "rest_client_rate_limiter_duration_seconds": ("histogram", {frozenset(
            {"verb", "host", "pod", "cluster"})}),
        "apiserver_flowcontrol_request_wait_duration_seconds": ("histogram",
                                                                {plfs | {"execute"}}),
        "apiserver_flowcontrol_rejected_requests": ("counter", {plfs | {"reason"}}),
        "apiserver_flowcontrol_dispatched_requests": ("counter", {plfs}),
        "apiserver_flowcontrol_current_inqueue_requests": ("gauge", {plfs}),
        "apiserver_flowcontrol_current_executing_requests": ("gauge", {plfs}),
        "apiserver_flowcontrol_current_executing_seats": ("gauge", {plfs}),
        "apiserver_flowcontrol_nominal_limit_seats": ("gauge", {plfs - {"flow_schema"}}),
        "apiserver_flowcontrol_current_limit_seats": ("gauge", {plfs - {"flow_schema"}}),
        "apiserver_request_duration_seconds": ("histogram", {req}),
        "apiserver_request_sli_duration_seconds": ("histogram", {req - {"dry_run"}}),
        "apiserver_request": ("counter", {req | {"code"}}),
        "apiserver_admission_webhook_admission_duration_seconds": ("histogram", {frozenset(
            {"name", "type", "operation", "rejected", "job", "cluster"})}),
    }
    old = {"apiserver_flowcontrol_request_concurrency_limit": ("gauge", {plfs - {"flow_schema"}}),
           "apiserver_flowcontrol_request_concurrency_in_use": ("gauge", {plfs})}
    if generation == "1.36":
        expected.update(old)
    else:
        assert not set(old) & set(fams)
    for name, (kind, labels) in expected.items():
        assert fams[name].type == kind, name
        assert labelsets(fams[name]) == labels, name
    assert bounds(fams["apiserver_flowcontrol_request_wait_duration_seconds"]) == {
        tuple(float(b) for b in APF_WAIT_BUCKETS) + inf}
    assert bounds(fams["apiserver_request_duration_seconds"]) == {
        tuple(float(b) for b in REQUEST_DURATION_BUCKETS) + inf}
    assert bounds(fams["apiserver_request_sli_duration_seconds"]) == {
        tuple(float(b) for b in REQUEST_SLI_BUCKETS) + inf}
    assert bounds(fams["apiserver_admission_webhook_admission_duration_seconds"]) == {
        tuple(float(b) for b in ADMISSION_WEBHOOK_BUCKETS) + inf}
    assert bounds(fams["rest_client_request_duration_seconds"]) == {
        tuple(float(b) for b in API_BUCKETS) + inf}
    # label values
    samples = [s for f in fams.values() for s in f.samples]
    assert all(s.labels["cluster"] == "pod-w" for s in samples)
    server = [s for s in samples if s.name.startswith("apiserver_")]
    assert all(s.labels["job"] == "apiserver" and "pod" not in s.labels for s in server)
    assert {s.labels["verb"] for s in fams["apiserver_request_duration_seconds"].samples} == {
        "GET", "PUT"}
    assert {s.labels["method"] for s in fams["rest_client_requests"].samples} == {"GET", "PUT"}
    assert {s.labels["code"] for s in fams["rest_client_requests"].samples} >= {
        "200", "409", "429"}
    assert {s.labels["reason"] for s in fams["apiserver_flowcontrol_rejected_requests"].samples
            } <= {"queue-full", "time-out"}
    hook = fams["apiserver_admission_webhook_admission_duration_seconds"].samples[0].labels
    assert (hook["type"], hook["operation"], hook["rejected"]) == ("validate", "UPDATE",
                                                                   "false")
    pl = fams["apiserver_flowcontrol_nominal_limit_seats"].samples[0]
    assert (pl.labels["priority_level"], pl.value) == ("workload-low", 2.0)
    assert fams["apiserver_flowcontrol_dispatched_requests"].samples[0].labels[
        "flow_schema"] == "service-accounts"


def test_simulated_families_refuses_ambiguous_servers_and_bad_options() -> None:
    m = scraped(everything(duration_s=30.0))
    with pytest.raises(ValueError, match="cluster_label"):
        simulated_families([("a", "pa", m), ("b", "pb", m)], 0.0)
    assert simulated_families([("a", "pa", m), ("b", "pb", m)], 0.0, cluster_label="cluster")
    with pytest.raises(ValueError, match="cluster_label"):
        simulated_families([("a", "pa", m)], 0.0, cluster_label="pod")
    with pytest.raises(ValueError, match="apiserver_generation"):
        simulated_families([("a", "pa", m)], 0.0, apiserver_generation="1.35")


# --- inputs --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("kw", "match"), [
    ({"api_calls": 1, "api_writes": 2}, "cannot exceed"),
    ({"api_calls": 1, "api_writes": -1}, "whole number"),
    ({"apf_seats": 2}, "needs API calls"),
    ({"api_calls": 1, "apf_seats": 0}, "APF seats"),
    ({"api_calls": 1, "apf_seats": 20_000}, "at most 10,000"),
    ({"api_calls": 1, "apf_seats": 1, "apf_queue_limit": -1}, "queue limit"),
    ({"api_calls": 1, "apf_seats": 1, "apf_wait_limit_s": 0.0}, "wait limit"),
    ({"api_calls": 1, "apf_background_rate_per_s": 5.0}, "need an APF"),
    ({"api_calls": 1, "apf_seats": 1, "apf_background_latency_s": 0.0}, "background latency"),
    ({"api_calls": 1, "apf_seats": 1, "apf_retry_after_s": 1.5}, "whole number of seconds"),
    ({"api_calls": 1, "apf_retry_after_s": 1.0}, "needs an APF"),
    ({"api_calls": 1, "api_max_retries": 101}, "at most 100"),
    ({"api_calls": 1, "webhook_latency_s": 0.1}, "needs API writes"),
    ({"api_calls": 1, "api_writes": 1, "webhook_concurrency": 2}, "needs a webhook latency"),
    ({"api_calls": 1, "api_writes": 1, "webhook_latency_s": 0.1, "webhook_concurrency": 0},
     "webhook concurrency"),
    ({"api_calls": 1, "conflict_objects": 3}, "need API writes"),
    ({"api_calls": 1, "api_writes": 1, "conflict_objects": 0}, "conflict objects"),
    ({"api_calls": 1, "apf_seats": 1, "apf_background_rate_per_s": 1e5,
      "duration_s": 1e4}, "background requests"),
])
def test_bad_inputs_are_one_sentence_errors(kw: dict[str, Any], match: str) -> None:
    args: dict[str, Any] = {"arrival_rate_per_s": 1.0, "workers": 1, "duration_s": 10.0}
    args.update(kw)
    with pytest.raises(ModelInputError, match=match) as err:
        run(**args)
    text = str(err.value)
    assert text.endswith(".")
    assert "\n" not in text
