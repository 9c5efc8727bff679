"""The key trace page (/keys): state machine, membership and rendering, called directly.

Expected states are written by hand from client-go's rules (queue.go): a dirty key is not
queued twice; a key re-added while processing is queued again only at done.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from dashboard import figures
from dashboard.pages import keys
from models.errors import ModelInputError
from models.keyqueue import EXAMPLES
from models.limits import KEY_TRACE_MAX_STEPS

SPEC = keys.SPEC_TRACE


def _find(component: Any, element_id: str) -> Any:
    """The component with ``id`` in a Dash component tree (None if absent)."""
    if getattr(component, "id", None) == element_id:
        return component
    children = getattr(component, "children", None)
    if children is None or isinstance(children, str):
        return None
    for child in children if isinstance(children, list | tuple) else [children]:
        found = _find(child, element_id)
        if found is not None:
            return found
    return None


def _chip_texts(boxes: Any, name: str) -> list[str]:
    body = _find(boxes, f"keys-{name}")
    assert body is not None, name
    return [c.children for c in body.children if "ql-chip" in (c.className or "")]


def _at(state: keys.KeysState, position: int) -> keys.KeysState:
    return {**state, "position": position}


def test_spec_trace_states_by_hand() -> None:
    state = keys.load_trace(SPEC)
    assert state["error"] == ""
    assert len(state["steps"]) == 7
    expected = [  # (queue, dirty, processing) after each step, from the rules
        (["A"], ["A"], []),      # add A: queued
        (["A"], ["A"], []),      # add A: already dirty -> coalesced, still one entry
        ([], [], ["A"]),         # get: processing, no longer dirty
        ([], ["A"], ["A"]),      # add A while processing: dirty, not queued
        (["A"], ["A"], []),      # done A: re-dirtied -> queued again
        ([], [], ["A"]),         # get
        ([], [], []),            # done A: not dirty -> gone
    ]
    got = [(s["queue"], s["dirty"], s["processing"]) for s in state["steps"]]
    assert got == expected
    assert "coalesced" in state["steps"][1]["note"]


def test_render_shows_note_position_and_boxes() -> None:
    state = keys.load_trace(SPEC)
    boxes, note, where, _fig, table, lesson, error = keys.keys_render(_at(state, 2))
    assert error == ""
    assert "coalesced" in note
    assert where == "step 2 of 7: add A"
    assert _chip_texts(boxes, "queue") == ["A"]
    assert len(table.children[1].children) == 2  # two rows taken so far
    assert lesson == ""  # typed trace, not an example
    boxes, note, where, *_ = keys.keys_render(_at(state, 5))
    assert where == "step 5 of 7: done A"
    assert _chip_texts(boxes, "queue") == ["A"]
    assert _chip_texts(boxes, "processing") == []
    boxes, *_ = keys.keys_render(_at(state, 4))
    assert _chip_texts(boxes, "processing") == ["A"]
    assert _chip_texts(boxes, "dirty") == ["A"]
    assert _chip_texts(boxes, "queue") == []


def test_position_zero_is_the_empty_queue() -> None:
    boxes, note, where, fig, *_ = keys.keys_render(keys.load_trace(SPEC))
    assert where == "step 0 of 7 (start)"
    assert note == "Empty queue. Step applies step 1: add A."
    for name in ("queue", "dirty", "processing", "delayed", "failures"):
        assert _chip_texts(boxes, name) == []
    assert fig["data"] == []  # nothing drawn yet


def test_new_chips_are_marked() -> None:
    state = keys.load_trace("add A; add B; get")
    boxes, *_ = keys.keys_render(_at(state, 2))
    body = _find(boxes, "keys-queue")
    classes = {c.children: c.className for c in body.children}
    assert classes == {"A": "ql-chip", "B": "ql-chip ql-chip-new"}


def test_step_back_play_and_reset() -> None:
    state = keys.load_trace(SPEC)
    control = keys.keys_control
    _, _, s, playing = control("keys-back", SPEC, None, state, False)
    assert s["position"] == 0  # cannot go below the start
    for _ in range(9):
        _, _, state, _ = control("keys-step", SPEC, None, state, False)
    assert state["position"] == 7  # stops at the last step
    _, _, s, playing = control("keys-back", SPEC, None, state, True)
    assert (s["position"], playing) == (6, False)  # Back pauses
    # Play from the end starts again at 0 and ticks one step at a time to the end
    _, _, s, playing = control("keys-play", SPEC, None, state, False)
    assert (s["position"], playing) == (0, True)
    seen = []
    while playing:
        _, _, s, playing = control("keys-interval", SPEC, None, s, playing)
        seen.append(s["position"])
    assert seen == [1, 2, 3, 4, 5, 6, 7]
    _, _, same, playing = control("keys-interval", SPEC, None, s, False)
    assert same["position"] == 7
    assert not playing
    _, _, s, playing = control("keys-play", SPEC, None, _at(s, 3), True)
    assert (s["position"], playing) == (3, False)  # Play while playing pauses
    _, _, s, playing = control("keys-reset", SPEC, None, _at(s, 5), True)
    assert (s["position"], playing) == (0, False)


def test_typing_a_trace_runs_it_and_clears_a_stale_example() -> None:
    ex = EXAMPLES[0]
    state = keys.load_trace(ex.trace, ex.name)
    text, name, new, _ = keys.keys_control("keys-trace", SPEC, ex.name, _at(state, 3), False)
    assert (text, name, new["position"], len(new["steps"])) == (SPEC, None, 0, 7)
    # the example's own trace keeps its name (and its lesson)
    text, name, new, _ = keys.keys_control("keys-trace", ex.trace, ex.name, state, False)
    assert name == ex.name
    assert keys.keys_render(new)[5] == "Lesson: " + ex.lesson


def test_picking_an_example_loads_its_trace() -> None:
    ex = next(e for e in EXAMPLES if e.name == "readd-during-processing")
    text, name, state, playing = keys.keys_control("keys-example", SPEC, ex.name, None, True)
    assert (text, name, state["position"], playing) == (ex.trace, ex.name, 0, False)
    assert len(state["steps"]) == len(ex.trace.split(";"))
    # clearing the dropdown keeps the trace as it is
    text, name, same, _ = keys.keys_control("keys-example", SPEC, None, state, False)
    assert same is state


def test_unknown_example_is_a_sentence() -> None:
    _, name, state, _ = keys.keys_control("keys-example", SPEC, "nope", None, False)
    assert name is None
    assert "no example trace named 'nope'" in state["error"]


@pytest.mark.parametrize(
    ("trace", "needles"),
    [
        ("add A; done B", ("step 2", "not being processed")),
        ("add A; frobnicate A", ("step 2", "unknown operation")),
        ("add", ("step 1", "takes 1 argument")),
        ("", ("empty",)),
    ],
)
def test_bad_trace_shows_the_models_error_and_no_state(
    trace: str, needles: tuple[str, ...]
) -> None:
    _, _, state, _ = keys.keys_control("keys-trace", trace, None, None, False)
    assert state["steps"] == []
    boxes, note, where, _fig, _table, _, error = keys.keys_render(state)
    for needle in needles:
        assert needle in error
    assert "Traceback" not in error
    assert (note, where) == ("", "no trace loaded")
    assert _chip_texts(boxes, "queue") == []


def test_overlong_trace_is_refused_with_a_sentence() -> None:
    state = keys.load_trace("add A; " * 1000)
    assert "queuelens lab keys" in state["error"]
    assert state["steps"] == []


def test_key_status_rules() -> None:
    row = {"queue": ["B"], "dirty": ["A", "B"], "processing": ["A", "C"],
           "delayed": [["B", 1.0], ["D", 2.0]], "failures": [["E", 2], ["C", 1]]}
    assert keys.key_status(row) == {
        "A": (figures.KEY_PROCESSING_DIRTY, False),
        "B": (figures.KEY_QUEUED, True),
        "C": (figures.KEY_PROCESSING, False),
        "D": (figures.KEY_DELAYED, False),
        "E": (figures.KEY_REMEMBERED, False),
    }


def test_membership_of_the_spec_trace() -> None:
    state = keys.load_trace(SPEC)
    names, points = keys.membership(state["steps"], 5)
    assert names == ["A"]
    assert [(p[0], p[2]) for p in points] == [
        (1, figures.KEY_QUEUED), (2, figures.KEY_QUEUED), (3, figures.KEY_PROCESSING),
        (4, figures.KEY_PROCESSING_DIRTY), (5, figures.KEY_QUEUED),
    ]


def test_stale_penalty_example_shows_the_remembered_failures() -> None:
    ex = next(e for e in EXAMPLES if e.name == "stale-penalty")
    state = keys.load_trace(ex.trace, ex.name)
    steps = state["steps"]
    wait_1h = next(i for i, s in enumerate(steps, start=1) if s["op"] == "wait 1h")
    # two failures, success without forget: A is idle but the limiter still counts 2
    assert steps[wait_1h - 1]["failures"] == [["A", 2]]
    _, points = keys.membership(steps, wait_1h)
    assert (wait_1h, "A", figures.KEY_REMEMBERED, False) == points[-1][:4]
    boxes, *_ = keys.keys_render(_at(state, wait_1h))
    assert _chip_texts(boxes, "failures") == ["A ×2"]
    # the forget-on-success example has no memory at the same point
    fixed = keys.load_trace(next(e for e in EXAMPLES if e.name == "forget-on-success").trace)
    at = next(i for i, s in enumerate(fixed["steps"], start=1) if s["op"] == "wait 1h")
    assert fixed["steps"][at - 1]["failures"] == []


def test_delayed_keys_show_their_ready_time() -> None:
    state = keys.load_trace("add_after A 2s; tick 1s")
    boxes, *_ = keys.keys_render(_at(state, 2))
    assert _chip_texts(boxes, "delayed") == ["A @ t=2 s"]
    assert _find(boxes, "keys-clock").children == "t = 1 s"


def test_layout_has_the_stable_ids() -> None:
    text = str(keys.layout())
    for element_id in ("keys-trace", "keys-example", "keys-step", "keys-back", "keys-reset",
                       "keys-play", "keys-state", "keys-note", "keys-position", "keys-graph",
                       "keys-table", "keys-error", "keys-store", "keys-interval"):
        assert f"id='{element_id}'" in text, element_id


# --- the figure builder ------------------------------------------------------------------------

def test_membership_figure_one_trace_per_status_and_fixed_range() -> None:
    points = [(1, "A", figures.KEY_QUEUED, False, "h1"), (2, "A", figures.KEY_PROCESSING, False,
              "h2"), (2, "B", figures.KEY_QUEUED, True, "h3")]
    fig = figures.key_membership_figure(points, ["A", "B"], ["start", "add A", "get", "add B"],
                                        current_step=2)
    by_name = {t["name"]: t for t in fig["data"]}
    assert set(by_name) == {figures.KEY_QUEUED, figures.KEY_PROCESSING}
    queued = by_name[figures.KEY_QUEUED]
    assert list(queued["x"]) == [1, 2]
    assert list(queued["y"]) == ["A", "B"]
    assert list(queued["marker"]["line"]["width"]) == [1, 4]  # B is also delayed: a ring
    layout = fig["layout"]
    assert list(layout["xaxis"]["range"]) == [-0.5, 3.5]  # the whole trace, not just so far
    assert layout["shapes"][0]["x0"] == 2
    assert layout["title"]["text"].endswith("?")
    assert "step" in layout["xaxis"]["title"]["text"]
    assert list(layout["yaxis"]["categoryarray"]) == ["A", "B"]


def test_membership_figure_escapes_and_rejects_bad_input() -> None:
    fig = figures.key_membership_figure([(1, "<b>x</b>", figures.KEY_QUEUED, False, "<i>")],
                                        ["<b>x</b>"], ["start", "add"], current_step=1)
    assert fig["data"][0]["y"][0] == "&lt;b&gt;x&lt;/b&gt;"
    with pytest.raises(ValueError, match="unknown key status"):
        figures.key_membership_figure([(1, "A", "sleeping", False, "")], ["A"], ["s", "a"],
                                      current_step=0)
    with pytest.raises(ValueError, match="outside"):
        figures.key_membership_figure([], [], ["start"], current_step=3)


def test_both_pages_are_served_and_linked_from_the_nav() -> None:
    from collectors.demo import DemoSource
    from dashboard.app import create_app

    client = create_app(DemoSource(seed=0)).test_client()
    for path in ("/keys", "/retries"):
        response = client.get(path)
        assert response.status_code == 200
        assert b"_dash-config" in response.data
    layout = client.get("/_dash-layout").get_json()
    nav = layout["props"]["children"][0]["props"]["children"]
    links = {c["props"]["id"]: c["props"]["href"] for c in nav if c["type"] == "Link"}
    assert links["nav-keys"] == "/keys"
    assert links["nav-retries"] == "/retries"


# --- issue 12: the store is checked and capped, rendering is linear ---------------------------

def _step(index: int, queue: list[Any], **changes: Any) -> dict[str, Any]:
    row = {"index": index, "op": "add", "time_s": 0.0, "queue": queue, "dirty": [],
           "processing": [], "delayed": [], "failures": [], "shutting_down": False,
           "note": "n"}
    row.update(changes)
    return row


def _store(steps: list[dict[str, Any]], **changes: Any) -> dict[str, Any]:
    state = {"trace": "add A", "example": None, "position": len(steps), "error": "",
             "steps": steps}
    state.update(changes)
    return state


def test_many_distinct_keys_render_in_linear_time() -> None:
    # 40,000 distinct keys within the limit: before, `key not in keys` over a list made the
    # key order quadratic (a 770 KB store took 38 s of CPU)
    store = _store([_step(1, [f"k{i}" for i in range(40_000)])])
    start = time.process_time()
    _, _, where, fig, _, _, error = keys.keys_render(store)
    assert time.process_time() - start < 5.0
    assert error == ""
    assert where == "step 1 of 1: add"
    assert len(fig["layout"]["yaxis"]["categoryarray"]) == 40_000


FORGED_STORES: list[Any] = [
    [], "store", 3, {"steps": []},
    _store([_step(1, [f"k{i}" for i in range(keys.MAX_CELLS + 1)])]),       # over the places
    _store([_step(i + 1, ["A"]) for i in range(KEY_TRACE_MAX_STEPS + 1)]),  # over the steps
    _store([_step(1, ["A" * 6000])]),                                        # a huge key
    _store([_step(1, ["A"])], error="e" * 20_001),                           # a huge error
    _store([_step(1, ["A"])], position=2),
    _store([_step(1, ["A"])], position=-1),
    _store([_step(1, ["A"])], position=True),
    _store([_step(1, ["A"])], position="1"),
    _store([_step(2, ["A"])]),                                                # misnumbered
    _store([_step(1, "A")]),
    _store([_step(1, [1])]),
    _store([_step(1, [None])]),
    _store([_step(1, [], delayed=[["A"]])]),
    _store([_step(1, [], delayed=[["A", float("inf")]])]),
    _store([_step(1, [], failures=[["A", 1.5]])]),
    _store([_step(1, [], failures=[["A", -1]])]),
    _store([_step(1, ["A"], time_s=float("nan"))]),
    _store([_step(1, ["A"], time_s=10**400)]),                               # overflows float()
    _store([_step(1, [], delayed=[["A", 10**400]])]),
    _store([_step(1, [], failures=[["A", -(10**400)]])]),
    _store([_step(1, ["A"], shutting_down="no")]),
    _store([_step(1, ["A"])], trace=["add A"]),
    _store([_step(1, ["A"])], example=7),
    {**_store([]), "steps": "[]"},
    _store([["A"]]),
]


@pytest.mark.parametrize("store", FORGED_STORES, ids=range(len(FORGED_STORES)))
def test_a_forged_store_is_a_sentence(store: Any) -> None:
    _, note, where, _, _, lesson, error = keys.keys_render(store)
    assert error.startswith("The page's saved trace is not valid: ")
    assert error.endswith("Press Reset.")
    assert (note, where, lesson) == ("", "no trace loaded", "")
    text, name, new, playing = keys.keys_control("keys-step", SPEC, None, store, True)
    assert (text, name, playing) == (SPEC, None, False)
    assert new["steps"] == keys.load_trace(SPEC)["steps"]
    assert new["error"].endswith("The trace was run again from the text.")


def test_a_store_over_the_character_budget_is_refused_while_it_is_read() -> None:
    long_note = "n" * (4 * keys.MAX_TRACE_CHARS)
    rows = [_step(i + 1, [], note=long_note) for i in range(200)]  # 4 million characters
    with pytest.raises(ModelInputError, match="more than 4,000,000 characters"):
        keys.validate_store(_store(rows))
    assert keys.validate_store(_store(rows[:100]))["position"] == 100


def test_a_trace_over_the_pages_key_places_says_so() -> None:
    state = keys.load_trace("; ".join(f"add k{i}" for i in range(300)))
    assert state["steps"] == []
    assert "more than 50,000 key places" in state["error"]
    assert "`queuelens lab keys` takes more" in state["error"]
    overlong = keys.load_trace("add A; " * 1000)
    assert overlong["trace"] == ""  # the store keeps only what the page can run
    assert keys.validate_store(overlong) is overlong


def test_the_stores_the_page_builds_pass_its_check() -> None:
    for ex in EXAMPLES:
        state = keys.load_trace(ex.trace, ex.name)
        for position in range(len(state["steps"]) + 1):
            assert keys.validate_store(_at(state, position))["position"] == position
