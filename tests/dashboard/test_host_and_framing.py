"""Issue 23 (Low): DNS rebinding and framing.

A page on ``evil.example`` whose name is made to resolve to 127.0.0.1 reaches a loopback
dashboard with ``Host: evil.example``; the dashboard answers only the names it was told
(``serve --allowed-hosts``; by default, bound to loopback, the loopback names). Every answer
forbids framing (``X-Frame-Options: DENY``, CSP ``frame-ancestors 'none'``)."""

from __future__ import annotations

import argparse
import urllib.error
import urllib.request
from typing import Any

import pytest

from collectors.demo import DemoSource
from dashboard.app import create_app
from dashboard.cliutil import OneLineParser
from dashboard.commands import serve
from tests.support.cli import run_main
from tests.support.serving import serve_process

LOOPBACK = ("localhost", "127.0.0.1", "::1")


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = OneLineParser(prog="queuelens")
    sub = parser.add_subparsers(dest="command", parser_class=OneLineParser)
    serve.register(sub)
    return parser.parse_args(["serve", *argv])


@pytest.fixture(scope="module")
def client() -> Any:
    return create_app(DemoSource(seed=0), allowed_hosts=LOOPBACK).test_client()


@pytest.mark.parametrize("host", ["127.0.0.1:8050", "localhost:8050", "LOCALHOST",
                                  "localhost.", "[::1]:8050", "127.0.0.1"])
def test_loopback_names_are_answered(client: Any, host: str) -> None:
    assert client.get("/readyz", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8050", "127.0.0.1.evil.example",
                                  "localhost@evil.example", "", "[::1", "::1"])
@pytest.mark.parametrize("path", ["/", "/readyz", "/health", "/_dash-layout", "/metrics"])
def test_another_host_name_is_refused_with_one_sentence(client: Any, host: str,
                                                       path: str) -> None:
    response = client.get(path, headers={"Host": host})
    assert response.status_code == 400
    text = response.get_data(as_text=True)
    assert text.count("\n") == 1
    assert "--allowed-hosts" in text
    assert "<" not in text  # no HTML page, and a hostile name is not echoed as markup


def test_liveness_answers_any_host(client: Any) -> None:
    """/livez says nothing but "ok": a probe by pod IP needs no allow-list entry."""
    response = client.get("/livez", headers={"Host": "10.1.2.3:8050"})
    assert response.status_code == 200


@pytest.mark.parametrize("path", ["/", "/readyz", "/livez", "/_dash-layout",
                                  "/assets/queuelens.css", "/no-such-page"])
def test_every_answer_forbids_framing(client: Any, path: str) -> None:
    for host in ("127.0.0.1:8050", "evil.example"):
        response = client.get(path, headers={"Host": host})
        assert response.headers["X-Frame-Options"] == "DENY"
        assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
        assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_serve_allows_the_loopback_names_when_bound_to_loopback() -> None:
    assert set(serve.allowed_hosts(_parse([]))) >= set(LOOPBACK)
    assert "127.0.0.2" in serve.allowed_hosts(_parse(["--host", "127.0.0.2"]))
    assert serve.allowed_hosts(_parse(["--host", "0.0.0.0"])) is None  # behind the proxy
    assert serve.allowed_hosts(_parse(["--host", "0.0.0.0", "--allowed-hosts",
                                       "queuelens.example.com, 10.0.0.5"])) == (
        "queuelens.example.com", "10.0.0.5")
    assert serve.allowed_hosts(_parse(["--allowed-hosts", "*"])) is None


@pytest.mark.parametrize("value", ["http://evil.example", "a/b", "host:80", "", "a b", ","])
def test_a_bad_allowed_host_is_one_line_and_exit_2(
    value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(serve, "run_server", lambda app, host, port: None)
    code, _out, err = run_main(["serve", "--demo", "--allowed-hosts", value], capsys)
    assert code == 2
    (line,) = err.splitlines()
    assert "--allowed-hosts" in line


def test_a_real_serve_refuses_a_rebound_host_name() -> None:
    with serve_process("--demo") as served:
        request = urllib.request.Request(served.url + "/readyz",
                                         headers={"Host": f"evil.example:{served.port}"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=5)
        assert refused.value.code == 400
        request = urllib.request.Request(served.url + "/readyz",
                                         headers={"Host": f"localhost:{served.port}"})
        with urllib.request.urlopen(request, timeout=5) as answer:
            assert answer.status == 200
            assert answer.headers["X-Frame-Options"] == "DENY"
