"""Real Prometheus fixtures for the collector tests (shared ones live in tests/support)."""

from tests.support.fixtures import backfilled_prometheus, scale_prometheus

__all__ = ["backfilled_prometheus", "scale_prometheus"]
