"""Shared test plumbing. Fixtures that start real Prometheus / Chromium live in tests/support."""

from __future__ import annotations

import os
import shutil

import pytest

# Session fixtures shared by every test directory (one backfilled Prometheus per run).
pytest_plugins: list[str] = ["tests.support.fixtures"]


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_binary(name: str, hint: str) -> str:
    """Path of a needed binary. Missing: a failure under CI=true, a skip on a dev machine."""
    path = shutil.which(name)
    if path:
        return path
    message = f"{name} is not on PATH ({hint})"
    if in_ci():
        pytest.fail(message + " — CI must not skip real-server tests")
    pytest.skip(message)
