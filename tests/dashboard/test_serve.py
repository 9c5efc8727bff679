"""`queuelens serve`: argument handling, safe defaults (loopback, never debug)."""

from __future__ import annotations

import argparse
import socket

import pytest

from dashboard.cliutil import EXIT_USAGE, CliError, OneLineParser
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


def test_bind_listener_refuses_a_port_in_use_with_one_sentence() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(CliError) as info:
            serve.bind_listener("127.0.0.1", port)
    assert str(info.value) == f"cannot listen on 127.0.0.1:{port}: Address already in use"
    assert info.value.exit_code == EXIT_USAGE


@pytest.mark.parametrize(("host", "fragment"), [
    ("no-such-host.invalid", "check --host"),
    ("192.0.2.1", "Cannot assign requested address"),  # TEST-NET-1: not this machine's
    ("a\x1b[2Jb", "a\\x1b[2Jb"),  # named in the message, escaped
])
def test_bind_listener_refuses_a_bad_host(host: str, fragment: str) -> None:
    with pytest.raises(CliError) as info:
        serve.bind_listener(host, 8050)
    assert fragment in str(info.value)
    assert "\x1b" not in str(info.value)


def test_bind_listener_binds_loopback_v4_and_v6() -> None:
    listener = serve.bind_listener("127.0.0.1", _free_port())
    with listener:
        assert listener.getsockname()[0] == "127.0.0.1"
        assert listener.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    if socket.has_ipv6:
        try:
            v6 = serve.bind_listener("[::1]", _free_port())
        except CliError:
            pytest.skip("no IPv6 loopback here")
        with v6:
            assert v6.getsockname()[0] == "::1"


def test_serve_says_serving_only_after_the_bind(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("QUEUELENS_PROMETHEUS_URL", raising=False)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(CliError, match="Address already in use"):
            serve.handle(_parse(["--demo", "--port", str(port)]))
    assert "serving" not in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
