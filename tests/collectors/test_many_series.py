"""Answers far below the byte cap that would cost gigabytes (issue 23 §4): a read refuses
too many series (counted before decoding) and too many queues (counted on the topology,
before any queue is modelled) within bounded time, with a sentence that says how to narrow
the selector; a deadline names the phase that ran out."""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import Future
from pathlib import Path

import pytest

from collectors.config import (
    DEFAULT_MAX_QUEUES,
    DEFAULT_MAX_SERIES,
    ConnectionSettings,
    connection_settings,
    parse_config,
)
from collectors.deadlines import QueryGroup
from collectors.errors import AnswerTooLarge, ConfigError, PrometheusTimeout
from collectors.prom_client import PrometheusClient
from collectors.query_pool import gather
from collectors.snapshot import PrometheusSource
from tests.support.cli import ROOT
from tests.support.fault_servers import FaultServer
from tests.support.many_series import AT, many_series

RSS_BOUND_KB = 600 * 1024
"""The CLI process's peak RSS while refusing: the interpreter with numpy, Dash's imports and
one answer's body (37 MB) in memory — not the 3.7–11.4 GB of decoding it."""


def _cli_with_rss(*argv: str, timeout_s: float = 60) -> tuple[subprocess.CompletedProcess[str],
                                                              int, float]:
    """The real CLI in a subprocess that reports its own peak RSS (KiB) on its last stderr
    line; the run's exit code, output, that RSS and the wall time."""
    # VmHWM, not getrusage's ru_maxrss: Linux keeps ru_maxrss across execve, so a child of a
    # large pytest process reports the parent's peak (874 MiB in the whole suite)
    code = ("import re, sys\n"
            "from dashboard.cli import main\n"
            "try:\n    rc = main(sys.argv[1:])\n"
            "except SystemExit as exc:\n    rc = exc.code if isinstance(exc.code, int) else 1\n"
            "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
            "print('maxrss', hwm, file=sys.stderr)\nsys.exit(rc)\n")
    start = time.monotonic()
    res = subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, capture_output=True,
                         text=True, timeout=timeout_s)
    elapsed = time.monotonic() - start
    *lines, last = res.stderr.rstrip("\n").split("\n")
    assert last.startswith("maxrss "), res.stderr[-2000:]
    res.stderr = "\n".join(lines) + "\n"
    return res, int(last.split()[1]), elapsed


def test_an_answer_of_too_many_series_is_refused_before_decoding() -> None:
    count = DEFAULT_MAX_SERIES + 50_000
    with FaultServer(many_series(count)) as server:
        res, rss_kb, elapsed = _cli_with_rss("snapshot", "--prometheus", server.url,
                                             "--at", str(AT))
    assert res.returncode == 3, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert f"answered {count:,} series to one query" in lines[0]
    assert "--selector '{namespace=" in lines[0]
    assert "prometheus.max_series" in lines[0]
    assert "Traceback" not in res.stderr
    assert elapsed < 30, elapsed
    assert rss_kb < RSS_BOUND_KB, rss_kb


def test_too_many_queues_are_refused_before_any_is_modelled() -> None:
    count = DEFAULT_MAX_QUEUES + 10_000  # under the series cap: each answer is accepted
    with FaultServer(many_series(count)) as server:
        res, rss_kb, elapsed = _cli_with_rss("advise", "--prometheus", server.url,
                                             "--at", str(AT))
    assert res.returncode == 3, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert f"matches {count:,} queues" in lines[0]
    assert "narrow the selector" in lines[0]
    assert "prometheus.max_queues" in lines[0]
    assert elapsed < 30, elapsed
    assert rss_kb < RSS_BOUND_KB, rss_kb


def test_the_caps_are_configurable(tmp_path: Path) -> None:
    cfg = parse_config("prometheus:\n  url: http://x\n  max_series: 50\n  max_queues: 3\n")
    settings = connection_settings(cfg, env={})
    assert settings is not None
    assert (settings.max_series, settings.max_queues) == (50, 3)
    env = {"QUEUELENS_PROMETHEUS_MAX_SERIES": "70", "QUEUELENS_PROMETHEUS_MAX_QUEUES": "4"}
    settings = connection_settings(cfg, env=env)
    assert settings is not None
    assert (settings.max_series, settings.max_queues) == (70, 4)
    with pytest.raises(ConfigError, match="max_series"):
        parse_config("prometheus:\n  max_series: 0\n")
    with pytest.raises(ConfigError, match="MAX_QUEUES"):
        connection_settings(cfg, env={"QUEUELENS_PROMETHEUS_MAX_QUEUES": "1e9"})
    # a lowered cap applies to a small answer too
    with FaultServer(many_series(400, queues=4)) as server:
        client = PrometheusClient(ConnectionSettings(url=server.url, max_series=100))
        with pytest.raises(AnswerTooLarge, match="answered 400 series"):
            client.query("up", AT)
        source = PrometheusSource(PrometheusClient(ConnectionSettings(
            url=server.url, max_queues=3)))
        with pytest.raises(AnswerTooLarge, match="matches 4 queues"):
            source.snapshot(AT, 300.0)


def test_the_deadline_names_the_phase_that_ran_out() -> None:
    pending: dict[str, Future[int]] = {k: Future() for k in ("a", "b", "c")}
    phases = {"a": ["decode"], "b": ["query"], "c": ["queued"]}
    with pytest.raises(PrometheusTimeout) as info:
        gather(pending, QueryGroup(), 0.05, phases)
    text = str(info.value)
    assert "Prometheus had answered 1 of them, whose answers were still being decoded " \
           "(phase: decode)" in text
    assert "1 still waiting for Prometheus's answer (phase: query)" in text
    assert "1 not sent yet" in text
