"""Check the change (models.change), from the mechanism.

Two controllers are simulated by mechanism (``models.simulate`` with a ``WorkerSchedule``:
the count changes halfway through 2 h, independent exponential 0.1 s passes), scraped every
15 s as controller-runtime exposes them, backfilled into a REAL Prometheus and read back by
the collectors' range read — the history ``advise`` would judge. What the queue really
waited after the change comes from the simulator itself: a run of the same seed that measures
only the passes started after a time (``warmup_s``), with no scrape, no PromQL, no window.

* ``independent``: c 2 → 4 at λ = 19/s (ρ 0.95 → 0.475): the issue's situation, where the
  windows reaching back across the change made the "observed" wait several times the truth;
* ``backlog``: c 1 → 4 at λ = 12/s, above one worker's 10/s: an hour's backlog (~7000 items)
  built before the change drains at 4 workers first.

The last tests are the rule on small histories written out by hand (instants, window 0).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt
import pytest

from collectors.config import ConnectionSettings
from collectors.openmetrics import simulated_families, write_families
from collectors.prom_client import PrometheusClient
from collectors.snapshot import PrometheusSource
from dashboard.advice import HISTORY_SIGNALS, advise_fleet, histories_from_range
from models.advisor import QueueHistory
from models.change import CHANGE_MIN_POINTS, ChangeCheck, check_change, point_window_s
from models.errors import ModelInputError
from models.load import WorkerSchedule
from models.scrape import ScrapedMetrics
from models.settings import AnalysisSettings
from models.simulate import SimResult, simulate
from tests.support.prometheus import PrometheusProcess, backfill_file, start_prometheus

START = 1704067200  # 2024-01-01T00:00:00Z, a multiple of 7200: one backfill block
DURATION_S = 7200.0
CHANGE_S = 3600.0
STEP_S = 60.0
SCRAPE_S = 15.0
SERVICE_S = 0.1
SEED = 1
CASES: dict[str, tuple[float, tuple[int, int]]] = {
    "independent": (19.0, (2, 4)),
    "backlog": (12.0, (1, 4)),
}
"""queue -> (demand /s, (workers before, after))."""
WINDOW_S = max(STEP_S + SCRAPE_S, 4 * SCRAPE_S)
"""The range read's rate window at a 60 s step over a 15 s scrape (Grafana's
$__rate_interval: step + scrape, at least 4 scrapes), written out."""


def _run(queue: str, warmup_s: float = 0.0) -> SimResult:
    lam, (before, after) = CASES[queue]
    return simulate(arrival_rate_per_s=lam, keys=1_000_000,
                    workers=WorkerSchedule((0.0, CHANGE_S), (before, after)),
                    service_mean_s=SERVICE_S, duration_s=DURATION_S, seed=SEED,
                    scrape_interval_s=SCRAPE_S, warmup_s=warmup_s)


@pytest.fixture(scope="module")
def runs() -> dict[str, SimResult]:
    return {q: _run(q) for q in CASES}


def _metrics(r: SimResult) -> ScrapedMetrics:
    assert r.metrics is not None
    return r.metrics


def _true_wait_after(queue: str, runs: dict[str, SimResult], after_s: float) -> float:
    """The mean wait of the passes the simulator started after ``after_s`` (same seed: the
    very run that was scraped, which the identical counters prove)."""
    r = _run(queue, warmup_s=after_s)
    assert np.array_equal(_metrics(r).counters["adds"], _metrics(runs[queue]).counters["adds"])
    assert r.wait_mean_s is not None
    return r.wait_mean_s


@pytest.fixture(scope="module")
def prometheus(runs: dict[str, SimResult], tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[PrometheusProcess]:
    work = tmp_path_factory.mktemp("change")
    om = work / "change.om"
    with om.open("w") as out:
        write_families(out, simulated_families(
            [(q, f"pod-{q}", _metrics(r)) for q, r in runs.items()], float(START)))
    server = start_prometheus(work / "prom", tsdb=backfill_file(om, work))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def source(prometheus: PrometheusProcess) -> PrometheusSource:
    return PrometheusSource(PrometheusClient(ConnectionSettings(url=prometheus.url,
                                                                timeout_s=10)))


def _read(source: PrometheusSource, queue: str, end_s: float = DURATION_S) -> QueueHistory:
    """The queue's 2 h history ending ``end_s`` into the run, as ``advise`` reads it."""
    end = START + end_s
    rng = source.range(end - 7200, end, STEP_S, [queue], HISTORY_SIGNALS)
    return histories_from_range(rng)[queue]


def _after(h: QueueHistory, workers: int) -> npt.NDArray[np.bool_]:
    """Every point at the new count from the change on (what the check used to average)."""
    out: npt.NDArray[np.bool_] = (h.workers == workers) & (h.t_s >= START + CHANGE_S)
    return out


def _check(h: QueueHistory) -> ChangeCheck:
    change = check_change(h, window_s=WINDOW_S)
    assert change is not None
    return change


@pytest.mark.prometheus
def test_the_read_windows_are_the_ones_the_check_is_given(source: PrometheusSource) -> None:
    assert source.range_window_s(STEP_S, SCRAPE_S) == WINDOW_S == 75.0
    # the plan's bound covers it (any scrape up to the step and a quarter of the window)
    assert point_window_s(AnalysisSettings()) >= WINDOW_S


@pytest.mark.prometheus
def test_after_points_leave_out_the_windows_across_the_change(
        source: PrometheusSource, runs: dict[str, SimResult]) -> None:
    h = _read(source, "independent")
    change = _check(h)
    assert (change.workers_before, change.workers_after, change.status) == (2, 4, "checked")
    assert change.at == START + CHANGE_S  # the gauge sampled at the change reads the new count
    # the after points: at 4 workers, window (t − 75 s, t] wholly after the change
    new = _after(h, 4)
    assert change.points_after == np.count_nonzero(new & (h.t_s - WINDOW_S >= change.at))
    assert change.straddling_after == 2  # t = change and change + 60 s reach back before it
    old = (h.workers == 2) & (h.t_s <= change.last_before_at - WINDOW_S)
    assert change.points_before == np.count_nonzero(old) >= 50
    assert change.drain_points == 0  # ~18 items at 4 workers are gone within a second
    true_wait = _true_wait_after("independent", runs, CHANGE_S)
    # the straddling windows mixed in (the old check): several times the truth ...
    mixed = float(np.nanmean(h.queue_wait_mean_s[new]))
    assert mixed > 3 * true_wait
    # ... the clean after points: the queue's own wait at 4 workers
    assert change.observed_wait_mean_s is not None
    assert change.observed_wait_mean_s == pytest.approx(true_wait, rel=0.3)
    # and the plan from before was right: M/M/4 at the demand after, the work time before
    assert change.predicted_wait_mean_s is not None
    assert change.predicted_wait_mean_s == pytest.approx(true_wait, rel=0.3)
    assert change.observed_throughput_per_s == pytest.approx(19.0, rel=0.05)


@pytest.mark.prometheus
def test_a_backlog_from_before_the_change_is_a_drain_reported_apart(
        source: PrometheusSource, runs: dict[str, SimResult]) -> None:
    h = _read(source, "backlog")
    change = _check(h)
    assert (change.workers_before, change.workers_after, change.status) == (1, 4, "checked")
    m = _metrics(runs["backlog"])
    depth = m.gauges["depth"]
    # the backlog the new count inherited, from the simulator's own depth at the scrapes of
    # the last point's window (the point reads their mean)
    last = (m.t_s > change.last_before_at - START - WINDOW_S) & (
        m.t_s <= change.last_before_at - START)
    assert change.depth_at_change is not None
    assert change.depth_at_change == pytest.approx(float(depth[last].mean()), rel=0.05)
    assert change.depth_at_change > 5000
    # when the simulated queue was empty again (its depth back to a few items)
    after = m.t_s >= CHANGE_S
    emptied_s = float(m.t_s[after][np.flatnonzero(depth[after] <= 3)[0]])
    assert change.drain_points >= 1
    assert change.drain_s is not None
    # the last draining point's window still held the backlog; the next one's did not
    assert change.at + change.drain_s - WINDOW_S < START + emptied_s <= \
        change.at + change.drain_s + STEP_S
    # the steady figures leave the drain out: throughput is the demand, not 4 workers' 40/s
    assert change.observed_throughput_per_s == pytest.approx(12.0, rel=0.05)
    true_wait = _true_wait_after("backlog", runs, emptied_s + WINDOW_S)
    assert change.observed_wait_mean_s is not None
    assert change.observed_wait_mean_s == pytest.approx(true_wait, rel=0.5)
    mixed = float(np.nanmean(h.queue_wait_mean_s[_after(h, 4)]))
    assert mixed > 100 * true_wait  # averaged in, the drain's minutes of wait swamp it


@pytest.mark.prometheus
def test_a_history_ending_soon_after_the_change_says_the_after_is_too_short(
        source: PrometheusSource) -> None:
    end_s = CHANGE_S + 240  # four steps after the change
    h = _read(source, "independent", end_s)
    change = _check(h)
    assert change.status == "after_too_short"
    # the clean points: windows from the change on, up to the end: 3720, 3780, 3840 s
    assert change.points_after == 3 < CHANGE_MIN_POINTS
    assert change.wait_more_s == (CHANGE_MIN_POINTS - 3) * STEP_S
    # still draining: the 1 → 4 queue's backlog outlasts the history
    b = _check(_read(source, "backlog", end_s))
    assert b.status == "draining"
    assert b.points_after == 0
    assert b.drain_points == 3
    assert b.observed_wait_mean_s is None  # no steady point: nothing to compare yet
    assert b.wait_more_s is not None
    assert b.wait_more_s > (CHANGE_MIN_POINTS - 1) * STEP_S


@pytest.mark.prometheus
def test_the_plan_checks_the_change_of_its_own_range_read(
        source: PrometheusSource, runs: dict[str, SimResult]) -> None:
    settings = AnalysisSettings()
    advice = advise_fleet(source, START + DURATION_S, settings, "independent")
    plan = advice.plan("independent")
    assert plan is not None
    change = plan.change
    assert change is not None
    assert change.window_s == point_window_s(settings) == 300.0
    # a wider window than the read's 75 s only leaves out more points
    assert change.straddling_after == 5
    assert change.observed_wait_mean_s is not None
    assert change.observed_wait_mean_s == pytest.approx(
        _true_wait_after("independent", runs, CHANGE_S), rel=0.3)
    payload = plan.payload()["change"]
    assert payload["points_after"] == change.points_after
    assert payload["status"] == "checked"
    assert payload["drain_points"] == 0


# --- the rule on histories written out by hand (points read as instants) -------------------


def _erlang_c_wait(lam: float, mu: float, c: int) -> float:
    """Mean wait of M/M/c from the textbook sums (Kleinrock vol. 1, eq. 3.40), written out."""
    a = lam / mu
    tail = a**c / math.factorial(c) / (1 - a / c)
    p0 = 1.0 / (sum(a**k / math.factorial(k) for k in range(c)) + tail)
    return tail * p0 / (c * mu - lam)


def _history(c_before: int, c_after: int, lam: float, svc: float, n: int = 8,
             n_after: int | None = None) -> QueueHistory:
    m = n if n_after is None else n_after
    t = np.arange(n + m, dtype=float) * 60.0
    workers = np.array([c_before] * n + [c_after] * m, dtype=float)
    wait_after = _erlang_c_wait(lam, 1 / svc, c_after) if lam < c_after / svc else 1.0
    return QueueHistory.from_columns(
        t, arrival_rate_per_s=np.full(n + m, lam), throughput_per_s=np.full(n + m, lam),
        service_mean_s=np.full(n + m, svc), workers=workers,
        queue_wait_mean_s=np.array([np.nan] * n + [wait_after] * m))


def test_check_change_predicts_the_new_count_from_the_points_before() -> None:
    change = check_change(_history(2, 3, lam=3.0, svc=0.5))
    assert change is not None
    assert (change.workers_before, change.workers_after) == (2, 3)
    assert change.at == 8 * 60.0
    assert change.points_before == change.points_after == 8
    assert change.status == "checked"
    assert change.predicted_throughput_per_s == pytest.approx(3.0)
    # M/M/3 at λ = 3, μ = 2 (a = 1.5): the textbook mean wait
    assert change.predicted_wait_mean_s == pytest.approx(_erlang_c_wait(3.0, 2.0, 3))
    assert change.observed_wait_mean_s == pytest.approx(change.predicted_wait_mean_s)


def test_check_change_to_too_few_workers_predicts_saturation() -> None:
    change = check_change(_history(4, 1, lam=3.0, svc=0.5))
    assert change is not None
    assert change.predicted_throughput_per_s == pytest.approx(2.0)  # capacity 1 / 0.5 s
    assert change.predicted_wait_mean_s is None  # unstable: no steady-state wait


def test_check_change_needs_enough_points_before_and_waits_for_the_after() -> None:
    # too few points before: never silent — the check says there is no plan from before,
    # what the after side measured, and how much further back a range must reach
    early = check_change(_history(2, 3, 3.0, 0.5, n=CHANGE_MIN_POINTS - 2))
    assert early is not None
    assert early.status == "before_too_short"
    assert early.predicted_throughput_per_s is None
    assert early.observed_throughput_per_s == pytest.approx(3.0)
    assert early.range_more_s == pytest.approx(2 * 60.0)
    assert check_change(None) is None
    assert check_change(_history(2, 2, 3.0, 0.5)) is None  # no change
    short = check_change(_history(2, 3, 3.0, 0.5, n_after=2))
    assert short is not None
    assert (short.status, short.points_after) == ("after_too_short", 2)
    assert short.wait_more_s == (CHANGE_MIN_POINTS - 2) * 60.0


def test_a_window_leaves_out_the_points_that_reach_across() -> None:
    # 2-step windows: the first two points at the new count reach back before it, the last
    # two at the old count may reach past the change (it lies after a sample in their window)
    change = check_change(_history(2, 3, 3.0, 0.5, n=10), window_s=120.0)
    assert change is not None
    assert (change.points_before, change.straddling_before) == (8, 2)
    assert (change.points_after, change.straddling_after) == (8, 2)
    with pytest.raises(ModelInputError, match="rate window"):
        check_change(_history(2, 3, 3.0, 0.5), window_s=-1.0)


def test_the_prediction_is_pluggable() -> None:
    calls: list[tuple[int, float, float]] = []

    def ceiling(c: int, lam: float, svc: float) -> tuple[float, float | None]:
        calls.append((c, lam, svc))
        return min(lam, 2.5), 0.25

    predict: Callable[[int, float, float], tuple[float, float | None]] = ceiling
    change = check_change(_history(2, 3, 3.0, 0.5), predict=predict)
    assert change is not None
    assert calls == [(3, 3.0, 0.5)]  # the new count, the demand after, the work time before
    assert (change.predicted_throughput_per_s, change.predicted_wait_mean_s) == (2.5, 0.25)
    with pytest.raises(ModelInputError, match="prediction"):
        check_change(_history(2, 3, 3.0, 0.5), predict=lambda c, lam, s: (math.nan, None))


def test_the_change_check_is_still_exported_by_the_plan() -> None:
    from models import plan

    assert plan.check_change is check_change
    assert plan.ChangeCheck is ChangeCheck
    assert plan.CHANGE_MIN_POINTS == CHANGE_MIN_POINTS

