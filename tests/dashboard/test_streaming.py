"""The overview's streaming cold start (issue 22 §2, ``dashboard.streaming``): batches keep a
process's queues together, the job publishes its progress batch by batch, a second poll joins
the running job, cancel, the deadline and an abandoned job stop it, and the streamed rows are
the one-shot read's — on the demo and on a real Prometheus."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from collectors.cache import CachedSource
from collectors.config import ConnectionSettings
from collectors.demo import DemoSource
from collectors.errors import ConfigError
from collectors.profile import Profile
from collectors.prom_client import PrometheusClient
from collectors.snapshot import PrometheusSource
from dashboard.advice import HISTORY_SIGNALS, process_totals
from dashboard.context import AppContext
from dashboard.pages import overview as ov
from dashboard.streaming import ColdStart, Progress, StreamSettings, process_batches
from models.formatting import progress_text
from tests.support.equality import assert_same_range
from tests.support.prometheus import PrometheusProcess
from tests.support.slow_source import SlowBatches
from tests.support.workqueue_om import AT as PROM_AT
from tests.support.workqueue_om import JOB_A, WEIRD, WEIRD_WORKERS_FROM_CONFIG

DEMO_AT = 1_581_343_200.0
SIGNALS = HISTORY_SIGNALS | set(ov.SPARK_SIGNALS)


def _cold(ctx: AppContext, **stream: Any) -> ColdStart:
    assert isinstance(ctx.source, CachedSource)
    return ColdStart(ctx.source, ctx.settings, StreamSettings(**stream), retry_s=60.0)


def _run(cold: ColdStart, ctx: AppContext, at: float, timeout_s: float = 60.0,
         seen: Callable[[Progress], None] | None = None) -> Progress:
    """Poll as a page does until the job ends; ``seen`` gets every poll's progress."""
    deadline = time.monotonic() + timeout_s
    while True:
        p = cold.poll(at, SIGNALS, ov._plan(ctx))
        assert p is not None, "the cold start did not stream"
        if seen is not None:
            seen(p)
        if not p.running:
            return p
        assert time.monotonic() < deadline, f"still streaming after {timeout_s} s: {p.text()}"
        time.sleep(0.02)


# --- batches ----------------------------------------------------------------------------


def test_batches_keep_each_process_whole_and_follow_the_listing() -> None:
    listing = {"a1": ["p=a"], "b1": ["p=b"], "a2": ["p=a"], "c1": ["p=c"], "lone": [],
               "b2": ["p=b", "p=d"], "d1": ["p=d"], "e1": ["p=e"]}
    got = process_batches(listing, 3)
    assert sorted(q for b in got for q in b) == sorted(listing)
    where = {q: i for i, b in enumerate(got) for q in b}
    assert where["a1"] == where["a2"]
    # b2 runs in p=b and p=d: b1, b2 and d1 are one group (never split)
    assert where["b1"] == where["b2"] == where["d1"]
    assert got[0] == ["a1", "a2"]  # a's group, then b's group (3) does not fit: next batch
    assert got[1] == ["b1", "b2", "d1"]
    assert got[2] == ["c1", "lone", "e1"]


def test_a_process_larger_than_a_batch_is_one_batch() -> None:
    listing = {f"q{i}": ["p=big"] for i in range(7)} | {"x": ["p=x"]}
    got = process_batches(listing, 3)
    assert got == [[f"q{i}" for i in range(7)], ["x"]]
    with pytest.raises(ValueError, match="at least one queue"):
        process_batches(listing, 0)


def test_the_first_batch_is_small_and_the_next_ones_double() -> None:
    listing = {f"q{i:03d}": [f"p={i}"] for i in range(100)}
    got = process_batches(listing, 40, first=5)
    assert [len(b) for b in got] == [5, 10, 20, 40, 25]
    assert [q for b in got for q in b] == list(listing)


def test_progress_line_is_the_one_formatter() -> None:
    assert progress_text("Reading queues", 2500, 10000, 40.4) == \
        "Reading queues: 2,500 of 10,000 — about 40 s left"
    assert progress_text("Reading queues", 0, 10000) == "Reading queues: 0 of 10,000"
    assert progress_text("Reading queues", 10000, 10000, 3.0) == \
        "Reading queues: 10,000 of 10,000"


def test_settings_from_the_environment_say_what_is_wrong() -> None:
    s = StreamSettings.from_env({"QUEUELENS_STREAM_ABOVE": "0", "QUEUELENS_STREAM_BATCH": "40",
                                 "QUEUELENS_STREAM_DEADLINE": "2m"})
    assert (s.above_queues, s.batch_queues, s.deadline_s) == (0, 40, 120.0)
    with pytest.raises(ConfigError, match="QUEUELENS_STREAM_BATCH"):
        StreamSettings.from_env({"QUEUELENS_STREAM_BATCH": "many"})
    with pytest.raises(ConfigError, match="batch must hold 1 to 2,000"):
        StreamSettings.from_env({"QUEUELENS_STREAM_BATCH": "5000"})


# --- the job on the demo ------------------------------------------------------------------


def test_streamed_rows_are_the_one_shot_reads_and_land_in_the_cache() -> None:
    ctx = AppContext(source=CachedSource(DemoSource(seed=0, queues=120)), at=DEMO_AT)
    cold = _cold(ctx, above_queues=10, batch_queues=25)
    polls: list[Progress] = []
    p = _run(cold, ctx, DEMO_AT, seen=polls.append)
    assert p.finished, p.text()
    assert p.error is None
    # progress: queues read only grow, the estimate appears with the first batch
    done = [q.done for q in polls]
    assert done == sorted(done)
    assert done[-1] == 120
    assert p.total == 120
    partial = [q for q in polls if q.running and q.batches]
    assert partial, "no poll saw a partial result"
    assert all(q.left_s is not None for q in partial)
    assert "Reading queues: " in partial[0].text()
    assert " of 120" in partial[0].text()
    # every batch keeps its processes whole: its process totals are the fleet's
    one_shot = ctx.source.source.snapshot(DEMO_AT, ctx.window_s)  # type: ignore[union-attr]
    fleet = process_totals(one_shot.queues)
    landed = {b.index: b for q in polls for b in q.batches}
    assert len(landed) > 2
    assert p.batches == ()  # the batches' reads are dropped: the merged read holds them
    for b in landed.values():
        for key, totals in process_totals(b.snapshot.queues).items():
            assert totals == fleet[key]
    # the streamed grid is the one-shot grid, row for row
    view = ov.stream_view(p, ctx.settings)
    fresh = AppContext(source=CachedSource(DemoSource(seed=0, queues=120)), at=DEMO_AT)
    rows, summary, _ = ov.load_overview(fresh)
    assert view.rows == rows
    assert view.summary == summary
    assert not view.progress
    # the whole result is in the cache as a normal read: the next refresh reads nothing
    assert isinstance(ctx.source, CachedSource)
    before = ctx.source.fetches
    again, _, _ = ov.load_overview(ctx)
    assert ctx.source.fetches == before
    assert again == rows


def test_partial_figures_say_they_are_partial() -> None:
    slow = SlowBatches(DemoSource(seed=0, queues=60), delay_s=0.4)
    ctx = AppContext(source=CachedSource(slow), at=DEMO_AT)
    cold = _cold(ctx, above_queues=10, batch_queues=20, in_flight=1)
    partial: list[Progress] = []
    p = _run(cold, ctx, DEMO_AT,
             seen=lambda q: partial.append(q) if q.running and q.batches else None)
    assert p.finished
    view = ov.stream_view(partial[0], ctx.settings)
    assert view.summary.startswith("Partial: 20 of 60 queues read so far")
    assert "Partial: the peak of the 20 queues read so far" in view.scale
    assert len(view.rows) == 20
    assert view.progress.startswith("Reading queues: 20 of 60 — about ")


def test_a_second_poll_joins_the_running_job() -> None:
    slow = SlowBatches(DemoSource(seed=0, queues=60), delay_s=0.3)
    ctx = AppContext(source=CachedSource(slow), at=DEMO_AT)
    cold = _cold(ctx, above_queues=10, batch_queues=20)
    first = cold.poll(DEMO_AT, SIGNALS, ov._plan(ctx))
    second = cold.poll(DEMO_AT + 7, SIGNALS, ov._plan(ctx))  # another tab, a moment later
    assert first is not None
    assert second is not None
    assert first.job == second.job
    p = _run(cold, ctx, DEMO_AT)
    assert p.job == first.job
    assert p.finished
    batches = process_batches(DemoSource(seed=0, queues=60).queue_processes(DEMO_AT, 1.0), 20)
    assert slow.batch_reads == 2 * len(batches)  # one snapshot and one range per batch


def test_small_fleets_are_read_in_one_go() -> None:
    ctx = AppContext(source=CachedSource(DemoSource(seed=0)), at=DEMO_AT)
    cold = _cold(ctx, above_queues=500)
    assert cold.poll(DEMO_AT, SIGNALS, ov._plan(ctx)) is None
    job = cold.job
    assert job is not None
    assert job.progress().total == len(DemoSource(seed=0).queue_names)


def test_cancel_stops_between_batches() -> None:
    slow = SlowBatches(DemoSource(seed=0, queues=100), delay_s=0.3)
    ctx = AppContext(source=CachedSource(slow), at=DEMO_AT)
    cold = _cold(ctx, above_queues=10, batch_queues=10, in_flight=1)
    p = cold.poll(DEMO_AT, SIGNALS, ov._plan(ctx))
    assert p is not None
    assert p.running
    cold.cancel()
    job = cold.job
    assert job is not None
    assert job.join(10)
    p = job.progress()
    assert not p.finished
    assert p.error is not None
    assert "cancelled" in p.error
    assert p.done < 100
    assert "stopped" in p.text()
    assert isinstance(ctx.source, CachedSource)
    assert not ctx.source.holds(ctx.window_s, DEMO_AT - ctx.settings.range_s, DEMO_AT,
                                ctx.settings.step_s, SIGNALS)


def test_the_deadline_stops_the_job_and_says_whose_budget() -> None:
    slow = SlowBatches(DemoSource(seed=0, queues=100), delay_s=0.4)
    ctx = AppContext(source=CachedSource(slow), at=DEMO_AT)
    cold = _cold(ctx, above_queues=10, batch_queues=10, deadline_s=1.0)
    p = _run(cold, ctx, DEMO_AT)
    assert p.error is not None
    assert not p.finished
    assert "budget of the overview's cold start" in p.error
    assert "QUEUELENS_STREAM_DEADLINE" in p.error
    assert 0 < p.done < 100  # the batches read in time are kept


def test_a_job_nobody_watches_is_abandoned() -> None:
    slow = SlowBatches(DemoSource(seed=0, queues=100), delay_s=0.3)
    ctx = AppContext(source=CachedSource(slow), at=DEMO_AT)
    cold = _cold(ctx, above_queues=10, batch_queues=10, abandon_s=0.5)
    assert cold.poll(DEMO_AT, SIGNALS, ov._plan(ctx)) is not None
    job = cold.job
    assert job is not None
    assert job.join(10)
    assert "nobody has looked at it" in (job.progress().error or "")


# --- the job on a real Prometheus --------------------------------------------------------


def _prom(url: str, profile: Profile, clock: list[float] | None = None) -> CachedSource:
    """A cache on a Prometheus source; ``clock``: the cache's monotonic clock (moved by
    the test)."""
    monotonic = (lambda: clock[0]) if clock is not None else time.monotonic
    return CachedSource(PrometheusSource(
        PrometheusClient(ConnectionSettings(url=url, timeout_s=20)), profile),
        monotonic=monotonic)


@pytest.mark.prometheus
def test_streamed_rows_equal_the_one_shot_read_on_prometheus(
        backfilled_prometheus: PrometheusProcess) -> None:
    profile = Profile(workers={WEIRD: WEIRD_WORKERS_FROM_CONFIG})
    clock = [0.0]
    ctx = AppContext(source=_prom(backfilled_prometheus.url, profile, clock), at=PROM_AT)
    cold = _cold(ctx, above_queues=0, batch_queues=2)
    polls: list[Progress] = []
    p = _run(cold, ctx, PROM_AT, seen=polls.append)
    assert p.finished, p.text()
    # controller-a runs five of the six queues: they are read in one batch
    assert isinstance(ctx.source, CachedSource)
    s = ctx.settings
    listing = ctx.source.source.queue_processes(  # type: ignore[attr-defined]
        PROM_AT, s.range_s + s.step_s + s.window_s)
    batches = process_batches(listing, 2)
    a_queues = [q for q, procs in listing.items() if any(JOB_A in p for p in procs)]
    assert len(a_queues) == 5
    assert len(batches) == 2
    assert sorted(a_queues) in [sorted(b) for b in batches]
    fresh = AppContext(source=_prom(backfilled_prometheus.url, profile), at=PROM_AT)
    rows, summary, _ = ov.load_overview(fresh)
    view = ov.stream_view(p, ctx.settings)
    assert view.rows == rows
    assert view.summary == summary
    # the merged range read is the whole-fleet read the cache would have made
    assert isinstance(ctx.source, CachedSource)
    assert isinstance(fresh.source, CachedSource)
    assert p.data is not None
    assert p.snapshot is not None
    whole = fresh.source.source.range(PROM_AT - ctx.settings.range_s, PROM_AT,
                                      ctx.settings.step_s, None, SIGNALS)
    assert_same_range(p.data, whole, atol=0.0)  # warnings and scrape-gap mask too
    assert whole.gap is not None  # the endpoints queue's scrape gap, counted once
    # a refresh a step later, the cache's entries expired: the normal path, which extends
    # the streamed range read with the new step only
    clock[0] += 3600.0
    later = AppContext(source=ctx.source, at=PROM_AT + ctx.settings.step_s)
    assert cold.poll(later.now(), SIGNALS, ov._plan(later)) is not None  # its own result
    cold.retry_s = 0.0
    assert cold.poll(later.now(), SIGNALS, ov._plan(later)) is None  # the cache holds it
    rows_later, _, _ = ov.load_overview(later)
    assert ctx.source.range_reads == {"delta": 1}
    assert len(rows_later) == len(rows)


@pytest.mark.prometheus
def test_streamed_rows_equal_the_one_shot_read_without_process_labels(
        scale_prometheus: PrometheusProcess) -> None:
    ctx = AppContext(source=_prom(scale_prometheus.url, Profile()), at=PROM_AT)
    cold = _cold(ctx, above_queues=0, batch_queues=5)
    polls: list[Progress] = []
    p = _run(cold, ctx, PROM_AT, seen=polls.append)
    assert p.finished, p.text()
    # rows were shown before the end (the last batches may land between two polls: the
    # finished progress holds the merged read, not its batches)
    assert len({b.index for q in polls for b in q.batches}) >= 2
    fresh = AppContext(source=_prom(scale_prometheus.url, Profile()), at=PROM_AT)
    rows, _, _ = ov.load_overview(fresh)
    assert len(rows) == 33
    assert ov.stream_view(p, ctx.settings).rows == rows


@pytest.mark.prometheus
def test_a_batch_snapshot_asks_only_for_its_queues(
        backfilled_prometheus: PrometheusProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every per-queue query of a batch's snapshot carries the batch's names, and the
    per-process ones its processes (a whole-fleet answer per batch made 40 batches cost 40
    whole-fleet snapshots at 10,000 queues)."""
    src = PrometheusSource(PrometheusClient(ConnectionSettings(url=backfilled_prometheus.url)),
                           Profile())
    sent: list[str] = []
    query = src.client.query

    def recording(promql: str, at: float) -> Any:
        sent.append(promql)
        return query(promql, at)

    monkeypatch.setattr(src.client, "query", recording)
    snap = src.snapshot(PROM_AT, 300.0, ["deployment", "replicaset"])
    assert sorted(q.queue for q in snap.queues) == ["deployment", "replicaset"]
    fleet = [q for q in sent if q.startswith("count by (__name__)")]  # which metrics exist
    per_queue = [q for q in sent if q not in fleet and "_webhook_" not in q
                 and ("workqueue_" in q or "controller_runtime_" in q)]
    assert len(fleet) <= 1
    assert len(per_queue) >= 15
    assert [q for q in per_queue if '"deployment|replicaset"' not in q] == []
    per_process = [q for q in sent if q not in fleet and "rest_client_requests_total" in q]
    assert per_process
    assert all(f'job=~"{JOB_A}"' in q for q in per_process), per_process


def test_a_page_is_resent_its_rows_only_as_they_grow_by_half() -> None:
    """Each batch resent every row so far (about 100 MB over a 10,000-queue stream): a page
    gets the rows again once the queues read grew by half, when the job ends or when it is
    another job's."""
    from dashboard.pages.overview import resend
    from dashboard.streaming import Progress

    def p(version: int, done: int, finished: bool = False, job: int = 7) -> Progress:
        return Progress(job=job, version=version, at=0.0, total=10_000, done=done,
                        left_s=1.0, batches=(), finished=finished)

    assert resend(p(1, 25), None)  # nothing shown yet
    assert not resend(p(1, 25), "7:1:25")  # the same publication
    assert not resend(p(5, 349), "7:4:250")  # under half as many again
    assert resend(p(6, 375), "7:4:250")
    assert resend(p(9, 600, finished=True), "7:8:500")  # the end
    assert resend(p(1, 25, job=8), "7:9:600")  # another job
    sent, shown = 0, None
    for version, done in enumerate(range(250, 10_001, 250), 1):  # 40 batches of 250
        if resend(p(version, done), shown):
            sent += done
            shown = f"7:{version}:{done}"
    assert sent <= 3 * 10_000
