"""Shared plumbing for the CLI: argument types, errors with exit codes, and output formats.

Exit codes: 0 ok · 2 bad input or config · 3 Prometheus unavailable or rejected the query.

Queue names and label values come from Prometheus, i.e. from whoever can make a controller
export a metric: hostile text. So every output format neutralises what its reader would act on:

* text for a terminal (tables, their header and footer lines, warnings, errors, progress
  labels) shows control characters as escapes (:func:`terminal_text`: ``\\x1b``, ``\\n`` …),
  so a name cannot clear the screen, move the cursor, retitle the window or forge a line;
* CSV cells that a spreadsheet would run as a formula get a leading ``'``
  (:func:`csv_text`, the one guard every CSV output goes through — :func:`format_csv`);
* JSON is escaped by :func:`json.dumps`; :func:`dump_json` also writes DEL, the C1 controls
  and the bidirectional-text controls as ``\\u`` escapes, which ``ensure_ascii=False`` leaves raw;
* YAML (:func:`dump_yaml`) writes a string holding any of those characters double-quoted,
  each as its ``\\x``/``\\u`` escape.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn, TextIO

from collectors import timeparse
from models.formatting import sig

# Only argparse-level modules are imported here: every `queuelens ... --help` imports this
# module, so the output formats import json/csv/dataclasses/tempfile where they are used.

EXIT_USAGE = 2
EXIT_PROMETHEUS = 3

FORMATS = ("table", "json", "csv")
ELLIPSIS = "…"
MIN_SHRUNK_WIDTH = 8
"""The narrowest a text column is cut to when a table is fitted to the terminal: a word and
the ellipsis (the eight columns of ``advise`` then fit 80 characters); a table that still
does not fit wraps (a very narrow terminal)."""


class CliError(Exception):
    """An error the CLI reports as one line on stderr, with an exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit code 2."""

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None
                         ) -> tuple[argparse.Namespace, list[str]]:
        # argparse (3.11) gives `--flag=--` the value [] without calling the flag's type:
        # refuse it here, for every option, instead of letting [] reach a command
        for arg in args if args is not None else sys.argv[1:]:
            if isinstance(arg, str) and arg.startswith("--") and arg.endswith("=--"):
                self.error(f"argument {arg[:-3]}: '--' is not a value")
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{terminal_text(self.prog)}: error: {message_line(message)}\n")
        raise SystemExit(EXIT_USAGE)


def package_version() -> str:
    """queuelens's version: the installed distribution's metadata, else (running from a
    source tree that is not installed) ``[project] version`` of its pyproject.toml, else
    ``"unknown"``. Imports only the standard library (``--version`` stays as light as
    ``--help``)."""
    from importlib import metadata

    try:
        return metadata.version("queuelens")
    except metadata.PackageNotFoundError:
        pass
    import tomllib

    pyproject = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "pyproject.toml")
    try:
        with open(pyproject, "rb") as fh:
            version = tomllib.load(fh).get("project", {}).get("version")
    except (OSError, tomllib.TOMLDecodeError):
        version = None
    return str(version) if version else "unknown"


class VersionAction(argparse.Action):
    """``--version``: prints ``queuelens <version>`` and exits 0; the version is looked up
    only when the flag is given (building the parser stays free of it)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0,
                         help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        sys.stdout.write(f"{parser.prog} {package_version()}\n")
        sys.stdout.flush()
        parser.exit(0)


# --- text for a terminal ------------------------------------------------------------------

_TERMINAL_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""C0 controls (ESC, CR, LF, BS, BEL …), DEL, the C1 controls (U+0080–U+009F: CSI, OSC …
that some terminals obey in UTF-8) and the bidirectional-text controls (which reorder what
is shown: "Trojan Source")."""

_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_control(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text: str) -> str:
    """``text`` safe to print on a terminal, on one line: every control character shown as
    its escape (``\\x1b``, ``\\n``, ``\\t``, ``\\x9b``, ``\\u202e``), everything else as is.

    Queue names are label values from Prometheus; printed raw, ``\\x1b[2J`` would clear the
    user's screen and ``\\r`` or ``\\n`` would forge a line of output."""
    return _TERMINAL_UNSAFE.sub(_escape_control, text)


def terminal_lines(text: str) -> str:
    """:func:`terminal_text` for text of several lines: each line escaped, the line breaks
    kept (a header or footer the command itself split into lines)."""
    return "\n".join(terminal_text(line) for line in text.split("\n"))


MAX_MESSAGE_CHARS = 1000
"""The longest error or warning line: a message quoting a 100,000-character argument (found by
tests/fuzz) keeps its start and its end (the advice, e.g. "use e.g. 30s"), the middle cut."""


def message_line(text: str) -> str:
    """:func:`terminal_text` of ``text``, at most :data:`MAX_MESSAGE_CHARS` characters: the
    first 700 and the last 250, an ``…`` between them saying what was cut."""
    line = terminal_text(text)
    if len(line) <= MAX_MESSAGE_CHARS:
        return line
    return f"{line[:700]} …({len(line) - 950:,} characters cut)… {line[-250:]}"


def warn(message: str, kind: str = "warning") -> None:
    """One ``queuelens: <kind>: <message>`` line on stderr, control characters escaped and
    configured secrets redacted (:func:`collectors.errors.redact`: a second guard, whatever
    built the message)."""
    from collectors.errors import redact

    sys.stderr.write(f"queuelens: {kind}: {message_line(redact(message))}\n")


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


BARE_SECONDS = "bare number = seconds"
"""What the ``--help`` of every duration flag says (a test checks it): the value takes units
(``250ms``, ``1.5s``, ``5m``, ``2h``, ``1h30m``) and a bare number is seconds. The flags'
types are :func:`parse_duration` (> 0) and :func:`non_negative_duration` (>= 0), both on
:func:`collectors.timeparse.parse_duration`, the one duration parser."""

_ZERO_DURATION = re.compile(r"0+(?:\.0*)?(?:ms|s|m|h|d|w)?")


def parse_duration(text: str) -> float:
    """'90s', '5m', '1h30m', '250ms' or a bare number of seconds -> seconds (> 0)."""
    try:
        return timeparse.parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def duration_or_zero(text: str) -> float:
    """:func:`collectors.timeparse.parse_duration`, or also zero ('0', '0s', '0ms'): for
    the parsers in :mod:`models` that take a ``duration`` callable (a schedule's times, a
    retry spec's delays); raises ``ValueError`` as they expect."""
    if _ZERO_DURATION.fullmatch(text.strip()):
        return 0.0
    return timeparse.parse_duration(text)


def non_negative_duration(text: str) -> float:
    """:func:`duration_or_zero` as an argparse type (a flag's error, not a ValueError)."""
    try:
        return duration_or_zero(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


WORK_TIME_HINT_S = 10.0
"""A bare number of at least this many seconds given as a work time gets a "did you mean
…ms?" note. 10 s is the top finite bucket of the work-duration histogram of component-base
(and controller-runtime ≤ v0.16; ``docs/collectors.md``): the metric itself treats a longer
pass as an outlier, while reconciles are typically 5 ms – 1 s, which typed as milliseconds
without the unit ("5" … "1000") mostly land at 10 or more. A note, not a refusal: a
controller driving slow cloud APIs can take that long."""


def work_duration(text: str) -> float:
    """:func:`parse_duration` for a time per item (``--service-mean``): a bare number of
    :data:`WORK_TIME_HINT_S` or more is still seconds, with a one-line note on stderr
    (``250 s — did you mean 250ms?``)."""
    value = parse_duration(text)
    bare = text.strip()
    if value >= WORK_TIME_HINT_S and re.fullmatch(r"[0-9]+(?:\.[0-9]*)?", bare):
        warn(f"{bare} s — did you mean {bare}ms? (a bare number is seconds)", "note")
    return value


MAX_AT_S = 4102444800.0
"""2100-01-01T00:00:00Z: the latest ``--at`` (and other command-line time) accepted. Later
times hold no data, and near the year 9999 a range read's aligned end passes what a
``datetime`` can hold — ``--at 253402300799`` ended as "not the Prometheus HTTP API"."""


def parse_time(text: str) -> float:
    """Unix seconds or RFC 3339 ('2024-01-01T00:30:00Z') -> unix seconds, from 1970 to
    :data:`MAX_AT_S`."""
    try:
        value = timeparse.parse_time(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not 0 <= value <= MAX_AT_S:
        raise argparse.ArgumentTypeError(
            f"not a time queuelens reads: {text[:40]!r} (from 1970-01-01 to 2100-01-01, "
            f"unix seconds 0 to {MAX_AT_S:.0f})")
    return value


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


def label_names(text: str) -> tuple[str, ...]:
    """``cluster,namespace,job,name`` -> the label names, each a Prometheus label name
    (:func:`collectors.config.aggregation_labels`, the one check of the config key too)."""
    from collectors.config import aggregation_labels
    from collectors.errors import ConfigError

    try:
        return aggregation_labels(text, "label list")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("label list: ")) from None


def add_settings_arguments(parser: Any, *, window: bool = True, history: bool = True,
                           slo: bool = True, thresholds: bool = True,
                           aggregate_by: bool = False) -> None:
    """The analysis settings every command shares (:class:`models.settings.AnalysisSettings`):
    a flag left out keeps the config file's ``analysis:`` value, else the one default.
    ``aggregate_by``: ``--by``, the labels recorded series keep (``queuelens rules``)."""
    if window:
        parser.add_argument("--window", type=parse_duration, default=None, metavar="DURATION",
                            help=f"rate window of the snapshot (default 5m; {BARE_SECONDS})")
    if history:
        parser.add_argument("--range", dest="range_s", type=parse_duration, default=None,
                            metavar="DURATION",
                            help="history the advisor reads, one point per max(range/120, 15s) "
                                 f"(default 2h; {BARE_SECONDS})")
    if slo:
        parser.add_argument("--slo", type=parse_duration, default=None, metavar="DURATION",
                            help=f"queue-wait objective, e.g. 250ms (default 1s; {BARE_SECONDS})")
        parser.add_argument("--slo-quantile", type=fraction_open, default=None, metavar="Q",
                            help="the wait quantile the SLO applies to (default 0.95)")
    if thresholds:
        parser.add_argument("--threshold", action="append", default=[], metavar="NAME=VALUE",
                            help="override one advisor threshold (repeat; names in "
                                 "docs/advisor.md)")
    if aggregate_by:
        parser.add_argument("--by", dest="aggregate_by", type=label_names, default=None,
                            metavar="LABELS",
                            help="labels the recorded series keep, comma-separated (default "
                                 "cluster,namespace,job,name; config analysis.aggregate_by)")


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
            thresholds=overrides or None, where="--threshold",
            aggregate_by=getattr(args, "aggregate_by", None))
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


_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""What ``json.dumps(..., ensure_ascii=False)`` leaves raw but a terminal may obey (DEL, C1,
bidirectional controls); C0 controls json.dumps already writes as ``\\u00XX``."""


def dump_yaml(payload: Any, out: TextIO | None = None) -> None:
    """``payload`` as YAML (PyYAML, safe dumper; the same values as :func:`dump_json`): a
    string holding a control or bidirectional character (:func:`terminal_text`'s set) is
    written double-quoted with each such character as its escape, which means the same
    string to a YAML reader and cannot act on a terminal."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
        value = str.__str__(value)  # a str enum (a verdict's kind) as its value, as in JSON
        style = '"' if _TERMINAL_UNSAFE.search(value) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Dumper.add_representer(str, text)
    _Dumper.add_multi_representer(str, text)
    body = yaml.dump(jsonable(payload), Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=1_000_000)
    # PyYAML escapes C0/C1/DEL in double quotes but writes the bidirectional controls raw;
    # they occur only in the strings quoted above, where \uXXXX means the same character
    (out or sys.stdout).write(_JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", body))


def dump_json(payload: Any, out: TextIO | None = None) -> None:
    import json

    text = json.dumps(jsonable(payload), indent=2, allow_nan=False, ensure_ascii=False)
    (out or sys.stdout).write(escape_json_controls(text) + "\n")


def escape_json_controls(text: str) -> str:
    """JSON text (from :func:`json.dumps` with ``ensure_ascii=False``) with DEL, the C1
    controls and the bidirectional-text controls written as ``\\uXXXX`` escapes: these
    characters can only occur inside JSON strings, where the escape means the same, so the
    document decodes to the same values and cannot drive a terminal (``json.dumps`` escapes
    the C0 controls itself)."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _cell(value: Any) -> str:
    value = jsonable(value)
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return sig(value)  # the one formatter (models.formatting)
    if isinstance(value, list | dict):
        import json

        return terminal_text(json.dumps(value, ensure_ascii=False))
    return terminal_text(str(value))


def _fit_widths(widths: list[int], floors: Sequence[int], shrink: Sequence[int],
                max_width: int) -> list[int]:
    """Column widths within ``max_width`` (two spaces between columns): the widest of the
    ``shrink`` columns is narrowed first, none below its floor; the others never change."""
    out = list(widths)
    excess = sum(out) + 2 * (len(out) - 1) - max_width
    while excess > 0:
        open_ = [i for i in shrink if out[i] > floors[i]]
        if not open_:
            break
        i = max(open_, key=lambda j: out[j])
        runner_up = max([out[j] for j in open_ if j != i] + [floors[i]])
        cut = min(excess, max(out[i] - runner_up, 1))
        out[i] -= cut
        excess -= cut
    return out


def format_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], *,
                 max_width: int | None = None, shrink: Sequence[str] = ()) -> str:
    """A plain aligned text table (for terminals); None prints as '-'. Every cell and column
    name is :func:`terminal_text` (widths are those of the escaped text).

    ``max_width``: the lines fit in that many characters by cutting the ``shrink`` columns
    (text, never numbers), widest first, with an ellipsis, down to
    :data:`MIN_SHRUNK_WIDTH` (or the column's name); a table that cannot fit then wraps."""
    heads = [terminal_text(c) for c in columns]
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(heads)]
    if max_width is not None:
        cut = [i for i, c in enumerate(columns) if c in shrink]
        floors = [max(len(h), MIN_SHRUNK_WIDTH) for h in heads]
        widths = _fit_widths(widths, floors, cut, max_width)
        cells = [[v if len(v) <= w else v[:w - 1] + ELLIPSIS for v, w in
                  zip(row, widths, strict=True)] for row in cells]
    lines = ["  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What makes a spreadsheet (Excel, LibreOffice, Google Sheets) read a cell as a formula."""


def csv_text(value: str) -> str:
    """A text cell a spreadsheet will not run as a formula (OWASP "CSV injection"): one that
    starts with ``= + - @``, a tab or a CR gets a leading ``'``. Numbers are written as
    numbers (a negative rate stays ``-0.5``); only text is guarded."""
    return "'" + value if value.startswith(_FORMULA_START) else value


def format_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], *,
               terminal: bool = False) -> str:
    """CSV with a header row; None is an empty cell; every text cell through
    :func:`csv_text` — the one formula guard of every CSV queuelens writes (the reports
    too). ``terminal``: the CSV goes to a terminal, so control characters in cells are also
    shown as escapes (:func:`terminal_text`); a file or pipe gets the exact text."""
    import csv
    import io

    def cell(value: Any) -> Any:
        value = jsonable(value)
        if value is None:
            return ""
        if isinstance(value, list | dict):
            value = str(value)  # as csv.writer has always written it (never starts "= + - @")
        if isinstance(value, str):
            value = csv_text(terminal_text(value) if terminal else value)
        return value

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    # csv.writer quotes a field holding "\n" but not one holding a lone "\r" (not in the
    # line terminator), and a raw CR in an unquoted field breaks every reader: a row with
    # one has its text cells quoted
    quoted = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    writer.writerow([csv_text(c) for c in columns])
    for r in rows:
        cells = [cell(r.get(c)) for c in columns]
        has_cr = any(isinstance(v, str) and "\r" in v for v in cells)
        (quoted if has_cr else writer).writerow(cells)
    return buf.getvalue()


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def table_width(stream: TextIO) -> int | None:
    """The width a table must fit: ``$COLUMNS`` when set (a positive number), else the
    terminal's (:func:`shutil.get_terminal_size`) when ``stream`` is one; None for a pipe or
    a file, which get the whole text."""
    import shutil

    env = os.environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    if _isatty(stream):
        return shutil.get_terminal_size().columns
    return None


def emit(
    fmt: str,
    payload: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str],
    *,
    header: str = "",
    footer: str = "",
    out: TextIO | None = None,
    fit: Sequence[str] = (),
) -> None:
    """Write ``payload`` as JSON or YAML, or ``rows`` as a table/CSV (header/footer only for
    tables).

    The table, its header and its footer (where the warnings go) are terminal text: control
    characters are escapes (:func:`terminal_text`; the header's and footer's own line breaks
    stay). CSV is escaped the same way only when it goes to a terminal. ``fit``: the text
    columns cut so that the table fits :func:`table_width`."""
    stream = out or sys.stdout
    if fmt == "json":
        dump_json(payload, stream)
    elif fmt == "yaml":
        dump_yaml(payload, stream)
    elif fmt == "csv":
        stream.write(format_csv(rows, columns, terminal=_isatty(stream)))
    else:
        width = table_width(stream) if fit else None
        table = format_table(rows, columns, max_width=width, shrink=fit)
        parts = (terminal_lines(header), table, terminal_lines(footer))
        stream.write("\n".join(part for part in parts if part) + "\n")


def check_output_path(path: str, flag: str) -> None:
    """Refuse, before any work, an output that is not a new or regular file: a symbolic link
    (the rename would replace the link, not write where it points), a device or a directory,
    ``-``, or a file in a directory that does not exist."""
    import stat

    if path == "-":
        raise CliError(f"{flag} needs a file name (stdout carries the result).")
    if "\x00" in path:
        raise CliError(f"{flag}: a file name cannot contain a NUL byte.")
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
    checked by :func:`check_output_path`; a new file is created with mode 0666 less the umask,
    as any file the user's shell would create, and a file written over keeps its mode (a
    0600 report stays private)."""
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
        try:
            existing = os.stat(path)
        except OSError:
            existing = None
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            if existing is not None and stat.S_ISREG(existing.st_mode):
                os.fchmod(fh.fileno(), stat.S_IMODE(existing.st_mode))
            write(fh)
        os.replace(tmp, path)
    except BaseException as exc:  # Ctrl-C too: never leave the temporary file behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise CliError(f"cannot write {path}: {exc.strerror}") from None
        raise


class ProgressBar:
    """Progress on a stream: a redrawn one-line bar on a terminal, plain lines otherwise."""

    WIDTH = 24

    def __init__(self, stream: TextIO, tty: bool) -> None:
        self.stream = stream
        self.tty = tty
        self.drawn = False
        self._last_pct = -1

    def __call__(self, label: str, done: int, total: int) -> None:
        label = terminal_text(label)  # e.g. "analysing <queue name>"
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


def utc_text(unix_s: float) -> str:
    """A time as RFC 3339 UTC to the second (``2026-12-01T17:00:00Z``), for command headers."""
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(unix_s))
