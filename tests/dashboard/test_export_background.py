"""The dashboard's report export as a Dash background callback: progress steps, the job
function, its private store, and the signed job handles (no PID from a client is killed).

The whole flow in a real browser (progress seen, download, cancel) is in
tests/browser/test_export_browser.py."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import dash
import pytest

from collectors.cache import CachedSource
from collectors.demo import DemoSource
from dashboard.app import build_dash_app, create_app
from dashboard.context import AppContext
from dashboard.report import (
    EXPORT_POLL_MS,
    ExportProgress,
    export_manager,
    export_payload,
    export_token,
    progress_update,
    run_export,
)
from dashboard.report.export import _EXPORT_CONTEXTS, _remove_store

AT_T = 1_767_225_600.0  # 2026-01-01T00:00:00Z; the demo answers at any time
EXPORT_OUTPUT = "..export-download.data...export-status.children.."


def test_progress_update_is_bar_value_maximum_and_step_text() -> None:
    assert progress_update("rendering ingress", 3, 8) == (3, 8, "rendering ingress — 3/8 done")
    assert progress_update("reading the source", 0, 1) == (0, 1, "reading the source — 0/1 done")
    # out-of-range input never draws an overfull or negative bar
    assert progress_update("x", 9, 8)[:2] == (8, 8)
    assert progress_update("x", -1, 0)[:2] == (0, 1)


def test_html_export_reports_every_queue_analysed_then_rendered() -> None:
    names = set(DemoSource(seed=0).queue_names)
    steps: list[tuple[str, int, int]] = []
    data, status = export_payload(DemoSource(seed=0), "html", AT_T,
                                  progress=lambda label, d, n: steps.append((label, d, n)))
    assert data is not None
    assert status == f"{len(names)} queues exported."
    labels = [s[0] for s in steps]
    analysed = {lbl.removeprefix("analysing ") for lbl in labels if lbl.startswith("analysing ")}
    rendered = {lbl.removeprefix("rendering ") for lbl in labels if lbl.startswith("rendering ")}
    assert analysed == names
    assert rendered == names
    # analysis comes before rendering, and each phase counts up to its total
    assert labels.index("analysed") < labels.index("rendered")
    render_steps = [d for lbl, d, n in steps if lbl.startswith("rendering ") and n == len(names)]
    assert render_steps == list(range(len(names)))
    assert steps[-1] == ("rendered", len(names), len(names))


def test_csv_export_has_no_render_steps() -> None:
    steps: list[str] = []
    data, _ = export_payload(DemoSource(seed=0), "csv", AT_T,
                             progress=lambda label, _d, _n: steps.append(label))
    assert data is not None
    assert "analysed" in steps
    assert not [s for s in steps if s.startswith("rendering")]


def test_run_export_sends_progress_and_reads_behind_the_cache() -> None:
    cached = CachedSource(DemoSource(seed=0), ttl_s=15)
    ctx = AppContext(source=cached, at=AT_T)
    updates: list[ExportProgress] = []
    data, status = run_export(ctx, 1, "json", updates.append)
    assert status == "8 queues exported."
    assert data is not None
    payload = json.loads(data["content"])
    assert payload["time_range"]["at"] == AT_T  # the app's fixed evaluation time
    assert cached.fetches == 0  # the job does not touch the shared cache
    assert updates[0] == (0, 1, "reading the source — 0/1 done")
    assert updates[-1] == (8, 8, "analysed — 8/8 done")
    assert all(0 <= v <= m for v, m, _ in updates)


def test_run_export_without_a_click_or_source() -> None:
    updates: list[ExportProgress] = []
    data, status = run_export(AppContext(source=DemoSource(seed=0)), 0, "csv", updates.append)
    assert data is dash.no_update
    assert status == ""
    data, status = run_export(AppContext(source=None), 1, "csv", updates.append)
    assert data is dash.no_update
    assert status == "No data source is configured."
    data, status = run_export(None, 1, "csv", updates.append)  # unknown app token
    assert data is dash.no_update
    assert "reload the page" in status
    assert updates == []


def test_export_is_a_background_callback_with_progress_cancel_and_running() -> None:
    app = build_dash_app(DemoSource(seed=0))
    spec = app.callback_map[EXPORT_OUTPUT]
    background = spec["background"]
    assert [str(o) for o in background["progress"]] == [
        "export-progress.value", "export-progress.max", "export-progress-label.children"]
    assert background["cancel"] == [{"id": "export-cancel", "property": "n_clicks"}]
    assert background["interval"] == EXPORT_POLL_MS
    (listed,) = [c for c in app._callback_list if c["output"] == EXPORT_OUTPUT]
    assert listed["running"]["running"]["export-button.disabled"] is True
    assert listed["running"]["runningOff"]["export-button.disabled"] is False
    assert listed["running"]["running"]["export-cancel.disabled"] is False


def test_export_store_is_private_and_removed_by_its_owner_only() -> None:
    manager = export_manager()
    directory = Path(manager.handle.directory)
    assert directory.is_dir()
    assert directory.parent == Path(tempfile.gettempdir())
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    manager.handle.set("k", "v")
    _remove_store(manager.handle, str(directory), os.getpid() + 1)  # another process: no-op
    assert directory.is_dir()
    _remove_store(manager.handle, str(directory), os.getpid())  # what runs at exit
    assert not directory.exists()


def _layout_store(app: dash.Dash, element_id: str) -> Any:
    found: list[Any] = []

    def walk(node: Any) -> None:
        if getattr(node, "id", None) == element_id:
            found.append(node.data)
        children = getattr(node, "children", None)
        for child in children if isinstance(children, list | tuple) else [children]:
            if child is not None and not isinstance(child, str | int | float):
                walk(child)

    walk(app.layout)
    (value,) = found
    return value


def test_each_app_has_its_own_store_and_context_token() -> None:
    a, b = build_dash_app(DemoSource(seed=0)), build_dash_app(DemoSource(seed=1), at=AT_T)
    assert a._background_manager.handle.directory != b._background_manager.handle.directory
    token_a, token_b = _layout_store(a, "export-app"), _layout_store(b, "export-app")
    assert token_a != token_b
    ctx_a = a.server.extensions["queuelens"]["context"]
    ctx_b = b.server.extensions["queuelens"]["context"]
    # the one callback function Dash keeps for both apps finds each app's own context
    assert _EXPORT_CONTEXTS[token_a] is ctx_a
    assert _EXPORT_CONTEXTS[token_b] is ctx_b
    assert export_token(ctx_b) == token_b


def _export_request(query: str) -> tuple[str, dict[str, Any]]:
    body = {
        "output": EXPORT_OUTPUT,
        "outputs": [{"id": "export-download", "property": "data"},
                    {"id": "export-status", "property": "children"}],
        "inputs": [{"id": "export-button", "property": "n_clicks", "value": 1}],
        "state": [{"id": "export-format", "property": "value", "value": "csv"},
                  {"id": "export-app", "property": "data", "value": "unknown"}],
        "changedPropIds": ["export-button.n_clicks"],
    }
    return f"/_dash-update-component?{query}", body


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX process handling")
def test_forged_job_handles_do_not_kill_a_process() -> None:
    """Dash before 4.4.1 killed whatever PID a client sent as ``job``/``oldJob``; the handles
    are signed now, so a forged one is ignored (pyproject requires dash>=4.4.1)."""
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        client = create_app(DemoSource(seed=0)).test_client()
        path, body = _export_request(
            f"cacheKey=forged&job={victim.pid}&oldJob={victim.pid}")
        response = client.post(path, json=body)
        assert response.status_code in (200, 204)
        time.sleep(0.3)
        assert victim.poll() is None, "a client-supplied PID was killed"
    finally:
        victim.kill()
        victim.wait(timeout=10)
