"""The fleet grid's sort and filter read from the address (issue 21: a reload keeps them, a
link shares them); what the grid could not have written is dropped with one sentence."""

from __future__ import annotations

import json

from dashboard.pages import overview


def test_a_written_state_is_read_back() -> None:
    state = overview.parse_grid_state(
        "status:asc,demand_per_s:desc",
        json.dumps({"queue_name": {"filterType": "text", "type": "contains", "filter": "rep"},
                    "workers": {"filterType": "number", "type": "greaterThan", "filter": 3}}))
    assert state.sort == (("status", "asc"), ("demand_per_s", "desc"))
    assert state.filters["queue_name"]["filter"] == "rep"
    assert state.filters["workers"] == {"filterType": "number", "type": "greaterThan",
                                        "filter": 3}
    assert state.note == ""
    # the grid is built sorted as asked: first key first
    defs = {c["field"]: c for g in overview.grid(state=state).columnDefs
            for c in (g.get("children") or [g])}
    assert (defs["status"]["sort"], defs["status"]["sortIndex"]) == ("asc", 0)
    assert (defs["demand_per_s"]["sort"], defs["demand_per_s"]["sortIndex"]) == ("desc", 1)
    assert overview.grid(state=state).filterModel["workers"]["filter"] == 3


def test_what_the_grid_could_not_have_written_is_dropped() -> None:
    state = overview.parse_grid_state(
        "status:up,nope:asc,status:asc,status:desc",
        json.dumps({"nope": {"filterType": "text", "type": "contains", "filter": "x"},
                    "workers": {"filterType": "number", "type": "greaterThan",
                                "filter": "3; drop"},
                    "status": {"filterType": "text", "type": "eval", "filter": "x"},
                    "headroom": {"filterType": "text", "type": "contains", "filter": "api"}}))
    assert state.sort == (("status", "asc"),)  # one key per column, the first
    assert set(state.filters) == {"headroom"}
    assert state.note.startswith("Not applied from the address: the sort 'status:up'")
    assert "the filter on 'workers'" in state.note
    assert overview.parse_grid_state("x" * 5000, "{").note.count("Not applied") == 1
    assert overview.parse_grid_state(None, None) == overview.GridState()
