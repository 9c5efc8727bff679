"""Behaviours for :class:`tests.support.fault_servers.FaultServer` that answer as a hostile or
careless server would, for issue 23's client-side items: a redirect to another host, an error
text that echoes the request's credentials back, a JSON answer nested deeper than any
Prometheus answer, and a valid answer whose sample values are written in a lax number syntax.

Each is a behaviour (a function of the request, the socket and the stop event) built on the
fault servers' :func:`~tests.support.fault_servers.answer`, so they run on 127.0.0.1 in the
fault servers' threads and stop with them."""

from __future__ import annotations

import base64
import json
import socket
import threading

from tests.support.fault_servers import Behaviour, Request, _head, answer


def redirect(location: str, status: int = 302) -> Behaviour:
    """Answer every request with a redirect to ``location`` (the request's path and query
    string appended when ``location`` ends with ``/``)."""

    def run(request: Request, conn: socket.socket, stop: threading.Event) -> None:
        target = location
        if target.endswith("/"):
            query = "&".join(f"{k}={v}" for k, v in request.params.items())
            target = target.rstrip("/") + request.path + (f"?{query}" if query else "")
        conn.sendall(_head(status, "Found", [("Location", target), ("Content-Length", "0"),
                                             ("Connection", "close")]))

    return run


def secrets_of(request: Request) -> list[str]:
    """What a careless server could echo back: the bearer token, the basic-auth user:password
    and every header value the client sent (lower-case names, as the fault servers keep them)."""
    out: list[str] = []
    auth = request.headers.get("authorization", "")
    if auth.startswith("Bearer "):
        out.append(auth[len("Bearer "):])
    elif auth.startswith("Basic "):
        out.append(base64.b64decode(auth[len("Basic "):]).decode("utf-8", "replace"))
    out.extend(v for k, v in request.headers.items()
               if k.startswith("x-") and v)
    return out


def echo_secrets(status: int = 400, envelope: bool = True) -> Behaviour:
    """An error answer whose text repeats the request's credentials and headers (a proxy that
    logs "bad token abc123 for tenant t-1" into its error), as a Prometheus JSON error
    envelope or as plain text."""

    def run(request: Request, conn: socket.socket, stop: threading.Event) -> None:
        text = "bad credentials " + " and ".join(secrets_of(request))
        if envelope:
            body = json.dumps({"status": "error", "errorType": "bad_data",
                               "error": text}).encode()
            answer(status, body)(request, conn, stop)
        else:
            answer(status, text.encode(), "text/plain")(request, conn, stop)

    return run


def nested_json(depth: int, kind: str = "vector") -> Behaviour:
    """A 200 whose ``result`` holds one value nested ``depth`` arrays deep (10 KB at depth
    5,000): valid JSON, deeper than any Prometheus answer (whose deepest value is 4 levels
    under the envelope)."""
    body = ('{"status":"success","data":{"resultType":"' + kind + '","result":'
            + "[" * depth + "]" * depth + "}}").encode()
    return answer(200, body)


def vector_values(values: list[str]) -> Behaviour:
    """A valid vector answer with one series per value, each value given as the raw JSON
    string text (``"1_000"``, ``"١٢"``…)."""
    result = [{"metric": {"name": f"q{i}"}, "value": [1704070200, v]}
              for i, v in enumerate(values)]
    body = json.dumps({"status": "success",
                       "data": {"resultType": "vector", "result": result}}).encode()
    return answer(200, body)
