"""Run the real `queuelens` CLI: in a subprocess, as a user would (:func:`run_cli`), or in this
process with pytest's captured output (:func:`run_main`); exit code, stdout, stderr."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*argv: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dashboard.cli", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Exit code, stdout, stderr of the CLI in this process (argparse errors included)."""
    from dashboard.cli import main

    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def interrupt(proc: subprocess.Popen[str], timeout_s: float = 20, *, drain: bool = True) -> None:
    """Stop a CLI process as Ctrl-C does (SIGINT), killing it if it has not exited within
    ``timeout_s``. ``drain``: read its pipes to the end (not when a thread of the test reads
    them already)."""
    import signal

    finish = proc.communicate if drain else proc.wait
    proc.send_signal(signal.SIGINT)
    try:
        finish(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        finish()
