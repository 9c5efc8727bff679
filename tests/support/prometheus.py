"""Start a real Prometheus server (Debian package `prometheus`) on 127.0.0.1 for tests.

Two ways to give it data:
- backfill: OpenMetrics text -> ``promtool tsdb create-blocks-from openmetrics`` -> a fresh
  TSDB directory (never a committed one: Prometheus compacts and deletes blocks in place);
- scrape: a list of ``host:port`` targets scraped every ``scrape_interval_s``.

Under CI=true a missing binary fails the test (see ``tests.conftest.require_binary``).
Recipe and pitfalls: ../shared/reference/prometheus-test-harness.md.
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import requests

from tests.conftest import require_binary

HINT = "apt-get install -y --no-install-recommends prometheus"


@dataclass
class PrometheusProcess:
    url: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    _log: IO[bytes]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()

    def log_tail(self, n: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-n:]


def backfill(openmetrics_text: str, workdir: Path) -> Path:
    """Write the text, run promtool, return the TSDB directory. Timestamps in seconds,
    ascending per series, no blank lines, ``# EOF`` last (promtool is strict)."""
    om = workdir / "data.om"
    om.write_text(openmetrics_text)
    return backfill_file(om, workdir)


def backfill_file(om: Path, workdir: Path) -> Path:
    """:func:`backfill` of an OpenMetrics file already written."""
    promtool = require_binary("promtool", HINT)
    tsdb = workdir / "tsdb"
    tsdb.mkdir(exist_ok=True)
    result = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", str(om), str(tsdb)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0:
        raise RuntimeError(f"promtool backfill failed: {result.stderr[-2000:]}")
    return tsdb


def start_prometheus(
    workdir: Path,
    *,
    tsdb: Path | None = None,
    scrape_targets: list[str] | None = None,
    scrape_interval_s: float = 1.0,
    extra_args: list[str] | None = None,
    rule_files: list[Path] | None = None,
    ready_timeout_s: float = 30.0,
) -> PrometheusProcess:
    """Start ``prometheus`` on 127.0.0.1 (a free port it picks) and wait until /-/ready."""
    binary = require_binary("prometheus", HINT)
    workdir.mkdir(parents=True, exist_ok=True)
    if tsdb is None:
        tsdb = workdir / "tsdb"
        tsdb.mkdir(exist_ok=True)
    interval = f"{scrape_interval_s:g}s"
    cfg = [f"global:\n  scrape_interval: {interval}\n  scrape_timeout: {interval}\n"]
    cfg.append(f"  evaluation_interval: {interval}\n")
    if rule_files:
        cfg.append("rule_files:\n" + "".join(f"  - '{p}'\n" for p in rule_files))
    if scrape_targets:
        targets = ", ".join(f"'{t}'" for t in scrape_targets)
        cfg.append(
            "scrape_configs:\n  - job_name: queuelens-test\n"
            f"    static_configs: [{{targets: [{targets}]}}]\n"
        )
    else:
        cfg.append("scrape_configs: []\n")
    cfg_path = workdir / "prometheus.yml"
    cfg_path.write_text("".join(cfg))
    log_path = workdir / "prometheus.log"
    log = open(log_path, "wb")  # noqa: SIM115 - closed by PrometheusProcess.stop
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={cfg_path}",
            f"--storage.tsdb.path={tsdb}",
            "--storage.tsdb.retention.time=100y",
            "--web.listen-address=127.0.0.1:0",
            "--web.enable-lifecycle",
            "--log.level=info",
            *(extra_args or []),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    server = PrometheusProcess(url="", proc=proc, log_path=log_path, _log=log)
    deadline = time.monotonic() + ready_timeout_s
    pattern = re.compile(r'msg="Listening on" address=(127\.0\.0\.1:\d+)')
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = server.log_tail()
            server.stop()
            raise RuntimeError(f"prometheus exited early:\n{tail}")
        match = pattern.search(log_path.read_text(errors="replace"))
        if match:
            server.url = f"http://{match.group(1)}"
            try:
                if requests.get(server.url + "/-/ready", timeout=1).status_code == 200:
                    return server
            except requests.RequestException:
                pass
        time.sleep(0.05)
    tail = server.log_tail()
    server.stop()
    raise RuntimeError(f"prometheus not ready within {ready_timeout_s}s:\n{tail}")
