"""Typed collector errors, each with a message a person understands.

Credentials never appear in these messages (:func:`redact` removes any that a server echoed
back). The CLI maps :class:`PrometheusUnavailable` (and subclasses) and :class:`BadQuery`
(and subclasses) to exit code 3 and :class:`ConfigError` to exit code 2.
"""

import re as _re
import threading as _threading


class CollectorError(Exception):
    """Base class: something went wrong reading metrics."""


class ConfigError(CollectorError):
    """The user's configuration (flags, env, YAML profile) is invalid."""


class PrometheusUnavailable(CollectorError):
    """Prometheus could not answer: unreachable, timed out, or a server error."""


class PrometheusUnreachable(PrometheusUnavailable):
    """Connection refused, DNS failure, TLS failure."""


class PrometheusTimeout(PrometheusUnavailable):
    """No answer within the configured timeout (client or server side), or within the
    overall budget of a command or page refresh (:func:`collectors.deadlines.deadline_scope`)."""


class PrometheusServerError(PrometheusUnavailable):
    """5xx / 429 after bounded retries, or an answer that is not the Prometheus API."""


class BadQuery(CollectorError):
    """Prometheus rejected the PromQL (HTTP 400 bad_data / 422 execution). Never retried."""


class AnswerTooLarge(BadQuery):
    """An answer was larger than ``prometheus.max_response_bytes``.

    A :class:`BadQuery`, not a :class:`PrometheusUnavailable`: the same query gets the same
    answer again, so it is never retried, never hidden behind stale data by the dashboard's
    cache (only the user can fix it: raise the limit or narrow the selector), and the CLI
    exits 3 with the sentence, as for a rejected query."""


# --- redaction of configured secrets ------------------------------------------------------

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 4
"""Shorter configured values (a header ``X-Debug: 1``) are not redacted: replacing every
``1`` in a message would destroy it, and a secret of three characters protects nothing."""
MAX_SECRETS = 256
"""Configured secrets remembered per process (the oldest are forgotten first); a process has
one configuration, tests make many."""

_SECRETS: dict[str, None] = {}
_SECRETS_LOCK = _threading.Lock()
_PATTERN: list[_re.Pattern[str] | None] = [None]


def register_secrets(*values: str | None) -> None:
    """Remember configured secrets — the bearer token (also when read from its file), the
    basic-auth password and its ``user:password`` Base64 form, every configured header value
    — so :func:`redact` removes them from any message, whatever produced it."""
    fresh = [v for v in values if v and len(v) >= MIN_SECRET_CHARS]
    if not fresh:
        return
    with _SECRETS_LOCK:
        for value in fresh:
            _SECRETS.pop(value, None)
            _SECRETS[value] = None
        while len(_SECRETS) > MAX_SECRETS:
            del _SECRETS[next(iter(_SECRETS))]
        _PATTERN[0] = _re.compile("|".join(
            _re.escape(s) for s in sorted(_SECRETS, key=len, reverse=True)))


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by :data:`REDACTED` (the longest first,
    so a secret holding another is replaced whole). Applied where a message is built from a
    server's text (:mod:`collectors.prom_client`) and again where messages are shown (the
    CLI's error lines, ``/health`` and the stale-data banner): a token a proxy echoes into its
    error text must not reach a screen or a log."""
    pattern = _PATTERN[0]
    if pattern is None or not text:
        return text
    return pattern.sub(REDACTED, text)


def redacted(exc: CollectorError) -> CollectorError:
    """``exc`` itself when its message holds no secret, else the same kind of error with the
    message redacted (the cause and context dropped: they may quote the secret too)."""
    message = str(exc)
    clean = redact(message)
    if clean == message:
        return exc
    kind = type(exc)
    out = kind.__new__(kind)  # whatever the subclass's __init__ takes: same kind, same fields
    out.__dict__.update(exc.__dict__)
    out.args = (clean,)
    return out
