"""A real ``queuelens serve`` process on 127.0.0.1 for the tests and benchmarks.

    with serve_process("--demo") as served:
        urllib.request.urlopen(served.url + "/health", timeout=1)

The process is started with a free port, waited for until ``/health`` answers (bounded), and
stopped as Ctrl-C stops it when the ``with`` block ends (:func:`tests.support.cli.interrupt`);
its stderr is then in :attr:`Served.stderr` and its exit code in :attr:`Served.returncode`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.cli import interrupt
from tests.support.victoria import free_port

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60.0


@dataclass
class Served:
    url: str
    port: int
    proc: subprocess.Popen[str]
    stderr: str = ""
    returncode: int | None = None


def health_seconds(url: str, timeout_s: float = 1.0, path: str = "/health") -> float:
    """Seconds ``GET url+path`` took to answer 200 (a timeout or an error raises)."""
    started = time.monotonic()
    with urllib.request.urlopen(url + path, timeout=timeout_s) as answer:
        answer.read()
        if answer.status != 200:
            raise AssertionError(f"{path} answered {answer.status}")
    return time.monotonic() - started


@contextmanager
def serve_process(*argv: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    """``queuelens serve <argv> --port <free>`` until ``/health`` answers; Ctrl-C at the end."""
    port = free_port()
    full_env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", **(env or {})}
    if env is None or "QUEUELENS_PROMETHEUS_URL" not in env:
        full_env.pop("QUEUELENS_PROMETHEUS_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "dashboard.cli", "serve", *argv, "--port", str(port)],
        cwd=REPO, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    served = Served(f"http://127.0.0.1:{port}", port, proc)
    chunks: list[str] = []
    reader = threading.Thread(target=_drain, args=(proc, chunks), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                reader.join(5)
                raise AssertionError("serve exited: " + "".join(chunks))
            try:
                health_seconds(served.url, timeout_s=2.0)
                break
            except OSError:  # not up yet (refused, reset, timed out)
                if time.monotonic() > deadline:
                    raise AssertionError("serve did not answer /health in time") from None
                time.sleep(0.2)
        yield served
    finally:
        if proc.poll() is None:
            interrupt(proc, drain=False)
        served.returncode = proc.wait()
        reader.join(10)
        served.stderr = "".join(chunks)


def _drain(proc: subprocess.Popen[str], chunks: list[str]) -> None:
    assert proc.stderr is not None
    for line in proc.stderr:
        chunks.append(line)
