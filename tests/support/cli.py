"""Run the real `queuelens` CLI in a subprocess, as a user would (exit code, stdout, stderr)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*argv: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dashboard.cli", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
