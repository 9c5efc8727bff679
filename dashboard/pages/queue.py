"""Queue detail (`/queue/<name>`). STUB — being built."""

from __future__ import annotations

from urllib.parse import unquote

import dash
from dash import html

from dashboard.context import AppContext, register_page

PATH_TEMPLATE = "/queue/<name>"


def layout(name: str | None = None, **_kwargs: object) -> html.Div:
    queue = unquote(name or "")
    return html.Div([
        html.H1(["Queue ", html.Code(queue, id="queue-name")]),
        html.P("STUB: this page is not built yet.", className="ql-note"),
    ])


def register(app: dash.Dash, ctx: AppContext) -> None:
    del app, ctx
    register_page(__name__, path_template=PATH_TEMPLATE, name="Queue",
                       title="Queue · queuelens", order=1, layout=layout)
