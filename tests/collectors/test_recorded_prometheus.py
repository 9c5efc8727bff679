"""Recorded series stand in for the raw counters (issue 22 §3) on a real Prometheus.

The history: the main scenario (two frameworks, a counter reset, a scrape gap, hostile queue
names; :mod:`tests.support.workqueue_om`) and twelve queues whose load is a sine
(:mod:`tests.support.scale_om`: a rate depends on where its window lies), backfilled with
promtool; then the rules of ``queuelens rules --recording --range 1h`` evaluated by the same
Prometheus on the 30 s grid (their interval: the step) and backfilled too
(:func:`tests.support.recorded.aligned_openmetrics`: promtool's own rules backfill starts
each group at a hashed offset, never on a read's grid). Reads through the recorded series
must equal the raw reads — range matrices within 1e-9, the snapshot, and ``advise``'s
verdicts and plans."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from collectors.config import ConnectionSettings
from collectors.profile import Profile
from collectors.prom_client import PrometheusClient
from collectors.snapshot import PrometheusSource
from dashboard.advice import advise_fleet
from models.settings import AnalysisSettings
from tests.support.equality import assert_close, assert_same_range
from tests.support.prometheus import PrometheusProcess, backfill, start_prometheus
from tests.support.recorded import aligned_openmetrics, write_rules
from tests.support.scale_om import fleet_text
from tests.support.workqueue_om import DURATION_S, START, main_text

pytestmark = pytest.mark.prometheus

SETTINGS = AnalysisSettings(range_s=3600.0)
"""A 30 s step: the range read's rate window is 1 min at the learnt 15 s scrape interval."""
AT = START + 6600
"""On the 30 s evaluation grid; the range [AT − 1 h, AT] holds the reset and the gap."""
SINE_QUEUES = 12


@pytest.fixture(scope="module")
def ruled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    work = tmp_path_factory.mktemp("recorded")
    backfill(main_text(), work)
    tsdb = backfill(fleet_text(0, SINE_QUEUES), work)
    rules = write_rules(work / "rules.yaml", "--range", "1h")
    first = start_prometheus(work / "raw", tsdb=tsdb)
    try:
        text = aligned_openmetrics(first.url, rules, START, START + DURATION_S)
    finally:
        first.stop()
    (work / "rules-om").mkdir()
    backfill(text, work / "rules-om")
    for block in (work / "rules-om" / "tsdb").iterdir():
        block.rename(tsdb / block.name)
    server = start_prometheus(work / "ruled", tsdb=tsdb)
    try:
        yield server
    finally:
        server.stop()


class _Spy(PrometheusClient):
    """A client that keeps the PromQL of every query it sends."""

    def __init__(self, url: str) -> None:
        super().__init__(ConnectionSettings(url=url))
        self.sent: list[str] = []

    def query(self, promql: str, *args: Any, **kwargs: Any) -> Any:
        self.sent.append(promql)
        return super().query(promql, *args, **kwargs)

    def query_range(self, promql: str, *args: Any, **kwargs: Any) -> Any:
        self.sent.append(promql)
        return super().query_range(promql, *args, **kwargs)


def _sources(url: str) -> tuple[PrometheusSource, PrometheusSource, _Spy]:
    spy = _Spy(url)
    return (PrometheusSource(spy, Profile()),
            PrometheusSource(PrometheusClient(ConnectionSettings(url=url)),
                             Profile(use_recorded=False)), spy)


def _recorded_reads(sent: Sequence[str], window: str) -> int:
    return sum(f":rate{window}" in q and "__name__" not in q for q in sent)


def test_the_range_read_through_recorded_series_equals_the_raw_read(
        ruled: PrometheusProcess) -> None:
    recorded, raw, spy = _sources(ruled.url)
    a, b = AT - SETTINGS.range_s, AT
    got = recorded.range(a, b, SETTINGS.step_s)
    want = raw.range(a, b, SETTINGS.step_s)
    # every rate of the read came from the recorded series, histogram buckets and the
    # per-process API calls included
    assert _recorded_reads(spy.sent, "1m") >= 10, spy.sent
    assert not any("rate(workqueue_adds_total" in q or "rate(workqueue_work_duration_seconds"
                   "_bucket" in q or "rate(rest_client_requests_total" in q for q in spy.sent)
    assert len(want.queues) == 6 + SINE_QUEUES
    sine = want.matrix("arrival_rate_per_s")[want.queues.index("q00003")]
    assert np.nanmax(sine) > 1.2 * np.nanmin(sine)  # the rates move: alignment matters
    assert_same_range(got, want)


def test_a_batched_read_through_recorded_series_equals_the_raw_read(
        ruled: PrometheusProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of queue names (``name=~…``) and their processes' filters on the recorded
    series, as a 10,000-queue read sends them."""
    import collectors.snapshot as snapshot

    monkeypatch.setattr(snapshot, "RANGE_BATCH_QUEUES", 5)
    recorded, raw, spy = _sources(ruled.url)
    got = recorded.range(AT - 1800, AT, SETTINGS.step_s)
    assert any('{name=~"' in q and ":rate1m" in q for q in spy.sent)
    assert_same_range(got, raw.range(AT - 1800, AT, SETTINGS.step_s))


def test_the_snapshot_through_recorded_series_equals_the_raw_one(
        ruled: PrometheusProcess) -> None:
    recorded, raw, spy = _sources(ruled.url)
    got = recorded.snapshot(AT, SETTINGS.window_s)
    assert _recorded_reads(spy.sent, "5m") >= 10, spy.sent
    want = raw.snapshot(AT, SETTINGS.window_s)
    assert len(want.queues) == 6 + SINE_QUEUES
    assert_close(got, want)


def test_advise_gives_the_same_verdicts_and_plans_with_and_without_the_rules(
        ruled: PrometheusProcess) -> None:
    recorded, raw, spy = _sources(ruled.url)
    got = advise_fleet(recorded, AT, SETTINGS)
    want = advise_fleet(raw, AT, SETTINGS)
    assert _recorded_reads(spy.sent, "1m")
    assert _recorded_reads(spy.sent, "5m")
    assert [(q.queue, [v.kind for v in q.verdicts]) for q in got.queues] == \
        [(q.queue, [v.kind for v in q.verdicts]) for q in want.queues]
    assert any(q.plan is not None and q.plan.recommended_workers for q in want.queues)
    assert_close(got.queues, want.queues)


def _known(source: PrometheusSource, promql: str | None, at: float) -> None:
    """Wait (at most 30 s) until the background answer of ``promql`` at ``at`` is known."""
    assert promql is not None
    deadline = time.monotonic() + 30.0
    while source._known_presence(promql, at) is None:
        assert time.monotonic() < deadline, "the background presence answer never came"
        time.sleep(0.05)


def test_a_read_of_named_queues_reads_raw_until_the_fleets_answer_is_known(
        ruled: PrometheusProcess, caplog: pytest.LogCaptureFixture) -> None:
    """The streaming cold start's first batch does not wait for the recorded series'
    presence (it counts every recorded series: 13 s at 10,000 queues): its few queues are
    read raw — the same numbers — while the answer is asked in the background (the debug
    log says so), and the next reads of the same instant use the recorded series."""
    recorded, raw, spy = _sources(ruled.url)
    named = ["q00003", "q00004"]
    a = AT - 1800
    with caplog.at_level(logging.DEBUG, logger="collectors.snapshot"):
        snap = recorded.snapshot(AT, SETTINGS.window_s, named)
        got = recorded.range(a, AT, SETTINGS.step_s, named)
    not_known = [r.message for r in caplog.records
                 if "the recorded series' presence is not known yet" in r.message]
    assert len(not_known) == 2, caplog.text  # the snapshot's and the range read's
    assert _recorded_reads(spy.sent, "5m") == 0
    assert _recorded_reads(spy.sent, "1m") == 0
    assert [q.queue for q in snap.queues] == named
    assert_close(snap, raw.snapshot(AT, SETTINGS.window_s, named))
    want = raw.range(a, AT, SETTINGS.step_s, named)
    assert_same_range(got, want)

    profile = recorded.profile
    _known(recorded, profile.recorded_presence_query(), AT)
    _known(recorded, profile.recorded_presence_query(since=a), AT)
    spy.sent.clear()
    again = recorded.snapshot(AT, SETTINGS.window_s, named)
    got_again = recorded.range(a, AT, SETTINGS.step_s, named)
    assert _recorded_reads(spy.sent, "5m") >= 5
    assert _recorded_reads(spy.sent, "1m") >= 5
    assert_close(again, snap)
    assert_same_range(got_again, want)


def test_a_read_at_another_window_reads_raw_and_says_why(
        ruled: PrometheusProcess, caplog: pytest.LogCaptureFixture) -> None:
    recorded, raw, spy = _sources(ruled.url)
    with caplog.at_level(logging.DEBUG, logger="collectors.snapshot"):
        got = recorded.range(AT - 1800, AT, 60.0)  # a 60 s step: a 75 s window, not recorded
    assert _recorded_reads(spy.sent, "1m15s") == 0
    assert not any(":rate" in q for q in spy.sent if "__name__" not in q)
    assert any("this read's rate window is 1m15s: reading the raw counters" in r.message
               for r in caplog.records), caplog.text
    assert_same_range(got, raw.range(AT - 1800, AT, 60.0))


def test_rules_younger_than_the_range_are_not_used(ruled: PrometheusProcess) -> None:
    """A range that begins before the recorded series do (the rules' first evaluation with a
    full window) reads raw: their history would be cut short."""
    recorded, raw, spy = _sources(ruled.url)
    got = recorded.range(START, START + 1800, SETTINGS.step_s)
    assert _recorded_reads(spy.sent, "1m") == 0
    assert_same_range(got, raw.range(START, START + 1800, SETTINGS.step_s))


def test_a_range_that_begins_before_the_data_uses_them(ruled: PrometheusProcess) -> None:
    """Before the first sample neither the raw counters nor the recorded series exist: the
    recorded history is as long as the raw one."""
    recorded, raw, spy = _sources(ruled.url)
    got = recorded.range(START - 600, START + 1800, SETTINGS.step_s)
    assert _recorded_reads(spy.sent, "1m") >= 10
    assert_same_range(got, raw.range(START - 600, START + 1800, SETTINGS.step_s))


def test_without_recorded_series_no_recorded_query_is_sent(
        backfilled_prometheus: PrometheusProcess) -> None:
    _, _, spy = _sources(backfilled_prometheus.url)
    source = PrometheusSource(spy, Profile())
    source.snapshot(AT, SETTINGS.window_s)
    source.range(AT - 1800, AT, SETTINGS.step_s)
    presence = [q for q in spy.sent if "__name__" in q and ":rate" in q]
    assert len(presence) == 2  # one per read: the snapshot's and the range's
    assert not any(":rate" in q for q in spy.sent if q not in presence)


def test_turned_off_sends_no_presence_query(ruled: PrometheusProcess, tmp_path: Path) -> None:
    from collectors.config import load_config

    cfg = tmp_path / "q.yaml"
    cfg.write_text("profile:\n  recorded_rules: false\n")
    spy = _Spy(ruled.url)
    source = PrometheusSource(spy, load_config(cfg).profile)
    source.range(AT - 1800, AT, SETTINGS.step_s)
    source.snapshot(AT, SETTINGS.window_s)
    assert not any(":rate" in q for q in spy.sent), spy.sent


def test_the_doctor_reports_the_recorded_series_and_their_windows(
        ruled: PrometheusProcess, backfilled_prometheus: PrometheusProcess,
        capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from tests.support.cli import run_main

    code, out, err = run_main(["doctor", "--prometheus", ruled.url, "--at", str(AT),
                               "--format", "json"], capsys)
    assert code == 0, err
    recorded = json.loads(out)["recorded"]
    assert recorded["windows"] == {"1m": 12, "5m": 12}
    assert recorded["expected"] == 12
    assert recorded["unusable"] is None
    code, out, err = run_main(["doctor", "--prometheus", ruled.url, "--at", str(AT)], capsys)
    assert code == 0, err
    assert ("recorded series (queuelens rules --recording): present at 1m (12 of 12 rates), "
            "5m (12 of 12 rates)") in out
    code, out, err = run_main(["doctor", "--prometheus", backfilled_prometheus.url, "--at",
                               str(AT)], capsys)
    assert code == 0, err
    assert "recorded series (queuelens rules --recording): none found" in out


def test_the_doctor_page_says_the_same_line(ruled: PrometheusProcess) -> None:
    """The /doctor page's summary carries the CLI's line on the recorded series."""
    from collectors.config import ConnectionSettings
    from collectors.prom_client import PrometheusClient
    from collectors.snapshot import PrometheusSource
    from dashboard.context import AppContext
    from dashboard.pages.doctor import read_recorded_line

    source = PrometheusSource(PrometheusClient(ConnectionSettings(url=ruled.url)))
    line = read_recorded_line(AppContext(source=source, at=float(AT)))
    assert line is not None
    assert "present at 1m (12 of 12 rates), 5m (12 of 12 rates)" in line
