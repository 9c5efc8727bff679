"""The recording rules of ``queuelens rules --recording`` put into a real server's history.

* :func:`write_rules`: the generated rules file (the CLI itself, as a user runs it);
* :func:`aligned_openmetrics`: every recording rule of the file evaluated by the server at
  the multiples of its group's interval (``query_range`` with the step = the interval, the
  start on the grid), as OpenMetrics text for ``promtool tsdb create-blocks-from openmetrics``.
  That is the evaluation ``promtool tsdb create-blocks-from rules`` makes, but on the reads'
  step grid: promtool (like a live Prometheus) starts each group at an offset within its
  interval taken from a hash of the group's name and file (Prometheus 2.42 put them at
  ``….745 s``), so its points never fall on a read's grid and a rate that changes differs
  by what changes in that offset;
* :func:`promtool_backfill_rules`: ``promtool tsdb create-blocks-from rules`` itself (the
  benchmark loads the rules so: only the cost matters there);
* :func:`move_blocks`: blocks made elsewhere into a TSDB (the server restarted after).
"""

from __future__ import annotations

import math
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import requests
import yaml

from collectors.timeparse import parse_duration
from tests.conftest import require_binary
from tests.support.prometheus import HINT


def write_rules(path: Path, *args: str) -> Path:
    """``queuelens rules --recording <args> -o path``; fails the test on a non-zero exit."""
    from dashboard.cli import main as cli_main

    code = cli_main(["rules", "--recording", *args, "-o", str(path)])
    assert code == 0, code
    return path


def recording_rules(path: Path) -> list[tuple[float, str, str]]:
    """(group interval in seconds, record, expr) of every recording rule of a rules file."""
    data = yaml.safe_load(path.read_text())
    out: list[tuple[float, str, str]] = []
    for group in data["groups"]:
        interval = parse_duration(group.get("interval", "1m"))
        out += [(interval, r["record"], r["expr"]) for r in group["rules"] if "record" in r]
    return out


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _lines(record: str, result: list[dict[str, object]]) -> Iterator[str]:
    yield f"# TYPE {record} gauge"
    for series in result:
        labels = series["metric"]
        values = series["values"]
        assert isinstance(labels, dict)
        assert isinstance(values, list)
        text = ",".join(f'{k}="{_esc(str(v))}"' for k, v in sorted(labels.items())
                        if k != "__name__")
        head = f"{record}{{{text}}}" if text else record
        for t, v in values:
            yield f"{head} {v} {float(t):.3f}"


def aligned_openmetrics(url: str, rules_file: Path, start: float, end: float,
                        path_prefix: str = "") -> str:
    """Each recording rule evaluated at every multiple of its group's interval in
    [start, end] (one ``query_range`` per rule), as OpenMetrics text (``# EOF`` last)."""
    out: list[str] = []
    for interval, record, expr in recording_rules(rules_file):
        first = math.ceil(start / interval) * interval
        params: dict[str, str | float] = {"query": expr, "start": first, "end": end,
                                          "step": interval}
        resp = requests.get(f"{url}{path_prefix}/api/v1/query_range", params=params,
                            timeout=60)
        resp.raise_for_status()
        out += _lines(record, resp.json()["data"]["result"])
    return "\n".join([*out, "# EOF"]) + "\n"


def promtool_backfill_rules(url: str, rules_file: Path, start: float, end: float,
                            out_dir: Path) -> Path:
    """``promtool tsdb create-blocks-from rules`` of the file against the server at ``url``
    over [start, end]; returns the directory of the new blocks."""
    promtool = require_binary("promtool", HINT)
    out_dir.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "rules", f"--start={int(start)}",
         f"--end={int(end)}", f"--url={url}", f"--output-dir={out_dir}", "-q",
         str(rules_file)], capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"promtool rules backfill failed: {done.stderr[-2000:]}")
    return out_dir


def move_blocks(blocks: Path, tsdb: Path) -> int:
    """Move every block directory of ``blocks`` into ``tsdb`` (the server must be stopped
    and restarted around it); returns how many."""
    moved = 0
    for block in sorted(blocks.iterdir()):
        if block.is_dir():
            shutil.move(str(block), str(tsdb / block.name))
            moved += 1
    return moved
