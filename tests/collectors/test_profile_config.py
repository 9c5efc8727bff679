"""Escaping, selector validation, YAML config and env/flag precedence."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from collectors.config import (
    DEFAULT_MAX_RESPONSE_BYTES,
    ConnectionSettings,
    connection_settings,
    load_config,
    parse_config,
    parse_headers,
    parse_size,
    split_url,
    strip_credentials,
)
from collectors.errors import ConfigError
from collectors.profile import (
    Matcher,
    Profile,
    escape_label_value,
    escape_regex_value,
    format_duration,
    parse_selector,
    regex_literal,
)
from collectors.prom_client import PrometheusClient


@pytest.mark.parametrize("value", ['a"b', "a\\b", 'x"} or up{a="', "new\nline", "ünï😀", ""])
def test_label_value_escaping_round_trips_through_the_selector_parser(value: str) -> None:
    literal = escape_label_value(value)
    assert parse_selector("{name=" + literal + "}") == (Matcher("name", "=", value),)


@pytest.mark.parametrize(("value", "lookalike"), [
    ("node.lease", "nodeXlease"), ("a+b", "aab"), ("x(1)|y", "y"), ("q[12]{2}^$", "q1"),
    ("back\\slash", "back\\\\slash"),
])
def test_regex_escaping_matches_only_the_literal(value: str, lookalike: str) -> None:
    pattern = regex_literal(value)
    assert re.fullmatch(pattern, value)
    assert not re.fullmatch(pattern, lookalike)
    (m,) = parse_selector("{name=~" + escape_regex_value(value) + "}")
    assert m.value == pattern


@pytest.mark.parametrize("text", [
    'namespace="x"', '{namespace="x"} or up', '{namespace=x}', '{__name__="up"}',
    '{namespace="x" job="y"}', '{1abc="x"}', '{a=~"("}', '{a="unterminated}', 'up{a="b"}',
    '{a="\\q"}',
])
def test_bad_selectors_are_rejected_with_a_clear_message(text: str) -> None:
    with pytest.raises(ConfigError, match="selector"):
        parse_selector(text)


def test_good_selector_forms() -> None:
    got = parse_selector("{ namespace = 'x', job=~`a.*`, pod!=\"p\\\"q\", }")
    assert got == (Matcher("namespace", "=", "x"), Matcher("job", "=~", "a.*"),
                   Matcher("pod", "!=", 'p"q'))
    assert parse_selector("") == ()
    assert parse_selector("{}") == ()


def test_selector_goes_into_every_query() -> None:
    profile = Profile(selector=parse_selector('{namespace="x", job="y"}'))
    for sq in profile.queries(300):
        if sq.key.startswith("cluster"):
            # the API server's series carry none of the controller's labels
            assert 'namespace="x"' not in sq.promql, sq.signal
            assert 'job="y"' not in sq.promql, sq.signal
        else:
            assert sq.promql.count('namespace="x", job="y"') >= 1, sq.signal
        # a 300 s range, or the idle-depth subquery (at least 20 minutes, every 15 s)
        assert "[300s]" in sq.promql or (sq.signal == "depth_while_idle"
                                         and "[1200s:15s]" in sq.promql), sq.signal
    gauges = {sq.signal: sq.promql for sq in profile.queries(300)}
    assert "rate(" not in gauges["unfinished_work_growth"]
    assert "deriv(" in gauges[ "unfinished_work_growth"]
    assert "max_over_time(" in gauges["longest_running_s"]
    assert gauges["queue_wait_buckets"].startswith("sum by (name, le)")


def test_api_server_queries_keep_only_cluster_matchers() -> None:
    profile = Profile(selector=parse_selector('{cluster="east", namespace="x"}'),
                      cluster_labels=("cluster",), priority_level="ops", flow_schema="my-op")
    cluster = [sq for sq in profile.queries(300) if sq.key.startswith("cluster")]
    assert len(cluster) == 9
    for sq in cluster:
        assert 'cluster="east"' in sq.promql, sq.signal
        assert 'namespace="x"' not in sq.promql, sq.signal
        if sq.signal.startswith("apf_"):
            assert 'priority_level="ops"' in sq.promql, sq.signal
            assert "by (cluster, priority_level" in sq.promql, sq.signal
    by = {sq.signal: sq.promql for sq in cluster}
    assert 'flow_schema="my-op"' in by["apf_wait_mean_s"]
    assert 'execute="true"' in by["apf_wait_mean_s"]
    # the limit is the one query that falls back across the 1.37 removal
    assert by["apf_seat_limit"].count(" or ") == 2
    assert "request_concurrency_limit" in by["apf_seat_limit"]


def test_format_duration() -> None:
    assert format_duration(300) == "300s"
    assert format_duration(1.5) == "1500ms"
    with pytest.raises(ConfigError):
        format_duration(0)


FULL = """
prometheus:
  url: https://mimir.example.com
  path_prefix: /prometheus
  headers: {X-Scope-OrgID: tenant-1}
  timeout: 20s
  connect_timeout: 2s
  retries: 1
profile:
  base: component-base
  selector: '{namespace="kube-system"}'
  scrape_interval: 30s
  metrics: {adds: my_adds_total}
  labels: {queue: queue, process: [pod]}
  workers: {deployment: 5}
  external_effects:
    - queue_regex: 'cloud-.*'
      query: 'sum(rate(cloud_writes_total[$window]))'
"""


def test_full_config_parses() -> None:
    cfg = parse_config(FULL)
    p = cfg.profile
    assert p.name == "component-base"
    assert not p.has_controller_metrics
    assert p.metrics.adds == "my_adds_total"
    assert p.queue_label == "queue"
    assert p.process_labels == ("pod",)
    assert p.scrape_interval_s == 30
    assert p.configured_workers("deployment") == 5
    assert p.external_effects[0].group.matches("cloud-writer")
    assert p.external_effects[0].render(60) == "sum(rate(cloud_writes_total[60s]))"
    s = connection_settings(cfg, env={})
    assert s is not None
    assert s.url == "https://mimir.example.com/prometheus"
    assert s.headers == {"X-Scope-OrgID": "tenant-1"}
    assert (s.timeout_s, s.connect_timeout_s, s.retries) == (20, 2, 1)


@pytest.mark.parametrize(("text", "fragment"), [
    ("profile: {base: kubebuilder}", "profile.base"),
    ("profile: {metrics: {addz: x}}", "unknown key(s) addz"),
    ("profile: {workers: {a: -1}}", "workers.a"),
    ("profile: {workers: [{queues: [a]}]}", "missing 'workers'"),
    ("profile: {external_effects: [{queues: [a]}]}", "missing 'query'"),
    ("profile: {scrape_interval: soon}", "scrape_interval"),
    ("profile: {poll_periods: {cronjob: soon}}", "poll_periods.cronjob"),
    ("profile: {poll_periods: {cronjob: -5s}}", "poll_periods.cronjob"),
    ("profile: {poll_periods: [30s]}", "poll_periods"),
    ("prometheus: {url: 'ftp://x'}", "http:// or https://"),
    ("prometheus: {url: 'http://x/?a=b'}", "query string"),
    ("prometheus: {retries: -1}", "retries"),
    ("prometheus: {timeout: 0}", "timeout"),
    ("prometheus: {headers: {'bad header': x}}", "header name"),
    ("promethus: {}", "unknown key(s) promethus"),
    ("profile: [1, 2]", "expected a mapping"),
    ("a: [", "not valid YAML at line"),
])
def test_config_errors_name_the_key(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text, origin="q.yaml")
    assert fragment in str(info.value)


def test_poll_periods_take_durations_and_a_cap() -> None:
    p = parse_config("profile: {poll_periods: {cronjob: 30s, job: 1m30s}}").profile
    assert p.poll_period("cronjob") == 30.0
    assert p.poll_period("job") == 90.0
    assert p.poll_period("deployment") is None
    from collectors.config import MAX_POLL_PERIODS
    many = ", ".join(f"q{i}: 1s" for i in range(MAX_POLL_PERIODS + 1))
    with pytest.raises(ConfigError, match="at most 100,000 queues"):
        parse_config("profile: {poll_periods: {" + many + "}}")


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")


def test_precedence_flag_env_file_and_secrets(tmp_path: Path) -> None:
    cfg = parse_config("prometheus: {url: 'http://file:9090'}")
    assert connection_settings(cfg, env={}).url == "http://file:9090"  # type: ignore[union-attr]
    env = {"QUEUELENS_PROMETHEUS_URL": "http://env:9090", "QUEUELENS_PROMETHEUS_TOKEN": "sekret",
           "QUEUELENS_PROMETHEUS_HEADERS": "X-Scope-OrgID=t1"}
    s = connection_settings(cfg, env=env)
    assert s is not None
    assert s.url == "http://env:9090"
    assert s.token == "sekret"
    assert s.headers == {"X-Scope-OrgID": "t1"}
    assert "sekret" not in repr(s)
    s = connection_settings(cfg, url="http://flag:1", env=env)
    assert s is not None
    assert s.url == "http://flag:1"
    assert connection_settings(None, env={}) is None
    tok = tmp_path / "tok"
    tok.write_text("from-file\n")
    s = connection_settings(None, url="http://x:1", token_file=str(tok), env={})
    assert s is not None
    assert s.token == "from-file"


def test_userinfo_becomes_basic_auth_and_is_stripped() -> None:
    s = connection_settings(None, url="https://bob:pa%40ss@prom.example:9443/", env={})
    assert s is not None
    assert s.url == "https://prom.example:9443"
    assert (s.username, s.password) == ("bob", "pa@ss")
    assert "pa@ss" not in repr(s)
    assert "bob:" not in s.display_url


def test_token_and_basic_auth_together_is_an_error() -> None:
    with pytest.raises(ConfigError, match="use one"):
        connection_settings(None, url="http://u:p@x:1",
                            env={"QUEUELENS_PROMETHEUS_TOKEN": "t"})


def test_missing_ca_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="CA bundle"):
        connection_settings(None, url="https://x:1", ca_file=str(tmp_path / "ca.pem"), env={})


# --- issue 12: hostile URLs, headers and sizes ------------------------------------------------

SECRET = "Zq9Secr"


@pytest.mark.parametrize("url", [
    f"http://alice:{SECRET}#t@127.0.0.1:9",
    f"http://alice:{SECRET}?t@127.0.0.1:9",
    f"http://alice:{SECRET}/t@127.0.0.1:9",
    f"http://alice:{SECRET}/t#u?v@127.0.0.1:9/prometheus",
    f"https://alice:{SECRET}#t@[::1]:9",
    f"http://alice:{SECRET}[t@127.0.0.1:9",
    f"http://alice:{SECRET}@[::1",
    f"ftp://alice:{SECRET}@127.0.0.1:9",
    f"http://alice:{SECRET}@127.0.0.1:port",
    f"http://alice:{SECRET}@127.0.0.1:9/?q=1",
])
def test_a_password_never_reaches_a_message(url: str) -> None:
    """Every error a URL with credentials can raise, over every path it is read by: the
    password (and the user) are in none of the messages."""
    messages: list[str] = []
    for fn in (lambda: split_url(url), lambda: connection_settings(None, url=url, env={}),
               lambda: connection_settings(None, env={"QUEUELENS_PROMETHEUS_URL": url}),
               lambda: parse_config(f"prometheus: {{url: '{url}'}}", origin="q.yaml")):
        with pytest.raises(ConfigError) as info:
            fn()
        messages.append(str(info.value))
    messages.append(strip_credentials(url))
    for message in messages:
        assert SECRET not in message
        assert "alice" not in message


def test_a_percent_encoded_password_still_works_and_stays_out_of_messages() -> None:
    s = connection_settings(None, url=f"http://alice:{SECRET}%23%3F%2F@127.0.0.1:9", env={})
    assert s is not None
    assert s.password == f"{SECRET}#?/"
    assert s.url == "http://127.0.0.1:9"
    assert SECRET not in repr(s)


def test_strip_credentials_keeps_everything_after_the_last_at() -> None:
    assert strip_credentials("http://u:p#ss@host:9090/x?y#z") == "http://host:9090/x"
    assert strip_credentials("http://u:p@ss@host") == "http://host"
    assert strip_credentials("u:pw@host:1") == "host:1"
    assert strip_credentials("http://host:9090/prom") == "http://host:9090/prom"


def test_an_invalid_ipv6_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not a valid URL"):
        split_url("http://[::1")


@pytest.mark.parametrize("url", ["", "   "])
def test_an_empty_prometheus_url_is_an_error_not_the_demo(url: str) -> None:
    with pytest.raises(ConfigError, match="empty"):
        connection_settings(None, url=url, env={})
    # An empty environment variable is "unset", as shells export them.
    assert connection_settings(None, env={"QUEUELENS_PROMETHEUS_URL": ""}) is None


@pytest.mark.parametrize("argv", [
    ["--prometheus", ""], ["--prometheus", "http://[::1"],
    ["--prometheus", f"http://u:{SECRET}#x@127.0.0.1:9"],
    ["--prometheus", "http://127.0.0.1:9",
     "--prometheus-header", f"X-Scope-OrgID={SECRET}\r\nX: 1"],
    ["--prometheus", "http://127.0.0.1:9", "--prometheus-header", f"X-Scope-OrgID={SECRET}é😀"],
])
def test_bad_connection_input_on_the_command_line_exits_2_with_one_line(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from dashboard.cli import main

    assert main(["snapshot", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1
    assert "Traceback" not in captured.err
    assert SECRET not in captured.err


@pytest.mark.parametrize(("value", "problem"), [
    ("a\r\nX-Injected: 1", "line break"), ("a\nb", "line break"), ("tenänt😀", "Latin-1"),
    ("a\x00b", "control character"),
])
def test_bad_header_values_name_the_header_and_the_cause(value: str, problem: str) -> None:
    for fn in (
        lambda: parse_headers(f"X-Scope-OrgID={value}", "--prometheus-header"),
        lambda: connection_settings(None, url="http://x:1", env={
            "QUEUELENS_PROMETHEUS_HEADERS": f"X-Scope-OrgID={value}"}),
        lambda: parse_config("prometheus: {headers: {X-Scope-OrgID: " + json.dumps(value) + "}}",
                             origin="q.yaml"),
        lambda: connection_settings(None, url="http://x:1", headers={"X-Scope-OrgID": value},
                                    env={}),
        lambda: PrometheusClient(ConnectionSettings(url="http://x:1",
                                                    headers={"X-Scope-OrgID": value})),
    ):
        with pytest.raises(ConfigError) as info:
            fn()
        message = str(info.value)
        assert problem in message, message
        assert "'X-Scope-OrgID'" in message
        assert value.strip() not in message  # the value may be a secret


def test_a_bearer_token_with_a_line_break_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="bearer token") as info:
        connection_settings(None, url="http://x:1",
                            env={"QUEUELENS_PROMETHEUS_TOKEN": "abc\ndef"})
    assert "abc" not in str(info.value)


def test_max_response_bytes_default_config_env_and_caps() -> None:
    s = connection_settings(None, url="http://x:1", env={})
    assert s is not None
    assert s.max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES == 64 * 2**20
    cfg = parse_config("prometheus: {url: 'http://x:1', max_response_bytes: 200MB}")
    assert connection_settings(cfg, env={}).max_response_bytes == 200_000_000  # type: ignore[union-attr]
    env = {"QUEUELENS_PROMETHEUS_MAX_RESPONSE_BYTES": "1GiB"}
    assert connection_settings(cfg, env=env).max_response_bytes == 2**30  # type: ignore[union-attr]
    assert parse_size(4096, "x") == 4096
    assert parse_size("64 MiB", "x") == 64 * 2**20
    for bad in ("0", "100", "17GiB", "lots", True, -5, "9" * 100):
        with pytest.raises(ConfigError):
            parse_size(bad, "prometheus.max_response_bytes")


@pytest.mark.parametrize(("text", "fragment"), [
    ("prometheus: {parallelism: 10000}", "parallelism"),
    ("prometheus: {retries: 1000}", "retries"),
    ("prometheus: {timeout: 400d}", "at most 1d"),
    ("prometheus: {max_response_bytes: 1}", "max_response_bytes"),
])
def test_connection_sizes_are_capped(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        parse_config(text, origin="q.yaml")


def test_a_selector_on_the_queue_label_reaches_each_family_by_its_own_label() -> None:
    """``{name="x"}`` applies to workqueue_* as name, to controller_runtime_* (no name label)
    as controller, and not to rest_client_* (per process: the topology join picks the
    processes); other matchers go everywhere."""
    p = Profile(selector=parse_selector('{name="endpoints", namespace="ns"}'))
    by = {sq.signal: sq.promql for sq in p.queries(300)}
    assert 'workqueue_adds_total{name="endpoints", namespace="ns"}' in by["arrival_rate_per_s"]
    for signal in ("workers", "errors_per_s", "reconcile_results_per_s"):
        assert 'controller="endpoints"' in by[signal], signal
        assert "name=" not in by[signal], signal
    assert 'controller_runtime_active_workers{controller="endpoints", namespace="ns"}' in \
        by["depth_while_idle"]
    for signal in ("api_calls", "throttle_s_per_s"):
        assert "endpoints" not in by[signal]
        assert 'namespace="ns"' in by[signal]
    assert 'name="endpoints"' in p.scrape_samples_query()
    assert 'name="endpoints"' in p.topology_query(300)
    c = Profile(selector=parse_selector('{controller=~"end.*"}'))
    assert 'name=~"end.*"' in {sq.signal: sq.promql for sq in c.queries(300)}["throughput_per_s"]


def test_the_container_labels_and_cpu_metric_names_are_configurable() -> None:
    cfg = parse_config("profile:\n  labels: {pod: kubernetes_pod_name}\n  metrics:\n"
                       "    container_cpu_limit: kube_pod_container_resource_limits_cpu_cores\n"
                       "    process_cpu: my_process_cpu_seconds_total\n")
    p = cfg.profile
    assert p.container_labels == ("namespace", "kubernetes_pod_name", "container")
    queries = {sq.signal: sq.promql for sq in p.queries(300)}
    # the controllers' pod label is copied to kube-state-metrics' and cAdvisor's "pod"
    assert ('and on (pod) label_replace(count by (kubernetes_pod_name) (last_over_time('
            'workqueue_adds_total[300s])), "pod", "$1", "kubernetes_pod_name", "(.+)")'
            ) in queries["cpu_limit_cores"]
    assert "kube_pod_container_resource_limits_cpu_cores{" in queries["cpu_limit_cores"]
    assert queries["cpu_used_cores"].startswith(
        "sum by (job, instance, pod) (rate(my_process_cpu_seconds_total[300s]))")
    assert "kubernetes_pod_name" in p.topology_query(300)
    with pytest.raises(ConfigError, match=r"profile\.labels\.container"):
        parse_config("profile: {labels: {container: 'not a label'}}")
