"""The simulator's one-time compile (issue 21): :func:`models.simulate.warm_up` fills numba's
disk cache so that another process loads every loop instead of compiling it; ``queuelens
simulate`` says that it compiles when it does, and only then; ``queuelens serve`` compiles in
the background at start-up.

Every process runs with ``NUMBA_CACHE_DIR`` set to a temporary folder (numba then keeps its
cache there, not in ``models/__pycache__``), so the first one starts with an empty cache. The
assertions are on the cache's files and on numba's compile events, never on time.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from models.simulate import COMPILE_ESTIMATE_S, RUN_COMPILE_ESTIMATE_S
from tests.support.cli import interrupt

REPO = Path(__file__).resolve().parents[2]

# Runs warm_up (and with "work", runs like the pages' and the CLI's after it) under
# compile_notice; prints whether numba compiled one of models._simcore's loops, and which of
# them have no machine code in the process afterwards.
_PROBE = """
import json, sys
from models.simulate import compile_notice, compiled_loops, simulate, warm_up

said = []
with compile_notice(lambda: said.append(True)):
    warm_up()
    if "work" in sys.argv:
        from dashboard.pages.retries import DEFAULTS, RetriesInputs, retries_view
        retries_view(RetriesInputs(**{**DEFAULTS, "jitter": "full", "bucket": True,
                                      "keys": 200}))
        queue = {"arrival_rate_per_s": 3.2, "keys": 10**15, "workers": 4,
                 "service_mean_s": 1.0, "duration_s": 100.0, "seed": 1}
        simulate(**queue)  # each copy of the loop: the queue alone, with a station,
        simulate(**queue, lock_fraction=0.2, api_calls=1)  # then with the server (below)
        simulate(arrival_rate_per_s=50.0, keys=100, workers=4, service_mean_s=0.05,
                 duration_s=20.0, seed=1, zipf_s=1.1, service_dist="lognormal",
                 service_cv=2.0, trace_limit=100, lock_fraction=0.2, api_calls=2,
                 api_qps=20.0, api_writes=1, apf_seats=2, webhook_latency_s=0.01,
                 conflict_objects=5, scrape_interval_s=1.0)
loops = compiled_loops()
print(json.dumps({"compiled": bool(said), "loops": sorted(loops),
                  "without_code": sorted(n for n, d in loops.items() if not d.signatures)}))
"""

_SIMULATE = [sys.executable, "-m", "dashboard.cli", "simulate", "--arrival-rate", "5",
             "--keys", "10", "--workers", "2", "--service-mean", "0.1", "--duration", "5",
             "--seed", "0", "--format", "json"]
_NOTE = "first run compiles the simulator"


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "QUEUELENS_PROMETHEUS_URL"}
    return {**env, "NUMBA_CACHE_DIR": str(cache), "NO_PROXY": "127.0.0.1,localhost"}


def _probe(cache: Path, *args: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=REPO, env=_env(cache),
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


def _indexes(cache: Path) -> dict[str, tuple[int, int]]:
    """numba's index files (one per compiled function) → (mtime_ns, size)."""
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in cache.rglob("*.nbi")}


def _loop_of(index: str) -> str:
    """``_simcore._sim_run-765.py311.nbi`` → ``_sim_run``."""
    return index.split(".", 1)[1].rsplit("-", 1)[0]


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    """A cache folder that one process filled with warm_up from empty, and its report."""
    cache = tmp_path_factory.mktemp("numba-cache")
    return cache, _probe(cache)


def _without_fsum(warm: Path, tmp_path: Path) -> Path:
    """A copy of the warm cache that has lost ``fsum`` (one of the loops called from Python),
    so a run compiles that one loop and loads the rest."""
    cache = tmp_path / "cache"
    shutil.copytree(warm, cache)
    gone = [p for p in cache.rglob("_simcore.fsum-*") if p.is_file()]
    assert gone
    for p in gone:
        p.unlink()
    return cache


def test_warm_up_compiles_every_loop_into_the_cache(
    warm_cache: tuple[Path, dict[str, object]],
) -> None:
    cache, report = warm_cache
    assert report["compiled"] is True  # the cache was empty
    assert report["without_code"] == []  # every loop was reached
    loops = report["loops"]
    assert isinstance(loops, list)
    assert "_sim_run" in loops
    assert "_storm_run" in loops
    assert {_loop_of(name) for name in _indexes(cache)} == set(loops)


def test_a_second_process_loads_the_loops_instead_of_compiling(
    warm_cache: tuple[Path, dict[str, object]],
) -> None:
    cache, _ = warm_cache
    before = _indexes(cache)
    report = _probe(cache, "work")  # warm_up again, then a page's and a CLI-like run
    assert report["compiled"] is False
    assert _indexes(cache) == before  # nothing was compiled, so no index was rewritten


def test_simulate_says_it_compiles_only_when_it_does(
    warm_cache: tuple[Path, dict[str, object]], tmp_path: Path,
) -> None:
    cache = _without_fsum(warm_cache[0], tmp_path)
    first = subprocess.run(_SIMULATE, cwd=REPO, env=_env(cache), capture_output=True,
                           text=True, timeout=240, check=False)
    assert first.returncode == 0, first.stderr
    notes = [line for line in first.stderr.splitlines() if _NOTE in line]
    assert notes == [f"queuelens: note: {_NOTE} (~{RUN_COMPILE_ESTIMATE_S} s, once)"]
    assert any(_loop_of(name) == "fsum" for name in _indexes(cache))  # cached again
    second = subprocess.run(_SIMULATE, cwd=REPO, env=_env(cache), capture_output=True,
                            text=True, timeout=240, check=False)
    assert second.returncode == 0, second.stderr
    assert _NOTE not in second.stderr
    assert json.loads(second.stdout) == json.loads(first.stdout)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_serve_compiles_in_the_background_at_start_up(
    warm_cache: tuple[Path, dict[str, object]], tmp_path: Path,
) -> None:
    cache = _without_fsum(warm_cache[0], tmp_path)
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dashboard.cli", "serve", "--demo", "--port", str(port)],
        cwd=REPO, env=_env(cache), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    assert proc.stderr is not None
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr or ()), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 180
        while (time.monotonic() < deadline and proc.poll() is None
               and not any("the simulator is compiled" in line for line in lines)):
            time.sleep(0.2)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as r:
            assert json.loads(r.read())["status"] == "ok"
    finally:
        interrupt(proc, drain=False)
        reader.join(timeout=5)
    said = [line.rstrip("\n") for line in lines]
    serving = next(i for i, line in enumerate(said) if "serving http://127.0.0.1:" in line)
    start = [i for i, line in enumerate(said) if "compiling the simulator in the background "
             f"(one time, ~{COMPILE_ESTIMATE_S} s)" in line]
    end = [i for i, line in enumerate(said) if "the simulator is compiled (" in line]
    assert len(start) == len(end) == 1, said
    assert serving < start[0] < end[0]
    assert any(_loop_of(name) == "fsum" for name in _indexes(cache))  # cached again
