"""The advice card: a queue's capacity plan as the queue page (and the overview's
drill-down) shows it.

From top to bottom: the verdict in plain words, with the verdict ids as small tags; the
worker count now → recommended and the rule that chose it; the binding limit and its
ceiling; the confidence as a percentage; the ranked options with their trade-offs and the
knob to turn; the decisive chart (:func:`dashboard.plan_figures.decisive_figure`) beside the
wait against workers; "check the change" when the history holds a worker-count change; the
evidence as labelled numbers with units, each with its PromQL (copyable), the window and the
source; the caveats; and every verdict in full, folded.

Everything is component text (Dash escapes it): queue names, label values and PromQL are
never rendered as HTML.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from dash import dcc, html

from collectors.profile import Profile
from dashboard import plan_figures as pf
from dashboard.plan_words import change_notes, change_wait_text, plan_facts, rate_text
from models.change import ChangeCheck
from models.formatting import number_text
from models.measurements import QueueSnapshot
from models.plan import CapacityPlan

__all__ = ["EVIDENCE_SIGNALS", "Evidence", "graph_href", "plan_evidence", "render_plan_card"]


@dataclass(frozen=True)
class Evidence:
    """One measured number of the card: what it is, its value with the unit, its PromQL."""

    label: str
    value: str
    promql: str


EVIDENCE_SIGNALS: tuple[tuple[str, str, str], ...] = (
    ("arrival_rate_per_s", "demand now (adds)", "/s"),
    ("throughput_per_s", "throughput (completed passes)", "/s"),
    ("busy_workers", "busy workers (time average)", ""),
    ("workers", "configured workers c", ""),
    ("queue_wait_mean_s", "mean queue wait", " s"),
    ("retries_per_s", "retries", "/s"),
    ("errors_per_s", "reconcile errors", "/s"),
    ("throttle_s_per_s", "client limiter wait (process)", " s/s"),
)
"""(signal, label, unit) of the evidence rows, in the card's order."""


def _value(value: float | None, unit: str) -> str:
    return number_text(value, unit.strip())


def plan_evidence(q: QueueSnapshot, plan: CapacityPlan, profile: Profile | None
                  ) -> tuple[Evidence, ...]:
    """The card's evidence: each measured input of the plan with the PromQL that reads it for
    this queue (``profile``: the source's; the demo computes the same signals as the default
    profile's queries)."""
    prof = profile or Profile()
    window = plan.settings.window_s
    queries = {sq.signal: sq.promql for sq in prof.queries(window, [q.queue])}
    out = []
    for signal, label, unit in EVIDENCE_SIGNALS:
        out.append(Evidence(label, _value(getattr(q, signal), unit),
                            queries.get(signal, "not read by this profile")))
    out.append(Evidence("mean work time E[S]", _value(q.service_mean_s, " s"),
                        "busy workers / throughput (the two queries above)"))
    if plan.demand_per_s is not None:
        out.append(Evidence(
            "design demand",
            _value(plan.demand_per_s, "/s"),
            f"max(demand now, p{100 * plan.settings.thresholds.design_quantile:.0f} of the "
            f"demand query over the range's points)"))
    return tuple(out)


def _utc(unix_s: float) -> str:
    return dt.datetime.fromtimestamp(unix_s, tz=dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _change_panel(change: ChangeCheck) -> html.Div:
    """"Check the change": the prediction from the clean points before the change against
    the steady points after it, the clean counts, the drain apart and, while the "after" is
    too short, what it cannot tell yet (the words: :func:`dashboard.plan_words.change_notes`).
    """
    def row(what: str, predicted: str, observed: str) -> html.Tr:
        return html.Tr([html.Th(what, scope="row"), html.Td(predicted), html.Td(observed)])

    demand_after = (f"at the demand that came ({rate_text(change.demand_after_per_s)})"
                    if change.demand_after_per_s is not None else
                    "at the demand before (none measured after it yet)")
    notes = change_notes(asdict(change))
    if change.predicted_throughput_per_s is None:
        lead = (f"At {_utc(change.at)} the worker count changed {change.workers_before} → "
                f"{change.workers_after}. There is no plan from before it to check (too few "
                "clean points before the change); the steady points after it measured:")
    else:
        lead = (f"At {_utc(change.at)} the worker count changed {change.workers_before} → "
                f"{change.workers_after}. From the points before it (demand "
                f"{rate_text(change.demand_before_per_s)}, mean work time "
                f"{change_wait_text(change.service_mean_before_s)}), the model predicted the "
                f"new count {demand_after}; the steady points after it measured:")
    return html.Div([
        html.H3("Check the change"),
        html.P(lead, className="ql-note"),
        html.Table([
            html.Thead(html.Tr([html.Th(""), html.Th("predicted"), html.Th("measured")])),
            html.Tbody([
                row("throughput", rate_text(change.predicted_throughput_per_s)
                    if change.predicted_throughput_per_s is not None else "—",
                    rate_text(change.observed_throughput_per_s)),
                row("mean queue wait", change_wait_text(
                    change.predicted_wait_mean_s,
                    "unstable" if change.predicted_throughput_per_s is not None else "—"),
                    change_wait_text(change.observed_wait_mean_s)),
            ]),
        ], className="ql-evidence"),
        html.P(notes[0], id="plan-change-points", className="ql-note"),
        *[html.P(n, className="ql-note") for n in notes[1:]],
    ], id="plan-change", className="ql-change")


def graph_href(source: str, promql: str) -> str | None:
    """The PromQL on the source's own graph page (``<url>/graph?g0.expr=…&g0.tab=0``, which
    Prometheus, Thanos Query and VictoriaMetrics all serve) when the source is an http(s) URL —
    the app's display URL, which never carries credentials — else None (the demo)."""
    parts = urlsplit(source)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    base = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
    return f"{base}/graph?{urlencode({'g0.expr': promql, 'g0.tab': '0'})}"


def _evidence_table(items: Sequence[Evidence], source: str = "") -> html.Table:
    rows = []
    for i, e in enumerate(items):
        code_id = f"plan-promql-{i}"
        href = graph_href(source, e.promql)
        link = [html.A("graph", href=href, target="_blank", rel="noopener noreferrer",
                       className="ql-graph-link", title="open this PromQL in the source's "
                       "graph page")] if href else []
        rows.append(html.Tr([
            html.Th(e.label, scope="row"), html.Td(e.value, className="ql-value"),
            html.Td([html.Code(e.promql, id=code_id, className="ql-promql"),
                     dcc.Clipboard(target_id=code_id, title="copy the PromQL",
                                   className="ql-copy"), *link]),
        ]))
    return html.Table([html.Thead(html.Tr([html.Th("evidence"), html.Th("value"),
                                           html.Th("PromQL")])),
                       html.Tbody(rows)], className="ql-evidence ql-evidence-promql")


def render_plan_card(plan: CapacityPlan, evidence: Sequence[Evidence], source: str,
                     verdict_details: Any = None) -> html.Div:
    """The card (``#plan-card``) of one plan; ``verdict_details``: the verdicts in full."""
    payload = plan.payload()
    tags = [html.Span(t, className="ql-tag") for t in plan.tags]
    facts = html.Table(html.Tbody([
        html.Tr([html.Th(label, scope="row"),
                 html.Td([html.Strong(value, id=f"plan-{label.replace(' ', '-')}"),
                          html.Span(f" — {note}" if note else "", className="ql-note")])])
        for label, value, note in plan_facts(payload)]), className="ql-evidence ql-plan-facts")
    options = html.Ol([
        html.Li([html.Span(o.action), html.Br(),
                 html.Span(f"Trade-off: {o.tradeoff}", className="ql-note")])
        for o in plan.options], id="plan-options")
    knobs = [html.Li([html.Code(k.setting), html.Span(f" — {k.how}", className="ql-note")]
                     + ([html.Details([html.Summary("the manifest (YAML)"),
                                       dcc.Clipboard(target_id=f"plan-manifest-{i}",
                                                     title="copy"),
                                       html.Pre(k.manifest, id=f"plan-manifest-{i}",
                                                className="ql-promql")])]
                        if k.manifest else []))
             for i, k in enumerate(plan.knobs)]
    charts = html.Div([
        html.Div(dcc.Graph(id="plan-decisive-graph", figure=pf.decisive_figure(plan),
                           config={"displaylogo": False}, style={"height": "360px"}),
                 className="ql-card", style={"flex": "1 1 480px", "minWidth": "320px"}),
        html.Div(dcc.Graph(id="plan-wait-graph", figure=pf.plan_wait_figure(plan),
                           config={"displaylogo": False}, style={"height": "360px"}),
                 className="ql-card", style={"flex": "1 1 480px", "minWidth": "320px"}),
    ], className="ql-row")
    children: list[Any] = [
        html.H2("Capacity plan: will more workers help?"),
        html.P(html.Strong(plan.headline), id="plan-headline",
               className="ql-verdict-headline"),
        html.Div(tags, className="ql-tags"),
        html.P(f"From {plan.settings.describe()}; {source}. {plan.model or 'no model'}; "
               f"{plan.band_source}.", className="ql-note", id="plan-basis"),
        facts,
        html.H3("What to do, best first"),
        options,
    ]
    if knobs:
        children += [html.H3("Where to set it"), html.Ul(knobs, id="plan-knobs")]
    children.append(charts)
    if plan.change is not None:
        children.append(_change_panel(plan.change))
    children += [html.H3("Evidence"), _evidence_table(evidence, source)]
    if plan.caveats:
        children += [html.H3("Caveats"),
                     html.Ul([html.Li(c) for c in plan.caveats], id="plan-caveats")]
    if verdict_details is not None:
        children.append(html.Details([html.Summary(f"every verdict in full ({len(plan.verdicts)})"),
                                      verdict_details]))
    return html.Div(children, id="plan-card", className="ql-card ql-verdict-card")
