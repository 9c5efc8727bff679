"""The CLI's conventions (issue 14 §4): ``--version``; every duration flag takes units and reads
a bare number as seconds, and says so in its ``--help``; a retry spec takes units and prints
back what it was given; tables print rounded numbers while JSON keeps full precision."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from dashboard import cliutil
from dashboard.cli import build_parser
from dashboard.commands import simulate as simulate_cmd
from tests.support.cli import run_main

ROOT = Path(__file__).resolve().parents[2]




# --- --version ------------------------------------------------------------------------------

def _pyproject_version() -> str:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return str(tomllib.load(fh)["project"]["version"])


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_the_package_version(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main([flag], capsys)
    assert code == 0
    assert err == ""
    assert out == f"queuelens {metadata.version('queuelens')}\n"
    assert metadata.version("queuelens") == _pyproject_version()  # the editable install


def test_version_falls_back_to_pyproject(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert cliutil.package_version() == _pyproject_version()


def test_version_is_in_the_top_level_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(["--help"], capsys)
    assert code == 0
    assert "-V, --version" in out


_VERSION_PROBE = """
import contextlib, io, json, sys
from dashboard.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main(["--version"])
        code = None
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"modules": sorted({m.split(".")[0] for m in sys.modules}), "code": code,
                  "out": out.getvalue()}))
"""


def test_version_stays_light() -> None:
    from tests.cli.test_cli_imports import HEAVY

    proc = subprocess.run([sys.executable, "-c", _VERSION_PROBE], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["code"] == 0
    assert result["out"].startswith("queuelens ")
    loaded = sorted({*HEAVY, "numpy", "yaml"} & set(result["modules"]))
    assert not loaded, f"--version imported {loaded}"


# --- duration flags -------------------------------------------------------------------------

def _is_duration_type(kind: Any) -> bool:
    """The duration argparse types: cliutil's three (everything else wraps one of them or
    collectors.timeparse.parse_duration itself)."""
    return (kind in (cliutil.parse_duration, cliutil.non_negative_duration,
                     simulate_cmd._retry_after, cliutil.work_duration)
            or getattr(kind, "__qualname__", "").startswith("bounded_duration."))


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
          ) -> Iterator[tuple[tuple[str, ...], argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, (*path, name))
        elif action.option_strings:
            yield path, action


ALL_OPTIONS = list(_walk(build_parser()))
DURATION_FLAGS = [(path, action) for path, action in ALL_OPTIONS if _is_duration_type(action.type)]
IDS = [f"{' '.join(p)} {a.option_strings[-1]}" for p, a in DURATION_FLAGS]

# Flags whose help text lives outside the files this convention's owner edits
# (dashboard/source_args.py): they take units all the same.
EXPECTED = {
    "serve": {"--timeout", "--deadline", "--refresh", "--window", "--range", "--slo"},
    "snapshot": {"--timeout", "--deadline", "--window"},
    "advise": {"--timeout", "--deadline", "--window", "--range", "--slo"},
    "report": {"--timeout", "--deadline", "--window", "--range", "--slo"},
    "whatif": {"--timeout", "--deadline", "--window", "--range", "--slo", "--service-mean"},
    "lab fluid": {"--until", "--step"},
    "rules": {"--window"},
    "doctor": {"--timeout", "--deadline", "--range"},
    "simulate": {"--service-mean", "--outage", "--api-latency", "--apf-wait-limit",
                 "--apf-background-latency", "--apf-retry-after", "--webhook-latency",
                 "--duration", "--warmup", "--scrape-interval"},
    "retries": {"--outage", "--attempt-time", "--horizon", "--bin", "--service-mean"},
}


def test_every_known_duration_flag_is_a_duration() -> None:
    found: dict[str, set[str]] = {}
    for path, action in DURATION_FLAGS:
        found.setdefault(" ".join(path), set()).add(action.option_strings[-1])
    for command, flags in EXPECTED.items():
        assert flags <= found.get(command, set()), command


def test_no_duration_looking_flag_takes_a_plain_number() -> None:
    """A flag whose value is a duration (its metavar says so) must use a duration type."""
    plain = [f"{' '.join(p)} {a.option_strings[-1]}" for p, a in ALL_OPTIONS
             if a.metavar in ("DURATION", "T", "DT", "W", "SECONDS")
             and not _is_duration_type(a.type)]
    assert plain == []


@pytest.mark.parametrize(("path", "action"), DURATION_FLAGS, ids=IDS)
def test_duration_flag_takes_units_and_bare_seconds(path: tuple[str, ...],
                                                    action: argparse.Action) -> None:
    parse: Callable[[str], float] = action.type  # type: ignore[assignment]
    assert parse("2") == 2.0          # a bare number is seconds
    assert parse("2s") == 2.0
    if parse is not simulate_cmd._retry_after:  # a Retry-After is whole seconds
        assert parse("250ms") == pytest.approx(0.25)
        assert parse("1.5s") == 1.5
    for text, seconds in (("5m", 300.0), ("2h", 7200.0), ("1h30m", 5400.0)):
        try:
            value: float | str = parse(text)
        except argparse.ArgumentTypeError as exc:  # a flag with a maximum (--apf-wait-limit …)
            value = str(exc)
        assert value == seconds or "at most" in str(value) or "from 1 to" in str(value)


@pytest.mark.parametrize(("path", "action"), DURATION_FLAGS, ids=IDS)
def test_duration_flag_help_says_bare_number_is_seconds(path: tuple[str, ...],
                                                        action: argparse.Action) -> None:
    flag = action.option_strings[-1]
    assert cliutil.BARE_SECONDS in " ".join((action.help or "").split()), flag


@pytest.mark.parametrize("bad", ["5parsecs", "-5s", "1e999", "0x10", ""])
@pytest.mark.parametrize(("path", "action"), DURATION_FLAGS, ids=IDS)
def test_bad_duration_is_one_line_exit_2(path: tuple[str, ...], action: argparse.Action, bad: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    flag = action.option_strings[-1]
    code, out, err = run_main([*path, f"{flag}={bad}"], capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1, err
    assert flag in err
    assert "Traceback" not in err


def test_whatif_service_mean_takes_units(capsys: pytest.CaptureFixture[str]) -> None:
    docs = []
    for value in ("250ms", "0.25"):
        code, out, err = run_main(["whatif", "--arrival-rate", "3", "--service-mean", value,
                                   "--workers", "1-3", "--format", "json"], capsys)
        assert code == 0, err
        docs.append(json.loads(out))
    assert docs[0]["inputs"]["service_mean_s"] == 0.25
    assert docs[0] == docs[1]


def test_window_bare_number_is_seconds() -> None:
    args = build_parser().parse_args(["snapshot", "--window", "5"])
    assert args.window == 5.0
    args = build_parser().parse_args(["advise", "--window", "90", "--slo", "250ms"])
    assert (args.window, args.slo) == (90.0, 0.25)


# --- retry specs ----------------------------------------------------------------------------

_SIM = ["simulate", "--keys", "5", "--workers", "1", "--arrival-rate", "2", "--service-mean",
        "10ms", "--duration", "20", "--fail-prob", "0.5", "--format", "json"]
_RETRIES = ["retries", "--keys", "10", "--outage", "10s", "--horizon", "60", "--format", "json"]


@pytest.mark.parametrize(("spec", "same_as", "printed"), [
    ("exp:5ms:1000s", "exp:0.005:1000", "exponential 5ms → 1000s"),
    ("exp:250ms:1m", "exp:0.25:60", "exponential 250ms → 60s"),
    ("EXP:1.5s:2h", "exp:1.5:7200", "exponential 1.5s → 7200s"),
    ("const:250ms", "const:0.25", "constant 250ms"),
    ("const:0s", "const:0", "0s"),
])
@pytest.mark.parametrize("command", [_SIM, _RETRIES], ids=["simulate", "retries"])
def test_retry_spec_takes_units(command: list[str], spec: str, same_as: str, printed: str,
                                capsys: pytest.CaptureFixture[str]) -> None:
    docs = []
    for text in (spec, same_as):
        code, out, err = run_main([*command, "--retry", text], capsys)
        assert code == 0, err
        docs.append(json.loads(out))
    assert printed in docs[0]["inputs"]["retry"]
    assert docs[0] == docs[1]


def test_retry_spec_round_trips_what_it_prints() -> None:
    """What describe() prints ("5ms → 1000s") is a spec the flag accepts, for the same policy."""
    from models.ratelimit import parse_retry_spec

    for spec in ("controller-runtime", "exp:0.005:1000", "exp:0.0125:90", "exp:2:3600"):
        policy = parse_retry_spec(spec)
        base, cap = re.fullmatch(r"exponential (\S+) → (\S+)", policy.describe()).groups()
        again = parse_retry_spec(f"exp:{base}:{cap}", duration=cliutil.duration_or_zero)
        assert again == policy
    for spec in ("const:0.25", "const:3"):
        policy = parse_retry_spec(spec)
        delay = policy.describe().removeprefix("constant ")
        assert parse_retry_spec(f"const:{delay}", duration=cliutil.duration_or_zero) == policy


@pytest.mark.parametrize("spec", ["exp:5parsecs:1s", "exp:5ms", "exp:5ms:1s:2s", "const:",
                                  "exp:-5ms:1s", "const:1e999", "exp:1s:5ms"])
def test_bad_retry_spec_is_one_line_exit_2(spec: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main([*_RETRIES, "--retry", spec], capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1, err
    assert "Traceback" not in err


# --- numbers in tables ----------------------------------------------------------------------

_DECIMAL = re.compile(r"\d+\.\d+")


def _raw_floats(text: str) -> list[str]:
    """Decimals printed with more than 5 significant digits (0.30000000000000004,
    0.000879354159965894): a float printed raw, not rounded for a person."""
    return [m for m in _DECIMAL.findall(text) if len(m.replace(".", "").lstrip("0")) > 5]


def test_retries_table_rounds_json_keeps_precision(capsys: pytest.CaptureFixture[str]) -> None:
    from dashboard.numbers import number_text

    argv = ["retries", "--keys", "100", "--outage", "60", "--healthy-rate", "5"]
    code, table, _ = run_main(argv, capsys)
    assert code == 0
    assert _raw_floats(table) == [], table
    code, out, _ = run_main([*argv, "--format", "json"], capsys)
    assert code == 0
    base = json.loads(out)["variants"][0]["healthy"]["baseline_wait_mean_s"]
    assert _raw_floats(repr(base))  # the JSON has the full float…
    assert f"without the storm: {number_text(base, 's')} (" in table  # …the table 3 digits


@pytest.mark.parametrize("argv", [
    ["whatif", "--arrival-rate", "3", "--service-mean", "100ms", "--workers", "1-4",
     "--slo", "300ms"],
    ["lab", "fluid", "--arrival-rate", "0.1", "--service-rate", "0.3", "--step", "100ms",
     "--until", "1s"],
    [*_SIM[:-2], "--retry", "exp:5ms:1000s"],
])
def test_tables_print_no_raw_floats(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(argv, capsys)
    assert code == 0, err
    assert _raw_floats(out) == [], out
