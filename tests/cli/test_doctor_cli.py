"""`queuelens doctor --demo`: true statements about the demo fleet, and bad input (exit 2)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from collectors.demo import DemoSource
from dashboard.cli import main
from tests.support.cli import run_cli

AT = "1800000000"  # 2027-01-15: inside the demo's data


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main(["doctor", "--demo", "--at", AT, "--format", "json", *argv])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    out: dict[str, Any] = json.loads(captured.out)
    return out


def _signal(process: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in process["signals"] if s["signal"] == name)


def test_the_demo_is_controller_runtime_with_its_own_signals(
        capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys)
    demo = DemoSource()
    specs = demo.fleet.specs
    pods = {s.params.pod for s in specs}
    assert set(out) == {"source", "at", "range_s", "selector", "summary", "processes",
                        "signals", "queries", "warnings"}
    assert out["source"] == "demo"
    assert out["range_s"] == 3600
    assert {p["labels"]["pod"] for p in out["processes"]} == pods
    assert sum(len(p["queues"]) for p in out["processes"]) == len(specs)
    limiter_pods = {s.params.pod for s in specs if s.params.client_limiter}
    for p in out["processes"]:
        pod = p["labels"]["pod"]
        d = p["detected"]
        # the demo exports controller_runtime_* and the controller label: controller-runtime
        assert d["framework"] == "controller-runtime"
        assert "controller_runtime_* series" in d["evidence"]
        # every demo queue's depth carries priority="0": the priority queue is on
        assert d["priority_queue"] is True
        assert d["rest_client_metrics"]["requests_total"] is True
        assert d["rest_client_metrics"]["rate_limiter_duration"] is (pod in limiter_pods)
        assert d["rest_client_metrics"]["request_duration"] is False
        assert d["apiserver"]["reachable"] is False
        assert {q["name"] for q in p["queues"]} == {s.name for s in specs if s.params.pod == pod}
        for name in ("arrivals", "work_duration", "queue_wait", "depth", "worker_count",
                     "active_workers", "reconcile_results", "api_calls"):
            assert _signal(p, name)["status"] == "ok", (pod, name)
        # the demo has no latency or retry histograms of the REST client: the opt-in call
        latency = _signal(p, "api_latency")
        assert latency["status"] == "missing"
        assert "metrics.RegisterRESTClientMetrics(" in latency["fix"]
        limiter = _signal(p, "client_limiter_wait")
        assert limiter["status"] == ("ok" if pod in limiter_pods else "missing")
        assert _signal(p, "apiserver_metrics")["status"] == "missing"
    replicaset = next(q for p in out["processes"] for q in p["queues"]
                      if q["name"] == "replicaset")
    assert replicaset["priorities"] == 2  # priority 0 and the low-priority -100
    fleet = {s["signal"]: s for s in out["signals"]}
    assert fleet["workqueue_series"]["status"] == "ok"
    assert fleet["apiserver_series"]["status"] == "missing"
    assert "job_name: kubernetes-apiservers" in fleet["apiserver_series"]["fix"]
    assert out["summary"].startswith(f"{len(pods)} processes ({len(pods)} controller-runtime) "
                                     f"with {len(specs)} queues in demo")


def test_the_selector_applies_to_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, "--selector", '{pod="cert-manager-0"}', "--range", "30m")
    assert [p["labels"] for p in out["processes"]] == [{"pod": "cert-manager-0"}]
    assert out["selector"] == '{pod="cert-manager-0"}'
    assert out["range_s"] == 1800
    nothing = _json(capsys, "--selector", '{pod="nope"}')
    assert nothing["processes"] == []
    assert "matching {pod=\"nope\"}" in nothing["signals"][0]["detail"]


def test_the_table_is_terminal_text(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--demo", "--at", AT])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("source: demo   at: 2027-01-15T08:00:00Z   range: 3600 s")
    assert "== process pod=apps-controller-manager-0" in out
    assert "   framework: controller-runtime (controller_runtime_* series" in out
    assert "    fix:" in out
    assert "\x1b" not in out


@pytest.mark.parametrize(("argv", "words"), [
    (["--range", "10s"], "--range must be at least 60s"),
    (["--range", "soon"], "--range"),
    (["--selector", "{job="], "label selector"),
    (["--at", "yesterday"], "--at"),
    (["--format", "csv"], "invalid choice"),
    (["--prometheus", "http://127.0.0.1:9"], "not allowed with argument --demo"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], words: str) -> None:
    result = run_cli("doctor", "--demo", *argv)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert words in result.stderr
    assert "Traceback" not in result.stderr


def test_the_demo_before_its_data_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--demo", "--at", "1577836900"])  # 2020-01-01T00:01:40Z - 1h
    assert code == 2
    assert "demo data run from 2020-01-01" in capsys.readouterr().err


def test_a_hostile_label_cannot_drive_the_terminal() -> None:
    from collectors.doctor import reading_from_exposition
    from collectors.profile import Profile
    from dashboard.commands.doctor import render_table
    from models.contract import diagnose

    # a raw ESC and CR in the label value, and an escaped newline (\\n in the text format)
    name = "evil\x1b[2J\r\\nforged line"
    text = "".join(f'workqueue_adds_total{{name="{name}",pod="p\u202e"}} {v} {t}\n'
                   for v, t in ((1, 1_000_000), (2, 1_060_000)))
    report = diagnose(reading_from_exposition(text, Profile(), source="file", at=1060.0))
    out = render_table(report)
    assert report.processes[0].queues[0].name == "evil\x1b[2J\r\nforged line"
    assert "\x1b" not in out
    assert "\r" not in out
    assert "\u202e" not in out
    assert "evil\\x1b[2J\\r\\nforged line" in out
    assert not any(line.startswith("forged line") for line in out.split("\n"))
