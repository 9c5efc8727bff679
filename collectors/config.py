"""queuelens configuration: Prometheus connection settings and metric-profile overrides.

Sources, highest precedence first: command-line flags, environment variables, the YAML file
(``--config FILE``), defaults. Every problem is a :class:`collectors.errors.ConfigError` whose
message names the file and the key. Secrets (token, password) are read from the environment or
from files and never appear in ``repr()``, messages or logs.

Environment variables::

    QUEUELENS_PROMETHEUS_URL          base URL, e.g. https://thanos.example.com (userinfo allowed,
                                      it becomes basic auth and is stripped from the URL)
    QUEUELENS_PROMETHEUS_PATH_PREFIX  e.g. /prometheus (Mimir)
    QUEUELENS_PROMETHEUS_TOKEN        bearer token
    QUEUELENS_PROMETHEUS_TOKEN_FILE   file holding the bearer token
    QUEUELENS_PROMETHEUS_USER / QUEUELENS_PROMETHEUS_PASSWORD   basic auth
    QUEUELENS_PROMETHEUS_CA           CA bundle (PEM) to verify the server certificate
    QUEUELENS_PROMETHEUS_HEADERS      extra headers, "X-Scope-OrgID=tenant-1,Other=value"
    QUEUELENS_PROMETHEUS_TIMEOUT      read timeout (30s, 2m or seconds)
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import yaml

from collectors.errors import ConfigError
from collectors.profile import (
    COMPONENT_BASE,
    CONTROLLER_RUNTIME,
    METRIC_KEYS,
    PROFILE_NAMES,
    ExternalEffects,
    MetricNames,
    Profile,
    QueueGroup,
    check_label_name,
    check_metric_name,
    parse_selector,
)
from collectors.timeparse import parse_duration
from models.errors import ModelInputError
from models.settings import AnalysisSettings

ENV_PREFIX = "QUEUELENS_PROMETHEUS_"
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")


def parse_duration_s(value: Any, where: str) -> float:
    """A YAML/env duration ('30s', '5m', '1h30m', '250ms' or a number of seconds) -> seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(f"{where}: expected a duration like 30s or 5m, got {value!r}")
    try:
        return parse_duration(str(value))
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


@dataclass(frozen=True)
class ConnectionSettings:
    """How to reach a Prometheus-compatible API. Secret fields are excluded from repr()."""

    url: str
    """Base URL without credentials, query or fragment (path prefix included)."""
    token: str | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_file: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    insecure_skip_verify: bool = False
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    connect_timeout_s: float = 3.05
    timeout_s: float = 30.0
    """Read timeout per HTTP request; Prometheus's own ``timeout`` parameter is set below it."""
    retries: int = 2
    """Extra attempts on 429/502/503/504 only."""
    backoff_s: float = 0.25
    backoff_max_s: float = 2.0
    parallelism: int = 4
    """Queries of one snapshot run concurrently on this many connections."""

    @property
    def display_url(self) -> str:
        """The URL for messages and ``Snapshot.source``: never carries credentials."""
        return self.url


@dataclass(frozen=True)
class QueuelensConfig:
    """The parsed YAML file (or defaults when there is none)."""

    profile: Profile = field(default_factory=Profile)
    prometheus: Mapping[str, Any] = field(default_factory=dict)
    """Raw, validated ``prometheus:`` section; merged with env and flags by
    :func:`connection_settings`."""
    path: str | None = None
    analysis: AnalysisSettings = field(default_factory=AnalysisSettings)
    """The ``analysis:`` section: window, range, SLO and the advisor's thresholds every
    surface uses (CLI flags override it)."""


# --- URL handling -------------------------------------------------------------------------


def split_url(url: str, where: str = "Prometheus URL") -> tuple[str, str | None, str | None]:
    """-> (url without userinfo, username, password). Rejects non-http(s), query, fragment."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{where} {strip_credentials(url)!r} must be an http:// or https:// URL with a host"
        )
    if parts.query or parts.fragment:
        raise ConfigError(
            f"{where} {strip_credentials(url)!r} must not have a query string or fragment "
            "(use the path prefix setting and the headers setting instead)"
        )
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"{where} {strip_credentials(url)!r} has an invalid port") from None
    host = parts.hostname
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    clean = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    return clean, user, password


def strip_credentials(url: str) -> str:
    """Best effort for messages: drop userinfo, query and fragment from anything URL-like."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc.rsplit("@", 1)[-1]
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        return "<invalid URL>"


# --- YAML ---------------------------------------------------------------------------------

_TOP_KEYS = {"prometheus", "profile", "analysis"}
_ANALYSIS_KEYS = {"window", "range", "slo", "slo_quantile", "thresholds"}
_PROM_KEYS = {
    "url", "path_prefix", "token_file", "username", "password_file", "ca_file", "client_cert",
    "client_key", "insecure_skip_verify", "headers", "connect_timeout", "timeout", "retries",
    "parallelism",
}
_PROFILE_KEYS = {
    "base", "selector", "scrape_interval", "metrics", "labels", "workers", "external_effects",
}
_LABEL_KEYS = {"queue", "controller", "process"}


def _unknown(section: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(str(k) for k in section if k not in allowed)
    if extra:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(extra)} (allowed: {', '.join(sorted(allowed))})"
        )


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a mapping (key: value), got {type(value).__name__}")
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: expected a non-empty string, got {value!r}")
    return value


def _positive_number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(f"{where}: expected a positive number, got {value!r}")
    if value != value or value == float("inf"):
        raise ConfigError(f"{where}: expected a finite number, got {value!r}")
    return float(value)


def _count(value: Any, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{where}: expected a whole number >= {minimum}, got {value!r}")
    return value


def _group(item: Mapping[str, Any], where: str) -> QueueGroup:
    names: tuple[str, ...] = ()
    if "queues" in item:
        raw = item["queues"]
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list) or not raw:
            raise ConfigError(f"{where}.queues: expected a list of queue names")
        names = tuple(_string(v, f"{where}.queues[{i}]") for i, v in enumerate(raw))
    pattern = None
    if "queue_regex" in item:
        pattern = _string(item["queue_regex"], f"{where}.queue_regex")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"{where}.queue_regex: invalid regular expression: {exc}") from None
    if not names and pattern is None:
        raise ConfigError(f"{where}: give 'queues' (a list) and/or 'queue_regex'")
    return QueueGroup(names=names, pattern=pattern)


def _profile(section: Mapping[str, Any], where: str) -> Profile:
    _unknown(section, _PROFILE_KEYS, where)
    base = section.get("base", CONTROLLER_RUNTIME)
    if base not in PROFILE_NAMES:
        raise ConfigError(f"{where}.base: expected one of {', '.join(PROFILE_NAMES)}, got {base!r}")
    profile = Profile(name=base)

    metrics = _mapping(section.get("metrics"), f"{where}.metrics")
    _unknown(metrics, set(METRIC_KEYS), f"{where}.metrics")
    overrides = {
        k: check_metric_name(_string(v, f"{where}.metrics.{k}"), f"{where}.metrics.{k}:")
        for k, v in metrics.items()
    }
    profile = replace(profile, metrics=replace(MetricNames(), **overrides))

    if "selector" in section:
        profile = replace(
            profile, selector=parse_selector(_string(section["selector"], f"{where}.selector"))
        )
    if "scrape_interval" in section:
        profile = replace(
            profile,
            scrape_interval_s=parse_duration_s(section["scrape_interval"],
                                               f"{where}.scrape_interval"),
        )

    labels = _mapping(section.get("labels"), f"{where}.labels")
    _unknown(labels, _LABEL_KEYS, f"{where}.labels")
    if "queue" in labels:
        profile = replace(profile, queue_label=check_label_name(
            _string(labels["queue"], f"{where}.labels.queue")))
    if "controller" in labels:
        profile = replace(profile, controller_label=check_label_name(
            _string(labels["controller"], f"{where}.labels.controller")))
    if "process" in labels:
        raw = labels["process"]
        if not isinstance(raw, list) or not raw:
            raise ConfigError(f"{where}.labels.process: expected a list of label names")
        profile = replace(profile, process_labels=tuple(
            check_label_name(_string(v, f"{where}.labels.process[{i}]"))
            for i, v in enumerate(raw)))

    workers = section.get("workers")
    if workers is not None:
        if isinstance(workers, Mapping):
            profile = replace(profile, workers={
                _string(k, f"{where}.workers key"): _positive_number(v, f"{where}.workers.{k}")
                for k, v in workers.items()
            })
        elif isinstance(workers, list):
            groups = []
            for i, item in enumerate(workers):
                w = f"{where}.workers[{i}]"
                item = _mapping(item, w)
                _unknown(item, {"queues", "queue_regex", "workers"}, w)
                if "workers" not in item:
                    raise ConfigError(f"{w}: missing 'workers' (the worker count)")
                groups.append((_group(item, w), _positive_number(item["workers"], f"{w}.workers")))
            profile = replace(profile, worker_groups=tuple(groups))
        else:
            raise ConfigError(
                f"{where}.workers: expected a mapping {{queue: count}} or a list of "
                "{queues/queue_regex, workers}"
            )

    effects = section.get("external_effects")
    if effects is not None:
        if not isinstance(effects, list):
            raise ConfigError(f"{where}.external_effects: expected a list")
        parsed = []
        for i, item in enumerate(effects):
            w = f"{where}.external_effects[{i}]"
            item = _mapping(item, w)
            _unknown(item, {"queues", "queue_regex", "query"}, w)
            if "query" not in item:
                raise ConfigError(f"{w}: missing 'query' (PromQL; $window is the rate window)")
            parsed.append(ExternalEffects(group=_group(item, w),
                                          query=_string(item["query"], f"{w}.query")))
        profile = replace(profile, external_effects=tuple(parsed))
    return profile


def _prometheus_section(section: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    _unknown(section, _PROM_KEYS, where)
    out: dict[str, Any] = {}
    for key in ("url", "path_prefix", "token_file", "username", "password_file", "ca_file",
                "client_cert", "client_key"):
        if key in section:
            out[key] = _string(section[key], f"{where}.{key}")
    if "url" in out:
        split_url(out["url"], f"{where}.url")
    if "insecure_skip_verify" in section:
        if not isinstance(section["insecure_skip_verify"], bool):
            raise ConfigError(f"{where}.insecure_skip_verify: expected true or false")
        out["insecure_skip_verify"] = section["insecure_skip_verify"]
    if "headers" in section:
        headers = _mapping(section["headers"], f"{where}.headers")
        out["headers"] = {
            _header_name(str(k), f"{where}.headers"): _string(v, f"{where}.headers.{k}")
            for k, v in headers.items()
        }
    for key in ("connect_timeout", "timeout"):
        if key in section:
            out[key] = parse_duration_s(section[key], f"{where}.{key}")
    if "retries" in section:
        out["retries"] = _count(section["retries"], f"{where}.retries", 0)
    if "parallelism" in section:
        out["parallelism"] = _count(section["parallelism"], f"{where}.parallelism", 1)
    return out


def _header_name(name: str, where: str) -> str:
    if not _HEADER_NAME.match(name):
        raise ConfigError(f"{where}: {name!r} is not a valid HTTP header name")
    return name


def parse_config(text: str, origin: str = "config") -> QueuelensConfig:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{origin}: not valid YAML{at}: {problem}") from None
    data = _mapping(data, origin)
    _unknown(data, _TOP_KEYS, origin)
    profile = _profile(_mapping(data.get("profile"), f"{origin}: profile"), f"{origin}: profile")
    prometheus = _prometheus_section(
        _mapping(data.get("prometheus"), f"{origin}: prometheus"), f"{origin}: prometheus"
    )
    analysis = _analysis(_mapping(data.get("analysis"), f"{origin}: analysis"),
                         f"{origin}: analysis")
    return QueuelensConfig(profile=profile, prometheus=prometheus, path=origin,
                           analysis=analysis)


def _analysis(section: Mapping[str, Any], where: str) -> AnalysisSettings:
    """``analysis: {window: 5m, range: 2h, slo: 1s, slo_quantile: 0.95, thresholds: {...}}``."""
    _unknown(section, _ANALYSIS_KEYS, where)
    durations = {key: parse_duration_s(section[key], f"{where}.{key}")
                 for key in ("window", "range", "slo") if key in section}
    quantile = section.get("slo_quantile")
    if quantile is not None and (isinstance(quantile, bool)
                                 or not isinstance(quantile, int | float)):
        raise ConfigError(f"{where}.slo_quantile: expected a number like 0.95, got {quantile!r}")
    try:
        return AnalysisSettings().with_overrides(
            window_s=durations.get("window"), range_s=durations.get("range"),
            slo_wait_s=durations.get("slo"),
            slo_quantile=float(quantile) if quantile is not None else None,
            thresholds=_mapping(section.get("thresholds"), f"{where}.thresholds"))
    except ModelInputError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def load_config(path: str | Path | None) -> QueuelensConfig:
    """Read and validate a YAML config file; ``None`` gives the defaults."""
    if path is None:
        return QueuelensConfig()
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {str(p)!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {str(p)!r}: {exc}") from None
    return parse_config(text, origin=str(p))


def _read_secret(path: str, what: str) -> str:
    try:
        value = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read the {what} file {path!r}: {exc.__class__.__name__}"
        ) from None
    if not value:
        raise ConfigError(f"the {what} file {path!r} is empty")
    return value


def parse_headers(text: str, where: str) -> dict[str, str]:
    """'Name=value,Other=v2' or 'Name: value' -> dict."""
    out: dict[str, str] = {}
    for item in (p for p in text.split(",") if p.strip()):
        sep = "=" if "=" in item else ":"
        name, _, value = item.partition(sep)
        name, value = name.strip(), value.strip()
        if not value:
            raise ConfigError(f"{where}: expected Name=value, got {item.strip()!r}")
        out[_header_name(name, where)] = value
    return out


def connection_settings(
    config: QueuelensConfig | None = None,
    *,
    url: str | None = None,
    token_file: str | None = None,
    ca_file: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
    env: Mapping[str, str] | None = None,
) -> ConnectionSettings | None:
    """Merge flags > env > file. ``None`` when no URL is configured anywhere."""
    env = os.environ if env is None else env
    cfg = dict((config or QueuelensConfig()).prometheus)

    def pick(flag: Any, env_key: str, cfg_key: str) -> Any:
        if flag is not None:
            return flag
        value = env.get(ENV_PREFIX + env_key)
        if value:
            return value
        return cfg.get(cfg_key)

    raw_url = pick(url, "URL", "url")
    if not raw_url:
        return None
    base, url_user, url_password = split_url(raw_url)
    prefix = pick(None, "PATH_PREFIX", "path_prefix")
    if prefix:
        if not prefix.startswith("/") or any(c in prefix for c in "?#"):
            raise ConfigError(f"path prefix {prefix!r} must start with '/' and be a plain path")
        base = base + "/" + prefix.strip("/")

    token = env.get(ENV_PREFIX + "TOKEN") or None
    tfile = token_file or env.get(ENV_PREFIX + "TOKEN_FILE") or cfg.get("token_file")
    if tfile and (token_file or not token):
        token = _read_secret(str(tfile), "bearer token")

    username = env.get(ENV_PREFIX + "USER") or cfg.get("username") or url_user
    password = env.get(ENV_PREFIX + "PASSWORD") or None
    if password is None and cfg.get("password_file"):
        password = _read_secret(cfg["password_file"], "password")
    if password is None and username == url_user:
        password = url_password
    if password is not None and not username:
        raise ConfigError("a Prometheus password is set but no user name")
    if token and username:
        raise ConfigError("both a bearer token and basic auth are configured for Prometheus; "
                          "use one")

    merged_headers: dict[str, str] = dict(cfg.get("headers", {}))
    env_headers = env.get(ENV_PREFIX + "HEADERS")
    if env_headers:
        merged_headers.update(parse_headers(env_headers, ENV_PREFIX + "HEADERS"))
    merged_headers.update(headers or {})

    ca = pick(ca_file, "CA", "ca_file")
    for path, what in ((ca, "CA bundle"), (cfg.get("client_cert"), "client certificate"),
                       (cfg.get("client_key"), "client key")):
        if path and not Path(path).is_file():
            raise ConfigError(f"the {what} file {path!r} does not exist")

    timeout = timeout_s
    if timeout is None and env.get(ENV_PREFIX + "TIMEOUT"):
        timeout = parse_duration_s(env[ENV_PREFIX + "TIMEOUT"], ENV_PREFIX + "TIMEOUT")
    if timeout is None:
        timeout = cfg.get("timeout", 30.0)
    connect = min(cfg.get("connect_timeout", 3.05), timeout)

    return ConnectionSettings(
        url=base,
        token=token,
        username=username,
        password=password,
        ca_file=ca,
        client_cert=cfg.get("client_cert"),
        client_key=cfg.get("client_key"),
        insecure_skip_verify=cfg.get("insecure_skip_verify", False),
        headers=merged_headers,
        connect_timeout_s=connect,
        timeout_s=timeout,
        retries=cfg.get("retries", 2),
        parallelism=cfg.get("parallelism", 4),
    )


__all__ = [
    "COMPONENT_BASE",
    "CONTROLLER_RUNTIME",
    "ConnectionSettings",
    "QueuelensConfig",
    "connection_settings",
    "load_config",
    "parse_config",
    "split_url",
    "strip_credentials",
]
