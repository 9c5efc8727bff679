"""Forged callback payloads (issue 23, Low: "forged callback values on the key-trace and
retry-storm pages give bare 500s"): for every callback the demo app registers (read from its
``callback_map``), a POST to ``/_dash-update-component`` with generated values for every input
and state — wrong types, huge strings, negative and non-finite numbers, nested objects — is
answered 200, 204 or a 4xx with a sentence, never a 500."""

from __future__ import annotations

import json
import logging
from typing import Any

import flask
import pytest
from hypothesis import given
from hypothesis import strategies as st

from collectors.demo import DemoSource
from dashboard.app import create_app, dash_app_of
from tests.fuzz.strategies import (
    fuzz_settings,
    hostile_numbers,
    json_scalars,
    json_values,
    time_bound,
)

PER_EXAMPLE_S = 20.0
"""The timer's bound on one forged request (the overview's first refresh of the demo fleet
takes a few seconds on the shared CI machine; the rest answer in milliseconds)."""


@pytest.fixture(scope="module")
def app() -> flask.Flask:
    server = create_app(DemoSource(seed=0))
    server.test_client().get("/")  # the first request registers the callbacks
    return server


def _outputs(key: str) -> list[dict[str, str]] | dict[str, str]:
    """Dash's wire form of a callback's outputs from its callback-map key: ``"a.p"`` for one
    output, ``"..a.p...b.q.."`` for several."""
    if key.startswith(".."):
        parts = key[2:-2].split("...")
        return [dict(zip(("id", "property"), p.rsplit(".", 1), strict=True)) for p in parts]
    cid, prop = key.rsplit(".", 1)
    return {"id": cid, "property": prop}


def _callback_keys() -> list[str]:
    server = create_app(DemoSource(seed=0))
    server.test_client().get("/")
    return sorted(dash_app_of(server).callback_map)


CALLBACKS = _callback_keys()


def _post(server: flask.Flask, key: str, values: list[Any], state: list[Any]) -> Any:
    spec = dash_app_of(server).callback_map[key]
    inputs = [{**i, "value": v} for i, v in zip(spec["inputs"], values, strict=False)]
    states = [{**s, "value": v} for s, v in zip(spec["state"], state, strict=False)]
    body = {"output": key, "outputs": _outputs(key), "inputs": inputs, "state": states,
            "changedPropIds": [f"{inputs[0]['id']}.{inputs[0]['property']}"] if inputs else []}
    return server.test_client().post("/_dash-update-component", data=json.dumps(body),
                                     content_type="application/json")


def test_every_callback_is_fuzzed() -> None:
    # the map is read, not listed by hand: a new page's callbacks are fuzzed too
    assert len(CALLBACKS) >= 20
    assert any("keys-" in k for k in CALLBACKS)
    assert any("retries-" in k for k in CALLBACKS)


forged = st.one_of(json_scalars, hostile_numbers, json_values)
"""One forged value: a scalar of any type (a number where a list goes: ``"on" in 5``), a
hostile number, or a nested structure — each about as likely."""


@pytest.mark.parametrize("key", CALLBACKS, ids=[k.strip(".").split(".")[0] for k in CALLBACKS])
@fuzz_settings(max_examples=40, deadline_s=None)
@given(data=st.data())
def test_a_forged_callback_never_answers_500(app: flask.Flask, key: str, data: st.DataObject,
                                             caplog: pytest.LogCaptureFixture) -> None:
    spec = dash_app_of(app).callback_map[key]
    values = [data.draw(forged, label=f"{i['id']}.{i['property']}") for i in spec["inputs"]]
    state = [data.draw(forged, label=f"{s['id']}.{s['property']}") for s in spec["state"]]
    caplog.clear()
    with caplog.at_level(logging.ERROR), time_bound(PER_EXAMPLE_S, key):
        response = _post(app, key, values, state)
    assert response.status_code != 500, (key, caplog.text[-3000:])
    assert response.status_code in (200, 204) or (
        400 <= response.status_code < 500 and response.data.strip()), response.status_code
    assert "Traceback" not in caplog.text, caplog.text[-3000:]
