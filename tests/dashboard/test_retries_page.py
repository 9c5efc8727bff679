"""The retry storm page (/retries): input checks, the numbers it shows, its figures.

The small storm below is worked out by hand from the rules (client-go
ItemExponentialFailureRateLimiter: delay = min(cap, base·2^n) with n failures before):
10 keys, base 0.1 s, cap 1 s, attempts take 0.05 s, dependency down for 1 s.
Every key fails at 0.05 (delay 0.1 → retry at 0.15), at 0.2 (0.2 → 0.4), at 0.45
(0.4 → 0.85), at 0.9 (0.8 → 1.7 > 1 s: succeeds). So 4 failures per key, 40 retries, the
recovery lag is 1.7 − 1 = 0.7 s for every key, the penalty without Forget is
min(1, 0.1·2^4) = 1 s (0.1 s with Forget), and without jitter the 10 keys retry in the same
instant: 10 requests in one 0.01 s bin = 1000 req/s, four times (0.15, 0.4, 0.85, 1.7).
"""

from __future__ import annotations

import tracemalloc

import dash
import pytest

from dashboard import figures
from dashboard.pages import retries
from models.errors import ModelInputError
from models.ratelimit import RetryPolicy
from models.retry import policy_variants, seconds_over_limit
from models.simulate import simulate

# keys, outage, base, cap, jitter, bucket, qps, burst, dependency, horizon, healthy, workers,
# service
SMALL = (10, 1, 0.1, 1, "none", False, 10, 100, 500, 10, 5, 2, 0.05)


def _view(**changes: object) -> retries.RetriesView:
    names = ("keys", "outage", "base", "cap", "jitter", "bucket", "qps", "burst", "dependency",
             "horizon", "healthy_rate", "workers", "service")
    values = dict(zip(names, SMALL, strict=True))
    values.update(changes)
    return retries.retries_view(retries.parse_inputs(*values.values()))


def test_small_storm_numbers_by_hand() -> None:
    view = _view()
    assert view.mine.name == "no jitter, no bucket"
    storm = view.mine.storm
    assert storm.failed_attempts == 40
    assert storm.failures_per_key_median == 4
    assert storm.recovery_lag_p50_s == pytest.approx(0.7)
    assert storm.recovery_lag_max_s == pytest.approx(0.7)
    assert storm.penalty_without_forget_s == pytest.approx(1.0)
    assert storm.penalty_with_forget_s == pytest.approx(0.1)
    assert storm.bin_s == pytest.approx(0.01)  # horizon / 1000
    assert storm.peak_rate_per_s == pytest.approx(1000.0)
    assert seconds_over_limit(storm, 500.0) == pytest.approx(0.04)
    heads = {key: value for key, value, _ in retries.headlines(view)}
    assert heads["peak"] == "1,000 req/s"
    assert heads["over"] == "40 ms"
    assert heads["retries"] == "40"
    assert heads["lag"] == "0.7 s / 0.7 s"
    assert heads["penalty"] == "1 s"


def test_chosen_variant_follows_jitter_and_bucket() -> None:
    assert _view(jitter="equal").mine.name == "equal jitter, no bucket"
    assert _view(bucket=True).mine.name == "no jitter, bucket"
    view = _view(jitter="decorrelated", bucket=True)
    assert view.mine.name == "decorrelated jitter, bucket"
    assert [v.name for v in view.variants][:2] == ["no jitter, no bucket",
                                                   "decorrelated jitter, no bucket"]
    # "none" still shows a jittered comparison (full jitter)
    assert _view().variants[1].name == "full jitter, no bucket"


def test_bucket_spreads_the_synchronised_retries() -> None:
    # a 2 qps bucket with burst 1 lets one retry through per 0.5 s: no 10-request bins
    view = _view(bucket=True, qps=2, burst=1)
    assert view.mine.storm.peak_rate_per_s < 1000.0 / 2
    assert view.variants[0].storm.peak_rate_per_s == pytest.approx(1000.0)


@pytest.mark.parametrize(
    ("index", "value", "needle"),
    [
        (0, None, "Enter a number for the number of failing keys."),
        (0, 0, "number of failing keys must be a positive number"),
        (0, 2.5, "whole number from 1 to 5,000"),
        (0, retries.MAX_KEYS + 1, "whole number from 1 to 5,000"),
        (1, -1, "outage length must be a positive number"),
        (2, float("nan"), "base delay"),
        (4, "gaussian", "Pick a jitter mode"),
        (7, 0, "bucket burst"),
        (8, -5, "dependency limit"),
        (11, None, "number of workers"),
        (12, "abc", "reconcile time must be a number"),
    ],
)
def test_bad_inputs_are_sentences(index: int, value: object, needle: str) -> None:
    raw = list(SMALL)
    raw[index] = value
    with pytest.raises(ModelInputError) as info:
        retries.parse_inputs(*raw)
    assert needle in str(info.value)
    assert str(info.value).endswith(".")


def test_render_keeps_charts_and_shows_the_models_sentence() -> None:
    raw = list(SMALL)
    raw[9] = 0.5  # horizon shorter than the outage
    out = retries.retries_render(*raw)
    assert all(o is dash.no_update for o in out[:6])
    assert "must be longer than the outage" in out[6]
    raw = list(SMALL)
    raw[3] = 0.01  # cap below base: the rate-limit model's own sentence
    out = retries.retries_render(*raw)
    assert "maximum delay" in out[6]
    assert "base delay" in out[6]


def test_empty_dependency_limit_means_none() -> None:
    raw = list(SMALL)
    raw[8] = None
    inputs = retries.parse_inputs(*raw)
    assert inputs.dependency_limit_per_s is None
    rate_fig = retries.figures_of(retries.retries_view(inputs))[0]
    assert not any("dependency limit" in (t.get("name") or "") for t in rate_fig["data"])


def test_render_draws_four_figures_and_the_summary() -> None:
    rate, lag, penalty, healthy, summary, policy, error = retries.retries_render(*SMALL)
    assert error == ""
    assert "Your policy: exponential 100ms → 1s." in policy
    assert len([t for t in rate["data"] if "jitter" in t["name"]]) == 4
    chosen = [t for t in rate["data"] if "(your policy)" in t["name"]]
    assert [t["name"] for t in chosen] == ["no jitter, no bucket (your policy)"]
    assert chosen[0]["line"]["width"] == 3.0
    limit = [t for t in rate["data"] if t["name"].startswith("dependency limit")]
    assert list(limit[0]["y"]) == [500, 500]
    ids = {child.children[0].id for child in summary.children}
    assert ids == {"retries-peak", "retries-over", "retries-retries", "retries-lag",
                   "retries-penalty", "retries-healthy"}
    # the penalty chart marks each variant's median failure count on the schedule
    marks = [t for t in penalty["data"] if t["mode"] == "markers"]
    assert marks[0]["x"][0] == 4
    assert marks[0]["y"][0] == pytest.approx(1.0)
    assert next(iter(healthy["data"][0]["x"])) == figures.HEALTHY_BASELINE
    assert len(lag["data"]) == 3


def test_changing_jitter_changes_the_rate_figure() -> None:
    raw = list(SMALL)
    first = retries.retries_render(*raw)[0]
    raw[4] = "equal"
    second = retries.retries_render(*raw)[0]
    assert {t["name"] for t in first["data"]} != {t["name"] for t in second["data"]}
    assert "equal jitter, no bucket (your policy)" in {t["name"] for t in second["data"]}


def test_layout_has_the_stable_ids() -> None:
    text = str(retries.layout())
    for element_id in ("retries-keys", "retries-jitter", "retries-chart", "retries-summary",
                       "retries-bucket", "retries-dependency", "retries-horizon",
                       "retries-error", "retries-lag-chart", "retries-penalty-chart",
                       "retries-healthy-chart"):
        assert f"id='{element_id}'" in text, element_id


# --- figure builders ---------------------------------------------------------------------------

def test_retry_rate_figure_log_axis_gaps_and_highlight() -> None:
    fig = figures.retry_rate_figure([0, 1, 2], [("a", [0, 5, 10]), ("b", [1, 1, 1])],
                                    outage_s=1.5, dependency_limit_per_s=4, highlight="b")
    a, b, limit = fig["data"]
    assert list(a["y"]) == [None, 5, 10]  # an empty bin is a gap, not log(0)
    assert (a["line"]["width"], b["line"]["width"]) == (1.5, 3.0)
    assert b["name"] == "b (your policy)"
    assert list(limit["x"]) == [0, 2]
    assert list(limit["y"]) == [4, 4]
    layout = fig["layout"]
    assert layout["yaxis"]["type"] == "log"
    assert "(requests/s" in layout["yaxis"]["title"]["text"]
    assert "(s)" in layout["xaxis"]["title"]["text"]
    assert layout["shapes"][0]["x1"] == 1.5  # the outage band
    assert layout["title"]["text"].endswith("?")
    with pytest.raises(ValueError, match="3 times but 2 values"):
        figures.retry_rate_figure([0, 1, 2], [("a", [1, 2])], outage_s=1)


def test_retry_lag_and_healthy_figures() -> None:
    lag = figures.retry_lag_figure(["p", "q"], [1.0, None], [2.0, None], [3.0, float("nan")])
    assert [list(t["y"]) for t in lag["data"]] == [[1.0, None], [2.0, None], [3.0, None]]
    assert "(s)" in lag["layout"]["yaxis"]["title"]["text"]
    with pytest.raises(ValueError, match="1 values for 2 variants"):
        figures.retry_lag_figure(["p", "q"], [1.0], [1.0, 2.0], [1.0, 2.0])
    healthy = figures.healthy_wait_figure(["p"], [2.0], [3.0], baseline_mean_s=0.1,
                                          baseline_p99_s=0.5)
    mean, p99 = healthy["data"]
    assert list(mean["x"]) == [figures.HEALTHY_BASELINE, "p"]
    assert list(mean["y"]) == [0.1, 2.0]
    assert list(p99["y"]) == [0.5, 3.0]
    assert healthy["layout"]["yaxis"]["type"] == "log"


def test_backoff_penalty_figure() -> None:
    fig = figures.backoff_penalty_figure([0, 1, 2], [0.1, 0.2, 0.4], [("v", 2, 0.4)],
                                         base_s=0.1)
    schedule, mark, base = fig["data"]
    assert list(schedule["y"]) == [0.1, 0.2, 0.4]
    assert (mark["x"][0], mark["y"][0]) == (2, 0.4)
    assert "n = 2" in mark["name"]
    assert list(base["y"]) == [0.1, 0.1]
    assert "Forget" in base["name"]
    assert fig["layout"]["yaxis"]["type"] == "log"
    assert "count" in fig["layout"]["xaxis"]["title"]["text"]


# --- issue 12: the long outage, and the work bounded by an event budget ------------------------

def _inputs(**changes: object) -> retries.RetriesInputs:
    names = ("keys", "outage", "base", "cap", "jitter", "bucket", "qps", "burst", "dependency",
             "horizon", "healthy_rate", "workers", "service")
    values = dict(zip(names, SMALL, strict=True))
    values.update(changes)
    return retries.parse_inputs(*values.values())


def test_a_900_s_outage_with_a_1_s_cap_is_shown_not_a_500() -> None:
    # issue 12 item 4: cap 1 s, outage 900 s → past 1,024 failures of one key → OverflowError
    view = _view(keys=1000, outage=900, base=0.005, cap=1, horizon=9000, healthy_rate=20)
    plain, jittered = view.variants[0].storm, view.variants[1].storm
    assert plain.failures_per_key_median == 864  # 8 doublings to 1 s, then one per 1.05 s
    assert jittered.failures_per_key_median > 1024
    penalty = retries.figures_of(view)[2]
    # the schedule is flat from the cap on: its step line needs n = 0 … n_cap + 2 and the end
    schedule = penalty["data"][0]
    assert len(schedule["x"]) <= 8 + 2 + 2
    assert schedule["x"][-1] == int(jittered.failures_per_key_median) + 1
    assert retries.retries_render(1000, 900, 0.005, 1, "none", False, 10, 100, 500, 9000, 20,
                                  2, 0.05)[-1] == ""


def test_healthy_simulations_over_the_budget_are_refused_before_running() -> None:
    # 8 runs of 2e6-event simulations (20/s over 100,000 s): above the 4,000,000-event budget
    inputs = _inputs(outage=100_000, horizon=200_000, healthy_rate=20)
    with pytest.raises(ModelInputError, match="budget of 4,000,000 for one change") as exc:
        retries.retries_view(inputs)
    estimate = retries.simulation_events(inputs, policy_variants(RetryPolicy(base_s=0.1,
                                                                             cap_s=1)))
    assert f"would simulate about {estimate:,.0f} events" in str(exc.value)
    assert estimate >= 8 * 2 * 20 * 100_000  # each run's arrivals and their completions
    assert "`queuelens retries`" in str(exc.value)
    # the size: 8 runs of up to 5e8 events each
    with pytest.raises(ModelInputError, match="budget"):
        retries.retries_view(_inputs(outage=5e4, horizon=1e5, healthy_rate=1e4))


def test_storms_over_what_the_budget_leaves_stop_with_a_sentence() -> None:
    # 5,000 keys with full jitter at a 1 ns base and cap: a failure every attempt time (0.05 s)
    # for an hour is 720 million storm steps; the simulations alone are within their budget
    inputs = _inputs(keys=5000, outage=3600, horizon=36000, base=1e-9, cap=1e-9, jitter="full",
                     healthy_rate=0.01, workers=1, service=1)
    pairs = policy_variants(RetryPolicy(base_s=1e-9, cap_s=1e-9, jitter="full",
                                        global_qps=10, burst=100))
    assert retries.simulation_events(inputs, pairs) < retries.MAX_EVENTS
    with pytest.raises(ModelInputError, match="four storms need more than the page's budget "
                                              "of 30,000,000 failures and retries"):
        retries.retries_view(inputs)


@pytest.mark.parametrize("changes", [
    {},
    {"keys": 200, "outage": 300, "horizon": 3000, "healthy_rate": 5, "cap": 1},
    {"keys": 50, "outage": 300, "horizon": 3000, "workers": 50, "base": 0.001, "cap": 0.01},
    {"keys": 50, "outage": 300, "horizon": 3000, "workers": 50, "base": 0.001, "cap": 0.5,
     "jitter": "decorrelated"},
    {"keys": 100, "outage": 120, "horizon": 1200, "workers": 4, "base": 0.01, "cap": 2,
     "jitter": "equal", "service": 0.01},
])
def test_the_event_estimate_is_from_above(changes: dict[str, object]) -> None:
    # the simulations exactly as healthy_impact runs them, counted by the simulator itself
    inputs = _inputs(**changes)
    policy = RetryPolicy(base_s=inputs.base_s, cap_s=inputs.cap_s,
                         jitter=inputs.jitter,  # type: ignore[arg-type]
                         global_qps=inputs.qps, burst=inputs.burst)
    pool = 1_000_000_000
    lam = inputs.healthy_rate_per_s * (inputs.keys + pool) / pool
    for name, pol in policy_variants(policy):
        common = {"arrival_rate_per_s": lam, "keys": inputs.keys + pool,
                  "workers": inputs.workers, "service_mean_s": inputs.service_mean_s,
                  "duration_s": inputs.outage_s, "failing_keys": inputs.keys, "retry": pol}
        storm = simulate(**common, fail_prob=1.0, fail_window_s=(0.0, inputs.outage_s),
                         initial_burst=True)
        base = simulate(**common, fail_prob=0.0)
        assert storm.events + base.events <= retries.simulation_events(inputs, ((name, pol),))


def test_a_computation_near_the_budget_stays_small_in_memory() -> None:
    inputs = _inputs(keys=5000, outage=600, horizon=6000, healthy_rate=300, workers=100,
                     service=0.01, cap=1000, base=0.005)
    pairs = policy_variants(RetryPolicy(base_s=0.005, cap_s=1000, global_qps=10, burst=100))
    assert 3e6 < retries.simulation_events(inputs, pairs) <= retries.MAX_EVENTS
    retries.retries_view(inputs)  # compiled loops loaded, outside the measurement
    tracemalloc.start()
    try:
        retries.retries_view(inputs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20  # one wait per pass kept by the simulator: ≤ 8 bytes an event


@pytest.mark.parametrize(("index", "value"), [(2, 1e-300), (3, 1e300), (2, 1e-10), (3, 2e9)])
def test_delays_outside_a_nanosecond_to_1e9_s_are_sentences(index: int, value: float) -> None:
    raw = list(SMALL)
    raw[index] = value
    if index == 3:
        raw[2] = 1e-9
    with pytest.raises(ModelInputError, match="from 1e-09 s"):
        retries.parse_inputs(*raw)


def test_the_page_and_the_cli_give_one_peak_for_one_storm(
        capsys: pytest.CaptureFixture[str]) -> None:
    # the defaults of both surfaces (issue 21: 8,333 on the page against 2,459 in the CLI,
    # from two default horizons and bins of horizon / 1000)
    import json

    from dashboard.cli import main

    d = retries.DEFAULTS
    view = retries.retries_view(retries.parse_inputs(
        d["keys"], d["outage_s"], d["base_s"], d["cap_s"], d["jitter"], d["bucket"], d["qps"],
        d["burst"], d["dependency_limit_per_s"], d["horizon_s"], d["healthy_rate_per_s"],
        d["workers"], d["service_mean_s"]))
    assert main(["retries", "--keys", str(d["keys"]), "--outage", f"{d['outage_s']:g}s",
                 "--retry", f"exp:{d['base_s']:g}:{d['cap_s']:g}", "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)["variants"][0]
    assert view.mine.storm.bin_s == cli["storm"]["bin_s"]
    assert view.mine.storm.peak_rate_per_s == pytest.approx(cli["storm"]["peak_rate_per_s"],
                                                            rel=1e-9)
