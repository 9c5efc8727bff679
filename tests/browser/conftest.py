"""Browser-test fixtures (real headless Chromium): see tests/support/browser.py."""

from tests.support.browser import browser, dashboard_url

__all__ = ["browser", "dashboard_url"]
