"""Hostile inputs (issue 12): every command and every page callback ends in bounded time with
a clear outcome, whatever it is given.

Two kinds of drivers, both hypothesis with a fixed seed (``derandomize``) and a small number of
examples, so the file runs in well under a minute on 2 cores:

* the CLI: ``dashboard.cli.main([...])`` for every command, in this process, with a valid
  command line in which one to three flags are replaced by extreme numbers, NaN, ±inf,
  negatives, 400-digit integers, huge strings, unicode and control characters. The outcome must
  be an exit code in {0, 2, 3}, no traceback, one ``error:`` line when it fails, and a bounded
  time. ``serve`` and ``exporter`` run until stopped, so only their argument parsing is driven;
* the pure view functions of the Dash callbacks of the lab, key trace, retry storm and what-if
  pages, with forged ``dcc.Store`` values (any JSON, and plausible stores with hostile numbers
  and oversized lists) and hostile form values: no exception, only sentences, bounded time.

Memory is bounded by the limits of :mod:`models.limits` (each tested where it is set); here the
process's peak resident size may grow by at most :data:`RSS_GROWTH_MAX` over a driver.

Failures the fuzzer found are kept in :data:`KNOWN_FAILURES` with the exception and place each
raised, so they stay fixed.
"""

from __future__ import annotations

import contextlib
import io
import math
import resource
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard.cli import build_parser, main
from dashboard.pages import keys as keys_page
from dashboard.pages import lab as lab_page
from dashboard.pages import retries as retries_page
from dashboard.pages import whatif as whatif_page
from models.errors import ModelInputError
from models.keyqueue import EXAMPLES
from models.limits import FLUID_MAX_STEPS, KEY_TRACE_PAGE_MAX_CELLS

TIME_BOUND_S = 20.0
"""Longest any one command or callback may take here (the limits keep them far below)."""
RSS_GROWTH_MAX = 512 * 2**20
"""Most the process's peak resident size may grow over one driver."""

FUZZ = settings(max_examples=20, deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


@contextlib.contextmanager
def bounded_memory() -> Iterator[None]:
    """The peak resident size (ru_maxrss, KiB on Linux) grows by at most RSS_GROWTH_MAX."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    yield
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    assert after - before < RSS_GROWTH_MAX


# --- values --------------------------------------------------------------------------------------

SPECIAL = ["0", "-0", "-1", "1", "2.5", " 7 ", "1e308", "1e309", "-1e308", "5e-324", "1e-300",
           "1e20", "nan", "NaN", "inf", "-inf", "Infinity", "9" * 400, "18446744073709551616",
           "-9223372036854775809", "0x10", "1_000", "", "١٢٣", "1e", "--", "\x00", "\x1b[2J",
           "\u202e1", "😀", "a" * 5000]
"""Extreme numbers and things that are not numbers (``١٢٣`` is 123 to Python's float())."""

special = st.sampled_from(SPECIAL)
numbers = special | st.floats().map(repr) | st.integers(-2**70, 2**70).map(str)
durations = special | st.sampled_from(["5m", "1h30m", "0s", "250ms", "9999999999w", "5x", "-5m",
                                       "1.5.5s", "1e3s"])
times = special | st.sampled_from(["1e20", "2024-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
                                   "0001-01-01T00:00:00Z", "2024-13-01", "253402300799",
                                   "253402300800", "1577836800", "1796138594"])
texts = st.text(max_size=30) | st.sampled_from(["\x1b[2J", "\u202e", "a" * 5000, "'\"", "\n\r",
                                                "{name=~\".*\"}", "é/ü", "😀" * 20, "deployment"])
ranges = special | st.sampled_from(["1-16", "1-100", "1-10000", "0-5", "5-1", "a-b", "3",
                                    "1-2-3", "-1-5"])
retry_specs = st.sampled_from(["exp:0.005:1", "exp:1e-300:1e-300", "exp:1:0.5", "const:0",
                               "const:1e308", "client-go", "controller-runtime", "exp:nan:1",
                               "junk", "exp:5e-324:1e308"])
traces = (st.lists(st.sampled_from(["add A", "get", "done A", "done Z", "add_rate_limited A",
                                    "forget A", "add_after A 1e308", "tick 1e308", "tick -1",
                                    "shutdown", "shutdown_with_drain", "add " + "k" * 400,
                                    "num_requeues A", "add_after B 5ms", "tick 1h"]),
                   max_size=30).map("; ".join)
          | texts)


def formats(*choices: str) -> st.SearchStrategy[str]:
    return st.sampled_from([*choices, "xml", ""])


# --- the CLI -------------------------------------------------------------------------------------

def run_cli(argv: list[str]) -> tuple[int, str, str, float]:
    """(exit code, stdout, stderr, seconds) of ``main(argv)`` in this process. Any exception
    other than SystemExit escapes: that is a traceback, and fails the test."""
    out, err = io.StringIO(), io.StringIO()
    start = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else -1
    return code, out.getvalue(), err.getvalue(), time.monotonic() - start


def check_outcome(argv: list[str], code: int, err: str, seconds: float) -> None:
    assert code in (0, 2, 3), (argv, code, err[-500:])
    assert "Traceback" not in err, (argv, err[-500:])
    if code != 0:
        assert "error:" in err.strip().splitlines()[-1], (argv, err[-500:])
    assert seconds < TIME_BOUND_S, (argv, seconds)


def flag_pairs(flags: dict[str, st.SearchStrategy[str]]) -> st.SearchStrategy[list[str]]:
    """One to three of ``flags`` with hostile values, as ``--flag value`` or ``--flag=value``
    (the second form lets a value start with '-')."""
    def argv(chosen: list[tuple[str, str, bool]]) -> list[str]:
        out: list[str] = []
        for flag, value, joined in chosen:
            # `--flag=--` is in KNOWN_FAILURES (argparse gave the flag [] unconverted)
            out += [f"{flag}={value}"] if joined and value != "--" else [flag, value]
        return out

    one = st.sampled_from(sorted(flags)).flatmap(
        lambda flag: st.tuples(st.just(flag), flags[flag], st.booleans()))
    return st.lists(one, min_size=1, max_size=3).map(argv)


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile")


DEMO_SOURCE = {"--at": times, "--window": durations}
SETTINGS_FLAGS = {"--range": durations, "--slo": durations, "--slo-quantile": numbers}

COMMANDS: dict[str, tuple[list[str], dict[str, st.SearchStrategy[str]]]] = {
    "snapshot": (["snapshot", "--demo"],
                 {**DEMO_SOURCE, "--format": formats("table", "json", "csv"),
                  "--selector": texts}),
    "advise": (["advise", "--demo"],
               {**DEMO_SOURCE, **SETTINGS_FLAGS, "--queue": texts, "--keys": numbers,
                "--format": formats("table", "json")}),
    "whatif --queue": (["whatif", "--queue", "deployment", "--demo"],
                       {**DEMO_SOURCE, **SETTINGS_FLAGS, "--keys": numbers, "--workers": ranges,
                        "--queue": texts, "--format": formats("table", "json", "csv")}),
    "whatif": (["whatif", "--arrival-rate", "5", "--service-mean", "0.1"],
               {"--arrival-rate": numbers, "--service-mean": numbers, "--service-cv2": numbers,
                "--arrival-cv2": numbers, "--keys": numbers, "--sigma": numbers,
                "--kappa": numbers, "--workers": ranges, "--slo": numbers,
                "--format": formats("table", "json", "csv")}),
    "lab fluid": (["lab", "fluid", "--arrival-rate", "2", "--service-rate", "3"],
                  {"--arrival-rate": numbers, "--service-rate": numbers, "--backlog": numbers,
                   "--until": numbers, "--step": numbers, "--format": formats("table", "json")}),
    "lab keys": (["lab", "keys", "--trace", "add A; get; done A"],
                 {"--trace": traces, "--example": texts, "--format": formats("table", "json")}),
    "rules": (["rules"], {"--config": texts.filter(lambda v: "\x00" not in v)}),  # pinned
    # rates and durations only from SPECIAL: λ·T is then tiny or refused (never a 5e8-event run)
    "simulate": (["simulate", "--arrival-rate", "5", "--keys", "10", "--workers", "2",
                  "--service-mean", "0.1", "--duration", "10"],
                 {"--arrival-rate": special, "--duration": special, "--keys": numbers,
                  "--workers": numbers, "--service-mean": numbers, "--seed": numbers,
                  "--zipf": numbers, "--hot-key-share": numbers, "--fail-prob": numbers,
                  "--lock-fraction": numbers, "--coherence": numbers, "--trace": numbers,
                  "--retry": retry_specs, "--jitter": texts, "--global-qps": numbers,
                  "--burst": numbers, "--warmup": special, "--outage": special,
                  "--rate-schedule": texts, "--workers-schedule": texts,
                  "--format": formats("table", "json", "csv")}),
    "retries": (["retries", "--keys", "5", "--outage", "10s"],
                {"--keys": special, "--outage": special, "--retry": retry_specs,
                 "--attempt-time": numbers, "--horizon": durations, "--bin": numbers,
                 "--healthy-rate": special, "--workers": numbers, "--service-mean": numbers,
                 "--global-qps": numbers, "--burst": numbers, "--seed": numbers,
                 "--jitter": st.sampled_from(["none", "full", "equal", "decorrelated", "x"]),
                 "--format": formats("table", "json")}),
}

PARSE_ONLY: dict[str, tuple[list[str], dict[str, st.SearchStrategy[str]]]] = {
    "serve": (["serve", "--demo"],
              {"--host": texts, "--port": numbers, "--refresh": durations, "--at": times,
               "--prometheus": texts, "--config": texts, **SETTINGS_FLAGS}),
    "exporter": (["exporter"],
                 {"--listen": texts, "--queues": numbers, "--seed": numbers,
                  "--scenario": texts, "--cache-interval": durations,
                  "--scrape-wait": durations}),
    "report": (["report", "--demo", "--format", "md", "-o", "/nonexistent/r.md"],
               {"--at": times, **SETTINGS_FLAGS, "--format": formats("html", "md", "json", "csv"),
                "-o": texts}),
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_ends_in_bounded_time_with_a_clear_outcome(name: str) -> None:
    base, flags = COMMANDS[name]

    @FUZZ
    @given(extra=flag_pairs(flags))
    def drive(extra: list[str]) -> None:
        argv = [*base, *extra]
        code, _, err, seconds = run_cli(argv)
        check_outcome(argv, code, err, seconds)

    with bounded_memory():
        drive()


def _sub_millisecond(value: str) -> bool:
    """0 < value < 1 ms as a number: pinned in KNOWN_FAILURES for `report --range`."""
    try:
        return 0 < float(value) < 1e-3
    except (ValueError, OverflowError):
        return False


def test_report_writes_or_refuses_in_bounded_time(out_dir: Path) -> None:
    flags = {"--at": times, "--range": durations.filter(lambda v: not _sub_millisecond(v)),
             "--slo": durations, "--slo-quantile": numbers,
             "--format": formats("html", "md", "json", "csv")}

    @FUZZ
    @given(extra=flag_pairs(flags))
    def drive(extra: list[str]) -> None:
        argv = ["report", "--demo", "--format", "md", "-o", str(out_dir / "r.out"), *extra]
        code, _, err, seconds = run_cli(argv)
        check_outcome(argv, code, err, seconds)

    drive()


@pytest.mark.parametrize("name", sorted(PARSE_ONLY))
def test_long_running_commands_parse_or_refuse_in_one_line(name: str) -> None:
    base, flags = PARSE_ONLY[name]

    @settings(FUZZ, max_examples=40)
    @given(extra=flag_pairs(flags))
    def drive(extra: list[str]) -> None:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                build_parser().parse_args([*base, *extra])
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else -1
        assert code in (0, 2), (extra, err.getvalue())
        assert "Traceback" not in err.getvalue()
        if code:
            assert err.getvalue().count("\n") == 1

    drive()


@pytest.mark.parametrize("argv", [
    ["snapshot", "--demo", "--at", "1e20"],
    ["advise", "--demo", "--at", "1e20"],
    ["whatif", "--queue", "deployment", "--demo", "--at", "1e20"],
    ["simulate", "--arrival-rate", "5", "--keys", "10", "--workers", "2", "--service-mean",
     "0.1", "--duration", "10", "--seed=-1"],
    ["retries", "--keys", "10", "--outage", "10s", "--retry", "exp:1e-300:1e-300",
     "--attempt-time", "0"],
    ["exporter", "--queues", "1000000000000"],
])
def test_the_issues_commands_are_one_line_exit_2(argv: list[str]) -> None:
    code, _, err, seconds = run_cli(argv)
    assert code == 2, err
    assert err.count("\n") == 1
    assert "error:" in err
    check_outcome(argv, code, err, seconds)


def test_report_at_1e20_is_one_line_exit_2(out_dir: Path) -> None:
    argv = ["report", "--demo", "--at", "1e20", "--format", "md", "-o", str(out_dir / "r.md")]
    code, _, err, seconds = run_cli(argv)
    assert code == 2
    assert "the year 9999" in err  # refused by --at itself, before any read
    check_outcome(argv, code, err, seconds)


def _threshold(name: str, value: str) -> list[str]:
    return ["advise", "--demo", "--threshold", f"{name}={value}"]


KNOWN_FAILURES = [
    pytest.param(argv, id=ident)
    for ident, argv, _exc, _reason in [
        ("threshold-util_target-tiny", _threshold("util_target", "5e-324"), OverflowError,
         "models/advisor.py _sizing_inputs: load / util_target overflows; models/settings.py "
         "should bound the threshold"),
        *[(f"threshold-{name}-0", _threshold(name, "0"), ZeroDivisionError,
           "models/settings.py accepts 0 for a threshold the advisor divides by")
          for name in ("util_high", "rise_elasticity_min", "share_429_min", "limiter_share_min",
                       "error_share_storm", "planned_requeue_share", "hot_excess",
                       "long_ratio")],
        ("threshold-min_history_points-0", _threshold("min_history_points", "0"), ValueError,
         "models/settings.py accepts min_history_points = 0; the advisor takes max() of []"),
        ("rules-window-1e308", ["rules", "--window", "1e308"], OverflowError,
         "collectors/profile.py format_duration: round(inf)"),
        ("rules-o-nul", ["rules", "-o", "\x00"], ValueError,
         "dashboard/cliutil.py check_output_path: os.lstat raises ValueError on a NUL byte"),
        ("report-o-nul", ["report", "--demo", "--format", "md", "-o", "\x00"], ValueError,
         "dashboard/cliutil.py check_output_path: os.lstat raises ValueError on a NUL byte"),
        ("option-equals-double-dash", ["snapshot", "--demo", "--at=--"], TypeError,
         "argparse (CPython 3.11) gives `--at=--` the value [] without its type conversion; "
         "dashboard/cliutil.py OneLineParser should refuse it for every option"),
        ("rules-config-nul", ["rules", "--config", "\x00"], ValueError,
         "collectors/config.py: opening a path with a NUL byte raises ValueError"),
        ("report-range-tiny", ["report", "--demo", "--format", "md", "-o",
                               "/tmp/queuelens-hostile-never-written.md", "--range", "5e-324"],
         ValueError, "dashboard/rules.py: a rule duration under 1 ms raises ValueError "
         "(the --range of report is not checked first)"),
    ]
]


@pytest.mark.parametrize("argv", KNOWN_FAILURES)
def test_failures_found_by_the_fuzzer_stay_fixed(argv: list[str]) -> None:
    """Each was a traceback (the exception and the place are kept beside it above)."""
    code, _, err, seconds = run_cli(argv)
    check_outcome(argv, code, err, seconds)


# --- the pages' callbacks with forged stores and hostile form values -----------------------------

scalars = (st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats()
           | st.text(max_size=12) | st.sampled_from([10**400, -10**400, 1e300, -1e300]))
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=25,
)
form_values = scalars | st.sampled_from(SPECIAL) | st.lists(scalars, max_size=3)
hostile = st.sampled_from([10**400, -(10**400), 1e300, -1e300, float("nan"), float("inf"),
                           -1, -0.0, 1.5, 2**63, True, "1", None, [], {}])
"""Values for a store's number fields: huge JSON integers (float() overflows), NaN, ±inf,
negatives, fractions, bools, and other types."""

BIG_HISTORY = [[k, 4.0] for k in range(FLUID_MAX_STEPS + 5)]
lab_numbers = hostile | scalars
lab_states = json_values | st.fixed_dictionaries({
    "t": lab_numbers | st.integers(0, 2 * FLUID_MAX_STEPS),
    "backlog": lab_numbers, "arrival_rate": lab_numbers, "service_rate": lab_numbers,
    "origin_t": lab_numbers | st.integers(0, 10), "origin_backlog": lab_numbers,
    "history": st.lists(st.lists(lab_numbers, max_size=3), max_size=4) | st.just(BIG_HISTORY)
    | st.just([[0, 4.0], [1, 5.0]]),
})

BIG_STEP = {"index": 1, "op": "add", "time_s": 0.0,
            "queue": [f"k{i}" for i in range(KEY_TRACE_PAGE_MAX_CELLS + 1)], "dirty": [],
            "processing": [], "delayed": [], "failures": [], "shutting_down": False,
            "note": "n"}
key_lists = st.lists(scalars, max_size=4) | st.just(["A", "B"]) | st.just(["\x1b[2J" * 100])
pairs = (st.lists(st.tuples(st.sampled_from(["A", "B", 7]), hostile | scalars).map(list),
                  max_size=3)
         | st.lists(st.lists(scalars, max_size=3), max_size=3) | st.just([["A", 1e308]]))
steps = st.fixed_dictionaries({
    "index": hostile | st.just(1), "op": scalars, "time_s": hostile | scalars,
    "queue": key_lists, "dirty": key_lists, "processing": key_lists, "delayed": pairs,
    "failures": pairs, "shutting_down": st.booleans() | hostile, "note": scalars,
})
keys_states = json_values | st.fixed_dictionaries({
    "trace": scalars, "example": scalars, "position": hostile | st.integers(-1, 3),
    "error": scalars,
    "steps": st.lists(steps, max_size=3) | st.just([BIG_STEP]) | st.just([BIG_STEP] * 3),
})


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside nested dicts and lists (the value itself included)."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replaced(value[head], rest, new)}
    return [_replaced(v, rest, new) if i == head else v for i, v in enumerate(value)]


def mutated(valid: list[Any]) -> st.SearchStrategy[Any]:
    """A valid store with one value anywhere inside it replaced by a hostile one: reaches the
    checks that a wholly random store stops before."""
    return st.sampled_from(valid).flatmap(
        lambda store: st.tuples(st.sampled_from(_paths(store)), hostile | scalars).map(
            lambda pv: _replaced(store, pv[0], pv[1])))


VALID_LAB = [lab_page.reset_state(4, 3, 4),
             {**lab_page.reset_state(4, 3, 4), "t": 2, "history": [[0, 4.0], [1, 5.0], [2, 6.0]],
              "backlog": 6.0}]
VALID_KEYS = [keys_page.load_trace(e.trace, e.name) for e in EXAMPLES[:4]]
lab_states = lab_states | mutated(VALID_LAB)
keys_states = keys_states | mutated(VALID_KEYS)


def timed(fn: Callable[[], Any]) -> Any:
    start = time.monotonic()
    result = fn()
    assert time.monotonic() - start < TIME_BOUND_S
    return result


def sentence(text: object) -> None:
    assert isinstance(text, str)
    assert "Traceback" not in text
    assert len(text) < 30_000


@settings(FUZZ, max_examples=80)
@given(trigger=st.sampled_from(["lab-reset", "lab-step", "lab-play", "lab-interval", None, "x"]),
       lam=form_values, mu=form_values, q0=form_values, state=lab_states, playing=scalars)
def test_lab_callbacks_take_any_store(trigger: str | None, lam: Any, mu: Any, q0: Any,
                                      state: Any, playing: Any) -> None:
    with bounded_memory():
        new, play, error = timed(lambda: lab_page.lab_control(trigger, lam, mu, q0, state,
                                                              bool(playing)))
        assert isinstance(play, bool)
        sentence(error)
        for store in (state, new):
            out = timed(lambda store=store: lab_page.lab_render(store, lam, mu))
            assert len(out) == 5
            for text in out[1:]:
                sentence(text)


@settings(FUZZ, max_examples=80)
@given(trigger=st.sampled_from(["keys-example", "keys-trace", "keys-reset", "keys-step",
                                "keys-back", "keys-play", "keys-interval", None]),
       text=traces | scalars, example=scalars | st.sampled_from(["coalescing", "shutdown"]),
       state=keys_states, playing=scalars)
def test_key_trace_callbacks_take_any_store(trigger: str | None, text: Any, example: Any,
                                            state: Any, playing: Any) -> None:
    text = text if isinstance(text, str) or text is None else str(text)
    example = example if isinstance(example, str) or example is None else str(example)
    with bounded_memory():
        _, _, new, play = timed(lambda: keys_page.keys_control(trigger, text, example, state,
                                                               bool(playing)))
        assert isinstance(play, bool)
        for store in (state, new):
            out = timed(lambda store=store: keys_page.keys_render(store))
            sentence(out[1])
            sentence(out[-1])


HOSTILE_VALUES = [10**400, -(10**400), 1e300, float("nan"), float("inf"), -1, -0.0, 1.5, 2**63,
                  True, "1", None, [], {}, "x" * 5000]


@pytest.mark.parametrize("page", ["lab", "keys"])
def test_every_value_of_a_valid_store_replaced_by_a_hostile_one(page: str) -> None:
    # systematic: each path of the page's own stores (every field, every list item, the whole
    # store) set to each hostile value, through both callbacks
    stores = VALID_LAB if page == "lab" else VALID_KEYS[:2]
    with bounded_memory():
        for store in stores:
            for path in _paths(store):
                for value in HOSTILE_VALUES:
                    forged = _replaced(store, path, value)
                    if page == "lab":
                        new, _, error = lab_page.lab_control("lab-step", 4, 3, 4, forged, True)
                        sentence(error)
                        for text in lab_page.lab_render(forged, 4, 3)[1:]:
                            sentence(text)
                    else:
                        new = keys_page.keys_control("keys-step", "add A", None, forged, True)[2]
                        sentence(keys_page.keys_render(forged)[-1])
                        sentence(keys_page.keys_render(new)[-1])


def test_every_retry_storm_field_replaced_by_a_hostile_value() -> None:
    # keys, outage, base, cap, jitter, bucket, qps, burst, dependency, horizon, healthy rate,
    # workers, service: a small valid storm, one field at a time made hostile
    small = [10, 1, 0.1, 1, "none", False, 10, 100, 500, 10, 5, 2, 0.05]
    with bounded_memory():
        for i in range(len(small)):
            for value in [*HOSTILE_VALUES, 0, 5e-324, 1e9, 2e9]:
                fields = [*small[:i], value, *small[i + 1:]]
                out = timed(lambda fields=fields: retries_page.retries_render(*fields))
                sentence(out[-1])


retries_fields = st.tuples(
    form_values | st.integers(1, 6000),                                        # keys
    form_values | st.sampled_from([60, 900, 1e6, 5e-324]),                     # outage
    form_values | st.sampled_from([0.005, 1e-9, 1e-300]),                      # base
    form_values | st.sampled_from([1, 1000, 1e9, 1e300]),                      # cap
    st.sampled_from(["none", "full", "equal", "decorrelated", "x", None, 3]),  # jitter
    st.booleans() | scalars,                                                   # bucket
    form_values | st.sampled_from([10, 1e-300, 1e300]),                        # qps
    form_values | st.integers(0, 2_000_000),                                   # burst
    form_values | st.sampled_from(["", None, 100]),                            # dependency
    form_values | st.sampled_from([600, 9000, 1e300]),                         # horizon
    form_values | st.sampled_from([20, 1e4, 5e-324]),                          # healthy rate
    form_values | st.integers(0, 1001),                                        # workers
    form_values | st.sampled_from([0.05, 1e-300, 1e6]),                        # service
)


@settings(FUZZ, max_examples=25)
@given(fields=retries_fields)
def test_retry_storm_callback_takes_any_form_values(fields: tuple[Any, ...]) -> None:
    with bounded_memory():
        out = timed(lambda: retries_page.retries_render(*fields))
    assert len(out) == 7
    sentence(out[-1])


@settings(FUZZ, max_examples=150)
@given(values=st.tuples(*[form_values] * 6), contention=scalars | st.just("usl"),
       sigma=form_values, kappa=form_values, slo=form_values,
       quantile=scalars | form_values | st.sampled_from(["p95", "p99", "mean"]),
       workers=form_values | st.lists(form_values, min_size=2, max_size=2))
def test_what_if_form_parsing_is_a_sentence(values: tuple[Any, ...], contention: Any,
                                            sigma: Any, kappa: Any, slo: Any, quantile: Any,
                                            workers: Any) -> None:
    # issue 12 item 15: a non-numeric worker range on the what-if page was a bare 500
    try:
        params = timed(lambda: whatif_page.parse_params(*values, contention, sigma, kappa, slo,
                                                        quantile, workers))
    except ModelInputError as exc:
        message = str(exc)
    else:
        message = ""
    if message:
        sentence(message)
        assert message.endswith(".")
        return
    lo, hi = params.inputs.workers_min, params.inputs.workers_max
    assert whatif_page.WORKERS_MIN <= lo <= hi <= whatif_page.WORKERS_MAX
    assert math.isfinite(params.inputs.arrival_rate_per_s)


@pytest.mark.parametrize("workers", [["a", 3], [1, "b"], [float("nan"), 4], [1, float("inf")],
                                     [1, 10**400], [True, 3], [0.2, 3], [1, 65], [[1], 2]])
def test_what_if_worker_ranges_that_are_not_numbers_are_sentences(workers: list[Any]) -> None:
    with pytest.raises(ModelInputError, match=r"worker range"):
        whatif_page.parse_params(13.6, 0.25, 1, 1, 1, 1, "none", 0, 0, 1.0, "p95", workers)
