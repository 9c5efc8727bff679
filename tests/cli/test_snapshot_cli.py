"""`queuelens snapshot` against the real backfilled Prometheus, and its failure modes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dashboard.cli import main
from tests.support.prometheus import PrometheusProcess
from tests.support.workqueue_om import AT, TRUTH, WEIRD


def test_json_from_real_prometheus(backfilled_prometheus: PrometheusProcess,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["snapshot", "--prometheus", backfilled_prometheus.url, "--at", str(AT),
                 "--window", "5m", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert set(out) == {"at", "window_s", "source", "queues", "warnings"}
    assert out["at"] == AT
    assert out["window_s"] == 300
    assert out["source"] == backfilled_prometheus.url
    dep = next(q for q in out["queues"] if q["queue"] == "deployment")
    assert dep["labels"]["name"] == "deployment"
    for key in ("arrival_rate_per_s", "utilization", "queue_wait_p95_s", "service_mean_s"):
        assert dep[key] == pytest.approx(TRUTH["deployment"][key])
    weird = next(q for q in out["queues"] if q["queue"] == WEIRD)
    assert weird["workers"] is None
    assert "workers" in weird["missing"]
    assert any("lower bound" in w for w in out["warnings"])


def test_selector_rfc3339_and_table(backfilled_prometheus: PrometheusProcess,
                                    capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = tmp_path / "q.yaml"
    cfg.write_text("profile:\n  workers:\n    'cfg\"map\\sync': 3\n")  # YAML '' keeps \\
    code = main(["snapshot", "--prometheus", backfilled_prometheus.url,
                 "--at", "2024-01-01T00:50:00Z", "--config", str(cfg),
                 "--selector", '{job="kube-controller-manager"}'])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"source: {backfilled_prometheus.url}")
    rows = [line for line in lines[3:] if line and not line.startswith("warning")]
    assert len(rows) == 1
    assert rows[0].startswith(WEIRD)
    assert " 3 " in rows[0]  # workers from the config file


def test_csv(backfilled_prometheus: PrometheusProcess, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "--prometheus", backfilled_prometheus.url, "--at", str(AT),
                 "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("queue,arrival_rate_per_s")
    assert len(lines) == 1 + len({*TRUTH})


def test_unreachable_is_one_line_exit_3_and_fast() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "dashboard.cli", "snapshot", "--prometheus",
         f"http://admin:hunter2@127.0.0.1:{port}", "--timeout", "2s"],
        capture_output=True, text=True, timeout=30,
    )
    assert time.monotonic() - t0 < 10
    assert proc.returncode == 3
    assert proc.stdout == ""
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1
    assert f"127.0.0.1:{port}" in err[0]
    assert "connection refused" in err[0]
    assert "hunter2" not in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(("args", "fragment"), [
    (["--selector", "namespace=x"], "selector"),
    (["--window", "0s"], "duration"),
    (["--at", "yesterday"], "not a time"),
])
def test_bad_input_exit_2(args: list[str], fragment: str,
                          capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["snapshot", "--prometheus", "http://127.0.0.1:1", *args])
    except SystemExit as exc:  # argparse errors
        code = int(exc.code or 0)
    assert code == 2
    assert fragment in capsys.readouterr().err


def test_demo_and_prometheus_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["snapshot", "--demo", "--prometheus", "http://x:1"])
    assert info.value.code == 2
