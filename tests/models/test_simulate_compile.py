"""What the simulator compiles, and where its cache goes (issue 22 §4).

* A run compiles only the copy of the loop for the mechanisms it uses: the queue alone never
  compiles the stations, the API calls or the API server side (``models._simcore``,
  "compiled per mechanism"), and a run with the server compiles its own copy next to it.
* With no writable cache directory that numba knows of (a read-only site-packages and home —
  mimicked with ``NUMBA_CACHE_LOCATOR_CLASSES``, which leaves numba only ``$NUMBA_CACHE_DIR``,
  unset here), the cache goes to a folder of this user's in the temporary directory, and a
  second process loads it instead of compiling; a folder there that others may write is not
  used.

Each process runs with its own empty cache (so it compiles): the assertions are on numba's
compiled signatures, its compile events and the cache's files, never on time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from models import _simcore as core

REPO = Path(__file__).resolve().parents[2]

# Runs a queue alone, then (with "server") a run with the API server side; prints, after
# each, which of the loops the queue alone must not need have machine code, how many copies
# of _sim_run there are, and whether numba compiled one of models._simcore's loops.
_PROBE = """
import json, sys
from models.simulate import compile_notice, compiled_loops, simulate

OPTIONAL = ("_server_call", "_background_upto", "_apf_arrive", "_dropped", "_enter",
            "_next_station", "_take")
queue = {"arrival_rate_per_s": 5.0, "keys": 10**15, "workers": 2, "service_mean_s": 0.1,
         "duration_s": 20.0, "seed": 1, "fail_prob": 0.2}
report = []
def step(**extra):
    said = []
    with compile_notice(lambda: said.append(True)):
        r = simulate(**queue, **extra)
    loops = compiled_loops()
    report.append({"compiled": bool(said), "events": r.events,
                   "optional": sorted(n for n in OPTIONAL if loops[n].signatures),
                   "copies": len(loops["_sim_run"].signatures)})
step()
if "server" in sys.argv:
    step(api_calls=1, apf_seats=1, apf_background_rate_per_s=5.0)
import numba
print(json.dumps({"steps": report, "cache_dir": numba.config.CACHE_DIR}))
"""


def _run(env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "NUMBA_CACHE_LOCATOR_CLASSES")}
    return {**env, **extra}


def _indexes(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.nbi"))


def test_a_queue_alone_compiles_only_its_own_copy_of_the_loop(tmp_path: Path) -> None:
    out = _run(_env(NUMBA_CACHE_DIR=str(tmp_path)), "server")
    queue, server = out["steps"]
    assert queue["compiled"] is True  # an empty cache
    assert queue["optional"] == []  # no station, API call or server code was compiled
    assert queue["copies"] == 1
    assert server["compiled"] is True  # the server's copy is compiled when it is needed
    assert set(server["optional"]) >= {"_server_call", "_background_upto", "_apf_arrive"}
    assert server["copies"] == 2
    assert queue["events"] > 0


def test_without_a_writable_cache_dir_the_cache_goes_to_a_private_temporary_folder(
    tmp_path: Path,
) -> None:
    env = _env(NUMBA_CACHE_LOCATOR_CLASSES="UserProvidedCacheLocator", TMPDIR=str(tmp_path))
    first = _run(env)
    folder = tmp_path / f"{core.FALLBACK_CACHE_PREFIX}{os.getuid()}"
    assert first["cache_dir"] == str(folder)
    assert first["steps"][0]["compiled"] is True
    assert folder.stat().st_mode & 0o777 == 0o700
    cached = _indexes(folder)
    assert any(name.startswith("_simcore._sim_run-") for name in cached)
    second = _run(env)
    assert second["steps"][0]["compiled"] is False  # loaded from the cache, not compiled
    assert second["steps"][0]["events"] == first["steps"][0]["events"]
    assert _indexes(folder) == cached


def test_a_temporary_folder_others_may_write_is_not_used(tmp_path: Path) -> None:
    folder = tmp_path / f"{core.FALLBACK_CACHE_PREFIX}{os.getuid()}"
    folder.mkdir()
    folder.chmod(0o777)
    assert core._fallback_cache_dir(str(tmp_path)) is None
    folder.chmod(0o700)
    assert core._fallback_cache_dir(str(tmp_path)) == str(folder)
    (tmp_path / "other").mkdir()
    made = core._fallback_cache_dir(str(tmp_path / "other"))
    assert made is not None
    assert Path(made).stat().st_mode & 0o777 == 0o700
    (tmp_path / "file").mkdir()
    (tmp_path / "file" / f"{core.FALLBACK_CACHE_PREFIX}{os.getuid()}").write_text("")
    assert core._fallback_cache_dir(str(tmp_path / "file")) is None  # not a directory
