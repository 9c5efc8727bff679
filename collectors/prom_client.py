"""The one HTTP wrapper queuelens uses to talk to a Prometheus-compatible API.

Built on :class:`prometheus_api_client.PrometheusConnect` and only its ``custom_query`` /
``custom_query_range``. Two things that library does not give are added without re-implementing
its HTTP calls:

* **The response envelope.** ``custom_query*`` return only ``data.result`` and drop
  ``warnings``/``infos`` (Thanos partial responses arrive as HTTP 200 + warnings), and on an
  error they raise an exception whose text is a ``bytes`` repr. A ``requests`` *response hook*
  on the library's session records each response in a thread-local, so after the call we read
  the warnings and, on errors, the JSON ``errorType``/``error`` from the real response. This
  keeps the library's URL building, auth and TLS handling, and needs no subclass of private
  behaviour.
* **Predictable failure.** urllib3's own retries are switched off (``Retry(total=0,
  read=False)``: its defaults retry 500 and read timeouts and turn a timeout into a
  ``ConnectionError`` after ~10 s). This module retries 429/502/503/504 only, a bounded number
  of times with exponential backoff and jitter, within the read-timeout budget; 400/422 (bad
  PromQL) are never retried. Each failure becomes a typed error from
  :mod:`collectors.errors` whose message names the URL (without credentials) and the cause.

Values are JSON strings; ``"NaN"``, ``"+Inf"``, ``"-Inf"`` are classified and returned as
``None`` with the reason, never as a number.
"""

from __future__ import annotations

import math
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from itertools import chain
from operator import itemgetter
from typing import Any, NamedTuple

import numpy as np
import requests
from urllib3.util.retry import Retry

from collectors.config import ConnectionSettings
from collectors.errors import (
    BadQuery,
    PrometheusServerError,
    PrometheusTimeout,
    PrometheusUnreachable,
)

RETRY_STATUSES = frozenset({429, 502, 503, 504})
MAX_POINTS = 11_000
"""Prometheus refuses range queries with more points per series than this."""


# --- result types -------------------------------------------------------------------------


def classify_value(text: Any) -> tuple[float | None, str | None]:
    """A Prometheus sample value -> (float, None) or (None, 'NaN' | '+Inf' | '-Inf')."""
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


# --- the client ---------------------------------------------------------------------------


def _server_timeout(read_timeout_s: float) -> str:
    """Prometheus's ``timeout`` parameter: below the client read timeout, so the server gives
    up (and says so) before the client does."""
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


def _parse_error_body(response: requests.Response | None) -> tuple[str | None, str | None]:
    """(errorType, error) from a Prometheus JSON error body, or (None, short text)."""
    if response is None:
        return None, None
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip().replace("\n", " ")
        return None, (text[:200] + "…") if len(text) > 200 else (text or None)
    if isinstance(body, Mapping):
        etype = body.get("errorType")
        error = body.get("error")
        return (str(etype) if etype else None), (str(error) if error else None)
    return None, None


def _retry_after(response: requests.Response | None) -> float | None:
    if response is None:
        return None
    raw = response.headers.get("Retry-After")
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


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

        self.settings = settings
        self._sleep = sleep
        self._local = threading.local()
        self._lock = threading.Lock()
        self.request_count = 0
        self.query_count = 0
        session = requests.Session()
        session.trust_env = True
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
        auth = (settings.username, settings.password or "") if settings.username else None
        self._conn = PrometheusConnect(
            url=settings.url,
            headers=headers or None,
            retry=_no_retry(),
            auth=auth,
            session=session,
            timeout=(settings.connect_timeout_s, settings.timeout_s),
        )
        # The library mounts the retry adapter for the URL prefix; widen the pool so parallel
        # snapshot queries do not wait for a connection.
        adapter = requests.adapters.HTTPAdapter(
            max_retries=_no_retry(),
            pool_maxsize=max(4, settings.parallelism * 2),
        )
        session.mount(settings.url, adapter)

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
        params = {"time": f"{at:.3f}", "timeout": _server_timeout(self.settings.timeout_s)}
        result, warnings = self._call(
            lambda: self._conn.custom_query(query=promql, params=params), promql
        )
        try:
            samples = list(self._samples(result))
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            raise self._malformed("query") from None
        return InstantResult(samples=samples, warnings=warnings)

    def query_range(self, promql: str, start: float, end: float, step_s: float) -> RangeResult:
        """A range query; the step is widened to stay under 11,000 points and start/end are
        aligned to it (stable, cacheable answers). The effective values are returned."""
        a, b, step = plan_range(start, end, step_s)
        params = {"timeout": _server_timeout(self.settings.timeout_s)}
        result, warnings = self._call(
            lambda: self._conn.custom_query_range(
                query=promql,
                start_time=datetime.fromtimestamp(a, UTC),
                end_time=datetime.fromtimestamp(b, UTC),
                step=str(step),
                params=params,
            ),
            promql,
        )
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

    def _call(self, fn: Callable[[], Any], promql: str) -> tuple[Any, list[str]]:
        from prometheus_api_client.exceptions import PrometheusApiClientException

        self._bump("query_count")
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            self._bump("request_count")
            self._local.response = None
            try:
                result = fn()
            except PrometheusApiClientException:
                response: requests.Response | None = self._local.response
                status = response.status_code if response is not None else None
                if status in RETRY_STATUSES and attempt <= self.settings.retries:
                    delay = self._backoff(attempt, _retry_after(response))
                    if time.monotonic() - started + delay < self.settings.timeout_s:
                        self._sleep(delay)
                        continue
                raise self._http_error(status, response, promql, attempt) from None
            except requests.exceptions.JSONDecodeError:
                raise self._not_prometheus(self._local.response) from None
            except requests.RequestException as exc:
                raise self._transport_error(exc) from None
            except (KeyError, TypeError, ValueError):
                raise self._not_prometheus(self._local.response) from None
            return result, self._warnings(self._local.response)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        cap = self.settings.backoff_max_s
        base = min(cap, self.settings.backoff_s * (2 ** (attempt - 1)))
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
        try:
            body = response.json()
        except ValueError:
            return []
        if not isinstance(body, Mapping):
            return []
        out: list[str] = []
        for key, prefix in (("warnings", "Prometheus warning: "), ("infos", "Prometheus info: ")):
            for item in body.get(key) or []:
                text = prefix + str(item)
                if text not in out:
                    out.append(text)
        return out

    def _malformed(self, what: str) -> PrometheusServerError:
        return PrometheusServerError(
            f"Prometheus at {self.source} answered the {what} with a result that is not in the "
            "Prometheus HTTP API format (a series without labels or values, or a value that is "
            "not a number)"
        )

    def _not_prometheus(self, response: requests.Response | None) -> PrometheusServerError:
        # ``if response`` would be False for any 4xx/5xx Response (Response.__bool__ is .ok).
        kind = (response.headers.get("Content-Type", "unknown content")
                if response is not None else "nothing")
        return PrometheusServerError(
            f"{self.source} answered with {kind.split(';')[0]}, not the Prometheus HTTP API "
            "(check the URL and the path prefix)"
        )

    def _http_error(
        self, status: int | None, response: requests.Response | None, promql: str, attempts: int
    ) -> Exception:
        etype, error = _parse_error_body(response)
        detail = f"{etype}: {error}" if etype else (error or "no details")
        short_q = promql if len(promql) <= 300 else promql[:300] + "…"
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
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        if status == 503 and etype == "timeout":
            return PrometheusTimeout(
                f"Prometheus at {self.source} gave up on the query (server-side timeout"
                f"{tries}: {error})"
            )
        return PrometheusServerError(
            f"Prometheus at {self.source} answered HTTP {status}{tries} ({detail})"
        )

    def _transport_error(self, exc: requests.RequestException) -> Exception:
        if _is_timeout(exc):
            connect = isinstance(exc, requests.ConnectTimeout) or "ConnectTimeout" in repr(exc)
            limit = self.settings.connect_timeout_s if connect else self.settings.timeout_s
            phase = "connecting" if connect else "waiting for an answer"
            return PrometheusTimeout(
                f"Prometheus at {self.source} did not respond within {limit:g} s ({phase})"
            )
        if isinstance(exc, requests.exceptions.SSLError):
            return PrometheusUnreachable(
                f"Prometheus at {self.source} is unreachable: "
                f"{_describe_oserror(_root_oserror(exc) or ssl.SSLError('TLS handshake failed'))}"
            )
        if isinstance(exc, requests.ConnectionError):
            return PrometheusUnreachable(
                f"Prometheus at {self.source} is unreachable: "
                f"{_describe_oserror(_root_oserror(exc))}"
            )
        return PrometheusUnreachable(
            f"Prometheus at {self.source} could not be queried: {exc.__class__.__name__}"
        )


def group_samples(samples: Sequence[Sample], label: str) -> dict[str, Sample]:
    """Samples keyed by one label's value (the last wins on duplicates)."""
    return {s.labels.get(label, ""): s for s in samples}
