"""`queuelens serve`: argument handling, safe defaults (loopback, never debug)."""

from __future__ import annotations

import argparse

import pytest

from dashboard.cliutil import EXIT_USAGE, OneLineParser
from dashboard.commands import serve


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = OneLineParser(prog="queuelens")
    sub = parser.add_subparsers(dest="command", parser_class=OneLineParser)
    serve.register(sub)
    return parser.parse_args(["serve", *argv])


def test_defaults_bind_loopback_even_with_host_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOST", "0.0.0.0")
    args = _parse([])
    assert args.host == "127.0.0.1"
    assert args.port == 8050
    assert args.refresh == 15.0
    assert not args.demo
    assert args.prometheus is None


def test_flags_parse() -> None:
    args = _parse(["--prometheus", "http://prom:9090", "--host", "::1", "--port", "9000",
                   "--refresh", "1m"])
    assert (args.prometheus, args.host, args.port, args.refresh) == (
        "http://prom:9090", "::1", 9000, 60.0)


@pytest.mark.parametrize(
    "argv",
    [["--port", "0"], ["--port", "70000"], ["--port", "http"], ["--refresh", "soon"],
     ["--demo", "--prometheus", "http://prom:9090"]],
)
def test_bad_flags_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        _parse(argv)
    assert exc.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1  # one line, no traceback


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("localhost", True), ("::1", True), ("[::1]", True),
     ("0.0.0.0", False), ("192.168.1.5", False), ("example.com", False)],
)
def test_loopback_detection(host: str, loopback: bool) -> None:
    assert serve._is_loopback(host) is loopback


def test_ipv6_bind_address_is_bracketed() -> None:
    assert serve._bind_host("::1") == "[::1]"
    assert serve._bind_host("127.0.0.1") == "127.0.0.1"
