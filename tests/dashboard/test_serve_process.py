"""`queuelens serve --demo` as a real process: waitress on loopback, /health, no debug."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_serve_demo_answers_health_on_loopback_without_debug() -> None:
    port = _free_port()
    env = {**os.environ, "DASH_DEBUG": "true", "FLASK_DEBUG": "1", "HOST": "0.0.0.0",
           "NO_PROXY": "127.0.0.1,localhost"}
    env.pop("QUEUELENS_PROMETHEUS_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "dashboard.cli", "serve", "--demo", "--port", str(port)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 30
        health = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    health = json.loads(r.read())
                    break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        assert health is not None, "serve did not answer /health"
        assert (health["status"], health["source"]) == ("ok", "demo")
        assert health["source_state"] in ("unknown", "ok")  # the demo never fails
        # a callback that fails on the server: a bare 500, not Dash's debug traceback
        body = json.dumps({"output": "lab-time.children", "outputs": {"id": "lab-time",
                           "property": "children"}, "inputs": [], "changedPropIds": []})
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/_dash-update-component", data=body.encode(),
            headers={"Content-Type": "application/json"}, method="POST")
        try:
            urllib.request.urlopen(request, timeout=5)
            status, text = 200, ""
        except urllib.error.HTTPError as exc:
            status, text = exc.code, exc.read().decode(errors="replace")
        assert status >= 400
        assert "Traceback" not in text
        assert "Werkzeug" not in text
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    assert f"serving http://127.0.0.1:{port}/" in err
    assert "warning: binding" not in err


def test_serve_on_a_port_in_use_is_one_line_and_exit_2() -> None:
    """Bound before "serving …" is said: no server retries, no ERROR lines, no exit 1."""
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if k != "QUEUELENS_PROMETHEUS_URL"}
        t0 = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "dashboard.cli", "serve", "--demo", "--port", str(port)],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
        elapsed = time.monotonic() - t0
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"queuelens: error: cannot listen on 127.0.0.1:{port}: Address already in use"]
    assert elapsed < 15  # a server that retried its bind would take 5 s or more


def test_serve_with_a_host_that_does_not_resolve_is_one_line_and_exit_2() -> None:
    env = {k: v for k, v in os.environ.items() if k != "QUEUELENS_PROMETHEUS_URL"}
    proc = subprocess.run(
        [sys.executable, "-m", "dashboard.cli", "serve", "--demo", "--host",
         "no-such-host.invalid", "--port", str(_free_port())],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("queuelens: error: cannot listen on no-such-host.invalid:")
    assert "check --host" in line
    assert "serving" not in proc.stderr
