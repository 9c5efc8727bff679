"""Typed collector errors, each with a message a person understands.

Credentials never appear in these messages. The CLI maps :class:`PrometheusUnavailable`
(and subclasses) and :class:`BadQuery` (and subclasses) to exit code 3 and
:class:`ConfigError` to exit code 2.
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
    """No answer within the configured timeout (client or server side), or within the
    overall budget of a command or page refresh (:func:`collectors.prom_client.deadline_scope`)."""


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
