"""The `/doctor` page over HTTP (Flask test client → Dash callback): registered, in the
navigation, the report's content for the demo, and a hostile queue name rendered as text."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import dash

from collectors.demo import DemoSource
from collectors.doctor import reading_from_exposition
from collectors.profile import Profile
from dashboard.app import build_dash_app, create_app
from models.contract import ContractReading
from models.measurements import RangeData, Snapshot
from tests.support.dash_tree import component_texts

AT = 1_800_000_000.0
HOSTILE = "<script>alert(1)</script>"
_OUTPUTS = (("doctor-report", "children"), ("doctor-summary", "children"),
            ("doctor-error", "children"))
_BODY = {
    "output": "..{}..".format("...".join(f"{i}.{p}" for i, p in _OUTPUTS)),
    "outputs": [{"id": i, "property": p} for i, p in _OUTPUTS],
    "inputs": [{"id": "doctor-run", "property": "n_clicks", "value": None}],
    "changedPropIds": [],
    "state": [],
}


def _exposition(queue: str) -> str:
    """Two scrapes (Prometheus text format, millisecond timestamps) of one controller-runtime
    queue named ``queue``."""
    esc = json.dumps(queue)[1:-1]
    lines = []
    for i, t in enumerate((AT - 60, AT)):
        ms = int(t * 1000)
        wq = f'name="{esc}",controller="{esc}",pod="op-0"'
        lines += [
            f'workqueue_adds_total{{{wq}}} {10 + i} {ms}',
            f'workqueue_depth{{{wq},priority="0"}} 1 {ms}',
            f'workqueue_retries_total{{{wq}}} 0 {ms}',
            f'workqueue_unfinished_work_seconds{{{wq}}} 0 {ms}',
            f'workqueue_longest_running_processor_seconds{{{wq}}} 0 {ms}',
            f'controller_runtime_reconcile_total{{controller="{esc}",pod="op-0",'
            f'result="success"}} {10 + i} {ms}',
            f'controller_runtime_max_concurrent_reconciles{{controller="{esc}",pod="op-0"}} 2 {ms}',
            f'rest_client_requests_total{{code="200",method="GET",pod="op-0"}} {5 + i} {ms}',
        ]
        for fam in ("workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"):
            for le in ("0.1", "1", "+Inf"):
                lines.append(f'{fam}_bucket{{{wq},le="{le}"}} {10 + i} {ms}')
            lines.append(f"{fam}_sum{{{wq}}} {1 + i} {ms}")
            lines.append(f"{fam}_count{{{wq}}} {10 + i} {ms}")
    return "\n".join(lines) + "\n"


class _ExpositionSource:
    """A source whose doctor reading is exposition text (``contract_reading``); the data
    pages' reads are not used here."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.readings = 0

    @property
    def name(self) -> str:
        return "exposition"

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        raise AssertionError("the doctor page does not read snapshots")

    def range(self, start: float, end: float, step_s: float,
              queues: Sequence[str] | None = None, signals: object = None) -> RangeData:
        raise AssertionError("the doctor page does not read ranges")

    def contract_reading(self, at: float, range_s: float) -> ContractReading:
        self.readings += 1
        return reading_from_exposition(self.text, Profile(), source=self.name, at=at,
                                       range_s=range_s)


def _callback(server: Any) -> dict[str, Any]:
    client = server.test_client()
    client.get("/")
    response = client.post("/_dash-update-component", data=json.dumps(_BODY),
                           content_type="application/json")
    assert response.status_code == 200
    payload: dict[str, Any] = response.get_json()["response"]
    return payload


def _nodes(tree: Any) -> Iterator[dict[str, Any]]:
    if isinstance(tree, dict):
        if "type" in tree and "props" in tree:
            yield tree
            yield from _nodes(tree["props"].get("children"))
        return
    if isinstance(tree, list):
        for item in tree:
            yield from _nodes(item)


def test_the_page_is_registered_and_linked() -> None:
    server = create_app(_ExpositionSource(_exposition("q")), at=AT)
    assert "/doctor" in {p["path"] for p in dash.page_registry.values()}
    client = server.test_client()
    assert client.get("/doctor").status_code == 200
    layout = json.dumps(client.get("/_dash-layout").get_json())
    assert '"href": "/doctor"' in layout


def test_the_demo_report_on_the_page() -> None:
    payload = _callback(build_dash_app(DemoSource(), at=AT).server)
    assert payload["doctor-error"]["children"] == ""
    assert payload["doctor-summary"]["children"].startswith(
        "5 processes (5 controller-runtime) with 8 queues in demo")
    texts = component_texts(payload["doctor-report"]["children"])
    assert any(t.startswith("Process pod=apps-controller-manager-0 — ") for t in texts)
    # what to fix first leads, each gap once with the places it is a gap in
    assert texts.index("What to fix first") < min(
        i for i, t in enumerate(texts) if t.startswith("Process "))
    assert any(t.startswith("controller-runtime (controller_runtime_* series") for t in texts)
    assert "metrics.RegisterRESTClientMetrics(metrics.MetricRateLimiterLatency, " \
        "metrics.MetricRequestRetry, metrics.MetricRequestLatency)" in "\n".join(texts)


def test_a_hostile_queue_name_is_text() -> None:
    source = _ExpositionSource(_exposition(HOSTILE))
    payload = _callback(create_app(source, at=AT))
    report = payload["doctor-report"]["children"]
    nodes = list(_nodes(report))
    assert nodes, "the report has content"
    types = {n["type"] for n in nodes}
    assert types <= {"Section", "H2", "Table", "Thead", "Tbody", "Tr", "Th", "Td", "Div",
                     "Details", "Summary", "Pre", "P", "Ol", "Li", "Strong", "Span"}, types
    assert all(n["namespace"] == "dash_html_components" for n in nodes)
    assert "dangerously_allow_html" not in json.dumps(report)
    texts = component_texts(report)
    assert HOSTILE in texts  # the queue list of the process: the name as one text child
    assert any(HOSTILE in t for t in texts if t != HOSTILE)  # and inside sentences
    # ten refreshes of the page cost one reading (the per-app memo)
    server = create_app(source, at=AT)
    for _ in range(3):
        _callback(server)
    assert source.readings == 2
