"""What tests/fuzz/test_fuzz_cli.py found: an error quoting a very long argument printed it
whole (a 100,000-character ``--timeout`` made a 100,000-character line); every error and
warning line is now at most 1,000 characters, its start and end kept."""

from __future__ import annotations

import pytest

from dashboard.cli import main
from dashboard.cliutil import MAX_MESSAGE_CHARS, message_line


def test_a_long_message_keeps_its_start_and_end() -> None:
    line = message_line("argument --timeout: not a duration: '" + "9" * 10_000
                        + "' (use e.g. 30s, 5m)")
    assert len(line) <= MAX_MESSAGE_CHARS
    assert line.startswith("argument --timeout: not a duration: '999")
    assert line.endswith("' (use e.g. 30s, 5m)")
    assert "characters cut" in line
    assert message_line("short \x1b[2J") == "short \\x1b[2J"


@pytest.mark.parametrize("argv", [
    ["advise", "--demo", "--timeout", "9" * 100_000],    # argparse's error
    ["lab", "keys", "--trace", "9" * 100_000],            # a command's own error
])
def test_an_error_about_a_huge_argument_is_one_bounded_line(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.splitlines()) == 1, err[:300]
    assert len(err) <= MAX_MESSAGE_CHARS + 40, len(err)
