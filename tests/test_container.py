"""The container files, tested without a Docker engine.

* The Dockerfile is parsed; its build stage is replayed (the same COPY list, ``pip wheel``),
  the wheel is installed into a scratch directory, and its exact CMD (``queuelens serve``) is
  started from there (only the address changes) — so the image's command and packaged assets
  are the ones that serve ``/livez`` and ``/`` here. Its HEALTHCHECK command is run against it.
* docker-compose.yml: the exporter's command is run for real and scraped; the Prometheus config
  it mounts passes ``promtool check config`` with the generated rules; the dashboard is pointed
  at the Prometheus service.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
import yaml

from tests.conftest import require_binary
from tests.support.prometheus import HINT

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "Dockerfile"
COMPOSE = REPO / "docker-compose.yml"
CONTAINER_PORT = 8050
START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str
    stage: int
    """Index of the FROM stage it belongs to."""


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions with line continuations joined and comments dropped."""
    out: list[Instruction] = []
    stage = -1
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        keyword, _, args = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        out.append(Instruction(keyword, args.strip(), stage))
    assert not pending, "Dockerfile ends inside a line continuation"
    return out


def exec_form(args: str) -> list[str]:
    value = json.loads(args)
    assert isinstance(value, list), f"not exec form: {args}"
    assert all(isinstance(v, str) for v in value)
    return value


def final(instructions: list[Instruction], keyword: str) -> list[Instruction]:
    last = max(i.stage for i in instructions)
    return [i for i in instructions if i.keyword == keyword and i.stage == last]


@pytest.fixture(scope="module")
def dockerfile() -> list[Instruction]:
    return parse_dockerfile(DOCKERFILE.read_text())


def image_cmd(instructions: list[Instruction]) -> list[str]:
    (cmd,) = final(instructions, "CMD")
    return exec_form(cmd.args)


def option(argv: list[str], name: str) -> str:
    for i, arg in enumerate(argv):
        if arg == name:
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    raise AssertionError(f"{name} not in {argv}")


def with_address(argv: list[str], host: str, port: int) -> list[str]:
    """The command with its ``--host`` and ``--port`` values replaced."""
    out = list(argv)
    for name, value in (("--host", host), ("--port", str(port))):
        for i, arg in enumerate(out):
            if arg == name:
                out[i + 1] = value
            elif arg.startswith(name + "="):
                out[i] = f"{name}={value}"
    return out


def as_python(argv: list[str]) -> list[str]:
    """``queuelens ARGS`` as ``python -m dashboard.cli ARGS`` (the console script's target)."""
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert argv[0] == "queuelens"
    assert scripts["queuelens"] == "dashboard.cli:main"
    return [sys.executable, "-m", "dashboard.cli", *argv[1:]]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# --- static checks of the Dockerfile ------------------------------------------------------


def test_dockerfile_command_serves_the_app_factory(dockerfile: list[Instruction]) -> None:
    argv = image_cmd(dockerfile)
    # `queuelens serve`: one process (one shared query cache), threads, and waitress, which
    # reads whole requests before a thread sees them (slow clients: issue 23)
    assert argv[:2] == ["queuelens", "serve"]
    assert option(argv, "--host") == "0.0.0.0"
    assert option(argv, "--port") == str(CONTAINER_PORT)


def test_dockerfile_is_multistage_slim_non_root(dockerfile: list[Instruction]) -> None:
    froms = [i.args for i in dockerfile if i.keyword == "FROM"]
    assert len(froms) >= 2, "multi-stage build expected"
    assert all("slim" in f for f in froms)
    users = final(dockerfile, "USER")
    assert users, "the final stage must switch to a non-root USER"
    user = users[-1].args.split(":")[0]
    assert user not in ("root", "0")
    created = " ".join(i.args for i in final(dockerfile, "RUN"))
    assert re.search(rf"useradd\b.*\b{re.escape(user)}\b", created), "USER is never created"
    # USER comes before CMD takes effect: no later USER switches back to root.
    assert dockerfile.index(users[-1]) < dockerfile.index(final(dockerfile, "CMD")[0])
    assert [i.args for i in final(dockerfile, "EXPOSE")] == [str(CONTAINER_PORT)]
    # The build stage copies only sources that exist.
    for copy in (i for i in dockerfile if i.keyword == "COPY" and "--from" not in i.args):
        for src in shlex.split(copy.args)[:-1]:
            assert (REPO / src).exists(), f"COPY source {src} does not exist"


def test_healthcheck_targets_liveness(dockerfile: list[Instruction]) -> None:
    (check,) = final(dockerfile, "HEALTHCHECK")
    options, _, command = check.args.partition("CMD ")
    assert "--interval=" in options
    assert "--timeout=" in options
    argv = exec_form(command)
    assert f"http://127.0.0.1:{CONTAINER_PORT}/livez" in " ".join(argv)


# --- the image's command, really started --------------------------------------------------


@pytest.fixture(scope="module")
def installed_wheel(
    dockerfile: list[Instruction], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Replay the build stage: copy what it COPYs, build the wheel, install it (no deps: the
    test environment has them) into a directory that plays site-packages."""
    work = tmp_path_factory.mktemp("image")
    src = work / "src"
    src.mkdir()
    build_stage = [i for i in dockerfile if i.stage == 0]
    for copy in (i for i in build_stage if i.keyword == "COPY"):
        *sources, dest = shlex.split(copy.args)
        for name in sources:
            target = src / (name if dest in ("./", ".") else dest)
            if (REPO / name).is_dir():
                shutil.copytree(REPO / name, target,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(REPO / name, target)
    wheels = work / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(wheels), str(src)],
        check=True, capture_output=True, timeout=300,
    )
    (wheel,) = wheels.glob("queuelens-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("dashboard/app.py", "dashboard/assets/queuelens.css",
                   "collectors/profile.py", "models/fluid.py"):
        assert needed in names, f"{needed} missing from the image's wheel"
    site = work / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "--target",
         str(site), str(wheel)],
        check=True, capture_output=True, timeout=300,
    )
    return site


@pytest.fixture(scope="module")
def image_server(
    dockerfile: list[Instruction], installed_wheel: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """The Dockerfile's command (address changed), run from outside the source tree so only
    the installed wheel can provide the app."""
    port = free_port()
    argv = as_python(with_address(image_cmd(dockerfile), "127.0.0.1", port))
    home = tmp_path_factory.mktemp("home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUEUELENS_")}
    env["PYTHONPATH"] = str(installed_wheel)
    log_path = home / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, cwd=home, env=env,
                                stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail("the image command exited:\n"
                            + log_path.read_text(errors="replace")[-3000:])
            try:
                if requests.get(url + "/health", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the image command not healthy within {START_TIMEOUT_S:g}s:\n"
                            + log_path.read_text(errors="replace")[-3000:])
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_image_command_serves_health_and_dashboard(image_server: str) -> None:
    health = requests.get(image_server + "/health", timeout=10)
    assert health.status_code == 200
    assert health.json()["status"] == "ok"
    assert health.json()["source"] == "demo"  # no QUEUELENS_PROMETHEUS_URL -> embedded demo
    page = requests.get(image_server + "/", timeout=30)
    assert page.status_code == 200
    assert "text/html" in page.headers["Content-Type"]
    assert "<title>queuelens</title>" in page.text
    assert 'id="react-entry-point"' in page.text
    css = requests.get(image_server + "/assets/queuelens.css", timeout=10)
    assert css.status_code == 200  # the packaged assets are served from the wheel


def test_healthcheck_command_passes_then_fails(
    dockerfile: list[Instruction], image_server: str
) -> None:
    (check,) = final(dockerfile, "HEALTHCHECK")
    argv = exec_form(check.args.partition("CMD ")[2])
    port = urlsplit(image_server).port
    argv = [a.replace(f"127.0.0.1:{CONTAINER_PORT}", f"127.0.0.1:{port}") for a in argv]
    assert argv[0] == "python"
    ok = subprocess.run([sys.executable, *argv[1:]], capture_output=True, timeout=30)
    assert ok.returncode == 0, ok.stderr
    dead = [a.replace(f":{port}/", f":{free_port()}/") for a in argv]
    down = subprocess.run([sys.executable, *dead[1:]], capture_output=True, timeout=30)
    assert down.returncode != 0


# --- docker-compose.yml -------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, dict[str, object]]:
    doc = yaml.safe_load(COMPOSE.read_text())
    services: dict[str, dict[str, object]] = doc["services"]
    return services


def test_dashboard_service_reads_the_prometheus_service(
    compose: dict[str, dict[str, object]], dockerfile: list[Instruction]
) -> None:
    dash = compose["dashboard"]
    env = dash["environment"]
    assert isinstance(env, dict)
    url = urlsplit(str(env["QUEUELENS_PROMETHEUS_URL"]))
    assert url.scheme == "http"
    assert url.hostname in compose  # a service name on the compose network
    assert url.hostname == "prometheus"
    assert url.port == 9090  # Prometheus's default --web.listen-address
    ports = dash["ports"]
    assert isinstance(ports, list)
    assert any(str(p).endswith(f":{CONTAINER_PORT}") for p in ports)
    assert "command" not in dash  # runs the image's CMD, the one tested above


def test_compose_exporter_command_runs_and_serves_metrics(
    compose: dict[str, dict[str, object]],
) -> None:
    from dashboard.cli import build_parser

    command = compose["exporter"]["command"]
    assert isinstance(command, list)
    assert command[0] == "queuelens"
    build_parser().parse_args(command[1:])  # SystemExit(2) on an invalid invocation
    listen = option(command, "--listen")
    assert listen.startswith("0.0.0.0:")
    exporter_port = int(listen.rsplit(":", 1)[1])
    expose = compose["exporter"]["expose"]
    assert isinstance(expose, list)
    assert str(exporter_port) in [str(p) for p in expose]
    # Run the same invocation on loopback and scrape it once.
    port = free_port()
    argv = [a if a != listen else f"127.0.0.1:{port}" for a in command[1:]]
    proc = subprocess.Popen([sys.executable, "-m", "dashboard.cli", *argv], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        body = ""
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                body = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
                break
            except requests.RequestException:
                time.sleep(0.2)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert "workqueue_adds_total{" in body
        assert "controller_runtime_max_concurrent_reconciles{" in body
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_compose_prometheus_config_is_valid_and_loads_the_rules(
    compose: dict[str, dict[str, object]], tmp_path: Path
) -> None:
    """deploy/prometheus.yml, with the container paths mapped back to the repo's files, passes
    `promtool check config` (which also checks the rule file), and it scrapes the exporter."""
    promtool = require_binary("promtool", HINT)
    volumes = compose["prometheus"]["volumes"]
    assert isinstance(volumes, list)
    mounts = {}
    for volume in volumes:
        host, container, *_ = str(volume).split(":")
        assert (REPO / host).is_file(), f"compose mounts missing file {host}"
        mounts[container] = REPO / host
    command = compose["prometheus"]["command"]
    assert isinstance(command, list)
    config_path = option([a for c in command for a in str(c).split("=", 1)], "--config.file")
    text = mounts[config_path].read_text()
    config = yaml.safe_load(text)
    assert config["rule_files"], "the compose Prometheus loads no rules"
    for container_path in config["rule_files"]:
        assert container_path in mounts, f"rule file {container_path} is not mounted"
        text = text.replace(container_path, str(mounts[container_path]))
    assert mounts[config["rule_files"][0]].name == "queuelens-rules.yaml"
    targets = [t for job in config["scrape_configs"] for sc in job["static_configs"]
               for t in sc["targets"]]
    listen = option(compose["exporter"]["command"], "--listen")  # type: ignore[arg-type]
    assert f"exporter:{listen.rsplit(':', 1)[1]}" in targets
    local = tmp_path / "prometheus.yml"
    local.write_text(text)
    result = subprocess.run([promtool, "check", "config", str(local)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 14 rules found" in result.stdout + result.stderr
