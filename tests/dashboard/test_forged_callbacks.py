"""What tests/fuzz/test_fuzz_callbacks.py found (issue 23, Low: forged callback values gave
bare 500s with tracebacks in the log), one plain test each: a key trace that is not text, a
queue page's range or name that is not text, a callback that runs in the browser posted to
the server, and a page address that is not text."""

from __future__ import annotations

import json
from typing import Any

import flask
import pytest

from collectors.demo import DemoSource
from dashboard.app import create_app, dash_app_of
from dashboard.pages.keys import MAX_EXAMPLE_NAME, keys_control


@pytest.fixture(scope="module")
def app() -> flask.Flask:
    server = create_app(DemoSource(seed=0))
    server.test_client().get("/")
    return server


def _post(server: flask.Flask, output_id: str, values: list[Any], state: list[Any]) -> Any:
    """POST a forged request to the callback whose outputs include ``output_id``."""
    key = next(k for k in dash_app_of(server).callback_map if output_id in k)
    spec = dash_app_of(server).callback_map[key]
    parts = key[2:-2].split("...") if key.startswith("..") else [key]
    outputs = [dict(zip(("id", "property"), p.rsplit(".", 1), strict=True)) for p in parts]
    inputs = [{**i, "value": v} for i, v in zip(spec["inputs"], values, strict=True)]
    states = [{**s, "value": v} for s, v in zip(spec["state"], state, strict=True)]
    body = {"output": key, "outputs": outputs if key.startswith("..") else outputs[0],
            "inputs": inputs, "state": states,
            "changedPropIds": [f"{inputs[0]['id']}.{inputs[0]['property']}"]}
    return server.test_client().post("/_dash-update-component", data=json.dumps(body),
                                     content_type="application/json")


def test_a_key_trace_that_is_not_text_is_a_sentence(app: flask.Flask) -> None:
    text, name, state, playing = keys_control("keys-trace", True, None, None, False)  # type: ignore[arg-type]
    assert (text, name, playing, state["steps"]) == ("", None, False, [])
    assert "The trace is not text" in state["error"]
    response = _post(app, "keys-trace.value", [None, True, None, None, None, None, None],
                     [None, None])
    assert response.status_code == 200
    assert "The trace is not text" in response.get_data(as_text=True)


def test_a_forged_example_name_is_echoed_bounded() -> None:
    _, _, state, _ = keys_control("keys-example", "", "x" * 100_000, None, False)
    assert "no example trace named" in state["error"]
    assert len(state["error"]) < MAX_EXAMPLE_NAME + 400
    _, name, state, _ = keys_control("keys-example", "add A", [1], None, False)  # type: ignore[arg-type]
    assert (name, state["error"], len(state["steps"])) == (None, "", 1)  # not a name: the text runs


def test_a_queue_page_range_or_name_that_is_not_text_is_the_page_sentence(
        app: flask.Flask) -> None:
    response = _post(app, "queue-message.children", [{"a": 1}, None], [-1, None])
    assert response.status_code == 200
    message = response.get_json()["response"]["queue-message"]["children"]
    assert message  # the page's own sentence (no queue named), not a 500


@pytest.mark.parametrize("output_id", ["queue-xrange.data", "whatif-title-set.data",
                                       "_pages_dummy.children"])
def test_a_browser_side_callback_posted_to_the_server_is_400(app: flask.Flask,
                                                             output_id: str) -> None:
    spec = dash_app_of(app).callback_map[output_id]
    response = _post(app, output_id, [None] * len(spec["inputs"]), [])
    assert response.status_code == 400
    assert response.get_data(as_text=True) == \
        "This dashboard has no server callback for that output.\n"


@pytest.mark.parametrize("pathname", [None, ["/"], 5, "0", ""])
def test_a_page_address_that_is_not_text_is_400(app: flask.Flask, pathname: object) -> None:
    response = _post(app, "_pages_content.children", [pathname, ""], [])
    assert response.status_code == 400
    assert response.get_data(as_text=True) == \
        "The page address is not text under this dashboard's path.\n"
    assert _post(app, "_pages_content.children", ["/lab", ""], []).status_code == 200


def test_a_retry_bucket_that_is_not_a_list_is_off(app: flask.Flask) -> None:
    defaults = [20, 60, 0.005, 1000, "full", None, 10, 100, None, 600, 1, 4, 0.05]
    for bucket in (True, 5, "on", {"on": 1}, None):
        values = [*defaults[:5], bucket, *defaults[6:]]
        response = _post(app, "retries-chart.figure", values, [])
        assert response.status_code == 200, bucket
        assert response.get_json()["response"]["retries-error"]["children"] == ""
    policy = _post(app, "retries-chart.figure", [*defaults[:5], ["on"], *defaults[6:]], [])
    assert "bucket" in json.dumps(policy.get_json()["response"]["retries-policy"]).lower()


def test_a_body_that_is_not_a_callback_request_is_400(app: flask.Flask) -> None:
    client = app.test_client()
    for body in ("[]", '{"output": 5}', "not json"):
        response = client.post("/_dash-update-component", data=body,
                               content_type="application/json")
        assert response.status_code == 400, body
        assert response.get_data(as_text=True) == "This is not a dashboard callback request.\n"
