"""Start a real single-node VictoriaMetrics (Debian package `victoria-metrics`) on 127.0.0.1.

Data goes in through ``/api/v1/import/prometheus`` (Prometheus text format, timestamps in
MILLISECONDS): :func:`openmetrics_to_prometheus_import` converts the same OpenMetrics fixtures
the Prometheus tests backfill with promtool (second timestamps, ``# EOF``), and
:meth:`VictoriaProcess.load_openmetrics` imports them and calls ``/internal/force_flush`` so the
next query sees every sample.

Queries go to VictoriaMetrics' Prometheus-compatible API under the ``/prometheus`` path prefix
(:attr:`VictoriaProcess.PATH_PREFIX`); the tests point queuelens at it through
``ConnectionSettings.path_prefix`` / ``QUEUELENS_PROMETHEUS_PATH_PREFIX``.

Under CI=true a missing binary fails the test (see ``tests.conftest.require_binary``).
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import requests

from tests.conftest import require_binary
from tests.support.prometheus import PrometheusProcess

HINT = "apt-get install -y --no-install-recommends victoria-metrics"
IMPORT_BATCH_LINES = 20_000  # well under -maxInsertRequestSize (32 MB) per request


@dataclass
class VictoriaProcess(PrometheusProcess):
    """A running server (stop, log tail: :class:`PrometheusProcess`); ``url`` is its root
    (import, health, flush)."""

    PATH_PREFIX: ClassVar[str] = "/prometheus"

    @property
    def prometheus_url(self) -> str:
        """Root plus :attr:`PATH_PREFIX`: where the Prometheus query API lives."""
        return self.url + self.PATH_PREFIX

    def load_openmetrics(self, openmetrics_text: str) -> int:
        """Import OpenMetrics text (second timestamps) and flush; returns the sample count."""
        lines = list(openmetrics_to_prometheus_import(openmetrics_text))
        for i in range(0, len(lines), IMPORT_BATCH_LINES):
            body = "\n".join(lines[i:i + IMPORT_BATCH_LINES]) + "\n"
            resp = requests.post(self.url + "/api/v1/import/prometheus",
                                 data=body.encode(), timeout=120)
            if resp.status_code // 100 != 2:
                raise RuntimeError(f"victoria-metrics import failed: {resp.status_code} "
                                   f"{resp.text[:2000]}\n{self.log_tail()}")
        self.force_flush()
        return len(lines)

    def force_flush(self) -> None:
        resp = requests.get(self.url + "/internal/force_flush", timeout=60)
        resp.raise_for_status()


def openmetrics_to_prometheus_import(text: str) -> Iterator[str]:
    """OpenMetrics sample lines with second timestamps -> Prometheus text with ms timestamps.

    Comment lines (``# TYPE``, ``# HELP``, ``# EOF``) and blank lines are dropped: the import
    endpoint needs only samples. Every sample line must carry a timestamp (the fixtures do)."""
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, value, ts = line.rsplit(" ", 2)
        yield f"{series} {value} {round(float(ts) * 1000)}"


def free_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago (callers retry if it is taken)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_victoria(workdir: Path, *, extra_args: list[str] | None = None,
                   ready_timeout_s: float = 30.0, attempts: int = 3) -> VictoriaProcess:
    """Start ``victoria-metrics`` on 127.0.0.1 (a free port) and wait until ``/health`` is OK.

    The port is picked by binding port 0 and closing, so another process may grab it before
    VictoriaMetrics does: an early exit is retried with a new port ``attempts`` times."""
    binary = require_binary("victoria-metrics", HINT)
    workdir.mkdir(parents=True, exist_ok=True)
    last = ""
    for attempt in range(attempts):
        data = workdir / f"data{attempt}"
        data.mkdir(exist_ok=True)
        port = free_port()
        log_path = workdir / f"victoria{attempt}.log"
        log = open(log_path, "wb")  # noqa: SIM115 - closed by VictoriaProcess.stop
        proc = subprocess.Popen(
            [
                binary,
                f"-httpListenAddr=127.0.0.1:{port}",
                f"-storageDataPath={data}",
                "-retentionPeriod=100y",  # the fixtures are from 2024
                "-search.disableCache",  # imported history must not be hidden by a cached reply
                "-loggerLevel=INFO",
                *(extra_args or []),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        server = VictoriaProcess(url=f"http://127.0.0.1:{port}", proc=proc, log_path=log_path,
                                 _log=log)
        deadline = time.monotonic() + ready_timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                resp = requests.get(server.url + "/health", timeout=1)
                if resp.status_code == 200:
                    return server
            except requests.RequestException:
                pass
            time.sleep(0.05)
        last = server.log_tail()
        early = proc.poll() is not None
        server.stop()
        if not early:
            raise RuntimeError(f"victoria-metrics not ready within {ready_timeout_s}s:\n{last}")
    raise RuntimeError(f"victoria-metrics exited early {attempts} times:\n{last}")
