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
    QUEUELENS_PROMETHEUS_TIMEOUT      time limit of each query, and of a whole command (30s, 2m
                                      or seconds)
    QUEUELENS_PROMETHEUS_MAX_RESPONSE_BYTES   largest answer accepted (64MiB, 200MB or bytes)
    QUEUELENS_PROMETHEUS_MAX_SERIES   most series one answer may hold (250000)
    QUEUELENS_PROMETHEUS_MAX_QUEUES   most queues one read may hold (20000)

Every value that ends up in an HTTP header (extra headers, the bearer token) is checked here,
where its origin is known, so a line break or a character outside Latin-1 is reported as the
configuration problem it is — ``requests`` would raise ``InvalidHeader`` and ``http.client`` a
``UnicodeEncodeError`` at send time, which read like a connection failure.
"""

from __future__ import annotations

import base64
import os
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import yaml

from collectors.errors import ConfigError
from collectors.profile import (
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
from models.frameworks import COMPONENT_BASE, CONTROLLER_RUNTIME
from models.settings import AnalysisSettings

ENV_PREFIX = "QUEUELENS_PROMETHEUS_"
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")

DEFAULT_MAX_RESPONSE_BYTES = 64 * 2**20
"""The largest Prometheus answer (decoded body bytes) a query accepts: 64 MiB. The biggest
answers queuelens asks for in normal use — a 10,000-queue bucket query, or a 250-queue batch of a
2 h range — are 10–20 MB; 200 MB of JSON cost 46 s and 5.3 GB of RSS to decode (issue 12)."""
MAX_TIMEOUT_S = 86400.0
"""The longest query timeout accepted (1 day): a larger one is a typo, and
``threading``/``socket`` waits overflow near 2**63 ns anyway."""
MAX_RETRIES = 10
MAX_PARALLELISM = 64
"""Caps of ``prometheus.retries`` and ``prometheus.parallelism`` (threads and connections per
read)."""
DEFAULT_MAX_SERIES = 250_000
"""Most series one answer may hold (``prometheus.max_series``): the measured 10,000-queue
fleet's largest answer is a bucket query of 110,000 series (11 buckets a queue); this is a
little over twice that. Counted in the body before it is decoded
(:mod:`collectors.prom_client`): a 100,000-series answer of 5 MB cost 107 s and 3.7 GB of
RSS to decode and model, 1.1 million series 11.4 GB (issue 23 §4)."""
DEFAULT_MAX_QUEUES = 20_000
"""Most queues one read may hold (``prometheus.max_queues``): twice the measured
10,000-queue fleet (whose reads take ~40 s on two cores; the dashboard's refresh budget is
30 s at 10,000). Counted on the topology answer before any queue is modelled."""
MAX_SERIES_RANGE = (1, 100_000_000)
"""``max_series`` and ``max_queues`` must lie in [1, 10⁸]: the caps themselves are capped."""
MAX_RESPONSE_BYTES_RANGE = (2**10, 2**34)
"""``max_response_bytes`` must lie in [1 KiB, 16 GiB]: the cap itself is capped."""
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?\s*\Z", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 10**6, "mb": 10**6, "g": 10**9,
               "gb": 10**9, "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20,
               "gib": 2**30, "tib": 2**40, "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}


MAX_SHOWN_CHARS = 80
"""Characters of a configured value quoted in a message (:func:`_shown`)."""
_EXCERPT = reprlib.Repr()
_EXCERPT.maxlevel = 2
_EXCERPT.maxtuple = _EXCERPT.maxlist = _EXCERPT.maxdict = _EXCERPT.maxset = 4
_EXCERPT.maxstring = _EXCERPT.maxother = MAX_SHOWN_CHARS
_EXCERPT.maxlong = 40


def _shown(value: Any) -> str:
    """A bounded excerpt of a configured value for a message: ``repr`` at most two levels
    deep, four items and :data:`MAX_SHOWN_CHARS` characters (``reprlib`` looks at no more than
    it prints), so a huge list or string in the config costs a short sentence."""
    return _clip(_EXCERPT.repr(value))


def _clip(text: str) -> str:
    """``text`` cut to :data:`MAX_SHOWN_CHARS` characters (an ``…`` says it was)."""
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS - 1] + "…"


def parse_size(value: Any, where: str) -> int:
    """A byte count: a whole number, or a number with a unit (``64MiB``, ``200MB``, ``1GiB``;
    ``KiB/MiB/GiB`` are powers of 1024, ``KB/MB/GB`` of 1000), within
    :data:`MAX_RESPONSE_BYTES_RANGE`."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(f"{where}: expected a size like 64MiB or a number of bytes, "
                          f"got {_shown(value)}")
    if isinstance(value, int | float):
        number, unit = float(value), ""
    else:
        m = _SIZE.match(value[:64])
        if m is None or len(value) > 64:
            raise ConfigError(f"{where}: expected a size like 64MiB, 200MB or a number of "
                              f"bytes, got {value[:64]!r}")
        number, unit = float(m.group(1)), (m.group(2) or "").lower()
    size = number * _SIZE_UNITS[unit]
    lo, hi = MAX_RESPONSE_BYTES_RANGE
    if not lo <= size <= hi:
        raise ConfigError(f"{where}: must be between 1KiB and 16GiB, got {_shown(value)}")
    return int(size)


def check_header_value(name: str, value: str, where: str) -> str:
    """``value`` if it can be sent as the value of HTTP header ``name``; else a ConfigError
    naming the header and the problem, never the value (it may be a secret).

    HTTP field values are bytes (RFC 9110 §5.5): no CR/LF (requests refuses them to stop
    header injection), no other control characters, no leading or trailing whitespace
    (requests refuses a leading one), and only Latin-1 text (``http.client`` encodes header
    values as ISO-8859-1)."""
    if "\r" in value or "\n" in value:
        problem = "contains a line break (CR or LF), which an HTTP header value cannot hold"
    elif any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in value):
        problem = "contains a control character, which an HTTP header value cannot hold"
    elif value != value.strip():
        problem = "begins or ends with whitespace, which HTTP strips or refuses"
    else:
        try:
            value.encode("latin-1")
        except UnicodeEncodeError:
            problem = ("contains a character outside Latin-1 (ISO-8859-1), which an HTTP "
                       "header value cannot carry; use ASCII (percent-encode the rest)")
        else:
            return value
    raise ConfigError(f"{where}: the value of header {_shown(name)} {problem}")


def parse_duration_s(value: Any, where: str) -> float:
    """A YAML/env duration ('30s', '5m', '1h30m', '250ms' or a number of seconds) -> seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(f"{where}: expected a duration like 30s or 5m, got {_shown(value)}")
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
    """One wall-clock deadline per query (connecting, the headers, the whole body and any
    retries: not per socket read, which is what ``requests``' own timeout is); Prometheus's
    own ``timeout`` parameter is set below it. A one-shot command's reads also share one
    deadline of this length (:func:`dashboard.source_args.source_from_args`)."""
    retries: int = 2
    """Extra attempts on 429/502/503/504 only."""
    backoff_s: float = 0.25
    backoff_max_s: float = 2.0
    parallelism: int = 4
    """Queries of one snapshot run concurrently on this many connections."""
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    """The largest answer (decoded body) accepted, checked against Content-Length and while
    the body streams in (:data:`DEFAULT_MAX_RESPONSE_BYTES`)."""
    max_series: int = DEFAULT_MAX_SERIES
    """The most series one answer may hold (:data:`DEFAULT_MAX_SERIES`)."""
    max_queues: int = DEFAULT_MAX_QUEUES
    """The most queues one read may hold (:data:`DEFAULT_MAX_QUEUES`)."""

    @property
    def display_url(self) -> str:
        """The URL for messages and ``Snapshot.source``: never carries credentials."""
        return self.url

    def secrets(self) -> tuple[str, ...]:
        """What no message may show (:func:`collectors.errors.redact`): the bearer token, the
        password, the Base64 ``user:password`` of basic auth, every extra header's value."""
        out = [self.token or "", self.password or "",
               *(v for k, v in self.headers.items() if k.lower() not in PUBLIC_HEADERS)]
        if self.username and self.password:
            out.append(base64.b64encode(
                f"{self.username}:{self.password}".encode()).decode("ascii"))
        return tuple(v for v in out if v)


PUBLIC_HEADERS = frozenset({"x-scope-orgid", "accept", "accept-encoding", "user-agent"})
"""Configured headers whose values are not secrets and are not redacted from messages: the
Mimir / Cortex / Loki tenant (a tenant ``prod`` redacted would turn a queue ``prod-x`` into
``[redacted]-x`` in every warning) and content negotiation."""


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
    """-> (url without userinfo, username, password). Rejects non-http(s), query, fragment.

    No message quotes more of the URL than :func:`strip_credentials` keeps, and none quotes
    the text of the ``ValueError`` ``urlsplit`` raises (it can hold the "port", which for
    ``http://u:p#ss@host`` is the start of the password)."""
    url = url.strip()
    shown = strip_credentials(url)
    if not url:
        raise ConfigError(f"{where} is empty: give an http:// or https:// URL, or --demo for the "
                          "embedded demo")
    _scheme, sep, rest = url.partition("://")
    if sep and "@" in rest:
        host_end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
        if "@" not in rest[:host_end]:
            raise ConfigError(
                f"{where} {_shown(shown)} has a '/', '?' or '#' before its '@': a user:password "
                "part must percent-encode them (%2F, %3F, %23; '@' in a path is %40), or give the "
                "credentials as QUEUELENS_PROMETHEUS_USER and QUEUELENS_PROMETHEUS_PASSWORD"
            )
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
    except ValueError as exc:
        problem = ("an unmatched '[' or ']': brackets only enclose an IPv6 address, write "
                   "them as %5B and %5D elsewhere" if "IPv6" in str(exc)
                   else "a character that cannot appear there")
        raise ConfigError(f"{where} {_shown(shown)} is not a valid URL ({problem})") from None
    if parts.scheme not in ("http", "https") or not hostname:
        raise ConfigError(
            f"{where} {_shown(shown)} must be an http:// or https:// URL with a host"
        )
    if parts.query or parts.fragment:
        raise ConfigError(
            f"{where} {_shown(shown)} must not have a query string or fragment "
            "(use the path prefix setting and the headers setting instead)"
        )
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"{where} {_shown(shown)} has an invalid port") from None
    host = hostname
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    clean = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    return clean, user, password


def strip_credentials(url: str) -> str:
    """For messages: ``url`` without userinfo, query and fragment. Never raises.

    The userinfo is taken to be everything between ``://`` and the *last* ``@``, not what
    ``urlsplit`` calls the authority: a password with an unencoded ``/``, ``?`` or ``#``
    (``http://u:p#ss@host``) ends the authority early, and ``urlsplit`` would keep the
    password as the host, the path or the fragment. Without ``://`` everything up to the last
    ``@`` goes too."""
    text = str(url)
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "", text
    rest = rest.rsplit("@", 1)[-1]
    for ch in "?#":
        rest = rest.split(ch, 1)[0]
    return f"{scheme}{sep}{rest}"


# --- YAML ---------------------------------------------------------------------------------

_TOP_KEYS = {"prometheus", "profile", "analysis"}
_ANALYSIS_KEYS = {"window", "range", "slo", "slo_quantile", "thresholds", "aggregate_by"}
_PROM_KEYS = {
    "url", "path_prefix", "token_file", "username", "password_file", "ca_file", "client_cert",
    "client_key", "insecure_skip_verify", "headers", "connect_timeout", "timeout", "retries",
    "parallelism", "max_response_bytes", "max_series", "max_queues",
}
_PROFILE_KEYS = {
    "base", "selector", "scrape_interval", "metrics", "labels", "workers", "external_effects",
    "apiserver", "poll_periods", "recorded_rules", "replica_label",
}
_APISERVER_KEYS = {"priority_level", "flow_schema", "cluster_labels"}
MAX_POLL_PERIODS = 100_000
"""Most queues ``profile.poll_periods`` may name (a config is user input: its sizes have a
cap; ten times the measured 10,000-queue fleet)."""
_LABEL_KEYS = {"queue", "controller", "process", "namespace", "pod", "container"}
_CONTAINER_LABEL_KEYS = ("namespace", "pod", "container")
"""``labels.namespace`` / ``.pod`` / ``.container``: the controller's series' labels that name
its namespace, pod and container (``Profile.container_labels``)."""


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
        raise ConfigError(f"{where}: expected a non-empty string, got {_shown(value)}")
    return value


def _positive_number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(f"{where}: expected a positive number, got {_shown(value)}")
    if value != value or value == float("inf"):
        raise ConfigError(f"{where}: expected a finite number, got {_shown(value)}")
    return float(value)


def _count(value: Any, where: str, minimum: int, maximum: int) -> int:
    if (isinstance(value, bool) or not isinstance(value, int)
            or not minimum <= value <= maximum):
        raise ConfigError(f"{where}: expected a whole number from {minimum} to {maximum}, "
                          f"got {_shown(value)}")
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
        raise ConfigError(f"{where}.base: expected one of {', '.join(PROFILE_NAMES)}, "
                          f"got {_shown(base)}")
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
    if any(k in labels for k in _CONTAINER_LABEL_KEYS):
        named = list(profile.container_labels)
        for j, k in enumerate(_CONTAINER_LABEL_KEYS):
            if k in labels:
                try:
                    named[j] = check_label_name(_string(labels[k], f"{where}.labels.{k}"))
                except ConfigError as exc:
                    raise ConfigError(f"{where}.labels.{k}: {exc}") from None
        profile = replace(profile, container_labels=(named[0], named[1], named[2]))

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

    if "recorded_rules" in section:
        # Read the recorded series of `queuelens rules --recording` where present (default)
        if not isinstance(section["recorded_rules"], bool):
            raise ConfigError(f"{where}.recorded_rules: expected true or false, got "
                              f"{_shown(section['recorded_rules'])}")
        profile = replace(profile, use_recorded=section["recorded_rules"])

    if section.get("replica_label") is not None:
        # An HA pair behind one query endpoint: read each series once (Profile.deduplicated)
        label = check_label_name(_string(section["replica_label"], f"{where}.replica_label"))
        profile = replace(profile, replica_label=label)

    polls = _mapping(section.get("poll_periods"), f"{where}.poll_periods")
    if len(polls) > MAX_POLL_PERIODS:
        raise ConfigError(f"{where}.poll_periods: at most {MAX_POLL_PERIODS:,} queues, got "
                          f"{len(polls):,}")
    if polls:
        profile = replace(profile, poll_periods={
            _string(k, f"{where}.poll_periods key"):
                parse_duration_s(v, f"{where}.poll_periods.{k}") for k, v in polls.items()})

    api = _mapping(section.get("apiserver"), f"{where}.apiserver")
    _unknown(api, _APISERVER_KEYS, f"{where}.apiserver")
    if "priority_level" in api:
        profile = replace(profile, priority_level=_string(
            api["priority_level"], f"{where}.apiserver.priority_level"))
    if "flow_schema" in api:
        profile = replace(profile, flow_schema=_string(
            api["flow_schema"], f"{where}.apiserver.flow_schema"))
    if "cluster_labels" in api:
        raw = api["cluster_labels"]
        if not isinstance(raw, list):
            raise ConfigError(f"{where}.apiserver.cluster_labels: expected a list of label "
                              "names (e.g. [cluster])")
        profile = replace(profile, cluster_labels=tuple(
            check_label_name(_string(v, f"{where}.apiserver.cluster_labels[{i}]"))
            for i, v in enumerate(raw)))

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
            _header_name(str(k), f"{where}.headers"): check_header_value(
                str(k), _string(v, f"{where}.headers.{k}"), f"{where}.headers")
            for k, v in headers.items()
        }
    for key in ("connect_timeout", "timeout"):
        if key in section:
            out[key] = parse_duration_s(section[key], f"{where}.{key}")
            if out[key] > MAX_TIMEOUT_S:
                raise ConfigError(f"{where}.{key}: must be at most 1d, got {_shown(section[key])}")
    if "retries" in section:
        out["retries"] = _count(section["retries"], f"{where}.retries", 0, MAX_RETRIES)
    if "parallelism" in section:
        out["parallelism"] = _count(section["parallelism"], f"{where}.parallelism", 1,
                                    MAX_PARALLELISM)
    if "max_response_bytes" in section:
        out["max_response_bytes"] = parse_size(section["max_response_bytes"],
                                               f"{where}.max_response_bytes")
    for key in ("max_series", "max_queues"):
        if key in section:
            out[key] = _count(section[key], f"{where}.{key}", *MAX_SERIES_RANGE)
    return out


CLIENT_HEADERS = frozenset({
    "content-length", "transfer-encoding", "host", "connection", "keep-alive",
    "proxy-connection", "te", "trailer", "upgrade", "expect",
})
"""Headers the HTTP client sets itself: the message framing (``Content-Length``,
``Transfer-Encoding``), the target (``Host``) and the hop-by-hop ones (RFC 9110 §7.6.1). Set
from the config they break every request — a ``Content-Length`` makes the server wait for a
body that never comes, and each query times out, blamed on Prometheus — so they are refused."""


def _header_name(name: str, where: str) -> str:
    if not _HEADER_NAME.match(name):
        raise ConfigError(f"{where}: {_shown(name)} is not a valid HTTP header name")
    if name.lower() in CLIENT_HEADERS:
        raise ConfigError(f"{where}: the header {_shown(name)} is set by the HTTP client for "
                          "each request (message framing, the host or the connection) and "
                          "cannot be configured; remove it")
    return name


class _PlainLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` without anchors and aliases (``&name`` / ``*name``).

    An alias shares one node, so nine levels of nine aliases load in 340 bytes and expand to
    9**9 strings wherever the value is walked — a repr for a message ran past 2 GB and 60 s
    (issue 23). A queuelens config never needs them, so both are refused, at their line."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            what = f"an alias (*{_clip(str(event.anchor))})"
        elif getattr(event, "anchor", None) is not None:
            what = f"an anchor (&{_clip(str(event.anchor))})"
        else:
            return super().compose_node(parent, index)
        raise yaml.composer.ComposerError(
            None, None, f"{what}: YAML anchors and aliases are not accepted in a queuelens "
            "config, write the value out", event.start_mark)


MAX_CONFIG_MESSAGE = 500
"""The longest config error message (keys and excerpts included): anything longer is cut."""


def parse_config(text: str, origin: str = "config") -> QueuelensConfig:
    try:
        return _parse_config(text, origin)
    except ConfigError as exc:
        message = str(exc)
        if len(message) <= MAX_CONFIG_MESSAGE:
            raise
        raise ConfigError(message[:MAX_CONFIG_MESSAGE - 1] + "…") from None


def _parse_config(text: str, origin: str) -> QueuelensConfig:
    try:
        data = yaml.load(text, Loader=_PlainLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{origin}: not valid YAML{at}: {_clip(str(problem))}") from None
    data = _mapping(data, origin)
    _unknown(data, _TOP_KEYS, origin)
    profile = _profile(_mapping(data.get("profile"), f"{origin}: profile"), f"{origin}: profile")
    prometheus = _prometheus_section(
        _mapping(data.get("prometheus"), f"{origin}: prometheus"), f"{origin}: prometheus"
    )
    analysis = _analysis(_mapping(data.get("analysis"), f"{origin}: analysis"),
                         f"{origin}: analysis")
    # the reads look for the recorded series by the labels `queuelens rules` kept
    profile = replace(profile, recorded_by=analysis.aggregate_by)
    return QueuelensConfig(profile=profile, prometheus=prometheus, path=origin,
                           analysis=analysis)


MAX_LABEL_LIST_CHARS = 1000
"""The longest list of aggregation labels read (a flag value or a config string): 16 labels
of 60 characters; beyond it, a mistake."""


def aggregation_labels(value: Any, where: str) -> tuple[str, ...]:
    """``analysis.aggregate_by`` / ``rules --by``: a list of label names, or one string of
    them separated by commas (``cluster,namespace,job,name``), each a Prometheus label name
    (:func:`collectors.profile.check_label_name`) and not one of the reserved ``__*`` names;
    at most :data:`models.settings.MAX_AGGREGATE_LABELS`, none repeated."""
    from models.settings import MAX_AGGREGATE_LABELS

    if isinstance(value, str):
        if len(value) > MAX_LABEL_LIST_CHARS:
            raise ConfigError(f"{where}: at most {MAX_LABEL_LIST_CHARS} characters")
        items: list[Any] = [v.strip() for v in value.split(",")]
    elif isinstance(value, list):
        items = value
    else:
        raise ConfigError(f"{where}: expected a list of label names, e.g. "
                          f"[cluster, namespace, job, name], got {_shown(value)}")
    if not items or items == [""] or len(items) > MAX_AGGREGATE_LABELS:
        raise ConfigError(f"{where}: expected 1 to {MAX_AGGREGATE_LABELS} label names, got "
                          f"{len(items) if items != [''] else 0}")
    names: list[str] = []
    for item in items:
        if not isinstance(item, str) or len(item) > MAX_LABEL_LIST_CHARS:
            raise ConfigError(f"{where}: expected label names, got {_shown(item)}")
        try:
            name = check_label_name(item)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if name.startswith("__"):
            raise ConfigError(f"{where}: {_shown(name)} is a reserved label name (names starting "
                              "with __ are Prometheus's own)")
        if name in names:
            raise ConfigError(f"{where}: {_shown(name)} is listed twice")
        names.append(name)
    return tuple(names)


def _analysis(section: Mapping[str, Any], where: str) -> AnalysisSettings:
    """``analysis: {window: 5m, range: 2h, slo: 1s, slo_quantile: 0.95, thresholds: {...},
    aggregate_by: [cluster, namespace, job, name]}``."""
    _unknown(section, _ANALYSIS_KEYS, where)
    by = (aggregation_labels(section["aggregate_by"], f"{where}.aggregate_by")
          if section.get("aggregate_by") is not None else None)
    durations = {key: parse_duration_s(section[key], f"{where}.{key}")
                 for key in ("window", "range", "slo") if key in section}
    quantile = section.get("slo_quantile")
    if quantile is not None and (isinstance(quantile, bool)
                                 or not isinstance(quantile, int | float)):
        raise ConfigError(f"{where}.slo_quantile: expected a number like 0.95, "
                          f"got {_shown(quantile)}")
    try:
        return AnalysisSettings().with_overrides(
            window_s=durations.get("window"), range_s=durations.get("range"),
            slo_wait_s=durations.get("slo"),
            slo_quantile=float(quantile) if quantile is not None else None,
            thresholds=_mapping(section.get("thresholds"), f"{where}.thresholds"),
            aggregate_by=by)
    except ModelInputError as exc:
        raise ConfigError(f"{where}: {exc}") from None


MAX_CONFIG_BYTES = 16 * 2**20
"""The largest config file read (16 MiB): twice what the largest config allowed
(:data:`MAX_POLL_PERIODS` poll periods) takes; a bigger file is a mistake, and is not read
into memory."""


def load_config(path: str | Path | None) -> QueuelensConfig:
    """Read and validate a YAML config file; ``None`` gives the defaults."""
    if path is None:
        return QueuelensConfig()
    if "\x00" in str(path):
        raise ConfigError("the config file name cannot contain a NUL byte")
    p = Path(path)
    try:
        with p.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigError(f"config file {_shown(str(p))} is larger than "
                              f"{MAX_CONFIG_BYTES // 2**20} MiB: a queuelens config is a few "
                              "kilobytes (the 100,000 poll periods it may list fit in 8 MiB)")
        text = raw.decode("utf-8")
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
        out[_header_name(name, where)] = check_header_value(name, value, where)
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
    max_response_bytes: int | None = None,
) -> ConnectionSettings | None:
    """Merge flags > env > file. ``None`` when no URL is configured anywhere; an empty URL
    given explicitly (``--prometheus ''``) is an error, not "no URL" (it used to select the
    demo silently). An empty environment variable counts as unset, as shells export them."""
    env = os.environ if env is None else env
    cfg = dict((config or QueuelensConfig()).prometheus)

    def pick(flag: Any, env_key: str, cfg_key: str) -> Any:
        if flag is not None:
            return flag
        value = env.get(ENV_PREFIX + env_key)
        if value:
            return value
        return cfg.get(cfg_key)

    if url is not None and not url.strip():
        raise ConfigError("the Prometheus URL is empty (--prometheus ''): give an http:// or "
                          "https:// URL, or --demo for the embedded demo")
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
    if token:
        try:
            check_header_value("Authorization", f"Bearer {token}", "Prometheus settings")
        except ConfigError:
            raise ConfigError(
                "the Prometheus bearer token (QUEUELENS_PROMETHEUS_TOKEN or the token file) has "
                "a line break, a control character or a character outside Latin-1 in it, which "
                "an HTTP Authorization header cannot carry") from None

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
    for name, value in merged_headers.items():
        check_header_value(_header_name(name, "Prometheus headers"), value, "Prometheus headers")

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
    if not 0 < timeout <= MAX_TIMEOUT_S:
        raise ConfigError("the Prometheus timeout (--timeout, QUEUELENS_PROMETHEUS_TIMEOUT or "
                          f"prometheus.timeout) must be above 0 and at most 1d, got {timeout:g} s")
    connect = min(cfg.get("connect_timeout", 3.05), timeout)
    limit = max_response_bytes
    if limit is None and env.get(ENV_PREFIX + "MAX_RESPONSE_BYTES"):
        limit = parse_size(env[ENV_PREFIX + "MAX_RESPONSE_BYTES"],
                           ENV_PREFIX + "MAX_RESPONSE_BYTES")
    if limit is None:
        limit = cfg.get("max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES)
    caps = {}
    for key, default in (("max_series", DEFAULT_MAX_SERIES), ("max_queues", DEFAULT_MAX_QUEUES)):
        name = ENV_PREFIX + key.upper()
        caps[key] = (_count(_env_int(env[name], name), name, *MAX_SERIES_RANGE)
                     if env.get(name) else cfg.get(key, default))

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
        max_response_bytes=limit,
        max_series=caps["max_series"],
        max_queues=caps["max_queues"],
    )


def _env_int(text: str, where: str) -> int:
    """A whole number from an environment variable: ASCII digits only (``_count`` checks
    the range)."""
    if not text.strip().isascii() or not text.strip().isdigit():
        raise ConfigError(f"{where}: expected a whole number, got {_shown(text)}")
    return int(text.strip())


__all__ = [
    "COMPONENT_BASE",
    "CONTROLLER_RUNTIME",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "ConnectionSettings",
    "QueuelensConfig",
    "check_header_value",
    "connection_settings",
    "load_config",
    "parse_config",
    "parse_size",
    "split_url",
    "strip_credentials",
]
