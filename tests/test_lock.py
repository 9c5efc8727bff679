"""The lock (constraints.txt, written by scripts/lock.sh) and the Docker build context.

* Every pin satisfies pyproject.toml's specifiers, every dependency of pyproject.toml (runtime,
  ``test``, ``bench``) is pinned, the environment the tests run in *is* the lock (so CI tests
  the pinned versions), and the lock is exactly what scripts/lock.sh writes from it now (no
  stray pins).
* Every runtime dependency has an upper bound, on the next major after the tested one.
* Every installer (Dockerfile, scripts/test.sh, scripts/demo.sh) installs with ``-c
  constraints.txt``.
* .dockerignore keeps the build context to what the Dockerfile COPYs: no .venv, .git,
  caches or bytecode, and every COPY source is in it.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.test_container import parse_dockerfile

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "constraints.txt"
EXTRAS = ("test", "bench")  # what scripts/test.sh installs: -e '.[test,bench]'
CONTEXT_LIMIT_BYTES = 5_000_000


def pyproject_requirements(*, runtime: bool = True, extras: tuple[str, ...] = EXTRAS
                           ) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]] if runtime else []
    for extra in extras:
        reqs += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return [r for r in reqs if r.marker is None or r.marker.evaluate({"extra": ""})]


def read_lock(path: Path = LOCK) -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        assert sep, f"not a name==version pin: {raw!r}"
        assert version, f"no version: {raw!r}"
        key = canonicalize_name(name)
        assert key not in pins, f"{name} pinned twice"
        pins[key] = Version(version)
    return pins


@pytest.fixture(scope="module")
def lock() -> dict[str, Version]:
    return read_lock()


def test_lock_pins_satisfy_pyproject_specifiers(lock: dict[str, Version]) -> None:
    bad = [f"{r} but the lock has {lock[canonicalize_name(r.name)]}"
           for r in pyproject_requirements()
           if canonicalize_name(r.name) in lock
           and not r.specifier.contains(lock[canonicalize_name(r.name)], prereleases=True)]
    assert not bad, "constraints.txt contradicts pyproject.toml: " + "; ".join(bad)


def test_every_pyproject_dependency_is_pinned(lock: dict[str, Version]) -> None:
    missing = sorted(r.name for r in pyproject_requirements()
                     if canonicalize_name(r.name) not in lock)
    assert not missing, f"not pinned in constraints.txt (run scripts/lock.sh): {missing}"


def test_environment_is_the_lock(lock: dict[str, Version]) -> None:
    """The versions these tests import are the pinned ones (scripts/test.sh installs with -c)."""
    wrong = []
    for name, pinned in sorted(lock.items()):
        try:
            installed = Version(md.version(name))
        except md.PackageNotFoundError:
            wrong.append(f"{name}: pinned {pinned}, not installed")
            continue
        if installed != pinned:
            wrong.append(f"{name}: pinned {pinned}, installed {installed}")
    assert not wrong, "the environment is not the lock: " + "; ".join(wrong)


def test_lock_is_what_lock_script_writes(tmp_path: Path, lock: dict[str, Version]) -> None:
    """Exactly the closure of pyproject's dependencies in this environment: nothing unrelated,
    nothing stale (a dependency dropped from pyproject drops out of the lock)."""
    out = tmp_path / "constraints.txt"
    proc = subprocess.run(["bash", "scripts/lock.sh", str(out)], cwd=ROOT, text=True,
                          capture_output=True, timeout=120, env={"PYTHON": sys.executable,
                                                                 "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert read_lock(out) == lock, "constraints.txt is stale: run scripts/lock.sh"


def test_runtime_dependencies_have_upper_bounds() -> None:
    unbounded = [str(r) for r in pyproject_requirements(extras=())
                 if not any(s.operator in ("<", "~=", "==") for s in r.specifier)]
    assert not unbounded, f"no upper bound on the tested major: {unbounded}"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for req in map(Requirement, project["dependencies"]):
        # The bound is the next release line after the tested one, not one already excluded.
        tested = read_lock()[canonicalize_name(req.name)]
        (upper,) = (Version(s.version) for s in req.specifier if s.operator == "<")
        assert upper.release[0] <= tested.release[0] + 1, f"{req}: bound far beyond {tested}"


def pip_install_lines(text: str) -> list[str]:
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line for line in joined.splitlines()
            if re.search(r"\bpip (install|wheel)\b", line) and not line.lstrip().startswith("#")]


@pytest.mark.parametrize("path", ["scripts/test.sh", "scripts/demo.sh", "Dockerfile"])
def test_installers_use_the_lock(path: str) -> None:
    lines = pip_install_lines((ROOT / path).read_text())
    assert lines, f"{path} installs nothing?"
    # Installing the built wheels needs no lock: they were resolved with it.
    resolving = [line for line in lines if "/wheels/*.whl" not in line]
    assert resolving
    for line in resolving:
        assert "-c constraints.txt" in line, f"{path}: installs without the lock: {line.strip()}"
    ci = (ROOT / ".ci" / "run").read_text()
    assert "scripts/test.sh" in ci  # CI installs via scripts/test.sh only
    assert not pip_install_lines(ci)


# --- .dockerignore ------------------------------------------------------------------------


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """Docker's .dockerignore syntax (moby/patternmatcher): ``*`` and ``?`` within one path
    element, ``**`` across any number of them, ``[...]`` classes."""
    out, i = "", 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif c == "*":
            out, i = out + "[^/]*", i + 1
        elif c == "?":
            out, i = out + "[^/]", i + 1
        elif c == "[":
            j = pattern.index("]", i)
            out, i = out + "[" + pattern[i + 1:j].replace("!", "^", 1) + "]", j + 1
        else:
            out, i = out + re.escape(c), i + 1
    return re.compile(out + r"\Z")


def dockerignore_rules() -> list[tuple[bool, str, re.Pattern[str]]]:
    rules = []
    for raw in (ROOT / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line[1:].strip() if negate else line
        pattern = pattern.strip("/")
        rules.append((negate, pattern, _pattern_regex(pattern)))
    return rules


def excluded(rel: str, rules: list[tuple[bool, str, re.Pattern[str]]]) -> bool:
    """A path is excluded by the last rule that matches it or one of its parent directories."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    result = False
    for negate, _, rx in rules:
        if any(rx.match(p) for p in prefixes):
            result = not negate
    return result


def build_context() -> list[str]:
    rules = dockerignore_rules()
    negations = [p for negate, p, _ in rules if negate]

    def may_reinclude(rel_dir: str) -> bool:
        for pattern in negations:
            literal = re.split(r"[*?\[]", pattern, maxsplit=1)[0]
            if literal.startswith(rel_dir + "/") or (rel_dir + "/").startswith(literal):
                return True
        return False

    files = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        base = Path(dirpath).relative_to(ROOT).as_posix()
        base = "" if base == "." else base + "/"
        # Like docker: an excluded directory no "!" rule reaches into is not walked at all.
        dirnames[:] = [d for d in dirnames
                       if not excluded(base + d, rules) or may_reinclude(base + d)]
        files += [base + f for f in filenames if not excluded(base + f, rules)]
    return sorted(files)


def test_dockerignore_matcher() -> None:
    rules = dockerignore_rules()
    for out in (".venv", ".venv/bin/python", ".git/HEAD", "docs/screenshots/overview.png",
                "tests/test_lock.py", "benchmarks/bench_scale.py", "build/lib/x.py",
                "queuelens.egg-info/PKG-INFO", "models/__pycache__/_simcore.f-1.py311.nbc",
                "dashboard/__pycache__/app.cpython-311.pyc", "node_modules/x/index.js",
                ".pytest_cache/v", ".mypy_cache/3.11/x.json", ".ruff_cache/x",
                "models/tsdb-1000/wal/0", "collectors/chunk-0.om", "scripts/demo.sh"):
        assert excluded(out, rules), f"{out} would be sent to docker build"
    for kept in ("pyproject.toml", "README.md", "constraints.txt", "dashboard/app.py",
                 "dashboard/assets/queuelens.css", "collectors/profile.py", "models/fluid.py"):
        assert not excluded(kept, rules), f"{kept} is needed by the Dockerfile"


def test_build_context_is_small_and_holds_what_the_dockerfile_copies() -> None:
    files = build_context()
    bad = [f for f in files
           if f.split("/")[0] in (".venv", ".git", "docs", "tests", "benchmarks", "build")
           or "__pycache__" in f.split("/") or f.endswith((".pyc", ".nbi", ".nbc"))]
    assert not bad, f"in the build context: {bad[:10]}"
    size = sum((ROOT / f).stat().st_size for f in files)
    assert size < CONTEXT_LIMIT_BYTES, f"build context is {size} bytes"
    copied: set[str] = set()
    for instruction in parse_dockerfile((ROOT / "Dockerfile").read_text()):
        if instruction.keyword == "COPY" and "--from" not in instruction.args:
            copied.update(shlex.split(instruction.args)[:-1])
    for src in copied:
        assert src in files or any(f.startswith(src + "/") for f in files), \
            f"COPY {src}: not in the build context (.dockerignore)"
    # And nothing else: the context is the COPY sources.
    stray = [f for f in files if f not in copied and f.split("/")[0] not in copied]
    assert not stray, f"sent to docker build but never copied: {stray[:10]}"
