"""`queuelens advise`: the demo fleet, a REAL backfilled Prometheus, and the failure modes."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from collectors.demo import DemoSource
from dashboard.cli import main
from models import fleet as fl
from models.advisor import KINDS, SEVERITIES
from tests.support.prometheus import PrometheusProcess
from tests.support.workqueue_om import AT, WEIRD

AT_DEMO = fl.EPOCH_S + 40 * 86400 + 14 * 3600


def _no_nan(text: str) -> Any:
    def bad(token: str) -> None:
        raise AssertionError(f"{token} in JSON output")

    return json.loads(text, parse_constant=bad)


def test_json_demo_fleet(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["advise", "--demo", "--at", str(AT_DEMO), "--window", "5m", "--range", "2h",
                 "--format", "json"])
    out = _no_nan(capsys.readouterr().out)
    assert code == 0
    assert set(out) >= {"at", "window_s", "range_s", "source", "queues"}
    assert out["at"] == AT_DEMO
    assert out["window_s"] == 300
    assert out["range_s"] == 7200
    assert out["source"] == "demo"
    demo = DemoSource()
    assert [q["queue"] for q in out["queues"]] == list(demo.queue_names)
    for q in out["queues"]:
        assert set(q) == {"queue", "plan", "verdicts"}
        assert q["verdicts"]
        assert q["plan"]["tags"] == [v["kind"] for v in q["verdicts"]]
        for v in q["verdicts"]:
            assert {"kind", "severity", "summary", "evidence", "recommendation"} <= set(v)
            assert v["kind"] in KINDS
            assert v["severity"] in SEVERITIES
        assert demo.params(q["queue"]).advisor_expectation in [v["kind"] for v in q["verdicts"]]
    by = {q["queue"]: q for q in out["queues"]}
    assert [v["kind"] for v in by["deployment"]["verdicts"]] == ["healthy"]
    cert = [v["kind"] for v in by["certificate"]["verdicts"]]
    assert "contention" in cert
    assert "add_workers" not in cert


def test_one_queue_and_slo(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["advise", "--demo", "--at", "2020-02-10T14:00:00Z", "--queue", "replicaset",
            "--format", "json"]
    assert main([*args, "--slo", "1s"]) == 0
    loose = _no_nan(capsys.readouterr().out)
    assert main([*args, "--slo", "100ms"]) == 0
    tight = _no_nan(capsys.readouterr().out)
    assert [q["queue"] for q in loose["queues"]] == ["replicaset"]
    assert loose["slo_wait_s"] == 1.0
    assert tight["slo_wait_s"] == 0.1

    def rec(out: dict[str, Any]) -> int:
        v = next(v for v in out["queues"][0]["verdicts"] if v["kind"] == "add_workers")
        return int(v["recommendation"]["workers_for_slo"])

    assert rec(tight) > rec(loose)  # a tighter SLO needs more workers


def test_keys_uses_the_finite_key_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--demo", "--at", str(AT_DEMO), "--queue", "replicaset",
                 "--keys", "30", "--format", "json"]) == 0
    out = _no_nan(capsys.readouterr().out)
    v = next(v for v in out["queues"][0]["verdicts"] if v["kind"] == "add_workers")
    assert "finite keys" in v["evidence"]["model"]
    assert main(["advise", "--demo", "--keys", "30"]) == 2
    assert "--keys needs --queue" in capsys.readouterr().err


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--demo", "--at", str(AT_DEMO)]) == 0
    lines = capsys.readouterr().out.splitlines()
    # the settings every surface states, then one line per queue from its plan
    assert lines[0].endswith(": last 2 h (a point every 60 s), rates over 5 min, "
                             "p95 wait ≤ 1 s; demo")
    assert lines[1].split() == ["queue", "severity", "verdict", "workers", "headroom", "demand",
                                "confidence", "tags"]
    secret = next(line for line in lines if line.startswith("secret"))
    assert "Fewer workers would do: 20 → 2" in secret
    assert "over_provisioned" in secret
    replicaset = next(line for line in lines if line.startswith("replicaset"))
    assert "More workers will help: 4 → 6" in replicaset
    assert " 4 → 6 " in replicaset.replace("help: 4 → 6", "")  # the workers column
    assert len([line for line in lines[3:] if line.strip()]) == len(DemoSource().queue_names)


def test_unknown_queue_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--demo", "--at", str(AT_DEMO), "--queue", "nope"]) == 2
    err = capsys.readouterr().err
    assert "No queue named 'nope'" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("argv", "needle"), [
    (["--slo", "-1s"], "--slo"),
    (["--slo", "0"], "--slo"),
    (["--range", "soon"], "--range"),
    (["--at", "yesterday"], "--at"),
    (["--format", "xml"], "--format"),
])
def test_bad_arguments_exit_2(argv: list[str], needle: str,
                              capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["advise", "--demo", *argv])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert needle in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_demo_before_its_data_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--demo", "--at", "2019-06-01T00:00:00Z"]) == 2
    assert "2020-01-01" in capsys.readouterr().err


def test_unreachable_prometheus_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = main(["advise", "--prometheus", f"http://127.0.0.1:{port}", "--timeout", "2s",
                 "--at", str(AT)])
    err = capsys.readouterr().err
    assert code == 3
    assert f"127.0.0.1:{port}" in err
    assert "Traceback" not in err


def test_help_lists_advise(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "advise" in capsys.readouterr().out


@pytest.mark.prometheus
def test_real_prometheus(backfilled_prometheus: PrometheusProcess,
                         capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["advise", "--prometheus", backfilled_prometheus.url, "--at", str(AT),
                 "--range", "30m", "--format", "json"])
    out = _no_nan(capsys.readouterr().out)
    assert code == 0
    assert out["source"] == backfilled_prometheus.url
    by = {q["queue"]: [v["kind"] for v in q["verdicts"]] for q in out["queues"]}
    assert {"backlog_growing", "stuck_workers"} <= set(by["replicaset"])
    assert "insufficient_data" in by[WEIRD]
    weird = next(q for q in out["queues"] if q["queue"] == WEIRD)
    ins = next(v for v in weird["verdicts"] if v["kind"] == "insufficient_data")
    assert "workers" in ins["evidence"]["missing"]


def test_every_verdict_has_a_plain_words_headline_with_its_numbers(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["advise", "--demo", "--at", str(AT_DEMO), "--format", "json"])
    out = _no_nan(capsys.readouterr().out)
    assert code == 0
    seen = set()
    for q in out["queues"]:
        for v in q["verdicts"]:
            head, ev, rec = v["headline"], v["evidence"], v["recommendation"]
            assert head[:1].isupper(), v
            assert "_" not in head, v  # words, not identifiers
            seen.add(v["kind"])
            if v["kind"] == "add_workers":
                assert head == f"More workers will help: {ev['workers']} → {rec['workers']}"
            if v["kind"] == "over_provisioned":
                assert head == f"Fewer workers would do: {ev['workers']} → {rec['workers']}"
            if v["kind"] in ("contention", "hot_key"):
                assert head.startswith("More workers will not help: ")
    assert {"add_workers", "contention"} <= seen


def test_table_shows_the_headline_and_a_percentage(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["advise", "--demo", "--at", str(AT_DEMO), "--format", "table"])
    out = capsys.readouterr().out
    assert code == 0
    assert "More workers will help: " in out
    assert " %" in out
    assert "fix_failure_not_workers" not in out
