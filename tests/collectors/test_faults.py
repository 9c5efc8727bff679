"""The fault suite: every network fault ends in bounded time with a clear, typed outcome.

Against the small misbehaving servers of :mod:`tests.support.fault_servers` (127.0.0.1): a
drip-feeding server (valid headers, then one byte a second), one that accepts and never
answers, one that sends its headers one byte at a time, answers larger than the limit (with and
without Content-Length), a 200 whose envelope says ``status: error``, bytes that are not JSON,
and duplicated series. Each test states the outcome and its time bound. The bounds are
correctness bounds for a loaded 2-core CI machine (at most 2 × the timeout + 3 s, measured
with ``time.monotonic`` around the call), not benchmarks; where a test must tell "one timeout"
from "two", it also checks something that does not depend on the clock (the budget named in the
message, the requests the server saw, the sockets it still holds open).
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from collectors.cache import CachedSource
from collectors.config import ConnectionSettings
from collectors.deadlines import deadline_scope
from collectors.errors import (
    AnswerTooLarge,
    BadQuery,
    PrometheusServerError,
    PrometheusTimeout,
)
from collectors.profile import Profile
from collectors.prom_client import PrometheusClient
from collectors.snapshot import PrometheusSource
from dashboard.cli import main
from tests.support.fault_servers import (
    Behaviour,
    FaultServer,
    answer,
    delayed,
    drip,
    garbage,
    hang,
    huge,
    ok,
    route,
    slow_headers,
    status_error,
    wait_until,
)

AT = 1704070200.0
TIMEOUT_S = 1.0

pytestmark = pytest.mark.timeout(120)  # a regression hangs: fail it instead


def bound(timeout_s: float) -> float:
    """The time bound of one fault: 2 × the timeout + 3 s."""
    return 2 * timeout_s + 3.0


@pytest.fixture
def serve() -> Iterator[Callable[[Behaviour], FaultServer]]:
    servers: list[FaultServer] = []

    def start(behaviour: Behaviour) -> FaultServer:
        server = FaultServer(behaviour)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def client(url: str, **settings: Any) -> PrometheusClient:
    return PrometheusClient(ConnectionSettings(url=url, **{"timeout_s": TIMEOUT_S, **settings}))


def timed(fn: Callable[[], object]) -> tuple[BaseException | None, float]:
    t0 = time.monotonic()
    try:
        fn()
    except Exception as exc:  # the outcome under test
        return exc, time.monotonic() - t0
    return None, time.monotonic() - t0


def run_cli(*argv: str) -> tuple[int, str, str, float]:
    out, err = io.StringIO(), io.StringIO()
    t0 = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue(), time.monotonic() - t0


# --- one query ----------------------------------------------------------------------------


@pytest.mark.parametrize(("behaviour", "phase"), [
    (drip(interval_s=0.2), "still arriving"),
    (drip(interval_s=0.2, content_length=None), "still arriving"),
    (hang(), "waiting for an answer"),
    (slow_headers(interval_s=0.2), "waiting for an answer"),
], ids=["drip", "drip-no-content-length", "hang", "slow-headers"])
def test_a_slow_or_silent_server_costs_one_wall_clock_timeout(
        serve: Callable[[Behaviour], FaultServer], behaviour: Behaviour, phase: str) -> None:
    """requests' timeout is per socket read: a byte every 0.2 s never trips a 1 s read timeout.
    The query's one deadline does."""
    server = serve(behaviour)
    exc, elapsed = timed(lambda: client(server.url).query("up", AT))
    assert isinstance(exc, PrometheusTimeout), exc
    assert TIMEOUT_S * 0.9 <= elapsed <= bound(TIMEOUT_S)
    assert server.url in str(exc)
    assert f"within the {TIMEOUT_S:g} s query timeout" in str(exc)
    assert phase in str(exc)
    # The socket was shut down at the deadline, not left to the server.
    assert wait_until(lambda: server.open_connections == 0, 2.0)


def test_a_deadline_scope_cuts_a_query_short_and_names_its_budget(
        serve: Callable[[Behaviour], FaultServer]) -> None:
    server = serve(drip(interval_s=0.2))
    c = client(server.url, timeout_s=30.0)
    with deadline_scope(1.0, "this page refresh"):
        exc, elapsed = timed(lambda: c.query("up", AT))
    assert isinstance(exc, PrometheusTimeout)
    assert elapsed <= bound(1.0)
    assert "the 1 s budget of this page refresh" in str(exc)


@pytest.mark.parametrize("content_length", [True, False], ids=["content-length", "streamed"])
def test_an_answer_over_the_limit_is_refused_while_it_streams(
        serve: Callable[[Behaviour], FaultServer], content_length: bool) -> None:
    server = serve(huge(8 * 2**20, content_length=content_length))
    exc, elapsed = timed(lambda: client(server.url, max_response_bytes=2**20).query("up", AT))
    assert isinstance(exc, AnswerTooLarge), exc
    assert isinstance(exc, BadQuery)  # exit 3, never retried, never masked by stale data
    message = str(exc)
    assert "1 MiB limit" in message
    assert "prometheus.max_response_bytes" in message
    assert "QUEUELENS_PROMETHEUS_MAX_RESPONSE_BYTES" in message
    assert "--selector" in message
    assert ("Content-Length" in message) == content_length
    assert message.count(". ") == 0  # one sentence
    assert elapsed <= bound(TIMEOUT_S)


def test_an_answer_under_the_limit_is_read_whole(
        serve: Callable[[Behaviour], FaultServer]) -> None:
    server = serve(huge(300_000, content_length=False))
    res = client(server.url, max_response_bytes=2**20).query("up", AT)
    assert len(res.samples) > 3000
    assert all(s.value == 1.5 for s in res.samples)


@pytest.mark.parametrize(("error_type", "expected"), [
    ("bad_data", BadQuery), ("execution", BadQuery), ("timeout", PrometheusTimeout),
    ("internal", PrometheusServerError),
])
def test_a_200_with_status_error_reports_its_error_type_and_error(
        serve: Callable[[Behaviour], FaultServer], error_type: str,
        expected: type[Exception]) -> None:
    server = serve(status_error(error_type, "something specific went wrong"))
    exc, _ = timed(lambda: client(server.url).query("up", AT))
    assert type(exc) is expected
    assert "something specific went wrong" in str(exc)
    assert "not the Prometheus HTTP API" not in str(exc)
    if error_type != "timeout":
        assert error_type in str(exc)


def test_garbage_is_not_the_prometheus_api(serve: Callable[[Behaviour], FaultServer]) -> None:
    server = serve(garbage())
    exc, elapsed = timed(lambda: client(server.url).query("up", AT))
    assert isinstance(exc, PrometheusServerError)
    assert "not the Prometheus HTTP API" in str(exc)
    assert elapsed < bound(TIMEOUT_S)


def test_server_text_in_messages_is_capped_and_has_no_control_characters(
        serve: Callable[[Behaviour], FaultServer]) -> None:
    error = "\x1b[2J" + "x" * 100_000
    server = serve(answer(422, json.dumps({"status": "error", "errorType": "execution",
                                           "error": error}).encode()))
    exc, _ = timed(lambda: client(server.url).query("up", AT))
    assert isinstance(exc, BadQuery)
    assert "\x1b" not in str(exc)
    assert len(str(exc)) < 1000


# --- a snapshot: sibling queries ------------------------------------------------------------


def source(url: str, timeout_s: float = TIMEOUT_S, **kwargs: Any) -> PrometheusSource:
    return PrometheusSource(client(url, timeout_s=timeout_s), Profile(), **kwargs)


def siblings() -> Behaviour:
    """Three queries of a snapshot: the arrivals hang, the throughput is answered after 1 s,
    the busy workers hang (so with two connections the busy-workers query is sent about 1 s
    after the arrivals' one and would outlive its failure by 1 s); the rest are answered."""
    return route([("rate(workqueue_adds_total", hang()),
                  ("workqueue_work_duration_seconds_count", delayed(1.0, ok())),
                  ("workqueue_work_duration_seconds_sum", hang())])


def test_one_failed_query_cancels_its_siblings(serve: Callable[[Behaviour], FaultServer]
                                               ) -> None:
    """The first failure (the arrivals' timeout, at 2 s) ends the snapshot, and the query
    still in flight (busy workers, its own deadline 1 s later) is cut off at once: its socket
    is closed, no further query is sent, and no thread is left that an exiting process would
    wait for (ThreadPoolExecutor's workers are joined at exit: "a hung Prometheus costs twice
    the timeout")."""
    server = serve(siblings())
    src = PrometheusSource(client(server.url, timeout_s=2.0, parallelism=2), Profile())
    exc, elapsed = timed(lambda: src.snapshot(AT, 300))
    assert isinstance(exc, PrometheusTimeout), exc
    assert elapsed <= bound(2.0)
    sent = len(server.requests)
    assert any("seconds_sum" in r.promql for r in server.requests)
    assert wait_until(lambda: server.open_connections == 0, 0.5)
    assert wait_until(lambda: not _joined_at_exit(), 0.5)
    time.sleep(0.3)
    assert len(server.requests) == sent


def _joined_at_exit() -> list[threading.Thread]:
    """Threads the interpreter would wait for at exit, other than this test's own."""
    return [t for t in threading.enumerate()
            if not t.daemon and t is not threading.main_thread() and t.is_alive()]


def test_a_page_refresh_under_one_deadline_does_not_start_the_range_read(
        serve: Callable[[Behaviour], FaultServer]) -> None:
    """The dashboard's refresh: snapshot then range under ``CachedSource.deadline()`` against
    a hung Prometheus ends after one budget, and the range read is never sent."""
    server = serve(hang())
    cache = CachedSource(source(server.url, timeout_s=TIMEOUT_S))

    def refresh() -> None:
        with cache.deadline():
            with contextlib.suppress(PrometheusTimeout):
                cache.snapshot(AT, 300)
            cache.range(AT - 3600, AT, 60)

    exc, elapsed = timed(refresh)
    assert isinstance(exc, PrometheusTimeout)
    assert elapsed <= bound(TIMEOUT_S)
    assert not any(r.path.endswith("query_range") for r in server.requests)
    assert "budget of this page refresh" in str(exc)


def test_waiters_on_a_fetch_in_flight_give_up_at_their_own_deadline(
        serve: Callable[[Behaviour], FaultServer]) -> None:
    """Ten tabs behind one fetch from a drip-feeding Prometheus: each waits at most its own
    budget (here 0.5 s), not for the fetch (30 s timeout)."""
    server = serve(drip(interval_s=0.2))
    cache = CachedSource(source(server.url, timeout_s=30.0))
    owner = threading.Thread(target=lambda: _swallow(lambda: cache.snapshot(AT, 300)),
                             daemon=True)
    owner.start()
    assert wait_until(lambda: len(server.requests) > 0, 5.0)
    outcomes: list[tuple[BaseException | None, float]] = []

    def tab() -> None:
        with cache.deadline(0.5):
            outcomes.append(timed(lambda: cache.snapshot(AT, 300)))

    tabs = [threading.Thread(target=tab) for _ in range(10)]
    for t in tabs:
        t.start()
    for t in tabs:
        t.join(10)
    assert len(outcomes) == 10
    for exc, elapsed in outcomes:
        assert isinstance(exc, PrometheusTimeout), exc
        assert elapsed <= bound(0.5)
    server.stop()  # ends the owner's fetch


def _swallow(fn: Callable[[], object]) -> None:
    with contextlib.suppress(Exception):
        fn()


def test_duplicate_series_are_refused_with_a_warning_not_last_wins(
        serve: Callable[[Behaviour], FaultServer]) -> None:
    """Two series with the same labels (a federation of two Prometheus servers): the value is
    left out with the reason, and a warning names the series."""
    twice = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"name": "a"}, "value": [AT, "2"]},
        {"metric": {"name": "a"}, "value": [AT, "3"]},
        {"metric": {"name": "b"}, "value": [AT, "1"]}]}}).encode()
    once = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"name": "a"}, "value": [AT, "4"]},
        {"metric": {"name": "b"}, "value": [AT, "5"]}]}}).encode()
    server = serve(route([("rate(workqueue_adds_total", answer(200, twice)),
                          ("avg_over_time(workqueue_depth", answer(200, once))]))
    snap = source(server.url).snapshot(AT, 300)
    by = {q.queue: q for q in snap.queues}
    assert by["a"].arrival_rate_per_s is None
    assert "more than one" in by["a"].missing["arrival_rate_per_s"]
    assert by["b"].arrival_rate_per_s == 1.0
    assert by["a"].depth_mean == 4.0
    assert any("same series more than once" in w and "name='a'" in w for w in snap.warnings)


# --- the CLI --------------------------------------------------------------------------------


@pytest.mark.parametrize("behaviour", [
    drip(interval_s=1.0), hang(), slow_headers(interval_s=0.5), siblings(),
], ids=["drip", "hang", "slow-headers", "one-query-fails-first"])
def test_snapshot_cli_exits_3_with_one_line_within_the_timeout(
        serve: Callable[[Behaviour], FaultServer], behaviour: Behaviour) -> None:
    server = serve(behaviour)
    code, out, err, elapsed = run_cli("snapshot", "--prometheus", server.url, "--timeout", "2s",
                                      "--at", str(AT))
    assert not _joined_at_exit()  # the process can exit now, not after abandoned queries
    assert code == 3
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    assert server.url in err
    assert "2 s" in err
    assert elapsed <= bound(2.0)


def test_snapshot_then_range_share_one_command_deadline(
        serve: Callable[[Behaviour], FaultServer]) -> None:
    """``advise`` reads a snapshot (here slow but answered: each query after 0.6 s, ~3.6 s in
    all) and then a range (here hung). With ``--timeout 4s --deadline 4s`` the command ends
    after its one 4 s budget, not after the snapshot plus another 4 s."""
    slow_ok = delayed(0.6, ok())
    server = serve(route([("query_range", hang())], default=slow_ok))
    code, _, err, elapsed = run_cli("advise", "--prometheus", server.url, "--timeout", "4s",
                                    "--deadline", "4s", "--at", str(AT), "--range", "30m")
    assert code == 3
    assert "the 4 s budget of this command" in err
    assert "set by --deadline" in err
    assert len(err.strip().splitlines()) == 1
    assert elapsed <= 4.0 + 2.5  # the snapshot alone takes ~3.6 s: two budgets, 8+ s


@pytest.mark.parametrize(("behaviour", "needle"), [
    (status_error("bad_data", "parse error: unexpected end"), "bad_data: parse error"),
    (garbage(), "not the Prometheus HTTP API"),
    (huge(70 * 2**20, content_length=True), "64 MiB limit"),
], ids=["status-error", "garbage", "huge"])
def test_snapshot_cli_reports_bad_answers_on_one_line(
        serve: Callable[[Behaviour], FaultServer], behaviour: Behaviour, needle: str) -> None:
    server = serve(behaviour)
    code, out, err, elapsed = run_cli("snapshot", "--prometheus", server.url, "--timeout", "2s",
                                      "--at", str(AT))
    assert code == 3
    assert out == ""
    assert needle in err
    assert len(err.strip().splitlines()) == 1
    assert elapsed <= bound(2.0)


def test_the_overview_refresh_runs_under_the_apps_budget(
        serve: Callable[[Behaviour], FaultServer]) -> None:
    """The overview's refresh (snapshot, then the range read of the plans) under
    :meth:`dashboard.context.AppContext.refresh_budget` (what its callback runs in): a
    snapshot answered slowly and a hung range end after one budget with a sentence on the
    page, not after two timeouts."""
    from dashboard.context import AppContext
    from dashboard.pages import overview

    budget = 3.0
    # ~21 snapshot queries, 4 at a time, 0.4 s each: ~2.4 s, inside the budget; then the
    # range hangs. Without the shared budget: 2.4 s + a 3 s query timeout.
    server = serve(route([("query_range", hang())], default=delayed(0.4, ok())))
    ctx = AppContext(source=CachedSource(source(server.url, timeout_s=budget)), at=AT,
                     refresh_budget_s=budget)
    out: list[tuple[list[dict[str, object]], str, str]] = []

    def refresh() -> None:
        with ctx.refresh_budget():
            out.append(overview.load_overview(ctx))

    exc, elapsed = timed(refresh)
    assert exc is None  # the page answers, with a sentence
    assert elapsed <= budget + 1.5
    _, _, error = out[0]
    assert error  # no history (or no queues): said on the page
