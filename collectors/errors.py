"""Typed collector errors, each with a message a person understands.

Credentials never appear in these messages. The CLI maps :class:`PrometheusUnavailable`
(and subclasses) to exit code 3 and :class:`ConfigError` to exit code 2.
"""


class CollectorError(Exception):
    """Base class: something went wrong reading metrics."""


class ConfigError(CollectorError):
    """The user's configuration (flags, env, YAML profile) is invalid."""


class PrometheusUnavailable(CollectorError):
    """Prometheus could not answer: unreachable, timed out, or a server error."""


class PrometheusUnreachable(PrometheusUnavailable):
    """Connection refused, DNS failure, TLS failure."""


class PrometheusTimeout(PrometheusUnavailable):
    """No answer within the configured timeout (client or server side)."""


class PrometheusServerError(PrometheusUnavailable):
    """5xx / 429 after bounded retries, or an answer that is not the Prometheus API."""


class BadQuery(CollectorError):
    """Prometheus rejected the PromQL (HTTP 400 bad_data / 422 execution). Never retried."""
