"""Issue 23, client side: config bombs, headers that leak to or break the connection, server
text that echoes a secret, hostile answers (deep nesting, lax numbers), bad ``--at``.

The hostile servers are the fault servers of :mod:`tests.support.fault_servers` and the few
more of :mod:`tests.support.hostile_answers`, all on 127.0.0.1 and started here."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from collectors.config import parse_config
from collectors.errors import ConfigError


def _bomb(levels: int, width: int = 9) -> str:
    """The classic 'billion laughs' in YAML: each level a list of ``width`` aliases of the
    one before (``width ** levels`` strings once expanded), all inside the value of a key
    that expects a string."""
    items = ['&l0 "lol"'] + [f"&l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]"
                             for i in range(1, levels + 1)]
    return "profile:\n  base: [" + ", ".join(items) + "]\n"


def test_a_yaml_alias_bomb_is_refused_at_once_with_a_short_sentence() -> None:
    # 9**6 = 531,441 strings expanded: today's message is megabytes long (at 9**9, the
    # issue's 340-byte bomb, it runs for minutes past 2 GB)
    text = _bomb(6)
    assert len(text) < 600
    started = time.monotonic()
    with pytest.raises(ConfigError) as info:
        parse_config(text, origin="bomb.yaml")
    assert time.monotonic() - started < 2.0
    message = str(info.value)
    assert len(message) < 300, message[:300]
    assert "bomb.yaml" in message
    assert "alias" in message


def test_the_full_alias_bomb_ends_in_bounded_time() -> None:
    started = time.monotonic()
    with pytest.raises(ConfigError, match="alias"):
        parse_config(_bomb(9), origin="bomb.yaml")
    assert time.monotonic() - started < 2.0


def test_an_anchor_without_alias_is_refused_too() -> None:
    with pytest.raises(ConfigError, match="anchor"):
        parse_config("profile:\n  base: &x controller-runtime\n", origin="c.yaml")


@pytest.mark.parametrize("text", [
    "profile:\n  base: [" + ", ".join(["x" * 50] * 2000) + "]\n",
    "analysis:\n  slo_quantile: '" + "9" * 100_000 + "'\n",
    "prometheus:\n  url: " + "a" * 100_000 + "\n",
])
def test_config_messages_quote_bounded_excerpts(text: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text, origin="c.yaml")
    assert len(str(info.value)) < 400, str(info.value)[:400]


def test_a_config_file_larger_than_the_cap_is_refused_unread(tmp_path: Path) -> None:
    from collectors.config import MAX_CONFIG_BYTES, load_config

    big = tmp_path / "big.yaml"
    with big.open("wb") as handle:
        handle.write(b"# " + b"x" * (MAX_CONFIG_BYTES + 10) + b"\n")
    with pytest.raises(ConfigError, match="larger than 16 MiB"):
        load_config(big)


# --- item 8: redirects to another host ---------------------------------------------------

HEADERS = {"X-Api-Key": "key-7f3a9", "X-Auth-Token": "tok-51c2e", "X-Scope-OrgID": "tenant-9"}


@pytest.mark.parametrize("target", ["http://localhost:{port}/", "http://127.0.0.1:{port}/"])
def test_a_redirect_to_another_host_is_never_followed(target: str) -> None:
    """The custom headers (tenant, API keys) would go to the other host with the request,
    and its answer would be read as Prometheus's: the redirect is refused with a sentence
    (another port is another server too)."""
    from collectors.config import ConnectionSettings
    from collectors.errors import PrometheusServerError
    from collectors.prom_client import PrometheusClient
    from tests.support.fault_servers import FaultServer, answer
    from tests.support.hostile_answers import redirect

    with (FaultServer(answer(500, b"attacker body")) as other,
          FaultServer(redirect(target.format(port=other.port))) as first):
        client = PrometheusClient(ConnectionSettings(url=first.url, headers=HEADERS,
                                                     token="secret-token"))
        with pytest.raises(PrometheusServerError) as info:
            client.query("up", 1704070200.0)
    assert other.requests == []
    message = str(info.value)
    assert "redirect" in message
    assert "another server" in message
    assert "attacker body" not in message
    assert f"localhost:{other.port}" in message or f"127.0.0.1:{other.port}" in message


def test_a_redirect_on_the_same_server_is_still_followed_with_its_headers() -> None:
    from collectors.config import ConnectionSettings
    from collectors.prom_client import PrometheusClient
    from tests.support.fault_servers import FaultServer, ok, route
    from tests.support.hostile_answers import redirect

    holder: list[FaultServer] = []

    def to_prefix(request, conn, stop):  # type: ignore[no-untyped-def]
        redirect(f"{holder[0].url}/prom/")(request, conn, stop)

    with FaultServer(route([("/prom/", ok())], default=to_prefix)) as server:
        holder.append(server)
        client = PrometheusClient(ConnectionSettings(url=server.url, headers=HEADERS))
        assert client.query("up", 1704070200.0).samples == []
    assert [r.path for r in server.requests] == ["/api/v1/query", "/prom/api/v1/query"]
    assert server.requests[1].headers["x-scope-orgid"] == "tenant-9"


# --- item 9: a server that echoes the credentials back -----------------------------------

TOKEN = "tok-4b9e1c77d2"
PASSWORD = "pw-a81f3c0e"


def _settings(url: str, auth: str) -> object:
    from collectors.config import ConnectionSettings

    if auth == "token":
        return ConnectionSettings(url=url, token=TOKEN, headers=HEADERS, retries=0)
    return ConnectionSettings(url=url, username="bob", password=PASSWORD, headers=HEADERS,
                              retries=0)


def _no_secret(text: str) -> None:
    for secret in (TOKEN, PASSWORD, HEADERS["X-Api-Key"], HEADERS["X-Auth-Token"]):
        assert secret not in text, text
    import base64

    assert base64.b64encode(f"bob:{PASSWORD}".encode()).decode() not in text


@pytest.mark.parametrize("auth", ["token", "basic"])
@pytest.mark.parametrize(("status", "envelope"), [(400, True), (200, True), (500, True),
                                                  (502, False), (422, True)])
def test_credentials_echoed_in_the_servers_error_are_redacted(auth: str, status: int,
                                                              envelope: bool) -> None:
    from collectors.errors import CollectorError
    from collectors.prom_client import PrometheusClient
    from tests.support.fault_servers import FaultServer
    from tests.support.hostile_answers import echo_secrets

    with FaultServer(echo_secrets(status, envelope)) as server:
        client = PrometheusClient(_settings(server.url, auth))  # type: ignore[arg-type]
        with pytest.raises(CollectorError) as info:
            client.query("up", 1704070200.0)
    message = str(info.value)
    assert "bad credentials" in message  # the server's text is still shown...
    assert "[redacted]" in message  # ...without the secrets
    _no_secret(message)


def test_credentials_echoed_in_warnings_are_redacted() -> None:
    import json

    from collectors.prom_client import PrometheusClient
    from tests.support.fault_servers import FaultServer, answer

    body = json.dumps({"status": "success", "warnings": [f"tenant {HEADERS['X-Scope-OrgID']}"
                                                         f" token {TOKEN}"],
                       "data": {"resultType": "vector", "result": []}}).encode()
    with FaultServer(answer(200, body)) as server:
        result = PrometheusClient(_settings(server.url, "token")).query(  # type: ignore[arg-type]
            "up", 1704070200.0)
    assert len(result.warnings) == 1
    assert "[redacted]" in result.warnings[0]
    _no_secret(result.warnings[0])
    # the tenant is no secret: a tenant "prod" redacted would rename a queue "prod-x"
    assert HEADERS["X-Scope-OrgID"] in result.warnings[0]


def test_the_cli_error_line_never_shows_an_echoed_token(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.cli import run_main
    from tests.support.fault_servers import FaultServer
    from tests.support.hostile_answers import echo_secrets

    monkeypatch.setenv("QUEUELENS_PROMETHEUS_TOKEN", TOKEN)
    with FaultServer(echo_secrets(400)) as server:
        code, out, err = run_main(["snapshot", "--prometheus", server.url,
                                   "--prometheus-header", "X-Api-Key=" + HEADERS["X-Api-Key"]],
                                  capsys)
    assert code == 3
    assert "bad credentials" in err
    assert "[redacted]" in err
    _no_secret(out + err)


def test_health_and_the_banner_never_show_an_echoed_secret() -> None:
    from collectors.cache import CachedSource
    from collectors.config import QueuelensConfig
    from collectors.connect import open_source
    from collectors.errors import CollectorError
    from dashboard.app import create_app, stale_banner_text
    from tests.support.fault_servers import FaultServer
    from tests.support.hostile_answers import echo_secrets

    with FaultServer(echo_secrets(400)) as server:
        source = open_source(server.url, False, QueuelensConfig(),
                             env={"QUEUELENS_PROMETHEUS_TOKEN": TOKEN},
                             headers={"X-Auth-Token": HEADERS["X-Auth-Token"]})
        cached = CachedSource(source, ttl_s=15.0, align_s=5.0)
        with pytest.raises(CollectorError):
            cached.snapshot(1704070200.0, 300.0)
        body = create_app(cached).test_client().get("/health").get_data(as_text=True)
        banner = stale_banner_text(cached)
    assert "bad credentials" in body
    assert "bad credentials" in banner
    _no_secret(body + banner)


def test_the_surfaces_redact_a_secret_whatever_put_it_in_the_message() -> None:
    """The second guard: an error raised outside the HTTP client (any code path) that
    quotes a configured secret is redacted at /health and in the banner too."""
    from collectors.cache import CachedSource
    from collectors.config import ConnectionSettings
    from collectors.errors import BadQuery
    from collectors.prom_client import PrometheusClient
    from dashboard.app import source_status

    PrometheusClient(ConnectionSettings(url="http://127.0.0.1:9", token=TOKEN))

    class Leaky:
        name = "leaky"

        def snapshot(self, at: float, window_s: float) -> object:
            raise BadQuery(f"something quoted {TOKEN} verbatim")

        def range(self, *args: object, **kwargs: object) -> object:
            raise AssertionError

    cached = CachedSource(Leaky(), ttl_s=15.0, align_s=5.0)  # type: ignore[arg-type]
    with pytest.raises(BadQuery):
        cached.snapshot(1704070200.0, 300.0)
    shown = str(source_status(cached)["last_error"])
    assert shown == "something quoted [redacted] verbatim"


# --- item 12: JSON nested deeper than any Prometheus answer ------------------------------

@pytest.mark.parametrize("status", [200, 400, 503])
@pytest.mark.parametrize("kind", ["vector", "matrix"])
def test_a_deeply_nested_answer_is_a_sentence(status: int, kind: str) -> None:
    from collectors.config import ConnectionSettings
    from collectors.errors import CollectorError
    from collectors.prom_client import PrometheusClient
    from tests.support.fault_servers import FaultServer, answer

    body = ('{"status":"success","data":{"resultType":"' + kind + '","result":'
            + "[" * 5000 + "]" * 5000 + "}}").encode()
    with FaultServer(answer(status, body)) as server:
        client = PrometheusClient(ConnectionSettings(url=server.url, retries=0))
        read = (client.query if kind == "vector" else
                lambda q, at: client.query_range(q, at, at + 300.0, 15.0))
        with pytest.raises(CollectorError) as info:
            read("up", 1704070200.0)
    assert "nested" in str(info.value)


def test_the_cli_says_one_line_for_a_deeply_nested_answer(
        capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.cli import run_main
    from tests.support.fault_servers import FaultServer
    from tests.support.hostile_answers import nested_json

    with FaultServer(nested_json(5000)) as server:
        code, _out, err = run_main(["snapshot", "--prometheus", server.url], capsys)
    assert code == 3
    assert err.count("\n") == 1
    assert "nested" in err
    assert "Traceback" not in err


# --- low items: framing headers, --at, lax numbers ----------------------------------------

@pytest.mark.parametrize("name", ["Content-Length", "transfer-encoding", "Host", "Connection",
                                  "Keep-Alive", "TE", "Upgrade", "Expect", "Trailer",
                                  "Proxy-Connection"])
def test_framing_and_hop_by_hop_headers_are_refused_in_every_setting(name: str) -> None:
    from collectors.config import connection_settings, parse_headers

    with pytest.raises(ConfigError, match="set by the HTTP client"):
        parse_config(f"prometheus:\n  headers:\n    {name}: '5'\n", origin="c.yaml")
    with pytest.raises(ConfigError, match="set by the HTTP client"):
        parse_headers(f"{name}=5", "--prometheus-header")
    with pytest.raises(ConfigError, match="set by the HTTP client"):
        connection_settings(None, url="http://127.0.0.1:9",
                            env={"QUEUELENS_PROMETHEUS_HEADERS": f"{name}=5"})


def test_an_ordinary_header_is_still_accepted() -> None:
    from collectors.config import parse_headers

    assert parse_headers("X-Scope-OrgID=t1", "--prometheus-header") == {"X-Scope-OrgID": "t1"}


@pytest.mark.parametrize("at", ["253402300799", "9999-12-31T23:59:59Z", "4102444801"])
def test_an_at_beyond_2100_is_one_sentence_before_any_query(
        at: str, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.cli import run_main
    from tests.support.fault_servers import FaultServer, ok

    with FaultServer(ok()) as server:
        code, _out, err = run_main(["advise", "--prometheus", server.url, "--at", at], capsys)
        assert server.requests == []
    assert code == 2
    assert err.count("\n") == 1
    assert "2100" in err


@pytest.mark.parametrize("text", ["1_000", "١٢", " 12", "12 ", "0x10", "1,5", "٣.٥"])
def test_sample_values_outside_the_prometheus_float_text_are_refused(text: str) -> None:
    from collectors.config import ConnectionSettings
    from collectors.errors import PrometheusServerError
    from collectors.prom_client import PrometheusClient
    from tests.support.fault_servers import FaultServer
    from tests.support.hostile_answers import vector_values

    with (FaultServer(vector_values(["1.5", text])) as server,
          pytest.raises(PrometheusServerError, match="not a number")):
        PrometheusClient(ConnectionSettings(url=server.url)).query("up", 1704070200.0)


def test_a_range_value_outside_the_float_text_is_refused() -> None:
    import json

    from collectors.config import ConnectionSettings
    from collectors.errors import PrometheusServerError
    from collectors.prom_client import PrometheusClient
    from tests.support.fault_servers import FaultServer, answer

    body = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"name": "q"}, "values": [[1704070200, "1"], [1704070215, "2_0"]]}]}})
    with (FaultServer(answer(200, body.encode())) as server,
          pytest.raises(PrometheusServerError, match="not a number")):
        PrometheusClient(ConnectionSettings(url=server.url)).query_range(
            "up", 1704070200.0, 1704070215.0, 15.0)


@pytest.mark.parametrize("text", ["1.5", "-0.25", "1e+06", "1E-3", "NaN", "+Inf", "-Inf", "0",
                                  "12345678901234567890"])
def test_the_prometheus_float_texts_are_accepted(text: str) -> None:
    from collectors.config import ConnectionSettings
    from collectors.prom_client import PrometheusClient
    from tests.support.fault_servers import FaultServer
    from tests.support.hostile_answers import vector_values

    with FaultServer(vector_values([text])) as server:
        (sample,) = PrometheusClient(ConnectionSettings(url=server.url)).query(
            "up", 1704070200.0).samples
    assert (sample.value if sample.value is not None else sample.special) == (
        float(text) if sample.special is None else text)


def test_the_overview_says_a_sentence_for_a_deeply_nested_answer() -> None:
    """Was a bare 500: the RecursionError escaped every page's CollectorError handler."""
    from collectors.config import QueuelensConfig
    from collectors.connect import open_source
    from dashboard.context import AppContext
    from dashboard.pages.overview import load_overview
    from tests.support.fault_servers import FaultServer
    from tests.support.hostile_answers import nested_json

    with FaultServer(nested_json(5000)) as server:
        ctx = AppContext(source=open_source(server.url, False, QueuelensConfig()),
                         at=1704070200.0)
        rows, _summary, error = load_overview(ctx)
    assert rows == []
    assert error.startswith("Could not read the queues: ")
    assert "nested" in error
