"""`queuelens exporter`: starts, serves /metrics, stops cleanly on SIGTERM; bad input exits 2."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time

import pytest
import requests

from collectors.exporter import serve
from dashboard.cli import main
from dashboard.commands.exporter import SCENARIOS, parse_listen
from models import fleet as fl
from models.limits import EXPORTER_MAX_QUEUES


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "dashboard.cli", "exporter", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_serves_and_stops_on_sigterm() -> None:
    proc = start("--listen", "127.0.0.1:0", "--scenario", "saturated")
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"serving 1 demo queues on (http://127\.0\.0\.1:\d+/metrics)", line)
        assert match, line
        body = requests.get(match.group(1), timeout=5).text
        assert 'workqueue_adds_total{controller="replicaset"' in body
        assert 'name="deployment"' not in body
        proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        assert proc.wait(timeout=10) == 0
        assert time.monotonic() - t0 < 5
        assert "stopped" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("args", [["--listen", "localhost"], ["--listen", "127.0.0.1:99999"],
                                  ["--scenario", "nope", "--listen", "127.0.0.1:0"],
                                  ["--queues", "0"]])
def test_bad_arguments_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["exporter", *args])
    except SystemExit as exc:  # argparse errors
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code == 2, (args, err)
    assert err.count("\n") == 1
    assert "error" in err


def test_port_in_use_is_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        code = main(["exporter", "--listen", f"127.0.0.1:{port}"])
    assert code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_listen_parsing_and_scenario_help() -> None:
    assert parse_listen("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert parse_listen(":9464") == ("127.0.0.1", 9464)
    assert parse_listen("[::1]:9464") == ("::1", 9464)
    for p in fl.DEMO_QUEUES:
        assert f"{p.regime} ({p.controller})" in SCENARIOS


@pytest.mark.parametrize(("args", "needle"), [
    (["--queues", "1000000000000"], "at most 10,000 queues"),  # issue 12: grew without bound
    (["--queues", "10001"], "at most 10,000 queues"),
    (["--seed", "-1"], "argument --seed"),
])
def test_the_fleet_size_and_seed_are_bounded(args: list[str], needle: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    start = time.monotonic()
    try:
        code = main(["exporter", "--listen", "127.0.0.1:0", *args])
    except SystemExit as exc:
        code = int(exc.code or 0)
    assert code == 2
    assert time.monotonic() - start < 5
    err = capsys.readouterr().err
    assert needle in err
    assert err.count("\n") == 1


def test_serve_refuses_a_fleet_over_the_limit() -> None:
    class Big:
        def __len__(self) -> int:
            return EXPORTER_MAX_QUEUES + 1

    with pytest.raises(ValueError, match="at most 10,000 queues"):
        serve(Big(), "127.0.0.1", 0)  # type: ignore[arg-type]
