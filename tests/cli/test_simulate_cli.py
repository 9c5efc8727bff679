"""`queuelens simulate` end to end."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dashboard.cli import main
from dashboard.commands.simulate import DEFAULT_START_UNIX as DEFAULT_START
from tests.conftest import require_binary
from tests.support.cli import run_main
from tests.support.prometheus import HINT as PROMETHEUS_HINT


def test_simulate_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--arrival-rate", "20", "--keys", "50", "--zipf", "1.1", "--workers", "2",
            "--service-mean", "0.05", "--fail-prob", "0.1", "--retry", "exp:0.005:1000",
            "--jitter", "full", "--global-qps", "5", "--dependency-qps", "30",
            "--duration", "60s", "--seed", "4", "--format", "json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["raw_events"] > 1000
    assert data["coalescing_ratio"] >= 1.0
    assert data["retries"] == data["failed"] > 0
    assert "trace" not in data
    assert "full jitter" in data["inputs"]["retry"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == data  # same seed, same answer


def test_simulate_table_and_trace(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--arrival-rate", "5", "--keys", "3", "--workers", "1",
                 "--service-mean", "0.1", "--duration", "10", "--trace", "20"]) == 0
    out = capsys.readouterr().out
    assert "queue wait mean s" in out
    assert "raw events" in out
    assert main(["simulate", "--arrival-rate", "5", "--keys", "3", "--workers", "1",
                 "--service-mean", "0.1", "--duration", "10", "--trace", "20",
                 "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["trace"]) == 20


@pytest.mark.parametrize("extra", [
    ["--retry", "linear:1"],
    ["--burst", "5"],
    ["--jitter", "full", "--retry", "const:0"],
])
def test_simulate_bad_input(extra: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--arrival-rate", "5", "--keys", "3", "--workers", "1",
            "--service-mean", "0.1", "--duration", "10", *extra]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("queuelens: error:")


def test_simulate_argparse_rejects_bad_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--arrival-rate", "5", "--keys", "0", "--workers", "1",
              "--service-mean", "0.1", "--duration", "10"])
    assert exc.value.code == 2


# --- the mechanisms: serial section, coherency, API client, load and workers over time ------

BASE = ["simulate", "--keys", "5", "--service-mean", "0.1", "--duration", "10"]
ONE = ["--arrival-rate", "5", "--workers", "1"]




@pytest.mark.parametrize(("extra", "says"), [
    ([*ONE, "--lock-fraction", "1.5"], "--lock-fraction"),
    ([*ONE, "--lock-fraction", "-0.1"], "--lock-fraction"),
    ([*ONE, "--lock-fraction", "nan"], "--lock-fraction"),
    ([*ONE, "--coherence", "x"], "--coherence"),
    ([*ONE, "--coherence", "0.05:x"], "--coherence"),
    ([*ONE, "--coherence", "0.05:0.002:1"], "SIGMA:KAPPA"),
    ([*ONE, "--coherence", "-0.1"], "--coherence"),
    ([*ONE, "--coherence", "11"], "at most 10"),
    ([*ONE, "--api-qps", "0", "--api-calls", "1"], "--api-qps"),
    ([*ONE, "--api-qps", "inf", "--api-calls", "1"], "--api-qps"),
    ([*ONE, "--api-qps", "20"], "--api-calls"),
    ([*ONE, "--api-calls", "1", "--api-burst", "0", "--api-qps", "5"], "--api-burst"),
    ([*ONE, "--api-calls", "1", "--api-burst", "2.5", "--api-qps", "5"], "--api-burst"),
    ([*ONE, "--api-calls", "1", "--api-burst", "5"], "--api-qps"),
    ([*ONE, "--api-calls", "-1"], "--api-calls"),
    ([*ONE, "--api-calls", "two"], "--api-calls"),
    ([*ONE, "--api-calls", "1001"], "at most 1000"),
    ([*ONE, "--api-calls", "1", "--api-latency", "20x"], "--api-latency"),
    ([*ONE, "--api-calls", "1", "--api-latency", "-5ms"], "--api-latency"),
    ([*ONE, "--api-latency", "20ms"], "--api-calls"),
    ([*ONE, "--hot-key-share", "1"], "--hot-key-share"),
    ([*ONE, "--hot-key-share", "-0.2"], "--hot-key-share"),
    ([*ONE, "--hot-key-share", "0.5", "--zipf", "1.1"], "--zipf"),
    ([*ONE, "--rate-schedule", "0:5"], "not both"),
    (["--workers", "1"], "--rate-schedule"),
    (["--workers", "1", "--rate-schedule", "10s:5"], "time 0"),
    (["--workers", "1", "--rate-schedule", "0:5,1x:3"], "'1x:3'"),
    (["--workers", "1", "--rate-schedule", "0:5,5s:-1"], "--rate-schedule"),
    (["--workers", "1", "--rate-schedule", "0:5,5s"], "TIME:VALUE"),
    (["--workers", "1", "--rate-schedule", "sine:5:2:10s"], "amplitude"),
    (["--workers", "1", "--rate-schedule", "sine:5:0.5"], "sine:MEAN:AMPLITUDE:PERIOD"),
    (["--arrival-rate", "5", "--workers", "1", "--workers-schedule", "0:2"], "not both"),
    (["--arrival-rate", "5"], "--workers-schedule"),
    (["--arrival-rate", "5", "--workers-schedule", "0:0"], "--workers-schedule"),
    (["--arrival-rate", "5", "--workers-schedule", "0:2,5s:1.5"], "whole number"),
    (["--arrival-rate", "5", "--workers-schedule", "0:2,5s:3,4s:1"], "increase"),
    ([*ONE, "--scrape-interval", "5s"], "--emit-openmetrics"),
    ([*ONE, "--queue-name", "q"], "--emit-openmetrics"),
    ([*ONE, "--pod", "p-0"], "--emit-openmetrics"),
    ([*ONE, "--start", "1704067200"], "--emit-openmetrics"),
    ([*ONE, "--emit-openmetrics", "-"], "file name"),
    ([*ONE, "--emit-openmetrics", "{tmp}/nope/sim.om"], "does not exist"),
    ([*ONE, "--emit-openmetrics", "{tmp}"], "is a directory"),
    ([*ONE, "--emit-openmetrics", "/dev/null"], "not a regular file"),
    ([*ONE, "--emit-openmetrics", "{tmp}/sim.om", "--scrape-interval", "0"], "--scrape-interval"),
    ([*ONE, "--emit-openmetrics", "{tmp}/sim.om", "--scrape-interval", "1ms"], "at least"),
    ([*ONE, "--emit-openmetrics", "{tmp}/sim.om", "--scrape-interval", "1ms", "--duration",
      "1h"], "--scrape-interval"),
    ([*ONE, "--emit-openmetrics", "{tmp}/sim.om", "--duration", "30d", "--scrape-interval",
      "1s"], "longer --scrape-interval"),
    ([*ONE, "--emit-openmetrics", "{tmp}/sim.om"], "15s (the default) is longer than"),
    ([*ONE, "--emit-openmetrics", "{tmp}/sim.om", "--scrape-interval", "11s"], "--duration"),
    ([*ONE, "--emit-openmetrics", "{tmp}/sim.om", "--start", "-1"], "--start"),
    ([*ONE, "--emit-openmetrics", "{tmp}/sim.om", "--start", "yesterday"], "--start"),
    ([*ONE, "--emit-openmetrics", "{tmp}/sim.om", "--start", "1e30"], "--start"),
    ([*ONE, "--emit-openmetrics", "{tmp}/sim.om", "--queue-name", " "], "--queue-name"),
    ([*ONE, "--emit-openmetrics", "{tmp}/sim.om", "--pod", ""], "--pod"),
])
def test_simulate_new_flags_reject_bad_values_in_one_line(
    extra: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*BASE, *(a.replace("{tmp}", str(tmp_path)) for a in extra), "--format", "json"]
    code, out, err = run_main(argv, capsys)
    assert code == 2, err
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.endswith("\n")
    assert "error:" in err
    assert "Traceback" not in err
    assert says in err
    assert list(tmp_path.iterdir()) == []  # nothing written, no temp file left behind


def test_simulate_help_states_units(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(["simulate", "--help"], capsys)
    assert code == 0
    text = " ".join(out.split())
    for flag in ("--lock-fraction", "--coherence", "--api-qps", "--api-burst", "--api-calls",
                 "--api-latency", "--hot-key-share", "--rate-schedule", "--workers-schedule",
                 "--emit-openmetrics", "--scrape-interval", "--queue-name", "--pod", "--start"):
        assert flag in text
    assert "a bare number is seconds" in text
    assert "e.g. 20ms (bare number = seconds" in text  # --api-latency
    assert "time between scrapes (default 15s; bare number = seconds)" in text


def sim_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, err = run_main([*argv, "--format", "json"], capsys)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


@pytest.mark.parametrize(("dist", "workers", "duration", "tol"), [
    ("const", 4, 60, 0.01),
    ("exp", 8, 300, 0.04),
])
def test_simulate_lock_fraction_caps_throughput_at_one_over_f_es(
    dist: str, workers: int, duration: int, tol: float, capsys: pytest.CaptureFixture[str]
) -> None:
    F, mean_s = 0.6, 0.05
    ceiling = 1.0 / (F * mean_s)  # 33.3/s, well below c/E[S] = 80/s or 160/s
    data = sim_json(["simulate", "--arrival-rate", "200", "--keys", "1000",
                     "--workers", str(workers), "--service-mean", str(mean_s),
                     "--service-dist", dist, "--lock-fraction", str(F),
                     "--duration", str(duration), "--warmup", "5"], capsys)
    assert data["throughput_per_s"] == pytest.approx(ceiling, rel=tol)
    assert data["lock_wait_mean_s"] > 0
    assert data["inputs"]["lock_fraction"] == F
    assert data["depth_mean"] > 100  # overload: the queue holds most keys


def test_simulate_api_qps_caps_throughput_at_qps_over_calls(
    capsys: pytest.CaptureFixture[str],
) -> None:
    qps, calls = 20, 2
    argv = ["simulate", "--arrival-rate", "100", "--keys", "1000", "--workers", "4",
            "--service-mean", "0.01", "--api-qps", str(qps), "--api-calls", str(calls),
            "--api-latency", "5ms", "--duration", "60", "--warmup", "10"]
    data = sim_json(argv, capsys)
    assert data["throughput_per_s"] == pytest.approx(qps / calls, rel=0.03)
    assert data["api_calls"] == pytest.approx(qps * 50, rel=0.03)  # the 50 s after warmup
    assert data["api_limiter_wait_mean_s"] > 0
    assert data["inputs"]["api_latency_s"] == 0.005
    code, out, _ = run_main(argv, capsys)
    assert code == 0
    assert "API calls" in out
    assert "API client limiter wait mean s" in out
    assert "2 API calls/pass at 20/s" in out


def test_simulate_new_rows_only_when_the_mechanism_is_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    plain = [*BASE, *ONE]
    labels = ("lock wait mean s", "workers (time mean)", "API calls",
              "API client limiter wait mean s")
    code, out, _ = run_main([*plain, "--format", "csv"], capsys)
    assert code == 0
    assert not any(label in out for label in labels)
    code, out, _ = run_main([*BASE, "--arrival-rate", "5", "--workers-schedule", "0:1,5s:3",
                             "--lock-fraction", "0.2", "--api-calls", "1", "--api-qps", "50",
                             "--format", "csv"], capsys)
    assert code == 0
    rows = dict(list(csv.reader(io.StringIO(out)))[1:])
    assert float(rows["workers (time mean)"]) == pytest.approx(2.0)  # 1 for 5 s, 3 for 5 s
    assert float(rows["lock wait mean s (per pass)"]) >= 0
    assert int(rows["API calls"]) > 0
    assert float(rows["API client limiter wait mean s (per call)"]) >= 0


def test_simulate_schedules_hot_key_and_coherence(capsys: pytest.CaptureFixture[str]) -> None:
    data = sim_json(["simulate", "--rate-schedule", "0:10,30s:50", "--keys", "20",
                     "--hot-key-share", "0.5", "--workers-schedule", "0:1,30s:3",
                     "--service-mean", "0.01", "--coherence", "0.05:0.002",
                     "--duration", "1m"], capsys)
    expected = 30 * 10 + 30 * 50  # 1800 raw events; Poisson sd ≈ 42
    assert abs(data["raw_events"] - expected) < 5 * expected**0.5
    assert data["workers_mean"] == pytest.approx(2.0)
    assert data["hot_key_throughput_per_s"] == pytest.approx(0.5 * expected / 60, rel=0.15)
    inputs = data["inputs"]
    assert inputs["arrival_rate_per_s"] is None
    assert inputs["rate_schedule"] == "0:10,30s:50"
    assert inputs["arrival_rate_mean_per_s"] == pytest.approx(30.0)
    assert inputs["workers_schedule"] == "0:1,30s:3"
    assert (inputs["coherence_sigma"], inputs["coherence_kappa"]) == (0.05, 0.002)
    sine = sim_json(["simulate", "--rate-schedule", "sine:20:0.5:1m", "--keys", "20",
                     "--workers", "2", "--service-mean", "0.01", "--duration", "2m"], capsys)
    assert abs(sine["raw_events"] - 2400) < 5 * 2400**0.5  # whole periods: the mean rate


def _last_sample(text: str, sample: str) -> tuple[str, float, float]:
    line = [x for x in text.splitlines() if x.startswith(sample + "{")][-1]
    head, value, stamp = line.rsplit(" ", 2)
    return head, float(value), float(stamp)


def test_simulate_emit_openmetrics_is_accepted_by_promtool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    promtool = require_binary("promtool", PROMETHEUS_HINT)
    om = tmp_path / "sim.om"
    om.write_text("an older file, replaced\n")
    start = 1704074400  # 2024-01-01T02:00:00Z
    data = sim_json(["simulate", "--arrival-rate", "20", "--keys", "50", "--workers", "2",
                     "--service-mean", "0.05", "--fail-prob", "0.1", "--api-calls", "1",
                     "--api-qps", "50", "--api-latency", "20ms", "--duration", "5m",
                     "--seed", "3", "--emit-openmetrics", str(om), "--scrape-interval", "15s",
                     "--queue-name", "dnsrecord", "--pod", "ctrl-7", "--start", str(start)],
                    capsys)
    assert "metrics" not in data  # the series go to the file, not into the JSON
    assert data["openmetrics"]["scrapes"] == 21  # 0, 15 s, … 300 s
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sim.om"]  # no temp file left
    text = om.read_text()
    assert text.endswith("# EOF\n")
    head, adds, stamp = _last_sample(text, "workqueue_adds_total")
    assert adds == data["adds"]  # no warmup: the counter covers the whole run
    assert stamp == start + 300
    assert 'name="dnsrecord"' in head
    assert 'pod="ctrl-7"' in head
    _, retries, _ = _last_sample(text, "workqueue_retries_total")
    assert retries == data["retries"] > 0
    assert "rest_client_rate_limiter_duration_seconds_bucket{" in text
    tsdb = tmp_path / "tsdb"
    tsdb.mkdir()
    proc = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(om),
                           str(tsdb)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert any(tsdb.iterdir())  # a block was cut


def test_simulate_emit_openmetrics_with_no_observations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No event at all: every histogram is empty at every scrape, still valid OpenMetrics."""
    promtool = require_binary("promtool", PROMETHEUS_HINT)
    om = tmp_path / "idle.om"
    code, out, err = run_main([*BASE, "--arrival-rate", "0", "--workers", "1", "--api-calls",
                               "1", "--emit-openmetrics", str(om), "--scrape-interval", "5",
                               "--format", "json"], capsys)
    assert code == 0, err
    assert json.loads(out)["adds"] == 0
    text = om.read_text()
    assert _last_sample(text, "workqueue_work_duration_seconds_sum")[1] == 0
    tsdb = tmp_path / "tsdb"
    tsdb.mkdir()
    proc = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(om),
                           str(tsdb)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_simulate_emit_openmetrics_notes_a_run_end_between_scrapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    om = tmp_path / "sim.om"
    code, _, err = run_main([*BASE, *ONE, "--emit-openmetrics", str(om), "--scrape-interval",
                             "3"], capsys)
    assert code == 0
    assert "wrote 4 scrapes of" in err
    assert "the last scrape is at 9s, before the end of the run (10s)" in err
    text = om.read_text()
    assert _last_sample(text, "workqueue_depth")[2] == DEFAULT_START + 9
    assert 'name="simulated"' in text
    assert 'pod="simulated-0"' in text


def test_simulate_emit_openmetrics_refuses_a_symlink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me\n")
    link = tmp_path / "sim.om"
    link.symlink_to(target)
    dangling = tmp_path / "dangling.om"
    dangling.symlink_to(tmp_path / "missing")
    for path in (link, dangling):
        code, out, err = run_main([*BASE, *ONE, "--emit-openmetrics", str(path)], capsys)
        assert code == 2
        assert out == ""
        assert err.count("\n") == 1
        assert "symbolic link" in err
        assert path.is_symlink()
    assert target.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.om", "elsewhere.txt",
                                                          "sim.om"]


# --- issue 12: hostile numbers are one line, exit 2 ------------------------------------------

@pytest.mark.parametrize(("flag", "value"), [
    ("--seed", "-1"), ("--seed", str(2**64)), ("--seed", "1.5"),
    ("--keys", str(2**62 + 1)), ("--workers", "9" * 400), ("--workers", str(2**64)),
    ("--trace", str(10**20)), ("--trace", "-1"),
    ("--dependency-qps", "1e308"), ("--global-qps", "1e13"), ("--burst", str(10**16)),
])
def test_out_of_range_whole_numbers_are_argument_errors(
        flag: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main([*BASE, *ONE, flag, value], capsys)
    assert code == 2, err
    assert f"argument {flag}" in err
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_the_largest_seed_and_key_count_run(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(["simulate", "--arrival-rate", "5", "--keys", str(2**62),
                               "--workers", "1", "--service-mean", "0.1", "--duration", "10",
                               "--seed", str(2**64 - 1), "--format", "json"], capsys)
    assert code == 0, err
    assert json.loads(out)["raw_events"] > 0


# --- the API server side: priority level, admission webhook, write conflicts ------------------

SERVER_LABELS = ("API requests (every attempt)", "API retries (after a 429)", "API 429 answers",
                 "API 409 conflicts", "API calls failed", "API writes stored (200)",
                 "APF requests dispatched", "APF rejected: queue full",
                 "APF rejected: wait limit", "APF queue wait mean s", "APF seats busy (mean)",
                 "webhook admissions", "webhook slot wait mean s", "webhook admission mean s")
SATURATED = ["simulate", "--arrival-rate", "100", "--keys", "1000", "--workers", "8",
             "--service-mean", "0.01", "--api-calls", "2", "--api-latency", "50ms",
             "--duration", "60", "--seed", "1"]
"""8 workers, 2 calls of 50 ms a pass: up to 8 requests at once for a level of 1 seat."""
WRITES = ["simulate", "--arrival-rate", "20", "--keys", "50", "--service-mean", "0.05",
          "--api-calls", "2", "--api-writes", "1", "--api-latency", "10ms", "--duration", "60"]


def test_simulate_apf_seats_queue_the_requests(capsys: pytest.CaptureFixture[str]) -> None:
    data = sim_json([*SATURATED, "--apf-seats", "1"], capsys)
    assert data["api_429"] > 0 or data["apf_wait_mean_s"] > 0
    assert data["apf_wait_mean_s"] > 0.05  # a queue of workers behind one seat
    assert data["apf_busy_seats_mean"] == pytest.approx(1.0, abs=0.01)  # saturated
    assert data["throughput_per_s"] == pytest.approx(1 / (2 * 0.05), rel=0.05)  # the seat
    inputs = data["inputs"]
    assert inputs["apf_seats"] == 1
    assert inputs["apf_queue_limit"] == 50
    assert inputs["apf_wait_limit_s"] == 15.0
    assert inputs["apf_retry_after_s"] is None  # the API server's dynamic one
    assert inputs["api_max_retries"] == 10
    assert inputs["webhook_latency_s"] is None
    # more seats than workers: no wait at all
    roomy = sim_json([*SATURATED, "--apf-seats", "16"], capsys)
    assert roomy["apf_wait_mean_s"] == 0
    assert roomy["api_429"] == 0


def test_simulate_apf_rejections_retries_and_failed_passes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = [*SATURATED, "--apf-seats", "1", "--apf-queue-limit", "0"]
    data = sim_json([*base, "--apf-retry-after", "1s"], capsys)
    assert data["api_429"] > 0
    assert data["apf_rejected_queue_full"] >= data["api_429"]
    assert data["api_retries"] > 0
    assert data["api_retries"] <= data["api_429"]  # a retry follows a 429
    # every attempt is dispatched or rejected (but the few in flight at the end)
    assert abs(data["apf_dispatched"] + data["api_429"] - data["api_attempts"]) <= 8
    assert data["inputs"]["apf_retry_after_s"] == 1.0
    no_retry = sim_json([*base, "--api-max-retries", "0"], capsys)
    assert no_retry["api_retries"] == 0
    assert no_retry["api_failed_calls"] == no_retry["api_429"] > 0  # each 429 fails its call
    assert no_retry["failed"] >= no_retry["api_failed_calls"] > 0  # … and its pass
    assert no_retry["retries"] > 0  # AddRateLimited
    # the level's other clients take seats too: rejected at the wait limit
    busy = sim_json([*SATURATED, "--apf-seats", "2", "--apf-wait-limit", "100ms",
                     "--apf-background-rate", "50", "--apf-background-latency", "40ms"],
                    capsys)
    assert busy["apf_rejected_timeout"] > 0
    assert busy["apf_dispatched"] > busy["api_attempts"] - busy["api_429"]  # background
    assert busy["inputs"]["apf_background_rate_per_s"] == 50
    assert busy["inputs"]["apf_background_latency_s"] == 0.04
    assert busy["inputs"]["apf_wait_limit_s"] == 0.1


@pytest.mark.parametrize(("workers", "conflicts"), [(1, False), (4, True)])
def test_simulate_conflict_objects_409_only_with_concurrent_passes(
    workers: int, conflicts: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    data = sim_json([*WRITES, "--workers", str(workers), "--conflict-objects", "1"], capsys)
    assert data["api_writes_ok"] > 0
    if conflicts:
        assert data["api_409"] > 0
        assert data["failed"] >= data["api_409"]  # a 409 fails its pass
    else:
        assert data["api_409"] == 0  # one worker: no pass writes under another's feet
        assert data["failed"] == 0
    assert data["inputs"]["conflict_objects"] == 1
    assert data["inputs"]["api_writes"] == 1


def test_simulate_webhook_admission(capsys: pytest.CaptureFixture[str]) -> None:
    data = sim_json([*WRITES, "--workers", "4", "--webhook-latency", "20ms",
                     "--webhook-concurrency", "1"], capsys)
    assert data["api_writes_ok"] > 0
    assert abs(data["webhook_admissions"] - data["api_writes_ok"]) <= 4  # but those in flight
    assert data["admission_mean_s"] >= 0.02
    assert data["webhook_wait_mean_s"] > 0  # one slot, four workers: writes queue for it
    assert data["admission_mean_s"] == pytest.approx(0.02 + data["webhook_wait_mean_s"])
    assert data["apf_wait_mean_s"] is None  # no priority level
    assert (data["inputs"]["webhook_latency_s"], data["inputs"]["webhook_concurrency"]) == (
        0.02, 1)


def test_simulate_server_rows_and_header_only_when_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_main([*BASE, *ONE, "--api-calls", "1"], capsys)
    assert code == 0
    assert not any(label in out for label in SERVER_LABELS)
    assert "APF" not in out.splitlines()[0]
    code, out, _ = run_main([*SATURATED, "--apf-seats", "1"], capsys)
    assert code == 0
    header = out.splitlines()[0]
    assert ("2 API calls/pass, APF 1 seat (queue 50, wait limit 15s; Retry-After dynamic, "
            "10 client retries)") in header
    for label in ("API 429 answers", "APF queue wait mean s", "APF seats busy (mean)"):
        assert label in out
    for label in ("API 409 conflicts", "webhook admission mean s", "API writes stored"):
        assert label not in out
    code, out, _ = run_main([*WRITES, "--workers", "2", "--webhook-latency", "20ms",
                             "--conflict-objects", "3", "--format", "csv"], capsys)
    assert code == 0
    rows = dict(list(csv.reader(io.StringIO(out)))[1:])
    assert float(rows["webhook admission mean s"]) == pytest.approx(0.02)
    assert int(rows["API 409 conflicts"]) > 0  # 2 workers on 3 shared objects collide
    assert "APF queue wait mean s" not in rows
    code, out, _ = run_main([*WRITES, "--workers", "2", "--webhook-latency", "20ms",
                             "--webhook-concurrency", "2", "--conflict-objects", "3"], capsys)
    assert code == 0
    assert ("2 API calls/pass, 1 of them writes, webhook 0.02s x 2 slots, "
            "3 shared objects (409s)") in out.splitlines()[0]


@pytest.mark.parametrize(("generation", "old_gauges"), [(None, False), ("1.37", False),
                                                        ("1.36", True)])
def test_simulate_emit_openmetrics_with_the_api_server(
    generation: str | None, old_gauges: bool, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    om = tmp_path / "sim.om"
    extra = [] if generation is None else ["--apiserver-generation", generation]
    data = sim_json([*SATURATED, "--apf-seats", "2", "--api-writes", "1",
                     "--webhook-latency", "10ms", "--emit-openmetrics", str(om), *extra],
                    capsys)
    assert data["openmetrics"]["apiserver_generation"] == (generation or "1.37")
    text = om.read_text()
    head, seats, _ = _last_sample(text, "apiserver_flowcontrol_nominal_limit_seats")
    assert seats == 2
    assert 'priority_level="workload-low"' in head
    assert ("apiserver_flowcontrol_request_concurrency_limit{" in text) is old_gauges
    _, dispatched, _ = _last_sample(text, "apiserver_flowcontrol_dispatched_requests_total")
    assert dispatched == data["apf_dispatched"] > 0
    assert "apiserver_admission_webhook_admission_duration_seconds_bucket{" in text
    if generation == "1.36":
        promtool = require_binary("promtool", PROMETHEUS_HINT)
        tsdb = tmp_path / "tsdb"
        tsdb.mkdir()
        proc = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(om),
                               str(tsdb)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr


def test_simulate_emit_openmetrics_without_a_server_is_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    om = tmp_path / "sim.om"
    data = sim_json([*BASE, *ONE, "--api-calls", "1", "--emit-openmetrics", str(om),
                     "--scrape-interval", "5"], capsys)
    assert "apiserver_generation" not in data["openmetrics"]
    assert "apiserver_" not in om.read_text()


CALLS = ["--api-calls", "2"]
SEATS = [*CALLS, "--apf-seats", "2"]
WRITE = [*CALLS, "--api-writes", "1"]


@pytest.mark.parametrize(("extra", "says"), [
    (["--api-writes", "1"], "--api-writes needs --api-calls"),
    ([*CALLS, "--api-writes", "3"], "cannot exceed --api-calls 2"),
    ([*CALLS, "--api-writes", "-1"], "--api-writes"),
    ([*CALLS, "--api-writes", "1001"], "1,000"),
    (["--apf-seats", "2"], "--apf-seats needs --api-calls"),
    ([*CALLS, "--apf-seats", "0"], "--apf-seats"),
    ([*CALLS, "--apf-seats", "10001"], "10,000"),
    ([*CALLS, "--apf-seats", "1.5"], "whole number"),
    (["--apf-queue-limit", "5"], "--apf-queue-limit needs --api-calls"),
    ([*CALLS, "--apf-queue-limit", "5"], "--apf-queue-limit needs --apf-seats"),
    ([*SEATS, "--apf-queue-limit", "-1"], "--apf-queue-limit"),
    ([*SEATS, "--apf-queue-limit", str(10**7)], "1,000,000"),
    ([*CALLS, "--apf-wait-limit", "5s"], "--apf-wait-limit needs --apf-seats"),
    ([*SEATS, "--apf-wait-limit", "0"], "--apf-wait-limit"),
    ([*SEATS, "--apf-wait-limit", "2m"], "at most 60s"),
    ([*SEATS, "--apf-wait-limit", "5x"], "not a duration"),
    ([*CALLS, "--apf-background-rate", "5"], "--apf-background-rate needs --apf-seats"),
    ([*SEATS, "--apf-background-rate", "-5"], "--apf-background-rate"),
    ([*SEATS, "--apf-background-rate", "nan"], "--apf-background-rate"),
    ([*SEATS, "--apf-background-rate", "1e13"], "at most"),
    ([*SEATS, "--apf-background-latency", "50ms"], "needs --apf-background-rate"),
    ([*SEATS, "--apf-background-rate", "5", "--apf-background-latency", "2h"], "at most 3600s"),
    ([*SEATS, "--apf-background-rate", "1e8"], "APF background requests"),  # the simulator's
    ([*CALLS, "--apf-retry-after", "1"], "--apf-retry-after needs --apf-seats"),
    ([*SEATS, "--apf-retry-after", "1.5s"], "whole seconds"),
    ([*SEATS, "--apf-retry-after", "500ms"], "whole seconds"),
    ([*SEATS, "--apf-retry-after", "2h"], "whole seconds from 1 to 3600"),
    ([*SEATS, "--apf-retry-after", "0"], "--apf-retry-after"),
    ([*CALLS, "--api-max-retries", "3"], "--api-max-retries needs --apf-seats"),
    ([*SEATS, "--api-max-retries", "101"], "100"),
    ([*SEATS, "--api-max-retries", "-1"], "--api-max-retries"),
    (["--webhook-latency", "20ms"], "--webhook-latency needs --api-writes"),
    ([*CALLS, "--webhook-latency", "20ms"], "--webhook-latency needs --api-writes"),
    ([*WRITE, "--webhook-latency", "31s"], "at most 30s"),
    ([*WRITE, "--webhook-latency", "-1ms"], "--webhook-latency"),
    ([*WRITE, "--webhook-concurrency", "2"], "--webhook-concurrency needs --webhook-latency"),
    ([*WRITE, "--webhook-latency", "20ms", "--webhook-concurrency", "0"],
     "--webhook-concurrency"),
    ([*CALLS, "--conflict-objects", "1"], "--conflict-objects needs --api-writes"),
    ([*WRITE, "--conflict-objects", "0"], "--conflict-objects"),
    ([*WRITE, "--conflict-objects", str(10**8)], "10,000,000"),
    ([*SEATS, "--apiserver-generation", "1.36"], "needs --emit-openmetrics"),
    ([*CALLS, "--emit-openmetrics", "{tmp}/sim.om", "--scrape-interval", "5",
      "--apiserver-generation", "1.36"], "needs a modelled API server"),
    ([*SEATS, "--emit-openmetrics", "{tmp}/sim.om", "--scrape-interval", "5",
      "--apiserver-generation", "1.35"], "invalid choice"),
])
def test_simulate_server_flags_reject_bad_values_in_one_line(
    extra: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*BASE, *ONE, *(a.replace("{tmp}", str(tmp_path)) for a in extra),
            "--format", "json"]
    code, out, err = run_main(argv, capsys)
    assert code == 2, err
    assert out == ""
    assert err.count("\n") == 1, err
    assert "error:" in err
    assert "Traceback" not in err
    assert says in err
    assert list(tmp_path.iterdir()) == []


def test_simulate_help_states_the_server_flags_and_units(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_main(["simulate", "--help"], capsys)
    assert code == 0
    text = " ".join(out.split())
    assert "API server (priority level, admission webhook, write conflicts)" in text
    for flag in ("--api-writes", "--apf-seats", "--apf-queue-limit", "--apf-wait-limit",
                 "--apf-background-rate", "--apf-background-latency", "--apf-retry-after",
                 "--api-max-retries", "--webhook-latency", "--webhook-concurrency",
                 "--conflict-objects", "--apiserver-generation {1.36,1.37}"):
        assert flag in text
    for flag in ("--apf-wait-limit", "--apf-background-latency", "--apf-retry-after",
                 "--webhook-latency"):
        help_text = text.split(flag + " DURATION ", 1)[1][:300]
        assert "bare number = seconds" in help_text, flag
    assert "omit for the API server's dynamic one" in text


def test_server_defaults_are_the_simulators() -> None:
    """The defaults the command states and fills in are those of simulate() and the writer."""
    import inspect

    from collectors.openmetrics import APISERVER_GENERATIONS, simulated_families
    from dashboard.commands import simulate as cmd
    from models.simulate import simulate

    params = inspect.signature(simulate).parameters
    assert params["apf_queue_limit"].default == cmd.DEFAULT_APF_QUEUE_LIMIT
    assert params["apf_wait_limit_s"].default == cmd.DEFAULT_APF_WAIT_LIMIT_S
    assert params["apf_background_latency_s"].default == cmd.DEFAULT_APF_BACKGROUND_LATENCY_S
    assert params["api_max_retries"].default == cmd.DEFAULT_API_MAX_RETRIES
    assert params["apf_retry_after_s"].default is None
    assert cmd.APISERVER_GENERATIONS == APISERVER_GENERATIONS
    generation = inspect.signature(simulated_families).parameters["apiserver_generation"]
    assert generation.default == cmd.DEFAULT_APISERVER_GENERATION


def test_the_demo_points_at_real_simulate_flags(capsys: pytest.CaptureFixture[str]) -> None:
    """The demo's reason for its missing API server signals names flags that exist."""
    import re

    from collectors.demo import _NOT_IN_DEMO

    reason = _NOT_IN_DEMO["apf_seat_limit"]
    flags = re.findall(r"--[a-z][a-z-]*", reason)
    assert "--apf-seats" in flags
    code, out, _ = run_main(["simulate", "--help"], capsys)
    assert code == 0
    for flag in flags:
        assert f"{flag} " in out
    # and the command it names runs
    command = reason.split("see queuelens ", 1)[1].split(" for one")[0].split()
    assert command[0] == "simulate"
    argv = [*BASE, *ONE, *(("2" if a == "N" else a) for a in command[1:])]
    code, out, err = run_main(argv, capsys)
    assert code == 0, err
    assert "APF queue wait mean s" in out


# --- the connection pool, CPU cores and polling ---------------------------------------------

POOL = ["--pool-size", "2", "--pool-fraction", "0.5"]
CPU = ["--cpu-cores", "2", "--cpu-fraction", "0.5"]


@pytest.mark.parametrize(("extra", "says"), [
    (["--pool-fraction", "0.5"], "--pool-fraction needs --pool-size K"),
    (["--pool-size", "2"], "--pool-size needs --pool-fraction F above 0"),
    (["--pool-size", "2", "--pool-fraction", "0"], "--pool-size needs --pool-fraction"),
    (["--pool-size", "0", "--pool-fraction", "0.5"], "--pool-size"),
    (["--pool-size", "100001", "--pool-fraction", "0.5"], "100,000"),
    (["--pool-size", "two", "--pool-fraction", "0.5"], "--pool-size"),
    (["--pool-size", "2", "--pool-fraction", "1.5"], "--pool-fraction"),
    (["--cpu-fraction", "0.5"], "--cpu-fraction needs --cpu-cores N"),
    (["--cpu-cores", "2"], "--cpu-cores needs --cpu-fraction F above 0"),
    (["--cpu-cores", "10001", "--cpu-fraction", "0.5"], "10,000"),
    (["--cpu-cores", "2", "--cpu-fraction", "nan"], "--cpu-fraction"),
    ([*POOL, *CPU, "--lock-fraction", "0.2"], "add up to at most 1"),
    (["--requeue-after", "0"], "--requeue-after"),
    (["--requeue-after", "-5s"], "--requeue-after"),
    (["--requeue-after", "5x"], "--requeue-after"),
    (["--requeue-after", "400d"], "at most 3.1536e+07s"),
])
def test_simulate_pool_cpu_poll_flags_reject_bad_values_in_one_line(
    extra: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_main([*BASE, *ONE, *extra, "--format", "json"], capsys)
    assert code == 2, err
    assert out == ""
    assert err.count("\n") == 1, err
    assert "error:" in err
    assert "Traceback" not in err
    assert says in err


def test_simulate_without_the_pool_cpu_and_polling_prints_what_it_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    plain = sim_json([*BASE, *ONE, "--lock-fraction", "0.2"], capsys)
    for name in ("pool_wait_mean_s", "cpu_wait_mean_s", "cpu_busy_cores_mean", "requeue_after"):
        assert name not in plain
    for name in ("pool_size", "pool_fraction", "cpu_cores", "cpu_fraction", "requeue_after_s"):
        assert name not in plain["inputs"]
    code, out, _ = run_main([*BASE, *ONE, "--lock-fraction", "0.2"], capsys)
    assert code == 0
    for label in ("pool slot wait", "CPU wait", "CPU cores busy", "requeue_after", "pool ",
                  "RequeueAfter"):
        assert label not in out
    on = sim_json([*BASE, *ONE, *POOL, *CPU, "--requeue-after", "2s"], capsys)
    assert on["inputs"]["pool_size"] == 2
    assert on["inputs"]["cpu_fraction"] == 0.5
    assert on["inputs"]["requeue_after_s"] == 2.0
    assert on["requeue_after"] == on["completed"] > 0  # every pass succeeds and polls
    code, out, _ = run_main([*BASE, *ONE, *POOL, *CPU, "--requeue-after", "2s"], capsys)
    assert code == 0
    for label in ("pool slot wait mean s (per pass)", "CPU wait for a core mean s",
                  "CPU cores busy (mean)", "requeue_after reconciles (RequeueAfter)",
                  "pool 2 slots x fraction 0.5", "CPU fraction 0.5 on 2 cores",
                  "RequeueAfter 2s"):
        assert label in out


@pytest.mark.parametrize(("extra", "ceiling"), [
    (["--pool-size", "3", "--pool-fraction", "0.6"], 3 / (0.6 * 0.05)),
    (["--cpu-cores", "2", "--cpu-fraction", "0.8"], 2 / (0.8 * 0.05)),
])
def test_simulate_pool_and_cores_cap_throughput(
    extra: list[str], ceiling: float, capsys: pytest.CaptureFixture[str]
) -> None:
    data = sim_json(["simulate", "--arrival-rate", "400", "--keys", "100000", "--workers", "16",
                     "--service-mean", "50ms", *extra, "--duration", "120", "--warmup", "10"],
                    capsys)
    assert 3 * ceiling < 16 / 0.05  # the workers are not the limit
    assert data["throughput_per_s"] == pytest.approx(ceiling, rel=0.04)


def _last_value(text: str, head: str) -> float:
    """The last sample of the series written exactly as ``head`` (name and labels)."""
    return float([x for x in text.splitlines() if x.startswith(head + " ")][-1].split()[-2])


def test_simulate_emit_openmetrics_with_cpu_and_polling_is_accepted_by_promtool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    promtool = require_binary("promtool", PROMETHEUS_HINT)
    om = tmp_path / "sim.om"
    data = sim_json(["simulate", "--arrival-rate", "20", "--keys", "100", "--workers", "4",
                     "--service-mean", "50ms", *CPU, "--requeue-after", "30s",
                     "--duration", "5m", "--emit-openmetrics", str(om), "--pod", "ctrl-1"],
                    capsys)
    text = om.read_text()
    polls = _last_value(text, 'controller_runtime_reconcile_total{controller="simulated",'
                        'pod="ctrl-1",result="requeue_after"}')
    assert polls == data["requeue_after"] > 0
    _, retries, _ = _last_sample(text, "workqueue_retries_total")
    assert retries == polls  # every AddAfter counts
    assert _last_value(text, 'go_sched_gomaxprocs_threads{pod="ctrl-1"}') == 2
    cpu = _last_value(text, 'process_cpu_seconds_total{pod="ctrl-1"}')
    # the CPU seconds of the run: about its passes × 0.5 × 50 ms
    assert cpu == pytest.approx(data["completed"] * 0.5 * 0.05, rel=0.1)
    assert 'go_sched_latencies_seconds_bucket{pod="ctrl-1",le="+Inf"}' in text
    tsdb = tmp_path / "tsdb"
    tsdb.mkdir()
    proc = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(om),
                           str(tsdb)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_station_caps_are_the_simulators() -> None:
    from dashboard.commands import simulate as cmd
    from models import simulate as sim

    assert (cmd.MAX_POOL_SIZE, cmd.MAX_CPU_CORES, cmd.MAX_REQUEUE_AFTER_S) == (
        sim.MAX_POOL_SIZE, sim.MAX_CPU_CORES, sim.MAX_REQUEUE_AFTER_S)


def test_simulate_help_states_the_pool_cpu_and_polling_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_main(["simulate", "--help"], capsys)
    assert code == 0
    text = " ".join(out.split())
    for flag in ("--pool-size K", "--pool-fraction F", "--cpu-cores N", "--cpu-fraction F",
                 "--requeue-after DURATION"):
        assert flag in text
    assert "bare number = seconds" in text.split("--requeue-after DURATION ", 1)[1][:300]
    assert "K/(F x service mean)" in text
    assert "N/(F x service mean)" in text
