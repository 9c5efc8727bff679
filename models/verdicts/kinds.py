"""The verdict kinds and severities, typed (standard library only, so that the CLI's help
and :mod:`models.bindings` can name them without importing the rules).

Verdict kinds are stable identifiers (:class:`Kind`, a ``str`` enum: its members compare equal
to, and serialize as, their plain names). The rule that gives each kind, and its order of
impact, are registered in :mod:`models.verdicts.registry` (:data:`~models.verdicts.registry.
KINDS` lists them by impact; the members here are declared in that order). Severities run
from ``critical`` to ``ok`` (:data:`SEVERITIES`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

__all__ = ["KIND_WORDS", "SEVERITIES", "Kind", "Severity"]


class Kind(StrEnum):
    """Every verdict kind (the rule that gives it is registered in
    :mod:`models.verdicts.registry`)."""

    STUCK_WORKERS = "stuck_workers"
    RETRY_STORM = "retry_storm"
    BACKLOG_GROWING = "backlog_growing"
    CONTENTION = "contention"
    ADD_WORKERS = "add_workers"
    HOT_KEY = "hot_key"
    PRIORITY_STARVATION = "priority_starvation"
    REQUEUE_MISUSE = "requeue_misuse"
    LONG_PASSES = "long_passes"
    OVER_PROVISIONED = "over_provisioned"
    INSUFFICIENT_DATA = "insufficient_data"
    HEALTHY = "healthy"


KIND_WORDS: dict[str, str] = {
    Kind.STUCK_WORKERS: "stuck workers",
    Kind.RETRY_STORM: "retry storm",
    Kind.BACKLOG_GROWING: "backlog growing",
    Kind.CONTENTION: "contention",
    Kind.ADD_WORKERS: "more workers",
    Kind.HOT_KEY: "hot key",
    Kind.PRIORITY_STARVATION: "priority starvation",
    Kind.REQUEUE_MISUSE: "requeue misuse",
    Kind.LONG_PASSES: "long passes",
    Kind.OVER_PROVISIONED: "fewer workers",
    Kind.INSUFFICIENT_DATA: "too little data",
    Kind.HEALTHY: "healthy",
}
"""Each kind in the words a grid cell shows ('more workers', not ``add_workers``); the
identifier stays in JSON, CSV and the alert rules."""

Severity = Literal["critical", "warning", "info", "ok"]

SEVERITIES: tuple[Severity, ...] = ("critical", "warning", "info", "ok")
"""Severity levels, most urgent first."""
