"""Issue 23 items 1 and 13 on a real Prometheus: a worker count of 10¹² (measured or
configured) and impossible values (workers −1, depth −5, a negative throughput) in one
queue each, among normal queues.

Before: ``advise``, ``whatif --queue`` and the queue page ran the Erlang recursion to the
measured count (10⁷ workers: 42.5 s; 10¹²: for ever), and one queue's negative throughput
stopped the whole fleet with exit 2 and no queue named. Now each such queue is named with its
value once, judged without the figure, and every other queue gets the verdicts it gets
without the bad queues in the fleet.

The negative throughput comes from a recorded series (``queuelens rules --recording``'s
name for the snapshot's rate, which the snapshot reads instead of the raw counter): a rule
or an adapter can write any number there, Prometheus's own ``rate()`` cannot.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.prometheus import PrometheusProcess, backfill, start_prometheus
from tests.support.workqueue_om import (
    AT,
    DURATION_S,
    JOB_A,
    START,
    STEP_S,
    ProcessSpec,
    QueueSpec,
    generate,
)

JOB_BAD = "controller-bad"
HUGE, BROKEN, NEG_THROUGHPUT, CONFIGURED = "huge", "broken", "negthr", "cfgq"
NORMAL = ("deployment", "lease")
BAD = (HUGE, BROKEN, NEG_THROUGHPUT, CONFIGURED)
RECORDED = "cluster_namespace_job_name:workqueue_work_duration_seconds_count:rate5m"
CONFIG = f"profile:\n  workers:\n    {CONFIGURED}: 1.0e+12\n"
LIMIT_S = 120.0
"""Far above what each command takes (a few seconds): only a run that never ends fails."""


def _queue(name: str, *, job: str = JOB_A, **kw: object) -> QueueSpec:
    base: dict[str, object] = {
        "adds": 3, "done": 3, "work_mean": 0.05, "wait_mean": 0.01, "work_shares": {7: 1.0},
        "wait_shares": {6: 1.0}, "depth": {"0": 1},
        "results": {"success": 3, "error": 0, "requeue": 0, "requeue_after": 0}, "workers": 2,
        "job": job, "instance": "10.0.0.9:8080" if job == JOB_BAD else "10.0.0.1:8080"}
    base.update(kw)
    return QueueSpec(name, **base)  # type: ignore[arg-type]


def _queues() -> list[QueueSpec]:
    return [
        _queue("deployment", adds=5, done=5, work_mean=0.2, wait_mean=1.0,
               work_shares={7: 0.5, 8: 0.5}, wait_shares={8: 0.6, 9: 0.4},
               depth={"0": 3}, workers=4),
        _queue("lease", workers=1),
        _queue(HUGE, job=JOB_BAD, workers=10**12),
        _queue(BROKEN, job=JOB_BAD, workers=-1, depth={"0": -5}),
        _queue(NEG_THROUGHPUT, job=JOB_BAD),
        # a component-base queue: no max_concurrent_reconciles, its count from the config
        _queue(CONFIGURED, job=JOB_BAD, controller_runtime=False, workers=None, depth={"": 1}),
    ]


def _recorded(queues: list[QueueSpec]) -> str:
    """The snapshot window's recorded throughput of every queue: what ``rate()`` gives,
    except −3/s for :data:`NEG_THROUGHPUT`."""
    lines = [f"# TYPE {RECORDED} gauge"]
    for q in queues:
        value = -3.0 if q.name == NEG_THROUGHPUT else q.done
        for t in range(START, START + DURATION_S, STEP_S):
            lines.append(f'{RECORDED}{{job="{q.job}",name="{q.name}"}} {value:g} {t}')
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def hostile_prometheus(tmp_path_factory: pytest.TempPathFactory
                       ) -> Iterator[PrometheusProcess]:
    queues = _queues()
    processes = [ProcessSpec(JOB_A, "10.0.0.1:8080", (("200", "GET", 4.0),)),
                 ProcessSpec(JOB_BAD, "10.0.0.9:8080", (("200", "GET", 4.0),))]
    text = generate(queues, processes).removesuffix("# EOF\n") + _recorded(queues) + "# EOF\n"
    work = tmp_path_factory.mktemp("prom-hostile")
    server = start_prometheus(work, tsdb=backfill(text, work))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cfg") / "queuelens.yaml"
    path.write_text(CONFIG)
    return path


def _advise(url: str, config: Path, *more: str) -> tuple[int, str, str]:
    done = run_cli("advise", "--prometheus", url, "--at", str(AT), "--config", str(config),
                   *more, timeout_s=LIMIT_S)
    return done.returncode, done.stdout, done.stderr


def _sentences(queue: str) -> dict[str, str]:
    return {
        HUGE: f"{HUGE}: the worker count 1,000,000,000,000 is above the 10,000 workers",
        CONFIGURED: f"{CONFIGURED}: the worker count 1,000,000,000,000 is above the 10,000",
        BROKEN: f"{BROKEN}: workers is -1, an impossible negative value",
        NEG_THROUGHPUT: f"{NEG_THROUGHPUT}: throughput_per_s is -3, an impossible negative",
    }


def test_advise_names_each_bad_queue_once_and_evaluates_the_rest(
        hostile_prometheus: PrometheusProcess, config_file: Path) -> None:
    code, out, err = _advise(hostile_prometheus.url, config_file)
    assert code == 0, err
    for queue, sentence in _sentences("").items():
        assert out.count(sentence) == 1, (queue, out)
    assert f"{BROKEN}: depth_mean is -5, an impossible negative value" in out
    # the implausible counts are not sized, and not called a hot key (the normal queues of
    # the fixture may be: their lines are not looked at)
    for line in out.splitlines():
        if line.split(" ", 1)[0] in (HUGE, CONFIGURED, BROKEN):
            assert "processed serially" not in line, line
            assert "hot_key" not in line, line
    code, raw, err = _advise(hostile_prometheus.url, config_file, "--format", "json")
    assert code == 0, err
    data = json.loads(raw)
    plans = {q["queue"]: q for q in data["queues"]}
    assert set(plans) == {*NORMAL, *BAD}
    for queue in (HUGE, CONFIGURED, BROKEN):
        kinds = [v["kind"] for v in plans[queue]["verdicts"]]
        assert kinds == ["insufficient_data"], (queue, kinds)
        assert plans[queue]["plan"]["workers_now"] is None
        assert plans[queue]["plan"]["recommended_workers"] is None
    assert any("throughput_per_s is -3" in c for c in plans[NEG_THROUGHPUT]["plan"]["caveats"])


def test_the_other_queues_verdicts_are_those_without_the_bad_queues(
        hostile_prometheus: PrometheusProcess, config_file: Path) -> None:
    code, raw, err = _advise(hostile_prometheus.url, config_file, "--format", "json")
    assert code == 0, err
    code, alone_raw, err = _advise(hostile_prometheus.url, config_file, "--format", "json",
                                   "--selector", f'{{job="{JOB_A}"}}')
    assert code == 0, err
    fleet = {q["queue"]: q for q in json.loads(raw)["queues"]}
    alone = {q["queue"]: q for q in json.loads(alone_raw)["queues"]}
    assert set(alone) == set(NORMAL)
    for queue in NORMAL:
        assert fleet[queue]["verdicts"] == alone[queue]["verdicts"], queue
        assert fleet[queue]["plan"]["recommended_workers"] == \
            alone[queue]["plan"]["recommended_workers"]


@pytest.mark.parametrize("queue", [HUGE, CONFIGURED, NEG_THROUGHPUT])
def test_whatif_queue_ends_with_the_sentence(
        hostile_prometheus: PrometheusProcess, config_file: Path, queue: str) -> None:
    done = run_cli("whatif", "--queue", queue, "--prometheus", hostile_prometheus.url,
                   "--at", str(AT), "--config", str(config_file), timeout_s=LIMIT_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(_sentences("")[queue]) == 1, done.stdout


def test_report_covers_the_whole_fleet(
        hostile_prometheus: PrometheusProcess, config_file: Path) -> None:
    done = run_cli("report", "--prometheus", hostile_prometheus.url, "--at", str(AT),
                   "--config", str(config_file), "--format", "md", timeout_s=LIMIT_S)
    assert done.returncode == 0, done.stderr
    for queue in (*NORMAL, *BAD):
        assert queue in done.stdout
    assert "is -3, an impossible negative value" in done.stdout  # markdown escapes the _


def test_queue_page_loader_ends_and_names_the_count(
        hostile_prometheus: PrometheusProcess, config_file: Path) -> None:
    from collectors.config import ConnectionSettings, load_config
    from collectors.prom_client import PrometheusClient
    from collectors.snapshot import PrometheusSource

    config = load_config(config_file)
    client = PrometheusClient(ConnectionSettings(url=hostile_prometheus.url))
    source = PrometheusSource(client, config.profile)
    try:
        _page(source)
    finally:
        source.close()


def _page(source: object) -> None:
    from dashboard.pages.queue import queue_view

    for queue in (HUGE, CONFIGURED):
        view = queue_view(source, queue, "1h", float(AT))  # type: ignore[arg-type]
        assert not view.message, view.message
        assert view.summary.count(_sentences("")[queue]) == 1, view.summary
        assert [v.kind for v in view.verdicts] == ["insufficient_data"]
        assert view.plan is not None
        assert view.plan.workers_now is None
        assert any("No M/M/c estimate" in line for line in view.model_fit), view.model_fit
