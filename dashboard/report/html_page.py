"""The HTML report: one self-contained page that opens offline (see :mod:`dashboard.report`)."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dashboard.cliutil import escape_json_controls, jsonable, terminal_text
from dashboard.plan_words import change_text, evidence_label, evidence_value, plan_facts
from models.plan import CapacityPlan

if TYPE_CHECKING:

    pass
from dashboard.report.model import (
    SEVERITY_ORDER,
    Progress,
    QueueReport,
    Report,
    _no_progress,
)
from dashboard.report.text import (
    _num,
    _pct,
    _range_text,
    _slo_text,
    _utc,
)

# --------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1f2933;
background:#f4f6f8}
header{background:#1f2933;color:#fff;padding:1rem 2rem}
header h1{margin:0 0 .3rem;font-size:1.4rem}
header dl{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:0;
font-size:.9rem}
header dt{color:#9aa3ad}header dd{margin:0}
main{padding:1rem 2rem;max-width:1300px}
section.card{background:#fff;border-radius:8px;padding:1rem 1.2rem;margin:1rem 0;
box-shadow:0 1px 2px rgba(0,0,0,.08)}
table{border-collapse:collapse;font-size:.88rem}
th,td{padding:.3rem .6rem;border-bottom:1px solid #e4e7eb;
text-align:left;vertical-align:top}td.n{text-align:right;font-variant-numeric:tabular-nums}
.sev{display:inline-block;padding:.05rem .5rem;border-radius:1rem;font-size:.8rem;font-weight:600}
.sev-critical{background:#fde2d6;color:#8a2c00}.sev-warning{background:#fff1c7;color:#6b4e00}
.sev-info{background:#dbeefb;color:#0b4a75}.sev-ok{background:#d6f2e7;color:#005c3f}
.verdict{border-left:4px solid #9aa3ad;padding:.2rem .8rem;margin:.8rem 0}
.verdict.critical{border-color:#D55E00}.verdict.warning{border-color:#E69F00}
.verdict.info{border-color:#0072B2}.verdict.ok{border-color:#009E73}
.charts{display:grid;grid-template-columns:1fr 1fr;gap:.8rem}
section.card[id^="queue-"]{content-visibility:auto;contain-intrinsic-size:auto 1100px}
.note{color:#52606d;font-size:.85rem}code{font-size:.85rem}
details summary{cursor:pointer;color:#0072B2}
"""


def _e(value: object) -> str:
    """Text for the page: control and bidirectional characters shown as escapes
    (:func:`dashboard.cliutil.terminal_text`, as the dashboard's queue page shows a name),
    then HTML-escaped."""
    return html.escape(terminal_text(str(value)), quote=True)


def _sev(severity: str) -> str:
    cls = severity if severity in SEVERITY_ORDER else "info"
    return f'<span class="sev sev-{cls}">{_e(severity)}</span>'


def _kv_table(items: Mapping[str, Any], head: tuple[str, str]) -> str:
    rows = "".join(f"<tr><th scope=\"row\">{_e(evidence_label(str(k)))}</th>"
                   f"<td>{_e(evidence_value(v, str(k)))}</td></tr>" for k, v in items.items())
    return (f"<table><thead><tr><th>{_e(head[0])}</th><th>{_e(head[1])}</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def queue_figures(q: QueueReport, report: Report) -> list[dict[str, Any]]:
    """The queue's two charts: demand vs capacity over the range, wait vs workers."""
    from dashboard import figures as fg

    charts = []
    if any(len(s[0]) for s in (q.arrival, q.throughput, q.capacity)):
        charts.append(fg.rates_figure(q.arrival, q.throughput, q.capacity, report.step_s))
    else:
        charts.append(fg.no_data_figure("Is work arriving faster than it can be done?",
                                        "no range data for this queue"))
    if q.whatif is not None:
        rows = q.whatif.rows
        recommended = q.row.recommended_workers
        charts.append(fg.whatif_wait_figure(
            [r.workers for r in rows], [r.wait_mean_s for r in rows],
            [r.wait_p95_s for r in rows], [r.utilization for r in rows],
            slo_s=report.slo_wait_s, recommended=recommended))
    else:
        charts.append(fg.no_data_figure("How long will items wait with c workers?",
                                        q.whatif_note))
    return charts


CHART_DATA_ID = "ql-report-charts"
"""``id`` of the ``<script type="application/json">`` that holds every chart of the report."""

CHART_CLASS = "ql-chart"
"""``class`` of a chart's placeholder ``<div>`` (its ``id`` is the chart's key in the data)."""

CHART_HEIGHT = "380px"

SHARED_X = "ql_shared_x"
"""Key of a trace in the report's chart data whose ``x`` is ``arrays[value]`` (the charts of
one report share their time axis: it is stored once, not once per trace)."""

_PLOT_CONFIG: Mapping[str, Any] = {"displaylogo": False, "responsive": True}

# Draws a chart when its placeholder comes near the viewport (or, without
# IntersectionObserver, at once); every remaining chart before printing. Each chart's data is
# dropped once drawn.
_DRAW_JS = """(function () {
  "use strict";
  var spec = JSON.parse(document.getElementById("__DATA_ID__").textContent);
  var charts = Array.prototype.slice.call(document.querySelectorAll(".__CHART_CLASS__"));
  function draw(el) {
    var fig = spec.charts[el.id];
    if (!fig) { return; }
    delete spec.charts[el.id];
    fig.data.forEach(function (trace) {
      if ("__SHARED_X__" in trace) {
        trace.x = spec.arrays[trace["__SHARED_X__"]].slice();
        delete trace["__SHARED_X__"];
      }
    });
    var layout = Object.assign({template: spec.template}, fig.layout);
    Plotly.newPlot(el, fig.data, layout, spec.config);
  }
  function drawSafely(el) {
    try { draw(el); } catch (err) { console.error("queuelens: chart " + el.id, err); }
  }
  if ("IntersectionObserver" in window) {
    var seen = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (entry.isIntersecting) { seen.unobserve(entry.target); drawSafely(entry.target); }
      });
    }, {rootMargin: "400px 0px"});
    charts.forEach(function (el) { seen.observe(el); });
  } else {
    charts.forEach(drawSafely);
  }
  window.addEventListener("beforeprint", function () { charts.forEach(drawSafely); });
})();"""
for _token, _value in (("__DATA_ID__", CHART_DATA_ID), ("__CHART_CLASS__", CHART_CLASS),
                       ("__SHARED_X__", SHARED_X)):
    _DRAW_JS = _DRAW_JS.replace(_token, _value)

_SCRIPT_UNSAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                                "\u2028": "\\u2028", "\u2029": "\\u2029"})


def script_json(value: Any) -> str:
    """``value`` as JSON that is inert inside ``<script type="application/json">``: ``<``,
    ``>`` and ``&`` (and U+2028/U+2029) only ever occur inside JSON strings, where they are
    written as ``\\u00XX`` escapes — so ``</script>`` or ``<!--`` in a label value cannot end
    the element or change how the HTML parser reads it; ``JSON.parse`` gives the text back.
    NaN and infinities become ``null``."""
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"),
                          default=_json_scalar)
    except ValueError:  # a NaN or infinity somewhere: the slow path replaces them
        text = json.dumps(jsonable(value), allow_nan=False, ensure_ascii=False,
                          separators=(",", ":"), default=_json_scalar)
    return escape_json_controls(text.translate(_SCRIPT_UNSAFE))


def _json_scalar(value: Any) -> Any:
    """numpy scalars and arrays (anything with ``.tolist()``) as Python numbers and lists."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


_SHARE_MIN = 8  # shorter x arrays are cheaper inline than as a reference


class ChartData:
    """The charts of a report as one JSON document: ``{"template", "config", "arrays",
    "charts": {placeholder id: {"data", "layout"}}}`` — each figure without its
    ``layout.template`` (carried once) and every long ``x`` array stored once in ``arrays``
    (a trace refers to it by :data:`SHARED_X`)."""

    def __init__(self) -> None:
        self.charts: dict[str, dict[str, Any]] = {}
        self.arrays: list[list[Any]] = []
        self._index: dict[tuple[Any, ...], int] = {}

    def add(self, chart_id: str, figure: Mapping[str, Any]) -> None:
        layout = {k: v for k, v in figure["layout"].items() if k != "template"}
        self.charts[chart_id] = {"data": [self._shared(t) for t in figure["data"]],
                                 "layout": layout}

    def _shared(self, trace: Mapping[str, Any]) -> Mapping[str, Any]:
        xs = trace.get("x")
        if not isinstance(xs, list) or len(xs) < _SHARE_MIN:
            return trace
        try:
            key = tuple(xs)
            index = self._index.setdefault(key, len(self.arrays))
        except TypeError:  # unhashable values: keep them inline
            return trace
        if index == len(self.arrays):
            self.arrays.append(xs)
        return {**{k: v for k, v in trace.items() if k != "x"}, SHARED_X: index}

    def document(self) -> dict[str, Any]:
        from dashboard.figures import plotly_white_template

        return {"template": plotly_white_template(), "config": dict(_PLOT_CONFIG),
                "arrays": self.arrays, "charts": self.charts}


def _plotlyjs() -> str:
    from plotly.offline import get_plotlyjs

    js: str = get_plotlyjs()
    return js.replace("</script", "<\\/script")


def _html_plan(plan: CapacityPlan | None) -> str:
    """The queue's capacity plan (escaped text only), as the dashboard's card words it."""
    if plan is None:
        return ""
    payload = plan.payload()
    tags = " ".join(f"<code>{_e(t)}</code>" for t in plan.tags)
    facts = "".join(f'<tr><th scope="row">{_e(label)}</th><td><strong>{_e(value)}</strong>'
                    f'<span class="note"> {_e(note)}</span></td></tr>'
                    for label, value, note in plan_facts(payload))
    options = "".join(f"<li>{_e(o.action)}<br><span class=\"note\">Trade-off: "
                      f"{_e(o.tradeoff)}</span></li>" for o in plan.options)
    knobs = "".join(f"<li><code>{_e(k.setting)}</code> — {_e(k.how)}"
                    + (f"<details><summary>the manifest (YAML)</summary><pre>{_e(k.manifest)}"
                       "</pre></details>" if k.manifest else "") + "</li>"
                    for k in plan.knobs)
    change = change_text(payload["change"])
    caveats = "".join(f"<li>{_e(c)}</li>" for c in plan.caveats)
    return (f'<div class="plan"><h3>{_e(plan.headline)}</h3><p>{tags}</p>'
            f"<table><tbody>{facts}</tbody></table>"
            f"<p>What to do, best first:</p><ol>{options}</ol>"
            + (f"<p>Where to set it:</p><ul>{knobs}</ul>" if knobs else "")
            + (f"<p><strong>Check the change:</strong> {_e(change)}</p>" if change else "")
            + (f"<details><summary>caveats</summary><ul>{caveats}</ul></details>"
               if caveats else "")
            + "</div>")


def render_html(report: Report, progress: Progress | None = None) -> str:
    """One self-contained HTML page (plotly.js inlined once; no external resources)."""
    step = progress or _no_progress
    total = len(report.queues)
    counts = report.severity_counts()
    summary_rows = []
    for i, q in enumerate(report.queues):
        r = q.row
        summary_rows.append(
            "<tr>"
            f'<td><a href="#queue-{i}">{_e(r.queue)}</a></td><td>{_sev(r.severity)}</td>'
            f"<td>{_e(', '.join(r.verdicts))}</td>"
            + "".join(f'<td class="n">{_e(_num(v))}</td>' for v in (
                r.workers, r.recommended_workers, r.busy_workers))
            + f'<td class="n">{_e(_pct(r.utilization))}</td>'
            + "".join(f'<td class="n">{_e(_num(v))}</td>' for v in (
                r.arrival_rate_per_s, r.capacity_per_s))
            + f'<td class="n">{_e(r.queue_wait_p95_text)}</td>'
            + f'<td class="n">{_e(_num(r.depth_current))}</td>'
            + "</tr>")
    sections = []
    charts = ChartData()
    for i, q in enumerate(report.queues):
        step(f"rendering {q.row.queue}", i, total)
        verdicts = [_html_plan(q.plan)]
        for v in q.verdicts:
            cls = v.severity if v.severity in SEVERITY_ORDER else "info"
            parts = [f'<div class="verdict {cls}"><h3>{_e(v.headline)}</h3><p>'
                     f"{_sev(v.severity)} <code>{_e(v.kind)}</code> <span class=\"note\">"
                     f"confidence {100 * v.confidence:.0f} %</span></p><p>{_e(v.summary)}</p>"]
            if v.recommendation:
                parts.append(_kv_table(v.recommendation, ("recommendation", "value")))
            if v.evidence:
                parts.append("<details><summary>evidence</summary>"
                             + _kv_table(v.evidence, ("evidence", "value")) + "</details>")
            parts.append("</div>")
            verdicts.append("".join(parts))
        placeholders = []
        for j, fig in enumerate(queue_figures(q, report)):
            chart_id = f"queue-{i}-chart-{j}"
            charts.add(chart_id, fig)
            placeholders.append(f'<div><div class="{CHART_CLASS} plotly-graph-div" '
                                f'id="{chart_id}" style="height:{CHART_HEIGHT};width:100%">'
                                "</div></div>")
        labels = ", ".join(f"{_e(k)}={_e(v)}" for k, v in sorted(q.labels.items()))
        missing = ""
        if q.missing:
            missing = ("<details><summary>signals not measured</summary>"
                       + _kv_table(q.missing, ("signal", "why")) + "</details>")
        sections.append(
            f'<section class="card" id="queue-{i}"><h2>{_e(q.row.queue)} {_sev(q.row.severity)}'
            f"</h2><p class=\"note\">{labels}</p>{''.join(verdicts)}"
            f'<div class="charts">{"".join(placeholders)}</div>'
            f'<p class="note">What-if: {_e(q.whatif_note)}'
            f"</p>{missing}</section>")
    step("rendered", total, total)
    assumptions = "".join(
        f"<tr><th scope=\"row\">{_e(a.model)}</th><td>{_e(a.used_for)}</td>"
        f"<td>{_e(a.assumes)}</td><td>{_e(a.source)}</td></tr>" for a in report.assumptions)
    thresholds = "".join(
        f"<tr><th scope=\"row\"><code>{_e(t['name'])}</code></th><td class=\"n\">"
        f"{_e(_num(t['value']))}</td><td>{_e(t['signal'])}</td><td>{_e(t['reason'])}</td></tr>"
        for t in report.thresholds)
    warnings = ""
    if report.warnings:
        warnings = ('<section class="card"><h2>Warnings</h2><ul>'
                    + "".join(f"<li>{_e(w)}</li>" for w in report.warnings) + "</ul></section>")
    sev_line = " ".join(f"{_sev(s)} {n}" for s, n in counts.items() if n)
    chart_data = script_json(charts.document())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>queuelens capacity report — {_e(report.source)}</title>
<style>{_CSS}</style>
<script type="text/javascript">{_plotlyjs()}</script>
</head><body>
<header><h1>queuelens capacity report</h1><dl>
<dt>source</dt><dd id="report-source">{_e(report.source)}</dd>
<dt>time range</dt><dd>{_e(_range_text(report))}</dd>
<dt>SLO</dt><dd>{_e(_slo_text(report))}</dd>
<dt>settings</dt><dd id="report-settings">{_e(report.described)}</dd>
<dt>generated</dt><dd>{_e(_utc(report.generated_at))}</dd>
</dl></header>
<main>
<section class="card" id="fleet-summary"><h2>Fleet summary</h2>
<p>{len(report.queues)} queues · {sev_line}</p>
<table><thead><tr><th>queue</th><th>severity</th><th>verdicts</th><th>workers</th>
<th>recommended</th><th>busy</th><th>utilization</th><th>arrivals /s</th><th>capacity /s</th>
<th>p95 wait</th><th>depth</th></tr></thead>
<tbody>{''.join(summary_rows)}</tbody></table></section>
{warnings}
{''.join(sections)}
<section class="card" id="assumptions"><h2>Model assumptions</h2>
<table><thead><tr><th>model</th><th>used for</th><th>assumes</th><th>source</th></tr></thead>
<tbody>{assumptions}</tbody></table>
<h3>Advisor thresholds</h3>
<table><thead><tr><th>threshold</th><th>value</th><th>signal</th><th>reason</th></tr></thead>
<tbody>{thresholds}</tbody></table></section>
</main>
<script type="application/json" id="{CHART_DATA_ID}">{chart_data}</script>
<script type="text/javascript">{_DRAW_JS}</script>
</body></html>
"""
