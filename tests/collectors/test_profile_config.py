"""Escaping, selector validation, YAML config and env/flag precedence."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from collectors.config import connection_settings, load_config, parse_config
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
        assert sq.promql.count('namespace="x", job="y"') >= 1, sq.signal
        # a 300 s range, or the idle-depth subquery (at least 20 minutes, every 15 s)
        assert "[300s]" in sq.promql or (sq.signal == "depth_while_idle"
                                         and "[1200s:15s]" in sq.promql), sq.signal
    gauges = {sq.signal: sq.promql for sq in profile.queries(300)}
    assert "rate(" not in gauges["unfinished_work_growth"]
    assert "deriv(" in gauges[ "unfinished_work_growth"]
    assert "max_over_time(" in gauges["longest_running_s"]
    assert gauges["queue_wait_buckets"].startswith("sum by (name, le)")


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
