"""The `queuelens` command line: a thin dispatcher over the sub-command modules.

Errors become one line on stderr and an exit code (see :mod:`dashboard.cliutil`), never a
traceback: 2 for bad input or config, 3 when Prometheus is unavailable or rejects a query.
The line goes through :func:`dashboard.cliutil.terminal_text`: an error names queues, URLs and
flag values, and a control character in one of them must not reach the terminal.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from dashboard.cliutil import (
    EXIT_PROMETHEUS,
    EXIT_USAGE,
    CliError,
    OneLineParser,
    VersionAction,
    warn,
)

# Sub-command modules in dashboard/commands/, in the order `--help` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "serve",
    "snapshot",
    "advise",
    "report",
    "whatif",
    "lab",
    "rules",
    "doctor",
    "simulate",
    "retries",
    "exporter",
)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="queuelens",
        description="Queue observability and capacity math for controller work queues.",
    )
    parser.add_argument("-V", "--version", action=VersionAction,
                        help="print queuelens's version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"dashboard.commands.{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from collectors.errors import BadQuery, ConfigError, PrometheusUnavailable
    from models.errors import ModelInputError

    argv = list(sys.argv[1:] if argv is None else argv)
    suggestion = _did_you_mean(argv)
    if suggestion:
        _fail(suggestion)
        return EXIT_USAGE
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except CliError as exc:
        _fail(str(exc))
        return exc.exit_code
    except (ModelInputError, ConfigError) as exc:
        _fail(str(exc))
        return EXIT_USAGE
    except (PrometheusUnavailable, BadQuery) as exc:
        _fail(str(exc))
        return EXIT_PROMETHEUS
    except KeyboardInterrupt:
        _fail("interrupted")
        return 130
    except BrokenPipeError:
        return 0
    return code


def _did_you_mean(argv: Sequence[str]) -> str | None:
    """For a mistyped sub-command (the first argument that is not an option: the top-level
    options take no value), the one-line error naming the closest command
    (:func:`difflib.get_close_matches`, its default cutoff 0.6); None otherwise — a known
    command, or nothing close (argparse then lists the commands)."""
    import difflib

    first = next((a for a in argv if not a.startswith("-")), None)
    if first is None or first in COMMAND_MODULES:
        return None
    close = difflib.get_close_matches(first, COMMAND_MODULES, n=1)
    if not close:
        return None
    return f"unknown command {first!r}; did you mean {close[0]!r}?"


def _fail(message: str) -> None:
    warn(message, "error")


if __name__ == "__main__":
    raise SystemExit(main())
