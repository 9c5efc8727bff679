"""One number formatter on every surface (issue 21): walk what a person reads for every demo
queue — the overview grid's cells, the queue page (its card, measures, model fit, fluid
readout, charts' titles, labels and legends), the what-if page (its inputs, recommendation and
charts), ``advise``'s and ``whatif``'s tables, the Markdown and HTML reports — and find every
number in the form :mod:`models.formatting` writes: no exponent, at most three significant
digits after a decimal point, digits grouped from 1,000, a duration from 2 min in min.

The check reads the rendered text, not the code, so a number printed by any other means — an
f-string's ``:.4g``, ``round(x, 6)``, Plotly's own formatting of a label — is found wherever
it appears.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from typing import Any

import pytest

from collectors.cache import CachedSource
from collectors.demo import DemoSource
from dashboard.cli import main
from dashboard.context import AppContext
from dashboard.pages import overview
from dashboard.pages import queue as qp
from dashboard.pages import whatif as wp
from dashboard.report import build_report, render
from models import fleet as fl
from models.formatting import D3_NUMBER

AT = fl.EPOCH_S + 40 * 86400 + 14 * 3600

_EXPONENT = re.compile(r"\b\d+(?:\.\d+)?[eE][+-]?\d+\b")
_DECIMAL = re.compile(r"(?<![\w.,:/-])(\d{1,3}(?:,\d{3})+|\d+)\.(\d+)(?![\w.:])")
_UNGROUPED = re.compile(r"(?<![\w.,:/#-])(\d{4,})(?![\w.,:-])")
_LONG_SECONDS = re.compile(r"(?<![\w.,])(\d[\d,]*(?:\.\d+)?) s\b(?!/)")
_SKIP = re.compile(
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d)?"  # timestamps
    r"|\bv?\d+\.\d+\.\d+\b"  # versions (controller-runtime v0.24.1)
    r"|127\.0\.0\.1:\d+|https?://\S+"  # addresses
    r"|\[\d+[smhd]\]|\b\d+[smhd]\b"  # PromQL windows, Go durations in flags ('5m', '15s')
    r"|\bp\d+(?:\.\d+)?\b|\bseed \d+"  # quantile names ('p99.9'), a seed
    r"|unix \d+|--at \d+|1581343200"  # the instant asked for
    r"|#[0-9a-fA-F]{6}\b|rgba?\([^)]*\)"  # colours
    r"|\b(?:19|20)\d\d\b"  # years (the models' sources: Erlang 1917, Gunther 2007)
    # configuration to paste (a FlowSchema's YAML: a fenced block, a <pre>, the snippet on the
    # card), and the HTML report's script and style, are not numbers for people
    r"|```.*?```|<pre.*?</pre>|<script.*?</script>|<style.*?</style>|^# .*apiVersion:.*",
    re.DOTALL,
)


def _problems(text: str) -> list[str]:
    """The numbers in ``text`` the one formatter would not have written."""
    text = _SKIP.sub(" ", text)
    found = [f"exponent {m.group(0)!r}" for m in _EXPONENT.finditer(text)]
    for m in _DECIMAL.finditer(text):
        digits = (m.group(1).replace(",", "") + m.group(2)).lstrip("0")
        if len(digits) > 3:
            found.append(f"more than 3 significant digits {m.group(0)!r}")
    found += [f"ungrouped {m.group(1)!r}" for m in _UNGROUPED.finditer(text)]
    for m in _LONG_SECONDS.finditer(text):
        if float(m.group(1).replace(",", "")) >= 120:
            found.append(f"a long duration in seconds {m.group(0)!r}")
    return found


def _strings(node: Any) -> Iterator[str]:
    """Every string a Dash component tree, a Plotly figure or plain data shows."""
    if node is None or isinstance(node, bool | int | float):
        return
    if isinstance(node, str):
        yield node
        return
    if isinstance(node, dict):
        for key, value in node.items():
            if key in {"id", "href", "className", "style", "type", "hovertemplate", "x", "y",
                       "customdata", "legendgroup", "uirevision", "tickformat", "xref",
                       "yref", "mode", "fill", "line", "marker", "dash", "color", "font"}:
                continue
            yield from _strings(value)
        return
    if isinstance(node, list | tuple):
        for item in node:
            yield from _strings(item)
        return
    if hasattr(node, "to_plotly_json"):
        yield from _strings(node.to_plotly_json())


_HOVER_FIELD = re.compile(r"%\{[a-z.]+:([^}]*)\}")


def _hovers(node: Any) -> Iterator[str]:
    """Every hovertemplate of a Dash component tree or a Plotly figure."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "hovertemplate" and isinstance(value, str):
                yield value
            else:
                yield from _hovers(value)
    elif isinstance(node, list | tuple):
        for item in node:
            yield from _hovers(item)
    elif hasattr(node, "to_plotly_json"):
        yield from _hovers(node.to_plotly_json())


def _assert_hovers(where: str, node: Any) -> int:
    """Every formatted field of the hovers is d3-format's form of the one formatter's rule
    (:data:`models.formatting.D3_NUMBER`); returns how many were checked."""
    fields = [(h, m.group(1)) for h in _hovers(node) for m in _HOVER_FIELD.finditer(h)]
    bad = [h for h, fmt in fields if fmt != D3_NUMBER]
    assert not bad, f"{where}: hovers not in the one formatter's form: {bad[:5]}"
    return len(fields)


def test_the_hover_checker_finds_what_it_should() -> None:
    with pytest.raises(AssertionError):
        _assert_hovers("example", {"data": [{"hovertemplate": "%{y:.3g} s"}]})
    assert _assert_hovers("example", {"data": [{"hovertemplate": "%{y:,.3~r} s %{x}"}]}) == 1


def _assert_clean(where: str, texts: Iterator[str] | list[str]) -> None:
    bad = [(p, t[:160]) for t in texts for p in _problems(t)]
    assert not bad, f"{where}: numbers not in the one formatter's form: {bad[:8]}"


def test_the_checker_finds_what_it_should() -> None:
    # the issue's own examples, each found
    for text in ("p95 2e-05 s", "7.7e-28", "16.003/s", "0.8985", "inputs 14.773333",
                 "over 7156 s", "8333 req/s", "3600.035 s"):
        assert _problems(text), text
    for text in ("15.1/s", "0.715 s", "73 %", "12,000,000", "4 → 6", "2020-02-10 14:00 UTC",
                 "rate(x[5m])", "p99.9 wait", "45.4 ms", "5 min", "0.072/h", "< 0.001"):
        assert not _problems(text), text


@pytest.fixture(scope="module")
def demo_queues() -> list[str]:
    return [q.queue for q in DemoSource(seed=0).snapshot(AT, 300.0).queues]


def _cli(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(argv)) == 0
    return out.getvalue()


def test_the_grid_cells(demo_queues: list[str]) -> None:
    rows, _, _ = overview.load_overview(AppContext(source=CachedSource(DemoSource(seed=0))),
                                        now=AT)
    assert {r["queue_name"] for r in rows} == set(demo_queues)
    shown = [str(v) for r in rows for k, v in r.items()
             if k.endswith(("_text", "_tip", "advice", "summary", "binding"))]
    _assert_clean("the overview grid", shown)


def test_the_queue_pages(demo_queues: list[str]) -> None:
    checked = 0
    for name in demo_queues:
        view = qp.queue_view(CachedSource(DemoSource(seed=0)), name, "1h", AT)
        rendered = list(qp.render_view(view))
        _assert_clean(f"/queue/{name}", _strings(rendered))
        checked += _assert_hovers(f"/queue/{name}", rendered)
        _assert_clean(f"/queue/{name} verdicts", _strings(qp.render_verdicts(view)))
    assert checked > 0  # the charts' hovers were found


def test_the_whatif_pages(demo_queues: list[str]) -> None:
    for name in demo_queues:
        measured = wp.measured_inputs(DemoSource(seed=0), name, AT)
        if measured.arrival_rate_per_s is None:
            continue
        prefilled = [v for v in wp.prefill(measured)[:3] if isinstance(v, float)]
        _assert_clean(f"/whatif?queue={name} inputs", [repr(v) for v in prefilled])
        mark = wp.advisor_mark(DemoSource(seed=0), name, AT)
        _assert_clean(f"/whatif?queue={name} plan", _strings(wp.render_advisor(mark)))
        # the sweep of the inputs as the page fills them: its sentence and its three charts
        lam, svc, cv2, mode, sigma, kappa = wp.prefill(measured)[:6]
        params = wp.parse_params(
            lam, svc, cv2 if isinstance(cv2, float) else 1.0, 1, 1, 1,
            mode if mode in ("none", "usl") else "none",
            sigma if isinstance(sigma, float) else 0, kappa if isinstance(kappa, float) else 0,
            1.0, "p95", [1, 16])
        view = wp.whatif_view(params, measured.workers)
        _assert_clean(f"/whatif?queue={name} sweep",
                      _strings([view.recommendation, view.error, *view.figures]))
        assert _assert_hovers(f"/whatif?queue={name} sweep", view.figures) > 0


def test_the_cli_tables_and_reports(demo_queues: list[str]) -> None:
    _assert_clean("advise", [_cli("advise", "--demo", "--at", str(AT))])
    for name in demo_queues[:6]:
        _assert_clean(f"whatif --queue {name}",
                      [_cli("whatif", "--demo", "--at", str(AT), "--queue", name)])
    report = build_report(DemoSource(seed=0), AT)
    _assert_clean("report md", [render(report, "md")])
    _assert_clean("report html", [render(report, "html")])
