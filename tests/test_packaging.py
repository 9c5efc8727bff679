"""Packaging: the wheel holds exactly dashboard, collectors and models; models does no I/O."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("requests", "dash", "prometheus_api_client", "flask", "urllib3")


def _can_build_offline() -> bool:
    """True when this interpreter can run the setuptools backend without an isolated env."""
    probe = (
        "import importlib.util as u, setuptools as s\n"
        "v = tuple(int(x) for x in s.__version__.split('.')[:2])\n"
        "ok = v >= (70, 1) or u.find_spec('wheel') is not None\n"
        "raise SystemExit(0 if ok and v >= (68, 0) else 1)"
    )
    return subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


def test_wheel_holds_exactly_the_three_packages(tmp_path: Path) -> None:
    # Build from a copy so that build/ and *.egg-info never appear in the shared tree.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for pkg in ("dashboard", "collectors", "models"):
        shutil.copytree(ROOT / pkg, src / pkg, ignore=ignore)
    shutil.copytree(ROOT / "tests", src / "tests", ignore=ignore)  # must NOT end up in the wheel
    out = tmp_path / "dist"
    cmd = [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(src)]
    if _can_build_offline():
        cmd.insert(4, "--no-isolation")  # else build fetches setuptools+wheel itself
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    wheels = list(out.glob("queuelens-*.whl"))
    assert len(wheels) == 1
    names = zipfile.ZipFile(wheels[0]).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"dashboard", "collectors", "models"}
    assert "models/queueing.py" in names
    assert "dashboard/cli.py" in names
    entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "queuelens = dashboard.cli:main" in zipfile.ZipFile(wheels[0]).read(entry).decode()


def test_models_import_nothing_that_does_io() -> None:
    code = f"""
import importlib, pkgutil, sys
import models
mods = [m.name for m in pkgutil.walk_packages(models.__path__, "models.")]
assert len(mods) >= 6, mods
for name in mods:
    importlib.import_module(name)
bad = sorted(m for m in sys.modules if m.split(".")[0] in {FORBIDDEN!r})
print(",".join(bad))
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"models pulled in: {proc.stdout.strip()}"
