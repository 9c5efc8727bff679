"""Key trace (`/keys`): step through a client-go work queue, one operation at a time.

Type a trace (``add A; add A; get; add A; done A; get; done A``) or pick a named example, then
Step / Back / Play through it. Each position shows the queue (FIFO), the dirty set, the
processing set, the delayed keys, the failure counts and the model's one-line note; a chart
shows where every key was after each step so far; a table keeps the steps already taken.

The page state is one JSON dict in a ``dcc.Store``:

    {"trace": "add A; get", "example": None, "position": 1, "error": "",
     "steps": [{"index": 1, "op": "add A", "time_s": 0.0, "queue": ["A"], "dirty": ["A"],
                "processing": [], "delayed": [], "failures": [], "shutting_down": False,
                "note": "A queued"}, ...]}

``position`` 0 is the empty queue before step 1; position k is the state after step k.
Every state and note comes from :func:`models.keyqueue.run_trace` (client-go's default
controller rate limiter); a bad trace shows the model's sentence (it names the step) and no
state. Callbacks are thin: tests call :func:`keys_control` and :func:`keys_render` directly.

Limits (:mod:`models.limits`): the page runs traces of up to
:data:`~models.limits.KEY_TRACE_PAGE_MAX_CHARS` characters whose states hold at most
:data:`~models.limits.KEY_TRACE_PAGE_MAX_CELLS` key places in all. The store comes back from
the browser, so both callbacks check it first (:func:`validate_store`: its shape and types,
the number of steps, key places and characters, each counted while reading and refused as
soon as it passes its limit) and answer a forged or broken store with a sentence. Rendering is
linear in the key places (the chart has one marker per place, the table one cell).
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from dashboard.context import AppContext, register_page
from dashboard.figures import (
    KEY_DELAYED,
    KEY_DIRTY,
    KEY_PROCESSING,
    KEY_PROCESSING_DIRTY,
    KEY_QUEUED,
    KEY_REMEMBERED,
    key_membership_figure,
)
from models.errors import ModelInputError
from models.formatting import instant_text
from models.keyqueue import EXAMPLES, OPERATIONS, example, run_trace
from models.limits import (
    KEY_TRACE_MAX_KEY_CHARS,
    KEY_TRACE_MAX_STEPS,
    KEY_TRACE_PAGE_MAX_CELLS,
    KEY_TRACE_PAGE_MAX_CHARS,
    KEY_TRACE_PAGE_MAX_STORE_CHARS,
)

PATH = "/keys"
SPEC_TRACE = "add A; add A; get; add A; done A; get; done A"
"""The seed's trace: coalescing, then a re-add while A is processing."""
PLAY_INTERVAL_MS = 700
MAX_TRACE_CHARS = KEY_TRACE_PAGE_MAX_CHARS
"""Longer traces belong in `queuelens lab keys`; the page refuses them with a sentence."""
MAX_CELLS = KEY_TRACE_PAGE_MAX_CELLS
"""Most key places (summed over the steps) the page keeps, draws and lists."""

KeysState = dict[str, Any]
Point = tuple[int, str, str, bool, str]


MAX_EXAMPLE_NAME = 64
"""An example name longer than this is cut before the "no example named" sentence echoes it
(the longest example's name is 23 characters; a forged one could be megabytes)."""


# --- pure state machine ----------------------------------------------------------------------

def load_trace(text: str | None, example_name: str | None = None) -> KeysState:
    """Run ``text`` through the key model; position 0. A bad trace gives ``error`` and no
    steps (the model's sentence names the step)."""
    trace = (text or "").strip()
    state: KeysState = {"trace": trace, "example": example_name, "position": 0, "error": "",
                        "steps": []}
    if len(trace) > MAX_TRACE_CHARS:
        state["trace"] = ""  # the text box keeps it; the store holds what the page can run
        state["error"] = (f"The trace is {len(trace):,} characters long; the page takes up to "
                          f"{MAX_TRACE_CHARS:,}. Use `queuelens lab keys --trace ...` for longer "
                          "ones.")
        return state
    try:
        steps = run_trace(trace, max_cells=MAX_CELLS)
    except ModelInputError as exc:
        state["error"] = str(exc)
        if "key places" in state["error"]:
            state["error"] += " That is the page's limit: `queuelens lab keys` takes more."
        return state
    state["steps"] = [_jsonable(dataclasses.asdict(step)) for step in steps]
    return state


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    """Tuples → lists (what a dcc.Store round trip gives back anyway)."""
    out: dict[str, Any] = {}
    for name, value in row.items():
        if isinstance(value, tuple):
            out[name] = [list(v) if isinstance(v, tuple) else v for v in value]
        else:
            out[name] = value
    return out


def _non_negative_number(value: object) -> bool:
    """A finite number ≥ 0 that is not a bool; compared before any conversion, as float() of a
    400-digit JSON integer overflows."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return 0 <= value <= sys.float_info.max


class _Budget:
    """Counts the store's key places and characters while it is read; raises ModelInputError
    as soon as either passes its limit, so a huge store costs no more than the limits."""

    def __init__(self) -> None:
        self.cells = 0
        self.chars = 0

    def text(self, value: object, what: str, most: int) -> str:
        if not isinstance(value, str) or len(value) > most:
            raise ModelInputError(f"its {what} is not a string of at most {most:,} characters")
        self.chars += len(value)
        if self.chars > KEY_TRACE_PAGE_MAX_STORE_CHARS:
            raise ModelInputError(
                f"it holds more than {KEY_TRACE_PAGE_MAX_STORE_CHARS:,} characters")
        return value

    def keys(self, value: object, what: str, pairs: str = "") -> None:
        """A list of key names, or of [key, number] pairs (``pairs``: 'time' or 'count')."""
        if not isinstance(value, list):
            raise ModelInputError(f"its {what} list is not a list")
        self.cells += len(value)
        if self.cells > MAX_CELLS:
            raise ModelInputError(f"it holds more than {MAX_CELLS:,} key places")
        for item in value:
            if not pairs:
                self.text(item, f"{what} key", KEY_TRACE_MAX_KEY_CHARS)
                continue
            if not (isinstance(item, list) and len(item) == 2):
                raise ModelInputError(f"its {what} list has an item that is not a pair")
            self.text(item[0], f"{what} key", KEY_TRACE_MAX_KEY_CHARS)
            number = item[1]
            if not _non_negative_number(number):
                raise ModelInputError(f"its {what} list has a {pairs} that is not a number ≥ 0")
            if pairs == "count" and isinstance(number, float) and not number.is_integer():
                raise ModelInputError(f"its {what} list has a count that is not whole")


def validate_store(state: object) -> KeysState:
    """The page's store as it comes back from the browser, checked: the fields
    :func:`load_trace` writes, with their types; at most KEY_TRACE_MAX_STEPS steps, each a
    step snapshot; at most :data:`MAX_CELLS` key places and
    :data:`~models.limits.KEY_TRACE_PAGE_MAX_STORE_CHARS` characters in all; a position within
    the steps. Returns the store; anything else raises ModelInputError with the reason."""
    try:
        if not isinstance(state, dict):
            raise ModelInputError("it is not a JSON object")
        budget = _Budget()
        budget.text(state.get("trace"), "trace", MAX_TRACE_CHARS)
        budget.text(state.get("error"), "error", 4 * MAX_TRACE_CHARS)
        name = state.get("example")
        if name is not None:
            budget.text(name, "example name", 100)
        steps = state.get("steps")
        if not isinstance(steps, list) or len(steps) > KEY_TRACE_MAX_STEPS:
            raise ModelInputError(f"its steps are not a list of at most "
                                  f"{KEY_TRACE_MAX_STEPS:,}")
        position = state.get("position")
        if isinstance(position, bool) or not isinstance(position, int) or not (
                0 <= position <= len(steps)):
            raise ModelInputError(f"its position is not a whole number from 0 to {len(steps)}")
        for i, row in enumerate(steps, start=1):
            if not isinstance(row, dict):
                raise ModelInputError(f"its step {i} is not a JSON object")
            if row.get("index") != i or isinstance(row.get("index"), bool):
                raise ModelInputError(f"its step {i} is not numbered {i}")
            budget.text(row.get("op"), "operation", MAX_TRACE_CHARS)
            budget.text(row.get("note"), "note", 4 * MAX_TRACE_CHARS)
            if not _non_negative_number(row.get("time_s")):
                raise ModelInputError(f"its step {i} has a time that is not a number ≥ 0")
            if not isinstance(row.get("shutting_down"), bool):
                raise ModelInputError(f"its step {i} has no shutting-down flag")
            for field in ("queue", "dirty", "processing"):
                budget.keys(row.get(field), field)
            budget.keys(row.get("delayed"), "delayed", "time")
            budget.keys(row.get("failures"), "failures", "count")
        return state
    except ModelInputError as exc:
        raise ModelInputError(f"The page's saved trace is not valid: {exc}.") from None


def keys_control(
    trigger: str | None,
    trace_text: str | None,
    example_name: str | None,
    state: KeysState | None,
    playing: bool,
) -> tuple[str, str | None, KeysState, bool]:
    """One transition. Returns (trace text, example name, new state, playing).

    ``trigger`` is the id that fired: ``keys-example`` (load that example's trace),
    ``keys-trace`` (the text changed: run it), ``keys-reset`` (run the text again, back to 0),
    ``keys-step`` / ``keys-back`` (one step forward / back), ``keys-play`` (toggle; from the
    last step it starts again at 0) or ``keys-interval`` (Play's tick: one step, pause at the
    end).
    """
    if trace_text is not None and not isinstance(trace_text, str):
        # a forged value (the page's text box only sends text): say so, run nothing
        bad = load_trace("")
        bad["error"] = "The trace is not text: type operations such as \"add A; get; done A\"."
        return "", None, bad, False
    if not isinstance(example_name, str):
        example_name = None  # a forged value: the dropdown only sends an example's name
    elif len(example_name) > MAX_EXAMPLE_NAME:
        example_name = example_name[:MAX_EXAMPLE_NAME] + "…"  # the sentence echoes it
    text = trace_text or ""
    if trigger == "keys-example" and example_name:
        try:
            ex = example(example_name)
        except ModelInputError as exc:
            bad = load_trace(text)
            bad["error"] = str(exc)
            return text, None, bad, False
        return ex.trace, ex.name, load_trace(ex.trace, ex.name), False
    if state is not None and trigger not in ("keys-trace", "keys-reset"):
        try:
            state = validate_store(state)
        except ModelInputError as exc:  # run the text again, and say why
            name = example_name if _matches_example(text, example_name) else None
            fresh = load_trace(text, name)
            fresh["error"] = fresh["error"] or f"{exc} The trace was run again from the text."
            return text, name, fresh, False
    if state is None or trigger in ("keys-trace", "keys-reset"):
        name = example_name if _matches_example(text, example_name) else None
        return text, name, load_trace(text, name), False
    steps = len(state["steps"])
    position = int(state["position"])
    if trigger == "keys-step":
        return text, example_name, {**state, "position": min(position + 1, steps)}, playing
    if trigger == "keys-back":
        return text, example_name, {**state, "position": max(position - 1, 0)}, False
    if trigger == "keys-play":
        if playing or steps == 0:
            return text, example_name, state, False
        start = 0 if position >= steps else position
        return text, example_name, {**state, "position": start}, True
    if trigger == "keys-interval":
        if not playing:
            return text, example_name, state, False
        nxt = min(position + 1, steps)
        return text, example_name, {**state, "position": nxt}, nxt < steps
    return text, example_name, state, playing


def _matches_example(text: str, name: str | None) -> bool:
    return any(e.name == name and e.trace.strip() == text.strip() for e in EXAMPLES)


def key_status(row: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """Each key's place after one step: (status from figures.KEY_STATUSES, also delayed)."""
    queue, dirty, processing = set(row["queue"]), set(row["dirty"]), set(row["processing"])
    delayed = {str(d[0]) for d in row["delayed"]}
    failed = {str(f[0]) for f in row["failures"] if int(f[1]) > 0}
    out: dict[str, tuple[str, bool]] = {}
    for key in sorted(queue | dirty | processing | delayed | failed):
        if key in queue:
            status = KEY_QUEUED
        elif key in processing:
            status = KEY_PROCESSING_DIRTY if key in dirty else KEY_PROCESSING
        elif key in dirty:
            status = KEY_DIRTY
        elif key in delayed:
            status = KEY_DELAYED
        else:
            status = KEY_REMEMBERED
        out[key] = (status, key in delayed and status != KEY_DELAYED)
    return out


def membership(steps: list[dict[str, Any]], upto: int) -> tuple[list[str], list[Point]]:
    """(keys in order of first appearance in the whole trace, chart points up to ``upto``)."""
    seen: dict[str, None] = {}  # insertion-ordered: linear, not a list search per key
    for row in steps:
        for key in key_status(row):
            seen.setdefault(key, None)
    keys = list(seen)
    points: list[Point] = []
    for row in steps[:upto]:
        fails = {str(f[0]): int(f[1]) for f in row["failures"]}
        ready = {str(d[0]): float(d[1]) for d in row["delayed"]}
        for key, (status, also_delayed) in key_status(row).items():
            hover = f"step {row['index']} ({row['op']}): {key} {status}"
            if key in ready:
                hover += f"; ready at t={instant_text(ready[key])}"
            if fails.get(key):
                hover += f"; {fails[key]} failure(s) remembered"
            points.append((int(row["index"]), key, status, also_delayed, hover))
    return keys, points


def keys_render(state: KeysState | None) -> tuple[Any, str, str, Any, Any, str, str]:
    """(state boxes, note, position text, figure, history table, lesson, error)."""
    if state is None:
        return _boxes(None, None), "", "", dash.no_update, html.Div(), "", ""
    try:
        state = validate_store(state)
    except ModelInputError as exc:
        return (_boxes(None, None), "", "no trace loaded", empty_figure(), html.Div(), "",
                f"{exc} Press Reset.")
    lesson = ""
    if state.get("example"):
        try:
            lesson = "Lesson: " + example(str(state["example"])).lesson
        except ModelInputError:
            lesson = ""
    steps: list[dict[str, Any]] = state["steps"]
    if state["error"] or not steps:
        error = state["error"] or "The trace is empty; give operations like 'add A; get; done A'."
        return _boxes(None, None), "", "no trace loaded", empty_figure(), html.Div(), lesson, error
    position = max(0, min(int(state["position"]), len(steps)))
    row = steps[position - 1] if position else None
    before = steps[position - 2] if position >= 2 else None
    if row is None:
        note = f"Empty queue. Step applies step 1: {steps[0]['op']}."
        where = f"step 0 of {len(steps)} (start)"
    else:
        note = str(row["note"])
        where = f"step {position} of {len(steps)}: {row['op']}"
    keys, points = membership(steps, position)
    labels = ["start"] + [f"{s['index']}: {s['op']}" for s in steps]
    fig = key_membership_figure(points, keys, labels, current_step=position)
    return (_boxes(row, before), note, where, fig, _history(steps, position), lesson, "")


def empty_figure() -> Any:
    return key_membership_figure([], [], ["start"], current_step=0)


# --- presentation ------------------------------------------------------------------------------

def _chips(items: list[str], previous: list[str] | None) -> list[Any]:
    if not items:
        return [html.Span("empty", className="ql-muted")]
    old = set(previous or [])
    return [html.Span(item, className="ql-chip" + ("" if item in old else " ql-chip-new"))
            for item in items]


def _boxes(row: dict[str, Any] | None, before: dict[str, Any] | None) -> html.Div:
    def field(name: str, r: dict[str, Any] | None) -> list[str]:
        if r is None:
            return []
        if name == "delayed":
            return [f"{d[0]} @ t={instant_text(float(d[1]))}" for d in r["delayed"]]
        if name == "failures":
            return [f"{f[0]} ×{int(f[1])}" for f in r["failures"]]
        return [str(k) for k in r[name]]

    boxes = []
    titles = (("queue", "queue (FIFO, head first)"), ("dirty", "dirty (needs processing)"),
              ("processing", "processing (held by a worker)"),
              ("delayed", "delayed (add_after, ready at)"),
              ("failures", "failures (rate limiter memory)"))
    first = before is None and row is not None
    for name, title in titles:
        previous = [] if first else field(name, before)
        boxes.append(html.Div(
            [html.Div(title, className="ql-box-title"),
             html.Div(_chips(field(name, row), previous), id=f"keys-{name}",
                      className="ql-box-body")],
            className="ql-box",
        ))
    clock = "t = " + instant_text(float(row["time_s"]) if row is not None else 0.0)
    if row is not None and row["shutting_down"]:
        clock += " · shutting down"
    return html.Div([html.Div(boxes, className="ql-boxes"),
                     html.Div(clock, id="keys-clock", className="ql-note")])


def _history(steps: list[dict[str, Any]], position: int) -> html.Table:
    def keys(items: list[Any]) -> str:
        return " ".join(str(k) for k in items) or "·"

    head = html.Tr([html.Th(c) for c in ("step", "operation", "queue", "dirty", "processing",
                                          "delayed", "failures", "note")])
    rows = []
    for row in steps[:position]:
        delayed = " ".join(f"{d[0]}@{instant_text(float(d[1]))}" for d in row["delayed"])
        fails = " ".join(f"{f[0]}:{int(f[1])}" for f in row["failures"])
        rows.append(html.Tr(
            [html.Td(str(row["index"])), html.Td(str(row["op"])), html.Td(keys(row["queue"])),
             html.Td(keys(row["dirty"])), html.Td(keys(row["processing"])),
             html.Td(delayed or "·"), html.Td(fails or "·"), html.Td(str(row["note"]))],
            className="ql-current" if row["index"] == position else "",
        ))
    return html.Table([html.Thead(head), html.Tbody(rows)], className="ql-table")


def layout(**_kwargs: object) -> html.Div:
    first = EXAMPLES[0]
    start = load_trace(first.trace, first.name)
    options = [{"label": f"{e.title}", "value": e.name} for e in EXAMPLES]
    return html.Div(
        [
            html.H1("Key trace: what does the work queue do with each key?"),
            html.P(
                "client-go's work queue coalesces keys: a key already waiting (dirty) is not "
                "queued twice, a key being processed is marked dirty and queued again only at "
                "done, and a failing key waits for the rate limiter (5 ms doubling to 1000 s, "
                "max with a 10 qps / burst 100 bucket). Type a trace or pick an example, then "
                "Step through it.",
                className="ql-muted",
            ),
            html.Div(
                [
                    html.Div(
                        [
                            html.Div(
                                [html.Label("example trace", htmlFor="keys-example"),
                                 dcc.Dropdown(id="keys-example", options=options,
                                              value=first.name,
                                              placeholder="pick an example…", clearable=True,
                                              searchable=False)],
                                className="ql-field",
                            ),
                            html.Div(
                                [html.Label("trace (operations separated by ';' — Enter runs it)",
                                            htmlFor="keys-trace"),
                                 dcc.Input(id="keys-trace", type="text", value=first.trace,
                                           debounce=True, spellCheck=False,
                                           className="ql-trace-input")],
                                className="ql-field",
                            ),
                            html.Div("operations: " + ", ".join(OPERATIONS),
                                     className="ql-note"),
                            html.Div(
                                [
                                    html.Button("Reset", id="keys-reset", n_clicks=0,
                                                className="ql-button secondary"),
                                    html.Button("Back", id="keys-back", n_clicks=0,
                                                className="ql-button secondary"),
                                    html.Button("Step", id="keys-step", n_clicks=0,
                                                className="ql-button"),
                                    html.Button("Play", id="keys-play", n_clicks=0,
                                                className="ql-button"),
                                ],
                                className="ql-buttons",
                            ),
                            html.Div(id="keys-error", className="ql-error", role="alert"),
                            html.Div(id="keys-position", className="ql-readout ql-value"),
                            html.Div(id="keys-note", className="ql-readout ql-keys-note",
                                     role="status"),
                            html.Div(id="keys-state", children=_boxes(None, None)),
                            html.P(id="keys-lesson", className="ql-note"),
                        ],
                        className="ql-col ql-panel",
                    ),
                    html.Div(
                        dcc.Graph(id="keys-graph", config={"displaylogo": False},
                                  style={"height": "460px"}),
                        className="ql-col-wide ql-card",
                    ),
                ],
                className="ql-row",
            ),
            html.H2("Steps taken"),
            html.Div(id="keys-table", className="ql-card ql-table-wrap"),
            dcc.Store(id="keys-store", data=start),
            dcc.Store(id="keys-playing", data=False),
            dcc.Interval(id="keys-interval", interval=PLAY_INTERVAL_MS, disabled=True),
        ]
    )


def register(app: dash.Dash, ctx: AppContext) -> None:
    """Register the page (path ``/keys``) and its callbacks on ``app``."""
    del ctx  # the key trace needs no data source
    register_page(__name__, path=PATH, name="Key trace", title="Key trace · queuelens",
                  order=4, layout=layout)

    @app.callback(
        Output("keys-trace", "value"),
        Output("keys-example", "value"),
        Output("keys-store", "data"),
        Output("keys-playing", "data"),
        Output("keys-interval", "disabled"),
        Output("keys-play", "children"),
        Input("keys-example", "value"),
        Input("keys-trace", "value"),
        Input("keys-reset", "n_clicks"),
        Input("keys-step", "n_clicks"),
        Input("keys-back", "n_clicks"),
        Input("keys-play", "n_clicks"),
        Input("keys-interval", "n_intervals"),
        State("keys-store", "data"),
        State("keys-playing", "data"),
        prevent_initial_call=True,
    )
    def _control(
        example_name: str | None, text: str | None, _r: int, _s: int, _b: int, _p: int,
        _i: int, state: KeysState | None, playing: bool | None,
    ) -> tuple[str, str | None, KeysState, bool, bool, str]:
        trigger = dash.ctx.triggered_id
        new_text, name, new, play = keys_control(
            trigger if isinstance(trigger, str) else None, text, example_name, state,
            bool(playing),
        )
        return new_text, name, new, play, not play, "Pause" if play else "Play"

    @app.callback(
        Output("keys-state", "children"),
        Output("keys-note", "children"),
        Output("keys-position", "children"),
        Output("keys-graph", "figure"),
        Output("keys-table", "children"),
        Output("keys-lesson", "children"),
        Output("keys-error", "children"),
        Input("keys-store", "data"),
    )
    def _render(state: KeysState | None) -> tuple[Any, str, str, Any, Any, str, str]:
        return keys_render(state)
