"""The light and dark themes in real headless Chromium (issue 21).

Every page, in both themes: the text contrast of every visible element with text of its own
(HTML text, the value of inputs and buttons, the text of the Plotly charts' SVG) against the
background it is drawn on is at least 4.5:1 (WCAG 2 AA, success criterion 1.4.3). The
contrast is computed in the page from the computed styles with WCAG's formula (relative
luminance of sRGB; (L1 + 0.05) / (L2 + 0.05)); the background is the first opaque
``background-color`` up the ancestors with the translucent ones above it composited in, and
for chart text the chart's own ``paper_bgcolor`` (the SVG ``fill`` is its colour).

The header's Auto / Light / Dark toggle switches the theme, is remembered across a reload
(localStorage), and "Auto" follows the browser's prefers-color-scheme; in dark the Plotly
charts are re-coloured (dark paper) and switching back restores their light paper.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import Browser

pytestmark = pytest.mark.browser

AA_TEXT = 4.5
"""WCAG 2.x AA minimum contrast for normal-size text (SC 1.4.3)."""

PAGES: dict[str, str] = {
    "/": "document.querySelectorAll('#overview-table .ag-row').length > 0",
    "/queue/replicaset": "!!document.querySelector('#plan-card') && charts >= 6",
    "/whatif?queue=replicaset":
        "(document.getElementById('whatif-recommendation') || {}).textContent"
        ".startsWith('Recommended') && charts >= 3",
    "/doctor": "(document.getElementById('doctor-summary') || {textContent: ''})"
               ".textContent.includes('processes')",
    "/lab": "(document.getElementById('lab-time') || {}).textContent === '0' && charts >= 1",
    "/keys": "(document.getElementById('keys-position') || {textContent: ''})"
             ".textContent.startsWith('step 0')",
    "/retries": "charts >= 4",
}
"""Each page, and the JS condition (``charts``: drawn Plotly charts) that says it is drawn."""

_READY_JS = """
const charts = Array.from(document.querySelectorAll('.js-plotly-plot'))
  .filter(e => e.querySelector('.main-svg')).length;
const idle = !document.querySelector('[data-dash-is-loading="true"]');
return idle && (%s);
"""

# Runs in the page: every failing (element, colour, background, ratio), worst first, and the
# number of elements measured.
_CONTRAST_JS = r"""
const minimum = arguments[0];
const probe = document.createElement('canvas').getContext('2d');
function rgba(text) {
  // a computed colour ("rgb(…)", "rgba(…)", "color(srgb …)", a name) -> [r, g, b, a], 0–255
  if (!text || text === 'none') return null;
  const num = '([\\d.e-]+)';
  let m = text.match(new RegExp('^color\\(srgb\\s+' + num + '\\s+' + num + '\\s+' + num
                               + '(?:\\s*/\\s*([\\d.e-]+%?))?\\)$'));
  if (m) {
    const a = m[4] === undefined ? 1 : (m[4].endsWith('%') ? parseFloat(m[4]) / 100 : +m[4]);
    return [+m[1] * 255, +m[2] * 255, +m[3] * 255, a];
  }
  m = text.match(/^rgba?\(([^)]*)\)$/);
  if (!m) {
    probe.fillStyle = '#000000'; probe.fillStyle = text;
    const v = probe.fillStyle;
    if (v.startsWith('#')) return [1, 3, 5].map(i => parseInt(v.substr(i, 2), 16)).concat([1]);
    m = v.match(/^rgba?\(([^)]*)\)$/);
    if (!m) return null;
  }
  const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(parseFloat);
  return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
}
function over(top, below) {  // top composited over an opaque colour
  const a = top[3];
  return [0, 1, 2].map(i => top[i] * a + below[i] * (1 - a)).concat([1]);
}
function luminance(c) {
  const lin = c.slice(0, 3).map(v => { v /= 255;
    return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
  return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
}
function ratio(a, b) {
  const la = luminance(a), lb = luminance(b);
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}
function background(el) {
  const layers = [];
  for (let e = el; e; e = e.parentElement) {
    const c = rgba(getComputedStyle(e).backgroundColor);
    if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
  }
  let bg = [255, 255, 255, 1];  // the canvas under <html>
  for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
  return bg;
}
function visible(el) {
  const s = getComputedStyle(el);
  if (s.visibility !== 'visible' || s.display === 'none') return false;
  const r = el.getBoundingClientRect();
  if (r.width <= 1 || r.height <= 1) return false;  // screen-reader-only text
  for (let e = el; e; e = e.parentElement) {
    if (parseFloat(getComputedStyle(e).opacity) === 0) return false;
  }
  return true;
}
function describe(el) {
  let d = el.tagName.toLowerCase();
  if (el.id) d += '#' + el.id;
  const cls = typeof el.className === 'string' ? el.className.trim() : '';
  if (cls) d += '.' + cls.split(/\s+/).slice(0, 2).join('.');
  const host = el.closest('[id]');
  if (host && host !== el) d += ' in #' + host.id;
  return d;
}
const hex = c => '#' + c.slice(0, 3).map(v => Math.round(v).toString(16).padStart(2, '0')).join('');
const failures = [];
let measured = 0;
for (const el of document.querySelectorAll('body *')) {
  if (['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'OPTION'].includes(el.tagName)) continue;
  const field = el.matches('input:not([type=hidden]):not([type=checkbox]):not([type=radio])'
                           + ':not([type=range]), select, textarea, button');
  const own = Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
  const text = own ? el.textContent.trim()
    : (field ? (el.value || el.textContent || '').trim() : '');
  if (!text || !visible(el)) continue;
  const svg = el instanceof SVGElement;
  let fg, bg;
  if (svg) {
    const chart = el.closest('.js-plotly-plot');
    fg = rgba(getComputedStyle(el).fill);
    const paper = chart && chart._fullLayout ? chart._fullLayout.paper_bgcolor : null;
    bg = paper ? over(rgba(paper), background(chart)) : background(el);
    if (fg && fg[3] < 1) fg = over(fg, bg);
    if (parseFloat(getComputedStyle(el).fillOpacity) < 1)
      fg = over(fg.slice(0, 3).concat([parseFloat(getComputedStyle(el).fillOpacity)]), bg);
  } else {
    bg = background(el);
    fg = rgba(getComputedStyle(el).color);
    if (fg && fg[3] < 1) fg = over(fg, bg);
  }
  if (!fg) continue;
  measured += 1;
  const r = ratio(fg, bg);
  if (r < minimum) {
    failures.push({ratio: Math.round(r * 100) / 100, element: describe(el),
                   text: text.slice(0, 40), fg: hex(fg), bg: hex(bg)});
  }
}
failures.sort((a, b) => a.ratio - b.ratio);
return {measured: measured, failures: failures};
"""

_CHART_PAPERS_JS = """
return Array.from(document.querySelectorAll('.js-plotly-plot'))
  .filter(g => g._fullLayout && g.querySelector('.main-svg'))
  .map(g => g._fullLayout.paper_bgcolor);
"""


_LABEL_BACKS_JS = """
return Array.from(document.querySelectorAll('.js-plotly-plot'))
  .filter(g => g._fullLayout && g.querySelector('.main-svg'))
  .flatMap(g => (g.layout.annotations || []).filter(a => a.bgcolor)
    .map(a => [a.bgcolor, g._fullLayout.paper_bgcolor]));
"""


def _theme(browser: Browser) -> str:
    return str(browser.driver.execute_script(
        "return document.documentElement.getAttribute('data-theme');"))


def _open(browser: Browser, path: str) -> None:
    browser.open(path)
    browser.wait_for(lambda: browser.driver.execute_script(_READY_JS % PAGES[path]),
                     timeout=60, what=f"{path} to be drawn")


def _choose(browser: Browser, choice: str) -> None:
    browser.click(f"theme-{choice}")
    browser.wait_for(
        lambda: browser.driver.execute_script(
            "return document.documentElement.getAttribute('data-theme-choice');") == choice,
        what=f"the {choice!r} choice applied")


def _wait_charts(browser: Browser, dark: bool) -> None:
    """Until every drawn chart has a dark (or light) paper."""
    def done() -> bool:
        papers = browser.driver.execute_script(_CHART_PAPERS_JS)
        return all(_is_dark(p) == dark for p in papers)
    browser.wait_for(done, what=f"the charts' paper to turn {'dark' if dark else 'light'}")


def _luminance(colour: str) -> float:
    """WCAG 2 relative luminance of '#rgb' / '#rrggbb' / 'rgb(r, g, b)'."""
    text = colour.strip().lower()
    if text.startswith("#") and len(text) == 4:
        text = "#" + "".join(2 * c for c in text[1:])
    if text.startswith("#"):
        channels = [int(text[i:i + 2], 16) for i in (1, 3, 5)]
    else:
        channels = [int(float(v)) for v in text[text.index("(") + 1:-1].split(",")[:3]]
    linear = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4
              for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _is_dark(colour: str) -> bool:
    """Luminance below 0.18 (about where black and white text read equally well)."""
    return _luminance(colour) < 0.18


def _probe_is_caught(browser: Browser) -> None:
    """The measure itself can fail: grey on grey (and half-transparent text) is reported,
    with the ratio of WCAG's formula computed here."""
    browser.driver.execute_script(
        "const p = document.createElement('p'); p.id = 'contrast-probe';"
        "p.textContent = 'probe'; p.style.cssText = 'color:#777777;background:#888888';"
        "document.body.appendChild(p);")
    try:
        _, failures = _audit(browser)
    finally:
        browser.driver.execute_script("document.getElementById('contrast-probe').remove();")
    probe = [f for f in failures if f["element"].startswith("p#contrast-probe")]
    expected = (_luminance("#888888") + 0.05) / (_luminance("#777777") + 0.05)
    assert probe, failures[:3]
    assert probe[0]["ratio"] == pytest.approx(expected, abs=0.01)


def _audit(browser: Browser) -> tuple[int, list[dict[str, Any]]]:
    result = browser.driver.execute_script(_CONTRAST_JS, AA_TEXT)
    return int(result["measured"]), list(result["failures"])


@pytest.fixture
def fresh(browser: Browser) -> Iterator[Browser]:
    """The shared browser with no remembered theme and the OS preference light."""
    browser.open("/doctor")
    browser.driver.execute_script("window.localStorage.clear();")
    browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {
        "features": [{"name": "prefers-color-scheme", "value": "light"}]})
    yield browser
    browser.driver.execute_script("window.localStorage.clear();")


def test_every_page_reads_at_aa_contrast_in_both_themes(fresh: Browser) -> None:
    browser = fresh
    problems: list[str] = []
    for path in PAGES:
        _open(browser, path)
        assert _theme(browser) == "light"
        if path == "/":
            _probe_is_caught(browser)
        for theme in ("light", "dark"):
            if theme == "dark":
                _choose(browser, "dark")
                _wait_charts(browser, dark=True)
            measured, failures = _audit(browser)
            assert measured >= 10, f"{path} ({theme}): only {measured} texts measured"
            if theme == "dark" and path.startswith("/queue/"):
                browser.screenshot("queue-dark")
            for f in failures[:8]:
                problems.append(f"{path} [{theme}] {f['ratio']}:1 {f['element']} "
                                f"{f['text']!r} {f['fg']} on {f['bg']}")
            if len(failures) > 8:
                problems.append(f"{path} [{theme}] ... and {len(failures) - 8} more")
        _choose(browser, "light")
    assert not problems, "text below 4.5:1:\n" + "\n".join(problems)


def test_the_toggle_is_remembered_and_recolours_the_charts(fresh: Browser) -> None:
    browser = fresh
    _open(browser, "/queue/replicaset")
    assert _theme(browser) == "light"
    assert browser.find("theme-auto").get_attribute("aria-pressed") == "true"
    papers = browser.driver.execute_script(_CHART_PAPERS_JS)
    assert papers
    assert not any(_is_dark(p) for p in papers)

    _choose(browser, "dark")
    assert _theme(browser) == "dark"
    _wait_charts(browser, dark=True)
    body = browser.driver.execute_script(
        "return getComputedStyle(document.body).backgroundColor;")
    assert _is_dark(body)
    # a line's label is written on the paper's colour (the linear-scaling line runs behind
    # the count labels): the dark paper now, not a white box
    backs = browser.driver.execute_script(_LABEL_BACKS_JS)
    assert backs  # the count, demand and SLO labels of the plan's charts
    assert all(b == paper for b, paper in backs), backs
    assert browser.find("theme-dark").get_attribute("aria-pressed") == "true"

    # remembered: a reload opens dark, charts included
    _open(browser, "/queue/replicaset")
    assert _theme(browser) == "dark"
    assert browser.driver.execute_script(
        "return window.localStorage.getItem('queuelens-theme');") == "dark"
    _wait_charts(browser, dark=True)

    # back to light: the charts get their own white paper again
    _choose(browser, "light")
    _wait_charts(browser, dark=False)
    assert browser.driver.execute_script(_CHART_PAPERS_JS)[0] == "#ffffff"
    assert {b for b, _ in browser.driver.execute_script(_LABEL_BACKS_JS)} == {"#ffffff"}

    # auto follows the browser's preference, live
    _choose(browser, "auto")
    assert _theme(browser) == "light"
    browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {
        "features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    browser.wait_for(lambda: _theme(browser) == "dark", what="auto to follow the OS")
    _wait_charts(browser, dark=True)
    browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {
        "features": [{"name": "prefers-color-scheme", "value": "light"}]})
    browser.wait_for(lambda: _theme(browser) == "light", what="auto to follow the OS back")
