"""Generated command lines (issue 23, "Done when"): for every sub-command (and lab's
instruments), argv built from that parser's own options — random flags, hostile values (huge,
negative, NaN and infinite numbers, 1e308, control characters, very long strings, Unicode
digits) — against ``--demo``, never the network. Every run ends with exit 0, 2 or 3 (never an
uncaught exception), within a wall-clock bound enforced by a timer, with a bounded stderr.

``serve`` and ``exporter`` stop where they would start serving (the test replaces the function
that binds the socket); file outputs (``-o``, ``--emit-openmetrics``) go to the test's temporary
folder, never into the tree."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard.cli import build_parser, main
from tests.fuzz.strategies import fuzz_settings, hostile_text, time_bound

PER_RUN_S = 30.0
"""The timer's bound on one command (a simulation's first run in a fresh process compiles
for about 15 s; every bounded command answers well within this otherwise)."""

MAX_STDERR_LINES = 5
"""A failed run's stderr: an error is one line; a warning or two may precede it (e.g.
"--timeout is ignored with --demo")."""

MAX_PROGRESS_LINES = 100
"""``-v`` prints two or three progress lines per queue of the demo's eight, and a warning or
two."""

MAX_LINE_CHARS = 2000
"""A message quotes a bad value as an excerpt, never a 100,000-character argument whole."""

NETWORK_OPTIONS = {"--prometheus", "--url"}
"""Never generated: the fuzz runs against the demo only."""

PATH_OPTIONS = {"-o", "--output", "--emit-openmetrics", "--trace-file"}
"""Options that write a file: pointed into the temporary folder."""


PLAUSIBLE = ["1", "2", "4", "10", "0.5", "100", "100ms", "1s", "30s", "5m", "1-4",
             "0"]
"""Values most numeric and duration options accept, so a run reaches the command's body."""


NEEDED = {
    "simulate": {"--arrival-rate", "--keys", "--workers", "--service-mean", "--duration",
                 "--seed"},
    "whatif": {"--arrival-rate", "--service-mean"},
    "retries": {"--keys", "--outage"},
}
"""Options a command needs that argparse does not mark required (one of two alternatives:
``--arrival-rate`` or ``--rate-schedule``, the formula inputs or ``--queue``)."""


class Served(BaseException):
    """Raised where ``serve`` or ``exporter`` would start serving: the arguments were
    accepted."""


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every leaf sub-command's parser, by its argv prefix (``"lab fluid"``)."""
    out: dict[str, argparse.ArgumentParser] = {}

    def walk(prefix: str, parser: argparse.ArgumentParser) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            out[prefix] = parser
            return
        for name, child in subs[0].choices.items():
            walk(f"{prefix} {name}".strip(), child)

    walk("", build_parser())
    return out


COMMANDS = _commands()


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings
            and not isinstance(a, argparse._HelpAction)
            and not set(a.option_strings) & NETWORK_OPTIONS]


def _value(action: argparse.Action, tmp: Path, hostile: bool) -> st.SearchStrategy[str]:
    """A hostile value, or one the option plausibly accepts (its choices, its default, or a
    small number or duration)."""
    if set(action.option_strings) & PATH_OPTIONS:
        return st.sampled_from([str(tmp / "out"), str(tmp / "out.html"), str(tmp),
                                str(tmp / "missing" / "x.om")])
    if "--config" in action.option_strings:
        return st.sampled_from([str(tmp / "none.yaml"), str(tmp), "/dev/null"])
    if hostile:
        return hostile_text
    if action.choices:
        return st.sampled_from([str(c) for c in action.choices])
    return st.sampled_from(_accepted(action))


def _accepted(action: argparse.Action) -> list[str]:
    """The values of :data:`PLAUSIBLE` (and the default) that the option's own type accepts,
    so a plausible value is one the command runs with."""
    plain = [*PLAUSIBLE]
    if isinstance(action.default, str | int | float) and not isinstance(action.default, bool):
        plain.append(str(action.default))
    if not callable(action.type):
        return plain
    accepted = []
    for text in plain:
        try:
            action.type(text)
        except (argparse.ArgumentTypeError, ValueError, TypeError):
            continue
        accepted.append(text)
    return accepted or plain


@st.composite
def _argv(draw: st.DrawFn, command: str, tmp: Path) -> list[str]:
    """``command``'s words, ``--demo`` where it takes it, up to six of its options (and, most
    of the time, its required ones): at most one option has a hostile value (or none, so runs
    reach the command's body), the rest plausible ones, then hostile positionals."""
    parser = COMMANDS[command]
    options = _options(parser)
    argv = command.split()
    if any("--demo" in a.option_strings for a in options):
        argv.append("--demo")
    chosen = draw(st.lists(st.sampled_from(options), max_size=6)) if options else []
    if draw(st.booleans()):
        needed = NEEDED.get(command, set())
        chosen += [a for a in options if (a.required or set(a.option_strings) & needed)
                   and a not in chosen]
    hostile = draw(st.integers(-1, len(chosen) - 1)) if chosen else -1
    for i, action in enumerate(chosen):
        flag = draw(st.sampled_from(action.option_strings))
        if action.nargs == 0:
            argv.append(flag)
        else:
            argv += [flag, draw(_value(action, tmp, i == hostile))]
    positionals = [a for a in parser._actions if not a.option_strings
                   and not isinstance(a, argparse._SubParsersAction)]
    argv += [draw(hostile_text) for _ in positionals]
    return argv


@pytest.fixture
def contained(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No Prometheus from the environment, no server started, the cwd in a temporary
    folder."""
    for name in list(os.environ):
        if name.startswith("QUEUELENS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("COLUMNS", "120")

    def served(*_args: Any, **_kwargs: Any) -> Any:
        raise Served

    import collectors.exporter
    import dashboard.commands.serve
    monkeypatch.setattr(dashboard.commands.serve, "run_server", served)
    monkeypatch.setattr(collectors.exporter, "serve", served)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_cli(argv: list[str]) -> tuple[int, str]:
    """``main(argv)`` in this process: its exit code (argparse's SystemExit included) and
    stderr. An uncaught exception propagates: the test fails with it."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
        except Served:
            code = 0
    return code, err.getvalue()


def test_every_command_is_fuzzed() -> None:
    # read from the parser, not listed by hand: a new command is fuzzed too
    assert {"serve", "advise", "simulate", "retries", "lab fluid", "lab keys"} <= set(COMMANDS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
@fuzz_settings(max_examples=40, deadline_s=None)
@given(data=st.data())
def test_a_fuzzed_command_line_ends_with_a_sentence(command: str, contained: Path,
                                                    data: st.DataObject) -> None:
    argv = data.draw(_argv(command, contained), label="argv")
    with time_bound(PER_RUN_S, " ".join(argv)[:200]):
        code, err = run_cli(argv)
    assert code in (0, 2, 3), (code, err[-2000:])
    assert "Traceback" not in err, err[-2000:]
    lines = err.splitlines()
    if code != 0:  # a refusal is a sentence, not a page (``-v``'s progress lines are not errors)
        assert len(lines) <= MAX_STDERR_LINES, err[-2000:]
    assert len(lines) <= MAX_PROGRESS_LINES, err[-2000:]
    assert max(map(len, err.splitlines()), default=0) <= MAX_LINE_CHARS, err[:300]
