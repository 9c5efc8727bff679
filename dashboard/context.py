"""What every dashboard page gets from the app factory: the data source and settings.

Pages register their callbacks on one app with :func:`register(app, ctx)`; the context keeps
the source per app (not a module global), so tests can build several apps in one process.

Every page asks :meth:`AppContext.now` for "the time the data are read at" — the wall clock,
or the fixed evaluation time ``at`` of an app built to show one moment (``queuelens serve
--at TIME``, a backfilled Prometheus in the tests).
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import dash

from collectors.config import QueuelensConfig
from collectors.types import Source
from models.settings import AnalysisSettings

MAX_REFRESH_S = 86400.0
"""The longest live refresh period (1 day). Every page hands ``refresh_s`` to a browser
``dcc.Interval`` in milliseconds, and a browser timer longer than 2^31−1 ms (24.8 days)
overflows and fires at once, over and over (~105 callbacks a second per tab, issue 23 item 6);
a dashboard read less than daily is no longer live, so the cap sits well below that limit."""

TITLE_PREFIX = "queuelens — "
"""Every tab title starts with the app's name, then says what the tab shows."""
MAX_TITLE_CHARS = 120
"""The longest tab title (a queue name is a label value of any length; the tab shows ~30)."""


def page_title(what: str) -> str:
    """The tab title of a page: 'queuelens — fleet', 'queuelens — replicaset'.

    ``what`` may be a queue name (a hostile label value): the title is only ever set as text
    (Dash's ``document.title`` and escaped meta tags), never as HTML; it is cut to
    :data:`MAX_TITLE_CHARS`."""
    text = TITLE_PREFIX + "".join(ch if ch.isprintable() else " " for ch in what)
    return text if len(text) <= MAX_TITLE_CHARS else text[:MAX_TITLE_CHARS - 1] + "…"


def register_page(module: str, **kwargs: Any) -> None:
    """Typed wrapper of ``dash.register_page`` (Dash's own is untyped). A page's fixed tab
    title is :func:`page_title` of its lower-cased ``name`` ('queuelens — queue lab'); a
    page whose title depends on its address passes a callable ``title``."""
    if not callable(kwargs.get("title")) and "name" in kwargs:
        kwargs["title"] = page_title(str(kwargs["name"]).lower())
    dash.register_page(module, **kwargs)  # type: ignore[no-untyped-call]


def clientside_callback(app: dash.Dash, script: str, *dependencies: Any, **kwargs: Any) -> None:
    """Typed wrapper of ``app.clientside_callback`` (Dash's own is untyped): ``script`` is
    the JavaScript function, ``dependencies`` its Outputs, Inputs and States."""
    app.clientside_callback(script, *dependencies, **kwargs)  # type: ignore[no-untyped-call]


@dataclass(frozen=True)
class AppContext:
    source: Source | None
    """Where the pages read metrics; None only for an app built without any source."""
    refresh_s: float = 15.0
    """Live refresh period of the data pages (seconds)."""
    config: QueuelensConfig | None = None
    """Parsed --config file (profile, Prometheus settings), if any."""
    at: float | None = None
    """Fixed evaluation time (unix seconds) of every read; None: the wall clock."""
    settings: AnalysisSettings = field(default_factory=AnalysisSettings)
    refresh_budget_s: float | None = None
    """Wall-clock budget of one page refresh's reads (``serve --deadline``); None: the
    source's query timeout (:meth:`collectors.cache.CachedSource.deadline`)."""
    """Window, range, step, SLO and thresholds of every page (the config file's
    ``analysis:`` section and ``serve``'s flags): the same as ``advise`` and the reports."""

    @property
    def window_s(self) -> float:
        """Rate window for snapshots (seconds)."""
        return self.settings.window_s

    @property
    def slo_wait_s(self) -> float:
        """Queue-wait objective the advisor judges against on every page (seconds)."""
        return self.settings.slo_wait_s

    def refresh_budget(self) -> AbstractContextManager[object]:
        """Run a page refresh's reads under one deadline (issue 12: a snapshot and a range
        read cost one budget, not two timeouts); a no-op for a source without one."""
        scope = getattr(self.source, "deadline", None)
        if scope is None:
            return nullcontext()
        result: AbstractContextManager[object] = scope(self.refresh_budget_s)
        return result

    def now(self) -> float:
        """The time the pages read the source at: ``at`` when fixed, else ``time.time()``."""
        return time.time() if self.at is None else self.at

    @property
    def source_name(self) -> str:
        return self.source.name if self.source is not None else "none"
