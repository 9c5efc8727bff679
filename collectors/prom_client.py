"""The one HTTP wrapper queuelens uses to talk to a Prometheus-compatible API.

Built on :class:`prometheus_api_client.PrometheusConnect` and only its ``custom_query`` /
``custom_query_range``. What that library does not give is added around its HTTP calls, not by
re-implementing them:

* **The response envelope.** ``custom_query*`` return only ``data.result`` and drop
  ``warnings``/``infos`` (Thanos partial responses arrive as HTTP 200 + warnings), and on an
  error they raise an exception whose text is a ``bytes`` repr. A ``requests`` *response hook*
  on the library's session records each response in a thread-local, so after the call we read
  the warnings and, on errors, the JSON ``errorType``/``error`` from the real response — also
  for a 200 whose body says ``"status": "error"`` (the library then fails on the missing
  ``data`` key, which is not "not the Prometheus API").
* **Predictable failure.** urllib3's own retries are switched off (``Retry(total=0,
  read=False)``: its defaults retry 500 and read timeouts and turn a timeout into a
  ``ConnectionError`` after ~10 s). This module retries 429/502/503/504 only, a bounded number
  of times with exponential backoff and jitter, within the query's deadline; 400/422 (bad
  PromQL) are never retried. Each failure becomes a typed error from
  :mod:`collectors.errors` whose message names the URL (without credentials) and the cause.
* **One wall-clock deadline per query.** ``requests``' ``timeout`` is per socket operation
  ("not a time limit on the entire response download", requests docs, *Timeouts*): a server
  that sends valid headers and then one byte a second never trips it. So each query gets one
  deadline (``ConnectionSettings.timeout_s``, retries included, or less when the caller's
  :func:`~collectors.deadlines.deadline_scope` ends sooner), and a watchdog thread shuts the
  query's socket down when it passes (``shutdown(SHUT_RDWR)`` wakes a thread blocked in
  ``recv``; closing it from another thread would not) — the way Go's ``http.Client.Timeout``
  covers "connection time, any redirects, and reading the response body". The connection is
  found through urllib3 connection classes of our own that note which query uses them
  (:class:`collectors.deadlines.Watch`).
* **A size limit.** The session's adapter always streams and reads the body itself, refusing
  an answer whose ``Content-Length`` or whose bytes read so far exceed
  ``ConnectionSettings.max_response_bytes`` (a 200 MB answer cost 46 s and 5.3 GB of RSS
  before). Redirect bodies pass through the same adapter; at most :data:`MAX_REDIRECTS` are
  followed, and never one to another server (:class:`_SameServerSession`).
* **Query groups.** The queries of one read (:func:`query_group`) are cancelled together: the
  first failure shuts down the sockets of the others, so a hung Prometheus costs one timeout,
  not one per round of parallel queries.

Values are JSON strings; ``"NaN"``, ``"+Inf"``, ``"-Inf"`` are classified and returned as
``None`` with the reason, never as a number.
"""

from __future__ import annotations

import contextvars
import math
import random
import re
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from itertools import chain
from operator import itemgetter
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import numpy as np
import requests
import requests.adapters
from urllib3.util.retry import Retry

from collectors.config import ConnectionSettings, check_header_value
from collectors.deadlines import (
    WATCHED_POOLS,
    Deadline,
    Watch,
    current_deadline,
    current_group,
    current_watch,
)
from collectors.errors import (
    AnswerTooLarge,
    BadQuery,
    CollectorError,
    PrometheusServerError,
    PrometheusTimeout,
    PrometheusUnreachable,
    redact,
    redacted,
    register_secrets,
)

RETRY_STATUSES = frozenset({429, 502, 503, 504})
MAX_POINTS = 11_000
"""Prometheus refuses range queries with more points per series than this."""
MAX_REDIRECTS = 5
"""Redirects followed per query (requests' default is 30)."""
CHUNK_BYTES = 256 * 1024
"""Body read size: each chunk is counted against the size limit before the next is read."""
MAX_SERVER_TEXT = 300
"""Characters of server-supplied text (an ``error``, a warning, a Content-Type) kept in a
message; control characters are replaced, so an answer cannot write terminal escapes."""
MAX_WARNINGS = 20
"""Distinct warnings/infos kept per answer (a note says how many more there were)."""


# --- result types -------------------------------------------------------------------------


_FLOAT_TEXT = re.compile(r"[0-9.eE+\-NaInf,]*")
"""The characters of the Prometheus API's sample values (Go's float text: ASCII digits, a
point, an exponent, ``NaN``, ``+Inf``, ``-Inf``) and the comma :func:`check_float_texts`
joins them with. Python's ``float`` also reads ``"1_000"``, ``" 12 "`` and Arabic-Indic or
other Unicode digits, which no Prometheus writes."""


def check_float_texts(texts: Iterable[Any]) -> None:
    """ValueError unless every one of ``texts`` is written with the characters of the
    Prometheus float text (one regular-expression pass over all of them joined); ``float``
    then rejects a misplaced one (``1.2.3``, ``+-1``)."""
    if _FLOAT_TEXT.fullmatch(",".join(map(str, texts))) is None:
        raise ValueError("a sample value is not in the Prometheus float format")


def classify_value(text: Any) -> tuple[float | None, str | None]:
    """A Prometheus sample value -> (float, None) or (None, 'NaN' | '+Inf' | '-Inf')."""
    check_float_texts((text,))
    value = float(text)
    if math.isnan(value):
        return None, "NaN"
    if math.isinf(value):
        return None, "+Inf" if value > 0 else "-Inf"
    return value, None


class Sample(NamedTuple):
    """One sample of an instant answer (a tuple: thousands are made per snapshot)."""

    labels: Mapping[str, str]
    value: float | None
    special: str | None = None
    """'NaN', '+Inf' or '-Inf' when ``value`` is None."""


@dataclass(frozen=True)
class InstantResult:
    samples: list[Sample]
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RangeSeries:
    labels: Mapping[str, str]
    t: np.ndarray
    """Unix seconds of the finite points."""
    v: np.ndarray
    dropped: Mapping[str, int] = field(default_factory=dict)
    """Non-finite points left out: {'NaN': n, '+Inf': n, '-Inf': n}."""


@dataclass(frozen=True, eq=False)
class RangeResult:
    """A range answer decoded in one pass: every finite point of every series in flat arrays
    (``t``, ``v``, and ``row``: the series each point belongs to, grouped by series), so a
    caller can scatter a whole answer into a matrix in one operation; :attr:`series` gives the
    per-series view."""

    labels: Sequence[Mapping[str, str]]
    t: np.ndarray
    v: np.ndarray
    row: np.ndarray
    dropped: Sequence[Mapping[str, int]]
    """Per series: non-finite points left out, {'NaN': n, '+Inf': n, '-Inf': n}."""
    start: float
    end: float
    step_s: float
    warnings: list[str] = field(default_factory=list)

    @cached_property
    def series(self) -> list[RangeSeries]:
        bounds = np.searchsorted(self.row, np.arange(len(self.labels) + 1))
        return [RangeSeries(labels=lb, t=self.t[bounds[i]:bounds[i + 1]],
                            v=self.v[bounds[i]:bounds[i + 1]], dropped=self.dropped[i])
                for i, lb in enumerate(self.labels)]


# --- step / alignment ---------------------------------------------------------------------


def plan_range(start: float, end: float, step_s: float) -> tuple[int, int, int]:
    """Whole-second (start, end, step) with start/end aligned to the step and at most
    :data:`MAX_POINTS` points. The step only ever grows."""
    if not (math.isfinite(start) and math.isfinite(end) and math.isfinite(step_s)):
        raise ValueError("range start, end and step must be finite numbers")
    if end < start:
        raise ValueError(f"range end {end} is before start {start}")
    if step_s <= 0:
        raise ValueError(f"range step must be > 0, got {step_s}")
    step = max(1, math.ceil(step_s - 1e-9))
    while True:
        a = math.floor(start / step) * step
        b = math.ceil(end / step) * step
        if (b - a) // step + 1 <= MAX_POINTS:
            return a, b, step
        step = max(step + 1, math.ceil((b - a) / (MAX_POINTS - 1)))


class _TooLarge(Exception):
    def __init__(self, size: int, declared: bool) -> None:
        super().__init__(size)
        self.size = size
        self.declared = declared


class _TooManySeries(Exception):
    def __init__(self, count: int) -> None:
        super().__init__(count)
        self.count = count


_PHASE: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "queuelens_query_phase", default=None)


def track_phase(cell: list[str] | None) -> None:
    """Record this context's query phase in ``cell[0]`` from now on: ``query`` while the
    request is sent and answered, ``decode`` once the whole answer is in (what a read's
    deadline message names, :func:`collectors.query_pool.gather`)."""
    _PHASE.set(cell)


def _mark_phase(phase: str) -> None:
    cell = _PHASE.get()
    if cell is not None:
        cell[0] = phase


def _count_series(body: bytes, limit: int) -> None:
    """Refuse an answer of more than ``limit`` series before it is decoded: each series of a
    vector or matrix answer has exactly one ``"value":[`` or ``"values":[`` (inside a JSON
    string every quote is escaped, and label names are followed by a string, not ``[``), so
    two byte counts (C speed, no allocation: 58 MB in tens of ms) give the number of series
    that decoding would turn into Python objects. Prometheus, Thanos, Mimir and
    VictoriaMetrics write compact JSON; the per-read queue cap
    (:attr:`ConnectionSettings.max_queues`) still bounds a pretty-printed answer."""
    if limit <= 0 or len(body) < limit * 12:  # a series takes at least ~24 bytes
        return
    count = body.count(b'"value":[') + body.count(b'"values":[')
    if count > limit:
        raise _TooManySeries(count)


class _SameServerSession(requests.Session):
    """A session that follows a redirect only on the same server (scheme, host and port; or
    an upgrade from http to https of the same host on the default ports — the cases in which
    ``requests`` keeps the Authorization header). ``requests`` strips only Authorization on
    the way to another host: the configured headers (``X-Scope-OrgID``, ``X-Api-Key``…) would
    go with the request, and the other server's answer would be read as Prometheus's, so such
    a redirect is refused with a sentence instead (issue 23)."""

    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source

    def rebuild_auth(self, prepared_request: requests.PreparedRequest,
                     response: requests.Response) -> None:
        old, new = response.request.url or "", prepared_request.url or ""
        if self.should_strip_auth(old, new):  # type: ignore[no-untyped-call]
            parts = urlsplit(new)
            target = _server_text(f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}", 120)
            raise PrometheusServerError(
                f"{self.source} redirected the query to another server ({target}), and "
                "queuelens never follows a redirect to another server (the configured headers "
                "and credentials would go with it): give the final URL of the Prometheus API")
        super().rebuild_auth(prepared_request, response)  # type: ignore[no-untyped-call]


class _BoundedAdapter(requests.adapters.HTTPAdapter):
    """Streams every answer and reads the body itself, at most ``max_bytes`` of it (decoded:
    a gzip bomb counts at its real size), so the library's ``response.json()`` finds the
    content already read. Its pools make watched connections (see :class:`Watch`); SOCKS
    proxies keep urllib3's own pools and only the per-read timeout."""

    def __init__(self, max_bytes: int, max_series: int = 0, **kwargs: Any) -> None:
        self.max_bytes = max_bytes
        self.max_series = max_series
        super().__init__(**kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(WATCHED_POOLS)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):
            manager.pool_classes_by_scheme = dict(WATCHED_POOLS)
        return manager

    def send(self, request: requests.PreparedRequest, stream: bool = False,
             timeout: Any = None, verify: Any = True, cert: Any = None,
             proxies: Mapping[str, str] | None = None) -> requests.Response:
        response = super().send(request, stream=True, timeout=timeout, verify=verify,
                                cert=cert, proxies=proxies)
        if not stream:
            _read_body(response, self.max_bytes)
            _count_series(response._content or b"", self.max_series)
            _mark_phase("decode")
        return response


def _read_body(response: requests.Response, limit: int) -> None:
    """The whole body into ``response._content`` (what ``Response.content`` does, with a cap),
    checked against Content-Length before reading and against the bytes read after every
    chunk; the connection is closed (not reused) when the cap is hit."""
    watch = current_watch()
    if watch is not None:
        watch.phase = "body"
    declared = (response.headers.get("Content-Length") or "").strip()
    if declared.isdigit() and int(declared) > limit:
        response.close()
        raise _TooLarge(int(declared), declared=True)
    chunks: list[bytes] = []
    total = 0
    try:
        for chunk in response.iter_content(CHUNK_BYTES):
            total += len(chunk)
            if total > limit:
                raise _TooLarge(total, declared=False)
            chunks.append(chunk)
            if watch is not None:
                watch.received = total
    except _TooLarge:
        response.close()
        raise
    response._content = b"".join(chunks)
    response._content_consumed = True  # type: ignore[attr-defined]


def _size_text(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


def _server_text(text: object, limit: int = MAX_SERVER_TEXT) -> str:
    """Server-supplied text for a message: control characters replaced, at most ``limit``."""
    raw = str(text)
    out = "".join(c if c.isprintable() else "?" for c in raw[:limit])
    return out + "…" if len(raw) > limit else out


# --- the client ---------------------------------------------------------------------------


def _server_timeout(read_timeout_s: float) -> str:
    """Prometheus's ``timeout`` parameter: below the client's remaining time, so the server
    gives up (and says so) before the client does."""
    seconds = max(0.1, min(read_timeout_s - 0.5, read_timeout_s * 0.9))
    return f"{max(1, round(seconds * 1000))}ms"


def _root_oserror(exc: BaseException) -> BaseException | None:
    """Walk causes/contexts/args for the innermost OS-level error."""
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    found: BaseException | None = None
    while stack:
        cur = stack.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        if isinstance(cur, OSError) and not isinstance(cur, requests.RequestException):
            found = cur
        for nxt in (cur.__cause__, cur.__context__, getattr(cur, "reason", None), *cur.args):
            if isinstance(nxt, BaseException):
                stack.append(nxt)
    return found


def _is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, requests.Timeout):
        return True
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        cur = stack.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        name = type(cur).__name__
        if name in ("ReadTimeoutError", "ConnectTimeoutError") or isinstance(
            cur, TimeoutError | socket.timeout
        ):
            return True
        for nxt in (cur.__cause__, cur.__context__, getattr(cur, "reason", None), *cur.args):
            if isinstance(nxt, BaseException):
                stack.append(nxt)
    return False


def _describe_oserror(err: BaseException | None) -> str:
    if err is None:
        return "connection failed"
    if isinstance(err, ConnectionRefusedError):
        return "connection refused (is Prometheus running on that port?)"
    if isinstance(err, socket.gaierror):
        return "cannot resolve the host name"
    if isinstance(err, ssl.SSLError | ssl.CertificateError):
        return f"TLS error: {getattr(err, 'reason', None) or err.__class__.__name__}"
    if isinstance(err, ConnectionResetError):
        return "connection reset by the server"
    if isinstance(err, OSError) and err.strerror:
        return err.strerror[0].lower() + err.strerror[1:]
    return err.__class__.__name__


def _json_body(response: requests.Response | None) -> Any:
    """The decoded JSON body, or None when there is none."""
    if response is None:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def _parse_error_body(response: requests.Response | None) -> tuple[str | None, str | None]:
    """(errorType, error) from a Prometheus JSON error body, or (None, short text)."""
    if response is None:
        return None, None
    body = _json_body(response)
    if body is None:
        text = response.text.strip().replace("\n", " ")
        return None, (_server_text(text, 200) or None)
    if isinstance(body, Mapping):
        etype = body.get("errorType")
        error = body.get("error")
        return ((_server_text(etype, 60) if etype else None),
                (_server_text(error) if error else None))
    return None, None


def _retry_after(response: requests.Response | None) -> float | None:
    if response is None:
        return None
    raw = response.headers.get("Retry-After")
    try:
        value = float(raw) if raw is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) and value >= 0 else None


_FIRST, _SECOND = itemgetter(0), itemgetter(1)
_STR_ONLY = frozenset({str})


def _labels(item: Mapping[str, Any]) -> dict[str, str]:
    """A result's ``metric`` object as str -> str (TypeError when it is not an object)."""
    metric = item.get("metric") or {}
    if type(metric) is dict and set(map(type, metric.values())) <= _STR_ONLY:
        return metric  # decoded JSON: keys are str already; no copy (it is ours alone)
    if not isinstance(metric, Mapping):
        raise TypeError("metric is not an object")
    return {str(k): str(v) for k, v in metric.items()}


def _no_retry() -> Retry:
    """urllib3 must not retry: this module does (429/502/503/504 only). ``read=False`` makes a
    read timeout surface as ``requests.ReadTimeout`` instead of a ``ConnectionError``."""
    return Retry(total=0, read=False, raise_on_status=False)


class PrometheusClient:
    """A Prometheus-compatible HTTP API: instant and range queries with typed results.

    Thread-safe: one instance is shared by every query of a snapshot (run concurrently) and by
    every dashboard request. ``request_count`` counts HTTP attempts (retries included) and
    ``query_count`` logical queries.
    """

    def __init__(
        self, settings: ConnectionSettings, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        from prometheus_api_client import PrometheusConnect

        # Headers reach http.client only at send time, where a bad value reads like a
        # connection failure: check them here too (settings made in code skip the config).
        for name, value in settings.headers.items():
            check_header_value(name, value, "Prometheus headers")
        if settings.token:
            check_header_value("Authorization", f"Bearer {settings.token}",
                               "the Prometheus bearer token")
        self.settings = settings
        register_secrets(*settings.secrets())
        self._sleep = sleep
        self._local = threading.local()
        self._lock = threading.Lock()
        self.request_count = 0
        self.query_count = 0
        session = _SameServerSession(settings.display_url)
        session.trust_env = True
        session.max_redirects = MAX_REDIRECTS
        if settings.insecure_skip_verify:
            session.verify = False
        elif settings.ca_file:
            session.verify = settings.ca_file
        if settings.client_cert:
            session.cert = (
                (settings.client_cert, settings.client_key)
                if settings.client_key
                else settings.client_cert
            )
        session.hooks["response"].append(self._remember_response)
        headers = dict(settings.headers)
        if settings.token:
            headers["Authorization"] = f"Bearer {settings.token}"
        # Basic auth as UTF-8 bytes (RFC 7617's charset): requests would encode a str as
        # Latin-1 and fail on any other character at send time.
        auth = ((settings.username.encode("utf-8"), (settings.password or "").encode("utf-8"))
                if settings.username else None)
        self._conn = PrometheusConnect(
            url=settings.url,
            headers=headers or None,
            retry=_no_retry(),
            auth=auth,
            session=session,
            timeout=(settings.connect_timeout_s, settings.timeout_s),
        )
        # The library mounts its retry adapter for the URL prefix; ours replaces it (and serves
        # any redirect target), with a pool wide enough that parallel snapshot queries do not
        # wait for a connection.
        adapter = _BoundedAdapter(
            settings.max_response_bytes, settings.max_series,
            max_retries=_no_retry(),
            pool_maxsize=max(4, settings.parallelism * 2),
        )
        for prefix in ("http://", "https://", settings.url):
            session.mount(prefix, adapter)

    @property
    def source(self) -> str:
        return self.settings.display_url

    def close(self) -> None:
        self._conn.close()

    # -- hooks / bookkeeping --

    def _remember_response(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        self._local.response = response

    def _bump(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    # -- public API --

    def query(self, promql: str, at: float) -> InstantResult:
        """An instant query evaluated at ``at`` (unix seconds)."""

        def send(timeout: tuple[float, float], server_timeout: str) -> Any:
            return self._conn.custom_query(
                query=promql, params={"time": f"{at:.3f}", "timeout": server_timeout},
                timeout=timeout)

        result, warnings = self._call(send, promql)
        try:
            samples = list(self._samples(result))
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            raise self._malformed("query") from None
        return InstantResult(samples=samples, warnings=warnings)

    def query_range(self, promql: str, start: float, end: float, step_s: float) -> RangeResult:
        """A range query; the step is widened to stay under 11,000 points and start/end are
        aligned to it (stable, cacheable answers). The effective values are returned."""
        a, b, step = plan_range(start, end, step_s)

        def send(timeout: tuple[float, float], server_timeout: str) -> Any:
            return self._conn.custom_query_range(
                query=promql,
                start_time=datetime.fromtimestamp(a, UTC),
                end_time=datetime.fromtimestamp(b, UTC),
                step=str(step),
                params={"timeout": server_timeout},
                timeout=timeout,
            )

        result, warnings = self._call(send, promql)
        try:
            return self._decode_range(result or [], a, b, step, warnings)
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            raise self._malformed("range query") from None

    # -- internals --

    @staticmethod
    def _samples(result: Any) -> Iterable[Sample]:
        if not result:
            return
        if isinstance(result, list) and len(result) == 2 and not isinstance(result[0], Mapping):
            value, special = classify_value(result[1])  # scalar: [ts, "v"]
            yield Sample(labels={}, value=value, special=special)
            return
        check_float_texts(item["value"][1] for item in result if item.get("value") is not None)
        for item in result:
            raw = item.get("value")
            if raw is None:
                continue
            value = float(raw[1])
            if value - value == 0.0:  # finite (NaN and ±inf give NaN)
                yield Sample(_labels(item), value)
            else:
                yield Sample(_labels(item), *classify_value(raw[1]))

    @staticmethod
    def _decode_range(items: Any, a: float, b: float, step: float, warnings: list[str]
                      ) -> RangeResult:
        """All series of a range answer at once: one flat list of points, two ``fromiter``
        conversions, one finiteness mask (instead of a few numpy calls per series)."""
        if not isinstance(items, list):
            raise TypeError("the result is not a list")
        labels = [_labels(item) for item in items]
        values = [item.get("values") or [] for item in items]
        lens = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
        points = list(chain.from_iterable(values))
        check_float_texts(map(_SECOND, points))
        t = np.fromiter(map(float, map(_FIRST, points)), dtype=float, count=len(points))
        v = np.fromiter(map(float, map(_SECOND, points)), dtype=float, count=len(points))
        row = np.repeat(np.arange(len(values), dtype=np.int64), lens)
        finite = np.isfinite(v)
        dropped: list[Mapping[str, int]] = [{} for _ in values]
        if not finite.all():
            for kind, mask in (("NaN", np.isnan(v)), ("+Inf", np.isposinf(v)),
                               ("-Inf", np.isneginf(v))):
                for i, n in zip(*np.unique(row[mask], return_counts=True), strict=True):
                    dropped[int(i)] = {**dropped[int(i)], kind: int(n)}
            t, v, row = t[finite], v[finite], row[finite]
        return RangeResult(labels=labels, t=t, v=v, row=row, dropped=dropped, start=a, end=b,
                           step_s=step, warnings=warnings)

    def _deadline(self) -> Deadline:
        """This query's deadline: its own timeout, or the caller's scope if that ends sooner."""
        own = Deadline.after(self.settings.timeout_s)
        outer = current_deadline()
        return outer if outer is not None and outer.expires < own.expires else own

    def _call(self, send: Callable[[tuple[float, float], str], Any], promql: str
              ) -> tuple[Any, list[str]]:
        """:meth:`_attempts`, its messages and warnings without the configured secrets: a
        server or proxy may echo the token, the password or a header into its text."""
        try:
            result, warnings = self._attempts(send, promql)
        except CollectorError as exc:
            clean = redacted(exc)
            if clean is exc:
                raise
            raise clean from None
        except RecursionError:
            # The JSON decoder recurses once per level and stops at the interpreter's limit
            # (about 1,000 levels: a 10 KB answer reaches it) — that is the bound on nesting;
            # the deepest Prometheus answer nests 6 levels (envelope, data, result, series,
            # values, point).
            raise PrometheusServerError(
                f"{self.source} answered with JSON nested too deep to decode (about "
                f"{sys.getrecursionlimit():,} levels or more; a Prometheus HTTP API answer "
                "nests 6), which is not the Prometheus HTTP API: check the URL") from None
        return result, [redact(w) for w in warnings]

    def _attempts(self, send: Callable[[tuple[float, float], str], Any], promql: str
                  ) -> tuple[Any, list[str]]:
        """One logical query: attempts (retries on 429/502/503/504) under one deadline."""
        from prometheus_api_client.exceptions import PrometheusApiClientException

        self._bump("query_count")
        deadline = self._deadline()
        group = current_group()
        attempt = 0
        while True:
            attempt += 1
            remaining = deadline.remaining()
            if group is not None and group.cancelled:
                raise PrometheusTimeout(
                    f"a query to Prometheus at {self.source} was cancelled: another query of "
                    "the same read failed first")
            if remaining <= 0.0:
                raise PrometheusTimeout(
                    f"Prometheus at {self.source} was not asked: {deadline.describe()} was "
                    f"spent before this query could be sent ({deadline.note('nothing sent')})")
            self._bump("request_count")
            self._local.response = None
            timeout = (min(self.settings.connect_timeout_s, remaining), remaining)
            _mark_phase("query")
            watch = Watch(deadline, group)
            try:
                with watch:
                    result = send(timeout, _server_timeout(remaining))
            except PrometheusApiClientException:
                response: requests.Response | None = self._local.response
                status = response.status_code if response is not None else None
                if status in RETRY_STATUSES and attempt <= self.settings.retries:
                    delay = self._backoff(attempt, _retry_after(response))
                    if delay + 0.1 < deadline.remaining():
                        self._sleep(delay)
                        continue
                raise self._http_error(status, response, promql, attempt) from None
            except _TooLarge as exc:
                raise self._too_large(exc, promql) from None
            except _TooManySeries as exc:
                raise self._too_many_series(exc, promql) from None
            except requests.exceptions.JSONDecodeError:  # before RequestException: it is both
                # (and a ValueError): a body that is not JSON, or was cut off at the deadline
                if watch.fired:
                    raise self._timed_out(deadline, watch) from None
                raise self._not_the_api(self._local.response, promql) from None
            except requests.RequestException as exc:
                if watch.fired:
                    raise self._timed_out(deadline, watch) from None
                raise self._transport_error(exc, watch) from None
            except (KeyError, TypeError, ValueError):
                # The library's ``response.json()["data"]["result"]`` on a 200 it could not
                # read. A body cut off at the deadline (a read-until-close answer ends
                # "normally" when its socket is shut) is a timeout, not a malformed answer.
                if watch.fired:
                    raise self._timed_out(deadline, watch) from None
                raise self._not_the_api(self._local.response, promql) from None
            return result, self._warnings(self._local.response)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        cap = self.settings.backoff_max_s
        base = min(cap, self.settings.backoff_s * (2 ** min(attempt - 1, 30)))
        delay = base / 2 + random.uniform(0, base / 2)  # "equal jitter"
        if retry_after is not None:
            delay = max(delay, min(retry_after, cap))
        return float(delay)

    @staticmethod
    def _warnings(response: requests.Response | None) -> list[str]:
        if response is None:
            return []
        content = response.content
        if b'"warnings"' not in content and b'"infos"' not in content:
            return []
        body = _json_body(response)
        if not isinstance(body, Mapping):
            return []
        out: list[str] = []
        extra = 0
        for key, prefix in (("warnings", "Prometheus warning: "), ("infos", "Prometheus info: ")):
            items = body.get(key) or []
            if not isinstance(items, list):
                items = [items]
            for item in items:
                text = prefix + _server_text(item)
                if text in out:
                    continue
                if len(out) < MAX_WARNINGS:
                    out.append(text)
                else:
                    extra += 1
        if extra:
            out.append(f"Prometheus sent {extra} more warning(s) with this answer (not shown)")
        return out

    def _malformed(self, what: str) -> PrometheusServerError:
        return PrometheusServerError(
            f"Prometheus at {self.source} answered the {what} with a result that is not in the "
            "Prometheus HTTP API format (a series without labels or values, or a value that is "
            "not a number)"
        )

    def _not_the_api(self, response: requests.Response | None, promql: str) -> Exception:
        """A 200 the library could not read: an API error envelope (``"status": "error"``,
        which Prometheus-compatible proxies send with 200), else not the API at all."""
        body = _json_body(response)
        if isinstance(body, Mapping) and body.get("status") == "error":
            return self._http_error(200, response, promql, 1)
        return self._not_prometheus(response)

    def _not_prometheus(self, response: requests.Response | None) -> PrometheusServerError:
        # ``if response`` would be False for any 4xx/5xx Response (Response.__bool__ is .ok).
        kind = (response.headers.get("Content-Type", "unknown content")
                if response is not None else "nothing")
        return PrometheusServerError(
            f"{self.source} answered with {_server_text(kind.split(';')[0], 80)}, not the "
            "Prometheus HTTP API (check the URL and the path prefix)"
        )

    def _too_large(self, exc: _TooLarge, promql: str) -> AnswerTooLarge:
        limit = self.settings.max_response_bytes
        size = (f"declares {_size_text(exc.size)} (Content-Length)" if exc.declared
                else f"passed {_size_text(limit)}")
        short_q = promql if len(promql) <= 200 else promql[:200] + "…"
        return AnswerTooLarge(
            f"Prometheus at {self.source} sent an answer larger than the "
            f"{_size_text(limit)} limit (it {size}) for the query {short_q}; raise "
            "prometheus.max_response_bytes in the config file or "
            "QUEUELENS_PROMETHEUS_MAX_RESPONSE_BYTES, or read fewer series with --selector"
        )

    def _too_many_series(self, exc: _TooManySeries, promql: str) -> AnswerTooLarge:
        limit = self.settings.max_series
        short_q = promql if len(promql) <= 200 else promql[:200] + "…"
        return AnswerTooLarge(
            f"Prometheus at {self.source} answered {exc.count:,} series to one query, more "
            f"than the {limit:,} one answer may hold, so it was not decoded (the query: "
            f"{short_q}); read fewer queues — narrow the selector, e.g. --selector "
            "'{namespace=\"team-a\"}' or '{job=\"my-controller\"}' (profile.selector in the "
            "config) — or raise prometheus.max_series (QUEUELENS_PROMETHEUS_MAX_SERIES)")

    def _timed_out(self, deadline: Deadline, watch: Watch) -> PrometheusTimeout:
        if watch.cancelled:
            return PrometheusTimeout(
                f"a query to Prometheus at {self.source} was cancelled: another query of the "
                "same read failed first")
        if watch.fired_phase == "body":
            elapsed = time.monotonic() - watch.started
            phase = f"the answer was still arriving after {elapsed:.1f} s" + (
                f", {_size_text(watch.received)} of it read" if watch.received else "")
        elif watch.fired_phase == "connecting":
            phase = "connecting"
        else:
            phase = "waiting for an answer"
        return PrometheusTimeout(
            f"Prometheus at {self.source} did not answer within {deadline.describe()} "
            f"({deadline.note(phase)})"
        )

    def _http_error(
        self, status: int | None, response: requests.Response | None, promql: str, attempts: int
    ) -> Exception:
        etype, error = _parse_error_body(response)
        detail = f"{etype}: {error}" if etype else (error or "no details")
        short_q = promql if len(promql) <= 300 else promql[:300] + "…"
        if status == 200:
            if etype in ("bad_data", "execution"):
                return BadQuery(
                    f"Prometheus at {self.source} rejected the query (HTTP 200 with status "
                    f"error, {detail}); query: {short_q}")
            if etype == "timeout":
                return PrometheusTimeout(
                    f"Prometheus at {self.source} gave up on the query (server-side timeout: "
                    f"{error})")
            return PrometheusServerError(
                f"Prometheus at {self.source} answered the query with an error (HTTP 200 with "
                f"status error, {detail})")
        if status in (400, 422):
            return BadQuery(
                f"Prometheus at {self.source} rejected the query (HTTP {status}, {detail}); "
                f"query: {short_q}"
            )
        if status in (401, 403):
            return PrometheusServerError(
                f"Prometheus at {self.source} refused access (HTTP {status}): check the token, "
                "user/password or tenant header"
            )
        if status == 404:
            return PrometheusServerError(
                f"{self.source} has no Prometheus API (HTTP 404 on /api/v1): check the URL and "
                "the path prefix (Mimir serves it under /prometheus)"
            )
        if status is not None and 300 <= status < 400:
            return PrometheusServerError(
                f"{self.source} answered HTTP {status} (a redirect, and more than "
                f"{MAX_REDIRECTS} of them or one without a target): give the final URL of the "
                "Prometheus API"
            )
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        if status == 503 and etype == "timeout":
            return PrometheusTimeout(
                f"Prometheus at {self.source} gave up on the query (server-side timeout"
                f"{tries}: {error})"
            )
        return PrometheusServerError(
            f"Prometheus at {self.source} answered HTTP {status}{tries} ({detail})"
        )

    def _transport_error(self, exc: requests.RequestException, watch: Watch) -> Exception:
        if _is_timeout(exc):
            connect = isinstance(exc, requests.ConnectTimeout) or "ConnectTimeout" in repr(exc)
            if connect and self.settings.connect_timeout_s < watch.deadline.budget_s:
                return PrometheusTimeout(
                    f"Prometheus at {self.source} did not accept a connection within "
                    f"{self.settings.connect_timeout_s:g} s (prometheus.connect_timeout)")
            phase = "connecting" if connect else "waiting for an answer"
            return PrometheusTimeout(
                f"Prometheus at {self.source} did not answer within "
                f"{watch.deadline.describe()} ({watch.deadline.note(phase)})"
            )
        if isinstance(exc, requests.exceptions.TooManyRedirects):
            return PrometheusServerError(
                f"{self.source} redirected more than {MAX_REDIRECTS} times: give the final URL "
                "of the Prometheus API"
            )
        if isinstance(exc, requests.exceptions.InvalidHeader):
            return PrometheusServerError(
                f"a request to Prometheus at {self.source} could not be sent: a header value "
                "is not valid HTTP (a line break or a character outside Latin-1)"
            )
        if isinstance(exc, requests.exceptions.SSLError):
            return PrometheusUnreachable(
                f"Prometheus at {self.source} is unreachable: "
                f"{_describe_oserror(_root_oserror(exc) or ssl.SSLError('TLS handshake failed'))}"
            )
        if isinstance(exc, requests.ConnectionError | requests.exceptions.ChunkedEncodingError):
            return PrometheusUnreachable(
                f"Prometheus at {self.source} is unreachable: "
                f"{_describe_oserror(_root_oserror(exc))}"
            )
        return PrometheusUnreachable(
            f"Prometheus at {self.source} could not be queried: {exc.__class__.__name__}"
        )
