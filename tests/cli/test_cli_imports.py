"""`queuelens --help` and every `queuelens <command> --help` stay argparse-only: building the
parser and printing help must not import the server stack or the science stack (they cost
seconds of start-up; the handlers import them when a command actually runs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Every help screen the CLI has: the top level, each sub-command and the lab's sub-commands.
HELP_ARGVS = [
    ["--help"],
    *([name, "--help"] for name in (
        "serve", "snapshot", "advise", "report", "whatif", "lab", "rules", "simulate",
        "retries", "exporter",
    )),
    ["lab", "fluid", "--help"],
    ["lab", "keys", "--help"],
]

HEAVY = ("dash", "plotly", "pandas", "scipy", "prometheus_api_client", "requests", "flask",
         "gunicorn", "waitress", "simpy")

# A fresh interpreter: this test process has imported everything already.
_PROBE = """
import contextlib, io, json, sys
from dashboard.cli import build_parser, main
build_parser()
helps = []
for argv in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main(argv)
            code = None
        except SystemExit as exc:
            code = exc.code
    helps.append({"argv": argv, "code": code, "text": out.getvalue()})
print(json.dumps({"modules": sorted({m.split(".")[0] for m in sys.modules}), "helps": helps}))
"""


@pytest.fixture(scope="module")
def probe() -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(HELP_ARGVS)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout)
    return result


def test_every_help_screen_is_printed(probe: dict[str, object]) -> None:
    helps = probe["helps"]
    assert isinstance(helps, list)
    assert len(helps) == len(HELP_ARGVS)
    for item in helps:
        assert item["code"] == 0, item["argv"]
        assert item["text"].startswith("usage: queuelens"), item["argv"]


def test_help_imports_no_server_or_science_stack(probe: dict[str, object]) -> None:
    modules = probe["modules"]
    assert isinstance(modules, list)
    loaded = sorted(set(HEAVY) & set(modules))
    assert not loaded, f"building the parser / printing help imported {loaded}"


def test_help_imports_no_numpy_or_yaml(probe: dict[str, object]) -> None:
    modules = probe["modules"]
    assert isinstance(modules, list)
    loaded = sorted({"numpy", "yaml"} & set(modules))
    assert not loaded, f"building the parser / printing help imported {loaded}"
