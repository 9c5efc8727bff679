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
from typing import Any

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


# --- hostile queue names from Prometheus (issue 12 §13, §14) ------------------------------

CLEAR = "\x1b[2J"
HOSTILE_NAMES = ("=HYPERLINK(\"http://x\")", "+1", "-2", "@SUM(A1)", "\tlead", "\rlead",
                 f"clear{CLEAR}me", "title\x1b]0;pwned\x07", "csi\x9b31m", "del\x7f", "line\nbreak")


class _HostileSource:
    name = "hostile"

    def snapshot(self, at: float, window_s: float) -> Any:
        from models.measurements import QueueSnapshot, Snapshot

        return Snapshot(at=at, window_s=window_s, source=self.name,
                        queues=[QueueSnapshot(queue=n, arrival_rate_per_s=-0.5 if i == 0 else 1.0)
                                for i, n in enumerate(HOSTILE_NAMES)],
                        warnings=(f"queue clear{CLEAR}me has a scrape gap",))

    def range(self, *_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("snapshot reads no range")


@pytest.fixture
def hostile(monkeypatch: pytest.MonkeyPatch) -> None:
    import dashboard.source_args

    monkeypatch.setattr(dashboard.source_args, "source_from_args",
                        lambda *_a, **_k: _HostileSource())


def _control_chars(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]


@pytest.mark.usefixtures("hostile")
def test_csv_cells_that_start_a_formula_are_guarded(capsys: pytest.CaptureFixture[str]) -> None:
    import csv
    import io

    assert main(["snapshot", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    names = [r["queue"] for r in rows]
    assert names[:6] == ["'=HYPERLINK(\"http://x\")", "'+1", "'-2", "'@SUM(A1)", "'\tlead",
                         "'\rlead"]
    # not a terminal: the rest of the text is kept exactly (the guard adds, never drops)
    assert names[6:] == list(HOSTILE_NAMES[6:])
    assert rows[0]["arrival_rate_per_s"] == "-0.5"  # a number is not a formula


@pytest.mark.usefixtures("hostile")
def test_the_table_escapes_control_characters(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot"]) == 0
    out = capsys.readouterr().out
    assert _control_chars(out) == []
    assert "clear\\x1b[2Jme" in out
    assert "title\\x1b]0;pwned\\x07" in out
    assert "csi\\x9b31m" in out
    assert "del\\x7f" in out
    assert "line\\nbreak" in out
    assert "\\tlead" in out
    assert "\\rlead" in out
    # the warning in the footer too, on its own line
    assert "warning: queue clear\\x1b[2Jme has a scrape gap" in out.splitlines()


@pytest.mark.usefixtures("hostile")
def test_json_escapes_every_control_character(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert _control_chars(out) == []
    assert [q["queue"] for q in json.loads(out)["queues"]] == list(HOSTILE_NAMES)


def test_an_error_naming_a_hostile_value_is_escaped(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    import dashboard.source_args
    from collectors.errors import PrometheusUnreachable

    def refuse(*_a: Any, **_k: Any) -> Any:
        raise PrometheusUnreachable(f"no such tenant {CLEAR}\nqueuelens: forged line")

    monkeypatch.setattr(dashboard.source_args, "source_from_args", refuse)
    assert main(["snapshot"]) == 3
    err = capsys.readouterr().err
    assert err == ("queuelens: error: no such tenant \\x1b[2J\\nqueuelens: forged line\n")


def test_a_header_with_a_line_break_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI outcome of a CR/LF in --prometheus-header: exit 2, one line naming the flag —
    not "Prometheus could not be queried" (exit 3)."""
    code = main(["snapshot", "--prometheus", "http://127.0.0.1:1", "--timeout", "2s",
                 "--prometheus-header", "X-Scope-OrgID=a\r\nInjected: 1"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1
    assert "--prometheus-header" in err


def test_the_demo_is_never_read_without_saying_so(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from dashboard.source_args import DEMO_NOTICE
    from tests.support.cli import run_main

    monkeypatch.delenv("QUEUELENS_PROMETHEUS_URL", raising=False)
    code, out, err = run_main(["snapshot", "--format", "json"], capsys)
    assert code == 0
    assert err.strip() == DEMO_NOTICE
    assert json.loads(out)["source"] == "demo"
    code, _, err = run_main(["snapshot", "--demo", "--format", "json"], capsys)
    assert code == 0
    assert DEMO_NOTICE not in err
