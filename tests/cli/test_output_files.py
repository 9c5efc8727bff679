"""Issue 23: ``-o FILE`` keeps an existing file's mode, and Ctrl-C while writing it (or
``--emit-openmetrics``) leaves no ``.queuelens-*.tmp`` behind; the export timeout is capped."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from dashboard.cliutil import write_atomically, write_text_atomically


def test_writing_over_a_private_file_keeps_it_private(tmp_path: Path) -> None:
    target = tmp_path / "report.md"
    target.write_text("old")
    target.chmod(0o600)
    write_text_atomically(str(target), "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_new_file_gets_the_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_text_atomically(str(tmp_path / "r.md"), "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r.md").stat().st_mode) == 0o644


def test_ctrl_c_while_writing_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "metrics.om"
    target.write_text("good")

    def write(fh: Any) -> None:
        fh.write("partial")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomically(str(target), write)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.om"]
    assert target.read_text() == "good"


def test_ctrl_c_during_emit_openmetrics_leaves_no_temporary_file(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    from tests.support.cli import ROOT

    out = tmp_path / "sim.om"
    proc = subprocess.Popen(
        [sys.executable, "-m", "dashboard.cli", "simulate", "--arrival-rate", "200", "--keys",
         "100000", "--workers", "8", "--service-mean", "20ms", "--duration", "6h", "--seed", "1",
         "--emit-openmetrics", str(out), "--scrape-interval", "1s"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(
                p.name.startswith(".queuelens-") for p in tmp_path.iterdir()):
            time.sleep(0.05)
        assert any(p.name.startswith(".queuelens-") for p in tmp_path.iterdir()), \
            "the run never started writing"
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["1e300", "1000000d", "2d"])
def test_an_export_timeout_above_the_cap_is_a_config_error(value: str) -> None:
    from collectors.errors import ConfigError
    from dashboard.app import ServerLimits

    with pytest.raises(ConfigError, match=r"QUEUELENS_EXPORT_TIMEOUT|export timeout"):
        ServerLimits.from_env({"QUEUELENS_EXPORT_TIMEOUT": value})
