"""The dashboard's "Export report" control: a background callback per export, bounded by
:class:`ExportJobs` (see :mod:`dashboard.report`)."""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from collectors.types import Source
from models.errors import ModelInputError
from models.settings import AnalysisSettings

if TYPE_CHECKING:
    import dash

    from dashboard.context import AppContext
from dashboard.report.model import (
    FORMATS,
    MIME_TYPES,
    Progress,
    build_report,
)
from dashboard.report.render import (
    default_filename,
    render,
)

# --------------------------------------------------------------------------------------------
# Dashboard export control
# --------------------------------------------------------------------------------------------

EXPORT_LABELS: Mapping[str, str] = {
    "html": "HTML", "md": "Markdown", "json": "JSON", "csv": "CSV",
}

EXPORT_POLL_MS = 250
"""How often the browser asks for the export's progress and result (milliseconds)."""

ExportProgress = tuple[int, int, str]
"""What the export shows while it runs: (progress bar value, bar maximum, step text)."""

_RUNNING_ON: Mapping[str, str] = {"display": "inline-flex", "gap": ".3rem",
                                  "alignItems": "center"}
_RUNNING_OFF: Mapping[str, str] = {"display": "none"}


_EXPORT_CONTEXTS: weakref.WeakValueDictionary[str, AppContext] = weakref.WeakValueDictionary()


def export_token(ctx: AppContext) -> str:
    """The opaque key the export job finds its app's context by (one per context).

    Dash registers a background callback's function under a hash of its source code and
    output ids, for every manager in the process — so with several apps in one process (the
    tests) the last app's function would run for all of them. The export callback therefore
    closes over nothing: the page sends this token (a ``dcc.Store``) and the job looks the
    context up here. A forked job process inherits the table."""
    for token, known in list(_EXPORT_CONTEXTS.items()):
        if known is ctx:
            return token
    token = secrets.token_urlsafe(16)
    _EXPORT_CONTEXTS[token] = ctx
    return token


def export_control(ctx: AppContext) -> Any:
    """Format choice (radio items), "Export report" and "Cancel" buttons, a progress bar with
    the current step (shown while an export runs) and the download target (nav bar)."""
    from dash import dcc
    from dash import html as dhtml

    return dhtml.Div(
        [
            dcc.Store(id="export-app", data=export_token(ctx)),
            dcc.RadioItems(
                id="export-format",
                options=[{"label": EXPORT_LABELS[f], "value": f} for f in FORMATS],
                value="html", inline=True, className="ql-export-format",
                inputStyle={"marginRight": ".2rem"},
                labelStyle={"marginRight": ".5rem", "fontSize": ".85rem"},
            ),
            dhtml.Button("Export report", id="export-button", n_clicks=0,
                         className="ql-export-button", title="Download a capacity "
                         "report of every queue (last 24 h)"),
            dhtml.Span(
                [dhtml.Progress(id="export-progress", value="0", max="1",
                                style={"width": "6rem"}),
                 dhtml.Span(id="export-progress-label", className="ql-export-step",
                            style={"fontSize": ".8rem"}),
                 dhtml.Button("Cancel", id="export-cancel", n_clicks=0, disabled=True,
                              className="ql-export-cancel",
                              title="Stop the running export")],
                id="export-running", role="status", style=_RUNNING_OFF,
            ),
            dhtml.Span(id="export-status", className="ql-export-status", role="status"),
            dcc.Download(id="export-download"),
        ],
        className="ql-export", style={"display": "flex", "gap": ".4rem",
                                      "alignItems": "center"},
    )


def progress_update(label: str, done: int, total: int) -> ExportProgress:
    """A report :data:`Progress` step as the export control shows it."""
    total = max(int(total), 1)
    done = min(max(int(done), 0), total)
    return done, total, f"{label} — {done}/{total} done"


def export_payload(source: Source | None, fmt: str, now: float,
                   settings: AnalysisSettings | None = None, progress: Progress | None = None
                   ) -> tuple[dict[str, Any] | None, str]:
    """(dcc.Download data, status text) of a report of ``source`` at ``now``; ``progress``
    hears each step (reading, analysing each queue, rendering each queue for HTML)."""
    from collectors.errors import CollectorError

    if fmt not in FORMATS:
        return None, f"Unknown format {fmt!r}."
    if source is None:
        return None, "No data source is configured."
    try:
        report = build_report(source, now, settings, progress=progress)
    except (CollectorError, ModelInputError) as exc:
        return None, f"Could not build the report: {exc}"
    text = render(report, fmt, progress)
    data = {"content": text, "filename": default_filename(report, fmt), "base64": False,
            "type": MIME_TYPES[fmt]}
    return data, f"{len(report.queues)} queues exported."


def run_export(ctx: AppContext | None, n_clicks: int | None, fmt: str | None,
               set_progress: Callable[[ExportProgress], None]) -> tuple[Any, str]:
    """The export button's job (runs in the background-callback process).

    It reads the source behind the app's query cache: the job runs in a forked process, where
    the cache's locks and in-flight fetches of the parent's other threads must not be
    waited on, and a report must not present stale cached data as current."""
    from dash import no_update

    from collectors.cache import CachedSource

    if not n_clicks:
        return no_update, ""
    if ctx is None:
        return no_update, "This page belongs to a dashboard that is gone: reload the page."
    source = ctx.source.source if isinstance(ctx.source, CachedSource) else ctx.source

    def progress(label: str, done: int, total: int) -> None:
        set_progress(progress_update(label, done, total))

    data, status = export_payload(source, fmt or "html", ctx.now(), ctx.settings, progress)
    return (data if data is not None else no_update), status


EXPORT_MAX_JOBS = 2
"""Export jobs one app runs at a time (each is a forked process that holds a whole report:
~180 MB for the demo, more for a large fleet); a further click is told to wait."""
EXPORT_TIMEOUT_S = 600.0
"""Longest an export job may run (a 1,000-queue HTML report takes ~7 s on the demo)."""
MAX_EXPORT_TIMEOUT_S = 86400.0
"""The longest ``QUEUELENS_EXPORT_TIMEOUT`` accepted (1 day): a job's own alarm
(``signal.alarm``, whole seconds in a C ``unsigned int``) overflows far below ``1e300``, and
every export then died at its start without a word."""
EXPORT_ABANDON_S = 120.0
"""A job whose progress nobody asked for this long is cancelled (its tab was closed). Above
a minute: a browser polls a hidden tab as rarely as once a minute."""
EXPORT_REAP_S = 1.0
"""How often the reaper looks at the jobs while there are any."""
EXPORT_KILL_GRACE_S = 30.0
"""A job also stops itself (SIGALRM) this long after its timeout, in case the server that
would have stopped it is gone."""
EXPORT_BUSY = ("An export is already running; try again when it finishes (the server runs at "
               "most {jobs} at a time).")


def export_timeout_text(timeout_s: float) -> str:
    """What the export control says about a job stopped at its time limit."""
    return (f"The export took longer than {timeout_s:g} s and was stopped "
            "(the server's limit, QUEUELENS_EXPORT_TIMEOUT).")


@dataclass
class _ExportJob:
    process: Any
    """The job's ``multiprocess.Process`` (only ever signalled through this object, never by
    PID number: a reaped PID may belong to another process by now)."""
    key: str
    started: float
    polled: float
    finished: float | None = None


class ExportJobs:
    """The export processes of one app: a limit on how many run at once, a time limit for
    each, and a reaper, so exports cannot exhaust the server's memory or process table.

    Dash's ``DiskcacheManager`` forks one process per "Export report" POST, with no limit
    (12 POSTs: 12 processes, 2.2 GB), and waits for a finished one only when its result is
    fetched — a job nobody polls stays a zombie, a job whose tab was closed runs on. Here
    (:func:`export_manager` routes Dash's job calls through this class):

    * :meth:`start` forks only while fewer than ``max_jobs`` run; otherwise no process is
      made and the request's result is the sentence :data:`EXPORT_BUSY`, shown in the
      export control at its first poll;
    * :meth:`reap` (a daemon thread every :data:`EXPORT_REAP_S` while there are jobs) waits
      for every finished job at once (no zombies), stops a job that ran ``timeout_s``
      (its result becomes :func:`export_timeout_text`), and stops and forgets a job — running
      or finished — that nobody has polled for ``abandon_s``, deleting its stored result;
    * :meth:`terminate` and :meth:`running` know only the jobs this object started: a job
      handle is a PID, and once a finished job is reaped its PID can be reused, so nothing
      is ever killed by number (Dash's own ``terminate_job`` would kill whatever holds it).

    The limit is per app and process (``queuelens serve`` and the container run one worker
    process)."""

    def __init__(self, cache: Any, *, max_jobs: int = EXPORT_MAX_JOBS,
                 timeout_s: float = EXPORT_TIMEOUT_S, abandon_s: float = EXPORT_ABANDON_S,
                 refused: Callable[[str], Any] = lambda text: (None, text),
                 clock: Callable[[], float] = time.monotonic,
                 reap_every_s: float = EXPORT_REAP_S) -> None:
        if max_jobs < 1 or not timeout_s > 0 or not abandon_s > 0:
            raise ValueError("export limits: max_jobs >= 1, timeout_s > 0 and abandon_s > 0")
        self.cache = cache
        self.max_jobs = max_jobs
        self.timeout_s = float(timeout_s)
        self.abandon_s = float(abandon_s)
        self.refused = refused
        """text -> the callback result that shows ``text`` (set by :func:`export_manager`)."""
        self.clock = clock
        self.reap_every_s = reap_every_s
        self._lock = threading.Lock()
        self._jobs: dict[int, _ExportJob] = {}
        self._reaper: threading.Thread | None = None
        self._reaper_pid = 0

    # --- what Dash calls (through the manager) ------------------------------------------

    def start(self, key: str, target: Callable[..., None], args: tuple[Any, ...]) -> int:
        """Fork ``target(*args)`` for the result ``key``; its PID, or 0 when none was forked
        (at the limit: the result is :data:`EXPORT_BUSY`). The same key while its job runs
        (the same request sent again) gets that job's PID."""
        from multiprocess import Process

        with self._lock:
            self._reap_locked()
            running = [j for j in self._jobs.values() if j.finished is None]
            for pid, job in self._jobs.items():
                if job.key == key and job.finished is None:
                    job.polled = self.clock()
                    return pid
            if len(running) >= self.max_jobs:
                self.cache.set(key, self.refused(EXPORT_BUSY.format(jobs=self.max_jobs)),
                               expire=self.abandon_s)
                return 0
            process = Process(target=_bounded_job,
                              args=(target, args, self.timeout_s + EXPORT_KILL_GRACE_S))
            process.start()
            pid = int(process.pid)
            stale = self._jobs.pop(pid, None)  # a reaped job whose PID came round again
            if stale is not None:
                self._forget_locked(stale)
            now = self.clock()
            self._jobs[pid] = _ExportJob(process, key, started=now, polled=now)
            self._ensure_reaper_locked()
            return pid

    def touch(self, key: str | None) -> None:
        """Someone polled the result ``key``: its job is not abandoned."""
        if key is None:
            return
        with self._lock:
            for job in self._jobs.values():
                if job.key == key:
                    job.polled = self.clock()

    def running(self, handle: Any) -> bool:
        """Whether ``handle`` is the PID of a job of ours that has not finished."""
        with self._lock:
            job = self._jobs.get(_pid(handle))
            return job is not None and job.process.is_alive()

    def terminate(self, handle: Any) -> None:
        """Stop (if it runs) and forget our job with this PID; any other PID: nothing."""
        with self._lock:
            job = self._jobs.pop(_pid(handle), None)
            if job is not None:
                _stop(job.process)

    # --- the reaper ---------------------------------------------------------------------

    def reap(self) -> None:
        """Wait for finished jobs, stop timed-out and abandoned ones (see the class doc)."""
        with self._lock:
            self._reap_locked()

    def jobs(self) -> dict[int, str]:
        """PID -> "running" | "finished" of every job still known (for tests and /health)."""
        with self._lock:
            return {pid: "running" if j.finished is None else "finished"
                    for pid, j in self._jobs.items()}

    def _reap_locked(self) -> None:
        now = self.clock()
        for pid, job in list(self._jobs.items()):
            if job.finished is None and not job.process.is_alive():  # is_alive() waits for it
                job.finished = now
            abandoned = now - job.polled >= self.abandon_s
            if job.finished is None and abandoned:
                _stop(job.process)
                job.finished = now
            elif job.finished is None and now - job.started >= self.timeout_s:
                _stop(job.process)
                job.finished = now
                self.cache.set(job.key, self.refused(export_timeout_text(self.timeout_s)),
                               expire=self.abandon_s)
            if job.finished is not None and abandoned:
                del self._jobs[pid]
                self._forget_locked(job)

    def _forget_locked(self, job: _ExportJob) -> None:
        """Delete what a job left in the store (result, progress, side updates)."""
        for key in (job.key, f"{job.key}-progress", f"{job.key}-set_props"):
            self.cache.delete(key)
        with contextlib.suppress(ValueError):  # close() refuses a process that still runs
            job.process.close()

    def _ensure_reaper_locked(self) -> None:
        # a forked gunicorn worker inherits the object but not the thread
        if self._reaper is not None and self._reaper.is_alive() and self._reaper_pid == os.getpid():
            return
        self._reaper_pid = os.getpid()
        self._reaper = threading.Thread(target=self._reap_loop, name="queuelens-export-reaper",
                                        daemon=True)
        self._reaper.start()

    def _reap_loop(self) -> None:
        while True:
            time.sleep(self.reap_every_s)
            with self._lock:
                self._reap_locked()
                if not self._jobs:
                    self._reaper = None
                    return


def _pid(handle: Any) -> int:
    try:
        return int(handle)
    except (TypeError, ValueError):
        return 0


def _stop(process: Any) -> None:
    """Kill a job process of ours and its children, and wait for it (no zombie)."""
    if process.is_alive():
        try:
            import psutil

            for child in psutil.Process(process.pid).children(recursive=True):
                with contextlib.suppress(psutil.NoSuchProcess):
                    child.kill()
        except Exception:  # the job itself is killed below regardless
            pass
        process.kill()
    process.join(timeout=5)


def _bounded_job(target: Callable[..., None], args: tuple[Any, ...], limit_s: float) -> None:
    """In the job process: stop by SIGALRM after ``limit_s`` whatever happens to the server,
    then run the job."""
    import signal

    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(max(1, math.ceil(min(limit_s, MAX_EXPORT_TIMEOUT_S + EXPORT_KILL_GRACE_S))))
    target(*args)


def export_manager(*, max_jobs: int = EXPORT_MAX_JOBS, timeout_s: float = EXPORT_TIMEOUT_S,
                   abandon_s: float = EXPORT_ABANDON_S) -> Any:
    """A ``dash.DiskcacheManager`` for one app's background callbacks, its jobs run by an
    :class:`ExportJobs` (at most ``max_jobs`` at a time, each for at most ``timeout_s``,
    cancelled when not polled for ``abandon_s``; the manager's ``jobs`` attribute).

    Its store is a fresh private directory (``tempfile.mkdtemp``: mode 0700, so no other local
    user can read results or the handle-signing secret dash keeps there). The directory is
    removed at interpreter exit (dash keeps every manager for the process's lifetime) — only
    by the process that created it, never by a forked worker or job process."""
    import diskcache
    from dash import DiskcacheManager, no_update

    class _LimitedManager(DiskcacheManager):
        def __init__(self, cache: Any, jobs: ExportJobs) -> None:
            super().__init__(cache)  # type: ignore[no-untyped-call]
            self.jobs = jobs

        def call_job_fn(self, key: str, job_fn: Any, args: Any, context: Any) -> int:
            progress_key = self._make_progress_key(key)  # type: ignore[no-untyped-call]
            return self.jobs.start(key, job_fn, (key, progress_key, args, context))

        def terminate_job(self, job: Any) -> None:
            self.jobs.terminate(job)

        def terminate_unhealthy_job(self, job: Any) -> bool:
            if _pid(job) and not self.jobs.running(job):
                self.jobs.terminate(job)
                return True
            return False

        def job_running(self, job: Any) -> bool:
            return self.jobs.running(job)

        def get_progress(self, key: str) -> Any:
            self.jobs.touch(key)
            return super().get_progress(key)  # type: ignore[no-untyped-call]

        def get_result(self, key: str, job: Any) -> Any:
            self.jobs.touch(key)
            return super().get_result(key, job)  # type: ignore[no-untyped-call]

    directory = tempfile.mkdtemp(prefix="queuelens-export-")
    cache = diskcache.Cache(directory)
    jobs = ExportJobs(cache, max_jobs=max_jobs, timeout_s=timeout_s, abandon_s=abandon_s,
                      refused=lambda text: (no_update, text))
    manager = _LimitedManager(cache, jobs)
    weakref.finalize(manager, _remove_store, cache, directory, os.getpid())
    return manager


def _remove_store(cache: Any, directory: str, owner_pid: int) -> None:
    if os.getpid() != owner_pid:
        return
    try:
        cache.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def register_export_callbacks(app: dash.Dash) -> None:
    """The export button's callback: a Dash background callback (the app's
    :func:`export_manager`) that shows the per-queue progress, can be cancelled and disables
    the button while it runs. The app's context comes from :func:`export_token`."""
    from dash import Input, Output, State

    @app.callback(
        Output("export-download", "data"),
        Output("export-status", "children"),
        Input("export-button", "n_clicks"),
        State("export-format", "value"),
        State("export-app", "data"),
        background=True,
        progress=[Output("export-progress", "value"), Output("export-progress", "max"),
                  Output("export-progress-label", "children")],
        progress_default=[0, 1, ""],
        running=[(Output("export-button", "disabled"), True, False),
                 (Output("export-cancel", "disabled"), False, True),
                 (Output("export-running", "style"), _RUNNING_ON, _RUNNING_OFF)],
        cancel=[Input("export-cancel", "n_clicks")],
        interval=EXPORT_POLL_MS,
        prevent_initial_call=True,
    )
    def _export(set_progress: Callable[[ExportProgress], None], n_clicks: int | None,
                fmt: str | None, token: str | None) -> tuple[Any, str]:
        return run_export(_EXPORT_CONTEXTS.get(token or ""), n_clicks, fmt, set_progress)
