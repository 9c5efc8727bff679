"""Generated Prometheus answers (issue 23, "Done when"; items 4 and 12 and the lax sample
values are shapes of them): JSON bodies — valid-looking and malformed vector and matrix
results, huge and non-finite numbers, strings where numbers go and numbers where strings go,
missing fields, deep nesting, bytes that are not JSON — served by the fault server of
tests/support on 127.0.0.1 to ``PrometheusClient.query``/``query_range`` and to
``PrometheusSource.snapshot``: a :class:`~collectors.errors.CollectorError` (one line) or a
result, never another exception, within a time bound."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collectors.config import ConnectionSettings
from collectors.errors import CollectorError
from collectors.prom_client import InstantResult, PrometheusClient, RangeResult
from collectors.snapshot import PrometheusSource
from tests.fuzz.strategies import (
    fuzz_settings,
    hostile_numbers,
    hostile_text,
    json_values,
    time_bound,
)
from tests.support.fault_servers import FaultServer, Request, answer
from tests.support.many_series import AT

PER_CALL_S = 15.0
"""The timer's bound on one call (the client's own timeout is 5 s: a call past 15 s is
unbounded work after the answer arrived)."""


class Served:
    """The body the fault server answers next (the same for every request until changed)."""

    body: bytes = b""


def _behaviour(served: type[Served]) -> Any:
    def run(request: Request, conn: socket.socket, stop: threading.Event) -> None:
        answer(200, served.body)(request, conn, stop)

    return run


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    with FaultServer(_behaviour(Served)) as srv:
        yield srv


def _client(server: FaultServer) -> PrometheusClient:
    return PrometheusClient(ConnectionSettings(url=server.url, timeout_s=5.0, retries=0))


LABELS = ["name", "controller", "pod", "namespace", "job", "instance", "le", "replica",
          "__name__", "priority", "result", "code", "verb", "host", "group", "kind"]

sample_value: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(["1", "0", "-5", "1e308", "-1e308", "1e309", "NaN", "+Inf", "-Inf",
                     "1e12", "1_000", "١٢", "0x10", " 1", "", "1.0e+12", "9" * 400]),
    hostile_numbers, hostile_text, json_values)

timestamp: st.SearchStrategy[Any] = st.one_of(
    st.just(AT), st.sampled_from([0, -1, 1e308, 253402300799, "1704070200", None]),
    hostile_numbers)

metric: st.SearchStrategy[Any] = st.one_of(
    st.dictionaries(st.one_of(st.sampled_from(LABELS), hostile_text),
                    st.one_of(st.sampled_from(["kube-system/deployment", "a", "+Inf", "1",
                                               "0.5"]), hostile_text),
                    max_size=5),
    json_values)


@st.composite
def series(draw: st.DrawFn, kind: str) -> Any:
    item: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        item["metric"] = draw(metric)
    point = st.one_of(st.tuples(timestamp, sample_value).map(list), json_values)
    if kind == "vector":
        if draw(st.integers(0, 9)):
            item["value"] = draw(point)
    elif draw(st.integers(0, 9)):
        item["values"] = draw(st.one_of(st.lists(point, max_size=6), json_values))
    if draw(st.integers(0, 5)) == 0:
        item[draw(hostile_text)] = draw(json_values)
    return item if draw(st.integers(0, 9)) else draw(json_values)


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    shape = draw(st.integers(0, 9))
    if shape == 0:  # not JSON, or JSON cut short
        return draw(st.one_of(st.binary(max_size=64), st.sampled_from(
            [b"", b"{", b'{"status":"success","data":{"resultType":"vector","result":[',
             b"<html>502</html>", b"null", b"[]", b'"success"'])))
    if shape == 1:  # nested deeper than any Prometheus answer
        depth = draw(st.sampled_from([50, 500, 5_000, 20_000]))
        inner = "[" * depth + "]" * depth
        return ('{"status":"success","data":{"resultType":"vector","result":' + inner
                + "}}").encode()
    kind = draw(st.sampled_from(["vector", "matrix", "scalar", "string", "streams", 7, None]))
    result: Any = draw(st.lists(series(kind if isinstance(kind, str) else "vector"),
                                max_size=6))
    if draw(st.integers(0, 9)) == 0:
        result = draw(json_values)
    data: Any = {"resultType": kind, "result": result}
    if draw(st.integers(0, 9)) == 0:
        data = draw(json_values)
    envelope: dict[str, Any] = {"status": draw(st.sampled_from(
        ["success", "success", "success", "error", "", None, 1])), "data": data}
    if draw(st.integers(0, 5)) == 0:
        envelope.update(errorType=draw(json_values), error=draw(json_values),
                        warnings=draw(json_values))
    if draw(st.integers(0, 9)) == 0:
        del envelope[draw(st.sampled_from(["status", "data"]))]
    return json.dumps(envelope, allow_nan=True).encode()


def _check(call: Any) -> Any:
    """``call()``'s result, or the CollectorError it raised (its message checked: one line,
    not empty); any other exception, or a call past the bound, fails the test."""
    with time_bound(PER_CALL_S, "a Prometheus read"):
        try:
            return call()
        except CollectorError as exc:
            error = exc
    message = str(error).strip()
    assert message, "an empty message"
    assert "\n" not in message, message[:500]
    assert "Traceback" not in message
    return error


@fuzz_settings(max_examples=150, deadline_s=10.0)
@given(body=bodies())
def test_a_generated_answer_to_a_query_is_a_result_or_a_sentence(server: FaultServer,
                                                                 body: bytes) -> None:
    Served.body = body
    client = _client(server)
    got = _check(lambda: client.query("up", AT))
    assert isinstance(got, InstantResult | CollectorError)
    got = _check(lambda: client.query_range("up", AT - 600, AT, 60))
    assert isinstance(got, RangeResult | CollectorError)


@fuzz_settings(max_examples=60, deadline_s=10.0)
@given(body=bodies())
def test_a_generated_answer_to_a_snapshot_is_a_snapshot_or_a_sentence(server: FaultServer,
                                                                      body: bytes) -> None:
    Served.body = body
    source = PrometheusSource(_client(server))
    got = _check(lambda: source.snapshot(AT, 300.0))
    assert not isinstance(got, BaseException) or isinstance(got, CollectorError)
