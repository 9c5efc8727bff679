"""The page for a path the dashboard does not have: one sentence and the ways on, instead of
Dash's bare "404". Dash pages shows the page registered as ``not_found_404`` for any path no
other page matches (dash/_pages.py)."""

from __future__ import annotations

import dash
from dash import dcc, html

from dashboard.context import AppContext, register_page

__all__ = ["layout", "register"]


def layout(**_kwargs: object) -> html.Div:
    """'No page at this address', with links to the fleet and the doctor."""
    return html.Div([
        html.H2("No page here"),
        html.P(["queuelens has no page at this address. The ",
                dcc.Link("fleet overview", href="/"), " lists every queue (a queue's page is "
                "/queue/<name>); the ", dcc.Link("doctor", href="/doctor"),
                " says what the metrics source provides."], id="not-found-message"),
    ], className="ql-page", id="not-found")


def register(app: dash.Dash, ctx: AppContext) -> None:
    del app, ctx
    register_page("not_found_404", path="/404", name="Not found",
                  title="Not found · queuelens", layout=layout)

