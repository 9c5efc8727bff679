"""Capacity reports (dashboard/report.py): one model, four renderings.

HTML is self-contained (plotly.js inlined once, no external script), every label value is
escaped in HTML and Markdown, JSON has a schema_version and null (never NaN), CSV has one row
per queue, and no credential of the Prometheus connection appears in any format.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import time
from collections.abc import Sequence
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from collectors.demo import DemoSource
from dashboard import figures as fg
from dashboard.plan_words import evidence_label
from dashboard.report import (
    CHART_CLASS,
    CHART_DATA_ID,
    CSV_COLUMNS,
    FORMATS,
    SCHEMA_VERSION,
    SHARED_X,
    Report,
    build_report,
    export_payload,
    md_text,
    queue_figures,
    render,
    script_json,
)
from models.measurements import QueueSnapshot, RangeData, Snapshot
from models.settings import AnalysisSettings
from tests.support.prometheus import PrometheusProcess
from tests.support.workqueue_om import AT, START, TRUTH, WINDOW_S, iter_queue_names

SCRIPT = "<script>alert(1)</script>"
QUOTE = 'a"b'
PIPE = "x|y*z_[link](http://e.test)"
FORMULA = "=HYPERLINK(\"http://e.test\")"
HOSTILE = (SCRIPT, QUOTE, PIPE, FORMULA)
AT_T = 1_700_000_000.0


class HostileSource:
    """A minimal Source whose queue names, label values and name are hostile text."""

    def __init__(self, names: Sequence[str] = HOSTILE) -> None:
        self.names = tuple(names)

    @property
    def name(self) -> str:
        return "<b>src</b>"

    def _queue(self, i: int, name: str) -> QueueSnapshot:
        if i == 1:  # nothing but an arrival rate: the capacity figures do not exist
            return QueueSnapshot(queue=name, labels={"team": SCRIPT}, arrival_rate_per_s=1.0,
                                 missing={"workers": "no max_concurrent_reconciles series",
                                          "service_mean_s": "no work duration series"})
        # queue 2 is overloaded (λ = 6 > c·μ = 4): its unstable sweep rows have no wait
        lam = 6.0 if i == 2 else 2.0
        return QueueSnapshot(
            queue=name, labels={"team": QUOTE, "pod": "p-0"}, arrival_rate_per_s=lam,
            throughput_per_s=min(lam, 4.0), service_mean_s=0.5, busy_workers=min(lam, 4) * 0.5,
            workers=2.0, utilization=min(lam, 4) * 0.25, depth_current=3.0, depth_mean=3.0,
            queue_wait_mean_s=0.2, queue_wait_p95_s=0.6, retries_per_s=0.0, errors_per_s=0.0,
        )

    def snapshot(self, at: float, window_s: float) -> Snapshot:
        return Snapshot(at=at, window_s=window_s, source=self.name,
                        queues=[self._queue(i, n) for i, n in enumerate(self.names)])

    def range(self, start: float, end: float, step_s: float,
              queues: Sequence[str] | None = None, signals: object = None) -> RangeData:
        rows = []
        t = start
        while t <= end:
            for name in queues or self.names:
                rows.append({"queue": name, "signal": "arrival_rate_per_s", "t": t, "value": 2.0})
                rows.append({"queue": name, "signal": "workers", "t": t, "value": 2.0})
                rows.append({"queue": name, "signal": "service_mean_s", "t": t, "value": 0.5})
            t += step_s
        return RangeData.from_frame(start=start, end=end, step_s=step_s, source=self.name,
                         frame=pd.DataFrame(rows))


@pytest.fixture(scope="module")
def demo_report() -> Report:
    return build_report(DemoSource(seed=0), AT_T, AnalysisSettings(range_s=6 * 3600))


@pytest.fixture(scope="module")
def demo_html(demo_report: Report) -> str:
    return render(demo_report, "html")


@pytest.fixture(scope="module")
def hostile_report() -> Report:
    return build_report(HostileSource(), AT_T, AnalysisSettings(range_s=3600))


def _strict_json(text: str) -> object:
    def no_constant(name: str) -> object:
        raise AssertionError(f"JSON contains {name}")
    return json.loads(text, parse_constant=no_constant)


class _Page(HTMLParser):
    """What a browser's HTML parser makes of a report: its script elements (attributes and
    text) and the chart placeholders (ids of ``div.ql-chart``, in document order)."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.placeholders: list[str] = []
        self._script: dict[str, str | None] | None = None
        self._text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "script":
            self._script, self._text = attributes, []
        elif tag == "div" and CHART_CLASS in (attributes.get("class") or "").split():
            self.placeholders.append(attributes.get("id") or "")

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script, "".join(self._text)))
            self._script = None

    def chart_data(self) -> dict[str, Any]:
        found = [text for attrs, text in self.scripts
                 if attrs == {"type": "application/json", "id": CHART_DATA_ID}]
        assert len(found) == 1
        doc = _strict_json(found[0])
        assert isinstance(doc, dict)
        return doc


def _resolved(doc: dict[str, Any], chart_id: str) -> dict[str, Any]:
    """A chart of the report's data as the page draws it (shared x arrays put back)."""
    chart = json.loads(json.dumps(doc["charts"][chart_id]))
    for trace in chart["data"]:
        if SHARED_X in trace:
            trace["x"] = doc["arrays"][trace.pop(SHARED_X)]
    return chart


# --- HTML ------------------------------------------------------------------------------------

def test_html_is_self_contained_with_plotly_js_once(demo_html: str) -> None:
    from plotly.offline import get_plotlyjs

    assert re.search(r"<script[^>]*\bsrc\s*=", demo_html, re.I) is None
    assert re.search(r"<link[^>]*\bhref\s*=\s*[\"']?https?:", demo_html, re.I) is None
    banner = get_plotlyjs()[:60]
    assert "plotly.js v" in banner
    assert demo_html.count(banner) == 1
    # the library is inlined before the first figure script uses it
    assert demo_html.index(banner) < demo_html.index("Plotly.newPlot")


def test_html_has_every_demo_queue_with_two_charts_and_the_context(
    demo_report: Report, demo_html: str
) -> None:
    names = DemoSource(seed=0).queue_names
    assert {q.row.queue for q in demo_report.queues} == set(names)
    for name in names:
        assert f">{name}</a>" in demo_html  # fleet summary link
        assert f"<h2>{name} " in demo_html  # its own section
    # one chart placeholder per chart, two per queue, each with its data
    page = _Page(demo_html)
    ids = [f"queue-{i}-chart-{j}" for i in range(len(names)) for j in range(2)]
    assert page.placeholders == ids
    assert sorted(page.chart_data()["charts"]) == sorted(ids)
    assert "Is work arriving faster than it can be done?" in demo_html
    assert "How long will items wait with c workers?" in demo_html
    assert 'id="report-source">demo<' in demo_html
    assert "M/M/c (Erlang C)" in demo_html
    assert "Fluid backlog" in demo_html
    assert "Universal Scalability Law" in demo_html
    assert "2023-11-14 16:13:20 UTC" in demo_html  # the range end, AT_T in UTC


def test_html_verdicts_carry_their_evidence(demo_report: Report, demo_html: str) -> None:
    replicaset = next(q for q in demo_report.queues if q.row.queue == "replicaset")
    first = replicaset.verdicts[0]
    assert f"<code>{first.kind}</code>" in demo_html
    for key in first.evidence:  # in words, as the queue page labels them
        assert f'<th scope="row">{escape(evidence_label(key))}</th>' in demo_html


def test_html_escapes_hostile_label_values(hostile_report: Report) -> None:
    text = render(hostile_report, "html")
    assert SCRIPT not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "a&quot;b" in text
    assert 'a"b' not in text
    assert "<b>src</b>" not in text
    assert "&lt;b&gt;src&lt;/b&gt;" in text
    # no script but ours: plotly.js, the chart data (JSON, not run), the chart drawer
    tags = re.findall(r"<script[^>]*>", text)
    assert tags == ['<script type="text/javascript">',
                    f'<script type="application/json" id="{CHART_DATA_ID}">',
                    '<script type="text/javascript">']
    assert len(_Page(text).chart_data()["charts"]) == 2 * len(HOSTILE)


def test_html_chart_data_is_embedded_once_and_drawn_on_demand(
    demo_report: Report, demo_html: str
) -> None:
    page = _Page(demo_html)
    doc = page.chart_data()
    assert [attrs.get("type") for attrs, _ in page.scripts] == [
        "text/javascript", "application/json", "text/javascript"]
    drawer = page.scripts[2][1]
    assert "IntersectionObserver" in drawer
    assert "Plotly.newPlot" in drawer
    # the plotly_white look travels once, not once per chart
    assert page.scripts[1][1].count('"template"') == 1
    assert all("template" not in c["layout"] for c in doc["charts"].values())
    assert doc["template"] == fg.plotly_white_template()
    assert doc["config"] == {"displaylogo": False, "responsive": True}
    # the range's time axis is stored once for all queues' demand charts
    assert len(doc["arrays"]) < len(demo_report.queues)
    for i, q in enumerate(demo_report.queues):
        for j, fig in enumerate(queue_figures(q, demo_report)):
            expected = {"data": fig["data"],
                        "layout": {k: v for k, v in fig["layout"].items() if k != "template"}}
            assert _resolved(doc, f"queue-{i}-chart-{j}") == json.loads(json.dumps(expected))
    first = _resolved(doc, "queue-0-chart-0")
    assert first["layout"]["title"]["text"] == "Is work arriving faster than it can be done?"
    assert first["data"][0]["name"] == "arrivals λ (adds/s)"
    assert len(first["data"][0]["x"]) > 10
    assert _resolved(doc, "queue-0-chart-1")["layout"]["title"]["text"] == (
        "How long will items wait with c workers?")


BREAKOUTS = ("</script><script>alert(1)</script>", "<!--<script>", "</SCRIPT >x",
             "a&lt;b\\u003c\\", "\u2028\u2029", "]]>\"'")


@pytest.mark.parametrize("value", BREAKOUTS)
def test_script_json_cannot_end_the_script_or_open_a_comment(value: str) -> None:
    text = script_json({"name": value, "values": [value, 1.5, None]})
    assert not set("<>&\u2028\u2029") & set(text)
    assert json.loads(text) == {"name": value, "values": [value, 1.5, None]}
    assert script_json([math.nan, math.inf, 2.0]) == "[null,null,2.0]"


def test_script_json_takes_numpy_values() -> None:
    import numpy as np

    assert script_json({"a": np.float64(1.5), "b": np.int64(2), "c": np.array([1.0, np.nan])}
                       ) == '{"a":1.5,"b":2,"c":[1.0,null]}'


def test_html_with_breakout_queue_names_keeps_its_structure() -> None:
    report = build_report(HostileSource(BREAKOUTS), AT_T, AnalysisSettings(range_s=3600))
    text = render(report, "html")
    page = _Page(text)
    # exactly our three scripts, whatever the queue names: none ended early or added
    assert [attrs for attrs, _ in page.scripts] == [
        {"type": "text/javascript"}, {"type": "application/json", "id": CHART_DATA_ID},
        {"type": "text/javascript"}]
    data = page.scripts[1][1]
    assert not set("<>&") & set(data)
    assert page.placeholders == [f"queue-{i}-chart-{j}" for i in range(len(BREAKOUTS))
                                 for j in range(2)]
    assert len(page.chart_data()["charts"]) == 2 * len(BREAKOUTS)
    for value in BREAKOUTS:  # shown as text (escaped), never as markup
        if set("<>&") & set(value):
            assert value not in text


def test_html_progress_reports_each_queue(demo_report: Report) -> None:
    seen: list[tuple[str, int, int]] = []
    render(demo_report, "html", progress=lambda label, done, total: seen.append(
        (label, done, total)))
    n = len(demo_report.queues)
    assert [s[0] for s in seen[:-1]] == [f"rendering {q.row.queue}" for q in demo_report.queues]
    assert seen[-1][1:] == (n, n)


# --- Markdown --------------------------------------------------------------------------------

def test_markdown_names_range_step_and_window(demo_report: Report) -> None:
    # 6 h range / 120 points = 180 s per point; snapshot rates over the default 300 s
    assert "(6h, one point every 3m); snapshot rates over 5m" in render(demo_report, "md")


def test_md_text_escapes_markdown_and_html() -> None:
    assert md_text(SCRIPT) == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert md_text(PIPE) == r"x\|y\*z\_\[link\](http://e.test)"
    assert md_text("a\nb  c") == "a b c"
    assert md_text("&amp;") == "&amp;amp;"


def test_markdown_table_rows_keep_their_columns(hostile_report: Report) -> None:
    text = render(hostile_report, "md")
    assert SCRIPT not in text
    assert "<b>" not in text
    header = next(line for line in text.splitlines() if line.startswith("| Queue |"))
    columns = len(re.split(r"(?<!\\)\|", header))
    rows = [line for line in text.splitlines() if line.startswith("| ")
            and not line.startswith(("| Queue", "| ---", "| Evidence"))
            and len(re.split(r"(?<!\\)\|", line)) == columns]
    assert len(rows) >= len(HOSTILE)
    assert any(r.startswith(r"| x\|y\*z\_\[link\]") for r in rows)
    # every line of the summary table has the header's number of unescaped pipes
    table = text.split("## Fleet summary")[1].split("\n## ")[0]
    for line in table.strip().splitlines()[0:]:
        assert len(re.split(r"(?<!\\)\|", line)) == columns, line


# --- JSON ------------------------------------------------------------------------------------

def test_json_schema_and_null_for_missing(hostile_report: Report) -> None:
    doc = _strict_json(render(hostile_report, "json"))
    assert isinstance(doc, dict)
    assert doc["schema_version"] == SCHEMA_VERSION == 1
    assert doc["source"] == "<b>src</b>"  # JSON keeps the value; consumers escape
    assert doc["time_range"]["end"] == AT_T
    assert doc["time_range"]["range_s"] == 3600
    by_name = {q["queue"]: q for q in doc["queues"]}
    assert set(by_name) == set(HOSTILE)
    bare = by_name[QUOTE]  # index 1: no workers, no service time
    assert bare["row"]["workers"] is None
    assert bare["row"]["capacity_per_s"] is None
    assert bare["whatif"] is None
    assert bare["verdicts"][0]["kind"] == "insufficient_data"
    over = by_name[PIPE]  # λ = 6 > c·μ = 4 at c = 2: rows up to c = 3 are unstable
    rows = {r["workers"]: r for r in over["whatif"]["rows"]}
    assert rows[1]["stable"] is False
    assert rows[1]["wait_mean_s"] is None
    assert rows[3]["stable"] is False
    assert rows[3]["wait_p95_s"] is None
    assert rows[4]["stable"] is True
    assert rows[4]["wait_mean_s"] > 0
    assert doc["summary"]["queues"] == len(HOSTILE)


# --- CSV -------------------------------------------------------------------------------------

def test_csv_has_one_row_per_queue(demo_report: Report) -> None:
    reader = csv.DictReader(io.StringIO(render(demo_report, "csv")))
    rows = list(reader)
    assert reader.fieldnames == list(CSV_COLUMNS)
    assert [r["queue"] for r in rows] == [q.row.queue for q in demo_report.queues]
    replicaset = next(r for r in rows if r["queue"] == "replicaset")
    q = next(q for q in demo_report.queues if q.row.queue == "replicaset").row
    assert q.arrival_rate_per_s is not None
    assert math.isclose(float(replicaset["arrival_rate_per_s"]), q.arrival_rate_per_s)


def test_csv_neutralises_formulas_and_keeps_hostile_names(hostile_report: Report) -> None:
    rows = list(csv.DictReader(io.StringIO(render(hostile_report, "csv"))))
    assert len(rows) == len(HOSTILE)
    names = {r["queue"] for r in rows}
    assert {SCRIPT, QUOTE, PIPE, "'" + FORMULA} == names
    bare = next(r for r in rows if r["queue"] == QUOTE)
    assert bare["workers"] == ""
    assert bare["capacity_per_s"] == ""


# --- every format ----------------------------------------------------------------------------

def test_bad_slo_is_a_clear_error() -> None:
    from models.errors import ModelInputError

    with pytest.raises(ModelInputError, match="SLO"):
        build_report(HostileSource(), AT_T, AnalysisSettings(slo_wait_s=float("nan")))


def test_export_payload_for_the_dashboard_download() -> None:
    data, status = export_payload(DemoSource(seed=0), "csv", AT_T)
    assert data is not None
    assert data["filename"].endswith(".csv")
    assert data["type"] == "text/csv"
    assert data["base64"] is False
    assert len(list(csv.DictReader(io.StringIO(data["content"])))) == len(
        DemoSource(seed=0).queue_names)
    assert status.startswith("8 queues")
    none, message = export_payload(DemoSource(seed=0), "pdf", AT_T)
    assert none is None
    assert "pdf" in message
    none, message = export_payload(DemoSource(seed=0), "json", 100.0)
    assert none is None
    assert message.startswith("Could not build the report")


def test_app_shell_has_the_export_control() -> None:
    from dashboard.app import build_dash_app

    app = build_dash_app(DemoSource(seed=0))
    layout = json.dumps(app.layout.to_plotly_json(), default=lambda o: o.to_plotly_json())
    for element in ("export-format", "export-button", "export-download"):
        assert f'"{element}"' in layout


@pytest.mark.prometheus
@pytest.mark.parametrize("auth", ["basic", "token"])
def test_report_from_real_prometheus_has_no_credentials(
    backfilled_prometheus: PrometheusProcess, tmp_path: Path, auth: str
) -> None:
    from collectors.connect import open_source

    user, password, token = "reportuser", "pw-Zq81xK", "tok-Hn33vQ-secret"
    header = "hdr-Pp04-secret"
    url = backfilled_prometheus.url
    token_file = None
    if auth == "basic":
        url = url.replace("http://", f"http://{user}:{password}@")
    else:
        (tmp_path / "token").write_text(token)
        token_file = str(tmp_path / "token")
    source = open_source(url, False, token_file=token_file, env={},
                         headers={"X-Scope-OrgID": header})
    try:
        report = build_report(source, AT, AnalysisSettings(range_s=AT - START - WINDOW_S,
                                                           window_s=WINDOW_S))
    finally:
        close = getattr(source, "close", None)
        if callable(close):
            close()
    assert report.source.rstrip("/") == backfilled_prometheus.url.rstrip("/")
    texts = {fmt: render(report, fmt) for fmt in FORMATS}
    for fmt, text in texts.items():
        for secret in (user, password, token, header):
            assert secret not in text, f"{secret!r} in the {fmt} report"
    doc = _strict_json(texts["json"])
    assert isinstance(doc, dict)
    by_name = {q["queue"]: q for q in doc["queues"]}
    assert set(iter_queue_names()) <= set(by_name)
    for name in ("deployment", "replicaset"):
        row = by_name[name]["row"]
        truth = TRUTH[name]
        assert row["arrival_rate_per_s"] == pytest.approx(truth["arrival_rate_per_s"], rel=1e-6)
        assert row["workers"] == pytest.approx(truth["workers"])
        assert row["capacity_per_s"] == pytest.approx(
            float(truth["workers"] or 0) / float(truth["service_mean_s"] or 1), rel=1e-6)
    assert by_name["replicaset"]["row"]["severity"] == "critical"
    assert len(list(csv.DictReader(io.StringIO(texts["csv"])))) == len(doc["queues"])
    assert time.time() >= doc["generated_at"]


def test_a_knob_manifest_is_fenced_in_markdown_and_escaped_in_html(demo_report: Report
                                                                   ) -> None:
    """A FlowSchema manifest whose strings came from label values (a queue called with
    backticks and HTML) cannot end the Markdown fence or become HTML."""
    import dataclasses

    from dashboard.report.html_page import _html_plan
    from dashboard.report.markdown import _md_plan
    from models.flowschema import flowschema_manifest
    from models.plan import Knob

    plan = next(q.plan for q in demo_report.queues if q.plan is not None)
    evil = "x````\n<img src=x onerror=alert(1)>"
    manifest = flowschema_manifest(evil, namespace=evil)
    knobbed = dataclasses.replace(plan, knobs=(Knob("FlowSchema", "its own level", manifest),))
    md = "\n".join(_md_plan(knobbed))
    fence = next(line for line in md.splitlines() if line.endswith("yaml"))[:-4]
    assert set(fence) == {"`"}
    assert len(fence) > 4  # longer than any backtick run inside
    body = md.split(fence + "yaml\n", 1)[1].split("\n" + fence, 1)[0]
    assert body == manifest.rstrip("\n")
    html_text = _html_plan(knobbed)
    assert "<img" not in html_text
    assert "&lt;img src=x onerror=alert(1)&gt;" in html_text
