"""Shared plumbing for the CLI: argument types, errors with exit codes, and output formats.

Exit codes: 0 ok · 2 bad input or config · 3 Prometheus unavailable or rejected the query.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn, TextIO

from collectors import timeparse

# Only argparse-level modules are imported here: every `queuelens ... --help` imports this
# module, so the output formats import json/csv/dataclasses/tempfile where they are used.

EXIT_USAGE = 2
EXIT_PROMETHEUS = 3

FORMATS = ("table", "json", "csv")


class CliError(Exception):
    """An error the CLI reports as one line on stderr, with an exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


# --- argument types -----------------------------------------------------------------------

def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def non_negative_float(text: str) -> float:
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def positive_float(text: str) -> float:
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def fraction(text: str) -> float:
    """A probability or share: a number in [0, 1]."""
    value = non_negative_float(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text!r}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def parse_duration(text: str) -> float:
    """'90s', '5m', '1h30m', '250ms' or a bare number of seconds -> seconds (> 0)."""
    try:
        return timeparse.parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_time(text: str) -> float:
    """Unix seconds or RFC 3339 ('2024-01-01T00:30:00Z') -> unix seconds."""
    try:
        return timeparse.parse_time(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_int_range(text: str) -> tuple[int, int]:
    """'1-16' or '8' -> (low, high), 1 <= low <= high."""
    parts = text.split("-")
    try:
        if len(parts) == 1:
            low = high = int(parts[0])
        elif len(parts) == 2:
            low, high = int(parts[0]), int(parts[1])
        else:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a range: {text!r} (use e.g. 1-16)") from None
    if low < 1:
        raise argparse.ArgumentTypeError(f"range must start at 1 or more, got {text!r}")
    if high < low:
        raise argparse.ArgumentTypeError(f"range is reversed: {text!r}")
    return low, high


def add_settings_arguments(parser: Any, *, window: bool = True, history: bool = True,
                           slo: bool = True, thresholds: bool = True) -> None:
    """The analysis settings every command shares (:class:`models.settings.AnalysisSettings`):
    a flag left out keeps the config file's ``analysis:`` value, else the one default."""
    if window:
        parser.add_argument("--window", type=parse_duration, default=None, metavar="DURATION",
                            help="rate window of the snapshot (default 5m; a bare number is "
                                 "seconds)")
    if history:
        parser.add_argument("--range", dest="range_s", type=parse_duration, default=None,
                            metavar="DURATION",
                            help="history the advisor reads, one point per max(range/120, 15s) "
                                 "(default 2h)")
    if slo:
        parser.add_argument("--slo", type=parse_duration, default=None, metavar="DURATION",
                            help="queue-wait objective (default 1s)")
        parser.add_argument("--slo-quantile", type=fraction_open, default=None, metavar="Q",
                            help="the wait quantile the SLO applies to (default 0.95)")
    if thresholds:
        parser.add_argument("--threshold", action="append", default=[], metavar="NAME=VALUE",
                            help="override one advisor threshold (repeat; names in "
                                 "docs/advisor.md)")


def fraction_open(text: str) -> float:
    """A number strictly between 0 and 1 (a quantile, a utilization target)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text!r}")
    return value


def settings_from_args(args: argparse.Namespace, config: Any = None) -> Any:
    """The :class:`models.settings.AnalysisSettings` of a command: the config file's
    ``analysis:`` section (``config``: a loaded :class:`collectors.config.QueuelensConfig`),
    then the flags of :func:`add_settings_arguments` that were given."""
    from models.errors import ModelInputError
    from models.settings import AnalysisSettings

    base = getattr(config, "analysis", None) or AnalysisSettings()
    overrides: dict[str, str] = {}
    for item in getattr(args, "threshold", None) or []:
        name, sep, value = str(item).partition("=")
        if not sep or not name.strip():
            raise CliError(f"--threshold expects NAME=VALUE, got {item!r}.")
        overrides[name.strip()] = value.strip()
    try:
        return base.with_overrides(
            window_s=getattr(args, "window", None), range_s=getattr(args, "range_s", None),
            slo_wait_s=getattr(args, "slo", None),
            slo_quantile=getattr(args, "slo_quantile", None),
            thresholds=overrides or None, where="--threshold")
    except ModelInputError as exc:
        raise CliError(str(exc)) from None


def add_format_argument(parser: argparse.ArgumentParser, choices: Sequence[str] = FORMATS) -> None:
    parser.add_argument(
        "--format", choices=list(choices), default="table", help="output format (default: table)"
    )


# --- output -------------------------------------------------------------------------------

def jsonable(value: Any) -> Any:
    """Dataclasses, numpy scalars/arrays, mappings and sequences -> plain JSON values.

    NaN and ±Inf become None: a value that does not exist is null, never NaN.
    """
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, str | bytes):
        return value.decode() if isinstance(value, bytes) else value
    if hasattr(value, "tolist"):  # numpy scalar or array
        return jsonable(value.tolist())
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Sequence | set | frozenset):
        return [jsonable(v) for v in value]
    return str(value)


def dump_json(payload: Any, out: TextIO | None = None) -> None:
    import json

    text = json.dumps(jsonable(payload), indent=2, allow_nan=False, ensure_ascii=False)
    (out or sys.stdout).write(text + "\n")


def _cell(value: Any) -> str:
    value = jsonable(value)
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | dict):
        import json

        return json.dumps(value, ensure_ascii=False)
    return str(value)


def format_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """A plain aligned text table (for terminals); None prints as '-'."""
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)


def format_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow(["" if (v := jsonable(r.get(c))) is None else v for c in columns])
    return buf.getvalue()


def emit(
    fmt: str,
    payload: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str],
    *,
    header: str = "",
    footer: str = "",
    out: TextIO | None = None,
) -> None:
    """Write ``payload`` as JSON, or ``rows`` as a table/CSV (header/footer only for tables)."""
    stream = out or sys.stdout
    if fmt == "json":
        dump_json(payload, stream)
    elif fmt == "csv":
        stream.write(format_csv(rows, columns))
    else:
        text = "\n".join(part for part in (header, format_table(rows, columns), footer) if part)
        stream.write(text + "\n")


def check_output_path(path: str, flag: str) -> None:
    """Refuse, before any work, an output that is not a new or regular file: a symbolic link
    (the rename would replace the link, not write where it points), a device or a directory,
    ``-``, or a file in a directory that does not exist."""
    import stat

    if path == "-":
        raise CliError(f"{flag} needs a file name (stdout carries the result).")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror}") from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise CliError(f"{flag} {path}: is a symbolic link; refusing to replace it.")
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise CliError(f"{flag} {path}: is a directory; give a file name.")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise CliError(f"{flag} {path}: is not a regular file.")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise CliError(f"cannot write {path}: the directory {directory} does not exist")


def write_text_atomically(path: str, text: str, flag: str = "-o") -> None:
    """Write ``text`` to ``path`` via a temporary file in the same directory, then rename,
    so a failed run never leaves a half-written file or replaces a good one. The target is
    checked by :func:`check_output_path`; the file is created with mode 0666 less the umask,
    as any file the user's shell would create."""
    write_atomically(path, lambda fh: fh.write(text), flag)


def write_atomically(path: str, write: Callable[[TextIO], object], flag: str = "-o") -> None:
    """:func:`write_text_atomically` for text produced piece by piece: ``write(fh)`` writes
    it to the temporary file (a large output is never held in memory)."""
    import secrets

    check_output_path(path, flag)
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".queuelens-{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            write(fh)
        os.replace(tmp, path)
    except OSError as exc:
        os.unlink(tmp)
        raise CliError(f"cannot write {path}: {exc.strerror}") from None


class ProgressBar:
    """Progress on a stream: a redrawn one-line bar on a terminal, plain lines otherwise."""

    WIDTH = 24

    def __init__(self, stream: TextIO, tty: bool) -> None:
        self.stream = stream
        self.tty = tty
        self.drawn = False
        self._last_pct = -1

    def __call__(self, label: str, done: int, total: int) -> None:
        if self.tty:
            filled = self.WIDTH * done // total if total else self.WIDTH
            line = f"[{'#' * filled:<{self.WIDTH}}] {done}/{total} {label}"[:78]
            self.stream.write("\r" + line.ljust(78))
            self.drawn = True
        else:
            self.stream.write(f"queuelens: {label} ({done}/{total})\n")
        self.stream.flush()

    def fraction(self, label: str, value: float) -> None:
        """Progress as a fraction in [0, 1], drawn only when the whole percent changes."""
        pct = min(100, max(0, int(value * 100)))
        if pct != self._last_pct:
            self._last_pct = pct
            self(label, pct, 100)

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r" + " " * 78 + "\r")
            self.stream.flush()
