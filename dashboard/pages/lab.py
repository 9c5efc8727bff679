"""Queue lab (`/lab`): the seed's instrument for fluid capacity.

Inputs λ (arrivals per time unit), μ (services per time unit) and the initial backlog q0;
buttons Reset, Step and Play/Pause. The lab's state is one JSON dict in a ``dcc.Store``:

    {"t": 2, "backlog": 6.0, "arrival_rate": 4.0, "service_rate": 3.0,
     "origin_t": 0, "origin_backlog": 4.0, "history": [[0, 4.0], [1, 5.0], [2, 6.0]]}

State machine (one time unit per step):

* **Reset** sets t = 0 and backlog = q0 with the current inputs, and pauses Play.
* **Step** advances t by 1: backlog ← max(0, backlog + (λ − μ)·1) via
  :func:`models.fluid.fluid_backlog`, using the inputs as they are *now* (the seed says
  "Reset, set λ=4 and μ=3, ..., then Step"). If λ or μ changed since the last step, a new
  prediction segment starts at the current point.
* **Play** toggles a ``dcc.Interval`` that Steps every 0.5 s. Play pauses by itself once the
  backlog is 0 and cannot grow again (λ ≤ μ), and after :data:`MAX_STEPS` steps, so a
  finished run stays on its final frame (the clearing time stays readable).

Limits (:mod:`models.limits`, the same as ``queuelens lab fluid``): λ, μ and q0 at most
:data:`~models.limits.FLUID_MAX_VALUE`; the clock stops at t =
:data:`~models.limits.FLUID_MAX_STEPS` (Step then says so; Reset starts again); the prediction
line has at most that many points (:func:`models.fluid.fluid_line`, exact however long the
prediction is). The store comes back from the browser, so every callback checks it first
(:func:`validate_state`: types, bounds, the history's length) and answers a forged or broken
one with a sentence, never with work that grows with its numbers.

All numbers come from :mod:`models.fluid` and :func:`models.queueing.mm1`; this module only
formats them. Wrapper callbacks are thin: tests call :func:`lab_control` and
:func:`lab_render` directly.
"""

from __future__ import annotations

import math
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from dashboard.context import AppContext, register_page
from dashboard.figures import lab_figure
from dashboard.forms import parse_number
from dashboard.numbers import sig
from models.errors import ModelInputError
from models.fluid import fluid_backlog, fluid_line, fluid_summary
from models.limits import FLUID_MAX_STEPS, FLUID_MAX_VALUE
from models.queueing import mm1

PATH = "/lab"
STEP = 1.0
"""One Step advances the lab clock by this many time units."""
MAX_STEPS = 500
"""Play pauses after this many steps (the store keeps the whole history)."""
PLAY_INTERVAL_MS = 500
DEFAULT_ARRIVAL = 4.0
DEFAULT_SERVICE = 3.0
DEFAULT_BACKLOG = 4.0

LabState = dict[str, Any]

MAX_BACKLOG = FLUID_MAX_VALUE * (FLUID_MAX_STEPS + 1)
"""Largest backlog the lab can reach: q0 + λ·t with q0, λ ≤ FLUID_MAX_VALUE, t ≤ FLUID_MAX_STEPS."""

LIMITS_NOTE = (
    f"Limits: λ, μ and q0 up to {FLUID_MAX_VALUE:.0e}; the lab's clock stops at "
    f"t = {FLUID_MAX_STEPS:,} (Reset starts again); the prediction is drawn with at most "
    f"{FLUID_MAX_STEPS:,} points, exactly (it is a straight line on each side of the clearing "
    "time). `queuelens lab fluid` has the same limits."
)

LEAVES_OUT = (
    "What the lab leaves out: there is no dirty set, no Done, no Forget, no jitter and no "
    "exponential retry — it isolates fluid capacity (arrivals vs service), not key "
    "bookkeeping. Duplicate adds of a waiting key coalesce in a real workqueue; use the key "
    "trace for coalescing and this fluid view only for a persistent arrival–service imbalance."
)


# --- pure state machine ----------------------------------------------------------------------

def reset_state(arrival_rate: float, service_rate: float, initial_backlog: float) -> LabState:
    """t = 0 and backlog = q0 with the given inputs (validated by the fluid model)."""
    fluid_summary(initial_backlog, arrival_rate, service_rate)  # raises ModelInputError
    return {
        "t": 0,
        "backlog": float(initial_backlog),
        "arrival_rate": float(arrival_rate),
        "service_rate": float(service_rate),
        "origin_t": 0,
        "origin_backlog": float(initial_backlog),
        "history": [[0, float(initial_backlog)]],
    }


def _number(value: object, name: str, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ModelInputError(f"its {name} is not a number")
    # compared before any conversion (float() of a 400-digit JSON integer overflows); NaN and
    # ±inf fail the comparison
    if not 0 <= value <= high:
        raise ModelInputError(f"its {name} is outside 0 … {sig(high)}")
    return float(value)


def _whole(value: object, name: str, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ModelInputError(f"its {name} is not a whole number")
    if not (0 <= value <= high) or (isinstance(value, float) and not value.is_integer()):
        raise ModelInputError(f"its {name} is not a whole number from 0 to {high:,}")
    return int(value)


def validate_state(state: object) -> LabState:
    """The lab's store as it comes back from the browser, checked and normalized (ints and
    floats): t and the segment origin whole numbers within 0 … FLUID_MAX_STEPS, λ and μ within
    the lab's limits, backlogs within 0 … :data:`MAX_BACKLOG`, a history of at most
    FLUID_MAX_STEPS + 1 finite [t, backlog] pairs (its length is checked before its items, so
    the check costs at most that many steps). Anything else raises ModelInputError."""
    try:
        if not isinstance(state, dict):
            raise ModelInputError("it is not a JSON object")
        t = _whole(state.get("t"), "time t", FLUID_MAX_STEPS)
        origin_t = _whole(state.get("origin_t"), "segment start", t)
        history = state.get("history")
        if not isinstance(history, list) or not 1 <= len(history) <= FLUID_MAX_STEPS + 1:
            raise ModelInputError(
                f"its history is not a list of 1 to {FLUID_MAX_STEPS + 1:,} points")
        points: list[list[float]] = []
        for point in history:
            if not (isinstance(point, list | tuple) and len(point) == 2):
                raise ModelInputError("its history has a point that is not a [t, backlog] pair")
            pt = _whole(point[0], "history time", FLUID_MAX_STEPS)
            pq = _number(point[1], "history backlog", MAX_BACKLOG)
            points.append([pt, pq])
        return {
            "t": t,
            "backlog": _number(state.get("backlog"), "backlog", MAX_BACKLOG),
            "arrival_rate": _number(state.get("arrival_rate"), "arrival_rate", FLUID_MAX_VALUE),
            "service_rate": _number(state.get("service_rate"), "service_rate", FLUID_MAX_VALUE),
            "origin_t": origin_t,
            "origin_backlog": _number(state.get("origin_backlog"), "origin_backlog", MAX_BACKLOG),
            "history": points,
        }
    except ModelInputError as exc:
        raise ModelInputError(f"The lab's saved state is not valid: {exc}.") from None


def step_state(state: LabState, arrival_rate: float, service_rate: float) -> LabState:
    """Advance one time unit from the current backlog with the current λ and μ; refused (with
    a sentence) once the clock is at the limit FLUID_MAX_STEPS."""
    if int(state["t"]) >= FLUID_MAX_STEPS:
        raise ModelInputError(f"The lab's clock stops at t = {FLUID_MAX_STEPS:,} (its limit); "
                              "press Reset to start again.")
    backlog = float(state["backlog"])
    nxt = float(fluid_backlog(backlog, arrival_rate, service_rate, [STEP])[0])
    t_next = int(state["t"]) + 1
    changed = (arrival_rate, service_rate) != (state["arrival_rate"], state["service_rate"])
    return {
        "t": t_next,
        "backlog": nxt,
        "arrival_rate": float(arrival_rate),
        "service_rate": float(service_rate),
        "origin_t": int(state["t"]) if changed else int(state["origin_t"]),
        "origin_backlog": backlog if changed else float(state["origin_backlog"]),
        "history": [*state["history"], [t_next, nxt]],
    }


def finished(state: LabState) -> bool:
    """True when playing on would change nothing (empty and λ ≤ μ) or MAX_STEPS is reached."""
    stuck_empty = state["backlog"] == 0 and state["arrival_rate"] <= state["service_rate"]
    return bool(stuck_empty or int(state["t"]) >= MAX_STEPS)


def lab_control(
    trigger: str | None,
    arrival_rate: float | None,
    service_rate: float | None,
    initial_backlog: float | None,
    state: LabState | None,
    playing: bool,
) -> tuple[LabState | None, bool, str]:
    """One transition of the lab. Returns (new state, playing, error sentence or '').

    ``trigger`` is the id that fired: ``lab-reset``, ``lab-step``, ``lab-play`` or
    ``lab-interval``. Bad inputs leave the state as it was and return the model's sentence.
    """
    try:
        lam, mu, q0 = _inputs(arrival_rate, service_rate, initial_backlog)
        if trigger == "lab-reset" or state is None:
            return reset_state(lam, mu, q0), False, ""
        try:
            state = validate_state(state)
        except ModelInputError as exc:
            return reset_state(lam, mu, q0), False, f"{exc} The lab was reset."
        if trigger == "lab-play":
            if playing:
                return state, False, ""
            return state, True, ""
        if trigger in ("lab-step", "lab-interval"):
            if trigger == "lab-interval" and not playing:
                return state, False, ""
            new = step_state(state, lam, mu)
            return new, playing and not finished(new), ""
    except ModelInputError as exc:
        return state, False, str(exc)
    return state, playing, ""


def segment_origin(state: LabState, arrival_rate: float, service_rate: float
                   ) -> tuple[float, float]:
    """(t0, q0) the fluid prediction starts from: the current segment's origin, or the current
    point when λ or μ changed since the last step (the next Step starts a new segment)."""
    if (arrival_rate, service_rate) == (state["arrival_rate"], state["service_rate"]):
        return float(state["origin_t"]), float(state["origin_backlog"])
    return float(state["t"]), float(state["backlog"])


def prediction_sentence(state: LabState, arrival_rate: float, service_rate: float) -> str:
    """The fluid prediction from the current segment's origin, e.g. 'backlog 4 + t' for
    λ=4, μ=3, q0=4 and 'clears at t = 4' for λ=2, μ=3, q0=4 (time in lab units)."""
    t0, q0 = segment_origin(state, arrival_rate, service_rate)
    summary = fluid_summary(q0, arrival_rate, service_rate)
    g = summary.growth_per_s
    tvar = "t" if t0 == 0 else f"(t − {sig(t0)})"
    if g > 0:
        rate = "" if sig(g) == "1" else sig(g)
        term = f"{rate}{tvar}" if rate == "" or tvar == "t" else f"{rate}·{tvar}"
        body = term if q0 == 0 else f"{sig(q0)} + {term}"
        return f"backlog {body} (grows by {sig(g)} per time unit, never clears)"
    if summary.clear_time_s is None:  # g == 0 with a positive backlog
        return f"backlog stays at {sig(q0)} (λ = μ: it never clears)"
    clear_at = t0 + summary.clear_time_s
    if not math.isfinite(clear_at):  # q0 / (μ − λ) overflows: μ − λ below about 1e-300
        return "clears, but only after more time units than a float can count (μ − λ ≈ 0)"
    return f"clears at t = {sig(clear_at)}"


def mm1_sentence(arrival_rate: float, service_rate: float) -> str:
    """The separate M/M/1 residence estimate W = 1/(μ − λ), or 'unstable' when λ ≥ μ."""
    # μ = 0 is a valid lab input (nothing is served) but not a valid M/M/1: unstable too
    result = mm1(arrival_rate, service_rate) if service_rate > 0 else None
    if result is None or result.residence_mean_s is None:
        return (
            "M/M/1 mean residence: unstable (λ ≥ μ) — no steady state; the queue grows "
            "without bound."
        )
    return (
        f"M/M/1 mean residence 1/(μ − λ) = {sig(result.residence_mean_s)} time units "
        f"(utilization ρ = {sig(result.utilization)}) — conditional on Poisson "
        "arrivals and exponential service times; a separate estimate, not the fluid line."
    )


def lab_render(
    state: LabState | None, arrival_rate: float | None, service_rate: float | None
) -> tuple[Any, str, str, str, str]:
    """(figure, time text, backlog text, prediction sentence, M/M/1 sentence)."""
    if state is None:
        return dash.no_update, "—", "—", "", ""
    try:
        state = validate_state(state)
    except ModelInputError as exc:
        return dash.no_update, "—", "—", f"{exc} Press Reset.", ""
    t_now = float(state["t"])
    ts = [float(p[0]) for p in state["history"]]
    qs = [float(p[1]) for p in state["history"]]
    try:
        lam, mu, _ = _inputs(arrival_rate, service_rate, 0.0)
        sentence = prediction_sentence(state, lam, mu)
        mm1_text = mm1_sentence(lam, mu)
    except ModelInputError as exc:
        lam, mu = float(state["arrival_rate"]), float(state["service_rate"])
        sentence = f"no prediction: {exc}"
        mm1_text = ""
    t0, q0 = segment_origin(state, lam, mu)
    summary = fluid_summary(q0, lam, mu)
    clear_at = None if summary.clear_time_s is None else t0 + summary.clear_time_s
    # 1.25 × the clearing time shows the clearing; capped where 1.25 × would overflow
    horizon = min(max(10.0, t_now + 5.0, (clear_at or 0.0) * 1.25), 1e300)
    tau, line = fluid_line(q0, lam, mu, horizon - t0)  # at most FLUID_MAX_STEPS + 2 points
    pred_t = [t0 + float(k) for k in tau]
    pred_q = [float(v) for v in line]
    fig = lab_figure(ts, qs, pred_t, pred_q, clear_time=clear_at)
    return (
        fig,
        sig(t_now),
        sig(float(state["backlog"])),
        sentence,
        mm1_text,
    )


def _inputs(
    arrival_rate: float | None, service_rate: float | None, initial_backlog: float | None
) -> tuple[float, float, float]:
    names = ("arrival rate λ", "service rate μ", "initial backlog q0")
    values = (arrival_rate, service_rate, initial_backlog)
    lam, mu, q0 = (parse_number(name, value) for name, value in zip(names, values, strict=True))
    for name, value in zip(names, (lam, mu, q0), strict=True):
        if value > FLUID_MAX_VALUE:
            raise ModelInputError(f"The {name} must be at most {FLUID_MAX_VALUE:.0e} (the lab's "
                                  f"limit), got {value:.6g}.")
    return lam, mu, q0


# --- layout and Dash wiring ------------------------------------------------------------------

def _field(label: str, input_id: str, value: float, step: float) -> html.Div:
    return html.Div(
        [
            html.Label(label, htmlFor=input_id),
            dcc.Input(id=input_id, type="number", value=value, min=0, step=step, debounce=False),
        ],
        className="ql-field",
    )


def layout(**_kwargs: object) -> html.Div:
    start = reset_state(DEFAULT_ARRIVAL, DEFAULT_SERVICE, DEFAULT_BACKLOG)
    return html.Div(
        [
            html.H1("Queue lab: will the backlog grow or clear?"),
            html.P(
                "A fluid queue: work arrives at λ items per time unit and is served at μ items "
                "per time unit while there is a backlog. Set λ, μ and the initial backlog, "
                "Reset, predict, then Step (one time unit) or Play.",
                className="ql-muted",
            ),
            html.Div(
                [
                    html.Div(
                        [
                            _field("arrival rate λ (items / time unit)", "lab-arrival-rate",
                                   DEFAULT_ARRIVAL, 0.1),
                            _field("service rate μ (items / time unit)", "lab-service-rate",
                                   DEFAULT_SERVICE, 0.1),
                            _field("initial backlog q0 (items)", "lab-initial-backlog",
                                   DEFAULT_BACKLOG, 1),
                            html.Div(
                                [
                                    html.Button("Reset", id="lab-reset", n_clicks=0,
                                                className="ql-button secondary"),
                                    html.Button("Step", id="lab-step", n_clicks=0,
                                                className="ql-button"),
                                    html.Button("Play", id="lab-play", n_clicks=0,
                                                className="ql-button"),
                                ],
                                className="ql-buttons",
                            ),
                            html.Div(id="lab-error", className="ql-error", role="alert"),
                            html.Div(
                                ["t = ", html.Span(id="lab-time", className="ql-value",
                                                   children="0")],
                                className="ql-readout",
                            ),
                            html.Div(
                                ["backlog = ", html.Span(id="lab-backlog", className="ql-value",
                                                         children=sig(DEFAULT_BACKLOG)),
                                 " items"],
                                className="ql-readout",
                            ),
                            html.Div(
                                ["fluid prediction: ",
                                 html.Span(id="lab-prediction", className="ql-value")],
                                className="ql-readout",
                            ),
                            html.P(id="lab-mm1", className="ql-note"),
                            html.P(LEAVES_OUT, id="lab-leaves-out", className="ql-note"),
                            html.P(
                                "Play steps every 0.5 s and pauses by itself once the backlog "
                                f"is empty and cannot grow (λ ≤ μ) or after {MAX_STEPS} steps. "
                                "Reset pauses.",
                                className="ql-note",
                            ),
                            html.P(LIMITS_NOTE, id="lab-limits", className="ql-note"),
                        ],
                        className="ql-col ql-panel",
                    ),
                    html.Div(
                        dcc.Graph(id="lab-graph", config={"displaylogo": False},
                                  style={"height": "460px"}),
                        className="ql-col-wide ql-card",
                    ),
                ],
                className="ql-row",
            ),
            dcc.Store(id="lab-state", data=start),
            dcc.Store(id="lab-playing", data=False),
            dcc.Interval(id="lab-interval", interval=PLAY_INTERVAL_MS, disabled=True),
        ]
    )


def register(app: dash.Dash, ctx: AppContext) -> None:
    """Register the page (path ``/lab``) and its callbacks on ``app``."""
    del ctx  # the lab needs no data source
    register_page(__name__, path=PATH, name="Queue lab", title="Queue lab · queuelens",
                       order=3, layout=layout)

    @app.callback(
        Output("lab-state", "data"),
        Output("lab-playing", "data"),
        Output("lab-interval", "disabled"),
        Output("lab-play", "children"),
        Output("lab-error", "children"),
        Input("lab-reset", "n_clicks"),
        Input("lab-step", "n_clicks"),
        Input("lab-play", "n_clicks"),
        Input("lab-interval", "n_intervals"),
        State("lab-arrival-rate", "value"),
        State("lab-service-rate", "value"),
        State("lab-initial-backlog", "value"),
        State("lab-state", "data"),
        State("lab-playing", "data"),
        prevent_initial_call=True,
    )
    def _control(
        _r: int, _s: int, _p: int, _i: int, lam: float | None, mu: float | None,
        q0: float | None, state: LabState | None, playing: bool | None,
    ) -> tuple[LabState | None, bool, bool, str, str]:
        trigger = dash.ctx.triggered_id
        new, play, error = lab_control(
            trigger if isinstance(trigger, str) else None, lam, mu, q0, state, bool(playing)
        )
        return new, play, not play, "Pause" if play else "Play", error

    @app.callback(
        Output("lab-graph", "figure"),
        Output("lab-time", "children"),
        Output("lab-backlog", "children"),
        Output("lab-prediction", "children"),
        Output("lab-mm1", "children"),
        Input("lab-state", "data"),
        Input("lab-arrival-rate", "value"),
        Input("lab-service-rate", "value"),
    )
    def _render(
        state: LabState | None, lam: float | None, mu: float | None
    ) -> tuple[Any, str, str, str, str]:
        return lab_render(state, lam, mu)
