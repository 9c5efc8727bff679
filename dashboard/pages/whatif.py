"""What-if (`/whatif`). STUB — being built; ids are stable already."""

from __future__ import annotations

import dash
from dash import dcc, html

from dashboard.context import AppContext, register_page

PATH = "/whatif"


def layout(**_kwargs: object) -> html.Div:
    return html.Div(
        [
            html.H1("What-if: how many workers does this queue need?"),
            dcc.RangeSlider(id="whatif-workers", min=1, max=64, step=1, value=[1, 16]),
            html.Div(id="whatif-recommendation"),
            html.P("STUB: this page is not built yet.", className="ql-note"),
        ]
    )


def register(app: dash.Dash, ctx: AppContext) -> None:
    del app, ctx
    register_page(__name__, path=PATH, name="What-if", title="What-if · queuelens",
                       order=2, layout=layout)
