"""`queuelens snapshot` against the real backfilled Prometheus, and its failure modes."""

from __future__ import annotations

import json
import math
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dashboard.cli import main
from tests.support.cli import run_cli
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
    # the scenario's waits: 60 % in (0.1 s, 1 s], 40 % in (1 s, 10 s] -> p95 in (1, 10]
    assert dep["quantile_bounds"]["queue_wait_p95_s"] == pytest.approx([1.0, 10.0])
    weird = next(q for q in out["queues"] if q["queue"] == WEIRD)
    # 6 % of its waits above the 10 s top bucket: the p95 has no upper bound (null)
    assert weird["quantile_bounds"]["queue_wait_p95_s"] == [10.0, None]
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


# --- quantiles as their buckets support them (the demo: client-go's decade buckets) ------

DEMO_AT = "2024-03-01T14:00:00Z"
EDGE_TEXT = {1e-8: "10 ns", 1e-7: "100 ns", 1e-6: "1 µs", 1e-5: "10 µs", 1e-4: "100 µs",
             1e-3: "1 ms", 1e-2: "10 ms", 0.1: "0.1 s", 1.0: "1 s", 10.0: "10 s"}
"""Each decade edge as the table writes it (ms/µs/ns rather than exponents)."""


def _demo_p95_buckets() -> dict[str, tuple[float, float]]:
    """The bucket each demo queue's p95 wait falls in, counted from the demo's own bucket
    increases: the first le whose cumulative count reaches 0.95 × the +Inf count."""
    from collectors.demo import DemoSource
    from collectors.timeparse import parse_time

    raw = DemoSource().raw([parse_time(DEMO_AT)], 300.0)
    (hist,) = raw.histograms["queue_wait"]
    out = {}
    for i, queue in enumerate(raw.queues):
        cum = np.maximum.accumulate(hist.counts[i, 0])
        k = int(np.argmax(cum >= 0.95 * cum[-1]))
        lo = float(hist.bounds[k - 1]) if k else 0.0
        out[queue] = (lo, float(hist.bounds[k]))
    return out


def _edge(bound: float) -> str:
    return next(text for edge, text in EDGE_TEXT.items() if math.isclose(bound, edge))


def test_demo_table_shows_a_decade_bucket_as_a_range() -> None:
    proc = run_cli("snapshot", "--demo", "--at", DEMO_AT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    header = re.split(r"\s{2,}", lines[1].strip())
    col = header.index("queue_wait_p95_s")
    rows = {cells[0]: cells for cells in (re.split(r"\s{2,}", line.strip())
                                          for line in lines[3:] if line.strip())}
    buckets = _demo_p95_buckets()
    assert set(rows) == set(buckets)
    for queue, (lo, hi) in buckets.items():
        assert hi / lo == pytest.approx(10.0)  # every p95 sits in a decade bucket …
        # … so it is a range, never a 4-digit number like "9.44e-05"
        assert rows[queue][col] == f"between {_edge(lo)} and {_edge(hi)}", queue
    assert rows["secret"][col] == "between 10 µs and 100 µs"


def test_demo_json_carries_the_bucket_bounds() -> None:
    proc = run_cli("snapshot", "--demo", "--at", DEMO_AT, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    queues = {q["queue"]: q for q in json.loads(proc.stdout)["queues"]}
    for queue, (lo, hi) in _demo_p95_buckets().items():
        got = queues[queue]["quantile_bounds"]["queue_wait_p95_s"]
        assert got == pytest.approx([lo, hi]), queue
        assert lo <= queues[queue]["queue_wait_p95_s"] <= hi  # PromQL's value inside it
    # a quantile in the +Inf bucket: no upper bound, written as null (never Infinity)
    vs = queues["volumesnapshot"]
    assert vs["quantile_bounds"]["work_p99_s"] == [10.0, None]
    assert "Infinity" not in proc.stdout
    assert "NaN" not in proc.stdout


def test_csv_keeps_the_numbers() -> None:
    proc = run_cli("snapshot", "--demo", "--at", DEMO_AT, "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    header, first, *_ = proc.stdout.splitlines()
    row = dict(zip(header.split(","), first.split(","), strict=True))
    float(row["queue_wait_p95_s"])  # a number for machines, not the table's words
