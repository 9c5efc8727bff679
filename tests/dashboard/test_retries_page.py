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

import math

import dash
import pytest

from dashboard import figures
from dashboard.pages import retries
from models.errors import ModelInputError
from models.retry import seconds_over_limit

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
    assert heads["over"] == "0.04 s"
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


@pytest.mark.parametrize(("value", "text"), [(9998.333, "9,998"), (1000.0, "1,000"),
                                              (123.45, "123.5"), (32.241, "32.24"),
                                              (0.01675, "0.017"), (0.0, "0"),
                                              (math.inf, "—")])
def test_short_number(value: float, text: str) -> None:
    assert retries.short_number(value) == text


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
